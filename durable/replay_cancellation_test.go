package durable

import (
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// duroxide's TurnResult::Cancelled(reason) is a Failed turn whose details
// are Application{Cancelled{reason}} in duradyn (the OrchestrationFailed
// event duroxide's runtime appends).

func TestReplayCancellation(t *testing.T) {
	runReplayCases(t, replayCancellationCases())
}

func replayCancellationCases() []reCase {
	return []reCase{
		{
			name:    "cancel_via_message",
			orch:    reImmediate("success", nil),
			history: reStarted,
			msgs:    `{"CancelInstance":{"instance":"test-instance","reason":"user requested"}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Cancelled",
				failure: "canceled: user requested",
				delta:   []string{"2:OrchestrationCancelRequested(user requested)", "3:OrchestrationFailed(canceled: user requested)"},
			},
		},
		{
			name: "cancel_in_history",
			orch: reImmediate("success", nil),
			history: reStarted + `
{"event_id":2,"type":"OrchestrationCancelRequested","reason":"admin cancelled"}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Cancelled",
				failure: "canceled: admin cancelled",
				delta:   []string{"3:OrchestrationFailed(canceled: admin cancelled)"},
			},
		},
		{
			// The handler returns Ok; the cancellation wins.
			name:    "cancel_precedence_over_completion",
			orch:    reImmediate("would have completed", nil),
			history: reStarted,
			msgs:    `{"CancelInstance":{"instance":"test-instance","reason":"cancelled"}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Cancelled",
				failure: "canceled: cancelled",
				delta:   []string{"2:OrchestrationCancelRequested(cancelled)", "3:OrchestrationFailed(canceled: cancelled)"},
			},
		},
		{
			// The activity in flight is cancelled on its worker.
			name: "cancel_with_pending_activity",
			orch: reSingleActivity("Task", "input"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
			msgs: `{"CancelInstance":{"instance":"test-instance","reason":"cancelled"}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Cancelled",
				failure: "canceled: cancelled",
				delta: []string{
					"3:OrchestrationCancelRequested(cancelled)",
					"4:ActivityCancelRequested<2(orchestration_terminal_failed)",
					"5:OrchestrationFailed(canceled: cancelled)",
				},
				cancelled: []uint64{2},
			},
		},
		{
			// The second request records nothing; the first one's reason
			// fails the execution.
			name: "cancel_duplicate_filtered",
			orch: reImmediate("success", nil),
			history: reStarted + `
{"event_id":2,"type":"OrchestrationCancelRequested","reason":"first cancel"}`,
			msgs: `{"CancelInstance":{"instance":"test-instance","reason":"second cancel"}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/Cancelled",
				failure: "canceled: first cancel",
				delta:   []string{"3:OrchestrationFailed(canceled: first cancel)"},
			},
		},
	}
}
