// Package lockstest is the conformance suite for implementations of
// [locks.Locker]. [Run] runs every check as a parallel named subtest:
//
//	func TestConformance(t *testing.T) {
//		lockstest.Run(t, lockstest.Factory{
//			NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
//				store := locks.NewMemoryStore()
//				return newMemory(t, store, clock), newMemory(t, store, clock)
//			},
//		})
//	}
//
// Most checks run on a [FakeClock], so leases end exactly when a check
// moves the time on, and a check knows that an Acquire is blocked by the
// timers it set; none waits for real time to pass except the contention
// check, which runs on the system clock with leases far longer than it
// needs. ContentionLong runs the contention check for ten seconds; it is
// left out with go test -short.
package lockstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
)

// Factory makes the lockers under test.
type Factory struct {
	// NewPair returns two lockers that share their locks, as two
	// processes of one deployment do, both on clock. Each call must
	// return lockers isolated from those of every other call (a fresh
	// store, a fresh table), and the release notices of each must reach
	// the blocked Acquire calls of the other (for [locks.Dynamo], give
	// both [locks.DynamoOptions.Signals]). The suite closes them when the
	// test ends. Required.
	NewPair func(t *testing.T, clock locks.Clock) (a, b locks.Locker)

	// ListLag is how far behind writes [locks.Locker.List] may be; the
	// checks of List retry for that long. Default 0: List is read once.
	ListLag time.Duration

	// Rounds is how many times each of the 16 goroutines of the
	// contention check acquires the lock. Default 3.
	Rounds int
}

// stepTimeout bounds every wait of a check for something the lockers
// should do; only a stalled or broken locker reaches it.
const stepTimeout = 30 * time.Second

// testCase is one named check.
type testCase struct {
	name string
	run  func(t *testing.T, e *env)
	// realClock runs the check on the system clock instead of a
	// FakeClock.
	realClock bool
}

// Run runs the conformance checks against the lockers f makes, each as a
// parallel subtest of t.
func Run(t *testing.T, f Factory) {
	if f.NewPair == nil {
		t.Fatal("lockstest: Factory.NewPair is required")
	}
	if f.Rounds == 0 {
		f.Rounds = 3
	}
	cases := [][]testCase{semanticsTests(), blockingTests(), inputTests(), contentionTests()}
	for _, group := range cases {
		for _, tc := range group {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.run(t, newEnv(t, f, tc.realClock))
			})
		}
	}
}

// longContention reports whether ContentionLong runs.
func longContention() bool { return !testing.Short() }

// env is one check's lockers and clock.
type env struct {
	f     Factory
	ctx   context.Context
	clock locks.Clock
	fake  *FakeClock // nil on the system clock
	a, b  locks.Locker
}

func newEnv(t *testing.T, f Factory, realClock bool) *env {
	e := &env{f: f, ctx: t.Context()}
	if realClock {
		e.clock = locks.SystemClock{}
	} else {
		e.fake = NewFakeClock(time.Now().Truncate(time.Millisecond))
		e.clock = e.fake
	}
	e.a, e.b = f.NewPair(t, e.clock)
	t.Cleanup(func() {
		e.a.Close()
		e.b.Close()
	})
	return e
}

// mustAcquire acquires key on l or fails the test.
func (e *env) mustAcquire(t *testing.T, l locks.Locker, key string, ttl time.Duration, optFns ...func(*locks.CallOptions)) locks.Lease {
	t.Helper()
	lease, ok, err := l.Acquire(e.ctx, key, ttl, optFns...)
	if err != nil || !ok {
		t.Fatalf("Acquire(%q) = %v, %v; want acquired", key, ok, err)
	}
	if lease.Key != key || lease.Fence <= 0 {
		t.Fatalf("Acquire(%q) lease = %+v; want the key and a positive fence", key, lease)
	}
	return lease
}

// mustNotAcquire fails the test unless Acquire of key on l returns false
// without an error.
func (e *env) mustNotAcquire(t *testing.T, l locks.Locker, key string, ttl time.Duration, optFns ...func(*locks.CallOptions)) {
	t.Helper()
	lease, ok, err := l.Acquire(e.ctx, key, ttl, optFns...)
	if err != nil || ok {
		t.Fatalf("Acquire(%q) = %+v, %v, %v; want not acquired", key, lease, ok, err)
	}
	if lease != (locks.Lease{}) {
		t.Fatalf("Acquire(%q) not acquired returned lease %+v; want the zero Lease", key, lease)
	}
}

// expectBool fails the test unless a call returned want and no error.
func expectBool(t *testing.T, what string, got bool, err error, want bool) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s = %v, %v; want %v, nil", what, got, err, want)
	}
}

// expectList checks that List on l returns want, retrying for the
// factory's ListLag.
func (e *env) expectList(t *testing.T, l locks.Locker, want []locks.Holder) {
	t.Helper()
	deadline := time.Now().Add(e.f.ListLag)
	for {
		got, err := l.List(e.ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if equalHolders(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("List = %+v; want %+v", got, want)
		}
		pause(e.ctx, 50*time.Millisecond)
	}
}

func equalHolders(a, b []locks.Holder) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Owner != b[i].Owner || !a[i].Until.Equal(b[i].Until) {
			return false
		}
	}
	return true
}

// pause waits for d or until ctx ends, between two reads of an eventually
// consistent listing.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// result is what a background Acquire returned.
type result struct {
	lease locks.Lease
	ok    bool
	err   error
}

// acquireAsync runs Acquire in a goroutine and returns its result channel.
func acquireAsync(ctx context.Context, l locks.Locker, key string, ttl time.Duration, optFns ...func(*locks.CallOptions)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		lease, ok, err := l.Acquire(ctx, key, ttl, optFns...)
		ch <- result{lease, ok, err}
	}()
	return ch
}

// awaitBlocked waits until n Acquire calls are blocked on the fake clock
// (each holds two timers). An Acquire that returns on ch first, without
// blocking, fails the test at once; ch may be nil.
func (e *env) awaitBlocked(t *testing.T, n int, ch <-chan result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, stepTimeout)
	defer cancel()
	blocked := make(chan error, 1)
	go func() { blocked <- e.fake.AwaitPending(ctx, 2*n) }()
	select {
	case err := <-blocked:
		if err != nil {
			t.Fatalf("%d blocked Acquire calls: %v (pending timers: %d)", n, err, e.fake.Pending())
		}
	case r := <-ch:
		t.Fatalf("Acquire returned %+v, %v, %v instead of blocking", r.lease, r.ok, r.err)
	}
}

// awaitResult waits for a background Acquire to return.
func awaitResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	timer := time.NewTimer(stepTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-timer.C:
		t.Fatalf("Acquire did not return within %v", stepTimeout)
		return result{}
	}
}

// isInvalid reports whether err is the contract's invalid-input error.
func isInvalid(err error) bool { return errors.Is(err, locks.ErrInvalidInput) }
