package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/dynamo"
	"github.com/dynoxide/dynoxide/dynamo/dynamotest"
	"github.com/dynoxide/dynoxide/provider"
)

// Signals for an instance that is locked when they arrive. The message they
// announce cannot be taken until the turn holding the lock ends; the
// process keeps the signal until then instead of dropping it, so the
// message is not left to the next sweep (an hour away in these tests; by
// default up to five minutes in an idle process, five seconds in a busy
// one).

// lockedSignalSetup returns a provider whose first sweep is done and whose
// next one is an hour away.
func lockedSignalSetup(t *testing.T, env *dynamotest.Env, meter *dynamotest.Meter) *dynamo.Provider {
	t.Helper()
	p := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) { o.SweepInterval = time.Hour }})
	if item, err := p.FetchOrchestrationItem(t.Context(), longLock, 10*time.Millisecond, nil); err != nil || item != nil {
		t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
	}
	return p
}

// awaitQueries waits until meter has counted more than n Queries (the
// meter counts a request once its response is in).
func awaitQueries(ctx context.Context, t *testing.T, meter *dynamotest.Meter, n int) {
	t.Helper()
	for meter.Usage().Requests["Query"] <= n {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for a Query: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fetchResult is what a background fetch returned.
type fetchResult struct {
	item *provider.OrchestrationItem
	err  error
}

func fetchInBackground(ctx context.Context, p *dynamo.Provider, pollTimeout time.Duration) <-chan fetchResult {
	done := make(chan fetchResult, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
		done <- fetchResult{item, err}
	}()
	return done
}

// TestEventRaisedDuringOwnTurnIsFetchedAfterTheAck: an event is raised to
// an instance while a fetch of the same process holds its turn. The ack
// of that turn hands the event's signal to the waiting fetch, which takes
// the event at once.
func TestEventRaisedDuringOwnTurnIsFetchedAfterTheAck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	p := lockedSignalSetup(t, env, meter)
	const inst = "raised-while-locked"
	first := startAndFetch(ctx, t, p, inst)

	waiting := fetchInBackground(ctx, p, 20*time.Second)
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0), "raise")
	// Whether or not the waiting fetch reads the instance (still locked),
	// the ack below must reach it.
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	r := <-waiting
	must(t, r.err, "waiting fetch")
	if r.item == nil || r.item.Instance != inst || len(r.item.Messages) != 1 {
		t.Fatalf("waiting fetch: got %+v, want the event raised to %s during its first turn", r.item, inst)
	}
}

// TestEventRaisedDuringAnotherProcessTurnIsFetchedAtLeaseEnd: the same with
// the turn held by another process, which does not know of the signal. The
// waiting process tries the instance again when the lease it read ends.
func TestEventRaisedDuringAnotherProcessTurnIsFetchedAtLeaseEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	waiter := lockedSignalSetup(t, env, meter)
	holder := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "raised-while-locked-elsewhere"
	must(t, holder.EnqueueForOrchestrator(ctx, startItem(inst), 0), "start")
	first, err := holder.FetchOrchestrationItem(ctx, 3*time.Second, 0, nil)
	if err != nil || first == nil {
		t.Fatalf("holder's fetch: %+v, %v", first, err)
	}
	before := meter.Usage().Requests["Query"]
	waiting := fetchInBackground(ctx, waiter, 20*time.Second)
	must(t, holder.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0), "raise")
	// The waiting process has read the instance while it was locked.
	awaitQueries(ctx, t, meter, before)
	must(t, holder.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	r := <-waiting
	must(t, r.err, "waiting fetch")
	if r.item == nil || r.item.Instance != inst || len(r.item.Messages) != 1 {
		t.Fatalf("waiting fetch: got %+v, want the event raised to %s during the other process's turn", r.item, inst)
	}
}
