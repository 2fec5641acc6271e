package dynamo_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// TestCompletionWindowGathersCompletions: a turn committed with a
// completion window (provider.TurnCommit.CompletionWindow) holds this
// process's fetches back from its instance until the window ends; the
// completions that arrive meanwhile are announced, set aside, and taken
// together by one turn after it.
func TestCompletionWindowGathersCompletions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	p := lockedSignalSetup(t, env, meter)
	const inst = "fan-in"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, activities(inst, 3)), "first turn")
	completed := func(id uint64) provider.WorkItem {
		return provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: "r"}
	}
	must(t, p.EnqueueForOrchestrator(ctx, completed(2), 0), "first completion")
	second, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
	if err != nil || second == nil || second.Instance != inst || len(second.Messages) != 1 {
		t.Fatalf("second turn's fetch: %+v, %v; want the first completion", second, err)
	}

	const window = time.Second
	began := time.Now()
	commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), CompletionWindow: window,
		HistoryDelta: []provider.Event{ev(5, inst, provider.ActivityCompleted{Result: "r"})}}
	commit.HistoryDelta[0].SourceEventID = ptr(uint64(2))
	must(t, p.AckOrchestrationItem(ctx, second.LockToken, commit), "second turn")
	waiting := fetchInBackground(ctx, p, 20*time.Second)
	must(t, p.EnqueueForOrchestrator(ctx, completed(3), 0), "second completion")
	must(t, p.EnqueueForOrchestrator(ctx, completed(4), 0), "third completion")
	r := <-waiting
	must(t, r.err, "third turn's fetch")
	if r.item == nil || r.item.Instance != inst || len(r.item.Messages) != 2 {
		t.Fatalf("third turn's fetch: %+v; want both completions that arrived in the window", r.item)
	}
	if waited := time.Since(began); waited < window {
		t.Errorf("the third turn came %v after the second's commit began, inside its %v window", waited, window)
	}
}
