package durable

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

func TestReplayEdgeCases(t *testing.T) {
	runReplayCases(t, replayEdgeCasesCases())
}

func replayEdgeCasesCases() []reCase {
	large := strings.Repeat("x", 1_000_000)
	invocations, replayInvocations := 0, 0
	return []reCase{
		{
			// The timer fires at the turn's wall clock.
			name:    "zero_delay_timer",
			orch:    reSingleTimer(0, "timer_done"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:TimerCreated(1700000000000)"},
				orch:    []provider.WorkItem{reTimer(2, 0)},
			},
		},
		{
			name: "empty_activity_input",
			orch: reSingleActivity("Task", ""),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":""}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want: reWant{outcome: replay.Completed, output: "result", delta: []string{"4:OrchestrationCompleted(result)"}},
		},
		{
			name: "large_result_string",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"` + large + `"}`,
			want: reWant{outcome: replay.Completed, output: large, delta: []string{"4:OrchestrationCompleted(" + large + ")"}},
		},
		{
			name: "handler_invoked_once",
			orch: func(*OrchestrationContext, string) (string, error) {
				invocations++
				return "done", nil
			},
			history: reStarted,
			want:    reWant{outcome: replay.Completed, output: "done", delta: []string{"2:OrchestrationCompleted(done)"}},
			check: func(t *testing.T, _ *replay.Turn) {
				if invocations != 1 {
					t.Fatalf("handler invoked %d times, want 1", invocations)
				}
			},
		},
		{
			// Replay walks history within the one invocation.
			name: "handler_invoked_once_during_replay",
			orch: func() func(*OrchestrationContext, string) (string, error) {
				inner := reSingleActivity("Task", "input")
				return func(ctx *OrchestrationContext, in string) (string, error) {
					replayInvocations++
					return inner(ctx, in)
				}
			}(),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want: reWant{outcome: replay.Completed, output: "result", delta: []string{"4:OrchestrationCompleted(result)"}},
			check: func(t *testing.T, _ *replay.Turn) {
				if replayInvocations != 1 {
					t.Fatalf("handler invoked %d times, want 1", replayInvocations)
				}
			},
		},
		{
			name: "empty_external_event_data",
			orch: reWaitExternal("Event"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Event"}
{"event_id":3,"type":"ExternalEvent","name":"Event","data":""}`,
			want: reWant{outcome: replay.Completed, output: "", delta: []string{"4:OrchestrationCompleted()"}},
		},
		{
			// The first arrival resolves the only subscription.
			name: "multiple_external_events_same_name",
			orch: reWaitExternal("Event"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Event"}
{"event_id":3,"type":"ExternalEvent","name":"Event","data":"first-data"}
{"event_id":4,"type":"ExternalEvent","name":"Event","data":"second-data"}`,
			want: reWant{outcome: replay.Completed, output: "first-data", delta: []string{"5:OrchestrationCompleted(first-data)"}},
		},
		{
			// made_progress is a ReplayEngine accessor; its meaning here: a
			// turn without messages adds nothing, the same turn with a
			// completion adds its event.
			name: "made_progress_after_completion",
			run: func(t *testing.T) {
				orch := reSingleActivity("Task", "input")
				history := reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`
				turn := replayTurn(t, orch, historyJSON(t, history), nil)
				reCheck(t, turn, reWant{outcome: replay.Continue})
				turn = replayTurn(t, orch, historyJSON(t, history), messagesJSONL(t,
					`{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}`))
				reCheck(t, turn, reWant{outcome: replay.Completed, output: "result",
					delta: []string{"3:ActivityCompleted<2(result)", "4:OrchestrationCompleted(result)"}})
			},
		},
		{
			// final_history = persisted history + delta.
			name:    "final_history_combines_baseline_and_delta",
			orch:    reSingleActivity("Task", "input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(Task,input)"},
				worker:  []provider.ActivityExecuteItem{reExec(2, "Task", "input")},
			},
			check: func(t *testing.T, turn *replay.Turn) {
				final := historyJSON(t, reAppend(t, reStarted, turn))
				if len(final) != 2 {
					t.Fatalf("final history has %d events, want 2", len(final))
				}
				if _, ok := final[0].Kind.(provider.OrchestrationStarted); !ok {
					t.Fatalf("first event %s", final[0].Kind.EventType())
				}
				if _, ok := final[1].Kind.(provider.ActivityScheduled); !ok {
					t.Fatalf("second event %s", final[1].Kind.EventType())
				}
			},
		},
	}
}

// TestReplayTerminalBreadcrumbsFollowHistory: at a terminal turn a
// subscription is outstanding, and gets an "orchestration_terminal"
// breadcrumb, unless history resolves it (duroxide's
// get_outstanding_schedule_ids: a positional subscription takes the first
// later arrival of its name, persistent ones take arrivals in FIFO order),
// whether or not the code ran far enough to see the arrival.
func TestReplayTerminalBreadcrumbsFollowHistory(t *testing.T) {
	runReplayCases(t, []reCase{
		{
			// The code returns before the arrival recorded in the same turn
			// is applied.
			name: "arrival_after_return",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				_ = WaitForEvent[Raw](ctx, "E")
				r, err := CallActivity[Raw](ctx, "A", Raw("a")).Get(ctx)
				return string(r), err
			},
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"E"}
{"event_id":3,"type":"ActivityScheduled","name":"A","input":"a"}`,
			msgs: `
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":3,"result":"r"}}
{"ExternalRaised":{"instance":"test-instance","name":"E","data":"d"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "r",
				delta:   []string{"4:ActivityCompleted<3(r)", "5:ExternalEvent(E,d)", "6:OrchestrationCompleted(r)"},
			},
		},
		{
			// A system failure aborts the turn before the code runs.
			name: "aborted_turn",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				if _, err := WaitForEvent[Raw](ctx, "E").Get(ctx); err != nil {
					return "", err
				}
				if _, err := Dequeue[Raw](ctx, "Q").Get(ctx); err != nil {
					return "", err
				}
				_ = WaitForEvent[Raw](ctx, "Never")
				r, err := CallActivity[Raw](ctx, "A", Raw("a")).Get(ctx)
				return string(r), err
			},
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"E"}
{"event_id":3,"type":"ExternalEvent","name":"E","data":"d"}
{"event_id":4,"type":"ExternalSubscribedPersistent","name":"Q"}
{"event_id":5,"type":"ExternalEventPersistent","name":"Q","data":"q"}
{"event_id":6,"type":"ExternalSubscribed","name":"Never"}
{"event_id":7,"type":"ActivityScheduled","name":"A","input":"a"}`,
			msgs: `{"ActivityFailed":{"instance":"test-instance","execution_id":1,"id":7,"details":{"Infrastructure":{"operation":"test","message":"lost","retryable":false}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Infrastructure",
				failure: "infrastructure:test: lost",
				delta: []string{
					"8:ActivityFailed<7(infrastructure:test: lost)",
					"9:ExternalSubscribedCancelled<6(orchestration_terminal)",
					"10:OrchestrationFailed(infrastructure:test: lost)",
				},
			},
		},
	})
}
