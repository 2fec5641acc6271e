package instrument

import (
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestSecondsBoundaries checks what the boundaries promise: sorted, from
// 5 ms (a request to DynamoDB in its region takes a few) to an hour.
func TestSecondsBoundaries(t *testing.T) {
	if !slices.IsSorted(SecondsBoundaries) || len(slices.Compact(slices.Clone(SecondsBoundaries))) != len(SecondsBoundaries) {
		t.Fatalf("boundaries %v are not strictly increasing", SecondsBoundaries)
	}
	if first, last := SecondsBoundaries[0], SecondsBoundaries[len(SecondsBoundaries)-1]; first != 0.005 || last != 3600 {
		t.Fatalf("boundaries from %v to %v; want 0.005 to 3600", first, last)
	}
}

func TestProviders(t *testing.T) {
	tp, mp := Providers(nil, nil)
	if tp == nil || mp == nil {
		t.Fatal("no-op providers missing")
	}
	sdkTP, sdkMP := sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider()
	if gotTP, gotMP := Providers(sdkTP, sdkMP); gotTP != sdkTP || gotMP != sdkMP {
		t.Fatal("given providers replaced")
	}
}
