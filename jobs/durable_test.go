package jobs_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/provider/memprovider"
)

func TestInstanceID(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	if got, want := jobs.InstanceID("nightly:report", at), "job:nightly:report:2025-01-02T02:00:00.000Z"; got != want {
		t.Fatalf("InstanceID = %q; want %q", got, want)
	}
	if jobs.InstanceID("a", at) == jobs.InstanceID("a", at.Add(time.Millisecond)) {
		t.Fatal("two scheduled times share an instance id")
	}
}

// durableEnv is a durable runtime on an in-memory provider whose
// orchestration "Report" runs the activity "Record" once, which counts its
// runs per scheduled time.
type durableEnv struct {
	client *durable.Client
	mu     sync.Mutex
	ran    map[time.Time]int
}

func newDurableEnv(t *testing.T) *durableEnv {
	t.Helper()
	env := &durableEnv{ran: map[time.Time]int{}}
	record := durable.NewActivity("Record", func(ctx context.Context, in jobs.FireInput) (string, error) {
		env.mu.Lock()
		env.ran[in.ScheduledTime.UTC()]++
		env.mu.Unlock()
		return in.JobID, nil
	})
	report := durable.NewOrchestration("Report", func(ctx *durable.OrchestrationContext, in jobs.FireInput) (string, error) {
		return record.Call(ctx, in).Get(ctx)
	})
	reg, err := durable.NewRegistry(record, report)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(memprovider.New(), reg, func(o *durable.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.LongPollTimeout = 50 * time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Shutdown(context.Background()) })
	env.client = rt.Client()
	return env
}

func (e *durableEnv) runs(at time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ran[at]
}

// TestSchedulerRecoversClaimWithoutSecondStart crashes a scheduler between
// its claim and the end of the run, before or after it started the
// orchestration; another scheduler takes the claim over after the lease,
// and the scheduled time's instance runs once.
func TestSchedulerRecoversClaimWithoutSecondStart(t *testing.T) {
	for _, startedBeforeCrash := range []bool{false, true} {
		name := "crash before the start"
		if startedBeforeCrash {
			name = "crash after the start"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), fireTimeout)
			defer cancel()
			env := newDurableEnv(t)
			start := jobs.StartOrchestration(env.client, "Report", nil)
			clock := newFakeClock(startTime)
			store := jobs.NewMemoryStore()
			lease := func(o *jobs.SchedulerOptions) { o.Lease = time.Minute }

			// a claims 00:01, perhaps starts it, and hangs until stopped.
			a := newScheduler(t, store, clock, lease)
			claimed := make(chan jobs.Fire, 1)
			err := a.Handle("report", func(ctx context.Context, f jobs.Fire) error {
				if startedBeforeCrash {
					if err := start(ctx, f); err != nil {
						return err
					}
					if _, err := env.client.WaitForCompletion(ctx, jobs.InstanceID(f.Job.ID, f.ScheduledTime)); err != nil {
						return err
					}
				}
				claimed <- f
				<-ctx.Done()
				return ctx.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			job := jobs.Job{ID: "report", Name: "report"}
			if err := jobs.SetTrigger(&job, jobs.DateArgs{At: minute(1)}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Add(ctx, job); err != nil {
				t.Fatal(err)
			}
			stopA := run(t, a)
			clock.Set(minute(1))
			select {
			case <-claimed:
			case <-ctx.Done():
				t.Fatal("a did not claim 00:01")
			}
			stopA()

			// b finds the claim expired at its lease end and runs it again.
			b := newScheduler(t, store, clock, lease)
			repeated := make(chan jobs.Fire, 1)
			err = b.Handle("report", func(ctx context.Context, f jobs.Fire) error {
				err := start(ctx, f)
				repeated <- f
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			run(t, b)
			if !clock.waitTimers(minute(2), 1, ctx.Done()) {
				t.Fatal("b does not wait for the lease end")
			}
			clock.Set(minute(2))
			var f jobs.Fire
			select {
			case f = <-repeated:
			case <-ctx.Done():
				t.Fatal("b did not take the claim over")
			}
			if !f.Repeat || !f.ScheduledTime.Equal(minute(1)) {
				t.Fatalf("b fired %+v; want a repeat of 00:01", f)
			}
			st, err := env.client.WaitForCompletion(ctx, jobs.InstanceID("report", minute(1)))
			if err != nil || st.State != durable.StateCompleted {
				t.Fatalf("instance: %+v, %v", st, err)
			}
			if n := env.runs(minute(1)); n != 1 {
				t.Fatalf("the orchestration of 00:01 ran %d times; want once", n)
			}
		})
	}
}

// TestStartOrchestrationTwice starts one scheduled time's instance twice,
// as two schedulers might: the second start is a no-op.
func TestStartOrchestrationTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), fireTimeout)
	defer cancel()
	env := newDurableEnv(t)
	start := jobs.StartOrchestration(env.client, "Report", nil)
	fire := jobs.Fire{Job: jobs.Job{ID: "report"}, ScheduledTime: minute(1)}
	id := jobs.InstanceID("report", minute(1))
	if err := start(ctx, fire); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.WaitForCompletion(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := start(ctx, fire); err != nil {
		t.Fatalf("a second start of the same scheduled time: %v", err)
	}
	// The runtime drops a start of an instance with history; give it the
	// time to see the second start by running another instance to its end
	// (this orders nothing, it only makes a late second run likely to show).
	next := jobs.Fire{Job: jobs.Job{ID: "report"}, ScheduledTime: minute(2)}
	if err := start(ctx, next); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.WaitForCompletion(ctx, jobs.InstanceID("report", minute(2))); err != nil {
		t.Fatal(err)
	}
	st, err := env.client.Status(ctx, id)
	if err != nil || st.State != durable.StateCompleted || st.ExecutionID != 1 {
		t.Fatalf("status after a second start: %+v, %v", st, err)
	}
	if n := env.runs(minute(1)); n != 1 {
		t.Fatalf("the orchestration ran %d times; want once", n)
	}
}
