package durable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// workTracker records when the runtime's slots last had work: the items
// in flight and the time the last one was fetched or finished, for
// RunUntilIdle. Outside RunUntilIdle nobody waits on it, and an item
// costs a lock and a clock read.
type workTracker struct {
	mu       sync.Mutex
	inFlight int
	last     time.Time
	changed  chan struct{} // made by quiet, closed at the next change; nil while nobody waits
}

func newWorkTracker() *workTracker {
	return &workTracker{last: time.Now()}
}

// begin records an item fetched; end, an item processed; restart counts
// idleness from now.
func (w *workTracker) begin()   { w.move(1) }
func (w *workTracker) end()     { w.move(-1) }
func (w *workTracker) restart() { w.move(0) }

func (w *workTracker) move(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight += delta
	w.last = time.Now()
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// quiet returns how long no slot has had work (0 while an item is in
// flight: busy), and a channel closed at the next change.
func (w *workTracker) quiet() (d time.Duration, busy bool, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	if w.inFlight > 0 {
		return 0, true, w.changed
	}
	return time.Since(w.last), false, w.changed
}

// RunUntilIdle starts the runtime, processes work until it is idle as
// [Runtime.WaitIdle] says, then shuts down as [Runtime.Shutdown] does,
// within ShutdownTimeout. It is the runtime of a
// process that runs now and then, such as an AWS Lambda function invoked
// on a schedule: the environment may be frozen between invocations, so
// nothing of the runtime must run between them, and what it leaves (timers
// not due yet, work that arrives after it went idle) waits for the next
// invocation, or for a runtime of another process.
//
// When ctx has a deadline (a Lambda invocation's context does), the
// runtime stops fetching ShutdownTimeout before it, so that the shutdown
// ends by the deadline: turns in flight commit, running activities are
// cancelled with cause [ErrShutdown] and abandoned without counting an
// attempt, and run again later. A deadline closer than ShutdownTimeout is
// refused with an error wrapping [provider.ErrInvalidInput], before
// anything starts. When ctx is cancelled, the runtime shuts down at once.
//
// A runtime runs once: make a new one for each invocation. Close the
// provider too before the invocation returns when it polls queues (the
// DynamoDB provider with SQS wake-up queues): a receive it has in flight
// outlives the runtime's fetches, and one frozen with the environment
// leaves its signals to the sweeps. RunUntilIdle returns nil when it
// stopped for idleness, the deadline or ctx, and the error of Start or
// Shutdown otherwise.
func (r *Runtime) RunUntilIdle(ctx context.Context, idle time.Duration) error {
	if idle <= 0 {
		return fmt.Errorf("%w: RunUntilIdle needs a positive idle time, not %v", provider.ErrInvalidInput, idle)
	}
	wctx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		stopAt := deadline.Add(-r.opts.ShutdownTimeout)
		if time.Until(stopAt) <= 0 {
			return fmt.Errorf("%w: RunUntilIdle: ctx's deadline is %v away, not more than ShutdownTimeout (%v)",
				provider.ErrInvalidInput, time.Until(deadline).Round(time.Millisecond), r.opts.ShutdownTimeout)
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadlineCause(ctx, stopAt, errStopBefore)
		defer cancel()
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	r.work.restart()
	reason := "idle"
	if err := r.WaitIdle(wctx, idle); errors.Is(err, errStopBefore) {
		reason = "deadline"
	} else if err != nil {
		reason = "context done"
	}
	r.log.Info("runtime stopping", "reason", reason)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ShutdownTimeout)
	defer cancel()
	return r.Shutdown(sctx)
}

// errStopBefore ends RunUntilIdle's wait ShutdownTimeout before ctx's
// deadline.
var errStopBefore = errors.New("durable: the deadline less ShutdownTimeout")

// workFinder is a provider whose fetches report when they are finding
// work (the DynamoDB provider: holding signals, sweeping or trying an
// instance).
type workFinder interface {
	FindingWork() bool
}

// idleRecheck is how soon WaitIdle looks again at a runtime that is quiet
// while its provider's fetches are finding work.
const idleRecheck = 20 * time.Millisecond

// WaitIdle waits until the started runtime has been idle for idle and
// returns nil, or until ctx ends and returns [context.Cause] of ctx. Idle
// means that no slot has fetched or finished an item for idle, none is in
// flight, and no fetch is finding work, if the provider reports it (the
// DynamoDB provider's FindingWork): however slow the store, a fetch
// sweeping, or taking an instance it found, is work. Idleness is counted from
// [NewRuntime] until the first item. [Runtime.RunUntilIdle] waits with
// it; a host that decides itself when a run ends calls it between
// [Runtime.Start] and [Runtime.Shutdown].
func (r *Runtime) WaitIdle(ctx context.Context, idle time.Duration) error {
	for {
		quiet, busy, changed := r.work.quiet()
		wait := time.Duration(-1) // busy: until the next change
		if !busy {
			if wait = idle - quiet; wait <= 0 {
				if r.finder == nil || !r.finder.FindingWork() {
					return nil
				}
				wait = idleRecheck
			}
		}
		if err := waitChange(ctx, changed, wait); err != nil {
			return err
		}
	}
}

// waitChange waits until changed is closed, wait has passed (a negative
// wait: none) or ctx ends (its cause).
func waitChange(ctx context.Context, changed <-chan struct{}, wait time.Duration) error {
	var wake <-chan time.Time
	if wait >= 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		wake = timer.C
	}
	select {
	case <-wake:
	case <-changed:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}
