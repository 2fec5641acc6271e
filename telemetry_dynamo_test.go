package duradyn_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
)

// TestTelemetryDynamoDB runs one orchestration with a timer and an activity
// on the DynamoDB provider (SQS wake-up queues included) with telemetry on
// in both the runtime and the provider: the turns, the activity, the
// provider calls and the DynamoDB requests they make must share the
// instance's trace, each request a child of the provider call that made
// it; the request and consumed-capacity metrics must equal what a meter
// on the same client counted.
func TestTelemetryDynamoDB(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Meter: meter, Options: func(o *dynamo.Options) {
		o.TracerProvider = tp
		o.MeterProvider = mp
	}})

	greet := durable.NewActivity("Greet", func(_ context.Context, name string) (string, error) { return "Hello, " + name, nil })
	hello := durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		if err := ctx.Sleep(20 * time.Millisecond); err != nil {
			return "", err
		}
		return greet.Call(ctx, name).Get(ctx)
	})
	reg, err := durable.NewRegistry(greet, hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.LongPollTimeout = 2 * time.Second
		o.TracerProvider = tp
		o.MeterProvider = mp
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const id = "telemetry-1"
	c := rt.Client()
	if err := c.StartOrchestration(ctx, id, "Hello", "DynamoDB"); err != nil {
		t.Fatal(err)
	}
	st, err := c.WaitForCompletion(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted {
		t.Fatalf("state %v (%v); want Completed", st.State, st.Failure)
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()

	t.Run("spans", func(t *testing.T) {
		root := durable.OrchestrationTraceID(id)
		var inTrace []tracetest.SpanStub
		sqs := 0
		for _, s := range spans.GetSpans() {
			if s.SpanContext.TraceID() == root {
				inTrace = append(inTrace, s)
			}
			if v, _ := attrValue(s.Attributes, "rpc.service"); v == "SQS" {
				sqs++
			}
		}
		if sqs == 0 {
			t.Errorf("no SQS request span")
		}
		names := map[trace.SpanID]string{}
		count := map[string]int{}
		for _, s := range inTrace {
			names[s.SpanContext.SpanID()] = s.Name
			count[s.Name]++
		}
		for name, want := range map[string]int{"orchestration turn Hello": 3, "activity Greet": 1, "provider AckOrchestrationItem": 3, "provider AckWorkItem": 1} {
			if count[name] != want {
				t.Errorf("%d %q spans in the trace; want %d: %v", count[name], name, want, count)
			}
		}
		// The turns after the first resume the code the runtime kept: the
		// history the provider hands back is the one the last turn
		// committed, event for event.
		resumed := map[bool]int{}
		for _, s := range inTrace {
			if s.Name == "orchestration turn Hello" {
				for _, a := range s.Attributes {
					if a.Key == "durable.turn.resumed" {
						resumed[a.Value.AsBool()]++
					}
				}
			}
		}
		if resumed[true] != 2 || resumed[false] != 1 {
			t.Errorf("%d turns resumed and %d replayed; want 2 and 1", resumed[true], resumed[false])
		}
		requests, underAck := 0, 0
		for _, s := range inTrace {
			if !strings.HasPrefix(s.Name, "DynamoDB/") {
				continue
			}
			requests++
			parent := names[s.Parent.SpanID()]
			if !strings.HasPrefix(parent, "provider ") {
				t.Errorf("%s's parent is %q; want a provider call", s.Name, parent)
			}
			if parent == "provider AckOrchestrationItem" {
				underAck++
			}
			if s.SpanKind != trace.SpanKindClient {
				t.Errorf("%s is a %v span; want client", s.Name, s.SpanKind)
			}
			for key, want := range map[string]string{"rpc.system": "aws-api", "rpc.service": "DynamoDB", "db.system": "dynamodb", "rpc.method": strings.TrimPrefix(s.Name, "DynamoDB/")} {
				if got, _ := attrValue(s.Attributes, attribute.Key(key)); got != want {
					t.Errorf("%s: %s = %q; want %q", s.Name, key, got, want)
				}
			}
			if tables := attrSlice(s.Attributes, "aws.dynamodb.table_names"); !slices.Contains(tables, env.Table) {
				t.Errorf("%s: aws.dynamodb.table_names %v; want %s", s.Name, tables, env.Table)
			}
		}
		if requests == 0 || underAck == 0 {
			t.Errorf("%d DynamoDB request spans in the trace, %d of them under a turn's commit; want some of each", requests, underAck)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		usage := meter.Usage()
		if usage.Total() == 0 || usage.TotalCapacity() == 0 {
			t.Fatalf("the meter counted %d requests, %v capacity units", usage.Total(), usage.TotalCapacity())
		}
		for op, n := range usage.Requests {
			if got := intSum(rm, "dynamo.aws.requests", "rpc.service", "DynamoDB", "rpc.method", op); got != int64(n) {
				t.Errorf("dynamo.aws.requests %s = %d; the meter counted %d", op, got, n)
			}
		}
		if got := intSum(rm, "dynamo.aws.requests", "rpc.service", "DynamoDB"); got != int64(usage.Total()) {
			t.Errorf("dynamo.aws.requests = %d; the meter counted %d", got, usage.Total())
		}
		if got := intSum(rm, "dynamo.aws.requests", "rpc.service", "SQS"); got == 0 {
			t.Errorf("no SQS request counted")
		}
		for op, units := range usage.Capacity {
			if got := floatSum(rm, "dynamo.dynamodb.consumed_capacity", "rpc.method", op); math.Abs(got-units) > 1e-6 {
				t.Errorf("dynamo.dynamodb.consumed_capacity %s = %v; the meter counted %v", op, got, units)
			}
		}
		for _, c := range []struct {
			metric string
			attrs  []string
			want   int64
		}{
			{"durable.turns", []string{"durable.orchestration.name", "Hello"}, 3},
			{"durable.turns", []string{"durable.orchestration.name", "Hello", "durable.outcome", "completed"}, 1},
			{"durable.activities", []string{"durable.activity.name", "Greet", "durable.outcome", "completed"}, 1},
			{"durable.failures", nil, 0},
			{"durable.poison", nil, 0},
			{"durable.lock_losses", nil, 0},
		} {
			if got := intSum(rm, c.metric, c.attrs...); got != c.want {
				t.Errorf("%s%v = %d; want %d", c.metric, c.attrs, got, c.want)
			}
		}
		for _, queue := range []string{"orchestrator", "worker"} {
			if n := histogramCount(rm, "durable.fetch.duration", "durable.queue", queue, "durable.fetch.result", "item"); n == 0 {
				t.Errorf("no fetch latency recorded for the %s queue", queue)
			}
		}
	})
}

func attrValue(attrs []attribute.KeyValue, key attribute.Key) (string, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

func attrSlice(attrs []attribute.KeyValue, key attribute.Key) []string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.AsStringSlice()
		}
	}
	return nil
}

// pointMatches reports whether set holds every key/value pair of kv.
func pointMatches(set attribute.Set, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if v, ok := set.Value(attribute.Key(kv[i])); !ok || v.String() != kv[i+1] {
			return false
		}
	}
	return true
}

func metricNamed(rm metricdata.ResourceMetrics, name string) metricdata.Aggregation {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

// intSum sums the points of int64 counter name whose attributes hold kv.
func intSum(rm metricdata.ResourceMetrics, name string, kv ...string) int64 {
	sum, _ := metricNamed(rm, name).(metricdata.Sum[int64])
	var total int64
	for _, dp := range sum.DataPoints {
		if pointMatches(dp.Attributes, kv) {
			total += dp.Value
		}
	}
	return total
}

// floatSum sums the points of float64 counter name whose attributes hold
// kv.
func floatSum(rm metricdata.ResourceMetrics, name string, kv ...string) float64 {
	sum, _ := metricNamed(rm, name).(metricdata.Sum[float64])
	total := 0.0
	for _, dp := range sum.DataPoints {
		if pointMatches(dp.Attributes, kv) {
			total += dp.Value
		}
	}
	return total
}

// histogramCount counts the recordings of float64 histogram name whose
// attributes hold kv.
func histogramCount(rm metricdata.ResourceMetrics, name string, kv ...string) uint64 {
	h, _ := metricNamed(rm, name).(metricdata.Histogram[float64])
	var n uint64
	for _, dp := range h.DataPoints {
		if pointMatches(dp.Attributes, kv) {
			n += dp.Count
		}
	}
	return n
}
