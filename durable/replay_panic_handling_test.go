package durable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

func TestReplayPanicHandling(t *testing.T) {
	runReplayCases(t, replayPanicHandlingCases())
}

// rePanicked checks that the failure message contains the panic's value.
func rePanicked(value string) func(*testing.T, *replay.Turn) {
	return func(t *testing.T, turn *replay.Turn) {
		if msg := failureMessage(turn); !strings.Contains(msg, value) {
			t.Fatalf("failure %q does not contain %q", msg, value)
		}
		if turn.Panic == nil {
			t.Fatal("the turn does not report the panic")
		}
	}
}

func replayPanicHandlingCases() []reCase {
	return []reCase{
		{
			name: "panic_string",
			orch: func(*OrchestrationContext, string) (string, error) {
				panic("oops something went wrong")
			},
			history: reStarted,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Panicked",
				failure: "orchestration panicked: oops something went wrong",
				delta:   []string{"2:OrchestrationFailed(orchestration panicked: oops something went wrong)"},
			},
			check: rePanicked("oops something went wrong"),
		},
		{
			// panic!("{}", 42) formats its payload into a String; Go's
			// equivalent panics with the formatted value.
			name: "panic_other",
			orch: func(*OrchestrationContext, string) (string, error) {
				panic(fmt.Sprint(42))
			},
			history: reStarted,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Panicked",
				failure: "orchestration panicked: 42",
				delta:   []string{"2:OrchestrationFailed(orchestration panicked: 42)"},
			},
			check: rePanicked("42"),
		},
		{
			name: "panic_during_await",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				_, _ = CallActivity[Raw](ctx, "Task", Raw("input")).Get(ctx)
				panic("panic after activity")
			},
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Panicked",
				failure: "orchestration panicked: panic after activity",
				delta:   []string{"4:OrchestrationFailed(orchestration panicked: panic after activity)"},
			},
			check: rePanicked("panic after activity"),
		},
	}
}
