package jobs_test

import (
	"context"
	"testing"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

func TestSchedulersFireEachTimeOnce_Dynamo(t *testing.T) {
	t.Parallel()
	signals, err := queues.New(nil) // in this process only
	if err != nil {
		t.Fatal(err)
	}
	defer signals.Close()
	store := newDynamoEnv(t).store(t, func(o *jobs.DynamoOptions) { o.Signals = signals })
	testSchedulersFireEachTimeOnce(t, store, signals)
}

// TestScheduler_LostResponses loses the response of the compare-and-swap
// that claims a scheduled time, then of the one that ends the claim: both
// applied, and the scheduler must take them as applied (run the claimed
// time, then wait for the next one), not as failed.
func TestScheduler_LostResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newDynamoEnv(t)
	in := faults.New(1)
	store := env.faultyStore(t, in)
	clock := newFakeClock(startTime)
	rec := newRecorder()
	s := newScheduler(t, store, clock)
	lose := func() {
		in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	}
	record := rec.action("s")
	err := s.Handle("tick", func(ctx context.Context, f jobs.Fire) error {
		if f.ScheduledTime.Equal(minute(2)) {
			lose() // the next write ends this claim
		}
		return record(ctx, f)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, cronJob(t, "j", "tick", "* * * * *")); err != nil {
		t.Fatal(err)
	}
	run(t, s)
	if !clock.waitTimers(minute(1), 1, t.Context().Done()) {
		t.Fatal("not waiting for 00:01")
	}
	lose() // the next write claims 00:01
	for k := 1; k <= 3; k++ {
		clock.Set(minute(k))
		f := rec.await(t)
		if !f.ScheduledTime.Equal(minute(k)) || f.Repeat {
			t.Fatalf("minute %d: fired %+v", k, f)
		}
		if !clock.waitTimers(minute(k+1), 1, t.Context().Done()) {
			t.Fatalf("not waiting for minute %d", k+1)
		}
	}
	if got := in.Stats().Ops[faults.OpUpdateItem].Faults; got[faults.KindLostResponse] != 2 {
		t.Fatalf("lost responses: %v; want 2", got)
	}
}
