package lockstest

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
)

func semanticsTests() []testCase {
	return []testCase{
		{name: "Semantics/AcquireRelease", run: acquireRelease},
		{name: "Semantics/NotReentrant", run: notReentrant},
		{name: "Semantics/LeaseEndsAtTTL", run: leaseEndsAtTTL},
		{name: "Semantics/ExpiredHolderCannotReleaseOrExtend", run: expiredHolder},
		{name: "Semantics/Extend", run: extend},
		{name: "Semantics/Reset", run: reset},
		{name: "Semantics/OwnerOverride", run: ownerOverride},
		{name: "Semantics/FencingIncreases", run: fencingIncreases},
		{name: "Semantics/KeysAreIndependent", run: keysIndependent},
		{name: "Semantics/List", run: list},
	}
}

// acquireRelease: a free lock is acquired once; only its holder releases
// it, once; then it is free again.
func acquireRelease(t *testing.T, e *env) {
	const key = "job:report"
	now := e.clock.Now()
	lease := e.mustAcquire(t, e.a, key, 10*time.Second)
	if lease.Owner != e.a.Owner() || !lease.Until.Equal(now.Add(10*time.Second)) {
		t.Fatalf("lease = %+v; want owner %q until %v", lease, e.a.Owner(), now.Add(10*time.Second))
	}
	e.mustNotAcquire(t, e.b, key, time.Second)
	ok, err := e.b.Release(e.ctx, key)
	expectBool(t, "Release by another owner", ok, err, false)
	ok, err = e.a.Release(e.ctx, key)
	expectBool(t, "Release by the holder", ok, err, true)
	ok, err = e.a.Release(e.ctx, key)
	expectBool(t, "second Release", ok, err, false)
	ok, err = e.a.Release(e.ctx, "never-held")
	expectBool(t, "Release of a lock never held", ok, err, false)
	next := e.mustAcquire(t, e.b, key, time.Second)
	if next.Fence <= lease.Fence || next.Owner != e.b.Owner() {
		t.Fatalf("next lease = %+v; want owner %q and a fence above %d", next, e.b.Owner(), lease.Fence)
	}
}

// notReentrant: an owner holding a lock does not acquire it again, and its
// hold is unchanged.
func notReentrant(t *testing.T, e *env) {
	const key = "k"
	lease := e.mustAcquire(t, e.a, key, 10*time.Second)
	e.mustNotAcquire(t, e.a, key, time.Minute)
	e.mustNotAcquire(t, e.b, key, time.Minute, locks.WithOwner(e.a.Owner()))
	e.fake.Advance(10 * time.Second)
	// The failed attempts did not extend the lease to a minute.
	again := e.mustAcquire(t, e.b, key, time.Second)
	if again.Fence <= lease.Fence {
		t.Fatalf("fence after expiry %d; want above %d", again.Fence, lease.Fence)
	}
}

// leaseEndsAtTTL: the lease holds until ttl has passed, to the
// millisecond, and not after.
func leaseEndsAtTTL(t *testing.T, e *env) {
	const key = "k"
	e.mustAcquire(t, e.a, key, 10*time.Second)
	e.fake.Advance(10*time.Second - time.Millisecond)
	e.mustNotAcquire(t, e.b, key, time.Second)
	e.fake.Advance(time.Millisecond)
	e.mustAcquire(t, e.b, key, time.Second)
}

// expiredHolder: once the lease ended, the former holder can neither
// release nor extend, and the lock is free for others.
func expiredHolder(t *testing.T, e *env) {
	const key = "k"
	e.mustAcquire(t, e.a, key, 5*time.Second)
	e.fake.Advance(5 * time.Second)
	ok, err := e.a.Release(e.ctx, key)
	expectBool(t, "Release after the lease ended", ok, err, false)
	ok, err = e.a.Extend(e.ctx, key, time.Minute)
	expectBool(t, "Extend after the lease ended", ok, err, false)
	ok, err = e.b.Reset(e.ctx, key)
	expectBool(t, "Reset after the lease ended", ok, err, false)
	lease := e.mustAcquire(t, e.b, key, time.Second)
	if lease.Owner != e.b.Owner() {
		t.Fatalf("lease owner %q; want %q", lease.Owner, e.b.Owner())
	}
	ok, err = e.a.Release(e.ctx, key)
	expectBool(t, "Release by the former holder", ok, err, false)
}

// extend: only the holder extends, the new lease counts from now and may
// be shorter than the old one.
func extend(t *testing.T, e *env) {
	const key = "k"
	lease := e.mustAcquire(t, e.a, key, 10*time.Second)
	ok, err := e.b.Extend(e.ctx, key, time.Minute)
	expectBool(t, "Extend by another owner", ok, err, false)
	ok, err = e.a.Extend(e.ctx, "never-held", time.Minute)
	expectBool(t, "Extend of a lock never held", ok, err, false)
	e.fake.Advance(5 * time.Second)
	ok, err = e.a.Extend(e.ctx, key, 20*time.Second)
	expectBool(t, "Extend by the holder", ok, err, true)
	e.fake.Advance(20*time.Second - time.Millisecond)
	e.mustNotAcquire(t, e.b, key, time.Second)
	e.expectList(t, e.b, []locks.Holder{{Key: key, Owner: e.a.Owner(), Until: e.clock.Now().Add(time.Millisecond)}})
	// Shorten it.
	ok, err = e.a.Extend(e.ctx, key, time.Millisecond)
	expectBool(t, "Extend to a millisecond", ok, err, true)
	e.fake.Advance(time.Millisecond)
	next := e.mustAcquire(t, e.b, key, time.Second)
	if next.Fence <= lease.Fence {
		t.Fatalf("fence of the next holder %d; want above %d", next.Fence, lease.Fence)
	}
}

// reset: frees a live holder whoever it is, reports whether there was
// one, and keeps tokens growing.
func reset(t *testing.T, e *env) {
	const key = "k"
	ok, err := e.b.Reset(e.ctx, key)
	expectBool(t, "Reset of a lock never held", ok, err, false)
	first := e.mustAcquire(t, e.a, key, time.Hour)
	ok, err = e.b.Reset(e.ctx, key)
	expectBool(t, "Reset of a held lock", ok, err, true)
	ok, err = e.b.Reset(e.ctx, key)
	expectBool(t, "second Reset", ok, err, false)
	ok, err = e.a.Release(e.ctx, key)
	expectBool(t, "Release after a Reset", ok, err, false)
	ok, err = e.a.Extend(e.ctx, key, time.Hour)
	expectBool(t, "Extend after a Reset", ok, err, false)
	second := e.mustAcquire(t, e.b, key, time.Hour)
	if second.Fence <= first.Fence {
		t.Fatalf("fence after Reset %d; want above %d", second.Fence, first.Fence)
	}
	e.expectList(t, e.a, []locks.Holder{{Key: key, Owner: e.b.Owner(), Until: second.Until}})
}

// ownerOverride: a call may act for any owner, so one locker releases or
// extends what another acquired for that owner.
func ownerOverride(t *testing.T, e *env) {
	const key, owner = "k", "worker-7 #ü\x00"
	lease := e.mustAcquire(t, e.a, key, 10*time.Second, locks.WithOwner(owner))
	if lease.Owner != owner {
		t.Fatalf("lease owner %q; want %q", lease.Owner, owner)
	}
	ok, err := e.a.Release(e.ctx, key)
	expectBool(t, "Release with the locker's own owner", ok, err, false)
	e.mustNotAcquire(t, e.b, key, time.Second, locks.WithOwner(owner))
	ok, err = e.b.Extend(e.ctx, key, time.Minute, locks.WithOwner(owner))
	expectBool(t, "Extend for the owner by the other locker", ok, err, true)
	e.expectList(t, e.a, []locks.Holder{{Key: key, Owner: owner, Until: e.clock.Now().Add(time.Minute)}})
	ok, err = e.b.Release(e.ctx, key, locks.WithOwner(owner))
	expectBool(t, "Release for the owner by the other locker", ok, err, true)
	e.mustAcquire(t, e.a, key, time.Second)
}

// fencingIncreases: tokens grow strictly with each new holder, across
// lockers, releases, lease expiry and resets.
func fencingIncreases(t *testing.T, e *env) {
	const key = "k"
	var last int64
	next := func(l locks.Locker, how string) {
		t.Helper()
		lease := e.mustAcquire(t, l, key, 10*time.Second)
		if lease.Fence <= last {
			t.Fatalf("fence %d after %s; want above %d", lease.Fence, how, last)
		}
		last = lease.Fence
	}
	next(e.a, "the first acquire")
	holder, other := e.a, e.b
	for range 3 {
		ok, err := holder.Release(e.ctx, key)
		expectBool(t, "Release", ok, err, true)
		next(other, "a release")
		e.fake.Advance(10 * time.Second)
		next(holder, "the lease ended")
		ok, err = other.Reset(e.ctx, key)
		expectBool(t, "Reset", ok, err, true)
		next(other, "a reset")
		holder, other = other, holder
	}
}

// keysIndependent: locks of different keys, including keys that share
// prefixes or hold separators, do not affect each other.
func keysIndependent(t *testing.T, e *env) {
	keys := []string{"a", "a#b", "a#", "#LOCK", "K#a", "ü\x00", "a b"}
	for _, key := range keys {
		e.mustAcquire(t, e.a, key, time.Minute)
	}
	for _, key := range keys {
		e.mustNotAcquire(t, e.b, key, time.Minute)
	}
	ok, err := e.a.Release(e.ctx, "a#b")
	expectBool(t, "Release a#b", ok, err, true)
	e.mustAcquire(t, e.b, "a#b", time.Minute)
	e.mustNotAcquire(t, e.b, "a", time.Minute)
}

// list: the live holders, ordered by key, from either locker; ended,
// released and reset holds are not listed.
func list(t *testing.T, e *env) {
	e.expectList(t, e.a, nil)
	now := e.clock.Now()
	e.mustAcquire(t, e.a, "b", time.Minute)
	e.mustAcquire(t, e.b, "a", 2*time.Minute, locks.WithOwner("job-runner"))
	e.mustAcquire(t, e.b, "c", 10*time.Second)
	e.mustAcquire(t, e.a, "d", time.Minute)
	e.mustAcquire(t, e.a, "e", time.Minute)
	want := []locks.Holder{
		{Key: "a", Owner: "job-runner", Until: now.Add(2 * time.Minute)},
		{Key: "b", Owner: e.a.Owner(), Until: now.Add(time.Minute)},
		{Key: "c", Owner: e.b.Owner(), Until: now.Add(10 * time.Second)},
		{Key: "d", Owner: e.a.Owner(), Until: now.Add(time.Minute)},
		{Key: "e", Owner: e.a.Owner(), Until: now.Add(time.Minute)},
	}
	e.expectList(t, e.a, want)
	e.expectList(t, e.b, want)
	e.fake.Advance(10 * time.Second)
	ok, err := e.a.Release(e.ctx, "d")
	expectBool(t, "Release d", ok, err, true)
	ok, err = e.b.Reset(e.ctx, "e")
	expectBool(t, "Reset e", ok, err, true)
	e.expectList(t, e.b, want[:2])
}
