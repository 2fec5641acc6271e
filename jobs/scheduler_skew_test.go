package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// skewedClock reads a shared fake clock shifted by off: a host whose clock
// runs off ahead of the others (behind when off is negative).
type skewedClock struct {
	base *fakeClock
	off  time.Duration
}

func (c skewedClock) Now() time.Time { return c.base.Now().Add(c.off) }

func (c skewedClock) Timer(at time.Time) (<-chan time.Time, func()) {
	return c.base.Timer(at.Add(-c.off))
}

func TestSchedulersWithSkewedClocks(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		t.Parallel()
		testSchedulersWithSkewedClocks(t, jobs.NewMemoryStore())
	})
	t.Run("Dynamo", func(t *testing.T) {
		t.Parallel()
		testSchedulersWithSkewedClocks(t, newDynamoEnv(t).store(t))
	})
}

// testSchedulersWithSkewedClocks runs three schedulers on store whose
// clocks run skew behind, on time and skew ahead, for 20 simulated minutes
// of a job due every minute. Each minute fires skew early, by the
// scheduler ahead (SchedulerOptions.Clock documents it), and once only:
// the others find it claimed and the job moved on.
func testSchedulersWithSkewedClocks(t *testing.T, store jobs.Store) {
	const skew = 5 * time.Second
	base := newFakeClock(startTime)
	rec := newRecorder()
	_, stops := runEveryMinute(t, store, rec, []member{
		{owner: "behind", clock: skewedClock{base, -skew}},
		{owner: "on-time", clock: base},
		{owner: "ahead", clock: skewedClock{base, skew}},
	})
	const minutes = 20
	for k := 1; k <= minutes; k++ {
		base.Set(minute(k).Add(-skew))
		if f := rec.await(t); !f.ScheduledTime.Equal(minute(k)) {
			t.Fatalf("fire for %s at %v before minute %d", f.ScheduledTime, skew, k)
		}
		base.Set(minute(k).Add(skew)) // the scheduler behind reaches the minute
	}
	for _, stop := range stops {
		stop()
	}
	if len(rec.ch) != 0 {
		t.Fatalf("%d more fires after the last minute", len(rec.ch))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for k := 1; k <= minutes; k++ {
		if n := rec.fires[fireKey("every-minute", minute(k))]; n != 1 {
			t.Errorf("minute %d fired %d times", k, n)
		}
	}
	if want := map[string]int{"ahead": minutes}; fmt.Sprint(rec.by) != fmt.Sprint(want) {
		t.Errorf("fires per scheduler %v; want %v", rec.by, want)
	}
}
