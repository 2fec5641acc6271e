package durable

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// BackoffKind selects how the wait between retries grows.
type BackoffKind int

// Backoff kinds.
const (
	// BackoffExponential waits Base·Multiplier^(n−1), capped at Max.
	BackoffExponential BackoffKind = iota
	// BackoffNone retries at once.
	BackoffNone
	// BackoffFixed waits Delay.
	BackoffFixed
	// BackoffLinear waits Base·n, capped at Max.
	BackoffLinear
)

// Backoff is the wait between attempts. The zero value is exponential
// backoff from 100 ms doubling to at most 30 s.
type Backoff struct {
	Kind       BackoffKind
	Delay      time.Duration // BackoffFixed
	Base       time.Duration // BackoffLinear, BackoffExponential; default 100 ms
	Max        time.Duration // default 30 s
	Multiplier float64       // BackoffExponential; default 2
}

// RetryPolicy retries a failed activity. Each attempt is an activity of its
// own in history and the waits are timers, so a retried activity replays
// like any other code.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts, at least 1; zero means 3.
	MaxAttempts uint32
	// Backoff is the wait after the n-th failure.
	Backoff Backoff
	// Timeout, when set, bounds each attempt: an attempt still running
	// after it fails the call at once with "timeout: activity timed out",
	// without further attempts, and the attempt is cancelled.
	Timeout time.Duration
}

// ErrActivityTimeout is the failure of an activity whose retry policy's
// Timeout passed.
var ErrActivityTimeout = errors.New("timeout: activity timed out")

func (p RetryPolicy) attempts() uint32 {
	if p.MaxAttempts == 0 {
		return 3
	}
	return p.MaxAttempts
}

// Delay returns the wait after the attempt-th failure (1-based).
func (p RetryPolicy) Delay(attempt uint32) time.Duration {
	b := p.Backoff
	maxDelay := b.Max
	if maxDelay == 0 {
		maxDelay = 30 * time.Second
	}
	base := b.Base
	if base == 0 {
		base = 100 * time.Millisecond
	}
	switch b.Kind {
	case BackoffNone:
		return 0
	case BackoffFixed:
		return b.Delay
	case BackoffLinear:
		return min(base*time.Duration(attempt), maxDelay)
	}
	m := b.Multiplier
	if m == 0 {
		m = 2
	}
	d := float64(base) * math.Pow(m, float64(attempt)-1)
	if d > float64(maxDelay) {
		return maxDelay
	}
	return time.Duration(d)
}

// retryActivity runs the attempts of a retried activity as a branch.
func retryActivity[Out any](ctx *OrchestrationContext, name, input string, o options) Future[Out] {
	policy := *o.retry
	return Go(ctx, func(ctx *OrchestrationContext) (Out, error) {
		var zero Out
		var last error
		n := policy.attempts()
		for attempt := uint32(1); attempt <= n; attempt++ {
			call := scheduleActivity[Out](ctx, name, input, o)
			if policy.Timeout > 0 {
				timer := ctx.CreateTimer(policy.Timeout)
				if Race(ctx, call, timer) == 1 {
					return zero, ErrActivityTimeout
				}
			}
			out, err := call.Get(ctx)
			if err == nil {
				return out, nil
			}
			var taskErr *TaskError
			if !errors.As(err, &taskErr) {
				return zero, err
			}
			last = err
			if attempt < n {
				ctx.Logger().Warn(fmt.Sprintf("Activity '%s' attempt %d/%d failed: %s. Retrying...", name, attempt, n, err))
				if d := policy.Delay(attempt); d > 0 {
					if err := ctx.Sleep(d); err != nil {
						return zero, err
					}
				}
			}
		}
		return zero, last
	})
}
