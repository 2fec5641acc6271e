package locks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/internal/clockskew/skewtest"
	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

// skewedClock reads a shared fake clock shifted by off: a host whose clock
// runs off ahead of the others (behind when off is negative). Timers run
// on the shared clock, since a duration is the same on every host.
type skewedClock struct {
	base *lockstest.FakeClock
	off  time.Duration
}

func (c skewedClock) Now() time.Time { return c.base.Now().Add(c.off) }

func (c skewedClock) AfterFunc(d time.Duration, f func()) locks.Timer {
	return c.base.AfterFunc(d, f)
}

// TestClockSkew: lockers whose clocks disagree by skew share one set of
// locks. A lease ends when the clock of the locker that looks says so:
// one ahead takes a lock up to skew before its holder's lease ends, with
// a larger fence, and the holder can then neither extend nor release it;
// one behind takes it only skew after, and a blocked Acquire there wakes
// skew late. This is what DynamoOptions.Clock documents; the fence is what
// keeps the guarded resource safe meanwhile.
func TestClockSkew(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		t.Parallel()
		store := locks.NewMemoryStore()
		testClockSkew(t, func(c locks.Clock) locks.Locker { return newMemory(t, store, c) })
	})
	t.Run("Dynamo", func(t *testing.T) {
		t.Parallel()
		env := newDynamoEnv(t, false)
		testClockSkew(t, func(c locks.Clock) locks.Locker { return env.locker(t, withClock(c)) })
	})
}

func testClockSkew(t *testing.T, newLocker func(locks.Clock) locks.Locker) {
	ctx := t.Context()
	const (
		key  = "skewed"
		ttl  = 10 * time.Second
		skew = 2 * time.Second
		ms   = time.Millisecond
	)
	base := lockstest.NewFakeClock(time.Now().Truncate(ms))
	honest := newLocker(base)
	ahead := newLocker(skewedClock{base, skew})
	behind := newLocker(skewedClock{base, -skew})

	acquire := func(l locks.Locker, want bool, what string) locks.Lease {
		t.Helper()
		lease, ok, err := l.Acquire(ctx, key, ttl)
		if err != nil || ok != want {
			t.Fatalf("%s: Acquire = %v, %v; want %v", what, ok, err, want)
		}
		return lease
	}

	first := acquire(honest, true, "free lock")
	base.Advance(ttl - skew - ms)
	acquire(ahead, false, "ahead, a millisecond before the lease ends by its clock")
	base.Advance(2 * ms)
	second := acquire(ahead, true, "ahead, a millisecond after the lease ends by its clock")
	if left := first.Until.Sub(base.Now()); left != skew-ms {
		t.Fatalf("taken with %v of the holder's lease left; want %v", left, skew-ms)
	}
	if second.Fence <= first.Fence {
		t.Fatalf("fence of the early holder %d, not above the first holder's %d", second.Fence, first.Fence)
	}
	if ok, err := honest.Extend(ctx, key, ttl); err != nil || ok {
		t.Fatalf("first holder's Extend after the early take-over = %v, %v; want false", ok, err)
	}
	if ok, err := honest.Release(ctx, key); err != nil || ok {
		t.Fatalf("first holder's Release after the early take-over = %v, %v; want false", ok, err)
	}

	// second.Until is by the clock ahead: by the shared clock it is skew
	// later than its ttl, and the locker behind sees it end skew later
	// still.
	base.Advance(second.Until.Sub(base.Now()) + ms)
	acquire(behind, false, "behind, skew before the lease ends by its clock")
	third := acquire(honest, true, "honest, a millisecond after the lease ends")
	if third.Fence <= second.Fence {
		t.Fatalf("fence %d, not above the earlier holder's %d", third.Fence, second.Fence)
	}

	// A blocked Acquire behind waits for the lease end by its own clock.
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, ok, err := behind.Acquire(ctx, key, ttl, locks.WithWait(time.Hour))
		done <- result{ok, err}
	}()
	if err := base.AwaitPending(ctx, 2); err != nil {
		t.Fatalf("the Acquire behind did not block: %v", err)
	}
	pending := base.Pending()
	base.Advance(third.Until.Sub(base.Now()) + ms)
	if base.Pending() != pending {
		t.Fatalf("a timer of the blocked Acquire fired at the lease's end by the shared clock; want %v later", skew)
	}
	base.Advance(skew)
	select {
	case r := <-done:
		if r.err != nil || !r.ok {
			t.Fatalf("blocked Acquire behind = %v, %v; want acquired", r.ok, r.err)
		}
	case <-time.After(time.Minute): // a bound on a failure, not a wait for success
		t.Fatal("the blocked Acquire behind did not wake skew after the lease's end")
	}
}

// offsetClock is the system clock shifted by off.
type offsetClock struct {
	locks.SystemClock
	off time.Duration
}

func (c offsetClock) Now() time.Time { return time.Now().Add(c.off) }

// TestClockSkewMeasured: a locker whose clock runs five seconds ahead
// learns so from DynamoDB's responses and logs it once; an honest one
// measures no skew and logs nothing.
func TestClockSkewMeasured(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := newDynamoEnv(t, false)
	const ahead = 5 * time.Second
	var aheadLog, honestLog skewtest.Warnings
	skewed := env.locker(t, withClock(offsetClock{off: ahead}), func(o *locks.DynamoOptions) { o.Logger = aheadLog.Logger() })
	honest := env.locker(t, func(o *locks.DynamoOptions) { o.Logger = honestLog.Logger() })
	if _, _, ok := skewed.ClockSkew(); ok {
		t.Fatal("ClockSkew before any request: ok, want no estimate")
	}
	for i := range 20 {
		key := fmt.Sprint("measured-", i)
		for _, l := range []*locks.Dynamo{skewed, honest} {
			if _, ok, err := l.Acquire(ctx, key, time.Minute); err != nil {
				t.Fatal(err)
			} else if ok {
				if _, err := l.Release(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := skewed.List(ctx); err != nil {
		t.Fatal(err)
	}
	skewtest.Check(t, "a clock 5 s ahead", skewed.ClockSkew, ahead)
	skewtest.Check(t, "an honest clock", honest.ClockSkew, 0)
	if got := aheadLog.Lines(); len(got) != 1 {
		t.Fatalf("%d skew warnings from the locker ahead, want exactly 1: %q", len(got), got)
	}
	if got := honestLog.Lines(); len(got) != 0 {
		t.Fatalf("skew warnings from the honest locker: %q", got)
	}
}
