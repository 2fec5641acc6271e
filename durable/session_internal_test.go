package durable

import (
	"testing"
	"time"
)

// TestCleanupSchedule: clean-ups of orphaned sessions come every base
// interval while they find sessions or the runtime works on sessions, and
// double up to twelve times the base while neither happens.
func TestCleanupSchedule(t *testing.T) {
	c := newCleanupSchedule(5 * time.Minute)
	if c.interval != 5*time.Minute {
		t.Fatalf("first interval %v", c.interval)
	}
	steps := []struct {
		found, worked bool
		want          time.Duration
	}{
		{false, true, 5 * time.Minute},
		{false, false, 10 * time.Minute},
		{false, false, 20 * time.Minute},
		{false, false, 40 * time.Minute},
		{false, false, time.Hour},
		{false, false, time.Hour},
		{true, false, 5 * time.Minute},
		{false, false, 10 * time.Minute},
		{false, true, 5 * time.Minute},
	}
	for i, s := range steps {
		if got := c.next(s.found, s.worked); got != s.want {
			t.Fatalf("step %d (found %v, worked %v): next clean-up in %v, want %v", i, s.found, s.worked, got, s.want)
		}
	}
}

// TestSessionTrackerRenewable: owners are renewable for horizon after their
// last session work or, for owners that may hold sessions from before, their
// start; a new owner only after it works.
func TestSessionTrackerRenewable(t *testing.T) {
	s := newSessionTracker()
	t0 := time.Unix(1000, 0)
	s.addOwner("a", t0, true)
	s.addOwner("b", t0, true)
	s.addOwner("new", t0, false)
	s.worked("b", t0.Add(time.Minute))
	if got := s.renewable(t0.Add(30*time.Second), time.Minute); len(got) != 2 {
		t.Fatalf("30 s after the start: renewable %v, want a and b (new has not worked)", got)
	}
	if got := s.renewable(t0.Add(90*time.Second), time.Minute); len(got) != 1 || got[0] != "b" {
		t.Fatalf("90 s after the start, b having worked at 60 s: renewable %v, want [b]", got)
	}
	if got := s.renewable(t0.Add(3*time.Minute), time.Minute); len(got) != 0 {
		t.Fatalf("3 min after the start: renewable %v, want none", got)
	}
	if !s.workedSince(t0.Add(30*time.Second)) || s.workedSince(t0.Add(time.Minute)) {
		t.Fatal("workedSince disagrees with the work recorded")
	}
	s.worked("new", t0.Add(3*time.Minute))
	if got := s.renewable(t0.Add(3*time.Minute+time.Second), time.Minute); len(got) != 1 || got[0] != "new" {
		t.Fatalf("just after the new owner's first session work: renewable %v, want [new]", got)
	}
}
