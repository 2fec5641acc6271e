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

// sweepSchedule decides when the fetches of one queue kind in this process
// sweep the ready index, for a kind with a wake-up queue. A sweep queries
// every shard (16 requests by default); with wake-up queues it is only the
// safety net for work no signal announces: a lost signal, the lease of a
// process that stopped, a signal sent on too often.
//
// The process's fetches of one kind and one filter (fetches with another
// capability filter or tag filter see other rows, and so may a session
// owner's: sweepSchedules.workerFilter) share one sweep per interval: the first
// fetch to find a sweep due makes it, the others wait for signals, and a
// fetch that waits wakes when the next sweep falls due. The interval
// doubles after each sweep, up to IdleSweepInterval. Any sign of work sets
// it back to SweepInterval and brings the next sweep forward to at most
// that far away: a fetch that got work or received signals, a sweep that
// saw eligible rows (even rows it could not take: their signals may have
// gone astray). So a process sweeps every SweepInterval while there is work
// about, and every IdleSweepInterval once the queue has stayed empty.
// Scheduling uses the real clock (time.Now), not Options.Now: it decides
// what requests cost, not what is correct.
type sweepSchedule struct {
	base, max time.Duration

	mu       sync.Mutex
	next     time.Time     // the next sweep is due
	interval time.Duration // the gap after the next sweep
	// backlogged is set when a sweep saw more eligible work than it handed
	// on (backlog): the next sweep is due as soon as no fetch holds
	// signals.
	backlogged bool
	// holding counts the fetches that are sweeping or trying signals they
	// took from the process's list (hold).
	holding int
	// last is when the latest sweep was booked (claim).
	last time.Time
	// waiters wake the fetches waiting for the next sweep, when a watched
	// lease brings it forward (waiting).
	waiters map[int]func()
	nextID  int
}

func newSweepSchedule(base, max time.Duration) *sweepSchedule {
	return &sweepSchedule{base: base, max: max, interval: base}
}

// claim reports whether a fetch should sweep now, and if so books the
// sweep so that the other fetches of the process do not repeat it.
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

// untilDue is how long until the next sweep is due (0: due now). A backlog
// sweep waiting for a fetch to give signals back is not due: that fetch
// hands back what it did not try, or sweeps itself when it ends, and the
// process's next fetch to look sweeps when none is left.
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

// Watched leases (docs/design.md §8, "Sweeps"): work another process holds
// comes back to the ready index when its lease ends, and if that process
// died, nothing but a sweep finds it then.
const (
	// watchSlack is how long after a watched lease's end the sweep it
	// brings forward is due, so that the lease is over by the clock of the
	// claim that follows.
	watchSlack = 50 * time.Millisecond
	// watchGap is the least time between the sweep before and a sweep a
	// watched lease brings forward: where other processes hold many leases,
	// one ends nearly all the time, and a process sweeps at most this often
	// for them.
	watchGap = time.Second
)

// watch records that a sweep at now saw work of this queue held by another
// process under a lease that ends in d: the next sweep is due then (plus
// watchSlack, and no sooner than watchGap after the sweep before), so that
// work a dead process held is taken as soon as its lease allows. A process
// that sees others' leases also sweeps at the busy cadence, as if it had
// work (the next sweep at most the base interval away, the interval back
// to its base), so that it sees the leases they take next. The fetches
// waiting for a later sweep wake to wait for this one.
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

// wake ends the waits of the fetches waiting for the next sweep, which has
// come forward. s.mu is held.
func (s *sweepSchedule) wake() {
	for _, wake := range s.waiters {
		wake()
	}
}

// waiting registers wake, which ends the wait of a fetch that waits for the
// next sweep (or for signals) with the due time it read before: watch calls
// it when it brings the sweep forward. The func returned unregisters it.
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

// backlog records that a sweep saw more eligible work than it handed to
// the process's fetches: the next sweep is due as soon as the process has
// no signal left, made by the first fetch that finds none, instead of an
// interval later while the process's slots stand idle beside a backlog.
// "No signal left" means none kept and none held: a fetch takes the whole
// list of signals at once (queues.Signals.Wait), and another that finds
// it empty meanwhile must not sweep again, for the first hands back what
// it does not use. Each backlog sweep takes work itself and hands on up
// to sweepHandLimit instances, so a backlog costs about one sweep per
// sweepHandLimit instances. The fetches waiting for signals wake when
// the backlog sweep falls due (here, or when the last holder lets go): the
// fetch that held the signals may make no other, and the waiting ones
// would otherwise sleep to their poll timeout beside the backlog.
func (s *sweepSchedule) backlog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backlogged = true
	s.interval = s.base
	if s.backlogDue() {
		s.wake()
	}
}

// hold records that a fetch sweeps or tries signals it took from the
// process's list, until the release it returns is called (once, after the
// fetch has handed back the signals it did not use).
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

// sweepSchedules holds a provider's schedules, one per queue kind and fetch
// filter, and knows which of the process's session owners hold sessions
// (workerFilter).
type sweepSchedules struct {
	base, max time.Duration

	mu        sync.Mutex
	schedules map[sweepKey]*sweepSchedule
	// holders maps the session owners of this process that took or
	// renewed a session lease to the end of the latest (epoch ms).
	holders map[string]int64
}

// workerFilter is the schedule filter of a worker fetch with tags filter
// tags and session config session (nil: none). Worker fetches see the
// same rows, and so share one sweep, unless they differ in tags filter,
// in whether they take sessions' activities, or in holding sessions: a
// session's activities pass only for the owner that holds it (and for
// every owner once it has expired). So an owner holding sessions sweeps
// on its own schedule, and the owners that hold none share one. Before,
// every owner had its own, and a runtime's worker slots (one owner each)
// each swept every interval: with 8 slots, 8 sweeps where one does, 8
// Queries per shard while work is about.
//
// An owner counts as holding sessions from a lease it took or renewed in
// this process until that lease's end: an owner that comes to hold one
// sweeps for its activities at once (its schedule is new), and one whose
// leases lapsed joins the others.
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

// maxSweepSchedules bounds the schedules kept, and the session holders
// known: a process has a few fetch filters, but session owners could be
// many. Past it, they are dropped and made again (their next sweep is then
// due at once; an owner forgotten sweeps with the owners that hold no
// session until it takes or renews a lease again).
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
