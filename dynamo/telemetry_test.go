package dynamo_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/clockskew/skewtest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/internal/oteltest"
)

// fakeDynamoDB answers every DynamoDB request with an empty result that
// reports 1.5 consumed capacity units, and keeps the request bodies.
type fakeDynamoDB struct {
	mu     sync.Mutex
	bodies map[string][]string // operation -> request bodies
}

func (f *fakeDynamoDB) Do(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	f.mu.Lock()
	f.bodies[op] = append(f.bodies[op], string(body))
	f.mu.Unlock()
	capacity := `{"TableName":"tbl","CapacityUnits":1.5}`
	if op == "TransactWriteItems" || op == "BatchWriteItem" || op == "BatchGetItem" {
		capacity = "[" + capacity + "]"
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"req-1"}},
		Body:       io.NopCloser(bytes.NewReader([]byte(`{"ConsumedCapacity":` + capacity + `}`))),
		Request:    r,
	}, nil
}

func (f *fakeDynamoDB) requests() (ops map[string]int, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops = map[string]int{}
	for op, bodies := range f.bodies {
		ops[op] = len(bodies)
		total += len(bodies)
	}
	return ops, total
}

func fakeProvider(t *testing.T, f *fakeDynamoDB, optFn func(*dynamo.Options)) *dynamo.Provider {
	t.Helper()
	client := dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		Credentials:      aws.AnonymousCredentials{},
		BaseEndpoint:     aws.String("http://dynamodb.invalid"),
		HTTPClient:       f,
		RetryMaxAttempts: 1,
	})
	p, err := dynamo.New(aws.Config{}, func(o *dynamo.Options) {
		o.TableName = "tbl"
		o.ShortPoll = true
		o.Client = client
		optFn(o)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestTelemetryMiddleware checks the SDK middleware on a client given in
// Options.Client: one client span per request, a child of the caller's
// span, with the semantic conventions' attributes; the requests asked for
// their consumed capacity; the request and capacity metrics match the
// requests sent. Without providers the requests are sent unchanged.
func TestTelemetryMiddleware(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	f := &fakeDynamoDB{bodies: map[string][]string{}}
	p := fakeProvider(t, f, func(o *dynamo.Options) {
		o.TracerProvider = tp
		o.MeterProvider = mp
	})

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	if _, err := p.Read(ctx, "inst"); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if _, _, err := p.KVValue(ctx, "inst", "k"); err != nil {
		t.Fatalf("KVValue: %v", err)
	}
	parent.End()

	ops, total := f.requests()
	if total == 0 {
		t.Fatal("no request reached the client")
	}
	for op, bodies := range f.bodies {
		for _, b := range bodies {
			if !strings.Contains(b, `"ReturnConsumedCapacity":"TOTAL"`) {
				t.Errorf("%s request does not ask for its consumed capacity: %s", op, b)
			}
		}
	}
	requestSpans := 0
	for _, s := range spans.GetSpans() {
		if s.Name == "caller" {
			continue
		}
		requestSpans++
		op := strings.TrimPrefix(s.Name, "DynamoDB/")
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the caller's span", s.Name)
		}
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("%s is a %v span; want client", s.Name, s.SpanKind)
		}
		want := map[attribute.Key]string{
			"rpc.system": "aws-api", "rpc.service": "DynamoDB", "rpc.method": op,
			"db.system": "dynamodb", "db.system.name": "aws.dynamodb",
			"aws.dynamodb.table_names": `["tbl"]`, "aws.request_id": "req-1",
			"http.response.status_code": "200", "cloud.region": "us-east-1",
		}
		got := map[attribute.Key]string{}
		for _, a := range s.Attributes {
			got[a.Key] = a.Value.String()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q; want %q", s.Name, k, got[k], v)
			}
		}
	}
	if requestSpans != total {
		t.Errorf("%d request spans for %d requests", requestSpans, total)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	oteltest.CheckSecondsBounds(t, rm)
	requests := map[string]int64{}
	capacity := map[string]float64{}
	durations := uint64(0)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if m.Name == "dynamo.aws.requests" {
						op, _ := dp.Attributes.Value("rpc.method")
						requests[op.AsString()] += dp.Value
					}
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					if m.Name == "dynamo.dynamodb.consumed_capacity" {
						op, _ := dp.Attributes.Value("rpc.method")
						capacity[op.AsString()] += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name == "rpc.client.call.duration" {
					for _, dp := range d.DataPoints {
						durations += dp.Count
					}
				}
			}
		}
	}
	for op, n := range ops {
		if requests[op] != int64(n) {
			t.Errorf("dynamo.aws.requests %s = %d; want %d", op, requests[op], n)
		}
		if capacity[op] != 1.5*float64(n) {
			t.Errorf("dynamo.dynamodb.consumed_capacity %s = %v; want %v", op, capacity[op], 1.5*float64(n))
		}
	}
	if durations != uint64(total) {
		t.Errorf("rpc.client.call.duration has %d recordings; want %d", durations, total)
	}
}

// TestTelemetryOffLeavesRequests checks that without providers the
// requests are sent as the provider builds them.
func TestTelemetryOffLeavesRequests(t *testing.T) {
	f := &fakeDynamoDB{bodies: map[string][]string{}}
	p := fakeProvider(t, f, func(*dynamo.Options) {})
	if _, err := p.Read(context.Background(), "inst"); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if _, total := f.requests(); total == 0 {
		t.Fatal("no request reached the client")
	}
	for op, bodies := range f.bodies {
		for _, b := range bodies {
			if strings.Contains(b, "ReturnConsumedCapacity") {
				t.Errorf("%s request asks for its consumed capacity with telemetry off: %s", op, b)
			}
		}
	}
}

// TestClockSkewGauges: with a MeterProvider, the gauges dynamo.clock.skew
// and dynamo.clock.skew.uncertainty report what Provider.ClockSkew
// measures (nothing before the first response), and the provider's Close
// unregisters them.
func TestClockSkewGauges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	env := dynamotest.NewEnv(t, false)
	const ahead = 5 * time.Second
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		o.Now = faults.NewClock(nil, ahead).Now
		o.MeterProvider = mp
	}})
	gauges := func() map[string][]float64 {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string][]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if g, ok := m.Data.(metricdata.Gauge[float64]); ok {
					for _, dp := range g.DataPoints {
						out[m.Name] = append(out[m.Name], dp.Value)
					}
				}
			}
		}
		return out
	}
	if got := gauges(); len(got) != 0 {
		t.Fatalf("gauges before any request: %v, want none", got)
	}
	for i := range 10 {
		must(t, p.EnqueueForOrchestrator(ctx, startItem(fmt.Sprint("gauge-", i)), 0), "enqueue")
		if _, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	skewtest.Check(t, "a clock 5 s ahead", p.ClockSkew, ahead)
	skew, within, _ := p.ClockSkew()
	got := gauges()
	if s, u := got["dynamo.clock.skew"], got["dynamo.clock.skew.uncertainty"]; len(s) != 1 || len(u) != 1 || s[0] != skew.Seconds() || u[0] != within.Seconds() {
		t.Fatalf("gauges %v, want dynamo.clock.skew %v and dynamo.clock.skew.uncertainty %v", got, skew.Seconds(), within.Seconds())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := gauges(); len(got) != 0 {
		t.Fatalf("gauges after Close: %v, want none", got)
	}
}
