package durable

import (
	"errors"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

func TestReplayFreshExecution(t *testing.T) {
	runReplayCases(t, replayFreshExecutionCases())
}

func replayFreshExecutionCases() []reCase {
	can := provider.ContinueAsNewItem{Instance: testInstance, Orchestration: testOrch, Input: "new-input"}
	canOutput := func(t *testing.T, turn *replay.Turn) {
		if m := turn.Commit.Metadata; m.Status != provider.StatusContinuedAsNew || m.Output == nil || *m.Output != "new-input" {
			t.Fatalf("metadata %+v, want ContinuedAsNew with output new-input", m)
		}
	}
	return []reCase{
		{
			name:    "immediate_return_ok",
			orch:    reImmediate("success", nil),
			history: reStarted,
			want:    reWant{outcome: replay.Completed, output: "success", delta: []string{"2:OrchestrationCompleted(success)"}},
		},
		{
			name:    "immediate_return_err",
			orch:    reImmediate("", errors.New("failure")),
			history: reStarted,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/OrchestrationFailed",
				failure: "failure",
				delta:   []string{"2:OrchestrationFailed(failure)"},
			},
		},
		{
			name:    "schedule_activity_pending",
			orch:    reSingleActivity("Greet", "Alice"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(Greet,Alice)"},
				worker:  []provider.ActivityExecuteItem{reExec(2, "Greet", "Alice")},
			},
		},
		{
			name:    "schedule_timer_pending",
			orch:    reSingleTimer(60*time.Second, "timer_done"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:TimerCreated(1700000060000)"},
				orch:    []provider.WorkItem{reTimer(2, 60*time.Second)},
			},
		},
		{
			// A wait sends no work: the event comes from a client.
			name:    "schedule_external_pending",
			orch:    reWaitExternal("Approval"),
			history: reStarted,
			want:    reWant{outcome: replay.Continue, delta: []string{"2:ExternalSubscribed(Approval)"}},
		},
		{
			name:    "schedule_sub_orch_pending",
			orch:    reSubOrch("ChildOrch", "child-input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:SubOrchestrationScheduled(ChildOrch,sub::2,child-input)"},
				orch:    []provider.WorkItem{reChild(2, testInstance+"::sub::2", "ChildOrch", "child-input")},
			},
		},
		{
			name: "continue_as_new",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				return "", ctx.ContinueAsNew(Raw("new-input"))
			},
			history: reStarted,
			want: reWant{
				outcome: replay.ContinuedAsNew,
				delta:   []string{"2:OrchestrationContinuedAsNew(new-input)"},
				orch:    []provider.WorkItem{can},
			},
			check: canOutput,
		},
		{
			// duroxide drops the child's future; Go cancels it explicitly.
			// Continue-as-new neither cancels the child (no breadcrumb:
			// cancellations are reconciled only for Continue, Completed and
			// Failed) nor, being terminal, starts it.
			name: "sub_orch_then_continue_as_new",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				CallSubOrchestration[Raw](ctx, "ChildOrch", Raw("child-input")).Cancel()
				return "", ctx.ContinueAsNew(Raw("new-input"))
			},
			history: reStarted,
			want: reWant{
				outcome: replay.ContinuedAsNew,
				delta: []string{
					"2:SubOrchestrationScheduled(ChildOrch,sub::2,child-input)",
					"3:OrchestrationContinuedAsNew(new-input)",
				},
				orch: []provider.WorkItem{can},
			},
			check: canOutput,
		},
		{
			// Explicit drops in duroxide: explicit Cancel here. A terminal
			// turn records the schedules but dispatches none; each is
			// cancelled with a breadcrumb.
			name:    "multiple_schedules_no_await",
			orch:    reScheduleAndCancel("A", "a", "B", "b", "C", "c"),
			history: reStarted,
			want: reWant{
				outcome: replay.Completed,
				output:  "done",
				delta: []string{
					"2:ActivityScheduled(A,a)",
					"3:ActivityScheduled(B,b)",
					"4:ActivityScheduled(C,c)",
					"5:ActivityCancelRequested<2(dropped_future)",
					"6:ActivityCancelRequested<3(dropped_future)",
					"7:ActivityCancelRequested<4(dropped_future)",
					"8:OrchestrationCompleted(done)",
				},
				cancelled: []uint64{2, 3, 4},
			},
		},
	}
}

// TestReplayContinueAsNewCarriesLateArrivals: queued messages recorded in
// the turn are carried forward unless a subscription takes them, counted
// over history as duroxide's collect_unmatched_queue_messages does, even
// when the code continued-as-new before they were applied.
func TestReplayContinueAsNewCarriesLateArrivals(t *testing.T) {
	const message = `
{"QueueMessage":{"instance":"test-instance","name":"Q","data":"m"}}`
	runReplayCases(t, []reCase{
		{
			name: "no_subscription",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				if err := ctx.Sleep(time.Minute); err != nil {
					return "", err
				}
				return "", ctx.ContinueAsNew(Raw("next"))
			},
			history: reStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1}`,
			msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":2,"fire_at_ms":1}}` + message,
			want: reWant{
				outcome: replay.ContinuedAsNew,
				delta:   []string{"3:TimerFired<2(1)", "4:ExternalEventPersistent(Q,m)", "5:OrchestrationContinuedAsNew(next)"},
				orch: []provider.WorkItem{provider.ContinueAsNewItem{Instance: testInstance, Orchestration: testOrch, Input: "next",
					CarryForwardEvents: []provider.CarryForwardEvent{{Name: "Q", Data: "m"}}}},
			},
		},
		{
			// The subscription in history takes the message.
			name: "pending_subscription",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				_ = Dequeue[Raw](ctx, "Q")
				if err := ctx.Sleep(time.Minute); err != nil {
					return "", err
				}
				return "", ctx.ContinueAsNew(Raw("next"))
			},
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribedPersistent","name":"Q"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1}`,
			msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1}}` + message,
			want: reWant{
				outcome: replay.ContinuedAsNew,
				delta:   []string{"4:TimerFired<3(1)", "5:ExternalEventPersistent(Q,m)", "6:OrchestrationContinuedAsNew(next)"},
				orch:    []provider.WorkItem{provider.ContinueAsNewItem{Instance: testInstance, Orchestration: testOrch, Input: "next"}},
			},
		},
	})
}
