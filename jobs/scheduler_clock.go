package jobs

import "time"

// Clock is the time a [Scheduler] reads and waits on. The default is the
// system clock; tests drive a scheduler with a fake one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Timer returns a channel that receives once the clock reads at or
	// later (at once when it does already), and a function that releases
	// the timer when its channel is no longer read.
	Timer(at time.Time) (c <-chan time.Time, stop func())
}

// systemClock is [time.Now] and real timers.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Timer(at time.Time) (<-chan time.Time, func()) {
	t := time.NewTimer(time.Until(at))
	return t.C, func() { t.Stop() }
}
