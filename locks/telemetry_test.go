package locks_test

import (
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duradyn/duradyn/internal/oteltest"
	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

// instrument wraps l with Instrument on clock, reporting to tp and mp.
func instrument(t *testing.T, l locks.Locker, clock locks.Clock, tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider) locks.Locker {
	t.Helper()
	in, err := locks.Instrument(l, func(o *locks.TelemetryOptions) {
		o.Clock = clock
		if tp != nil {
			o.TracerProvider = tp
		}
		if mp != nil {
			o.MeterProvider = mp
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestInstrumentedConformance runs the conformance suite on instrumented
// memory lockers that report to real SDK providers: the wrapper keeps the
// contract.
func TestInstrumentedConformance(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	lockstest.Run(t, lockstest.Factory{
		NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
			store := locks.NewMemoryStore()
			return instrument(t, newMemory(t, store, clock), clock, tp, mp), instrument(t, newMemory(t, store, clock), clock, tp, mp)
		},
	})
}

func TestInstrumentRefusesNilLocker(t *testing.T) {
	if l, err := locks.Instrument(nil); l != nil || !errors.Is(err, locks.ErrInvalidOptions) {
		t.Fatalf("Instrument(nil) = %v, %v; want an error wrapping ErrInvalidOptions", l, err)
	}
}

// TestInstrumentTelemetry makes each call of the contract with each of its
// results through two instrumented lockers on a fake clock, one Acquire
// blocking 2 s for a release: spans and metrics must say exactly that.
func TestInstrumentTelemetry(t *testing.T) {
	ctx := t.Context()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	clock := lockstest.NewFakeClock(time.UnixMilli(1_767_225_600_000))
	store := locks.NewMemoryStore()
	a := instrument(t, newMemory(t, store, clock), clock, tp, mp)
	b := instrument(t, newMemory(t, store, clock), clock, tp, mp)
	t.Cleanup(func() { _ = errors.Join(a.Close(), b.Close()) })

	must := func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("%v, %v", ok, err)
		}
	}
	mustNot := func(ok bool, err error) {
		t.Helper()
		if err != nil || ok {
			t.Fatalf("%v, %v", ok, err)
		}
	}
	acquire := func(l locks.Locker, optFns ...func(*locks.CallOptions)) (bool, error) {
		_, ok, err := l.Acquire(ctx, "k", 10*time.Second, optFns...)
		return ok, err
	}
	must(acquire(a))
	mustNot(acquire(b))

	// b waits for a's release, 2 s on.
	type result struct {
		lease locks.Lease
		ok    bool
		err   error
	}
	waited := make(chan result, 1)
	go func() {
		lease, ok, err := b.Acquire(ctx, "k", 10*time.Second, locks.WithWait(5*time.Second))
		waited <- result{lease, ok, err}
	}()
	if err := clock.AwaitPending(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	must(a.Release(ctx, "k"))
	w := <-waited
	must(w.ok, w.err)

	must(b.Extend(ctx, "k", 10*time.Second))
	mustNot(a.Extend(ctx, "k", 10*time.Second))
	mustNot(a.Release(ctx, "k"))
	must(a.Release(ctx, "k", locks.WithOwner(b.Owner())))
	mustNot(a.Reset(ctx, "k"))
	must(acquire(a))
	must(a.Reset(ctx, "k"))
	if holders, err := a.List(ctx); err != nil || len(holders) != 0 {
		t.Fatalf("List = %v, %v", holders, err)
	}
	if _, _, err := a.Acquire(ctx, "", time.Second); !errors.Is(err, locks.ErrInvalidInput) {
		t.Fatalf("Acquire of an empty key: %v", err)
	}

	// The spans of the waited Acquire, of the release made for b's owner,
	// of List and of the invalid Acquire.
	ended := spans.GetSpans()
	if len(ended) != 13 {
		t.Fatalf("%d spans; want 13", len(ended))
	}
	for _, tt := range []struct {
		name   string
		by     attribute.KeyValue // tells the span from the others of its name
		attrs  map[attribute.Key]attribute.Value
		status codes.Code
		length time.Duration
	}{
		{"locks.acquire", attribute.Float64("locks.wait", 5), map[attribute.Key]attribute.Value{
			"locks.key": attribute.StringValue("k"), "locks.owner": attribute.StringValue(b.Owner()),
			"locks.fence": attribute.Int64Value(w.lease.Fence), "locks.result": attribute.StringValue("acquired"),
		}, codes.Unset, 2 * time.Second},
		{"locks.release", attribute.String("locks.owner", b.Owner()), map[attribute.Key]attribute.Value{
			"locks.key": attribute.StringValue("k"), "locks.result": attribute.StringValue("released"),
		}, codes.Unset, 0},
		{"locks.list", attribute.String("locks.result", "listed"), map[attribute.Key]attribute.Value{
			"locks.holders": attribute.IntValue(0),
		}, codes.Unset, 0},
		{"locks.acquire", attribute.String("locks.key", ""), map[attribute.Key]attribute.Value{
			"locks.owner": attribute.StringValue(a.Owner()), "locks.wait": attribute.Float64Value(0),
			"locks.result": attribute.StringValue("error"), "error.type": attribute.StringValue("invalid_input"),
		}, codes.Error, 0},
	} {
		var found []tracetest.SpanStub
		for _, s := range ended {
			set := attribute.NewSet(s.Attributes...)
			if v, ok := set.Value(tt.by.Key); s.Name == tt.name && ok && v == tt.by.Value {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Errorf("%d spans %s with %s=%v; want 1", len(found), tt.name, tt.by.Key, tt.by.Value.String())
			continue
		}
		s := found[0]
		set := attribute.NewSet(s.Attributes...)
		for key, want := range tt.attrs {
			if got, ok := set.Value(key); !ok || got != want {
				t.Errorf("%s with %s: %s = %v; want %v", s.Name, tt.by.Key, key, got.String(), want.String())
			}
		}
		if s.Status.Code != tt.status {
			t.Errorf("%s with %s: status %v", s.Name, tt.by.Key, s.Status)
		}
		if d := s.EndTime.Sub(s.StartTime); d != tt.length {
			t.Errorf("%s with %s: lasted %v; want %v", s.Name, tt.by.Key, d, tt.length)
		}
	}

	got := oteltest.Series(t, reader, locks.InstrumentationName)
	want := map[string]string{}
	for series, n := range map[string]int64{
		"locks.operation=acquire,locks.result=acquired":                       3,
		"locks.operation=acquire,locks.result=not_acquired":                   1,
		"error.type=invalid_input,locks.operation=acquire,locks.result=error": 1,
		"locks.operation=release,locks.result=released":                       2,
		"locks.operation=release,locks.result=not_held":                       1,
		"locks.operation=extend,locks.result=extended":                        1,
		"locks.operation=extend,locks.result=not_held":                        1,
		"locks.operation=reset,locks.result=removed":                          1,
		"locks.operation=reset,locks.result=absent":                           1,
		"locks.operation=list,locks.result=listed":                            1,
	} {
		want["locks.operations "+series] = oteltest.Count(n)
		seconds := 0.0
		if series == "locks.operation=acquire,locks.result=acquired" {
			seconds = 2 // the waited Acquire
		}
		want["locks.operation.duration "+series] = oteltest.Histogram(int(n), seconds)
	}
	oteltest.Expect(t, got, want)
}
