package faults

import (
	"sync"
	"time"
)

// Clock is a settable clock for tests: a base clock plus an offset that
// the test changes. Give [Clock.Now] to providers (their Options.Now) to
// skew one process against another, and to the [Injector] (Options.Now)
// for index lag. A Clock is safe for concurrent use.
type Clock struct {
	base   func() time.Time
	mu     sync.Mutex
	offset time.Duration
}

// NewClock returns a clock that reads base plus offset. A nil base means
// [time.Now]: the clock then runs, skewed by the offset.
func NewClock(base func() time.Time, offset time.Duration) *Clock {
	if base == nil {
		base = time.Now
	}
	return &Clock{base: base, offset: offset}
}

// NewFakeClock returns a clock that reads start and moves only when told
// ([Clock.Advance], [Clock.SetOffset]): a timer of fifteen minutes expires
// when the test advances the clock past it, at once.
func NewFakeClock(start time.Time) *Clock {
	return NewClock(func() time.Time { return start }, 0)
}

// Now returns the base clock's time plus the offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	offset := c.offset
	c.mu.Unlock()
	return c.base().Add(offset)
}

// SetOffset sets the offset from the base clock (for a fake clock, from
// its start).
func (c *Clock) SetOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = d
}

// Advance adds d to the offset, moving the clock forward by d (backward
// when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
