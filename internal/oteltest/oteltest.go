// Package oteltest reads what OpenTelemetry's SDK recorded, for tests of
// instrumented packages: every data point of a scope as one map, compared
// with the map a test expects.
package oteltest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duradyn/duradyn/internal/instrument"
)

// Series collects reader and returns every data point recorded, keyed by
// "<metric name> <attributes>" (attributes encoded by
// [attribute.DefaultEncoder]: "k1=v1,k2=v2", sorted by key): an int64 sum
// as its value, a float64 histogram as "[count,sum]". A scope other than
// scope, or a data point of another kind, fails t, and so does a histogram
// in seconds without [instrument.SecondsBoundaries] (CheckSecondsBounds).
func Series(t testing.TB, reader sdkmetric.Reader, scope string) map[string]string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	CheckSecondsBounds(t, rm)
	series := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			t.Errorf("metrics of scope %q; want only %q", sm.Scope.Name, scope)
		}
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					series[key(m.Name, p.Attributes)] = Count(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					series[key(m.Name, p.Attributes)] = Histogram(int(p.Count), p.Sum)
				}
			default:
				t.Errorf("%s: data of kind %T", m.Name, m.Data)
			}
		}
	}
	return series
}

// CheckSecondsBounds fails t for each data point of a float64 histogram in
// seconds (unit "s") in rm whose bucket boundaries are not
// [instrument.SecondsBoundaries], and when rm holds no such histogram.
func CheckSecondsBounds(t testing.TB, rm metricdata.ResourceMetrics) {
	t.Helper()
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || m.Unit != "s" {
				continue
			}
			seen++
			for _, p := range h.DataPoints {
				if !slices.Equal(p.Bounds, instrument.SecondsBoundaries) {
					t.Errorf("%s: bucket boundaries %v; want %v", key(m.Name, p.Attributes), p.Bounds, instrument.SecondsBoundaries)
					break
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no histogram in seconds was recorded")
	}
}

// Expect reports in t each series of want that got lacks or holds with
// another value, and each series of got that want lacks.
func Expect(t testing.TB, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("no %s", k)
		} else if g != w {
			t.Errorf("%s = %s; want %s", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %s", k, g)
		}
	}
}

// Count is the value Series gives a sum of n.
func Count(n int64) string { return encode(n) }

// Histogram is the value Series gives a histogram of count points adding
// up to sum.
func Histogram(count int, sum float64) string { return encode([]float64{float64(count), sum}) }

func key(name string, attrs attribute.Set) string {
	return name + " " + attrs.Encoded(attribute.DefaultEncoder())
}

// encode is the JSON of a number or a slice of numbers, which always
// encode.
func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
