package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

func TestSchedulerPauseResume(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(startTime)
	store := jobs.NewMemoryStore()
	rec := newRecorder()
	s := newScheduler(t, store, clock)
	if err := s.Handle("tick", rec.action("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, cronJob(t, "j", "tick", "* * * * *")); err != nil {
		t.Fatal(err)
	}
	run(t, s)
	clock.Set(minute(1))
	if f := rec.await(t); !f.ScheduledTime.Equal(minute(1)) {
		t.Fatalf("fired %s", f.ScheduledTime)
	}
	if !clock.waitTimers(minute(2), 1, t.Context().Done()) {
		t.Fatal("not waiting for 00:02")
	}
	paused, err := s.Pause(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if paused.Status != jobs.StatusPaused || paused.NextRunTime != nil {
		t.Fatalf("paused job: %+v", paused)
	}
	clock.Set(minute(2))
	clock.Set(minute(3).Add(30 * time.Second))
	resumed, err := s.Resume(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Status != jobs.StatusScheduled || resumed.NextRunTime == nil || !resumed.NextRunTime.Equal(minute(4)) {
		t.Fatalf("resumed job: %+v", resumed)
	}
	again, err := s.Resume(ctx, "j")
	if err != nil || again.Status != jobs.StatusScheduled || !again.NextRunTime.Equal(minute(4)) {
		t.Fatalf("Resume of a scheduled job = %+v, %v; want it unchanged", again, err)
	}
	if !clock.waitTimers(minute(4), 1, t.Context().Done()) {
		t.Fatal("not waiting for 00:04 after the resume")
	}
	clock.Set(minute(4))
	if f := rec.await(t); !f.ScheduledTime.Equal(minute(4)) {
		t.Fatalf("fired %s after the resume; want 00:04 (nothing while paused)", f.ScheduledTime)
	}
	if _, err := s.Pause(ctx, "missing"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("Pause of a missing job = %v", err)
	}
	if _, err := s.Resume(ctx, "missing"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("Resume of a missing job = %v", err)
	}
	if ok, err := s.Remove(ctx, "j"); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
}

func TestSchedulerAddRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	store := jobs.NewMemoryStore()
	s := newScheduler(t, store, newFakeClock(startTime))
	if err := s.Handle("tick", func(context.Context, jobs.Fire) error { return nil }); err != nil {
		t.Fatal(err)
	}
	good := func() jobs.Job { return cronJob(t, "j", "tick", "* * * * *") }
	for _, tt := range []struct {
		name   string
		change func(*jobs.Job)
	}{
		{"malformed cron", func(j *jobs.Job) { j.TriggerArgs = json.RawMessage(`{"expr": "* * *"}`) }},
		{"unknown time zone", func(j *jobs.Job) {
			j.TriggerArgs = json.RawMessage(`{"expr": "* * * * *", "timezone": "Nowhere/Land"}`)
		}},
		{"unknown trigger", func(j *jobs.Job) { j.TriggerType = "sometimes" }},
		{"no trigger", func(j *jobs.Job) { j.TriggerType, j.TriggerArgs = "", nil }},
		{"interval of zero", func(j *jobs.Job) {
			j.TriggerType, j.TriggerArgs = jobs.TriggerInterval, json.RawMessage(`{"every_seconds": 0}`)
		}},
		{"unknown status", func(j *jobs.Job) { j.Status = "sleeping" }},
		{"running status", func(j *jobs.Job) { j.Status = jobs.StatusRunning }},
		{"unknown misfire policy", func(j *jobs.Job) { j.IfMissed = "sometimes" }},
		{"negative threshold", func(j *jobs.Job) { j.MisfireThresholdSeconds = -1 }},
		{"next run time not UTC", func(j *jobs.Job) { at := time.Now(); j.NextRunTime = &at }},
		{"unknown action", func(j *jobs.Job) { j.Name = "tock" }},
		{"empty id", func(j *jobs.Job) { j.ID = "" }},
		{"arguments not an object", func(j *jobs.Job) { j.TriggerArgs = json.RawMessage(`[]`) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := good()
			tt.change(&job)
			if got, err := s.Add(ctx, job); !errors.Is(err, jobs.ErrInvalidJob) {
				t.Fatalf("Add = %+v, %v; want an error wrapping ErrInvalidJob", got, err)
			}
			if n, err := store.Count(ctx, jobs.Filter{}); n != 0 || err != nil {
				t.Fatalf("the store holds %d jobs (%v); want none", n, err)
			}
		})
	}
	if _, err := s.Add(ctx, good()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, good()); !errors.Is(err, jobs.ErrJobExists) {
		t.Fatalf("Add of an existing id = %v", err)
	}
}

func TestNewSchedulerRefusesBadOptions(t *testing.T) {
	store := jobs.NewMemoryStore()
	for name, fn := range map[string]func(*jobs.SchedulerOptions){
		"negative concurrency": func(o *jobs.SchedulerOptions) { o.MaxConcurrent = -1 },
		"concurrency too high": func(o *jobs.SchedulerOptions) { o.MaxConcurrent = jobs.MaxMaxConcurrent + 1 },
		"lease too short":      func(o *jobs.SchedulerOptions) { o.Lease = time.Millisecond },
		"lease too long":       func(o *jobs.SchedulerOptions) { o.Lease = 25 * time.Hour },
	} {
		if _, err := jobs.NewScheduler(store, fn); !errors.Is(err, jobs.ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := jobs.NewScheduler(nil); !errors.Is(err, jobs.ErrInvalidOptions) {
		t.Errorf("nil store: %v", err)
	}
	s, err := jobs.NewScheduler(store)
	if err != nil {
		t.Fatal(err)
	}
	action := func(context.Context, jobs.Fire) error { return nil }
	if err := s.Handle("a", action); err != nil {
		t.Fatal(err)
	}
	if err := s.Handle("a", action); !errors.Is(err, jobs.ErrInvalidOptions) {
		t.Errorf("Handle twice: %v", err)
	}
	if err := s.Handle("", action); !errors.Is(err, jobs.ErrInvalidOptions) {
		t.Errorf("Handle without a name: %v", err)
	}
	if err := s.Handle("b", nil); !errors.Is(err, jobs.ErrInvalidOptions) {
		t.Errorf("Handle without an action: %v", err)
	}
}

// TestSchedulerDateJob fires a date job once; a failed run of a job without
// a next time leaves it failed, one with a next time keeps its schedule.
func TestSchedulerDateJobAndFailedRuns(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(startTime)
	store := jobs.NewMemoryStore()
	rec := newRecorder()
	s := newScheduler(t, store, clock)
	ok := rec.action("s")
	fails := func(ctx context.Context, f jobs.Fire) error {
		_ = ok(ctx, f)
		return errors.New("boom")
	}
	if err := errors.Join(s.Handle("ok", ok), s.Handle("fails", fails)); err != nil {
		t.Fatal(err)
	}
	for _, job := range []jobs.Job{
		{ID: "once", Name: "ok"},
		{ID: "once-failing", Name: "fails"},
	} {
		if err := jobs.SetTrigger(&job, jobs.DateArgs{At: minute(1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add(ctx, cronJob(t, "every-minute-failing", "fails", "* * * * *")); err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	clock.Set(minute(1))
	seen := map[string]bool{}
	for range 3 {
		seen[rec.await(t).Job.ID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("fired %v", seen)
	}
	stop() // the runs end their claims before Run returns
	for id, want := range map[string]struct {
		status jobs.Status
		next   *time.Time
	}{
		"once":                 {jobs.StatusScheduled, nil},
		"once-failing":         {jobs.StatusFailed, nil},
		"every-minute-failing": {jobs.StatusScheduled, ptr(minute(2))},
	} {
		job, err := store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if job.Status != want.status || (job.NextRunTime == nil) != (want.next == nil) || (want.next != nil && !job.NextRunTime.Equal(*want.next)) {
			t.Errorf("%s: status %s, next %v; want %s, %v", id, job.Status, job.NextRunTime, want.status, want.next)
		}
		if job.LastScheduledTime == nil || !job.LastScheduledTime.Equal(minute(1)) {
			t.Errorf("%s: last scheduled time %v", id, job.LastScheduledTime)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// countingStore counts the requests a scheduler makes.
type countingStore struct {
	jobs.Store
	mu      sync.Mutex
	counts  map[string]int
	queries chan struct{} // receives once per Query when not nil
}

func (c *countingStore) count(op string) {
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
}

func (c *countingStore) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := c.counts
	c.counts = map[string]int{}
	return counts
}

func (c *countingStore) Query(ctx context.Context, f jobs.Filter) ([]jobs.Job, error) {
	c.count("Query")
	defer func() {
		if c.queries != nil {
			c.queries <- struct{}{}
		}
	}()
	return c.Store.Query(ctx, f)
}

func (c *countingStore) CompareAndSwap(ctx context.Context, id string, expected, changes jobs.Changes) (bool, jobs.Job, error) {
	c.count("CompareAndSwap")
	return c.Store.CompareAndSwap(ctx, id, expected, changes)
}

func (c *countingStore) Get(ctx context.Context, id string) (jobs.Job, error) {
	c.count("Get")
	return c.Store.Get(ctx, id)
}

// TestSchedulerRequestsPerFire checks the request sequence of a fire: a
// Query of due jobs, a compare-and-swap to claim, a Query of the next run
// time, a compare-and-swap to end the claim; and none while waiting.
func TestSchedulerRequestsPerFire(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(startTime)
	store := &countingStore{Store: jobs.NewMemoryStore(), counts: map[string]int{}}
	rec := newRecorder()
	s := newScheduler(t, store, clock)
	if err := s.Handle("tick", rec.action("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, cronJob(t, "j", "tick", "* * * * *")); err != nil {
		t.Fatal(err)
	}
	run(t, s)
	if !clock.waitTimers(minute(1), 1, t.Context().Done()) {
		t.Fatal("not waiting for 00:01")
	}
	if got := store.take(); got["Query"] != 2 || len(got) != 1 {
		t.Fatalf("start: %v; want 2 Queries", got)
	}
	for k := 1; k <= 5; k++ {
		clock.Set(minute(k))
		rec.await(t)
		if !clock.waitTimers(minute(k+1), 1, t.Context().Done()) {
			t.Fatalf("not waiting for minute %d", k+1)
		}
		if got := store.take(); got["Query"] != 2 || got["CompareAndSwap"] != 2 || len(got) != 2 {
			t.Fatalf("minute %d: %v; want 2 Queries and 2 CompareAndSwaps", k, got)
		}
	}
}

// TestSchedulerWakesOnSignal: a job created in the store by another
// process, due now, fires once a schedule signal arrives, not before.
func TestSchedulerWakesOnSignal(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(startTime)
	store := &countingStore{Store: jobs.NewMemoryStore(), counts: map[string]int{}, queries: make(chan struct{}, 100)}
	signals, err := queues.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer signals.Close()
	rec := newRecorder()
	s := newScheduler(t, store, clock, func(o *jobs.SchedulerOptions) {
		o.Signals = signals
		o.MaxWait = -1
	})
	if err := s.Handle("tick", rec.action("s")); err != nil {
		t.Fatal(err)
	}
	run(t, s)
	// Started and looked (due jobs, next run time: none); without a
	// signal it would wait for ever.
	for range 2 {
		select {
		case <-store.queries:
		case <-time.After(fireTimeout):
			t.Fatal("the scheduler does not look at the store")
		}
	}
	job := cronJob(t, "j", "tick", "* * * * *")
	job.NextRunTime = ptr(startTime)
	if _, err := store.Store.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := signals.Notify(ctx, queues.Signal{Kind: queues.Schedule, VisibleAt: startTime}); err != nil {
		t.Fatal(err)
	}
	if f := rec.await(t); f.Job.ID != "j" || !f.ScheduledTime.Equal(startTime) {
		t.Fatalf("fired %+v", f)
	}
}
