package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/oteltest"
	"github.com/duradyn/duradyn/jobs"
)

// rivalStore lets a rival scheduler win the first claim of job rival: it
// makes that claim itself just before the caller's, which then does not
// apply.
type rivalStore struct {
	jobs.Store
	rival string

	mu  sync.Mutex
	won bool
}

func (s *rivalStore) CompareAndSwap(ctx context.Context, id string, expected, changes jobs.Changes) (bool, jobs.Job, error) {
	s.mu.Lock()
	first := id == s.rival && !s.won && changes[jobs.FieldStatus] == jobs.StatusRunning
	s.won = s.won || first
	s.mu.Unlock()
	if first {
		if applied, _, err := s.Store.CompareAndSwap(ctx, id, expected, changes); err != nil || !applied {
			return false, jobs.Job{}, errors.Join(errors.New("the rival's claim did not apply"), err)
		}
	}
	return s.Store.CompareAndSwap(ctx, id, expected, changes)
}

// endedSpans is a span processor that passes on every span that ends.
type endedSpans struct{ ch chan sdktrace.ReadOnlySpan }

func (p endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p endedSpans) OnEnd(s sdktrace.ReadOnlySpan)                   { p.ch <- s }
func (p endedSpans) Shutdown(context.Context) error                  { return nil }
func (p endedSpans) ForceFlush(context.Context) error                { return nil }

// await returns the next span that ends, which must be named name.
func (p endedSpans) await(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	select {
	case s := <-p.ch:
		if s.Name() != name {
			t.Fatalf("span %q ended; want %q", s.Name(), name)
		}
		return s
	case <-time.After(fireTimeout):
		t.Fatalf("span %q did not end", name)
		return nil
	}
}

// TestSchedulerTelemetry runs, on a fake clock, one due minute of seven
// jobs, one for each thing the scheduler reports: an invalid trigger, a
// missed time passed over, a claim a rival wins, and runs that succeed,
// fail, lose their claim to a take-over and are stopped. Spans and metrics
// must say exactly that, timed on the scheduler's clock.
func TestSchedulerTelemetry(t *testing.T) {
	ctx := context.Background()
	spans := endedSpans{ch: make(chan sdktrace.ReadOnlySpan, 16)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	clock := newFakeClock(startTime)
	memory := jobs.NewMemoryStore()
	store := &rivalStore{Store: memory, rival: "c-rivalled"}
	const lease = 20 * time.Second
	s := newScheduler(t, store, clock, func(o *jobs.SchedulerOptions) {
		o.Lease = lease
		o.Owner = "s-telemetry"
		o.TracerProvider = tp
		o.MeterProvider = mp
	})
	fired := make(chan jobs.Fire, 8)
	release := make(chan struct{})
	var tickSpan trace.SpanContext
	handlers := map[string]jobs.Action{
		"tick": func(ctx context.Context, f jobs.Fire) error {
			tickSpan = trace.SpanContextFromContext(ctx)
			fired <- f
			<-release
			return nil
		},
		"fails": func(_ context.Context, f jobs.Fire) error {
			fired <- f
			return errors.New("boom")
		},
		"hold": func(ctx context.Context, f jobs.Fire) error {
			fired <- f
			<-ctx.Done()
			return ctx.Err()
		},
	}
	handlers["wait"] = handlers["hold"]
	for name, action := range handlers {
		if err := s.Handle(name, action); err != nil {
			t.Fatal(err)
		}
	}

	// The store orders jobs due at one time by id, and a pass claims them
	// in that order: the first three are dealt with before the first run
	// starts.
	if _, err := memory.Create(ctx, jobs.Job{ID: "a-broken", Name: "tick", Status: jobs.StatusScheduled, NextRunTime: ptr(minute(1)),
		IfMissed:    jobs.Skip,
		TriggerType: jobs.TriggerCron, TriggerArgs: json.RawMessage(`{"expr": "not a cron"}`)}); err != nil {
		t.Fatal(err)
	}
	missed := cronJob(t, "b-missed", "tick", "* * * * *")
	missed.IfMissed, missed.MisfireThresholdSeconds = jobs.Skip, 1
	added := []jobs.Job{missed}
	for id, name := range map[string]string{"c-rivalled": "tick", "d-fails": "fails", "e-hold": "hold", "f-wait": "wait", "g-tick": "tick"} {
		job := cronJob(t, id, name, "* * * * *")
		job.MisfireThresholdSeconds = 10
		added = append(added, job)
	}
	for _, job := range added {
		if _, err := s.Add(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(t, s)

	claimedAt := minute(1).Add(2 * time.Second) // 2 s late: b-missed is missed, the others are not
	clock.Set(claimedAt)
	runs := map[string]jobs.Fire{}
	for range 4 {
		select {
		case f := <-fired:
			runs[f.Job.ID] = f
		case <-time.After(fireTimeout):
			t.Fatalf("only %d runs started", len(runs))
		}
	}
	for _, id := range []string{"d-fails", "e-hold", "f-wait", "g-tick"} {
		if f, ok := runs[id]; !ok || !f.ScheduledTime.Equal(minute(1)) {
			t.Fatalf("runs %v; want one of %s at 00:01", runs, id)
		}
	}
	spans.await(t, "jobs.run fails")

	// g-tick runs 3 s.
	clock.Set(claimedAt.Add(3 * time.Second))
	close(release)
	tick := spans.await(t, "jobs.run tick")

	// A rival takes e-hold's claim over; the scheduler learns of it when it
	// renews the lease, at half the lease, and cancels the run.
	hold := runs["e-hold"].Job
	if applied, _, err := memory.CompareAndSwap(ctx, hold.ID,
		jobs.Changes{jobs.FieldStatus: jobs.StatusRunning, jobs.FieldLastScheduledTime: minute(1), jobs.FieldNextRunTime: *hold.NextRunTime},
		jobs.Changes{jobs.FieldNextRunTime: hold.NextRunTime.Add(time.Minute)}); err != nil || !applied {
		t.Fatalf("the rival's take-over: %v, %v", applied, err)
	}
	renewedAt := claimedAt.Add(lease / 2)
	clock.Set(renewedAt)
	lost := spans.await(t, "jobs.run hold")

	// Stopping the scheduler stops f-wait.
	stop()
	stopped := spans.await(t, "jobs.run wait")

	for _, tt := range []struct {
		span     sdktrace.ReadOnlySpan
		id       string
		outcome  string
		status   codes.Code
		end      time.Time
		errEvent bool
	}{
		{tick, "g-tick", "succeeded", codes.Unset, claimedAt.Add(3 * time.Second), false},
		{lost, "e-hold", "lost", codes.Unset, renewedAt, true},
		{stopped, "f-wait", "stopped", codes.Unset, renewedAt, true},
	} {
		attrs := attribute.NewSet(tt.span.Attributes()...)
		for key, want := range map[attribute.Key]attribute.Value{
			"jobs.job.id":          attribute.StringValue(tt.id),
			"jobs.scheduled_time":  attribute.StringValue(minute(1).Format(time.RFC3339Nano)),
			"jobs.repeat":          attribute.BoolValue(false),
			"jobs.scheduler.owner": attribute.StringValue("s-telemetry"),
			"jobs.outcome":         attribute.StringValue(tt.outcome),
		} {
			if got, ok := attrs.Value(key); !ok || got != want {
				t.Errorf("%s: %s = %v; want %v", tt.span.Name(), key, got.String(), want.String())
			}
		}
		if !tt.span.StartTime().Equal(claimedAt) || !tt.span.EndTime().Equal(tt.end) {
			t.Errorf("%s: from %s to %s; want from %s to %s", tt.span.Name(), tt.span.StartTime(), tt.span.EndTime(), claimedAt, tt.end)
		}
		if tt.span.Status().Code != tt.status {
			t.Errorf("%s: status %v", tt.span.Name(), tt.span.Status())
		}
		if got := len(tt.span.Events()) > 0; got != tt.errEvent {
			t.Errorf("%s: events %v", tt.span.Name(), tt.span.Events())
		}
	}
	if !tickSpan.Equal(tick.SpanContext()) {
		t.Errorf("the action's context carries span %v; its run's span is %v", tickSpan, tick.SpanContext())
	}

	got := oteltest.Series(t, reader, jobs.InstrumentationName)
	want := map[string]string{
		"jobs.unrunnable jobs.job.name=tick":                                         oteltest.Count(1),
		"jobs.passed_over jobs.job.name=tick":                                        oteltest.Count(1),
		"jobs.claims.lost jobs.job.name=tick":                                        oteltest.Count(1),
		"jobs.runs error.type=error,jobs.job.name=fails,jobs.outcome=failed":         oteltest.Count(1),
		"jobs.runs jobs.job.name=tick,jobs.outcome=succeeded":                        oteltest.Count(1),
		"jobs.runs jobs.job.name=hold,jobs.outcome=lost":                             oteltest.Count(1),
		"jobs.runs jobs.job.name=wait,jobs.outcome=stopped":                          oteltest.Count(1),
		"jobs.run.delay jobs.job.name=fails":                                         oteltest.Histogram(1, 2),
		"jobs.run.delay jobs.job.name=hold":                                          oteltest.Histogram(1, 2),
		"jobs.run.delay jobs.job.name=wait":                                          oteltest.Histogram(1, 2),
		"jobs.run.delay jobs.job.name=tick":                                          oteltest.Histogram(1, 2),
		"jobs.run.duration jobs.job.name=tick,jobs.outcome=succeeded":                oteltest.Histogram(1, 3),
		"jobs.run.duration jobs.job.name=hold,jobs.outcome=lost":                     oteltest.Histogram(1, 10),
		"jobs.run.duration jobs.job.name=wait,jobs.outcome=stopped":                  oteltest.Histogram(1, 10),
		"jobs.run.duration error.type=error,jobs.job.name=fails,jobs.outcome=failed": oteltest.Histogram(1, 0),
	}
	oteltest.Expect(t, got, want)
}
