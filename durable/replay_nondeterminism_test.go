package durable

import (
	"testing"
	"time"
)

// ---- nondeterminism.rs ----

var rxNondeterminismCases = []rxCase{
	{
		name: "schedule_mismatch_activity_vs_timer",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("schedule mismatch: action=CreateTimer"),
	},
	{
		name: "schedule_mismatch_timer_vs_activity",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("schedule mismatch: action=CallActivity"),
	},
	{
		name: "schedule_mismatch_wrong_activity_name",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"ActivityA","input":"input"}`,
		orch:  rxActivity("ActivityB", "input"),
		check: rxNondeterminism("schedule mismatch: action=CallActivity", `name: "ActivityB"`, `name: "ActivityA"`),
	},
	{
		name: "schedule_mismatch_wrong_input",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input-x"}`,
		orch:  rxActivity("Task", "input-y"),
		check: rxNondeterminism("schedule mismatch: action=CallActivity", `input: "input-y"`, `input: "input-x"`),
	},
	{
		name: "schedule_mismatch_wrong_external_name",
		history: rxStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"EventX"}`,
		orch:  rxWait("EventY"),
		check: rxNondeterminism("schedule mismatch: action=WaitExternal", `name: "EventY"`, `name: "EventX"`),
	},
	{
		// Scheduling without awaiting is legitimate. The never-completed
		// activity gets the terminal cancellation breadcrumb.
		name: "history_schedule_no_emitted_action",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		orch: rxImmediate("done"),
		check: rxAll(rxCompleted("done"),
			rxDelta("ActivityCancelRequested 3<-2 orchestration_terminal_completed", "OrchestrationCompleted 4")),
	},
	{
		name:    "completion_without_schedule",
		history: rxStarted,
		msgs:    `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":999,"result":"result"}}`,
		orch:    rxImmediate("done"),
		check:   rxAll(rxNondeterminism("no matching schedule for completion id=999"), rxDelta("OrchestrationFailed 2")),
	},
	{
		name: "completion_kind_mismatch",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'timer', got 'activity'"),
	},
	{
		name: "timer_completion_for_activity_schedule",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		msgs:  `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":2,"fire_at_ms":1000}}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'activity', got 'timer'"),
	},
	{
		name: "sub_orch_completion_for_activity_schedule",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		msgs:  `{"SubOrchCompleted":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":2,"result":"result"}}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'activity', got 'suborchestration'"),
	},
	{
		name: "sub_orch_completion_for_timer_schedule",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs:  `{"SubOrchCompleted":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":2,"result":"result"}}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'timer', got 'suborchestration'"),
	},
	{
		name: "timer_completion_for_sub_orch_schedule",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"child-inst","input":"input"}`,
		msgs:  `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":2,"fire_at_ms":1000}}`,
		orch:  rxSub("ChildOrch", "input"),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'suborchestration', got 'timer'"),
	},
	{
		// The code must suspend (on the activity) for the chained event to
		// be reached.
		name: "orchestration_chained_no_matching_action",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"OrchestrationChained","name":"ChildOrch","instance":"child-inst","input":"input"}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("history OrchestrationChained but no emitted action"),
	},
	{
		name: "orchestration_chained_name_mismatch",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationChained","name":"ChildA","instance":"child-inst","input":"input"}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"work"}`,
		orch:  rxDetachedThenActivity("ChildB", "child-inst", "input", "Task", "work"),
		check: rxNondeterminism("schedule mismatch: action=StartOrchestrationDetached", `name: "ChildB"`, `name: "ChildA"`),
	},
	{
		name: "activity_completed_for_timer_in_history",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"wrong"}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("completion kind mismatch: expected activity"),
	},
	{
		// The second timer keeps the code suspended so the duplicate
		// completion is applied.
		name: "timer_completion_for_closed_schedule",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":3,"source_event_id":2,"type":"TimerFired","fire_at_ms":1000}
{"event_id":4,"type":"TimerCreated","fire_at_ms":2000}
{"event_id":5,"source_event_id":2,"type":"TimerFired","fire_at_ms":1000}`,
		orch:  rxTwoTimers(time.Second, 2*time.Second),
		check: rxNondeterminism("completion without open schedule"),
	},
	{
		name: "sub_orch_completion_for_closed_schedule",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"Child","instance":"child-inst","input":"input"}
{"event_id":3,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"first"}
{"event_id":4,"type":"ActivityScheduled","name":"Pending","input":"work"}
{"event_id":5,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"second"}`,
		orch:  rxSubThenActivity("Child", "input", "Pending", "work"),
		check: rxNondeterminism("completion without open schedule"),
	},
	{
		name: "activity_completion_for_closed_schedule",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"first"}
{"event_id":4,"type":"ActivityScheduled","name":"Pending","input":"work"}
{"event_id":5,"source_event_id":2,"type":"ActivityCompleted","result":"second"}`,
		orch:  rxTwoActivities("Task", "input", "Pending", "work"),
		check: rxNondeterminism("completion without open schedule"),
	},
	{
		name: "activity_failed_for_closed_schedule",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"first"}
{"event_id":4,"type":"ActivityScheduled","name":"Pending","input":"work"}
{"event_id":5,"source_event_id":2,"type":"ActivityFailed","details":{"Application":{"kind":"ActivityFailed","message":"duplicate error","retryable":false}}}`,
		orch:  rxTwoActivities("Task", "input", "Pending", "work"),
		check: rxNondeterminism("completion without open schedule"),
	},
	{
		name: "sub_orch_failed_for_closed_schedule",
		history: rxStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"Child","instance":"child-inst","input":"input"}
{"event_id":3,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"first"}
{"event_id":4,"type":"ActivityScheduled","name":"Pending","input":"work"}
{"event_id":5,"source_event_id":2,"type":"SubOrchestrationFailed","details":{"Application":{"kind":"OrchestrationFailed","message":"duplicate error","retryable":false}}}`,
		orch:  rxSubThenActivity("Child", "input", "Pending", "work"),
		check: rxNondeterminism("completion without open schedule"),
	},
}

func TestReplayNondeterminism(t *testing.T) { rxRun(t, rxNondeterminismCases) }
