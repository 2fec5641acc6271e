package durable

import (
	"reflect"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// A parent's turn records, in each child's start, the execution that
// scheduled the child.
func TestReplayChildStartRecordsParentExecution(t *testing.T) {
	history := historyJSON(t, `{"event_id":1,"execution_id":3,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"in","parent_instance":null,"parent_id":null}`)
	turn := replayTurn(t, reSubOrch("Child", "child-input"), history, nil)
	if len(turn.Commit.OrchestratorItems) != 1 {
		t.Fatalf("orchestrator items %v; want the child's start", turn.Commit.OrchestratorItems)
	}
	start, ok := turn.Commit.OrchestratorItems[0].(provider.StartOrchestrationItem)
	if !ok || start.ParentExecutionID != 3 || start.ExecutionID != provider.InitialExecutionID {
		t.Fatalf("child start %#v; want parent execution 3, execution 1", turn.Commit.OrchestratorItems[0])
	}
}

// A child's first turn copies the parent's execution from its start into
// its OrchestrationStarted event and its parent link; the runtime then
// addresses the result there without asking the provider.
func TestReplayChildFirstTurnCarriesParentExecution(t *testing.T) {
	msgs := messagesJSONL(t, `{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"in","version":null,"parent_instance":"p","parent_id":5,"execution_id":1,"parent_execution_id":3}}`)
	turn := replayTurn(t, reImmediate("done", nil), nil, msgs)
	if turn.Outcome != replay.Completed {
		t.Fatalf("outcome %v, want completed", turn.Outcome)
	}
	started, ok := turn.Commit.HistoryDelta[0].Kind.(provider.OrchestrationStarted)
	if !ok || started.ParentExecutionID != 3 {
		t.Fatalf("first event %#v; want OrchestrationStarted with parent execution 3", turn.Commit.HistoryDelta[0].Kind)
	}
	want := &replay.ParentLink{Instance: "p", EventID: 5, ExecutionID: 3}
	if !reflect.DeepEqual(turn.Parent, want) {
		t.Fatalf("parent link %+v, want %+v", turn.Parent, want)
	}
	// An empty store: a lookup would find no parent and answer execution 1.
	r := &Runtime{p: memprovider.New()}
	if err := r.notifyParent(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	items := turn.Commit.OrchestratorItems
	got, ok := items[len(items)-1].(provider.SubOrchCompletedItem)
	wantItem := provider.SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: 3, ParentID: 5, Result: "done"}
	if !ok || got != wantItem {
		t.Fatalf("notification %#v, want %#v", items[len(items)-1], wantItem)
	}
}

// A child's later turn takes the parent's execution from its history's
// OrchestrationStarted event; a history written without it leaves the
// link's execution unknown (0), for the runtime to look up.
func TestReplayChildLastTurnTakesParentExecutionFromHistory(t *testing.T) {
	const rest = `
{"event_id":2,"type":"ActivityScheduled","name":"A","input":"x"}`
	completed := messagesJSONL(t, `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"r"}}`)
	for _, tc := range []struct {
		name, started string
		want          uint64
	}{
		{"recorded", `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"in","parent_instance":"p","parent_id":5,"parent_execution_id":4}`, 4},
		{"absent", `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"in","parent_instance":"p","parent_id":5}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn := replayTurn(t, reSingleActivity("A", "x"), historyJSON(t, tc.started+rest), completed)
			want := &replay.ParentLink{Instance: "p", EventID: 5, ExecutionID: tc.want}
			if turn.Outcome != replay.Completed || !reflect.DeepEqual(turn.Parent, want) {
				t.Fatalf("outcome %v, parent link %+v; want completed, %+v", turn.Outcome, turn.Parent, want)
			}
		})
	}
}
