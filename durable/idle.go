package durable

import (
	"context"
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

// RunUntilIdle starts the runtime, processes work until no slot has
// fetched any for idle and none is in flight, then shuts down as
// [Runtime.Shutdown] does, within ShutdownTimeout. It is the runtime of a
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
	var stopBefore <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline) - r.opts.ShutdownTimeout
		if left <= 0 {
			return fmt.Errorf("%w: RunUntilIdle: ctx's deadline is %v away, not more than ShutdownTimeout (%v)",
				provider.ErrInvalidInput, time.Until(deadline).Round(time.Millisecond), r.opts.ShutdownTimeout)
		}
		t := time.NewTimer(left)
		defer t.Stop()
		stopBefore = t.C
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	r.work.restart()
	reason := r.waitIdle(ctx, idle, stopBefore)
	r.log.Info("runtime stopping", "reason", reason)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ShutdownTimeout)
	defer cancel()
	return r.Shutdown(sctx)
}

// waitIdle returns once the runtime has been idle for idle, stopBefore
// fires or ctx ends, and says which.
func (r *Runtime) waitIdle(ctx context.Context, idle time.Duration, stopBefore <-chan time.Time) string {
	for {
		quiet, busy, changed := r.work.quiet()
		var timer *time.Timer
		var wake <-chan time.Time
		if !busy {
			if quiet >= idle {
				return "idle"
			}
			timer = time.NewTimer(idle - quiet)
			wake = timer.C
		}
		reason := ""
		select {
		case <-wake:
		case <-changed:
		case <-stopBefore:
			reason = "deadline"
		case <-ctx.Done():
			reason = "context done"
		}
		if timer != nil {
			timer.Stop()
		}
		if reason != "" {
			return reason
		}
	}
}
