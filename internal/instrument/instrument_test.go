package instrument

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/duradyn/duradyn/provider"
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

func TestErrorType(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{provider.Permanent("op", provider.ErrInvalidLockToken, "lost"), "invalid_lock_token"},
		{fmt.Errorf("wrapped: %w", provider.ErrInvalidInput), "invalid_input"},
		{provider.Retryable("op", context.DeadlineExceeded, "slow"), "deadline_exceeded"},
		{context.Canceled, "canceled"},
		{provider.Retryable("op", errors.New("throttled"), "throttled"), "retryable"},
		{provider.Permanent("op", errors.New("refused"), "refused"), "permanent"},
		{errors.New("unclassified"), "retryable"}, // as provider.IsRetryable treats it
	} {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
