package durable

import (
	"testing"
	"time"
)

// ---- unobserved_futures.rs ----
//
// Go has no destructors: duroxide's dropped DurableFuture (select loser,
// explicit drop, end of scope) is an explicit Cancel or a Race loser here.

// rxRaceActivityTimer is duroxide's Select2TimerWinsHandler and
// Select2ActivityWinsHandler: select2(activity, timer).
func rxRaceActivityTimer(name, input string, d time.Duration) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		a := CallActivity[Raw](ctx, name, Raw(input))
		timer := ctx.CreateTimer(d)
		if Race(ctx, a, timer) == 0 {
			r, err := a.Get(ctx)
			if err != nil {
				return "", err
			}
			return "activity_won:" + string(r), nil
		}
		return "timer_won", nil
	}
}

// rxRaceSubTimer is SubOrchSelectLoserHandler: select2(sub-orchestration,
// timer).
func rxRaceSubTimer(name, input string, d time.Duration) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		sub := CallSubOrchestration[Raw](ctx, name, Raw(input))
		timer := ctx.CreateTimer(d)
		if Race(ctx, sub, timer) == 0 {
			r, err := sub.Get(ctx)
			return string(r), err
		}
		return "timer_won_sub_orch_cancelled", nil
	}
}

var rxUnobservedFuturesCases = []rxCase{
	// Select losers.
	{
		name: "select2_timer_wins_activity_cancelled",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"LongTask","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1000}}`,
		orch: rxRaceActivityTimer("LongTask", "input", time.Millisecond),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(2),
			rxDelta("TimerFired 4<-3", "ActivityCancelRequested 5<-2 dropped_future", "OrchestrationCompleted 6")),
	},
	{
		// A dropped timer needs no cancellation.
		name: "select2_activity_wins_timer_not_cancelled",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"FastTask","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":5000}`,
		msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"done"}}`,
		orch: rxRaceActivityTimer("FastTask", "input", 5*time.Millisecond),
		check: rxAll(rxCompleted("activity_won:done"), rxCancelledActivities(),
			rxDelta("ActivityCompleted 4<-2", "OrchestrationCompleted 5")),
	},
	{
		name: "select3_two_activities_cancelled",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task1","input":"input1"}
{"event_id":3,"type":"ActivityScheduled","name":"Task2","input":"input2"}
{"event_id":4,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":4,"fire_at_ms":1000}}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			a1 := CallActivity[Raw](ctx, "Task1", Raw("input1"))
			a2 := CallActivity[Raw](ctx, "Task2", Raw("input2"))
			timer := ctx.CreateTimer(time.Millisecond)
			switch Race(ctx, a1, a2, timer) {
			case 0:
				r, err := a1.Get(ctx)
				return string(r), err
			case 1:
				r, err := a2.Get(ctx)
				return string(r), err
			}
			return "timer_won", nil
		},
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(2, 3),
			rxDelta("TimerFired 5<-4", "ActivityCancelRequested 6<-2 dropped_future",
				"ActivityCancelRequested 7<-3 dropped_future", "OrchestrationCompleted 8")),
	},

	// Completed futures.
	{
		name: "completed_future_not_in_cancelled_list",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxCompleted("result"), rxCancelledActivities(), rxDelta("OrchestrationCompleted 4")),
	},

	// Explicit drops, after the schedule is emitted.
	{
		name:    "explicit_drop_activity_gets_cancelled",
		history: rxStarted,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			CallActivity[Raw](ctx, "DroppedTask", Raw("input")).Cancel()
			return "completed_after_dropping_activity", nil
		},
		check: rxAll(rxCompleted("completed_after_dropping_activity"), rxCancelledActivities(2),
			rxDelta("ActivityScheduled 2", "ActivityCancelRequested 3<-2 dropped_future", "OrchestrationCompleted 4"),
			rxNoWork()),
	},
	{
		// Timers are virtual: nothing to cancel.
		name:    "explicit_drop_timer_no_cancel_needed",
		history: rxStarted,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.CreateTimer(60 * time.Second).Cancel()
			return "timer_dropped", nil
		},
		check: rxAll(rxCompleted("timer_dropped"), rxCancelledActivities(),
			rxDelta("TimerCreated 2", "OrchestrationCompleted 3")),
	},
	{
		name:    "explicit_drop_external_wait",
		history: rxStarted,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			WaitForEvent[Raw](ctx, "MyEvent").Cancel()
			return "wait_dropped", nil
		},
		check: rxAll(rxCompleted("wait_dropped"), rxCancelledActivities(),
			rxDelta("ExternalSubscribed 2", "ExternalSubscribedCancelled 3<-2 dropped_future", "OrchestrationCompleted 4")),
	},

	// Several dropped futures (duroxide drops them at the end of scope).
	{
		name:    "multiple_dropped_activities_all_cancelled",
		history: rxStarted,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			a := CallActivity[Raw](ctx, "Task1", Raw("input1"))
			b := CallActivity[Raw](ctx, "Task2", Raw("input2"))
			c := ctx.CreateTimer(10 * time.Second)
			a.Cancel()
			b.Cancel()
			c.Cancel()
			return "all_dropped", nil
		},
		check: rxAll(rxCompleted("all_dropped"), rxCancelledActivities(2, 3),
			rxDelta("ActivityScheduled 2", "ActivityScheduled 3", "TimerCreated 4",
				"ActivityCancelRequested 5<-2 dropped_future", "ActivityCancelRequested 6<-3 dropped_future",
				"OrchestrationCompleted 7")),
	},

	// Sub-orchestrations.
	{
		name:    "sub_orch_drop_after_schedule_cancelled",
		history: rxStarted,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			CallSubOrchestration[Raw](ctx, "ChildOrch", Raw("child_input")).Cancel()
			return "sub_orch_dropped", nil
		},
		check: rxAll(rxCompleted("sub_orch_dropped"), rxCancelledChildren("test-instance::sub::2"),
			rxDelta("SubOrchestrationScheduled 2", "SubOrchestrationCancelRequested 3<-2 dropped_future", "OrchestrationCompleted 4")),
	},
	{
		name: "sub_orch_select_loser_child_cancelled",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"child_input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1000}}`,
		orch: rxRaceSubTimer("ChildOrch", "child_input", time.Millisecond),
		check: rxAll(rxCompleted("timer_won_sub_orch_cancelled"), rxCancelledChildren("test-instance::sub::2"),
			rxDelta("TimerFired 4<-3", "SubOrchestrationCancelRequested 5<-2 dropped_future", "OrchestrationCompleted 6")),
	},

	// Replay determinism.
	{
		name: "replay_select_loser_same_cancellation",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}`,
		orch: rxRaceActivityTimer("Task", "input", time.Millisecond),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(2),
			rxDelta("ActivityCancelRequested 5<-2 dropped_future", "OrchestrationCompleted 6")),
	},
	{
		name: "completed_sub_orch_not_cancelled",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"input"}
{"event_id":3,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"child_result"}`,
		orch:  rxSub("ChildOrch", "input"),
		check: rxAll(rxCompleted("child_result"), rxCancelledChildren(), rxDelta("OrchestrationCompleted 4")),
	},

	// A cancellation made while the code then suspends is still recorded.
	{
		name: "explicit_drop_then_await_captures_cancellation",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"DroppedTask","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":100}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			CallActivity[Raw](ctx, "DroppedTask", Raw("input")).Cancel()
			if err := ctx.Sleep(100 * time.Millisecond); err != nil {
				return "", err
			}
			return "done_after_drop", nil
		},
		check: rxAll(rxContinue(), rxCancelledActivities(2), rxNoWork(),
			rxDelta("ActivityCancelRequested 4<-2 dropped_future")),
	},

	// Cancellation request racing a completion.
	{
		name: "replay_tolerates_completion_after_cancel_request",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}
{"event_id":6,"source_event_id":2,"type":"ActivityCompleted","result":"late_result"}`,
		orch:  rxRaceActivityTimer("Task", "input", time.Second),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(), rxDelta("OrchestrationCompleted 7")),
	},
	{
		// History dropped the activity; the code now awaits it.
		name: "replay_fails_when_cancellation_decisions_differ",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}
{"event_id":4,"source_event_id":2,"type":"ActivityCompleted","result":"done"}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("cancellation mismatch (activities)"),
	},

	// Cross-turn cancellation: scheduled in one turn, cancelled while
	// replaying the next. Both the side channel and the breadcrumb.
	{
		name: "cross_turn_activity_cancellation_emits_both_signals",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1000}}`,
		orch: rxRaceActivityTimer("Task", "input", time.Millisecond),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(2),
			rxDelta("TimerFired 4<-3", "ActivityCancelRequested 5<-2 dropped_future", "OrchestrationCompleted 6")),
	},
	{
		name: "cross_turn_sub_orch_cancellation_emits_both_signals",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":3,"fire_at_ms":1000}}`,
		orch: rxRaceSubTimer("ChildOrch", "input", time.Millisecond),
		check: rxAll(rxCompleted("timer_won_sub_orch_cancelled"), rxCancelledChildren("test-instance::sub::2"),
			rxDelta("TimerFired 4<-3", "SubOrchestrationCancelRequested 5<-2 dropped_future", "OrchestrationCompleted 6")),
	},
	{
		name: "replay_does_not_reemit_activity_cancellation_side_channel_when_already_in_history",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}`,
		orch:  rxRaceActivityTimer("Task", "input", time.Second),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(), rxDelta("OrchestrationCompleted 6")),
	},
	{
		name: "replay_does_not_reemit_sub_orch_cancellation_side_channel_when_already_in_history",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"SubOrchestrationCancelRequested","reason":"dropped_future"}`,
		orch:  rxRaceSubTimer("ChildOrch", "input", time.Second),
		check: rxAll(rxCompleted("timer_won_sub_orch_cancelled"), rxCancelledChildren(), rxDelta("OrchestrationCompleted 6")),
	},
	{
		// Only the new schedule's cancellation reaches the side channel.
		name: "replay_allows_new_cancellations_in_current_turn_even_when_prior_cancellations_exist",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			a := CallActivity[Raw](ctx, "Task", Raw("input"))
			timer := ctx.CreateTimer(time.Second)
			Race(ctx, a, timer)
			CallActivity[Raw](ctx, "Extra", Raw("x")).Cancel()
			return "timer_won_plus_extra_drop", nil
		},
		check: rxAll(rxCompleted("timer_won_plus_extra_drop"), rxCancelledActivities(6),
			rxDelta("ActivityScheduled 6", "ActivityCancelRequested 7<-6 dropped_future", "OrchestrationCompleted 8")),
	},
	{
		// The code awaits the activity history says it dropped.
		name: "replay_fails_if_persisted_dropped_future_cancel_is_no_longer_emitted_by_code",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}`,
		orch: func(ctx *OrchestrationContext, _ string) (string, error) {
			a := CallActivity[Raw](ctx, "Task", Raw("input"))
			_ = ctx.CreateTimer(time.Second)
			r, err := a.Get(ctx)
			if err != nil {
				return "", err
			}
			return "activity_awaited:" + string(r), nil
		},
		check: rxNondeterminism("cancellation mismatch (activities): baseline_dropped_future_cancel_requests="),
	},

	// Duplicate cancellation breadcrumbs are benign.
	{
		name: "duplicate_activity_cancel_requested_is_benign",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"ActivityCancelRequested","reason":"dropped_future"}
{"event_id":6,"source_event_id":2,"type":"ActivityCancelRequested","reason":"orchestration_terminal_failed"}`,
		orch:  rxRaceActivityTimer("Task", "input", time.Second),
		check: rxAll(rxCompleted("timer_won"), rxCancelledActivities(), rxDelta("OrchestrationCompleted 7")),
	},
	{
		name: "duplicate_sub_orch_cancel_requested_is_benign",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":5,"source_event_id":2,"type":"SubOrchestrationCancelRequested","reason":"dropped_future"}
{"event_id":6,"source_event_id":2,"type":"SubOrchestrationCancelRequested","reason":"orchestration_terminal_failed"}`,
		orch:  rxRaceSubTimer("ChildOrch", "input", time.Second),
		check: rxAll(rxCompleted("timer_won_sub_orch_cancelled"), rxCancelledChildren(), rxDelta("OrchestrationCompleted 7")),
	},
}

func TestReplayUnobservedFutures(t *testing.T) { rxRun(t, rxUnobservedFuturesCases) }
