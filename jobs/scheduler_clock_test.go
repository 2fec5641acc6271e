package jobs_test

import (
	"sync"
	"time"
)

// fakeClock is a [jobs.Clock] that moves only when a test sets it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced when a timer is added
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, timers: make(map[*fakeTimer]struct{}), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Timer(at time.Time) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: at, c: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.c <- c.now
		return t.c, func() {}
	}
	c.timers[t] = struct{}{}
	close(c.changed)
	c.changed = make(chan struct{})
	return t.c, func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
	}
}

// Set moves the clock to now and fires the timers due by then.
func (c *fakeClock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
	for t := range c.timers {
		if !t.at.After(now) {
			t.c <- now
			delete(c.timers, t)
		}
	}
}

// waitTimers blocks until n timers wait for at, or done is closed; it
// reports whether they do.
func (c *fakeClock) waitTimers(at time.Time, n int, done <-chan struct{}) bool {
	for {
		c.mu.Lock()
		count := 0
		for t := range c.timers {
			if t.at.Equal(at) {
				count++
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if count >= n {
			return true
		}
		select {
		case <-changed:
		case <-done:
			return false
		}
	}
}
