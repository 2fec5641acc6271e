package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/provider"
)

// Lease-critical requests (docs/design.md §6, "Requests under a lease"):
// claims, renewals, turn commits and worker acks, with the reads that
// settle their unknown outcomes. Each attempt is sent once by the SDK (its
// retryer would resend the same body, with a stale clock read, and back
// off past the lease) under a deadline of its own; the provider retries
// with fresh values and reads what an ambiguous attempt did.

// leaseBudget marks a context whose requests are lease-critical. endMs,
// when not 0, is the latest time (epoch ms, provider clock) an attempt may
// still be waiting for its answer. A claim's attempts are bounded by that
// alone (they only take from the lease they win); a renewal's by half of
// what is left, so that a read and another attempt fit after one that
// went unanswered.
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

// underLease returns ctx with its requests made lease-critical, each
// attempt answered by endMs at the latest (0: only the per-attempt
// timeout).
func underLease(ctx context.Context, endMs int64) context.Context {
	return context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: endMs})
}

// underClaim returns ctx with its requests made lease-critical, each
// attempt bounded by endMs alone.
func underClaim(ctx context.Context, endMs int64) context.Context {
	return context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: endMs, kind: budgetClaim})
}

// noSDKRetry sends a request once: the provider decides what to resend.
func noSDKRetry(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// attempt bounds one request sent under ctx: under a lease budget, it
// gets a deadline of Options.LeaseRequestTimeout capped by the budget's
// end, and no SDK retries. Other requests pass as they are.
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

// ackBudget is the budget of an ack: LeaseRequestTimeout per attempt,
// whatever is left of the lease. An ack that lands after its lease ended
// is harmless (fencing, §6), and one refused because it ended must get
// that definite answer ([provider.ErrInvalidLockToken]) rather than a
// deadline.
func ackBudget(ctx context.Context) context.Context { return underLease(ctx, 0) }

// claimBudget is the part of a lease a claim may spend waiting for its
// answer: a claim answered later leaves too little of the lease to be
// worth using (usefulLease), and is released.
func claimBudget(lockTimeout time.Duration) time.Duration { return lockTimeout * 3 / 4 }

// usefulLease reports whether a lease ending at untilMs, won under
// lockTimeout, still has a quarter of its length left at nowMs.
func usefulLease(untilMs, nowMs int64, lockTimeout time.Duration) bool {
	return untilMs-nowMs >= durMs(lockTimeout-claimBudget(lockTimeout))
}

// Renewal retries (see renewLease).
const (
	// renewFirstBackoff is the first pause between renewal attempts; it
	// doubles, with jitter, up to renewMaxBackoff.
	renewFirstBackoff = 25 * time.Millisecond
	renewMaxBackoff   = time.Second
	// renewMargin is how long before the known end of a lease retries
	// stop: a renewal that lands later than that would race a steal.
	renewMargin = 250 * time.Millisecond
	// renewUnknownLease is how long retries go on when this process does
	// not know the lease's end (the lock was fetched elsewhere).
	renewUnknownLease = 2 * time.Second
)

// renewal is one renewal call: write sends an attempt extending the lease
// to untilMs, conditioned on the token and a lease live at nowMs; read
// returns the lease's end as stored while the token holds the lock, and
// false when it does not.
type renewal struct {
	op        string
	knownEnd  int64 // the lease's end as this process knows it; 0: unknown
	extendFor time.Duration
	write     func(ctx context.Context, nowMs, untilMs int64) error
	read      func(ctx context.Context) (untilMs int64, held bool, err error)
}

// renewLease extends a lease and returns its new end. Each attempt reads
// the clock afresh and is sent once; after an attempt whose outcome is
// unknown, a consistent read of the lock learns whether it (or an earlier
// one) landed. A failed condition, or a read that finds the token gone,
// is proof that the lock is lost: [provider.ErrInvalidLockToken] at once.
// Attempts stop renewMargin before the lease ends; a renewal that could
// not be confirmed by then fails with [provider.ErrInvalidLockToken] too,
// decided by the clock: by then another process may take the lock.
func (p *Provider) renewLease(ctx context.Context, r renewal) (int64, error) {
	deadline := r.knownEnd - durMs(renewMargin)
	if r.knownEnd == 0 {
		deadline = p.nowMs() + durMs(renewUnknownLease)
	}
	ctx = context.WithValue(ctx, leaseBudgetKey{}, leaseBudget{endMs: deadline, kind: budgetRenewal})
	// Every attempt of this call extends the lease to at least this; a
	// stored end that reaches it is one of them.
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
