package jobstest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// spoil changes every field of job that shares memory with others.
func spoil(job jobs.Job) {
	for _, t := range []*time.Time{job.NextRunTime, job.LastRunTime, job.LastScheduledTime} {
		if t != nil {
			*t = t.Add(time.Hour)
		}
	}
	for key := range job.Metadata {
		job.Metadata[key] = "spoiled"
	}
	if job.Metadata != nil {
		job.Metadata["added"] = "spoiled"
	}
	for i := range job.TriggerArgs {
		job.TriggerArgs[i] = ' '
	}
}

// testCopies checks that no job passed in or returned shares memory with
// the store.
func testCopies(t *testing.T, s jobs.Store) {
	want := fullJob("c")
	in := fullJob("c")
	created := mustCreate(t, s, in)
	spoil(in)
	spoil(created)
	wantJob(t, "Get after spoiling the created and returned jobs", mustGet(t, s, "c"), want)

	spoil(mustGet(t, s, "c"))
	list, err := s.Query(ctx(t), jobs.Filter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("Query = %d jobs, %v", len(list), err)
	}
	spoil(list[0])
	wantJob(t, "Get after spoiling read jobs", mustGet(t, s, "c"), want)

	metadata := map[string]string{"tenant": "other"}
	args := []byte(`{"x":1}`)
	updated, err := s.Update(ctx(t), "c", jobs.Changes{jobs.FieldMetadata: metadata, jobs.FieldTriggerArgs: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	metadata["tenant"] = "spoiled"
	args[1] = ' '
	spoil(updated)
	want.Metadata = map[string]string{"tenant": "other"}
	want.TriggerArgs = json.RawMessage(`{"x":1}`)
	wantJob(t, "Get after spoiling the changes and the updated job", mustGet(t, s, "c"), want)

	expected := map[string]string{"tenant": "other"}
	applied, swapped, err := s.CompareAndSwap(ctx(t), "c", jobs.Changes{jobs.FieldMetadata: expected}, jobs.Changes{jobs.FieldName: "n"})
	if err != nil || !applied {
		t.Fatalf("CompareAndSwap = %v, %v", applied, err)
	}
	spoil(swapped)
	want.Name = "n"
	wantJob(t, "Get after spoiling the swapped job", mustGet(t, s, "c"), want)
	applied, current, err := s.CompareAndSwap(ctx(t), "c", jobs.Changes{jobs.FieldName: "other"}, jobs.Changes{jobs.FieldName: "m"})
	if err != nil || applied {
		t.Fatalf("CompareAndSwap = %v, %v; want not applied", applied, err)
	}
	spoil(current)
	wantJob(t, "Get after spoiling the job a failed swap returned", mustGet(t, s, "c"), want)
}
