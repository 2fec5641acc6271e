package durable

import (
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

func TestReplayEventAllocation(t *testing.T) {
	runReplayCases(t, replayEventAllocationCases())
}

func replayEventAllocationCases() []reCase {
	return []reCase{
		{
			// Explicit drops in duroxide: explicit Cancel here. Ids are
			// contiguous from 2: schedules, then their breadcrumbs, then the
			// terminal event.
			name:    "sequential_allocation",
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
		{
			name: "allocation_after_replay",
			orch: reTwoActivities("First", "input", "Second", "input2"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"First","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"4:ActivityScheduled(Second,input2)"},
				worker:  []provider.ActivityExecuteItem{reExec(4, "Second", "input2")},
			},
		},
		{
			// New ids continue from the last id, gaps and all.
			name: "allocation_with_gaps",
			orch: reTwoActivities("Task", "input", "Next", "next"),
			history: reStarted + `
{"event_id":5,"type":"ActivityScheduled","name":"Task","input":"input"}`,
			msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":5,"result":"result"}}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"6:ActivityCompleted<5(result)", "7:ActivityScheduled(Next,next)"},
				worker:  []provider.ActivityExecuteItem{reExec(7, "Next", "next")},
			},
		},
		{
			// The work item carries the schedule event's id.
			name:    "pending_actions_have_correct_event_id",
			orch:    reSingleActivity("Task", "input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(Task,input)"},
				worker:  []provider.ActivityExecuteItem{reExec(2, "Task", "input")},
			},
		},
	}
}
