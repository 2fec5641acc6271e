package locks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/instrument"
)

// InstrumentationName is the name of the tracer and meter [Instrument]
// takes from [TelemetryOptions.TracerProvider] and
// [TelemetryOptions.MeterProvider].
const InstrumentationName = "github.com/duradyn/duradyn/locks"

// TelemetryOptions configures [Instrument]. Everything has a default.
type TelemetryOptions struct {
	// TracerProvider, when set, receives a span per call ("locks.acquire",
	// "locks.release", "locks.extend", "locks.reset", "locks.list").
	// Default nil: no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, receives the metrics locks.operations and
	// locks.operation.duration ([Instrument]). Default nil: none.
	MeterProvider metric.MeterProvider
	// Clock times the calls. Default [SystemClock]; give it the clock of
	// the locker it wraps.
	Clock Clock
}

// Attribute keys of the spans and metrics of [Instrument]. Metrics carry
// the operation and its result, never the key or the owner, so that their
// series stay few however many locks there are; spans carry both.
const (
	telOperation = attribute.Key("locks.operation")
	telResult    = attribute.Key("locks.result")
	telKey       = attribute.Key("locks.key")
	telOwner     = attribute.Key("locks.owner")
	telWait      = attribute.Key("locks.wait")
	telFence     = attribute.Key("locks.fence")
	telHolders   = attribute.Key("locks.holders")
)

// Results of a call (attribute locks.result).
const (
	resultAcquired    = "acquired"     // Acquire took the lock
	resultNotAcquired = "not_acquired" // Acquire found it held (and, waiting, never free)
	resultReleased    = "released"     // Release freed it
	resultExtended    = "extended"     // Extend moved the lease
	resultNotHeld     = "not_held"     // Release or Extend found no lease of the owner's
	resultRemoved     = "removed"      // Reset removed a live holder
	resultAbsent      = "absent"       // Reset found none
	resultListed      = "listed"       // List answered
	resultError       = "error"        // the call failed
)

// Instrument returns a [Locker] that passes every call to l and reports it
// to OpenTelemetry: a span per call, with the attributes locks.key,
// locks.owner (the owner the call acts for), locks.result and, for
// Acquire, locks.wait (seconds) and locks.fence; a failed call records its
// error and sets the span's status to Error. Its metrics, with the
// attributes locks.operation (acquire, release, extend, reset, list),
// locks.result and, on failures, error.type:
//
//	locks.operations          counter    calls, by operation and result
//	locks.operation.duration  histogram  seconds a call took; for a blocking
//	                                     Acquire, the time it waited
//
// The results: acquired or not_acquired (Acquire), released or not_held
// (Release), extended or not_held (Extend), removed or absent (Reset),
// listed (List), and error for any call that failed. Telemetry makes no
// request. Invalid options fail with an error wrapping
// [ErrInvalidOptions].
func Instrument(l Locker, optFns ...func(*TelemetryOptions)) (Locker, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil locker", ErrInvalidOptions)
	}
	var o TelemetryOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o.TracerProvider, o.MeterProvider = instrument.Providers(o.TracerProvider, o.MeterProvider)
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	meter := o.MeterProvider.Meter(InstrumentationName)
	calls, err1 := meter.Int64Counter("locks.operations", metric.WithUnit("{call}"),
		metric.WithDescription("Calls of a locker, by locks.operation and locks.result."))
	duration, err2 := meter.Float64Histogram("locks.operation.duration",
		instrument.Seconds("How long calls of a locker took, waits of a blocking Acquire included, by locks.operation and locks.result.")...)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("%w: telemetry: %w", ErrInvalidOptions, err)
	}
	return &instrumented{
		l:        l,
		tracer:   o.TracerProvider.Tracer(InstrumentationName),
		clock:    o.Clock,
		calls:    calls,
		duration: duration,
	}, nil
}

// instrumented is the [Locker] of [Instrument].
type instrumented struct {
	l        Locker
	tracer   trace.Tracer
	clock    Clock
	calls    metric.Int64Counter
	duration metric.Float64Histogram
}

// tracedCall follows one call: its span and its start.
type tracedCall struct {
	in    *instrumented
	op    string
	span  trace.Span
	start time.Time
}

// begin starts the span of operation op (opAcquire, ...; its name is op
// without the "lock_" prefix) on key, acting for the owner optFns name;
// List has neither.
func (in *instrumented) begin(ctx context.Context, op, key string, optFns []func(*CallOptions), attrs ...attribute.KeyValue) (context.Context, *tracedCall) {
	start := in.clock.Now()
	name := strings.TrimPrefix(op, "lock_")
	if op != opList {
		// The arguments as the locker reads them; it reports them invalid.
		args, _ := newCall(op, key, 0, false, in.l.Owner(), optFns)
		attrs = append(attrs, telKey.String(key), telOwner.String(args.owner))
		if op == opAcquire {
			attrs = append(attrs, telWait.Float64(args.wait.Seconds()))
		}
	}
	ctx, span := in.tracer.Start(ctx, "locks."+name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	return ctx, &tracedCall{in: in, op: name, span: span, start: start}
}

// end ends the call with result (resultError when err is not nil).
func (c *tracedCall) end(ctx context.Context, result string, err error, attrs ...attribute.KeyValue) {
	now := c.in.clock.Now()
	metricAttrs := []attribute.KeyValue{telOperation.String(c.op)}
	if err != nil {
		result = resultError
		kind := errorType(err)
		metricAttrs = append(metricAttrs, instrument.ErrorTypeKey.String(kind))
		c.span.RecordError(err, trace.WithTimestamp(now))
		c.span.SetStatus(codes.Error, err.Error())
		attrs = append(attrs, instrument.ErrorTypeKey.String(kind))
	}
	metricAttrs = append(metricAttrs, telResult.String(result))
	c.span.SetAttributes(append(attrs, telResult.String(result))...)
	c.in.calls.Add(ctx, 1, metric.WithAttributes(metricAttrs...))
	c.in.duration.Record(ctx, max(now.Sub(c.start), 0).Seconds(), metric.WithAttributes(metricAttrs...))
	c.span.End(trace.WithTimestamp(now))
}

// errorType is the error.type of a locker's error: closed, or what
// [instrument.ErrorType] says of the [*provider.Error] values lockers
// return (invalid_input, canceled, retryable, ...).
func errorType(err error) string {
	if errors.Is(err, ErrClosed) {
		return "closed"
	}
	return instrument.ErrorType(err)
}

func (in *instrumented) Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (Lease, bool, error) {
	ctx, c := in.begin(ctx, opAcquire, key, optFns)
	lease, acquired, err := in.l.Acquire(ctx, key, ttl, optFns...)
	if acquired {
		c.end(ctx, resultAcquired, err, telFence.Int64(lease.Fence))
	} else {
		c.end(ctx, resultNotAcquired, err)
	}
	return lease, acquired, err
}

func (in *instrumented) Release(ctx context.Context, key string, optFns ...func(*CallOptions)) (bool, error) {
	ctx, c := in.begin(ctx, opRelease, key, optFns)
	released, err := in.l.Release(ctx, key, optFns...)
	c.end(ctx, pick(released, resultReleased, resultNotHeld), err)
	return released, err
}

func (in *instrumented) Extend(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (bool, error) {
	ctx, c := in.begin(ctx, opExtend, key, optFns)
	extended, err := in.l.Extend(ctx, key, ttl, optFns...)
	c.end(ctx, pick(extended, resultExtended, resultNotHeld), err)
	return extended, err
}

func (in *instrumented) Reset(ctx context.Context, key string) (bool, error) {
	ctx, c := in.begin(ctx, opReset, key, nil)
	removed, err := in.l.Reset(ctx, key)
	c.end(ctx, pick(removed, resultRemoved, resultAbsent), err)
	return removed, err
}

func (in *instrumented) List(ctx context.Context) ([]Holder, error) {
	ctx, c := in.begin(ctx, opList, "", nil)
	holders, err := in.l.List(ctx)
	c.end(ctx, resultListed, err, telHolders.Int(len(holders)))
	return holders, err
}

func (in *instrumented) Owner() string { return in.l.Owner() }

func (in *instrumented) Close() error { return in.l.Close() }

// pick returns yes when ok, else no.
func pick(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
