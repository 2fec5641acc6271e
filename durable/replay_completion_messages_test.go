package durable

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// duroxide checks prep_completions alone; duradyn's engine always runs the
// turn, so each row runs the orchestration its test documents and checks
// the completion events at the head of the delta.

func TestReplayCompletionMessages(t *testing.T) {
	runReplayCases(t, replayCompletionMessagesCases())
}

func replayCompletionMessagesCases() []reCase {
	return []reCase{
		{
			name: "activity_completed_message",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
			msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "result",
				delta:   []string{"3:ActivityCompleted<2(result)", "4:OrchestrationCompleted(result)"},
			},
		},
		{
			name: "timer_fired_message",
			orch: reSingleTimer(60*time.Second, "done"),
			history: reStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
			msgs: `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":2,"fire_at_ms":1000}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "done",
				delta:   []string{"3:TimerFired<2(1000)", "4:OrchestrationCompleted(done)"},
			},
		},
		{
			name: "external_raised_message",
			orch: reWaitExternal("MyEvent"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"MyEvent"}`,
			msgs: `{"ExternalRaised":{"instance":"test-instance","name":"MyEvent","data":"event-data"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "event-data",
				delta:   []string{"3:ExternalEvent(MyEvent,event-data)", "4:OrchestrationCompleted(event-data)"},
			},
		},
		{
			name: "sub_orch_completed_message",
			orch: reSubOrch("Child", "input"),
			history: reStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"Child","instance":"sub::2","input":"input"}`,
			msgs: `{"SubOrchCompleted":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":2,"result":"child-result"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "child-result",
				delta:   []string{"3:SubOrchestrationCompleted<2(child-result)", "4:OrchestrationCompleted(child-result)"},
			},
		},
		{
			// At-least-once delivery: the completion already in history is
			// not recorded twice.
			name: "duplicate_completion_filtered",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "result",
				delta:   []string{"4:OrchestrationCompleted(result)"},
			},
		},
		{
			name: "duplicate_in_same_batch",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
			msgs: `
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"first-result"}}
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"second-result"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "first-result",
				delta:   []string{"3:ActivityCompleted<2(first-result)", "4:OrchestrationCompleted(first-result)"},
			},
		},
		{
			name: "wrong_execution_filtered",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
			msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":999,"id":2,"result":"result"}}`,
			want: reWant{outcome: replay.Continue},
		},
		{
			// The event is recorded although nothing waits for it; the
			// replay loop does not deliver it to the subscription the code
			// makes afterwards, which stays open.
			name:    "external_without_subscription",
			orch:    reWaitExternal("UnknownEvent"),
			history: reStarted,
			msgs:    `{"ExternalRaised":{"instance":"test-instance","name":"UnknownEvent","data":"data"}}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ExternalEvent(UnknownEvent,data)", "3:ExternalSubscribed(UnknownEvent)"},
			},
		},
		{
			name: "multiple_completions_batch",
			orch: reJoinActivities("A", "a", "B", "b"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"A","input":"a"}
{"event_id":3,"type":"ActivityScheduled","name":"B","input":"b"}`,
			msgs: `
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result-a"}}
{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":3,"result":"result-b"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "result-a,result-b",
				delta: []string{
					"4:ActivityCompleted<2(result-a)",
					"5:ActivityCompleted<3(result-b)",
					"6:OrchestrationCompleted(result-a,result-b)",
				},
			},
		},
		{
			// Equal arrivals are separate events: both are recorded.
			name: "duplicate_external_events_in_batch_are_kept",
			orch: reWaitExternal("Evt"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Evt"}`,
			msgs: `
{"ExternalRaised":{"instance":"test-instance","name":"Evt","data":"same-data"}}
{"ExternalRaised":{"instance":"test-instance","name":"Evt","data":"same-data"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "same-data",
				delta: []string{
					"3:ExternalEvent(Evt,same-data)",
					"4:ExternalEvent(Evt,same-data)",
					"5:OrchestrationCompleted(same-data)",
				},
			},
		},
		{
			name: "duplicate_external_event_in_history_is_kept",
			orch: reWaitExternal("Evt"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Evt"}
{"event_id":3,"type":"ExternalEvent","name":"Evt","data":"same-data"}`,
			msgs: `{"ExternalRaised":{"instance":"test-instance","name":"Evt","data":"same-data"}}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "same-data",
				delta:   []string{"4:ExternalEvent(Evt,same-data)", "5:OrchestrationCompleted(same-data)"},
			},
		},
	}
}
