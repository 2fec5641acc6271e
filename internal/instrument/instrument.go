// Package instrument holds what the OpenTelemetry instrumentation of
// duradyn's packages shares: the bucket boundaries of its histograms in
// seconds, the error.type of an error, and the no-op providers that stand
// for absent ones.
package instrument

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/duradyn/duradyn/provider"
)

// ErrorTypeKey is the semantic conventions' error.type attribute.
const ErrorTypeKey = attribute.Key("error.type")

// SecondsBoundaries are the bucket boundaries every histogram in seconds
// advises (metric.WithExplicitBucketBoundaries; a View of the application
// still overrides them). The SDK's default boundaries, 0 to 10,000, suit
// milliseconds: in seconds, every request and nearly every wait would fall
// into the first bucket. These are the semantic conventions' boundaries for
// request durations, 5 ms to 10 s, followed by coarser ones up to an hour
// for long polls, blocked acquires, queue waits and scheduled runs.
var SecondsBoundaries = []float64{
	0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
	30, 60, 300, 900, 3600,
}

// Seconds returns the options of a histogram in seconds described by
// description: its unit and its bucket boundaries.
func Seconds(description string) []metric.Float64HistogramOption {
	return []metric.Float64HistogramOption{
		metric.WithUnit("s"),
		metric.WithDescription(description),
		metric.WithExplicitBucketBoundaries(SecondsBoundaries...),
	}
}

// Providers returns tp and mp, with OpenTelemetry's no-op providers for
// those that are nil.
func Providers(tp trace.TracerProvider, mp metric.MeterProvider) (trace.TracerProvider, metric.MeterProvider) {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	return tp, mp
}

// ErrorType classifies an error of the provider contract (or of a package
// that reports [*provider.Error] values) for error.type: the contract's
// sentinel or the context error it wraps, else retryable or permanent.
func ErrorType(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{provider.ErrInvalidLockToken, "invalid_lock_token"},
		{provider.ErrNotFound, "not_found"},
		{provider.ErrStillRunning, "still_running"},
		{provider.ErrSubOrchestration, "sub_orchestration"},
		{provider.ErrTreeChanged, "tree_changed"},
		{provider.ErrDuplicateEvent, "duplicate_event"},
		{provider.ErrInvalidInput, "invalid_input"},
		{provider.ErrCorruptData, "corrupt_data"},
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "deadline_exceeded"},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	if provider.IsRetryable(err) {
		return "retryable"
	}
	return "permanent"
}
