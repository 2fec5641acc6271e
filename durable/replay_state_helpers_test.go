package durable

import (
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// ---- src/runtime/state_helpers.rs (unit tests) ----
//
// duroxide's HistoryManager (what an execution's history says: identity,
// input, parent, terminal state, history plus delta) and WorkItemReader
// (what a batch of messages says: start item, continue-as-new, completions)
// have no Go counterpart: the engine reads history and messages itself
// (classify, resolveStart, appendStart). Each test checks the same fact
// through a turn: what the code sees, the delta, the metadata, the parent
// link and the outcome. Status strings are the client's derivation from
// history (statusFromHistory), the Go home of HistoryManager::status.

// shStarted is duroxide's fixture start event, for the harness's
// orchestration.
const shStarted = `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`

// shSeen is what the orchestration code saw.
type shSeen struct {
	ran                  bool
	input, name, version string
	execution            uint64
}

// shObserve records what the code sees, then runs then (nil: wait for an
// event that never comes).
func shObserve(seen *shSeen, then rxOrch) rxOrch {
	return func(ctx *OrchestrationContext, input string) (string, error) {
		*seen = shSeen{ran: true, input: input, name: ctx.Name(), version: ctx.Version(), execution: ctx.ExecutionID()}
		if then != nil {
			return then(ctx, input)
		}
		_, err := WaitForEvent[Raw](ctx, "never").Get(ctx)
		return "", err
	}
}

// shReturnInput completes with the input.
func shReturnInput(_ *OrchestrationContext, input string) (string, error) { return input, nil }

// shTwoVersions registers orch as TestOrch 1.0.0 and 2.0.0 (the latest is
// the default).
func shTwoVersions(t *testing.T, orch rxOrch) func(*replay.Input) {
	t.Helper()
	reg, err := NewRegistry(OrchestrationFunc(testOrch, orch, Version("1.0.0")), OrchestrationFunc(testOrch, orch, Version("2.0.0")))
	if err != nil {
		t.Fatal(err)
	}
	return func(in *replay.Input) { in.Resolve = reg.resolve }
}

// shStartedEvent returns the delta's first event as OrchestrationStarted.
func shStartedEvent(t *testing.T, turn *replay.Turn) (provider.Event, provider.OrchestrationStarted) {
	t.Helper()
	if len(turn.Commit.HistoryDelta) == 0 {
		t.Fatalf("empty delta, want OrchestrationStarted first")
	}
	ev := turn.Commit.HistoryDelta[0]
	started, ok := ev.Kind.(provider.OrchestrationStarted)
	if !ok {
		t.Fatalf("delta starts with %s, want OrchestrationStarted", ev.Kind.EventType())
	}
	return ev, started
}

// shIDs lists the event ids of history followed by a turn's delta.
func shIDs(history []provider.Event, turn *replay.Turn) []uint64 {
	var out []uint64
	for _, evs := range [][]provider.Event{history, turn.Commit.HistoryDelta} {
		for _, ev := range evs {
			out = append(out, ev.EventID)
		}
	}
	return out
}

// shStatus derives the instance's state from history plus a turn's delta.
func shStatus(history []provider.Event, turn *replay.Turn) *Status {
	return statusFromHistory(testInstance, append(slices.Clone(history), turn.Commit.HistoryDelta...))
}

// shNothingToRun checks a turn with neither history nor a start item: no
// orchestration is known, nothing runs, nothing is written.
func shNothingToRun(t *testing.T, turn *replay.Turn, seen *shSeen) {
	t.Helper()
	if turn.Outcome != replay.Drained || turn.Name != "" || seen.ran {
		t.Fatalf("outcome %v name %q ran %v, want a drained turn without an orchestration", turn.Outcome, turn.Name, seen.ran)
	}
	if len(turn.Commit.HistoryDelta) != 0 || len(turn.Commit.OrchestratorItems) != 0 || len(turn.Commit.WorkerItems) != 0 {
		t.Fatalf("commit %+v, want empty", turn.Commit)
	}
}

const (
	shStartMsg  = `{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"test-input","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`
	shCompleted = `{"event_id":2,"type":"OrchestrationCompleted","output":"success"}`
	shFailed    = `{"event_id":2,"type":"OrchestrationFailed","details":{"Application":{"kind":"OrchestrationFailed","message":"boom","retryable":false}}}`
	shLateEvent = `{"ExternalRaised":{"instance":"test-instance","name":"late","data":"x"}}`
)

var shCases = []struct {
	name string
	run  func(t *testing.T)
}{
	{"test_history_reader_from_empty_history", func(t *testing.T) {
		// An empty history names no orchestration: with nothing to start,
		// there is nothing to run.
		var seen shSeen
		shNothingToRun(t, replayTurn(t, shObserve(&seen, nil), nil, nil), &seen)
		// It is not terminal: a start item runs the code, and the
		// execution is Running.
		turn := replayTurn(t, shObserve(&seen, nil), nil, messagesJSONL(t, shStartMsg))
		if turn.Outcome != replay.Continue || !seen.ran || turn.Commit.Metadata.Status != "" {
			t.Fatalf("outcome %v ran %v status %q, want a running execution", turn.Outcome, seen.ran, turn.Commit.Metadata.Status)
		}
		if s := shStatus(nil, turn); s.State != StateRunning {
			t.Fatalf("state %v, want Running", s.State)
		}
	}},
	{"test_history_reader_from_started_only", func(t *testing.T) {
		var seen shSeen
		history := historyJSON(t, shStarted)
		turn := replayTurn(t, shObserve(&seen, nil), history, nil)
		want := shSeen{ran: true, input: "test-input", name: testOrch, version: "1.0.0", execution: 1}
		if seen != want {
			t.Fatalf("code saw %+v, want %+v", seen, want)
		}
		if turn.Outcome != replay.Continue || turn.Name != testOrch || turn.Version != "1.0.0" || turn.Commit.ExecutionID != 1 {
			t.Fatalf("turn outcome %v %s %s execution %d", turn.Outcome, turn.Name, turn.Version, turn.Commit.ExecutionID)
		}
		if s := shStatus(history, turn); s.State != StateRunning || s.ExecutionID != 1 {
			t.Fatalf("state %v execution %d, want Running 1", s.State, s.ExecutionID)
		}
	}},
	{"test_history_reader_completed", func(t *testing.T) {
		// A completed execution is terminal: a late message is drained
		// without running the code.
		var seen shSeen
		history := historyJSON(t, shStarted+"\n"+shCompleted)
		turn := replayTurn(t, shObserve(&seen, nil), history, messagesJSONL(t, shLateEvent))
		if turn.Outcome != replay.Drained || seen.ran || len(turn.Commit.HistoryDelta) != 0 {
			t.Fatalf("outcome %v ran %v delta %v, want drained", turn.Outcome, seen.ran, deltaTypes(turn))
		}
		if s := shStatus(history, turn); s.State != StateCompleted || s.Output != "success" {
			t.Fatalf("state %v output %q, want Completed success", s.State, s.Output)
		}
	}},
	{"test_history_reader_failed", func(t *testing.T) {
		var seen shSeen
		history := historyJSON(t, shStarted+"\n"+shFailed)
		turn := replayTurn(t, shObserve(&seen, nil), history, messagesJSONL(t, shLateEvent))
		if turn.Outcome != replay.Drained || seen.ran || len(turn.Commit.HistoryDelta) != 0 {
			t.Fatalf("outcome %v ran %v delta %v, want drained", turn.Outcome, seen.ran, deltaTypes(turn))
		}
		if s := shStatus(history, turn); s.State != StateFailed || s.Failure == nil || s.Failure.DisplayMessage() != "boom" {
			t.Fatalf("state %v failure %v, want Failed boom", s.State, s.Failure)
		}
	}},
	{"test_history_reader_continued_as_new", func(t *testing.T) {
		// The most recent execution decides: over duroxide's three events
		// (execution 1 continued as new, execution 2 started) the instance
		// runs execution 2.
		multi := historyJSON(t, shStarted+`
{"event_id":2,"type":"OrchestrationContinuedAsNew","input":"input2"}
{"event_id":3,"execution_id":2,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"input2","parent_instance":null,"parent_id":null}`)
		if s := statusFromHistory(testInstance, multi); s.State != StateRunning || s.ExecutionID != 2 {
			t.Fatalf("state %v execution %d, want Running 2", s.State, s.ExecutionID)
		}
		// The turn that starts execution 2 from execution 1's history runs
		// the code with execution 2's input, and execution 2 is running.
		var seen shSeen
		history := multi[:2]
		turn := replayTurn(t, shObserve(&seen, nil), history, messagesJSONL(t,
			`{"ContinueAsNew":{"instance":"test-instance","orchestration":"TestOrch","input":"input2","version":null,"carry_forward_events":[]}}`))
		if seen.input != "input2" || seen.execution != 2 || turn.Commit.ExecutionID != 2 || turn.Outcome != replay.Continue {
			t.Fatalf("code saw %+v, turn execution %d outcome %v", seen, turn.Commit.ExecutionID, turn.Outcome)
		}
		ev, started := shStartedEvent(t, turn)
		if ev.EventID != 1 || ev.ExecutionID != 2 || started.Input != "input2" {
			t.Fatalf("start event %+v", ev)
		}
	}},
	{"test_history_reader_with_parent", func(t *testing.T) {
		// The parent link comes from the start event in history.
		history := historyJSON(t, `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test","parent_instance":"parent-instance","parent_id":42}`)
		turn := replayTurn(t, shReturnInput, history, nil)
		if turn.Outcome != replay.Completed || turn.Parent == nil || *turn.Parent != (replay.ParentLink{Instance: "parent-instance", EventID: 42}) {
			t.Fatalf("outcome %v parent %+v", turn.Outcome, turn.Parent)
		}
		turn.NotifyParent(1)
		want := []provider.WorkItem{provider.SubOrchCompletedItem{ParentInstance: "parent-instance", ParentExecutionID: 1, ParentID: 42, Result: "test"}}
		if !slices.Equal(turn.Commit.OrchestratorItems, want) {
			t.Fatalf("orchestrator items %+v, want %+v", turn.Commit.OrchestratorItems, want)
		}
	}},
	{"test_workitem_reader_with_start", func(t *testing.T) {
		// The start item names the orchestration, input, version and
		// parent; the other message is a completion (here one for a
		// schedule that does not exist, which fails the execution).
		var seen shSeen
		turn := replayTurn(t, shObserve(&seen, nil), nil, messagesJSONL(t, `
{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"test-input","version":"1.0.0","parent_instance":"parent","parent_id":42,"execution_id":1}}
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"result"}}`))
		ev, started := shStartedEvent(t, turn)
		if ev.EventID != 1 || ev.ExecutionID != 1 || started.Name != testOrch || started.Input != "test-input" || started.Version != "1.0.0" ||
			started.ParentInstance == nil || *started.ParentInstance != "parent" || started.ParentID == nil || *started.ParentID != 42 {
			t.Fatalf("start event %+v", ev)
		}
		if m := turn.Commit.Metadata; m.OrchestrationName != testOrch || m.OrchestrationVersion != "1.0.0" || m.ParentInstanceID != "parent" {
			t.Fatalf("metadata %+v", m)
		}
		if turn.Commit.ExecutionID != 1 || turn.Parent == nil || *turn.Parent != (replay.ParentLink{Instance: "parent", EventID: 42}) {
			t.Fatalf("execution %d parent %+v, want a first execution with parent 42", turn.Commit.ExecutionID, turn.Parent)
		}
		if got := failureMessage(turn); got != "nondeterministic: no matching schedule for completion id=1" || seen.ran {
			t.Fatalf("failure %q ran %v, want the completion read as one", got, seen.ran)
		}
		if got := deltaTypes(turn); !slices.Equal(got, []string{"OrchestrationStarted", "OrchestrationFailed"}) {
			t.Fatalf("delta %v", got)
		}
	}},
	{"test_workitem_reader_with_can", func(t *testing.T) {
		// A continue-as-new item starts the next execution, with its
		// input and version and no parent.
		var seen shSeen
		orch := shObserve(&seen, nil)
		turn := replayTurn(t, orch, nil, messagesJSONL(t,
			`{"ContinueAsNew":{"instance":"test-instance","orchestration":"TestOrch","input":"new-input","version":"2.0.0","carry_forward_events":[]}}`),
			shTwoVersions(t, orch))
		want := shSeen{ran: true, input: "new-input", name: testOrch, version: "2.0.0", execution: 2}
		if seen != want {
			t.Fatalf("code saw %+v, want %+v", seen, want)
		}
		ev, started := shStartedEvent(t, turn)
		if ev.ExecutionID != 2 || started.Name != testOrch || started.Input != "new-input" || started.Version != "2.0.0" ||
			started.ParentInstance != nil || started.ParentID != nil {
			t.Fatalf("start event %+v", ev)
		}
		if turn.Commit.ExecutionID != 2 || turn.Parent != nil || turn.Commit.Metadata.ParentInstanceID != "" {
			t.Fatalf("execution %d parent %+v metadata %+v", turn.Commit.ExecutionID, turn.Parent, turn.Commit.Metadata)
		}
	}},
	{"test_workitem_reader_completion_only", func(t *testing.T) {
		// Without a start item the identity comes from history, the
		// version included (not the registry's latest), and both messages
		// are completions. duroxide's completions refer to ids 1 and 2
		// without schedules; here they complete schedules 2 and 3.
		var seen shSeen
		orch := shObserve(&seen, func(ctx *OrchestrationContext, input string) (string, error) {
			a := CallActivity[Raw](ctx, "task", Raw("{}"))
			tm := ctx.CreateTimer(time.Second)
			r, err := a.Get(ctx)
			if err != nil {
				return "", err
			}
			if _, err := tm.Get(ctx); err != nil {
				return "", err
			}
			return string(r), nil
		})
		history := historyJSON(t, `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":"parent-inst","parent_id":42}
{"event_id":2,"type":"ActivityScheduled","name":"task","input":"{}"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`)
		turn := replayTurn(t, orch, history, messagesJSONL(t, `
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}
{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1000}}`),
			shTwoVersions(t, orch))
		want := shSeen{ran: true, input: "test-input", name: testOrch, version: "1.0.0", execution: 1}
		if seen != want {
			t.Fatalf("code saw %+v, want %+v", seen, want)
		}
		if got := xeDescribe(turn); !slices.Equal(got, []string{"4 ActivityCompleted<-2", "5 TimerFired<-3", "6 OrchestrationCompleted"}) {
			t.Fatalf("delta %v", got)
		}
		if turn.Outcome != replay.Completed || turn.Output != "result" || turn.Version != "1.0.0" || turn.Commit.ExecutionID != 1 {
			t.Fatalf("outcome %v output %q version %s execution %d", turn.Outcome, turn.Output, turn.Version, turn.Commit.ExecutionID)
		}
		if turn.Parent == nil || *turn.Parent != (replay.ParentLink{Instance: "parent-inst", EventID: 42}) {
			t.Fatalf("parent %+v", turn.Parent)
		}
		if m := turn.Commit.Metadata; m.OrchestrationName != "" || m.OrchestrationVersion != "" {
			t.Fatalf("metadata %+v, want no identity on a later turn", m)
		}
	}},
	{"test_workitem_reader_empty_messages", func(t *testing.T) {
		var seen shSeen
		shNothingToRun(t, replayTurn(t, shObserve(&seen, nil), nil, nil), &seen)
	}},
	{"test_workitem_reader_duplicate_start", func(t *testing.T) {
		// Only the first start item counts (the second names an
		// orchestration that is not even registered).
		var seen shSeen
		turn := replayTurn(t, shObserve(&seen, shReturnInput), nil, messagesJSONL(t, `
{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"input1","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}
{"StartOrchestration":{"instance":"test-instance","orchestration":"SecondOrch","input":"input2","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`))
		if seen.input != "input1" || seen.name != testOrch {
			t.Fatalf("code saw %+v", seen)
		}
		_, started := shStartedEvent(t, turn)
		if started.Name != testOrch || started.Input != "input1" {
			t.Fatalf("start event %+v", started)
		}
		if got := deltaTypes(turn); !slices.Equal(got, []string{"OrchestrationStarted", "OrchestrationCompleted"}) || turn.Output != "input1" {
			t.Fatalf("delta %v output %q", got, turn.Output)
		}
	}},
	{"test_full_history_len", func(t *testing.T) {
		// History plus delta is the whole execution: ids run on from the
		// history into the delta without a gap.
		turn := replayTurn(t, shReturnInput, nil, messagesJSONL(t, shStartMsg))
		if got := shIDs(nil, turn); !slices.Equal(got, []uint64{1, 2}) {
			t.Fatalf("ids %v, want [1 2]", got)
		}
		history := historyJSON(t, shStarted)
		turn = replayTurn(t, shReturnInput, history, nil)
		if got := shIDs(history, turn); !slices.Equal(got, []uint64{1, 2}) || deltaTypes(turn)[0] != "OrchestrationCompleted" {
			t.Fatalf("ids %v delta %v, want [1 2] ending with OrchestrationCompleted", got, deltaTypes(turn))
		}
	}},
	{"test_is_full_history_empty", func(t *testing.T) {
		// Empty history and empty delta: nothing to run.
		var seen shSeen
		shNothingToRun(t, replayTurn(t, shObserve(&seen, nil), nil, nil), &seen)
		// A history: the code runs over it.
		seen = shSeen{}
		if turn := replayTurn(t, shObserve(&seen, nil), historyJSON(t, shStarted), nil); !seen.ran || turn.Outcome != replay.Continue {
			t.Fatalf("ran %v outcome %v over a history", seen.ran, turn.Outcome)
		}
		// No history but a start event in the delta: the code runs over it.
		seen = shSeen{}
		turn := replayTurn(t, shObserve(&seen, nil), nil, messagesJSONL(t, shStartMsg))
		if !seen.ran || seen.input != "test-input" || turn.Outcome != replay.Continue || deltaTypes(turn)[0] != "OrchestrationStarted" {
			t.Fatalf("ran %v input %q outcome %v delta %v", seen.ran, seen.input, turn.Outcome, deltaTypes(turn))
		}
	}},
	{"test_full_history_iter", func(t *testing.T) {
		// The code replays history first, then the delta: it schedules
		// while replaying and receives the delta's completion live.
		var replaying []bool
		orch := func(ctx *OrchestrationContext, _ string) (string, error) {
			replaying = append(replaying, ctx.IsReplaying())
			r, err := CallActivity[Raw](ctx, "task", Raw("{}")).Get(ctx)
			replaying = append(replaying, ctx.IsReplaying())
			return string(r), err
		}
		history := historyJSON(t, shStarted+`
{"event_id":2,"type":"ActivityScheduled","name":"task","input":"{}"}`)
		turn := replayTurn(t, orch, history, messagesJSONL(t, `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"done"}}`))
		if !slices.Equal(replaying, []bool{true, false}) {
			t.Fatalf("replaying %v, want [true false]", replaying)
		}
		if got := xeDescribe(turn); !slices.Equal(got, []string{"3 ActivityCompleted<-2", "4 OrchestrationCompleted"}) || turn.Output != "done" {
			t.Fatalf("delta %v output %q", got, turn.Output)
		}
		if got := shIDs(history, turn); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
			t.Fatalf("ids %v", got)
		}
	}},
	{"test_workitem_reader_can_carry_forward_prepended", func(t *testing.T) {
		// Carried-forward messages are delivered before a message that
		// arrived with the continue-as-new item, in their order.
		orch := func(ctx *OrchestrationContext, _ string) (string, error) {
			var out []string
			for _, q := range []string{"X", "Y", "X"} {
				v, err := Dequeue[Raw](ctx, q).Get(ctx)
				if err != nil {
					return "", err
				}
				out = append(out, string(v))
			}
			return out[0] + "," + out[1] + "," + out[2], nil
		}
		turn := replayTurn(t, orch, nil, messagesJSONL(t, `
{"ContinueAsNew":{"instance":"test-instance","orchestration":"TestOrch","input":"new","version":null,"carry_forward_events":[["X","old-x"],["Y","old-y"]]}}
{"QueueMessage":{"instance":"test-instance","name":"X","data":"new-x"}}`))
		if turn.Commit.ExecutionID != 2 || turn.Outcome != replay.Completed || turn.Output != "old-x,old-y,new-x" {
			t.Fatalf("execution %d outcome %v output %q", turn.Commit.ExecutionID, turn.Outcome, turn.Output)
		}
		var arrivals []string
		for _, ev := range turn.Commit.HistoryDelta {
			if k, ok := ev.Kind.(provider.QueueEventDelivered); ok {
				arrivals = append(arrivals, k.Name+"="+k.Data)
			}
		}
		if !slices.Equal(arrivals, []string{"X=old-x", "Y=old-y", "X=new-x"}) {
			t.Fatalf("arrivals %v", arrivals)
		}
		if got := deltaTypes(turn)[:4]; !slices.Equal(got, []string{"OrchestrationStarted", "ExternalEventPersistent", "ExternalEventPersistent", "ExternalEventPersistent"}) {
			t.Fatalf("delta %v, want the start event then the three arrivals", deltaTypes(turn))
		}
	}},
}

func TestReplayStateHelpers(t *testing.T) {
	for _, c := range shCases {
		t.Run(c.name, c.run)
	}
}

func TestReplayStateHelpersRowCount(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range shCases {
		if seen[c.name] {
			t.Errorf("duplicate row %s", c.name)
		}
		seen[c.name] = true
	}
	if len(shCases) != 15 {
		t.Fatalf("%d rows, want state_helpers.rs's 15 unit tests", len(shCases))
	}
}
