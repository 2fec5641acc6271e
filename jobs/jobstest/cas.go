package jobstest

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

func testCompareAndSwap(t *testing.T, s jobs.Store) {
	job := mustCreate(t, s, fullJob("cas"))
	claim := jobs.Changes{jobs.FieldStatus: jobs.StatusRunning, jobs.FieldLastRunTime: at(time.Hour)}

	// Not applied: the current job comes back unchanged.
	applied, got, err := s.CompareAndSwap(ctx(t), "cas", jobs.Changes{jobs.FieldStatus: jobs.StatusPaused}, claim)
	if err != nil || applied {
		t.Fatalf("CompareAndSwap from the wrong status = %v, %v; want not applied", applied, err)
	}
	wantJob(t, "job returned when not applied", got, job)
	wantJob(t, "Get after not applied", mustGet(t, s, "cas"), job)

	// Applied: the changed job comes back.
	applied, got, err = s.CompareAndSwap(ctx(t), "cas", jobs.Changes{
		jobs.FieldStatus:      jobs.StatusScheduled,
		jobs.FieldNextRunTime: *job.NextRunTime,
	}, claim)
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap = %v, %v; want applied", applied, err)
	}
	want := job
	want.Status = jobs.StatusRunning
	want.LastRunTime = ptr(at(time.Hour))
	wantJob(t, "job returned when applied", got, want)
	wantJob(t, "Get after applied", mustGet(t, s, "cas"), want)

	// The same swap again no longer applies.
	applied, got, err = s.CompareAndSwap(ctx(t), "cas", jobs.Changes{jobs.FieldStatus: jobs.StatusScheduled}, claim)
	if err != nil || applied {
		t.Fatalf("repeated CompareAndSwap = %v, %v; want not applied", applied, err)
	}
	wantJob(t, "job returned by the repeated swap", got, want)

	// Empty expectations always hold; empty changes change nothing.
	applied, got, err = s.CompareAndSwap(ctx(t), "cas", nil, jobs.Changes{jobs.FieldName: "renamed"})
	want.Name = "renamed"
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap without expectations = %v, %v; want applied", applied, err)
	}
	wantJob(t, "job after a swap without expectations", got, want)
	applied, got, err = s.CompareAndSwap(ctx(t), "cas", jobs.Changes{jobs.FieldName: "renamed"}, nil)
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap without changes = %v, %v; want applied", applied, err)
	}
	wantJob(t, "job after a swap without changes", got, want)
}

// testCompareAndSwapEachField checks, for each field, that an expectation
// of its value holds and one of another value does not, absent values
// included.
func testCompareAndSwapEachField(t *testing.T, s jobs.Store) {
	full := mustCreate(t, s, fullJob("full"))
	bare := mustCreate(t, s, jobs.Job{ID: "bare"})
	for _, c := range []struct {
		field      jobs.Field
		full, bare any
	}{
		{jobs.FieldStatus, full.Status, bare.Status},
		{jobs.FieldNextRunTime, *full.NextRunTime, nil},
		{jobs.FieldIfMissed, full.IfMissed, bare.IfMissed},
		{jobs.FieldMisfireThresholdSeconds, full.MisfireThresholdSeconds, 0},
		{jobs.FieldLastRunTime, *full.LastRunTime, nil},
		{jobs.FieldLastScheduledTime, *full.LastScheduledTime, nil},
		{jobs.FieldMetadata, full.Metadata, map[string]string(nil)},
		{jobs.FieldName, full.Name, ""},
		{jobs.FieldTriggerType, full.TriggerType, ""},
		{jobs.FieldTriggerArgs, full.TriggerArgs, json.RawMessage(nil)},
	} {
		for _, try := range []struct {
			id    string
			value any
			want  bool
		}{
			{"full", c.full, true},
			{"full", c.bare, false},
			{"bare", c.bare, true},
			{"bare", c.full, false},
		} {
			applied, _, err := s.CompareAndSwap(ctx(t), try.id, jobs.Changes{c.field: try.value}, jobs.Changes{jobs.FieldMisfireThresholdSeconds: 7})
			if err != nil || applied != try.want {
				t.Fatalf("CompareAndSwap(%s, %s = %v) = %v, %v; want %v", try.id, c.field, try.value, applied, err, try.want)
			}
			// Put the threshold back, so that the next expectations hold.
			restore := full.MisfireThresholdSeconds
			if try.id == "bare" {
				restore = 0
			}
			if _, err := s.Update(ctx(t), try.id, jobs.Changes{jobs.FieldMisfireThresholdSeconds: restore}); err != nil {
				t.Fatalf("Update: %v", err)
			}
		}
	}
	// Metadata compares as a whole map.
	applied, _, err := s.CompareAndSwap(ctx(t), "full", jobs.Changes{jobs.FieldMetadata: map[string]string{"tenant": "acme"}}, jobs.Changes{jobs.FieldName: "x"})
	if err != nil || applied {
		t.Fatalf("CompareAndSwap on part of the metadata = %v, %v; want not applied", applied, err)
	}
	// Empty metadata and trigger arguments are absent ones.
	applied, _, err = s.CompareAndSwap(ctx(t), "bare", jobs.Changes{jobs.FieldMetadata: map[string]string{}, jobs.FieldTriggerArgs: json.RawMessage{}}, jobs.Changes{jobs.FieldName: "x"})
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap on empty metadata = %v, %v; want applied", applied, err)
	}
	wantJob(t, "full after the swaps", mustGet(t, s, "full"), full)
}

// testCompareAndSwapRace has goroutines race to move a counter (the
// misfire threshold) from one value to the next, round after round:
// exactly one wins each round.
func testCompareAndSwapRace(t *testing.T, s jobs.Store) {
	const (
		racers = 16
		rounds = 20
	)
	mustCreate(t, s, jobs.Job{ID: "race"})
	var wins [rounds]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, racers)
	for racer := range racers {
		wg.Go(func() {
			name := fmt.Sprint("racer-", racer)
			for round := range rounds {
				applied, job, err := s.CompareAndSwap(ctx(t), "race",
					jobs.Changes{jobs.FieldMisfireThresholdSeconds: round},
					jobs.Changes{jobs.FieldMisfireThresholdSeconds: round + 1, jobs.FieldName: name})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s round %d: %w", name, round, err)
					return
				case applied && (job.MisfireThresholdSeconds != round+1 || job.Name != name):
					errs <- fmt.Errorf("%s won round %d but got %s", name, round, show(job))
					return
				case !applied && job.MisfireThresholdSeconds <= round:
					errs <- fmt.Errorf("%s lost round %d to a job still at %d", name, round, job.MisfireThresholdSeconds)
					return
				}
				if applied {
					wins[round].Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for round := range wins {
		if n := wins[round].Load(); n != 1 {
			t.Errorf("round %d had %d winners, want 1", round, n)
		}
	}
	if got := mustGet(t, s, "race").MisfireThresholdSeconds; got != rounds {
		t.Errorf("counter ended at %d, want %d", got, rounds)
	}
}
