package durable

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/oteltest"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// telLosingProvider reports the first ack of activity loseName as a lost
// lock (as when the lease expired and another worker took the item): it
// releases the item for a redelivery and fails the ack with
// ErrInvalidLockToken.
type telLosingProvider struct {
	provider.Provider
	loseName string

	mu     sync.Mutex
	names  map[string]string // lock token -> activity name
	failed bool
}

func (p *telLosingProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	item, err := p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if item != nil {
		p.mu.Lock()
		p.names[item.LockToken] = item.Item.Name
		p.mu.Unlock()
	}
	return item, err
}

func (p *telLosingProvider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	p.mu.Lock()
	lose := !p.failed && p.names[lockToken] == p.loseName
	p.failed = p.failed || lose
	p.mu.Unlock()
	if lose {
		if err := p.Provider.AbandonWorkItem(ctx, lockToken, 0, true); err != nil {
			return err
		}
		return provider.Permanent("ack_work_item", provider.ErrInvalidLockToken, "lock of %s lost", p.loseName)
	}
	return p.Provider.AckWorkItem(ctx, lockToken, completion)
}

// TestTelemetry runs orchestrations with an in-memory span exporter and a
// manual metric reader: one with a timer and an activity, whose turns,
// activity and provider calls must share one trace; one whose activity
// fails; one whose activity is poisoned; one whose activity loses its lock
// once. The metrics must count exactly what happened.
func TestTelemetry(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	greet := NewActivity("Greet", func(_ context.Context, name string) (string, error) { return "Hello, " + name, nil })
	fail := NewActivity("Fail", func(context.Context, string) (string, error) { return "", errors.New("boom") })
	flaky := NewActivity("Flaky", func(context.Context, string) (string, error) { return "ok", nil })
	hello := NewOrchestration("Hello", func(ctx *OrchestrationContext, name string) (string, error) {
		if err := ctx.Sleep(5 * time.Millisecond); err != nil {
			return "", err
		}
		return greet.Call(ctx, name).Get(ctx)
	})
	broken := NewOrchestration("Broken", func(ctx *OrchestrationContext, in string) (string, error) {
		return fail.Call(ctx, in).Get(ctx)
	})
	poisoned := NewOrchestration("Poisoned", func(ctx *OrchestrationContext, in string) (string, error) {
		return CallActivity[string](ctx, "Missing", in).Get(ctx)
	})
	losing := NewOrchestration("Losing", func(ctx *OrchestrationContext, in string) (string, error) {
		return flaky.Call(ctx, in).Get(ctx)
	})
	reg, err := NewRegistry(greet, fail, flaky, hello, broken, poisoned, losing)
	if err != nil {
		t.Fatal(err)
	}
	mem := memprovider.New()
	p := &telLosingProvider{Provider: mem, loseName: "Flaky", names: map[string]string{}}
	rt, err := NewRuntime(p, reg, func(o *Options) {
		o.LongPollTimeout = 200 * time.Millisecond
		o.MinPollInterval = 5 * time.Millisecond
		o.Logger = quietLog()
		o.MaxAttempts = 2
		o.UnregisteredBackoff = UnregisteredBackoff{Base: 5 * time.Millisecond, Max: 10 * time.Millisecond}
		o.TracerProvider = tp
		o.MeterProvider = mp
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := NewClient(mem)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want := map[string]State{"tel-hello": StateCompleted, "tel-broken": StateFailed, "tel-poisoned": StateFailed, "tel-losing": StateCompleted}
	names := map[string]string{"tel-hello": "Hello", "tel-broken": "Broken", "tel-poisoned": "Poisoned", "tel-losing": "Losing"}
	for id, name := range names {
		if err := c.StartOrchestration(ctx, id, name, "x"); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	for id, state := range want {
		st, err := c.WaitForCompletion(ctx, id)
		if err != nil {
			t.Fatalf("wait %s: %v", id, err)
		}
		if st.State != state {
			t.Fatalf("%s: %v (%v); want %v", id, st.State, st.Failure, state)
		}
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("spans", func(t *testing.T) {
		root := orchestrationSpanContext("tel-hello")
		var inTrace []tracetest.SpanStub
		for _, s := range spans.GetSpans() {
			if s.SpanContext.TraceID() == OrchestrationTraceID("tel-hello") {
				inTrace = append(inTrace, s)
			}
		}
		byName := map[string][]tracetest.SpanStub{}
		ids := map[trace.SpanID]string{}
		for _, s := range inTrace {
			byName[s.Name] = append(byName[s.Name], s)
			ids[s.SpanContext.SpanID()] = s.Name
			if v, ok := attr(s.Attributes, "durable.instance.id"); ok && v.AsString() != "tel-hello" {
				t.Errorf("span %s of instance %s in tel-hello's trace", s.Name, v.AsString())
			}
		}
		turns := byName["orchestration turn Hello"]
		if len(turns) != 3 {
			t.Fatalf("%d turn spans in the trace; want 3 (start, timer, activity completion): %v", len(turns), spanNames(inTrace))
		}
		outcomes := map[string]int{}
		for _, s := range turns {
			if s.Parent.SpanID() != root.SpanID() || !s.Parent.IsRemote() {
				t.Errorf("turn span's parent %v; want the instance's remote span context %v", s.Parent.SpanID(), root.SpanID())
			}
			v, _ := attr(s.Attributes, "durable.outcome")
			outcomes[v.AsString()]++
			for _, key := range []string{"durable.execution.id", "durable.orchestration.name", "durable.orchestration.version"} {
				if _, ok := attr(s.Attributes, attribute.Key(key)); !ok {
					t.Errorf("turn span lacks %s", key)
				}
			}
		}
		if outcomes["continue"] != 2 || outcomes["completed"] != 1 {
			t.Errorf("turn outcomes %v; want 2 continue, 1 completed", outcomes)
		}
		acts := byName["activity Greet"]
		if len(acts) != 1 {
			t.Fatalf("%d activity spans; want 1: %v", len(acts), spanNames(inTrace))
		}
		if acts[0].Parent.SpanID() != root.SpanID() {
			t.Errorf("activity span's parent %v; want %v", acts[0].Parent.SpanID(), root.SpanID())
		}
		if v, _ := attr(acts[0].Attributes, "durable.outcome"); v.AsString() != "completed" {
			t.Errorf("activity outcome %q", v.AsString())
		}
		for name, parent := range map[string]string{
			"provider AckOrchestrationItem": "orchestration turn Hello",
			"provider AckWorkItem":          "activity Greet",
		} {
			if len(byName[name]) == 0 {
				t.Errorf("no %q span in the trace: %v", name, spanNames(inTrace))
			}
			for _, s := range byName[name] {
				if got := ids[s.Parent.SpanID()]; got != parent {
					t.Errorf("%s's parent is %q; want %q", name, got, parent)
				}
			}
		}
		if n := len(byName["provider AckOrchestrationItem"]); n != 3 {
			t.Errorf("%d turn commits; want 3", n)
		}
		if n := len(byName["provider FetchOrchestrationItem"]); n != 3 {
			t.Errorf("%d orchestration fetches in the trace; want 3", n)
		}
		if n := len(byName["provider FetchWorkItem"]); n != 1 {
			t.Errorf("%d work fetches in the trace; want 1", n)
		}
		for _, s := range byName["provider FetchWorkItem"] {
			if s.Parent.SpanID() != root.SpanID() {
				t.Errorf("work fetch span's parent %v; want %v", s.Parent.SpanID(), root.SpanID())
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		oteltest.CheckSecondsBounds(t, rm)
		for _, c := range []struct {
			metric string
			attrs  []attribute.KeyValue
			want   int64
		}{
			{"durable.turns", kv("durable.orchestration.name", "Hello"), 3},
			{"durable.turns", kv("durable.orchestration.name", "Hello", "durable.outcome", "completed"), 1},
			{"durable.turns", kv("durable.outcome", "failed"), 2},
			{"durable.activities", kv("durable.activity.name", "Greet", "durable.outcome", "completed"), 1},
			{"durable.activities", kv("durable.activity.name", "Fail", "durable.outcome", "failed"), 1},
			{"durable.activities", kv("durable.activity.name", "Missing", "durable.outcome", "abandoned"), 2},
			{"durable.activities", kv("durable.activity.name", "Missing", "durable.outcome", "poisoned"), 1},
			{"durable.activities", kv("durable.activity.name", "Flaky", "durable.outcome", "lock_lost"), 1},
			{"durable.activities", kv("durable.activity.name", "Flaky", "durable.outcome", "completed"), 1},
			{"durable.failures", kv("durable.kind", "activity"), 2},
			{"durable.failures", kv("durable.kind", "activity", "durable.activity.name", "Fail"), 1},
			{"durable.failures", kv("durable.kind", "orchestration"), 2},
			{"durable.failures", kv("durable.kind", "orchestration", "durable.orchestration.name", "Poisoned"), 1},
			{"durable.poison", kv("durable.kind", "activity", "durable.activity.name", "Missing"), 1},
			{"durable.poison", kv("durable.kind", "orchestration"), 0},
			{"durable.lock_losses", kv("durable.kind", "activity"), 1},
			{"durable.lock_losses", kv("durable.kind", "orchestration"), 0},
		} {
			if got := sumOf(t, rm, c.metric, c.attrs); got != c.want {
				t.Errorf("%s%v = %d; want %d", c.metric, c.attrs, got, c.want)
			}
		}
		for _, c := range []struct {
			metric string
			attrs  []attribute.KeyValue
			min    uint64
			max    uint64
		}{
			{"durable.fetch.duration", kv("durable.queue", "orchestrator", "durable.fetch.result", "item"), 1, 1 << 20},
			{"durable.fetch.duration", kv("durable.queue", "worker", "durable.fetch.result", "item"), 1, 1 << 20},
			{"durable.queue.wait", kv("durable.queue", "orchestrator", "durable.message.kind", "timer"), 1, 1},
		} {
			if got := countOf(t, rm, c.metric, c.attrs); got < c.min || got > c.max {
				t.Errorf("%s%v has %d recordings; want %d to %d", c.metric, c.attrs, got, c.min, c.max)
			}
		}
	})
}

// TestTelemetryOff checks that a runtime without providers uses the
// provider as given and that the hooks cost no allocation.
func TestTelemetryOff(t *testing.T) {
	p := memprovider.New()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(p, reg)
	if err != nil {
		t.Fatal(err)
	}
	if rt.p != provider.Provider(p) {
		t.Fatalf("runtime wraps the provider with telemetry off: %T", rt.p)
	}
	tel := rt.tel
	ctx := context.Background()
	item := &provider.OrchestrationItem{Instance: "i", OrchestrationName: "O", ExecutionID: 1, Messages: []provider.WorkItem{provider.TimerFiredItem{Instance: "i", FireAtMs: 1}}}
	locked := &provider.LockedWorkItem{Item: provider.ActivityExecuteItem{Instance: "i", Name: "A"}}
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		tctx, tt := tel.startTurn(ctx, item, now)
		tt.poisoned()
		tt.lockLost()
		tel.turn(tctx).failedExecution("x")
		tt.end()
		actx, at := tel.startActivity(ctx, locked)
		at.finished(outcomeFailed, "x")
		tel.activity(actx).lockLost()
		at.end()
		tel.fetched(ctx, queueWorker, now, true, nil)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per turn and activity with telemetry off; want 0", allocs)
	}
}

// TestTelemetryTraceID checks that the trace id depends on the instance
// only, and differs between instances.
func TestTelemetryTraceID(t *testing.T) {
	a, b := OrchestrationTraceID("a"), OrchestrationTraceID("b")
	if !a.IsValid() || a == b || a != OrchestrationTraceID("a") {
		t.Fatalf("trace ids %v %v", a, b)
	}
	sc := orchestrationSpanContext("a")
	if !sc.IsRemote() || !sc.IsSampled() || !sc.SpanID().IsValid() {
		t.Fatalf("span context %+v", sc)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func kv(pairs ...string) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, attribute.String(pairs[i], pairs[i+1]))
	}
	return out
}

func attr(attrs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func spanNames(spans []tracetest.SpanStub) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// matches reports whether set has every one of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, w := range want {
		if v, ok := set.Value(w.Key); !ok || v != w.Value {
			return false
		}
	}
	return true
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// sumOf sums the points of counter name whose attributes include want.
func sumOf(t *testing.T, rm metricdata.ResourceMetrics, name string, want []attribute.KeyValue) int64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T; want an int64 sum", name, m.Data)
	}
	var total int64
	for _, dp := range sum.DataPoints {
		if matches(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

// countOf counts the recordings of histogram name whose attributes include
// want.
func countOf(t *testing.T, rm metricdata.ResourceMetrics, name string, want []attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		return 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T; want a float64 histogram", name, m.Data)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}
