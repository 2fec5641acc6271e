package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// ErrLeaseExpired is the cause of an activity's cancellation when its lease
// could not be renewed in time: no renewal was confirmed before the lease's
// end minus the safety margin (Options.LeaseSafetyMargin), after which
// another worker may take the activity over. It wraps
// [ErrActivityCancelled].
var ErrLeaseExpired = fmt.Errorf("%w: lease not confirmed before its end", ErrActivityCancelled)

// lease is a lock's lease as work under it sees it: renewals are scheduled
// from its expiry, and work stops at the expiry minus a safety margin
// unless a renewal moved it (docs/runtime.md, "Leases"). It is timed on
// Options.Now, which must be the provider's clock.
type lease struct {
	timeout time.Duration // each renewal extends the lease by this
	lead    time.Duration // renewals start this long before the expiry
	margin  time.Duration // work stops this long before the expiry
	now     func() time.Time
	renew   func(ctx context.Context, extendFor time.Duration) error
}

// newLease returns the lease of a lock won for timeout, renewed with
// buffer as the Options say, and by renew.
func (r *Runtime) newLease(timeout, buffer time.Duration, renew func(context.Context, time.Duration) error) *lease {
	lead := timeout - renewalInterval(timeout, buffer)
	if lead <= 0 {
		lead = timeout / 2
	}
	return &lease{timeout: timeout, lead: lead, margin: min(r.leaseMargin(), lead/2), now: r.opts.Now, renew: renew}
}

// leaseMargin is Options.LeaseSafetyMargin plus what the provider measured
// of this clock running behind the store's (others, in step with the
// store, see a lease this process wrote end that much earlier), plus the
// uncertainty of that measure.
func (r *Runtime) leaseMargin() time.Duration {
	m := r.opts.LeaseSafetyMargin
	if r.skew != nil {
		if skew, within, ok := r.skew.ClockSkew(); ok {
			m += max(-skew, 0) + within
		}
	}
	return m
}

// clockSkewer is a provider that measures this clock against its store's.
type clockSkewer interface {
	ClockSkew() (skew, uncertainty time.Duration, ok bool)
}

// expiryOf is a fetched lock's expiry: the provider's, or, from a provider
// that does not report it, fetched plus timeout.
func expiryOf(reported, fetched time.Time, timeout time.Duration) time.Time {
	if reported.IsZero() {
		return fetched.Add(timeout)
	}
	return reported
}

// usable reports whether work may start under a lease ending at expiry.
func (l *lease) usable(expiry time.Time) bool {
	return l.now().Before(expiry.Add(-l.margin))
}

// keep renews the lease ending at expiry until ctx ends. It calls lost
// once and returns when the lock is lost: at once when a renewal proves it
// ([provider.ErrInvalidLockToken]), or with [ErrLeaseExpired] at the
// expiry minus the margin when no renewal was confirmed by then. A
// renewal that fails otherwise is retried.
func (l *lease) keep(ctx context.Context, expiry time.Time, lost func(error)) {
	backoff := 50 * time.Millisecond
	next := expiry.Add(-l.lead)
	for {
		stop := expiry.Add(-l.margin)
		if !waitUntil(ctx, l.now, earliest(next, stop)) {
			return
		}
		if !l.now().Before(stop) {
			lost(ErrLeaseExpired)
			return
		}
		sent := l.now()
		rctx, cancel := context.WithTimeout(ctx, stop.Sub(sent))
		err := l.renew(rctx, l.timeout)
		cancel()
		switch {
		case err == nil:
			// Every attempt of the call read its clock after sent.
			expiry, next, backoff = sent.Add(l.timeout), sent.Add(l.timeout-l.lead), 50*time.Millisecond
		case ctx.Err() != nil:
			return
		case errors.Is(err, provider.ErrInvalidLockToken):
			lost(err)
			return
		default:
			next, backoff = l.now().Add(backoff), min(2*backoff, time.Second)
		}
	}
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// waitUntil waits until now() reaches t, on timers of real time; it
// reports false when ctx ended first.
func waitUntil(ctx context.Context, now func() time.Time, t time.Time) bool {
	d := t.Sub(now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	return sleep(ctx, d)
}
