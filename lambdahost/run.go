package lambdahost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// Why a run stopped.
const (
	stoppedIdle     = "idle"
	stoppedDeadline = "deadline"
	stoppedCtx      = "context done"
)

// budget is what an invocation may spend: its runtime fetches until
// stopAt (zero: no deadline), and the host finishes by finishBy.
type budget struct {
	stopAt, finishBy time.Time
}

// budgetOf derives an invocation's budget from ctx's deadline, or fails
// when the deadline leaves no time to fetch.
func (h *Host) budgetOf(ctx context.Context) (budget, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return budget{}, nil
	}
	b := budget{stopAt: deadline.Add(-h.o.StopBefore), finishBy: deadline.Add(-h.o.FinishTimeout / 10)}
	if left := time.Until(b.stopAt); left <= 0 {
		return b, fmt.Errorf("%w: the deadline is %v away, not more than StopBefore (%v)",
			ErrDeadlineTooClose, time.Until(deadline).Round(time.Millisecond), h.o.StopBefore)
	}
	return b, nil
}

// finishContext is the context of what the host does after the runtime
// stopped: not cancelled with the invocation's, bounded by FinishTimeout
// and by the budget.
func (h *Host) finishContext(ctx context.Context, b budget) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.o.FinishTimeout)
	if b.finishBy.IsZero() {
		return fctx, cancel
	}
	dctx, dcancel := context.WithDeadline(fctx, b.finishBy)
	return dctx, func() { dcancel(); cancel() }
}

// run runs a new runtime for one invocation: it starts it, waits until it
// is idle for idle ([durable.Runtime.WaitIdle]), until b.stopAt or until ctx ends, then shuts it
// down within the runtime's ShutdownTimeout and releases the instance
// locks the provider kept for it. It returns why it stopped,
// and an error when the runtime could not start. A shutdown that does not
// end in time (an activity that ignores its context) is logged: what it
// leaves running is frozen with the environment, and its leases end.
func (h *Host) run(ctx context.Context, idle time.Duration, b budget) (string, error) {
	rt, err := durable.NewRuntime(h.p, h.reg, h.o.runtimeOptions)
	if err != nil {
		return "", fmt.Errorf("lambdahost: runtime: %w", err)
	}
	if err := rt.Start(ctx); err != nil {
		return "", fmt.Errorf("lambdahost: %w", err)
	}
	reason := h.waitIdle(ctx, rt, idle, b.stopAt)
	if reason == stoppedDeadline {
		h.stats.deadline.Add(1)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.o.shutdownTimeout())
	defer cancel()
	if err := rt.Shutdown(sctx); err != nil {
		h.o.Logger.Warn("lambdahost: the runtime did not stop in time; what still runs is frozen with the environment and loses its leases", "error", err)
	}
	// A lock kept for this environment would hold its instance while the
	// environment is frozen.
	h.p.ReleaseKeptLocks(sctx)
	return reason, nil
}

// waitIdle returns once rt is idle ([durable.Runtime.WaitIdle]: quiet for
// idle while no fetch of the provider is finding work), at stopAt, or when ctx
// ends, and says which.
func (h *Host) waitIdle(ctx context.Context, rt *durable.Runtime, idle time.Duration, stopAt time.Time) string {
	if !stopAt.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, stopAt, errStopAt)
		defer cancel()
	}
	switch err := rt.WaitIdle(ctx, idle); {
	case err == nil:
		return stoppedIdle
	case errors.Is(err, errStopAt):
		return stoppedDeadline
	default:
		return stoppedCtx
	}
}

// errStopAt ends a run's wait at its budget's stopAt.
var errStopAt = errors.New("lambdahost: StopBefore the deadline")
