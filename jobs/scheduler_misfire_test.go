package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// TestSchedulerMisfireAfterOutage stops the schedulers from 00:00:30 to
// 00:10:30 with a job due every minute and a 10 s threshold: the ten
// minutes 00:01 to 00:10 are missed, and 00:11 is on time.
func TestSchedulerMisfireAfterOutage(t *testing.T) {
	for _, tt := range []struct {
		policy jobs.IfMissed
		missed []time.Time // the missed times that run, in order
	}{
		{jobs.Skip, nil},
		{jobs.RunOnce, []time.Time{minute(1)}},
		{jobs.RunAll, []time.Time{minute(1), minute(2), minute(3), minute(4), minute(5), minute(6), minute(7), minute(8), minute(9), minute(10)}},
	} {
		t.Run(string(tt.policy), func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock(startTime)
			store := jobs.NewMemoryStore()
			rec := newRecorder()
			s := newScheduler(t, store, clock)
			if err := s.Handle("tick", rec.action("s")); err != nil {
				t.Fatal(err)
			}
			job := cronJob(t, "every-minute", "tick", "* * * * *")
			job.IfMissed, job.MisfireThresholdSeconds = tt.policy, 10
			if _, err := s.Add(ctx, job); err != nil {
				t.Fatal(err)
			}
			clock.Set(minute(10).Add(30 * time.Second)) // the outage
			run(t, s)
			for _, want := range tt.missed {
				if f := rec.await(t); !f.ScheduledTime.Equal(want) {
					t.Fatalf("fired %s; want %s", f.ScheduledTime, want)
				}
			}
			// Idle until 00:11, which then fires on time.
			if !clock.waitTimers(minute(11), 1, t.Context().Done()) {
				t.Fatal("the scheduler does not wait for 00:11")
			}
			if len(rec.ch) != 0 {
				t.Fatalf("fired %s; want no more missed times", (<-rec.ch).ScheduledTime)
			}
			clock.Set(minute(11))
			if f := rec.await(t); !f.ScheduledTime.Equal(minute(11)) {
				t.Fatalf("fired %s; want 00:11", f.ScheduledTime)
			}
		})
	}
}
