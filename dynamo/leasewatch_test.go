package dynamo_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// Work held by a process that stops (killed, its host lost) comes back to
// the ready index when its lease ends, and no signal announces it then.
// These tests check that another process takes it as soon as the lease
// allows, rather than at a sweep an interval later: the holder here simply
// never renews nor acks, as a killed process does. The sweep interval of
// the process that takes over is an hour, and its fetch waits 20 s, so
// only the lease's end can bring it the work.

// watchedLease is the lease the stopped holder takes.
const watchedLease = 3 * time.Second

// TestSweepWatchesAnotherProcesssActivityLease: a worker sweep's Scan shows
// the activity another process holds, and brings the process's next sweep
// forward to the lease's end, which claims it (attempt 2) with no sweep in
// between. The activity this process then holds brings no sweep forward.
func TestSweepWatchesAnotherProcesssActivityLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	// Written and claimed without signals, as by processes without queues.
	writer := env.NewQuietWriter(t, dynamotest.Config{ShortPoll: true})
	act := provider.ActivityExecuteItem{Instance: "watched", ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}
	must(t, writer.EnqueueForWorker(ctx, act), "EnqueueForWorker")
	held, err := writer.FetchWorkItem(ctx, watchedLease, 0, nil, provider.AnyTag())
	if err != nil || held == nil {
		t.Fatalf("the holder's fetch: %+v, %v", held, err)
	}

	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	w, err := p.FetchWorkItem(ctx, longLock, 20*time.Second, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if w == nil || w.Item.Instance != act.Instance || w.AttemptCount != 2 {
		t.Fatalf("the fetch got %+v; want the stopped holder's activity, attempt 2, once its lease ended", w)
	}
	if n := meter.Reset().Requests["Scan"]; n != 2 {
		t.Errorf("%d Scans; want 2: the first sweep, which saw the lease, and the one its end brought forward", n)
	}
	if !w.LeaseExpiry.After(held.LeaseExpiry) {
		t.Errorf("took the activity under a lease ending %v, not after the holder's %v", w.LeaseExpiry, held.LeaseExpiry)
	}

	// Its own lease is no other process's: nothing brings a sweep forward.
	w2, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, nil, provider.AnyTag())
	if err != nil || w2 != nil {
		t.Fatalf("a fetch of the empty queue: %+v, %v", w2, err)
	}
	if u := meter.Usage(); u.Requests["Scan"] != 0 {
		t.Errorf("a fetch beside this process's own lease made %v; want no sweep (the next is an hour away)", u.Requests)
	}
}

// TestSweptInstanceLockedElsewhereIsTriedAtLeaseEnd: a sweep finds an
// instance whose turn another process locked; the process tries it again
// when that lease ends and takes the turn (its messages' second attempt).
func TestSweptInstanceLockedElsewhereIsTriedAtLeaseEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{ShortPoll: true})
	const inst = "locked-elsewhere"
	must(t, writer.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")
	held, err := writer.FetchOrchestrationItem(ctx, watchedLease, 0, nil)
	if err != nil || held == nil {
		t.Fatalf("the holder's fetch: %+v, %v", held, err)
	}

	p := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	item, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != inst || item.AttemptCount != 2 {
		t.Fatalf("the fetch got %+v; want the turn of %q, attempt 2, once the holder's lease ended", item, inst)
	}
	if !item.LeaseExpiry.After(held.LeaseExpiry) {
		t.Errorf("took the turn under a lease ending %v, not after the holder's %v", item.LeaseExpiry, held.LeaseExpiry)
	}
}

// TestHandedActivityReportsItsLease: an activity handed to a waiting fetch
// reports the lease the turn's transaction wrote, which counts from the
// ack's clock read, before the transaction: never a later end than that.
func TestHandedActivityReportsItsLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true})
	const inst = "handed-lease"
	turn := startAndFetch(ctx, t, p, inst)
	done := waitingWorkerFetch(ctx, t, p)
	before := time.Now()
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	after := time.Now()
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil {
		t.Fatal("the waiting fetch got nothing")
	}
	// Stored in whole milliseconds.
	earliest, latest := before.Add(longLock).Truncate(time.Millisecond), after.Add(longLock)
	if got := r.w.LeaseExpiry; got.Before(earliest) || got.After(latest) {
		t.Fatalf("the handed activity's lease ends %v; want between %v and %v (the ack's span plus the lock timeout)", got, earliest, latest)
	}
}

// TestExpiredLeasesGoToEveryWaitingFetch: a stopped holder's activities
// come back together when their leases end. The sweep that takes one hands
// the others to the process's other waiting fetches at once, although they
// became eligible a moment ago (a fresh row's signal would be on its way;
// an expired lease's never comes), instead of leaving them to sweeps an
// interval apart.
func TestExpiredLeasesGoToEveryWaitingFetch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	// The holder's clock stands still, so that its leases end at one
	// instant however far apart a loaded machine runs its claims: leases
	// ending apart come back at sweeps of their own, as they should.
	frozen := time.Now()
	writer := env.NewQuietWriter(t, dynamotest.Config{ShortPoll: true, Shards: 1, Options: func(o *dynamo.Options) {
		o.Now = func() time.Time { return frozen }
	}})
	const n = 3
	for i := range n {
		must(t, writer.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: fmt.Sprintf("expired-%d", i), ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "EnqueueForWorker")
	}
	// All n claimed: their leases end together.
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if w, err := writer.FetchWorkItem(ctx, watchedLease, 0, nil, provider.AnyTag()); err != nil || w == nil {
				t.Errorf("the holder's fetch: %+v, %v", w, err)
			}
		})
	}
	wg.Wait()

	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	got := make(chan string, n)
	for range n {
		wg.Go(func() {
			w, err := p.FetchWorkItem(ctx, longLock, 20*time.Second, nil, provider.AnyTag())
			if err != nil || w == nil || w.AttemptCount != 2 {
				t.Errorf("a waiting fetch got %+v, %v; want a stopped holder's activity, attempt 2", w, err)
				return
			}
			got <- w.Item.Instance
		})
	}
	wg.Wait()
	close(got)
	seen := map[string]bool{}
	for inst := range got {
		seen[inst] = true
	}
	if len(seen) != n {
		t.Errorf("the fetches took %v; want each of the %d activities once", seen, n)
	}
	if s := meter.Usage().Requests["Scan"]; s > 2 {
		t.Errorf("%d Scans; want at most 2 (the first sweep and the one the leases' end brought forward): the others went to the waiting fetches", s)
	}
}
