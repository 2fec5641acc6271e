package durable

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// Histories holding schedules and their completions: the code replays to
// its end and the turn adds only the terminal event.

func TestReplayReplayWithCompletions(t *testing.T) {
	runReplayCases(t, replayReplayWithCompletionsCases())
}

func replayReplayWithCompletionsCases() []reCase {
	return []reCase{
		{
			name: "activity_completed_in_history",
			orch: reSingleActivity("Greet", "Alice"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Greet","input":"Alice"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"Hello, Alice!"}`,
			want: reWant{outcome: replay.Completed, output: "Hello, Alice!", delta: []string{"4:OrchestrationCompleted(Hello, Alice!)"}},
		},
		{
			name: "activity_failed_in_history",
			orch: reSingleActivity("Greet", "Alice"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Greet","input":"Alice"}
{"event_id":3,"source_event_id":2,"type":"ActivityFailed","details":{"Application":{"kind":"ActivityFailed","message":"service unavailable","retryable":false}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/OrchestrationFailed",
				failure: "service unavailable",
				delta:   []string{"4:OrchestrationFailed(service unavailable)"},
			},
		},
		{
			name: "timer_fired_in_history",
			orch: reSingleTimer(60*time.Second, "timer_done"),
			history: reStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":3,"source_event_id":2,"type":"TimerFired","fire_at_ms":1000}`,
			want: reWant{outcome: replay.Completed, output: "timer_done", delta: []string{"4:OrchestrationCompleted(timer_done)"}},
		},
		{
			name: "external_received_in_history",
			orch: reWaitExternal("Approval"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Approval"}
{"event_id":3,"type":"ExternalEvent","name":"Approval","data":"approved-data"}`,
			want: reWant{outcome: replay.Completed, output: "approved-data", delta: []string{"4:OrchestrationCompleted(approved-data)"}},
		},
		{
			name: "sub_orch_completed_in_history",
			orch: reSubOrch("ChildOrch", "child-input"),
			history: reStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"child-input"}
{"event_id":3,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"child-result"}`,
			want: reWant{outcome: replay.Completed, output: "child-result", delta: []string{"4:OrchestrationCompleted(child-result)"}},
		},
	}
}
