package jobstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// Sizes of the pagination test: enough jobs that a store reading in pages
// of a few dozen needs many, each large enough that reading all of them
// moves more than half a megabyte.
const (
	pageJobs      = 160
	pageArgsBytes = 4 << 10
)

// testPagination stores many large jobs and reads them back whole, by
// windows of Limit and Offset, and filtered.
func testPagination(t *testing.T, s jobs.Store) {
	args := json.RawMessage(`{"pad":"` + strings.Repeat("p", pageArgsBytes) + `"}`)
	want := createPageJobs(t, s, args)
	all := pageOrder(want)
	checkWholeRead(t, s, all, args)
	checkWindows(t, s, all)
	checkFilteredPages(t, s, all)
	checkDuePoll(t, s, all)
}

// createPageJobs creates the pagination test's jobs, a few at a time, and
// returns their ids in creation order. Every job carries args and a
// "parity" metadata value; most have a next run time, several sharing each.
func createPageJobs(t *testing.T, s jobs.Store, args json.RawMessage) []string {
	want := make([]string, pageJobs)
	var wg sync.WaitGroup
	errs := make(chan error, pageJobs)
	sem := make(chan struct{}, 8)
	for i := range pageJobs {
		id := fmt.Sprintf("job-%03d", i)
		want[i] = id
		job := jobs.Job{ID: id, TriggerArgs: args, Metadata: map[string]string{"parity": fmt.Sprint(i % 2)}}
		if i%10 != 9 {
			// Several jobs share each next run time; the last of every ten
			// has none.
			job.NextRunTime = ptr(at(time.Duration(i/3) * time.Second))
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := s.Create(ctx(t), job); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Create: %v", err)
	}
	return want
}

// pageOrder sorts the pagination test's job ids into the order a store
// returns them: jobs with a next run time by time then id (ids follow times
// here), then the others by id. The steps of [testPagination] all compare
// against it.
func pageOrder(list []string) []string {
	var timed, untimed []string
	for _, id := range list {
		var i int
		fmt.Sscanf(id, "job-%d", &i)
		if i%10 == 9 {
			untimed = append(untimed, id)
		} else {
			timed = append(timed, id)
		}
	}
	return append(timed, untimed...)
}

// checkWholeRead reads every job in one query and checks the order, the
// large trigger arguments and the count: the read that must span many of
// the store's pages.
func checkWholeRead(t *testing.T, s jobs.Store, all []string, args json.RawMessage) {
	got, err := s.Query(ctx(t), jobs.Filter{})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if !slices.Equal(ids(got), all) {
		t.Fatalf("Query returned %d jobs %q, want %d %q", len(got), ids(got), len(all), all)
	}
	for _, job := range got {
		if string(job.TriggerArgs) != string(args) {
			t.Fatalf("job %s read back with %d bytes of trigger arguments, want %d", job.ID, len(job.TriggerArgs), len(args))
		}
	}
	wantCount(t, s, jobs.Filter{}, pageJobs)
}

// checkWindows checks that windows of Limit and Offset walk through every
// job once, in order.
func checkWindows(t *testing.T, s jobs.Store, all []string) {
	var walked []string
	for offset := 0; ; offset += 37 {
		page, err := s.Query(ctx(t), jobs.Filter{Offset: offset, Limit: 37})
		if err != nil {
			t.Fatalf("Query(offset %d): %v", offset, err)
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, ids(page)...)
	}
	if !slices.Equal(walked, all) {
		t.Fatalf("windows of 37 walked %q, want %q", walked, all)
	}
}

// checkFilteredPages checks a metadata filter whose matches are spread
// across the store's pages, whole and by a window.
func checkFilteredPages(t *testing.T, s jobs.Store, all []string) {
	var odd []string
	for _, id := range all {
		var i int
		fmt.Sscanf(id, "job-%d", &i)
		if i%2 == 1 {
			odd = append(odd, id)
		}
	}
	filter := jobs.Filter{Metadata: map[string]string{"parity": "1"}}
	got, err := s.Query(ctx(t), filter)
	if err != nil || !slices.Equal(ids(got), odd) {
		t.Fatalf("Query(%+v) = %q, %v; want %q", filter, ids(got), err, odd)
	}
	wantCount(t, s, filter, len(odd))
	filter.Offset, filter.Limit = 50, 10
	got, err = s.Query(ctx(t), filter)
	if err != nil || !slices.Equal(ids(got), odd[50:60]) {
		t.Fatalf("Query(%+v) = %q, %v; want %q", filter, ids(got), err, odd[50:60])
	}
}

// checkDuePoll checks the scheduler's due-job poll: jobs at or before a
// time, all of them and the earliest few.
func checkDuePoll(t *testing.T, s jobs.Store, all []string) {
	bound := at(40 * time.Second)
	var due []string
	for _, id := range all {
		var i int
		fmt.Sscanf(id, "job-%d", &i)
		if i%10 != 9 && i/3 <= 40 {
			due = append(due, id)
		}
	}
	got, err := s.Query(ctx(t), jobs.Filter{NextRunTimeLTE: &bound})
	if err != nil || !slices.Equal(ids(got), due) {
		t.Fatalf("Query(due by %v) = %q, %v; want %q", bound, ids(got), err, due)
	}
	wantCount(t, s, jobs.Filter{NextRunTimeLTE: &bound}, len(due))
	got, err = s.Query(ctx(t), jobs.Filter{NextRunTimeLTE: &bound, Limit: 5})
	if err != nil || !slices.Equal(ids(got), due[:5]) {
		t.Fatalf("Query(due by %v, limit 5) = %q, %v; want %q", bound, ids(got), err, due[:5])
	}
}
