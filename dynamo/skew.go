package dynamo

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/duradyn/duradyn/internal/clockskew"
)

// DefaultClockSkewWarning is the default of [Options.ClockSkewWarning].
const DefaultClockSkewWarning = clockskew.DefaultWarning

// newClockWatch returns the watch of o.Now, fed by every response of the
// provider's client.
func newClockWatch(o Options) *clockskew.Watch {
	return clockskew.New("dynamo", o.Now, o.ClockSkewWarning, o.Logger,
		"leases, visibility times and timers assume less skew between processes (docs/design.md §9)")
}

// ClockSkew returns how far this process's clock (Options.Now) runs ahead
// of DynamoDB's (negative: behind), from the responses' Date headers, and
// the half-width of the interval it lies in; ok is false before the first
// Date header. A skew beyond [Options.ClockSkewWarning] is logged once.
func (p *Provider) ClockSkew() (skew, uncertainty time.Duration, ok bool) {
	return p.skew.Estimate()
}

// observeClockSkew registers the clock skew gauges with mp; neither
// reports before w has an estimate.
func observeClockSkew(mp metric.MeterProvider, w *clockskew.Watch) (metric.Registration, error) {
	m := mp.Meter(InstrumentationName, metric.WithInstrumentationVersion(Version))
	skew, err1 := m.Float64ObservableGauge("dynamo.clock.skew", metric.WithUnit("s"),
		metric.WithDescription("How far this process's clock runs ahead of DynamoDB's (negative: behind), measured from the Date headers of the provider's responses (Provider.ClockSkew)."))
	within, err2 := m.Float64ObservableGauge("dynamo.clock.skew.uncertainty", metric.WithUnit("s"),
		metric.WithDescription("Half-width of the interval the clock skew is known to lie in."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if s, u, ok := w.Estimate(); ok {
			o.ObserveFloat64(skew, s.Seconds())
			o.ObserveFloat64(within, u.Seconds())
		}
		return nil
	}, skew, within)
}
