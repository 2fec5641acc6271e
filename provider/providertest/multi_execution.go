package providertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

// multiExecutionTests returns the MultiExecution category.
func multiExecutionTests() []testCase {
	return []testCase{
		{"ExecutionIsolation", multiExecutionIsolation},
		{"LatestExecutionDetection", multiExecutionLatestDetection},
		{"ExecutionIDSequencing", multiExecutionIDSequencing},
		{"ContinueAsNewCreatesNewExecution", multiExecutionContinueAsNew},
		{"ExecutionHistoryPersistence", multiExecutionHistoryPersistence},
	}
}

// multiExecutionInstance is the instance the tests of this category use.
const multiExecutionInstance = "instance-A"

// multiExecutionStart is a start message of testOrchestration that names
// executionID.
func multiExecutionStart(instance string, executionID uint64) provider.StartOrchestrationItem {
	item := startItem(instance)
	item.ExecutionID = executionID
	return item
}

// multiExecutionTurn enqueues a start naming executionID, fetches it and
// acks history to that execution with metadata. It returns the execution id
// the fetch reported.
func multiExecutionTurn(ctx context.Context, t *testing.T, p provider.Provider, executionID uint64, history []provider.Event, meta provider.ExecutionMetadata) uint64 {
	t.Helper()
	enqueueOrch(ctx, t, p, multiExecutionStart(multiExecutionInstance, executionID), 0)
	item := managementFetch(ctx, t, p, multiExecutionInstance)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: executionID, HistoryDelta: history, Metadata: meta})
	return item.ExecutionID
}

// multiExecutionScheduled is event 1 of an execution: ActivityScheduled
// named name.
func multiExecutionScheduled(executionID uint64, name, input string) provider.Event {
	return event(1, multiExecutionInstance, executionID, provider.ActivityScheduled{Name: name, Input: input})
}

// multiExecutionWantKinds fails t unless history holds events of the given
// types, in order, all belonging to executionID.
func multiExecutionWantKinds(t *testing.T, history []provider.Event, executionID uint64, what string, types ...string) {
	t.Helper()
	got := make([]string, len(history))
	for i, e := range history {
		got[i] = e.Kind.EventType()
		if e.ExecutionID != executionID {
			t.Fatalf("%s: event %d has execution id %d, want %d", what, e.EventID, e.ExecutionID, executionID)
		}
	}
	wantEqual(t, got, types, what+": event types")
}

// multiExecutionWantActivity fails t unless history is the single
// ActivityScheduled event named name.
func multiExecutionWantActivity(t *testing.T, history []provider.Event, name, what string) {
	t.Helper()
	if len(history) != 1 {
		t.Fatalf("%s: got %d events, want 1", what, len(history))
	}
	k, ok := history[0].Kind.(provider.ActivityScheduled)
	if !ok {
		t.Fatalf("%s: got %s, want ActivityScheduled", what, history[0].Kind.EventType())
	}
	wantEqual(t, k.Name, name, what+": activity name")
}

// multiExecutionReadExecution reads one execution's history and fails t on
// error.
func multiExecutionReadExecution(ctx context.Context, t *testing.T, p provider.Provider, executionID uint64) []provider.Event {
	t.Helper()
	h, err := p.ReadWithExecution(ctx, multiExecutionInstance, executionID)
	must(t, err, fmt.Sprintf("ReadWithExecution(%s, %d)", multiExecutionInstance, executionID))
	return h
}

// multiExecutionIsolation checks that each execution keeps its own history
// and Read returns the latest one.
func multiExecutionIsolation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = multiExecutionInstance

	multiExecutionTurn(ctx, t, p, 1, []provider.Event{
		startedEvent(inst, 1),
		event(2, inst, 1, provider.ActivityScheduled{Name: "Activity1", Input: "input1"}),
		event(3, inst, 1, provider.OrchestrationCompleted{Output: "result1"}),
	}, provider.ExecutionMetadata{})
	multiExecutionTurn(ctx, t, p, 2, []provider.Event{
		startedEvent(inst, 2),
		event(2, inst, 2, provider.OrchestrationCompleted{Output: "result2"}),
	}, provider.ExecutionMetadata{})

	h1 := multiExecutionReadExecution(ctx, t, p, 1)
	multiExecutionWantKinds(t, h1, 1, "execution 1", "OrchestrationStarted", "ActivityScheduled", "OrchestrationCompleted")
	wantEqual(t, h1[2].Kind, provider.EventKind(provider.OrchestrationCompleted{Output: "result1"}), "execution 1: completion")

	h2 := multiExecutionReadExecution(ctx, t, p, 2)
	multiExecutionWantKinds(t, h2, 2, "execution 2", "OrchestrationStarted", "OrchestrationCompleted")
	wantEqual(t, h2[1].Kind, provider.EventKind(provider.OrchestrationCompleted{Output: "result2"}), "execution 2: completion")

	latest := readHistory(ctx, t, p, inst)
	multiExecutionWantKinds(t, latest, 2, "Read (latest execution)", "OrchestrationStarted", "OrchestrationCompleted")
	wantEqual(t, latest[1].Kind, provider.EventKind(provider.OrchestrationCompleted{Output: "result2"}), "Read (latest execution): completion")
}

// multiExecutionLatestDetection checks that Read returns the highest
// execution's history and ReadWithExecution an earlier one.
func multiExecutionLatestDetection(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	multiExecutionTurn(ctx, t, p, 1, []provider.Event{multiExecutionScheduled(1, "A", "")}, provider.ExecutionMetadata{})
	multiExecutionTurn(ctx, t, p, 2, []provider.Event{multiExecutionScheduled(2, "B", "")}, provider.ExecutionMetadata{})

	multiExecutionWantActivity(t, readHistory(ctx, t, p, multiExecutionInstance), "B", "Read (latest execution)")
	multiExecutionWantActivity(t, multiExecutionReadExecution(ctx, t, p, 1), "A", "ReadWithExecution(1)")
}

// multiExecutionIDSequencing checks that fetches report execution 1 until
// an ack creates execution 2, and 2 afterwards.
func multiExecutionIDSequencing(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = multiExecutionInstance

	got := multiExecutionTurn(ctx, t, p, 1, []provider.Event{startedEvent(inst, 1)}, startMetadata())
	wantEqual(t, got, uint64(1), "ExecutionID of the first fetch")

	// The fetch reports the current execution; the ack moves to the next.
	got = multiExecutionTurn(ctx, t, p, 2, []provider.Event{startedEvent(inst, 2)}, startMetadata())
	wantEqual(t, got, uint64(1), "ExecutionID of the fetch before execution 2 exists")

	enqueueOrch(ctx, t, p, multiExecutionStart(inst, 3), 0)
	item := managementFetch(ctx, t, p, inst)
	wantEqual(t, item.ExecutionID, uint64(2), "ExecutionID of the fetch after execution 2 was acked")
}

// multiExecutionContinueAsNew checks that acking a continue-as-new turn
// with execution id 2 creates execution 2, which later fetches and Read
// report.
func multiExecutionContinueAsNew(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = multiExecutionInstance

	createInstance(ctx, t, p, inst)

	enqueueOrch(ctx, t, p, provider.ContinueAsNewItem{
		Instance: inst, Orchestration: testOrchestration, Input: "new-input", Version: ptr(testVersion),
	}, 0)
	item := managementFetch(ctx, t, p, inst)
	wantEqual(t, item.ExecutionID, uint64(1), "ExecutionID of the fetch that carries ContinueAsNew")
	started := event(provider.InitialEventID, inst, 2, provider.OrchestrationStarted{
		Name: testOrchestration, Version: testVersion, Input: "new-input",
	})
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  2,
		HistoryDelta: []provider.Event{started},
		Metadata:     startMetadata(),
	})

	// Give the instance another turn; it belongs to execution 2.
	item = managementPoke(ctx, t, p, inst, "after-can")
	wantEqual(t, item.ExecutionID, uint64(2), "ExecutionID of the fetch after continue-as-new")
	wantEqual(t, eventIDs(item.History), []uint64{1}, "fetched history (execution 2's)")
	if k, ok := item.History[0].Kind.(provider.OrchestrationStarted); !ok || k.Input != "new-input" {
		t.Fatalf("fetched history: got %#v, want execution 2's OrchestrationStarted with input new-input", item.History[0].Kind)
	}

	latest := readHistory(ctx, t, p, inst)
	multiExecutionWantKinds(t, latest, 2, "Read after continue-as-new", "OrchestrationStarted")
	multiExecutionWantKinds(t, multiExecutionReadExecution(ctx, t, p, 1), 1, "execution 1 after continue-as-new", "OrchestrationStarted")
}

// multiExecutionHistoryPersistence checks that three executions' histories
// all stay readable, each on its own.
func multiExecutionHistoryPersistence(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	for id := uint64(1); id <= 3; id++ {
		multiExecutionTurn(ctx, t, p, id, []provider.Event{
			multiExecutionScheduled(id, fmt.Sprintf("Activity-%d", id), fmt.Sprintf("input-%d", id)),
		}, provider.ExecutionMetadata{})
	}
	for id := uint64(1); id <= 3; id++ {
		multiExecutionWantActivity(t, multiExecutionReadExecution(ctx, t, p, id), fmt.Sprintf("Activity-%d", id), fmt.Sprintf("ReadWithExecution(%d)", id))
	}
	multiExecutionWantActivity(t, readHistory(ctx, t, p, multiExecutionInstance), "Activity-3", "Read (latest execution)")
}
