package dynamo

import (
	"testing"
	"time"
)

// The schedule: one sweep per interval, shared by the fetches; the interval
// doubles up to its maximum; work found sets it back to its base and brings
// the next sweep forward, never later.
func TestSweepSchedule(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := newSweepSchedule(10*time.Second, 40*time.Second)
	claims := func(steps ...struct {
		at   time.Duration
		want bool
	}) {
		t.Helper()
		for _, st := range steps {
			if got := s.claim(at(st.at)); got != st.want {
				t.Fatalf("claim at %v = %v, want %v", st.at, got, st.want)
			}
		}
	}
	type step = struct {
		at   time.Duration
		want bool
	}
	claims(
		step{0, true},                 // the first fetch sweeps
		step{time.Second, false},      // the others wait
		step{10 * time.Second, true},  // due after the base interval
		step{29 * time.Second, false}, // the interval doubled: due at 30 s
		step{30 * time.Second, true},  // next due at 70 s
		step{69 * time.Second, false},
		step{70 * time.Second, true}, // capped at 40 s: next due at 110 s
		step{109 * time.Second, false},
		step{110 * time.Second, true},
	)
	if due := s.untilDue(at(120 * time.Second)); due != 30*time.Second {
		t.Fatalf("untilDue at 120 s = %v, want 30 s", due)
	}
	// Work found at 125 s: the next sweep moves from 150 s to 135 s, and
	// the interval after it is the base again.
	s.active(at(125 * time.Second))
	claims(step{134 * time.Second, false}, step{135 * time.Second, true}, step{144 * time.Second, false}, step{145 * time.Second, true})
	// The sweep at 145 s booked the next at 165 s; work at 150 s brings it
	// forward to 160 s, and more work at 155 s does not put it off.
	s.active(at(150 * time.Second))
	if due := s.untilDue(at(150 * time.Second)); due != 10*time.Second {
		t.Fatalf("untilDue after work at 150 s = %v, want 10 s (base)", due)
	}
	s.active(at(155 * time.Second))
	if due := s.untilDue(at(155 * time.Second)); due != 5*time.Second {
		t.Fatalf("untilDue after more work at 155 s = %v, want 5 s: work must not put a sweep off", due)
	}
	// A sweep at 160 s saw more backlog than it handed on: the next is due
	// at once, for one fetch only, and then an interval of the base later.
	claims(step{160 * time.Second, true})
	s.backlog()
	if due := s.untilDue(at(161 * time.Second)); due != 0 {
		t.Fatalf("untilDue after a backlog = %v, want 0", due)
	}
	claims(step{161 * time.Second, true}, step{162 * time.Second, false}, step{170 * time.Second, false}, step{171 * time.Second, true})
	// A backlog sweep waits while a fetch holds signals: the list is empty
	// because that fetch took it. It is due once the last holder lets go
	// (twice letting go counts once), not on a sweep's interval.
	claims(step{172 * time.Second, false})
	release := s.hold()
	s.backlog()
	other := s.hold()
	if due := s.untilDue(at(173 * time.Second)); due != 18*time.Second {
		t.Fatalf("untilDue after a backlog while fetches hold signals = %v, want 18 s (the next sweep by interval)", due)
	}
	claims(step{173 * time.Second, false})
	release()
	release()
	claims(step{174 * time.Second, false})
	other()
	if due := s.untilDue(at(175 * time.Second)); due != 0 {
		t.Fatalf("untilDue once no fetch holds signals = %v, want 0", due)
	}
	claims(step{175 * time.Second, true}, step{176 * time.Second, false})
}

// TestBacklogSweepWakesWaitingFetch: a fetch that found no signal while
// another held the process's list waits for signals until its poll
// timeout or the next sweep. When the holder gives the list back with a
// backlog recorded and makes no further fetch (its caller is done), the
// backlog sweep is due at once: the waiting fetch must wake to make it,
// not sleep to its poll timeout with work in the index (a fetch of the
// backlog test returned nothing this way, its partner's last fetch done).
func TestBacklogSweepWakesWaitingFetch(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := newSweepSchedule(time.Hour, time.Hour)
	if !s.claim(now) {
		t.Fatal("first claim refused")
	}
	release := s.hold()
	s.backlog() // the holder's sweep saw more than it handed on
	if d := s.untilDue(now); d == 0 {
		t.Fatal("backlog sweep due while a fetch holds signals")
	}
	woken := make(chan struct{}, 4)
	defer s.waiting(func() { woken <- struct{}{} })()
	release()
	select {
	case <-woken:
	default:
		t.Fatal("the holder gave the signals back with a backlog due; the waiting fetch was not woken")
	}
	if d := s.untilDue(now); d != 0 {
		t.Fatalf("untilDue after release with a backlog: %v, want 0", d)
	}

	// A backlog recorded while no fetch holds signals wakes the waiters
	// too.
	if !s.claim(now) {
		t.Fatal("backlog sweep refused")
	}
	s.backlog()
	select {
	case <-woken:
	default:
		t.Fatal("backlog recorded with no holder; the waiting fetch was not woken")
	}
}
