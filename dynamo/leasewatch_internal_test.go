package dynamo

import (
	"testing"
	"time"
)

// TestSweepScheduleWatch: a lease another process holds brings the next
// sweep forward to its end (plus the slack), never sooner than watchGap
// after the sweep before nor later than the base interval away, and sets
// the interval back to its base; a lease ending after the next sweep
// changes nothing but the interval. Fetches waiting for the next sweep
// wake when it comes forward, and only then.
func TestSweepScheduleWatch(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := newSweepSchedule(10*time.Second, 40*time.Second)
	wakes := 0
	done := s.waiting(func() { wakes++ })
	defer done()
	// Sweeps at 0, 10 and 30 s: the next is due at 70 s.
	for _, d := range []time.Duration{0, 10 * time.Second, 30 * time.Second} {
		if !s.claim(at(d)) {
			t.Fatalf("claim at %v refused", d)
		}
	}
	// At 31 s a sweep saw a lease ending at 34 s.
	s.watch(at(31*time.Second), 3*time.Second)
	if due, want := s.untilDue(at(31*time.Second)), 3*time.Second+watchSlack; due != want {
		t.Fatalf("untilDue after a lease seen = %v, want %v (its end plus the slack)", due, want)
	}
	if wakes != 1 {
		t.Fatalf("%d wakes, want 1: the waiting fetches wait for the sweep that came forward", wakes)
	}
	if s.claim(at(34 * time.Second)) {
		t.Fatal("claim before the lease's end plus the slack granted")
	}
	if !s.claim(at(34*time.Second + watchSlack)) {
		t.Fatal("claim at the lease's end plus the slack refused")
	}
	// The interval is the base again: next due 10 s later.
	if due := s.untilDue(at(35 * time.Second)); due != 9*time.Second+watchSlack {
		t.Fatalf("untilDue after the watched sweep = %v, want 9 s and the slack (base interval)", due)
	}
	// A lease that ended already: not sooner than watchGap after the last
	// sweep.
	s.watch(at(34*time.Second+watchSlack), -time.Second)
	if due := s.untilDue(at(34*time.Second + watchSlack)); due != watchGap {
		t.Fatalf("untilDue after a lease that ended = %v, want watchGap %v", due, watchGap)
	}
	// A lease ending past the next sweep changes nothing.
	wakes = 0
	s.watch(at(35*time.Second), time.Minute)
	if due := s.untilDue(at(35 * time.Second)); due != watchGap-time.Second+watchSlack {
		t.Fatalf("untilDue after a late lease = %v, want unchanged", due)
	}
	if wakes != 0 {
		t.Fatalf("%d wakes for a lease ending past the next sweep, want none", wakes)
	}
	// A backed-off schedule that sees a long lease sweeps at the busy
	// cadence: at most the base interval away.
	s2 := newSweepSchedule(10*time.Second, 40*time.Second)
	for _, d := range []time.Duration{0, 10 * time.Second, 30 * time.Second} {
		s2.claim(at(d))
	}
	s2.watch(at(31*time.Second), time.Minute)
	if due := s2.untilDue(at(31 * time.Second)); due != 10*time.Second {
		t.Fatalf("untilDue after a long lease seen = %v, want the base 10 s", due)
	}
	// A fetch no longer waiting is not woken.
	done()
	s2.waiting(func() { wakes++ })()
	s2.watch(at(32*time.Second), 2*time.Second)
	if due := s2.untilDue(at(32 * time.Second)); due != 2*time.Second+watchSlack {
		t.Fatalf("untilDue after a lease seen = %v, want its end plus the slack", due)
	}
	if wakes != 0 {
		t.Fatalf("a fetch that stopped waiting was woken")
	}
}
