package locks

import "time"

// Clock tells the time and runs timers for a [Locker]: lease ends, the
// lease end a blocked Acquire waits for, and its wait. Tests pass a fake
// one to move time on at will; the default is the system clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned timer is stopped first, as [time.AfterFunc] does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer started by [Clock.AfterFunc]. [*time.Timer] implements
// it.
type Timer interface {
	// Stop prevents the timer from firing. It reports whether it did:
	// false when the timer had already fired or been stopped.
	Stop() bool
}

// SystemClock is the [Clock] of the operating system, the default of every
// locker.
type SystemClock struct{}

// Now returns [time.Now].
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc returns [time.AfterFunc] (d, f).
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
