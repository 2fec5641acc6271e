package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

// startTime is the fake clocks' start: half a minute before the first
// minute of a job due every minute.
var startTime = time.Date(2025, 1, 1, 0, 0, 30, 0, time.UTC)

// minute returns the k-th minute after midnight of startTime's day.
func minute(k int) time.Time { return time.Date(2025, 1, 1, 0, k, 0, 0, time.UTC) }

// fireTimeout bounds the real time a test waits for a fire that should
// come; reaching it fails the test (a deadlock), it measures nothing.
const fireTimeout = 30 * time.Second

// recorder is an action that counts fires per job and scheduled time and
// passes each on.
type recorder struct {
	mu    sync.Mutex
	fires map[string]int
	by    map[string]int // fires per scheduler
	ch    chan jobs.Fire
}

func newRecorder() *recorder {
	return &recorder{fires: map[string]int{}, by: map[string]int{}, ch: make(chan jobs.Fire, 1000)}
}

func fireKey(id string, at time.Time) string { return id + "@" + at.Format(time.RFC3339Nano) }

// action returns the action of scheduler owner.
func (r *recorder) action(owner string) jobs.Action {
	return func(ctx context.Context, f jobs.Fire) error {
		r.mu.Lock()
		r.fires[fireKey(f.Job.ID, f.ScheduledTime)]++
		r.by[owner]++
		r.mu.Unlock()
		r.ch <- f
		return nil
	}
}

func (r *recorder) await(t *testing.T) jobs.Fire {
	t.Helper()
	select {
	case f := <-r.ch:
		return f
	case <-time.After(fireTimeout):
		t.Fatal("no fire came")
		return jobs.Fire{}
	}
}

// newScheduler returns a scheduler on store and clock with a lease of 5
// minutes, so that a lease end (at which the scheduler also waits) is
// never the next minute a test waits for.
func newScheduler(t *testing.T, store jobs.Store, clock jobs.Clock, optFns ...func(*jobs.SchedulerOptions)) *jobs.Scheduler {
	t.Helper()
	s, err := jobs.NewScheduler(store, append([]func(*jobs.SchedulerOptions){func(o *jobs.SchedulerOptions) {
		o.Clock = clock
		o.Logger = testlog.New(t)
		o.Lease = 5 * time.Minute
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs s until the returned stop is called (or the test ends).
func run(t *testing.T, s *jobs.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cronJob returns a job of action name firing on expr.
func cronJob(t *testing.T, id, name, expr string) jobs.Job {
	t.Helper()
	job := jobs.Job{ID: id, Name: name}
	if err := jobs.SetTrigger(&job, jobs.CronArgs{Expr: expr}); err != nil {
		t.Fatal(err)
	}
	return job
}

func TestSchedulersFireEachTimeOnce(t *testing.T) {
	testSchedulersFireEachTimeOnce(t, jobs.NewMemoryStore(), nil)
}

// testSchedulersFireEachTimeOnce runs three schedulers on store for 100
// simulated minutes of a job due every minute: each minute fires once.
// With signals (which the store sends), all three wait for every minute.
func testSchedulersFireEachTimeOnce(t *testing.T, store jobs.Store, signals *queues.Signals) {
	ctx := context.Background()
	clock := newFakeClock(startTime)
	rec := newRecorder()
	var members []member
	for i := range 3 {
		members = append(members, member{owner: fmt.Sprintf("s%d", i), clock: clock, signals: signals})
	}
	scheds, stops := runEveryMinute(t, store, rec, members)
	const minutes = 100
	for k := 1; k <= minutes; k++ {
		clock.Set(minute(k))
		if f := rec.await(t); !f.ScheduledTime.Equal(minute(k)) {
			t.Fatalf("fire for %s at minute %d", f.ScheduledTime, k)
		}
	}
	for _, s := range scheds {
		if err := s.Run(ctx); !errors.Is(err, jobs.ErrSchedulerRunning) {
			t.Fatalf("a second Run = %v", err)
		}
	}
	for _, stop := range stops {
		stop() // every run ends before the counts are read
	}
	if len(rec.ch) != 0 {
		t.Fatalf("%d more fires after the last minute", len(rec.ch))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.fires) != minutes {
		t.Fatalf("%d scheduled times fired; want %d", len(rec.fires), minutes)
	}
	for k := 1; k <= minutes; k++ {
		if n := rec.fires[fireKey("every-minute", minute(k))]; n != 1 {
			t.Errorf("minute %d fired %d times", k, n)
		}
	}
	t.Logf("fires per scheduler: %v", rec.by)
}

// member is one of the schedulers runEveryMinute starts.
type member struct {
	owner   string
	clock   jobs.Clock
	signals *queues.Signals
}

// runEveryMinute starts a scheduler on store for each member, recording
// its fires in rec, adds a job due every minute through the first, and
// returns the schedulers and their stops.
func runEveryMinute(t *testing.T, store jobs.Store, rec *recorder, members []member) (scheds []*jobs.Scheduler, stops []func()) {
	t.Helper()
	for _, m := range members {
		s := newScheduler(t, store, m.clock, func(o *jobs.SchedulerOptions) {
			o.Owner = m.owner
			o.Signals = m.signals
		})
		if err := s.Handle("tick", rec.action(m.owner)); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	if _, err := scheds[0].Add(context.Background(), cronJob(t, "every-minute", "tick", "* * * * *")); err != nil {
		t.Fatal(err)
	}
	for _, s := range scheds {
		stops = append(stops, run(t, s))
	}
	return scheds, stops
}
