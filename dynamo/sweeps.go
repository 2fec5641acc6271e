package dynamo

import (
	"sync"
	"time"
)

// Defaults of the sweep schedule ([Options.SweepInterval],
// [Options.IdleSweepInterval]).
const (
	DefaultSweepInterval     = 30 * time.Second
	DefaultIdleSweepInterval = 5 * time.Minute
)

// idleAfter is how long a queue of this process must go without a fetch
// that got work before its sweeps are amortised (sweepSchedule).
const idleAfter = time.Minute

// sweepSchedule decides when the fetches of one queue kind in this process
// sweep the ready index. A sweep queries every shard (16 requests by
// default), and with wake-up queues it is only the safety net for work no
// signal announces: a lost signal, a timer more than 15 minutes away, the
// lease of a process that stopped.
//
// While the queue is busy (a fetch got work in the last minute) every fetch
// sweeps before it waits, as without wake-up queues. Once it is idle, the
// process's fetches share one sweep per interval: the first fetch to find
// a sweep due makes it, the others wait for signals; a fetch that waits
// wakes when the next sweep falls due. The interval starts at
// SweepInterval and doubles after each sweep that finds nothing, up to
// IdleSweepInterval; work found resets it. Scheduling uses the real clock
// (time.Now), not Options.Now: it decides what requests cost, not what is
// correct.
type sweepSchedule struct {
	base, max time.Duration

	mu       sync.Mutex
	lastWork time.Time     // a fetch of this kind got work
	next     time.Time     // the next amortised sweep is due
	interval time.Duration // the gap after the next sweep
}

func newSweepSchedule(base, max time.Duration) *sweepSchedule {
	return &sweepSchedule{base: base, max: max, interval: base}
}

// claim reports whether a fetch should sweep now, and if so books the
// sweep so that the other fetches of the process do not repeat it.
func (s *sweepSchedule) claim(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastWork) < idleAfter {
		return true
	}
	if now.Before(s.next) {
		return false
	}
	s.next = now.Add(s.interval)
	s.interval = min(2*s.interval, s.max)
	return true
}

// untilDue is how long until the next amortised sweep is due, or 0 when the
// queue is busy (every fetch sweeps; a waiting fetch is not woken for it).
func (s *sweepSchedule) untilDue(now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastWork) < idleAfter {
		return 0, false
	}
	return max(s.next.Sub(now), 0), true
}

// gotWork records that a fetch got work: the queue is busy, and the
// interval starts again from its base.
func (s *sweepSchedule) gotWork(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastWork = now
	s.interval = s.base
	s.next = now.Add(s.base)
}
