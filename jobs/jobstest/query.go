package jobstest

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
)

// fleet creates jobs of various statuses, times and metadata:
//
//	id  status     next run   metadata
//	a   scheduled  +2h        tenant=t1 tier=gold
//	b   scheduled  +1h        tenant=t2
//	c   paused     none       tenant=t1
//	d   running    +1h        tenant=t1 tier=gold
//	e   pending    none       (none)
//	f   failed     none       tenant=t2 tier=gold
//	g   scheduled  +3h        tenant=t1 tier=""
//	h   scheduled  -1h        tenant=t1
func fleet(t *testing.T, s jobs.Store) {
	t.Helper()
	type row struct {
		id       string
		status   jobs.Status
		next     *time.Time
		metadata map[string]string
	}
	for _, r := range []row{
		{"a", jobs.StatusScheduled, ptr(at(2 * time.Hour)), map[string]string{"tenant": "t1", "tier": "gold"}},
		{"b", jobs.StatusScheduled, ptr(at(time.Hour)), map[string]string{"tenant": "t2"}},
		{"c", jobs.StatusPaused, nil, map[string]string{"tenant": "t1"}},
		{"d", jobs.StatusRunning, ptr(at(time.Hour)), map[string]string{"tenant": "t1", "tier": "gold"}},
		{"e", jobs.StatusPending, nil, nil},
		{"f", jobs.StatusFailed, nil, map[string]string{"tenant": "t2", "tier": "gold"}},
		{"g", jobs.StatusScheduled, ptr(at(3 * time.Hour)), map[string]string{"tenant": "t1", "tier": ""}},
		{"h", jobs.StatusScheduled, ptr(at(-time.Hour)), map[string]string{"tenant": "t1"}},
	} {
		mustCreate(t, s, jobs.Job{ID: r.id, Status: r.status, NextRunTime: r.next, Metadata: r.metadata})
	}
}

func testQueryOrder(t *testing.T, s jobs.Store) {
	wantIDs(t, s, jobs.Filter{})
	fleet(t, s)
	wantIDs(t, s, jobs.Filter{}, "h", "b", "d", "a", "g", "c", "e", "f")
}

func testQueryStatus(t *testing.T, s jobs.Store) {
	fleet(t, s)
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}}, "h", "b", "a", "g")
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusPaused, jobs.StatusFailed, jobs.StatusRunning}}, "d", "c", "f")
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusPending}}, "e")
	// Moving a job out of a status moves it out of the result.
	if _, err := s.Update(ctx(t), "e", jobs.Changes{jobs.FieldStatus: jobs.StatusPaused}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusPending}})
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusPaused}}, "c", "e")
}

func testQueryNextRunTime(t *testing.T, s jobs.Store) {
	fleet(t, s)
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(-2 * time.Hour))})
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(-time.Hour))}, "h")
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour - time.Millisecond))}, "h")
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour))}, "h", "b", "d")
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(100 * time.Hour))}, "h", "b", "d", "a", "g")
	// Moving a job's next run time moves it in and out of the result.
	if _, err := s.Update(ctx(t), "g", jobs.Changes{jobs.FieldNextRunTime: at(-3 * time.Hour)}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := s.Update(ctx(t), "h", jobs.Changes{jobs.FieldNextRunTime: nil}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	wantIDs(t, s, jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour))}, "g", "b", "d")
	wantIDs(t, s, jobs.Filter{}, "g", "b", "d", "a", "c", "e", "f", "h")
}

func testQueryMetadata(t *testing.T, s jobs.Store) {
	fleet(t, s)
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"tenant": "t1"}}, "h", "d", "a", "g", "c")
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"tenant": "t1", "tier": "gold"}}, "d", "a")
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"tier": ""}}, "g")
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"tier": "gold"}}, "d", "a", "f")
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"tenant": "t3"}})
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{"nope": ""}})
	wantIDs(t, s, jobs.Filter{Metadata: map[string]string{}}, "h", "b", "d", "a", "g", "c", "e", "f")
}

func testQueryCombined(t *testing.T, s jobs.Store) {
	fleet(t, s)
	wantIDs(t, s, jobs.Filter{
		Status:         []jobs.Status{jobs.StatusScheduled, jobs.StatusRunning},
		NextRunTimeLTE: ptr(at(2 * time.Hour)),
		Metadata:       map[string]string{"tenant": "t1"},
	}, "h", "d", "a")
	wantIDs(t, s, jobs.Filter{
		Status:         []jobs.Status{jobs.StatusScheduled},
		NextRunTimeLTE: ptr(at(2 * time.Hour)),
		Metadata:       map[string]string{"tier": "gold"},
	}, "a")
	wantIDs(t, s, jobs.Filter{
		Status:         []jobs.Status{jobs.StatusScheduled},
		NextRunTimeLTE: ptr(at(10 * time.Hour)),
		Metadata:       map[string]string{"tenant": "t1"},
		Offset:         1,
		Limit:          2,
	}, "a", "g")
	wantIDs(t, s, jobs.Filter{Status: []jobs.Status{jobs.StatusFailed}, NextRunTimeLTE: ptr(at(10 * time.Hour))})
}

func testQueryLimitOffset(t *testing.T, s jobs.Store) {
	fleet(t, s)
	all := []string{"h", "b", "d", "a", "g", "c", "e", "f"}
	for limit := 0; limit <= len(all)+1; limit++ {
		for offset := 0; offset <= len(all)+1; offset++ {
			from := min(offset, len(all))
			to := len(all)
			if limit > 0 {
				to = min(from+limit, len(all))
			}
			wantIDs(t, s, jobs.Filter{Limit: limit, Offset: offset}, all[from:to]...)
		}
	}
	wantIDs(t, s, jobs.Filter{Offset: 1000})
	wantIDs(t, s, jobs.Filter{Offset: 2, Limit: 2, Status: []jobs.Status{jobs.StatusScheduled}}, "a", "g")
	wantIDs(t, s, jobs.Filter{Offset: 4, Limit: 2, Status: []jobs.Status{jobs.StatusScheduled}})
}

func testCount(t *testing.T, s jobs.Store) {
	wantCount(t, s, jobs.Filter{}, 0)
	fleet(t, s)
	for _, c := range []struct {
		filter jobs.Filter
		want   int
	}{
		{jobs.Filter{}, 8},
		{jobs.Filter{Limit: 1, Offset: 5}, 8},
		{jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}}, 4},
		{jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled, jobs.StatusPending}}, 5},
		{jobs.Filter{NextRunTimeLTE: ptr(at(time.Hour))}, 3},
		{jobs.Filter{NextRunTimeLTE: ptr(at(-10 * time.Hour))}, 0},
		{jobs.Filter{Metadata: map[string]string{"tenant": "t1"}}, 5},
		{jobs.Filter{Metadata: map[string]string{"tenant": "t1"}, Status: []jobs.Status{jobs.StatusScheduled}, NextRunTimeLTE: ptr(at(2 * time.Hour))}, 2},
		{jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}, NextRunTimeLTE: ptr(at(2 * time.Hour))}, 3},
	} {
		wantCount(t, s, c.filter, c.want)
		got, err := s.Query(ctx(t), jobs.Filter{Status: c.filter.Status, NextRunTimeLTE: c.filter.NextRunTimeLTE, Metadata: c.filter.Metadata})
		if err != nil || len(got) != c.want {
			t.Fatalf("Query(%+v) returned %d jobs (%v), want %d as counted", c.filter, len(got), err, c.want)
		}
	}
}
