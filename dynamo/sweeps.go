package dynamo

import (
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Defaults of the sweep schedule ([Options.SweepInterval],
// [Options.IdleSweepInterval]).
const (
	DefaultSweepInterval     = 5 * time.Second
	DefaultIdleSweepInterval = 5 * time.Minute
)

// sweepSchedule decides when the fetches of one queue kind and filter in
// this process sweep the ready index, for a kind with a wake-up queue,
// where a sweep is only the safety net for work no signal announces
// (docs/design.md §8, "Sweeps"). They share one sweep per interval; the
// interval doubles after each sweep up to IdleSweepInterval, and any sign
// of work sets it back to SweepInterval. It runs on the real clock, not
// Options.Now: it decides what requests cost, not what is correct.
type sweepSchedule struct {
	base, max time.Duration

	mu       sync.Mutex
	next     time.Time     // the next sweep is due
	interval time.Duration // the gap after the next sweep
	// backlogged is set when a sweep saw more than it handed on (backlog):
	// the next sweep is due as soon as no fetch holds signals.
	backlogged bool
	// holding counts the fetches sweeping or trying signals they took (hold).
	holding int
	// last is when the latest sweep was booked (claim).
	last time.Time
	// waiters wake the fetches waiting for the next sweep (waiting).
	waiters map[int]func()
	nextID  int
}

func newSweepSchedule(base, max time.Duration) *sweepSchedule {
	return &sweepSchedule{base: base, max: max, interval: base}
}

// claim reports whether a fetch should sweep now and, if so, books it.
func (s *sweepSchedule) claim(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.next) && !s.backlogDue() {
		return false
	}
	s.backlogged = false
	s.last = now
	s.next = now.Add(s.interval)
	s.interval = min(2*s.interval, s.max)
	return true
}

// untilDue is how long until the next sweep is due (0: now). A backlog
// sweep is not due while a fetch holds signals: that fetch hands back what
// it did not try, and the next fetch to find none left sweeps.
func (s *sweepSchedule) untilDue(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backlogDue() {
		return 0
	}
	return max(s.next.Sub(now), 0)
}

// backlogDue reports whether a backlog makes the next sweep due now. s.mu
// is held.
func (s *sweepSchedule) backlogDue() bool { return s.backlogged && s.holding == 0 }

// active records a sign of work: the interval starts again from its base,
// and the next sweep is at most that far away.
func (s *sweepSchedule) active(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interval = s.base
	if next := now.Add(s.base); next.Before(s.next) {
		s.next = next
	}
}

// Watched leases (docs/design.md §8, "Sweeps"): a dead process's work
// comes back to the ready index at its lease's end, where only a sweep
// finds it.
const (
	// watchSlack is how long after a watched lease's end its sweep is due,
	// so that the lease is over by the clock of the claim that follows.
	watchSlack = 50 * time.Millisecond
	// watchGap is the least time between sweeps a watched lease brings
	// forward: where others hold many leases, one ends nearly all the time.
	watchGap = time.Second
)

// watch records that a sweep at now saw another process's lease on this
// queue ending in d: the next sweep is due then (plus watchSlack, at least
// watchGap after the last), to take a dead process's work at once, and
// the cadence goes back to busy, to see the leases taken next.
func (s *sweepSchedule) watch(now time.Time, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interval = s.base
	due := now.Add(min(max(d, 0)+watchSlack, s.base))
	if floor := s.last.Add(watchGap); due.Before(floor) {
		due = floor
	}
	if !due.Before(s.next) {
		return
	}
	s.next = due
	s.wake()
}

// wake ends the waits for the next sweep, which came forward. s.mu is held.
func (s *sweepSchedule) wake() {
	for _, wake := range s.waiters {
		wake()
	}
}

// waiting registers wake, which watch calls to end a fetch's wait when it
// brings the next sweep forward; done unregisters it.
func (s *sweepSchedule) waiting(wake func()) (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[int]func(){}
	}
	id := s.nextID
	s.nextID++
	s.waiters[id] = wake
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.waiters, id)
	}
}

// backlog records that a sweep saw more eligible work than it handed on:
// the next sweep is due as soon as no fetch keeps or holds signals (the
// holder hands back what it does not use), made by the first fetch to find
// none (docs/design.md §8, "Backlogs"). Waiting fetches wake then, rather
// than sleep to their poll timeout beside the backlog.
func (s *sweepSchedule) backlog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backlogged = true
	s.interval = s.base
	if s.backlogDue() {
		s.wake()
	}
}

// hold records that a fetch sweeps or tries signals it took, until the
// release it returns is called (after handing back what it did not use).
func (s *sweepSchedule) hold() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.holding--
			if s.backlogDue() {
				s.wake()
			}
		})
	}
}

// holding reports whether a fetch sweeps, or tries signals it took, under
// any of the schedules (hold).
func (ss *sweepSchedules) holding() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.schedules {
		s.mu.Lock()
		held := s.holding > 0
		s.mu.Unlock()
		if held {
			return true
		}
	}
	return false
}

// sweepSchedules holds a provider's schedules, one per kind and fetch
// filter, and knows which session owners of the process hold sessions.
type sweepSchedules struct {
	base, max time.Duration

	mu        sync.Mutex
	schedules map[sweepKey]*sweepSchedule
	// holders maps the session owners of this process that took or
	// renewed a session lease to the end of the latest (epoch ms).
	holders map[string]int64
}

// workerFilter is the schedule filter of a worker fetch with tags filter
// tags and session config session (nil: none). Fetches that see the same
// rows share one sweep; a session's activities pass only for the owner
// holding it, so an owner holding sessions (from a lease it took or
// renewed until that lease's end) sweeps on its own schedule, at once, and
// the others share one (TestWorkerSlotsShareOneSweep).
func (ss *sweepSchedules) workerFilter(tags string, session *provider.SessionFetchConfig, nowMs int64) string {
	if session == nil {
		return tags
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.holders[session.OwnerID] > nowMs {
		return tags + "\x00owner\x00" + session.OwnerID
	}
	return tags + "\x00sessions"
}

// sessionsHeld records that owner, a session owner of this process, holds
// a session lease until untilMs.
func (ss *sweepSchedules) sessionsHeld(owner string, untilMs int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.holders == nil || len(ss.holders) >= maxSweepSchedules {
		ss.holders = make(map[string]int64)
	}
	ss.holders[owner] = max(ss.holders[owner], untilMs)
}

// sweepKey names the fetches that share a schedule: one kind, one filter.
type sweepKey struct {
	kind   queues.Kind
	filter string
}

// maxSweepSchedules bounds the schedules and session holders kept (owners
// could be many). Past it they are dropped: a new schedule sweeps at once,
// and a forgotten owner shares the others' until its next lease.
const maxSweepSchedules = 1024

// of returns the schedule of the fetches of kind with filter.
func (ss *sweepSchedules) of(kind queues.Kind, filter string) *sweepSchedule {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	k := sweepKey{kind, filter}
	if s, ok := ss.schedules[k]; ok {
		return s
	}
	if ss.schedules == nil || len(ss.schedules) >= maxSweepSchedules {
		ss.schedules = make(map[sweepKey]*sweepSchedule)
	}
	s := newSweepSchedule(ss.base, ss.max)
	ss.schedules[k] = s
	return s
}
