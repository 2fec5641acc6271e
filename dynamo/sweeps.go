package dynamo

import (
	"sync"
	"time"
)

// Defaults of the sweep schedule ([Options.SweepInterval],
// [Options.IdleSweepInterval]).
const (
	DefaultSweepInterval     = 5 * time.Second
	DefaultIdleSweepInterval = 5 * time.Minute
)

// sweepSchedule decides when the fetches of one queue kind in this process
// sweep the ready index, for a kind with a wake-up queue. A sweep queries
// every shard (16 requests by default); with wake-up queues it is only the
// safety net for work no signal announces: a lost signal, the lease of a
// process that stopped, a signal sent on too often.
//
// The process's fetches share one sweep per interval: the first fetch to
// find a sweep due makes it, the others wait for signals, and a fetch that
// waits wakes when the next sweep falls due. The interval doubles after
// each sweep, up to IdleSweepInterval; a fetch that gets work sets it back
// to SweepInterval (and brings the next sweep forward to at most that far
// away), so a busy process sweeps every SweepInterval and an idle one every
// IdleSweepInterval. Scheduling uses the real clock (time.Now), not
// Options.Now: it decides what requests cost, not what is correct.
type sweepSchedule struct {
	base, max time.Duration

	mu       sync.Mutex
	next     time.Time     // the next sweep is due
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
	if now.Before(s.next) {
		return false
	}
	s.next = now.Add(s.interval)
	s.interval = min(2*s.interval, s.max)
	return true
}

// untilDue is how long until the next sweep is due (0: due now).
func (s *sweepSchedule) untilDue(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.next.Sub(now), 0)
}

// gotWork records that a fetch got work: the interval starts again from
// its base, and the next sweep is at most that far away.
func (s *sweepSchedule) gotWork(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interval = s.base
	if next := now.Add(s.base); next.Before(s.next) {
		s.next = next
	}
}
