package durable

import (
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// ---- src/runtime/replay_engine_tests.rs ----
//
// duroxide's unit tests poke the engine's fields (baseline, delta, pending
// actions, made_progress) between prep_completions and execution; duradyn's
// engine is one function from history and messages to a turn, so each test
// runs whole turns and asserts the same facts on the turn's delta and work.
// Every history starts with OrchestrationStarted (id 0 as in duroxide's
// fixtures, named after the harness's orchestration) because a turn always
// runs the code.

// rxStarted0 is the unit tests' started event, with id 0.
const rxStarted0 = `{"event_id":0,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`

// rxNextTurn runs a further turn of orch over history plus the previous
// turn's delta.
func rxNextTurn(t *testing.T, orch rxOrch, history string, prev *replay.Turn, msgs string) (*replay.Turn, []provider.Event) {
	t.Helper()
	h := append(historyJSON(t, history), prev.Commit.HistoryDelta...)
	return replayTurn(t, orch, h, messagesJSONL(t, msgs)), h
}

const (
	rxFinalHistory = rxStarted0
	rxMadeProgress = rxStarted0 + `
{"event_id":1,"type":"ActivityScheduled","name":"test","input":"input"}`
)

var (
	rxFinalHistoryOrch = rxActivity("test-activity", "activity-input")
	rxMadeProgressOrch = rxActivity("test", "input")
)

var rxEngineUnitCases = []rxCase{
	{
		// A turn with nothing new leaves the history as it was: no delta,
		// no work, no progress.
		name: "test_engine_creation",
		history: rxStarted0 + `
{"event_id":1,"type":"ExternalSubscribed","name":"never"}`,
		orch: rxWait("never"),
		check: rxAll(rxContinue(), rxDelta(), rxNoWork(), func(t *testing.T, turn *replay.Turn) {
			if turn.Name != testOrch || turn.Version != testVersion || turn.Commit.ExecutionID != 1 {
				t.Fatalf("turn %s %s execution %d", turn.Name, turn.Version, turn.Commit.ExecutionID)
			}
		}),
	},
	{
		name: "test_prep_completions",
		history: rxStarted0 + `
{"event_id":1,"type":"ActivityScheduled","name":"a1","input":"i1"}
{"event_id":2,"type":"ActivityScheduled","name":"a2","input":"i2"}`,
		msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"result1"}}
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result2"}}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			rs, err := AwaitAll(ctx, CallActivity[Raw](ctx, "a1", Raw("i1")), CallActivity[Raw](ctx, "a2", Raw("i2")))
			if err != nil {
				return "", err
			}
			return string(rs[0]) + "," + string(rs[1]), nil
		},
		check: rxAll(rxCompleted("result1,result2"),
			rxDelta("ActivityCompleted 3<-1", "ActivityCompleted 4<-2", "OrchestrationCompleted 5")),
	},
	{
		name: "test_prep_completions_with_external_events",
		history: rxStarted0 + `
{"event_id":5,"type":"ExternalSubscribed","name":"test-event"}`,
		msgs:  `{"ExternalRaised":{"instance":"test-instance","name":"test-event","data":"event-data"}}`,
		orch:  rxWait("test-event"),
		check: rxAll(rxCompleted("event-data"), rxDelta("ExternalEvent 6", "OrchestrationCompleted 7")),
	},
	{
		// Both completions duplicate the one in history: neither is added.
		name: "test_prep_completions_duplicate_handling",
		history: rxStarted0 + `
{"event_id":1,"type":"ActivityScheduled","name":"test","input":"test"}
{"event_id":2,"source_event_id":1,"type":"ActivityCompleted","result":"first-result"}`,
		msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"first-result"}}
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"second-result"}}`,
		orch:  rxActivity("test", "test"),
		check: rxAll(rxCompleted("first-result"), rxDelta("OrchestrationCompleted 3")),
	},
	{
		name:    "test_execute_orchestration_completed",
		history: rxStarted0,
		orch:    rxImmediate("orchestration-result"),
		check:   rxAll(rxCompleted("orchestration-result"), rxDelta("OrchestrationCompleted 1")),
	},
	{
		name:    "test_execute_orchestration_failed",
		history: rxStarted0,
		orch:    rxImmediateErr("orchestration-error"),
		check: rxAll(rxDelta("OrchestrationFailed 1"), func(t *testing.T, turn *replay.Turn) {
			rxOutcome(t, turn, replay.Failed)
			d, ok := turn.Failure.(provider.ApplicationDetails)
			if !ok || d.Kind.Code != provider.AppOrchestrationFailed || d.Message != "orchestration-error" {
				t.Fatalf("failure %#v", turn.Failure)
			}
		}),
	},
	{
		// The completion matches a schedule the code never reaches.
		name: "test_execute_orchestration_with_unconsumed_completions",
		history: rxStarted0 + `
{"event_id":999,"type":"ActivityScheduled","name":"test-activity","input":"test-input"}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":999,"result":"test-result"}}`,
		orch:  rxImmediate("orchestration-result"),
		check: rxAll(rxCompleted("orchestration-result"), rxDelta("ActivityCompleted 1000<-999", "OrchestrationCompleted 1001")),
	},
	{
		// The final history is the history plus each turn's delta.
		name:    "test_final_history",
		history: rxFinalHistory,
		orch:    rxFinalHistoryOrch,
		check: rxAll(rxContinue(), rxDelta("ActivityScheduled 1"), func(t *testing.T, turn *replay.Turn) {
			next, h := rxNextTurn(t, rxFinalHistoryOrch, rxFinalHistory, turn,
				`{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"activity-result"}}`)
			rxCompleted("activity-result")(t, next)
			final := append(h, next.Commit.HistoryDelta...)
			var got []string
			for _, ev := range final {
				got = append(got, ev.Kind.EventType())
			}
			want := []string{"OrchestrationStarted", "ActivityScheduled", "ActivityCompleted", "OrchestrationCompleted"}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
				t.Fatalf("final history %v, want %v", got, want)
			}
			if final[0].EventID != 0 || final[2].EventID != 2 || *final[2].SourceEventID != 1 {
				t.Fatalf("final history ids %+v", final)
			}
		}),
	},
	{
		// No message: no progress. A completion: progress.
		name:    "test_made_progress",
		history: rxMadeProgress,
		orch:    rxMadeProgressOrch,
		check: rxAll(rxContinue(), rxDelta(), rxNoWork(), func(t *testing.T, turn *replay.Turn) {
			next, _ := rxNextTurn(t, rxMadeProgressOrch, rxMadeProgress, turn,
				`{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":1,"result":"result"}}`)
			rxDelta("ActivityCompleted 2<-1", "OrchestrationCompleted 3")(t, next)
		}),
	},
}

func TestReplayEngineUnit(t *testing.T) { rxRun(t, rxEngineUnitCases) }

// TestReplayPortedCounts pins how many duroxide tests each ported file
// holds.
func TestReplayPortedCounts(t *testing.T) {
	got := map[string]int{
		"history_corruption.rs":  len(rxHistoryCorruptionCases),
		"kv.rs":                  len(rxKVCases),
		"nondeterminism.rs":      len(rxNondeterminismCases),
		"unobserved_futures.rs":  len(rxUnobservedFuturesCases),
		"replay_engine_tests.rs": len(rxEngineUnitCases),
	}
	want := map[string]int{
		"history_corruption.rs":  30,
		"kv.rs":                  27,
		"nondeterminism.rs":      20,
		"unobserved_futures.rs":  23,
		"replay_engine_tests.rs": 9,
	}
	for file, n := range want {
		if got[file] != n {
			t.Errorf("%s: %d cases, want %d", file, got[file], n)
		}
	}
}
