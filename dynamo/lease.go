package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/provider"
)

// Lease-critical requests are sent once by the SDK under a deadline per
// attempt; the provider resends with a fresh clock read (docs/design.md §6,
// "Requests under a lease").

// leaseBudget marks a context whose requests are lease-critical. endMs,
// when not 0, is the latest time (epoch ms) an attempt may wait for its
// answer; a renewal waits half of what is left, so that a read and another
// attempt fit after an unanswered one.
type leaseBudget struct {
	endMs int64
	kind  budgetKind
}

type budgetKind int

const (
	budgetAck budgetKind = iota
	budgetClaim
	budgetRenewal
)

type leaseBudgetKey struct{}

// underLease makes ctx's requests lease-critical, each attempt answered
// by endMs at the latest (0: only the per-attempt timeout).
func underLease(ctx context.Context, endMs int64) context.Context {
	return context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: endMs})
}

// underClaim is underLease for a claim: attempts bounded by endMs alone.
func underClaim(ctx context.Context, endMs int64) context.Context {
	return context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: endMs, kind: budgetClaim})
}

// noSDKRetry sends a request once: the provider decides what to resend.
func noSDKRetry(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// attempt gives a request under a lease budget a deadline of
// LeaseRequestTimeout capped by the budget, and no SDK retries.
func (p *Provider) attempt(ctx context.Context, optFns []func(*dynamodb.Options)) (context.Context, context.CancelFunc, []func(*dynamodb.Options)) {
	b, ok := ctx.Value(leaseBudgetKey{}).(leaseBudget)
	if !ok {
		return ctx, func() {}, optFns
	}
	wait := p.o.LeaseRequestTimeout
	left := time.Duration(b.endMs-p.nowMs()) * time.Millisecond
	switch {
	case b.kind == budgetClaim:
		wait = left
	case b.kind == budgetRenewal:
		wait = min(wait, left/2)
	case b.endMs != 0:
		wait = min(wait, left)
	}
	ctx, cancel := context.WithTimeout(ctx, max(wait, 0))
	return ctx, cancel, append(optFns[:len(optFns):len(optFns)], noSDKRetry)
}

// ackBudget bounds an ack by LeaseRequestTimeout alone, not the lease: a
// late ack is harmless (fenced) and a refused one must get
// ErrInvalidLockToken rather than a deadline.
func ackBudget(ctx context.Context) context.Context { return underLease(ctx, 0) }

// claimBudget is how much of a lease a claim may wait for its answer;
// one answered later is released (usefulLease).
func claimBudget(lockTimeout time.Duration) time.Duration { return lockTimeout * 3 / 4 }

// usefulLease reports whether a quarter of the lease is left at nowMs.
func usefulLease(untilMs, nowMs int64, lockTimeout time.Duration) bool {
	return untilMs-nowMs >= durMs(lockTimeout-claimBudget(lockTimeout))
}

// Renewal retries (see renewLease).
const (
	renewFirstBackoff = 25 * time.Millisecond // doubles, with jitter
	renewMaxBackoff   = time.Second
	// renewMargin is how long before the lease's end retries stop: a later
	// renewal would race a steal.
	renewMargin = 250 * time.Millisecond
	// renewUnknownLease bounds retries when the lease's end is unknown.
	renewUnknownLease = 2 * time.Second
)

// renewal is one renewal call: write extends the lease to untilMs,
// conditioned on the token and a lease live at nowMs; read returns the
// stored end, and whether the token still holds the lock.
type renewal struct {
	op        string
	knownEnd  int64 // the lease's end as this process knows it; 0: unknown
	extendFor time.Duration
	write     func(ctx context.Context, nowMs, untilMs int64) error
	read      func(ctx context.Context) (untilMs int64, held bool, err error)
}

// renewLease extends a lease and returns its new end; an unknown outcome
// is settled by a consistent read of the lock. A lost token, or no
// confirmed attempt by renewMargin before the end, fails with
// [provider.ErrInvalidLockToken] (docs/design.md §6).
func (p *Provider) renewLease(ctx context.Context, r renewal) (int64, error) {
	deadline := r.knownEnd - durMs(renewMargin)
	if r.knownEnd == 0 {
		deadline = p.nowMs() + durMs(renewUnknownLease)
	}
	ctx = context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: deadline, kind: budgetRenewal})
	// A stored end at or past least was set by an attempt of this call.
	least := p.nowMs() + durMs(r.extendFor)
	backoff := renewFirstBackoff
	var last error
	for p.nowMs() < deadline {
		now := p.nowMs()
		until := now + durMs(r.extendFor)
		err := r.write(ctx, now, until)
		if err == nil {
			return until, nil
		}
		if !translate(r.op, err).Retryable {
			return 0, err
		}
		last = err
		if landed, held, rerr := r.read(ctx); rerr == nil {
			if !held {
				return 0, provider.Permanent(r.op, provider.ErrInvalidLockToken, "Invalid lock token: the lock is no longer held (%v)", err)
			}
			if landed >= least {
				return landed, nil // an attempt landed; its answer was lost
			}
		}
		if ctx.Err() != nil {
			return 0, translate(r.op, ctx.Err())
		}
		pause := jitter(backoff)
		p.o.Logger.Warn("dynamo: renewal failed; retrying", "pause", pause, "error", err)
		if sleepCtx(ctx, min(pause, time.Duration(deadline-p.nowMs())*time.Millisecond)) != nil {
			return 0, translate(r.op, ctx.Err())
		}
		backoff = min(2*backoff, renewMaxBackoff)
	}
	return 0, provider.Permanent(r.op, provider.ErrInvalidLockToken,
		"lease not renewed before it ended: no attempt was confirmed within %v of its end (last error: %v)", renewMargin, last)
}
