package jobstest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// fullJob returns a job with every field set.
func fullJob(id string) jobs.Job {
	return jobs.Job{
		ID:                      id,
		Status:                  jobs.StatusScheduled,
		NextRunTime:             ptr(at(time.Hour)),
		IfMissed:                jobs.RunAll,
		MisfireThresholdSeconds: 30,
		LastRunTime:             ptr(at(-time.Minute + 5*time.Millisecond)),
		LastScheduledTime:       ptr(at(-time.Minute)),
		Metadata:                map[string]string{"tenant": "acme", "empty": "", "unicode": "é#\x00"},
		Name:                    "nightly report",
		TriggerType:             "cron",
		TriggerArgs:             json.RawMessage(`{"expr":"0 3 * * *","tz":"UTC"}`),
	}
}

func testCreateGet(t *testing.T, s jobs.Store) {
	want := fullJob("report")
	created := mustCreate(t, s, want)
	wantJob(t, "Create returned", created, want)
	wantJob(t, "Get", mustGet(t, s, "report"), want)

	minimal := jobs.Job{ID: "minimal", Status: jobs.StatusPaused, IfMissed: jobs.Skip}
	wantJob(t, "Create of a minimal job returned", mustCreate(t, s, minimal), minimal)
	wantJob(t, "Get of a minimal job", mustGet(t, s, "minimal"), minimal)
}

func testCreateDefaults(t *testing.T, s jobs.Store) {
	pending := mustCreate(t, s, jobs.Job{ID: "pending"})
	want := jobs.Job{ID: "pending", Status: jobs.StatusPending, IfMissed: jobs.Skip}
	wantJob(t, "Create without status or next run time", pending, want)
	wantJob(t, "Get", mustGet(t, s, "pending"), want)

	next := at(0)
	scheduled := mustCreate(t, s, jobs.Job{ID: "scheduled", NextRunTime: &next, IfMissed: jobs.RunOnce})
	want = jobs.Job{ID: "scheduled", Status: jobs.StatusScheduled, NextRunTime: &next, IfMissed: jobs.RunOnce}
	wantJob(t, "Create with a next run time and no status", scheduled, want)
	wantJob(t, "Get", mustGet(t, s, "scheduled"), want)
}

func testCreateDuplicate(t *testing.T, s jobs.Store) {
	first := mustCreate(t, s, fullJob("dup"))
	second := fullJob("dup")
	second.Name = "other"
	_, err := s.Create(ctx(t), second)
	wantErr(t, "second Create", err, jobs.ErrJobExists)
	wantJob(t, "Get after a duplicate create", mustGet(t, s, "dup"), first)
	wantCount(t, s, jobs.Filter{}, 1)
}

func testNotFound(t *testing.T, s jobs.Store) {
	mustCreate(t, s, fullJob("present"))
	for _, id := range []string{"absent", "", "present#", strings.Repeat("x", jobs.MaxIDBytes+1)} {
		_, err := s.Get(ctx(t), id)
		wantErr(t, "Get("+short(id)+")", err, jobs.ErrJobNotFound)
		_, err = s.Update(ctx(t), id, jobs.Changes{jobs.FieldName: "x"})
		wantErr(t, "Update("+short(id)+")", err, jobs.ErrJobNotFound)
		_, err = s.Update(ctx(t), id, jobs.Changes{})
		wantErr(t, "empty Update("+short(id)+")", err, jobs.ErrJobNotFound)
		applied, _, err := s.CompareAndSwap(ctx(t), id, jobs.Changes{}, jobs.Changes{jobs.FieldName: "x"})
		wantErr(t, "CompareAndSwap("+short(id)+")", err, jobs.ErrJobNotFound)
		if applied {
			t.Fatalf("CompareAndSwap(%s) of a missing job applied", short(id))
		}
		existed, err := s.Delete(ctx(t), id)
		if err != nil || existed {
			t.Fatalf("Delete(%s) = %v, %v; want false, nil", short(id), existed, err)
		}
	}
	wantCount(t, s, jobs.Filter{}, 1)
	wantJob(t, "Get after misses", mustGet(t, s, "present"), fullJob("present"))
}

// short abbreviates a long id for messages.
func short(id string) string {
	if len(id) > 20 {
		return fmt.Sprintf("%q…(%d bytes)", id[:10], len(id))
	}
	return fmt.Sprintf("%q", id)
}

func testUpdate(t *testing.T, s jobs.Store) {
	mustCreate(t, s, fullJob("u"))
	next := at(2 * time.Hour)
	updated, err := s.Update(ctx(t), "u", jobs.Changes{
		jobs.FieldStatus:                  jobs.StatusRunning,
		jobs.FieldNextRunTime:             next,
		jobs.FieldIfMissed:                jobs.RunOnce,
		jobs.FieldMisfireThresholdSeconds: 0,
		jobs.FieldLastRunTime:             nil,
		jobs.FieldLastScheduledTime:       at(time.Hour),
		jobs.FieldMetadata:                map[string]string{"tenant": "globex"},
		jobs.FieldName:                    "",
		jobs.FieldTriggerType:             "interval",
		jobs.FieldTriggerArgs:             json.RawMessage(`{"seconds":60}`),
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	want := jobs.Job{
		ID: "u", Status: jobs.StatusRunning, NextRunTime: &next, IfMissed: jobs.RunOnce,
		LastScheduledTime: ptr(at(time.Hour)), Metadata: map[string]string{"tenant": "globex"},
		TriggerType: "interval", TriggerArgs: json.RawMessage(`{"seconds":60}`),
	}
	wantJob(t, "Update returned", updated, want)
	wantJob(t, "Get after Update", mustGet(t, s, "u"), want)

	updated, err = s.Update(ctx(t), "u", jobs.Changes{
		jobs.FieldNextRunTime: nil, jobs.FieldMetadata: nil, jobs.FieldTriggerArgs: nil,
		jobs.FieldLastScheduledTime: nil, jobs.FieldStatus: jobs.StatusFailed,
	})
	if err != nil {
		t.Fatalf("second Update: %v", err)
	}
	want = jobs.Job{ID: "u", Status: jobs.StatusFailed, IfMissed: jobs.RunOnce, TriggerType: "interval"}
	wantJob(t, "Update clearing fields returned", updated, want)
	wantJob(t, "Get after clearing", mustGet(t, s, "u"), want)
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(10 * time.Hour))})
	wantIDs(t, s, jobs.Filter{}, "u")
}

func testUpdateEmpty(t *testing.T, s jobs.Store) {
	want := mustCreate(t, s, fullJob("e"))
	for _, changes := range []jobs.Changes{nil, {}} {
		got, err := s.Update(ctx(t), "e", changes)
		if err != nil {
			t.Fatalf("Update(%v): %v", changes, err)
		}
		wantJob(t, "empty Update returned", got, want)
	}
	wantJob(t, "Get after empty updates", mustGet(t, s, "e"), want)
}

func testDelete(t *testing.T, s jobs.Store) {
	mustCreate(t, s, fullJob("d"))
	mustCreate(t, s, fullJob("keep"))
	existed, err := s.Delete(ctx(t), "d")
	if err != nil || !existed {
		t.Fatalf("Delete = %v, %v; want true, nil", existed, err)
	}
	_, err = s.Get(ctx(t), "d")
	wantErr(t, "Get after Delete", err, jobs.ErrJobNotFound)
	existed, err = s.Delete(ctx(t), "d")
	if err != nil || existed {
		t.Fatalf("second Delete = %v, %v; want false, nil", existed, err)
	}
	wantIDs(t, s, jobs.Filter{}, "keep")
	wantCount(t, s, jobs.Filter{}, 1)
	// The id is free again.
	mustCreate(t, s, jobs.Job{ID: "d"})
	wantJob(t, "Get after re-create", mustGet(t, s, "d"), jobs.Job{ID: "d", Status: jobs.StatusPending, IfMissed: jobs.Skip})
}

func testTimesToTheMillisecond(t *testing.T, s jobs.Store) {
	fine := at(123456789 * time.Nanosecond)
	job := jobs.Job{ID: "ms", NextRunTime: &fine, LastRunTime: &fine, LastScheduledTime: &fine}
	created := mustCreate(t, s, job)
	trunc := fine.Truncate(time.Millisecond)
	want := jobs.Job{ID: "ms", Status: jobs.StatusScheduled, IfMissed: jobs.Skip, NextRunTime: &trunc, LastRunTime: &trunc, LastScheduledTime: &trunc}
	wantJob(t, "Create returned", created, want)
	got := mustGet(t, s, "ms")
	wantJob(t, "Get", got, want)
	if got.NextRunTime.Location() != time.UTC {
		t.Fatalf("read time in %v, want UTC", got.NextRunTime.Location())
	}
	// Expected values are compared at the same precision.
	later := at(time.Hour + 999999*time.Nanosecond)
	applied, after, err := s.CompareAndSwap(ctx(t), "ms", jobs.Changes{jobs.FieldNextRunTime: fine}, jobs.Changes{jobs.FieldNextRunTime: later})
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap on the nanosecond time = %v, %v; want applied", applied, err)
	}
	if want := later.Truncate(time.Millisecond); !after.NextRunTime.Equal(want) {
		t.Fatalf("next run time after CompareAndSwap = %v, want %v", after.NextRunTime, want)
	}
	// A bound within the same millisecond includes the job.
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour))}, "ms")
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour - time.Millisecond))})
	// The epoch is the earliest time kept.
	epoch := time.Unix(0, 0).UTC()
	mustCreate(t, s, jobs.Job{ID: "epoch", NextRunTime: &epoch})
	wantJob(t, "Get of the epoch", mustGet(t, s, "epoch"), jobs.Job{ID: "epoch", Status: jobs.StatusScheduled, IfMissed: jobs.Skip, NextRunTime: &epoch})
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: &epoch}, "epoch")
}

func testIDs(t *testing.T, s jobs.Store) {
	list := []string{
		"a", "a#b", "#JOB", "J#x", "~", "é", "nul\x00nul", " ",
		strings.Repeat("l", 1000), strings.Repeat("m", jobs.MaxIDBytes),
	}
	next := at(0)
	for _, id := range list {
		job := fullJob(id)
		job.NextRunTime = &next
		mustCreate(t, s, job)
	}
	for _, id := range list {
		job := fullJob(id)
		job.NextRunTime = &next
		wantJob(t, "Get("+short(id)+")", mustGet(t, s, id), job)
	}
	want := []string{" ", "#JOB", "J#x", "a", "a#b", strings.Repeat("l", 1000), strings.Repeat("m", jobs.MaxIDBytes), "nul\x00nul", "~", "é"}
	wantIDs(t, s, jobs.Filter{}, want...)
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: &next, Offset: 4, Limit: 4}, want[4:8]...)
	for _, id := range list {
		if existed, err := s.Delete(ctx(t), id); err != nil || !existed {
			t.Fatalf("Delete(%s) = %v, %v", short(id), existed, err)
		}
	}
	wantCount(t, s, jobs.Filter{}, 0)
}
