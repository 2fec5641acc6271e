package dynamo

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/metric"

	"github.com/dynoxide/dynoxide/internal/clockskew"
)

// DefaultClockSkewWarning is the default of [Options.ClockSkewWarning].
const DefaultClockSkewWarning = clockskew.DefaultWarning

// clockWatch wraps the DynamoDB client and measures how far the provider's
// clock (Options.Now) is from DynamoDB's, from the Date header of each
// response of the operations below (package clockskew).
type clockWatch struct {
	API
	w *clockskew.Watch
}

// newClockWatch returns the watch of the clock o.Now on o.Client.
func newClockWatch(o Options) *clockWatch {
	return &clockWatch{API: o.Client, w: clockskew.New("dynamo", o.Now, o.ClockSkewWarning, o.Logf,
		"leases, visibility times and timers assume less skew between processes (docs/design.md §9)")}
}

// ClockSkew returns how far this process's clock (Options.Now) runs ahead
// of DynamoDB's (negative: behind), measured from the Date headers of the
// responses seen so far, and the half-width of the interval the skew is
// known to lie in. ok is false before the first response that carried a
// Date header. A skew beyond [Options.ClockSkewWarning] is logged once
// through Options.Logf each time it is first seen.
func (p *Provider) ClockSkew() (skew, uncertainty time.Duration, ok bool) {
	return p.clock.w.Estimate()
}

func (c *clockWatch) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return c.API.GetItem(ctx, in, c.with(optFns)...)
}

func (c *clockWatch) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return c.API.PutItem(ctx, in, c.with(optFns)...)
}

func (c *clockWatch) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return c.API.UpdateItem(ctx, in, c.with(optFns)...)
}

func (c *clockWatch) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return c.API.Scan(ctx, in, c.with(optFns)...)
}

func (c *clockWatch) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return c.API.Query(ctx, in, c.with(optFns)...)
}

// with returns the call's options and the watch's, leaving the caller's
// slice as it was.
func (c *clockWatch) with(optFns []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	return append(slices.Clip(optFns), c.w.Option)
}

// observeClockSkew registers the gauges dynamo.clock.skew and
// dynamo.clock.skew.uncertainty with mp, read from w at each collection;
// neither reports before w has an estimate.
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
