package durable

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/internal/instrument"
	"github.com/duradyn/duradyn/provider"
)

// InstrumentationName is the name of the tracer and meter the runtime
// takes from [Options.TracerProvider] and [Options.MeterProvider].
const InstrumentationName = "github.com/duradyn/duradyn/durable"

// Attribute keys of the runtime's spans and metrics. OpenTelemetry's
// semantic conventions have none for durable orchestrations; error.type
// ([instrument.ErrorTypeKey]) is the convention's.
const (
	attrInstanceID           = attribute.Key("durable.instance.id")
	attrExecutionID          = attribute.Key("durable.execution.id")
	attrOrchestrationName    = attribute.Key("durable.orchestration.name")
	attrOrchestrationVersion = attribute.Key("durable.orchestration.version")
	attrOutcome              = attribute.Key("durable.outcome")
	attrActivityName         = attribute.Key("durable.activity.name")
	attrActivityID           = attribute.Key("durable.activity.id")
	attrAttempt              = attribute.Key("durable.attempt")
	attrKind                 = attribute.Key("durable.kind")
	attrQueue                = attribute.Key("durable.queue")
	attrFetchResult          = attribute.Key("durable.fetch.result")
	attrMessageKind          = attribute.Key("durable.message.kind")
	attrProviderName         = attribute.Key("durable.provider.name")
	attrProviderOperation    = attribute.Key("durable.provider.operation")
	attrTurnResumed          = attribute.Key("durable.turn.resumed")
)

// Outcomes of a turn or an activity (attribute durable.outcome).
const (
	outcomeContinue       = "continue"
	outcomeCompleted      = "completed"
	outcomeFailed         = "failed"
	outcomeContinuedAsNew = "continued_as_new"
	outcomeDrained        = "drained"
	outcomeAbandoned      = "abandoned"
	outcomeLockLost       = "lock_lost"
	outcomePoisoned       = "poisoned"
	outcomeCancelled      = "cancelled"
)

// Values of durable.kind and durable.queue.
const (
	kindOrchestration = "orchestration"
	kindActivity      = "activity"
	queueOrchestrator = "orchestrator"
	queueWorker       = "worker"
)

// telemetry holds the runtime's tracer and instruments. With neither
// provider set, tracing and metering are false and every hook returns at
// once: nothing is allocated and no OpenTelemetry code runs.
type telemetry struct {
	tracing  bool
	metering bool
	tracer   trace.Tracer

	turns        metric.Int64Counter
	activities   metric.Int64Counter
	failures     metric.Int64Counter
	poison       metric.Int64Counter
	lockLosses   metric.Int64Counter
	fetchLatency metric.Float64Histogram
	queueWait    metric.Float64Histogram
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	t := &telemetry{}
	if tp != nil {
		t.tracing = true
		t.tracer = tp.Tracer(InstrumentationName, trace.WithInstrumentationVersion(ReplayVersion))
	}
	if mp == nil {
		return t, nil
	}
	t.metering = true
	m := mp.Meter(InstrumentationName, metric.WithInstrumentationVersion(ReplayVersion))
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	t.turns = counter("durable.turns", "{turn}", "Orchestration turns processed, by outcome.")
	t.activities = counter("durable.activities", "{activity}", "Activity deliveries processed, by outcome.")
	t.failures = counter("durable.failures", "{failure}", "Orchestration executions that ended failed and activities that failed (an error, a panic or poison).")
	t.poison = counter("durable.poison", "{message}", "Orchestration turns and activities delivered more than MaxAttempts times.")
	t.lockLosses = counter("durable.lock_losses", "{lock}", "Orchestration and activity locks lost before their result was committed.")
	var err error
	t.fetchLatency, err = m.Float64Histogram("durable.fetch.duration",
		instrument.Seconds("Duration of the runtime's fetches, empty long polls included.")...)
	errs = append(errs, err)
	t.queueWait, err = m.Float64Histogram("durable.queue.wait",
		instrument.Seconds("Time between a message becoming visible and its delivery, for messages whose visibility time is known (timers).")...)
	errs = append(errs, err)
	return t, errors.Join(errs...)
}

// orchestrationSpanContext is the span context every span of an instance
// descends from: a remote parent that is never recorded, whose trace id is
// the first 16 bytes of the SHA-256 of the instance id and whose span id
// is the next 8. Every process that runs a turn or an activity of the
// instance computes the same one, so all its spans share a trace without
// anything being stored or sent.
func orchestrationSpanContext(instance string) trace.SpanContext {
	sum := sha256.Sum256([]byte(instance))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// OrchestrationTraceID returns the trace id of the spans of instance's
// turns, activities and provider calls (see docs/runtime.md,
// "Observability").
func OrchestrationTraceID(instance string) trace.TraceID {
	return orchestrationSpanContext(instance).TraceID()
}

// inOrchestration returns ctx with instance's span context as its parent,
// replacing any span ctx had.
func inOrchestration(ctx context.Context, instance string) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, orchestrationSpanContext(instance))
}

type turnKey struct{}

// turnTelemetry is one turn's span and what the turn's hooks learned.
type turnTelemetry struct {
	t       *telemetry
	ctx     context.Context
	span    trace.Span
	name    string
	version string
	outcome string
	err     string
}

// startTurn starts the span of an orchestration turn and returns ctx
// carrying it (so provider calls made with it are its children). The
// returned value is nil when telemetry is off; its methods accept nil.
func (t *telemetry) startTurn(ctx context.Context, item *provider.OrchestrationItem, now time.Time) (context.Context, *turnTelemetry) {
	if !t.tracing && !t.metering {
		return ctx, nil
	}
	tt := &turnTelemetry{t: t, name: item.OrchestrationName, version: item.Version, outcome: outcomeAbandoned}
	if t.tracing {
		opts := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(
				attrInstanceID.String(item.Instance),
				attrExecutionID.Int64(int64(item.ExecutionID)),
				attrOrchestrationName.String(item.OrchestrationName),
				attrAttempt.Int64(int64(item.AttemptCount)),
			),
		}
		if parent := parentInstance(item); parent != "" {
			opts = append(opts, trace.WithLinks(trace.Link{
				SpanContext: orchestrationSpanContext(parent),
				Attributes:  []attribute.KeyValue{attrInstanceID.String(parent)},
			}))
		}
		ctx, tt.span = t.tracer.Start(inOrchestration(ctx, item.Instance), "orchestration turn "+item.OrchestrationName, opts...)
	}
	if t.metering {
		for _, m := range item.Messages {
			if tf, ok := m.(provider.TimerFiredItem); ok {
				wait := now.Sub(time.UnixMilli(int64(tf.FireAtMs)))
				t.queueWait.Record(ctx, max(wait, 0).Seconds(), metric.WithAttributes(
					attrQueue.String(queueOrchestrator), attrMessageKind.String("timer")))
			}
		}
	}
	tt.ctx = context.WithValue(ctx, turnKey{}, tt)
	return tt.ctx, tt
}

// parentInstance returns the parent of a sub-orchestration, from its
// history or its start message; "" for a root.
func parentInstance(item *provider.OrchestrationItem) string {
	if len(item.History) > 0 {
		if s, ok := item.History[0].Kind.(provider.OrchestrationStarted); ok && s.ParentInstance != nil {
			return *s.ParentInstance
		}
		return ""
	}
	for _, m := range item.Messages {
		if s, ok := m.(provider.StartOrchestrationItem); ok && s.ParentInstance != nil {
			return *s.ParentInstance
		}
	}
	return ""
}

// turn returns the turn ctx belongs to; nil when telemetry is off.
func (t *telemetry) turn(ctx context.Context) *turnTelemetry {
	if !t.tracing && !t.metering {
		return nil
	}
	tt, _ := ctx.Value(turnKey{}).(*turnTelemetry)
	return tt
}

// committed records a turn the provider committed.
func (tt *turnTelemetry) committed(turn *replay.Turn) {
	if tt == nil {
		return
	}
	tt.outcome = outcomeName(turn.Outcome)
	if turn.Name != "" {
		tt.name, tt.version = turn.Name, turn.Version
	}
	if turn.Outcome == replay.Failed && turn.Failure != nil {
		tt.err = turn.Failure.DisplayMessage()
		if tt.t.metering {
			tt.t.failures.Add(tt.ctx, 1, metric.WithAttributes(attrKind.String(kindOrchestration), attrOrchestrationName.String(tt.name)))
		}
	}
}

// resumed records whether the turn resumed code kept from the
// execution's last turn (ExecutionCacheSize) instead of replaying history.
func (tt *turnTelemetry) resumed(resumed bool) {
	if tt == nil || tt.span == nil {
		return
	}
	tt.span.SetAttributes(attrTurnResumed.Bool(resumed))
}

// failedExecution records a failure committed outside the engine (a
// history that does not decode).
func (tt *turnTelemetry) failedExecution(msg string) {
	if tt == nil {
		return
	}
	tt.outcome, tt.err = outcomeFailed, msg
	if tt.t.metering {
		tt.t.failures.Add(tt.ctx, 1, metric.WithAttributes(attrKind.String(kindOrchestration), attrOrchestrationName.String(tt.name)))
	}
}

// poisoned records a turn delivered more than MaxAttempts times.
func (tt *turnTelemetry) poisoned() {
	if tt == nil {
		return
	}
	if tt.span != nil {
		tt.span.AddEvent("poisoned")
	}
	if tt.t.metering {
		tt.t.poison.Add(tt.ctx, 1, metric.WithAttributes(attrKind.String(kindOrchestration), attrOrchestrationName.String(tt.name)))
	}
}

// lockLost records a turn whose lock was lost.
func (tt *turnTelemetry) lockLost() {
	if tt == nil {
		return
	}
	tt.outcome = outcomeLockLost
	if tt.t.metering {
		tt.t.lockLosses.Add(tt.ctx, 1, metric.WithAttributes(attrKind.String(kindOrchestration)))
	}
}

// end ends the turn's span and counts the turn.
func (tt *turnTelemetry) end() {
	if tt == nil {
		return
	}
	if tt.span != nil {
		tt.span.SetAttributes(attrOutcome.String(tt.outcome), attrOrchestrationName.String(tt.name), attrOrchestrationVersion.String(tt.version))
		switch {
		case tt.err != "":
			tt.span.SetAttributes(instrument.ErrorTypeKey.String(outcomeFailed))
			tt.span.SetStatus(codes.Error, tt.err)
		case tt.outcome == outcomeAbandoned || tt.outcome == outcomeLockLost:
			tt.span.SetAttributes(instrument.ErrorTypeKey.String(tt.outcome))
			tt.span.SetStatus(codes.Error, tt.outcome)
		}
		tt.span.End()
	}
	if tt.t.metering {
		tt.t.turns.Add(tt.ctx, 1, metric.WithAttributes(attrOrchestrationName.String(tt.name), attrOutcome.String(tt.outcome)))
	}
}

func outcomeName(o replay.Outcome) string {
	switch o {
	case replay.Completed:
		return outcomeCompleted
	case replay.Failed:
		return outcomeFailed
	case replay.ContinuedAsNew:
		return outcomeContinuedAsNew
	case replay.Drained:
		return outcomeDrained
	}
	return outcomeContinue
}

type activityTelemetryKey struct{}

// activityTelemetry is one activity delivery's span and outcome. lost
// may be set by the lease renewal's goroutine; the rest belongs to the
// worker slot's.
type activityTelemetry struct {
	t       *telemetry
	ctx     context.Context
	span    trace.Span
	name    string
	outcome string
	err     string
	lost    atomic.Bool
}

// startActivity starts the span of an activity delivery, in the trace of
// the orchestration that scheduled it, and returns ctx carrying it (the
// activity's code gets it too). The returned value is nil when telemetry
// is off.
func (t *telemetry) startActivity(ctx context.Context, locked *provider.LockedWorkItem) (context.Context, *activityTelemetry) {
	if !t.tracing && !t.metering {
		return ctx, nil
	}
	item := &locked.Item
	at := &activityTelemetry{t: t, name: item.Name, outcome: outcomeAbandoned}
	if t.tracing {
		ctx, at.span = t.tracer.Start(inOrchestration(ctx, item.Instance), "activity "+item.Name,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(
				attrInstanceID.String(item.Instance),
				attrExecutionID.Int64(int64(item.ExecutionID)),
				attrActivityName.String(item.Name),
				attrActivityID.Int64(int64(item.ID)),
				attrAttempt.Int64(int64(locked.AttemptCount)),
			))
	}
	at.ctx = context.WithValue(ctx, activityTelemetryKey{}, at)
	return at.ctx, at
}

// activity returns the activity delivery ctx belongs to; nil when
// telemetry is off.
func (t *telemetry) activity(ctx context.Context) *activityTelemetry {
	if !t.tracing && !t.metering {
		return nil
	}
	at, _ := ctx.Value(activityTelemetryKey{}).(*activityTelemetry)
	return at
}

// finished records the activity's outcome: completed, failed (err is its
// message), poisoned or cancelled.
func (at *activityTelemetry) finished(outcome, err string) {
	if at == nil {
		return
	}
	at.outcome, at.err = outcome, err
	if !at.t.metering {
		return
	}
	switch outcome {
	case outcomePoisoned:
		at.t.poison.Add(at.ctx, 1, metric.WithAttributes(attrKind.String(kindActivity), attrActivityName.String(at.name)))
		fallthrough
	case outcomeFailed:
		at.t.failures.Add(at.ctx, 1, metric.WithAttributes(attrKind.String(kindActivity), attrActivityName.String(at.name)))
	}
}

// lockLost records an activity whose lock was lost (counted once, though
// the renewal and the ack may both find it lost).
func (at *activityTelemetry) lockLost() {
	if at == nil || !at.lost.CompareAndSwap(false, true) {
		return
	}
	if at.t.metering {
		at.t.lockLosses.Add(at.ctx, 1, metric.WithAttributes(attrKind.String(kindActivity)))
	}
}

// end ends the activity's span and counts the delivery.
func (at *activityTelemetry) end() {
	if at == nil {
		return
	}
	if at.lost.Load() {
		at.outcome = outcomeLockLost
	}
	if at.span != nil {
		at.span.SetAttributes(attrOutcome.String(at.outcome))
		switch {
		case at.err != "":
			at.span.SetAttributes(instrument.ErrorTypeKey.String(at.outcome))
			at.span.SetStatus(codes.Error, at.err)
		case at.outcome != outcomeCompleted:
			at.span.SetAttributes(instrument.ErrorTypeKey.String(at.outcome))
			at.span.SetStatus(codes.Error, at.outcome)
		}
		at.span.End()
	}
	if at.t.metering {
		at.t.activities.Add(at.ctx, 1, metric.WithAttributes(attrActivityName.String(at.name), attrOutcome.String(at.outcome)))
	}
}

// fetched records one fetch's latency; began is when it was sent.
func (t *telemetry) fetched(ctx context.Context, queue string, began time.Time, found bool, err error) {
	if !t.metering {
		return
	}
	result := "empty"
	switch {
	case err != nil:
		result = "error"
	case found:
		result = "item"
	}
	t.fetchLatency.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(attrQueue.String(queue), attrFetchResult.String(result)))
}
