// Package jobstest is the conformance suite of [jobs.Store]
// implementations: [Run] checks a store against the contract of package
// jobs (creates, reads, updates, deletes, queries with every filter,
// ordering, limits and offsets, counts, compare-and-swap and its races,
// pagination over many large jobs, validation of every input, and copies).
package jobstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// Factory returns a new, empty store for one test. It may register
// cleanups with t.
type Factory func(t *testing.T) jobs.Store

// Run runs the suite on the stores newStore returns, one fresh store per
// subtest. Subtests run in parallel.
func Run(t *testing.T, newStore Factory) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}

// cases lists the suite's tests.
var cases = []struct {
	name string
	run  func(t *testing.T, s jobs.Store)
}{
	{"CreateGet", testCreateGet},
	{"CreateDefaults", testCreateDefaults},
	{"CreateDuplicate", testCreateDuplicate},
	{"NotFound", testNotFound},
	{"Update", testUpdate},
	{"UpdateEmpty", testUpdateEmpty},
	{"Delete", testDelete},
	{"TimesToTheMillisecond", testTimesToTheMillisecond},
	{"IDs", testIDs},
	{"QueryOrder", testQueryOrder},
	{"QueryStatus", testQueryStatus},
	{"QueryNextRunTime", testQueryNextRunTime},
	{"QueryMetadata", testQueryMetadata},
	{"QueryCombined", testQueryCombined},
	{"QueryLimitOffset", testQueryLimitOffset},
	{"Count", testCount},
	{"CompareAndSwap", testCompareAndSwap},
	{"CompareAndSwapEachField", testCompareAndSwapEachField},
	{"CompareAndSwapRace", testCompareAndSwapRace},
	{"Pagination", testPagination},
	{"InvalidCreate", testInvalidCreate},
	{"InvalidChanges", testInvalidChanges},
	{"InvalidFilter", testInvalidFilter},
	{"Copies", testCopies},
}

// at returns a UTC time on a fixed day, offset by d.
func at(d time.Duration) time.Time {
	return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Add(d)
}

// ptr returns a pointer to t.
func ptr(t time.Time) *time.Time { return &t }

// ctx returns the test's context.
func ctx(t *testing.T) context.Context { return t.Context() }

// Equal reports whether two jobs hold the same values: times compared with
// time.Time.Equal, empty and nil metadata and trigger arguments alike.
func Equal(a, b jobs.Job) bool {
	return a.ID == b.ID && a.Status == b.Status && a.IfMissed == b.IfMissed &&
		a.MisfireThresholdSeconds == b.MisfireThresholdSeconds &&
		sameTime(a.NextRunTime, b.NextRunTime) && sameTime(a.LastRunTime, b.LastRunTime) &&
		sameTime(a.LastScheduledTime, b.LastScheduledTime) &&
		maps.Equal(a.Metadata, b.Metadata) && a.Name == b.Name && a.TriggerType == b.TriggerType &&
		bytes.Equal(a.TriggerArgs, b.TriggerArgs)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// show formats a job for failure messages.
func show(j jobs.Job) string {
	tm := func(t *time.Time) string {
		if t == nil {
			return "nil"
		}
		return t.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{id %q status %s next %s if_missed %s threshold %d last_run %s last_sched %s metadata %v name %q trigger %q %s}",
		j.ID, j.Status, tm(j.NextRunTime), j.IfMissed, j.MisfireThresholdSeconds, tm(j.LastRunTime),
		tm(j.LastScheduledTime), j.Metadata, j.Name, j.TriggerType, j.TriggerArgs)
}

// wantJob fails t unless got equals want.
func wantJob(t *testing.T, what string, got, want jobs.Job) {
	t.Helper()
	if !Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

// mustCreate creates job and fails t on error.
func mustCreate(t *testing.T, s jobs.Store, job jobs.Job) jobs.Job {
	t.Helper()
	created, err := s.Create(ctx(t), job)
	if err != nil {
		t.Fatalf("Create(%q): %v", job.ID, err)
	}
	return created
}

// mustGet gets the job with id and fails t on error.
func mustGet(t *testing.T, s jobs.Store, id string) jobs.Job {
	t.Helper()
	job, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return job
}

// wantErr fails t unless err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want one wrapping %v", what, err, target)
	}
}

// ids returns the ids of jobs in order.
func ids(list []jobs.Job) []string {
	out := make([]string, len(list))
	for i, j := range list {
		out[i] = j.ID
	}
	return out
}

// wantIDs runs a query and fails t unless it returns the jobs with want
// ids, in that order, each equal to what Get returns.
func wantIDs(t *testing.T, s jobs.Store, filter jobs.Filter, want ...string) {
	t.Helper()
	got, err := s.Query(ctx(t), filter)
	if err != nil {
		t.Fatalf("Query(%+v): %v", filter, err)
	}
	if fmt.Sprint(ids(got)) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("Query(%+v) = %q, want %q", filter, ids(got), want)
	}
	if got == nil {
		t.Fatalf("Query(%+v) returned a nil slice", filter)
	}
	for _, job := range got {
		wantJob(t, "queried job against Get", job, mustGet(t, s, job.ID))
	}
}

// wantCount runs a count and fails t unless it is want.
func wantCount(t *testing.T, s jobs.Store, filter jobs.Filter, want int) {
	t.Helper()
	got, err := s.Count(ctx(t), filter)
	if err != nil {
		t.Fatalf("Count(%+v): %v", filter, err)
	}
	if got != want {
		t.Fatalf("Count(%+v) = %d, want %d", filter, got, want)
	}
}
