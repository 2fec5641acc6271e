package locks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// waitRegistry holds the blocked Acquire calls of one or more lockers, per
// key, and hands them release notices. Its zero value is ready to use.
type waitRegistry struct {
	mu    sync.Mutex
	keys  map[string]map[*waiter]struct{}
	count int

	// busy and idle, when set, are called with mu held when the number
	// of waiters goes from 0 to 1 and from 1 to 0.
	busy, idle func()
}

// waiter is one blocked Acquire call.
type waiter struct {
	wake chan struct{} // capacity 1: notices coalesce
	// notice is the largest fence a release notice named since the
	// waiter was added; 0 for none (fences start at 1).
	notice atomic.Int64
}

// add registers a waiter for key.
func (r *waitRegistry) add(key string) *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = make(map[string]map[*waiter]struct{})
	}
	set := r.keys[key]
	if set == nil {
		set = make(map[*waiter]struct{})
		r.keys[key] = set
	}
	set[w] = struct{}{}
	r.count++
	if r.count == 1 && r.busy != nil {
		r.busy()
	}
	return w
}

// remove unregisters w, a waiter for key.
func (r *waitRegistry) remove(key string, w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.keys[key]
	if _, ok := set[w]; !ok {
		return
	}
	delete(set, w)
	if len(set) == 0 {
		delete(r.keys, key)
	}
	r.count--
	if r.count == 0 && r.idle != nil {
		r.idle()
	}
}

// notify hands the waiters of key a release notice of the holder whose
// fence was fence, and returns how many waiters it reached.
func (r *waitRegistry) notify(key string, fence int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.keys[key]
	for w := range set {
		for {
			old := w.notice.Load()
			if fence <= old || w.notice.CompareAndSwap(old, fence) {
				break
			}
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return len(set)
}

// attempt is the outcome of one try at acquiring a lock.
type attempt struct {
	lease    Lease
	acquired bool
	// holderFence and holderUntil describe the holder that kept the
	// lock when acquired is false: its fence (0 when unknown) and the end
	// of its lease (zero when unknown).
	holderFence int64
	holderUntil time.Time
}

// blocker runs the blocking Acquire calls of one locker.
type blocker struct {
	clock   Clock
	waiters *waitRegistry
	done    <-chan struct{} // closed by the locker's Close
}

// acquire tries once, through try, when c has no wait. Otherwise it
// registers a waiter for c.key first, so that no release notice sent after
// a failed try is missed, and tries again each time a notice for the
// holder it saw (or a later one) arrives or that holder's lease ends,
// until it acquires, c.wait passes, ctx ends or the locker closes. It
// makes no request while it waits.
func (b blocker) acquire(ctx context.Context, c call, try func(context.Context) (attempt, error)) (Lease, bool, error) {
	if c.wait == 0 {
		a, err := try(ctx)
		return a.lease, a.acquired, err
	}
	w := b.waiters.add(c.key)
	defer b.waiters.remove(c.key, w)
	timedOut := make(chan struct{})
	deadline := b.clock.AfterFunc(c.wait, func() { close(timedOut) })
	defer deadline.Stop()
	for {
		a, err := try(ctx)
		if err != nil || a.acquired {
			return a.lease, a.acquired, err
		}
		var leaseEnded chan struct{}
		var leaseTimer Timer
		if !a.holderUntil.IsZero() {
			leaseEnded = make(chan struct{})
			leaseTimer = b.clock.AfterFunc(a.holderUntil.Sub(b.clock.Now()), func() { close(leaseEnded) })
		}
		err = b.await(ctx, c, w, a.holderFence, leaseEnded, timedOut)
		if leaseTimer != nil {
			leaseTimer.Stop()
		}
		switch {
		case errors.Is(err, errTimedOut):
			return Lease{}, false, nil
		case err != nil:
			return Lease{}, false, err
		}
	}
}

// errTimedOut tells acquire that the wait ran out.
var errTimedOut = errors.New("wait ran out")

// await blocks until a notice for a holder with a fence of at least
// holderFence reaches w, leaseEnded or timedOut is closed, ctx ends or the
// locker closes. It returns nil when Acquire should try again.
func (b blocker) await(ctx context.Context, c call, w *waiter, holderFence int64, leaseEnded, timedOut <-chan struct{}) error {
	for {
		select {
		case <-w.wake:
			if w.notice.Load() >= holderFence {
				return nil
			}
			// A notice of an earlier holder, received late: the holder
			// that kept us out still holds the lock.
		case <-leaseEnded:
			return nil
		case <-timedOut:
			return errTimedOut
		case <-ctx.Done():
			return provider.Permanent(c.op, ctx.Err(), "gave up waiting for %q: %v", c.key, ctx.Err())
		case <-b.done:
			return closedError(c.op)
		}
	}
}
