package lockstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
)

func blockingTests() []testCase {
	return []testCase{
		{name: "Blocking/FreeLockDoesNotWait", run: freeLockDoesNotWait},
		{name: "Blocking/WakesOnRelease", run: wakesOnRelease},
		{name: "Blocking/WakesOnReleaseInSameLocker", run: wakesOnReleaseInSameLocker},
		{name: "Blocking/WakesOnReset", run: wakesOnReset},
		{name: "Blocking/WakesWhenLeaseEnds", run: wakesWhenLeaseEnds},
		{name: "Blocking/FollowsExtend", run: followsExtend},
		{name: "Blocking/ManyWaitersTakeTurns", run: manyWaitersTakeTurns},
		{name: "Blocking/TimeoutHonoured", run: timeoutHonoured},
		{name: "Blocking/ContextCancelled", run: contextCancelled},
		{name: "Blocking/CloseWakesWaiters", run: closeWakesWaiters},
	}
}

// freeLockDoesNotWait: a wait only matters when the lock is held.
func freeLockDoesNotWait(t *testing.T, e *env) {
	e.mustAcquire(t, e.b, "k", time.Second, locks.WithWait(time.Hour))
	if n := e.fake.Pending(); n != 0 {
		t.Fatalf("%d timers pending after an Acquire that did not wait; want 0", n)
	}
}

// wakesOnRelease: a blocked Acquire takes the lock when the holder, in
// another locker, releases it. The clock does not move, so only the
// release notice can wake it.
func wakesOnRelease(t *testing.T, e *env) {
	held := e.mustAcquire(t, e.a, "k", time.Hour)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	ok, err := e.a.Release(e.ctx, "k")
	expectBool(t, "Release", ok, err, true)
	r := awaitResult(t, ch)
	if r.err != nil || !r.ok || r.lease.Fence <= held.Fence || r.lease.Owner != e.b.Owner() {
		t.Fatalf("blocked Acquire = %+v, %v, %v; want acquired by %q with a fence above %d", r.lease, r.ok, r.err, e.b.Owner(), held.Fence)
	}
}

// wakesOnReleaseInSameLocker: the same, with holder and waiter in one
// locker (two owners).
func wakesOnReleaseInSameLocker(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", time.Hour, locks.WithOwner("first"))
	ch := acquireAsync(e.ctx, e.a, "k", time.Minute, locks.WithWait(time.Hour), locks.WithOwner("second"))
	e.awaitBlocked(t, 1, ch)
	ok, err := e.a.Release(e.ctx, "k", locks.WithOwner("first"))
	expectBool(t, "Release", ok, err, true)
	r := awaitResult(t, ch)
	if r.err != nil || !r.ok || r.lease.Owner != "second" {
		t.Fatalf("blocked Acquire = %+v, %v, %v; want acquired by second", r.lease, r.ok, r.err)
	}
}

// wakesOnReset: a Reset wakes the waiters as a release does.
func wakesOnReset(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", time.Hour)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	ok, err := e.a.Reset(e.ctx, "k")
	expectBool(t, "Reset", ok, err, true)
	if r := awaitResult(t, ch); r.err != nil || !r.ok {
		t.Fatalf("blocked Acquire = %v, %v; want acquired", r.ok, r.err)
	}
}

// wakesWhenLeaseEnds: without a release, the waiter takes the lock when
// the holder's lease ends.
func wakesWhenLeaseEnds(t *testing.T, e *env) {
	held := e.mustAcquire(t, e.a, "k", 10*time.Second)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	e.fake.Advance(10 * time.Second)
	r := awaitResult(t, ch)
	if r.err != nil || !r.ok || r.lease.Fence <= held.Fence {
		t.Fatalf("blocked Acquire = %+v, %v, %v; want acquired with a fence above %d", r.lease, r.ok, r.err, held.Fence)
	}
	ok, err := e.a.Release(e.ctx, "k")
	expectBool(t, "Release by the holder whose lease ended", ok, err, false)
}

// followsExtend: a waiter that wakes at the end of a lease that was
// extended meanwhile waits again for the new end.
func followsExtend(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", 10*time.Second)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	ok, err := e.a.Extend(e.ctx, "k", 30*time.Second)
	expectBool(t, "Extend", ok, err, true)
	e.fake.Advance(10 * time.Second)
	// The waiter tries, fails, and waits for the new end (two timers
	// again: the wait and the new lease end).
	e.awaitBlocked(t, 1, ch)
	select {
	case r := <-ch:
		t.Fatalf("Acquire returned %+v, %v, %v while the extended lease held", r.lease, r.ok, r.err)
	default:
	}
	e.fake.Advance(20 * time.Second)
	if r := awaitResult(t, ch); r.err != nil || !r.ok {
		t.Fatalf("blocked Acquire = %v, %v; want acquired", r.ok, r.err)
	}
}

// manyWaitersTakeTurns: each release lets exactly one of the waiters in,
// with growing fences, until all had their turn.
func manyWaitersTakeTurns(t *testing.T, e *env) {
	const waiters = 4
	held := e.mustAcquire(t, e.a, "k", time.Hour)
	results := make(chan result, waiters)
	for i := range waiters {
		ch := acquireAsync(e.ctx, e.b, "k", time.Hour, locks.WithWait(time.Hour), locks.WithOwner(string(rune('p'+i))))
		go func() { results <- <-ch }()
	}
	e.awaitBlocked(t, waiters, results)
	last, releaser, releaserOwner := held.Fence, e.a, e.a.Owner()
	for turn := range waiters {
		ok, err := releaser.Release(e.ctx, "k", locks.WithOwner(releaserOwner))
		expectBool(t, "Release", ok, err, true)
		var r result
		select {
		case r = <-results:
		case <-time.After(stepTimeout):
			t.Fatalf("turn %d: no waiter acquired within %v", turn, stepTimeout)
		}
		if r.err != nil || !r.ok || r.lease.Fence <= last {
			t.Fatalf("turn %d: Acquire = %+v, %v, %v; want acquired with a fence above %d", turn, r.lease, r.ok, r.err, last)
		}
		last, releaser, releaserOwner = r.lease.Fence, e.b, r.lease.Owner
		// The others are blocked again: one lock, one holder.
		e.awaitBlocked(t, waiters-turn-1, results)
		select {
		case r := <-results:
			t.Fatalf("turn %d: a second waiter acquired %+v, %v, %v while the lock was held", turn, r.lease, r.ok, r.err)
		default:
		}
	}
}

// timeoutHonoured: a wait that runs out returns not acquired, no error,
// and leaves the holder alone.
func timeoutHonoured(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", time.Hour)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(5*time.Second))
	e.awaitBlocked(t, 1, ch)
	e.fake.Advance(5*time.Second - time.Millisecond)
	select {
	case r := <-ch:
		t.Fatalf("Acquire returned %+v, %v, %v before its wait ran out", r.lease, r.ok, r.err)
	default:
	}
	e.fake.Advance(time.Millisecond)
	r := awaitResult(t, ch)
	if r.err != nil || r.ok || r.lease != (locks.Lease{}) {
		t.Fatalf("Acquire after its wait = %+v, %v, %v; want the zero Lease, false, nil", r.lease, r.ok, r.err)
	}
	if n := e.fake.Pending(); n != 0 {
		t.Fatalf("%d timers left after the wait ended; want 0", n)
	}
	e.mustNotAcquire(t, e.b, "k", time.Minute)
}

// contextCancelled: a blocked Acquire returns ctx's error when ctx ends.
func contextCancelled(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", time.Hour)
	ctx, cancel := context.WithCancel(e.ctx)
	ch := acquireAsync(ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	cancel()
	r := awaitResult(t, ch)
	if !errors.Is(r.err, context.Canceled) || r.ok {
		t.Fatalf("cancelled Acquire = %v, %v; want false and context.Canceled", r.ok, r.err)
	}
	e.mustNotAcquire(t, e.b, "k", time.Minute)
}

// closeWakesWaiters: Close ends a blocked Acquire with ErrClosed, and
// later calls fail the same way.
func closeWakesWaiters(t *testing.T, e *env) {
	e.mustAcquire(t, e.a, "k", time.Hour)
	ch := acquireAsync(e.ctx, e.b, "k", time.Minute, locks.WithWait(time.Hour))
	e.awaitBlocked(t, 1, ch)
	if err := e.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r := awaitResult(t, ch)
	if !errors.Is(r.err, locks.ErrClosed) || r.ok {
		t.Fatalf("Acquire woken by Close = %v, %v; want false and ErrClosed", r.ok, r.err)
	}
	if _, _, err := e.b.Acquire(e.ctx, "other", time.Second); !errors.Is(err, locks.ErrClosed) {
		t.Fatalf("Acquire after Close: %v; want ErrClosed", err)
	}
	if _, err := e.b.Release(e.ctx, "k"); !errors.Is(err, locks.ErrClosed) {
		t.Fatalf("Release after Close: %v; want ErrClosed", err)
	}
	if _, err := e.b.Extend(e.ctx, "k", time.Second); !errors.Is(err, locks.ErrClosed) {
		t.Fatalf("Extend after Close: %v; want ErrClosed", err)
	}
	if _, err := e.b.Reset(e.ctx, "k"); !errors.Is(err, locks.ErrClosed) {
		t.Fatalf("Reset after Close: %v; want ErrClosed", err)
	}
	if _, err := e.b.List(e.ctx); !errors.Is(err, locks.ErrClosed) {
		t.Fatalf("List after Close: %v; want ErrClosed", err)
	}
	if err := e.b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ok, err := e.a.Release(e.ctx, "k")
	expectBool(t, "Release by the other locker", ok, err, true)
}
