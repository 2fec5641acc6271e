package durable

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// Schedules in history without completions: the turn waits and sends no
// work again (no delta, no items).

func TestReplayPartialCompletion(t *testing.T) {
	runReplayCases(t, replayPartialCompletionCases())
}

func replayPartialCompletionCases() []reCase {
	return []reCase{
		{
			name: "activity_scheduled_no_completion",
			orch: reSingleActivity("Greet", "Alice"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Greet","input":"Alice"}`,
			want: reWant{outcome: replay.Continue},
		},
		{
			name: "timer_created_no_fire",
			orch: reSingleTimer(60*time.Second, "timer_done"),
			history: reStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
			want: reWant{outcome: replay.Continue},
		},
		{
			name: "external_subscribed_no_event",
			orch: reWaitExternal("Approval"),
			history: reStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"Approval"}`,
			want: reWant{outcome: replay.Continue},
		},
		{
			name: "sub_orch_scheduled_no_completion",
			orch: reSubOrch("ChildOrch", "child-input"),
			history: reStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"ChildOrch","instance":"sub::2","input":"child-input"}`,
			want: reWant{outcome: replay.Continue},
		},
	}
}
