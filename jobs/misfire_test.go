package jobs

import (
	"encoding/json"
	"testing"
	"time"
)

func everyMinute(t *testing.T) Trigger {
	t.Helper()
	trig, err := ParseTrigger(TriggerCron, json.RawMessage(`{"expr": "* * * * *"}`))
	if err != nil {
		t.Fatal(err)
	}
	return trig
}

func TestDecideMisfire(t *testing.T) {
	trig := everyMinute(t)
	const scheduled = "2025-01-01T00:01:00Z"
	tests := []struct {
		name      string
		now       string
		threshold time.Duration
		policy    IfMissed
		run       bool
		next      string
	}{
		{"on time, skip", "2025-01-01T00:01:00Z", 0, Skip, true, "2025-01-01T00:02:00Z"},
		{"sub-second late with threshold 0 is on time", "2025-01-01T00:01:00.999Z", 0, Skip, true, "2025-01-01T00:02:00Z"},
		{"a second late with threshold 0 is missed", "2025-01-01T00:01:01Z", 0, Skip, false, "2025-01-01T00:02:00Z"},
		{"late within the threshold runs", "2025-01-01T00:01:30Z", 30 * time.Second, Skip, true, "2025-01-01T00:02:00Z"},
		{"late beyond the threshold skips", "2025-01-01T00:01:31Z", 30 * time.Second, Skip, false, "2025-01-01T00:02:00Z"},
		{"skip moves to the first time not missed", "2025-01-01T00:10:30Z", 10 * time.Second, Skip, false, "2025-01-01T00:11:00Z"},
		{"skip moves to a due time within the threshold", "2025-01-01T00:10:05Z", 10 * time.Second, Skip, false, "2025-01-01T00:10:00Z"},
		{"skip with a large threshold moves to the oldest time within it", "2025-01-01T00:10:30Z", 5 * time.Minute, Skip, false, "2025-01-01T00:06:00Z"},
		{"run once coalesces the missed times", "2025-01-01T00:10:30Z", 10 * time.Second, RunOnce, true, "2025-01-01T00:11:00Z"},
		{"run once then runs the times within the threshold", "2025-01-01T00:10:30Z", 5 * time.Minute, RunOnce, true, "2025-01-01T00:06:00Z"},
		{"run once on time", "2025-01-01T00:01:00Z", 0, RunOnce, true, "2025-01-01T00:02:00Z"},
		{"run all runs the oldest", "2025-01-01T00:10:30Z", 10 * time.Second, RunAll, true, "2025-01-01T00:02:00Z"},
		{"run all on time", "2025-01-01T00:01:00Z", 0, RunAll, true, "2025-01-01T00:02:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideMisfire(trig, utc(scheduled), utc(tt.now), tt.threshold, tt.policy)
			if got.run != tt.run || !got.hasNext || !got.next.Equal(utc(tt.next)) {
				t.Fatalf("decideMisfire(%s at %s, %v, %s) = %+v; want run %v, next %s", scheduled, tt.now, tt.threshold, tt.policy, got, tt.run, tt.next)
			}
		})
	}
}

func TestDecideMisfireWithoutNextTime(t *testing.T) {
	at := utc("2025-01-01T00:01:00Z")
	trig, err := ParseTrigger(TriggerDate, json.RawMessage(`{"at": "2025-01-01T00:01:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []IfMissed{Skip, RunOnce, RunAll} {
		for _, now := range []time.Time{at, at.Add(time.Hour)} {
			got := decideMisfire(trig, at, now, 0, policy)
			wantRun := policy != Skip || now.Equal(at)
			if got.run != wantRun || got.hasNext {
				t.Errorf("%s at %s: %+v; want run %v and no next time", policy, now, got, wantRun)
			}
		}
	}
}

// runsAfterOutage replays what schedulers do with a job whose next run time
// is first when they come back at now: decide, claim, run, repeat until the
// next run time is in the future. It returns the scheduled times run and
// the next run time left.
func runsAfterOutage(trig Trigger, first, now time.Time, threshold time.Duration, policy IfMissed) (runs []time.Time, next time.Time) {
	next = first
	for !next.After(now) {
		d := decideMisfire(trig, next, now, threshold, policy)
		if d.run {
			runs = append(runs, next)
		}
		if !d.hasNext {
			return runs, time.Time{}
		}
		next = d.next
	}
	return runs, next
}

// TestMisfireAfterOutage is the guide's acceptance case: a job due every
// minute, its schedulers down for 10 minutes (00:01 to 00:10 missed).
func TestMisfireAfterOutage(t *testing.T) {
	trig := everyMinute(t)
	first := utc("2025-01-01T00:01:00Z")
	back := utc("2025-01-01T00:10:30Z")
	for _, tt := range []struct {
		policy IfMissed
		runs   int
	}{{Skip, 0}, {RunOnce, 1}, {RunAll, 10}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			runs, next := runsAfterOutage(trig, first, back, 10*time.Second, tt.policy)
			if len(runs) != tt.runs {
				t.Fatalf("%d runs %v; want %d", len(runs), runs, tt.runs)
			}
			for i, r := range runs { // oldest first, each once
				if want := first.Add(time.Duration(i) * time.Minute); !r.Equal(want) {
					t.Fatalf("run %d for %s; want %s", i, r, want)
				}
			}
			if want := utc("2025-01-01T00:11:00Z"); !next.Equal(want) {
				t.Fatalf("next run time %s; want %s on time", next, want)
			}
		})
	}
}
