package jobs

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/instrument"
)

// InstrumentationName is the name of the tracer and meter a [Scheduler]
// takes from [SchedulerOptions.TracerProvider] and
// [SchedulerOptions.MeterProvider].
const InstrumentationName = "github.com/duradyn/duradyn/jobs"

// Attribute keys of the scheduler's spans and metrics. Metrics carry the
// job's name (its action), never its id, so that their series stay few
// however many jobs a store holds; spans carry both.
const (
	attrJobID         = attribute.Key("jobs.job.id")
	attrJobName       = attribute.Key("jobs.job.name")
	attrScheduledTime = attribute.Key("jobs.scheduled_time")
	attrRepeat        = attribute.Key("jobs.repeat")
	attrOutcome       = attribute.Key("jobs.outcome")
	attrOwner         = attribute.Key("jobs.scheduler.owner")
)

// Outcomes of a run (attribute jobs.outcome).
const (
	// outcomeSucceeded: the action returned nil.
	outcomeSucceeded = "succeeded"
	// outcomeFailed: the action returned an error; the job keeps its
	// schedule, or gets status failed when its trigger has no next time.
	outcomeFailed = "failed"
	// outcomeStopped: the scheduler stopped during the run and the action
	// returned a context error; the claim is left to expire, and another
	// scheduler runs the scheduled time again.
	outcomeStopped = "stopped"
	// outcomeLost: another scheduler took the claim over during the run,
	// whose context was cancelled.
	outcomeLost = "lost"
)

// telemetry holds a scheduler's tracer and instruments; with neither
// provider set they are OpenTelemetry's no-op ones.
type telemetry struct {
	tracer      trace.Tracer
	runs        metric.Int64Counter
	runDuration metric.Float64Histogram
	runDelay    metric.Float64Histogram
	passedOver  metric.Int64Counter
	claimsLost  metric.Int64Counter
	unrunnable  metric.Int64Counter
}

// newTelemetry makes the scheduler's instruments from tp and mp (nil for
// none).
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	tp, mp = instrument.Providers(tp, mp)
	t := &telemetry{tracer: tp.Tracer(InstrumentationName)}
	meter := mp.Meter(InstrumentationName)
	var errs [6]error
	t.runs, errs[0] = meter.Int64Counter("jobs.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs of scheduled times that ended, by jobs.outcome."))
	t.runDuration, errs[1] = meter.Float64Histogram("jobs.run.duration",
		instrument.Seconds("How long runs took, from the claim of the scheduled time to the end of the claim, by jobs.outcome.")...)
	t.runDelay, errs[2] = meter.Float64Histogram("jobs.run.delay",
		instrument.Seconds("How long after its scheduled time a run was claimed (or, repeated, taken over).")...)
	t.passedOver, errs[3] = meter.Int64Counter("jobs.passed_over", metric.WithUnit("{pass}"),
		metric.WithDescription("Missed scheduled times the misfire policy did not run, each passed over with one write."))
	t.claimsLost, errs[4] = meter.Int64Counter("jobs.claims.lost", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims of due scheduled times (and take-overs of expired ones) that another scheduler won."))
	t.unrunnable, errs[5] = meter.Int64Counter("jobs.unrunnable", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs the scheduler gave status failed because it cannot run them (an invalid trigger, a running job without its claim)."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return t, nil
}

// runTelemetry follows one run: its span and what its metrics need.
type runTelemetry struct {
	t     *telemetry
	span  trace.Span
	name  attribute.KeyValue
	start time.Time
	clock func() time.Time
	ctx   context.Context
}

// startRun starts the span of c's run at the time of its claim, and
// records the run's delay; clock reads the scheduler's clock at the end.
func (t *telemetry) startRun(ctx context.Context, c claim, owner string, clock func() time.Time) (context.Context, *runTelemetry) {
	now := c.at
	name := attrJobName.String(c.job.Name)
	ctx, span := t.tracer.Start(ctx, "jobs.run "+c.job.Name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(now),
		trace.WithAttributes(
			attrJobID.String(c.job.ID),
			name,
			attrScheduledTime.String(c.scheduled.Format(time.RFC3339Nano)),
			attrRepeat.Bool(c.repeat),
			attrOwner.String(owner),
		))
	t.runDelay.Record(ctx, max(now.Sub(c.scheduled), 0).Seconds(), metric.WithAttributes(name))
	return ctx, &runTelemetry{t: t, span: span, name: name, start: now, clock: clock, ctx: ctx}
}

// end ends the run with outcome; err is the action's error (nil when it
// returned none).
func (r *runTelemetry) end(outcome string, err error) {
	now := r.clock()
	attrs := []attribute.KeyValue{r.name, attrOutcome.String(outcome)}
	r.span.SetAttributes(attrOutcome.String(outcome))
	if err != nil {
		r.span.RecordError(err, trace.WithTimestamp(now))
		if outcome == outcomeFailed {
			r.span.SetStatus(codes.Error, err.Error())
			attrs = append(attrs, instrument.ErrorTypeKey.String(errorType(err)))
		}
	}
	r.t.runs.Add(r.ctx, 1, metric.WithAttributes(attrs...))
	r.t.runDuration.Record(r.ctx, max(now.Sub(r.start), 0).Seconds(), metric.WithAttributes(attrs...))
	r.span.End(trace.WithTimestamp(now))
}

// errorType is the error.type of an action's error: the context error it
// wraps, or "error".
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "error"
	}
}
