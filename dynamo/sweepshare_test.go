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

// TestWorkerSlotsShareOneSweep: a runtime's worker slots are a session
// owner each. Owners that hold no session see the same rows, and share one
// sweep per interval: eight owners waiting on an empty queue made eight
// sweeps, now one (with 16 shards and a busy index, 8 x 16 Queries every
// interval where 16 do). An owner that holds a session sweeps on its own
// schedule, at once when it comes to hold one, so that an activity of its
// session whose signal was lost is still found by a sweep; the others do
// not sweep again.
func TestWorkerSlotsShareOneSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	const owners = 8
	config := func(slot int) *provider.SessionFetchConfig {
		return &provider.SessionFetchConfig{OwnerID: fmt.Sprintf("slot-%d", slot), LockTimeout: time.Minute}
	}
	// fetchAll runs a fetch of every owner at once.
	fetchAll := func(pollTimeout time.Duration) []*provider.LockedWorkItem {
		t.Helper()
		got := make([]*provider.LockedWorkItem, owners)
		errs := make([]error, owners)
		var wg sync.WaitGroup
		for slot := range owners {
			wg.Go(func() {
				got[slot], errs[slot] = p.FetchWorkItem(ctx, longLock, pollTimeout, config(slot), provider.AnyTag())
			})
		}
		wg.Wait()
		for slot, err := range errs {
			must(t, err, fmt.Sprintf("fetch of slot-%d", slot))
		}
		return got
	}
	sweeps := func(u dynamotest.Usage) int { return u.Requests["Scan"] + u.Requests["Query"] }

	for slot, w := range fetchAll(300 * time.Millisecond) {
		if w != nil {
			t.Fatalf("slot-%d fetched %+v from an empty queue", slot, w.Item)
		}
	}
	if used := meter.Reset(); sweeps(used) != 1 {
		t.Fatalf("eight owners' fetches of an empty queue made %d sweep requests (%v); want 1: owners without sessions share a sweep", sweeps(used), used.Requests)
	}

	// slot-0 takes an activity of session s-1 (signalled), and holds it.
	first := provider.ActivityExecuteItem{Instance: "sessions", ExecutionID: 1, ID: 1, Name: "S", SessionID: ptr("s-1")}
	must(t, p.EnqueueForWorker(ctx, first), "EnqueueForWorker (signalled)")
	w, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, config(0), provider.AnyTag())
	if err != nil || w == nil || w.Item.ID != first.ID {
		t.Fatalf("slot-0's fetch of a signalled session activity: %+v, %v", w, err)
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, nil), "ack")
	// The session's next activity is written by a process without queues:
	// no signal reaches this one.
	lost := first
	lost.ID = 2
	must(t, writer.EnqueueForWorker(ctx, lost), "EnqueueForWorker (no signal)")
	meter.Reset()
	// slot-0 returns as soon as its sweep finds the row; the window only
	// bounds a loaded machine's scheduling of that sweep, claim and read.
	for slot, w := range fetchAll(5 * time.Second) {
		switch {
		case slot == 0 && (w == nil || w.Item.ID != lost.ID):
			t.Fatalf("slot-0, which holds session s-1, fetched %+v; want activity %d of the session, found by its own sweep", w, lost.ID)
		case slot != 0 && w != nil:
			t.Fatalf("slot-%d fetched %+v; want nothing (session s-1 is slot-0's)", slot, w.Item)
		}
	}
	if used := meter.Usage(); sweeps(used) != 1 {
		t.Errorf("%d sweep requests (%v); want 1, slot-0's: the owners without sessions swept a moment ago", sweeps(used), used.Requests)
	}
}
