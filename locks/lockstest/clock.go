package lockstest

import (
	"context"
	"sync"
	"time"

	"github.com/duradyn/duradyn/locks"
)

// FakeClock is a [locks.Clock] whose time moves only when [FakeClock.Advance]
// is called. Its timers fire, each in its own goroutine, when the time
// reaches theirs. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced when timers are added
}

// fakeTimer is a timer of a [FakeClock].
type fakeTimer struct {
	c  *FakeClock
	at time.Time
	f  func()
}

// NewFakeClock returns a clock that reads start until advanced.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, timers: make(map[*fakeTimer]struct{}), changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f in its own goroutine once the clock has advanced by d
// (at once when d <= 0).
func (c *FakeClock) AfterFunc(d time.Duration, f func()) locks.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers[t] = struct{}{}
	close(c.changed)
	c.changed = make(chan struct{})
	return t
}

// Stop implements [locks.Timer].
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

// Advance moves the clock on by d and fires the timers that are due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			delete(c.timers, t)
			go t.f()
		}
	}
}

// Pending returns the number of timers that have not fired or been stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// AwaitPending blocks until at least n timers are pending, or ctx ends
// (then it returns ctx's error). A blocked [locks.Locker.Acquire] holds
// two: its wait and the end of the lease it saw. Awaiting them is how a
// test knows that an Acquire is blocked.
func (c *FakeClock) AwaitPending(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		pending, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if pending >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
