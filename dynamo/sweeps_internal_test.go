package dynamo

import (
	"testing"
	"time"
)

// The schedule of an idle queue: one sweep per interval, shared by the
// fetches; the interval doubles up to its maximum; work found makes the
// queue busy (every fetch sweeps) for idleAfter, then the interval starts
// again from its base.
func TestSweepSchedule(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := newSweepSchedule(10*time.Second, 40*time.Second)
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true},                  // idle from the start: the first fetch sweeps
		{time.Second, false},       // the others wait
		{10 * time.Second, true},   // due after the base interval
		{29 * time.Second, false},  // the interval doubled: due at 30 s
		{30 * time.Second, true},   // next due at 70 s
		{69 * time.Second, false},  //
		{70 * time.Second, true},   // capped at 40 s: next due at 110 s
		{109 * time.Second, false}, //
		{110 * time.Second, true},  //
		{149 * time.Second, false}, //
		{150 * time.Second, true},  //
		{151 * time.Second, false}, //
	}
	for _, st := range steps {
		if got := s.claim(at(st.at)); got != st.want {
			t.Fatalf("claim at %v = %v, want %v", st.at, got, st.want)
		}
	}
	if due, idle := s.untilDue(at(160 * time.Second)); !idle || due != 30*time.Second {
		t.Fatalf("untilDue at 160 s = %v, %v; want 30 s, idle", due, idle)
	}
	s.gotWork(at(200 * time.Second))
	for _, d := range []time.Duration{200 * time.Second, 201 * time.Second, 259 * time.Second} {
		if !s.claim(at(d)) {
			t.Fatalf("claim at %v, a busy queue, = false", d)
		}
		if _, idle := s.untilDue(at(d)); idle {
			t.Fatalf("untilDue at %v reports idle a busy queue", d)
		}
	}
	// Idle again a minute after the work: base interval again.
	if !s.claim(at(260 * time.Second)) {
		t.Fatal("claim at 260 s = false; the sweep booked at 210 s is due")
	}
	if s.claim(at(269*time.Second)) || !s.claim(at(270*time.Second)) {
		t.Fatal("after work the interval did not start again from its base")
	}
}
