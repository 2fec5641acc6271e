package durable

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

func TestReplaySequentialProgress(t *testing.T) {
	runReplayCases(t, replaySequentialProgressCases())
}

func reActivityThenTimer(name, input string, d time.Duration) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallActivity[Raw](ctx, name, Raw(input)).Get(ctx)
		if err != nil {
			return "", err
		}
		if err := ctx.Sleep(d); err != nil {
			return "", err
		}
		return string(r), nil
	}
}

func replaySequentialProgressCases() []reCase {
	// Ten activities scheduled and completed in turn.
	tenHistory := []string{reStarted}
	var tenResults []string
	for i := range 10 {
		id := uint64(2 + 2*i)
		tenHistory = append(tenHistory,
			fmt.Sprintf(`{"event_id":%d,"type":"ActivityScheduled","name":"Act%d","input":"input%d"}`, id, i, i),
			fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"ActivityCompleted","result":"result%d"}`, id+1, id, i))
		tenResults = append(tenResults, fmt.Sprintf("result%d", i))
	}
	sameTwice := func(ctx *OrchestrationContext, _ string) (string, error) {
		r1, err := CallActivity[Raw](ctx, "Task", Raw("same")).Get(ctx)
		if err != nil {
			return "", err
		}
		r2, err := CallActivity[Raw](ctx, "Task", Raw("same")).Get(ctx)
		if err != nil {
			return "", err
		}
		return string(r1) + "," + string(r2), nil
	}
	return []reCase{
		{
			name: "two_activities_first_done",
			orch: reTwoActivities("A1", "input1", "A2", "input2"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"A1","input":"input1"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result1"}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"4:ActivityScheduled(A2,input2)"},
				worker:  []provider.ActivityExecuteItem{reExec(4, "A2", "input2")},
			},
		},
		{
			name: "two_activities_both_done",
			orch: reTwoActivities("A1", "input1", "A2", "input2"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"A1","input":"input1"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result1"}
{"event_id":4,"type":"ActivityScheduled","name":"A2","input":"input2"}
{"event_id":5,"source_event_id":4,"type":"ActivityCompleted","result":"result2"}`,
			want: reWant{outcome: replay.Completed, output: "result1,result2", delta: []string{"6:OrchestrationCompleted(result1,result2)"}},
		},
		{
			// Completions are routed by source event id, not by name and
			// input.
			name: "identical_activities_both_done_routes_correctly",
			orch: sameTwice,
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"same"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"R1"}
{"event_id":4,"type":"ActivityScheduled","name":"Task","input":"same"}
{"event_id":5,"source_event_id":4,"type":"ActivityCompleted","result":"R2"}`,
			want: reWant{outcome: replay.Completed, output: "R1,R2", delta: []string{"6:OrchestrationCompleted(R1,R2)"}},
		},
		{
			// Each turn replays the history persisted by the previous ones
			// plus a completion, as after a restart.
			name: "identical_activities_routes_correctly_across_restart_boundary",
			run: func(t *testing.T) {
				orch := func(ctx *OrchestrationContext, _ string) (string, error) {
					r1, err := CallActivity[Raw](ctx, "Task", Raw("same")).Get(ctx)
					if err != nil {
						return "", err
					}
					if err := ctx.Sleep(60 * time.Second); err != nil {
						return "", err
					}
					r2, err := CallActivity[Raw](ctx, "Task", Raw("same")).Get(ctx)
					if err != nil {
						return "", err
					}
					return string(r1) + "," + string(r2), nil
				}
				// Turn 1: the first activity, no timer yet.
				turn := replayTurn(t, orch, historyJSON(t, reStarted), nil)
				reCheck(t, turn, reWant{
					outcome: replay.Continue,
					delta:   []string{"2:ActivityScheduled(Task,same)"},
					worker:  []provider.ActivityExecuteItem{reExec(2, "Task", "same")},
				})
				persisted := reAppend(t, reStarted, turn, fmt.Sprintf(
					`{"event_id":3,"source_event_id":%d,"type":"ActivityCompleted","result":"R1"}`, turn.Commit.WorkerItems[0].ID))
				// Turn 2: the timer only; the activity is not scheduled again.
				turn = replayTurn(t, orch, historyJSON(t, persisted), nil)
				reCheck(t, turn, reWant{
					outcome: replay.Continue,
					delta:   []string{"4:TimerCreated(1700000060000)"},
					orch:    []provider.WorkItem{reTimer(4, 60*time.Second)},
				})
				timerID := turn.Commit.OrchestratorItems[0].(provider.TimerFiredItem).ID
				persisted = reAppend(t, persisted, turn, fmt.Sprintf(
					`{"event_id":5,"source_event_id":%d,"type":"TimerFired","fire_at_ms":0}`, timerID))
				// Turn 3: the second activity, same name and input.
				turn = replayTurn(t, orch, historyJSON(t, persisted), nil)
				reCheck(t, turn, reWant{
					outcome: replay.Continue,
					delta:   []string{"6:ActivityScheduled(Task,same)"},
					worker:  []provider.ActivityExecuteItem{reExec(6, "Task", "same")},
				})
				persisted = reAppend(t, persisted, turn, fmt.Sprintf(
					`{"event_id":7,"source_event_id":%d,"type":"ActivityCompleted","result":"R2"}`, turn.Commit.WorkerItems[0].ID))
				// Turn 4: each result reaches its own schedule.
				turn = replayTurn(t, orch, historyJSON(t, persisted), nil)
				reCheck(t, turn, reWant{outcome: replay.Completed, output: "R1,R2", delta: []string{"8:OrchestrationCompleted(R1,R2)"}})
			},
		},
		{
			name: "activity_then_timer",
			orch: reActivityThenTimer("Task", "input", 60*time.Second),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"done"}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"4:TimerCreated(1700000060000)"},
				orch:    []provider.WorkItem{reTimer(4, 60*time.Second)},
			},
		},
		{
			name: "timer_then_activity",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				if err := ctx.Sleep(60 * time.Second); err != nil {
					return "", err
				}
				r, err := CallActivity[Raw](ctx, "Task", Raw("input")).Get(ctx)
				return string(r), err
			},
			history: reStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":3,"source_event_id":2,"type":"TimerFired","fire_at_ms":1000}`,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"4:ActivityScheduled(Task,input)"},
				worker:  []provider.ActivityExecuteItem{reExec(4, "Task", "input")},
			},
		},
		{
			name: "many_sequential_activities",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				var results []string
				for i := range 10 {
					r, err := CallActivity[Raw](ctx, fmt.Sprintf("Act%d", i), Raw(fmt.Sprintf("input%d", i))).Get(ctx)
					if err != nil {
						return "", err
					}
					results = append(results, string(r))
				}
				return strings.Join(results, ","), nil
			},
			history: strings.Join(tenHistory, "\n"),
			want: reWant{
				outcome: replay.Completed,
				output:  strings.Join(tenResults, ","),
				delta:   []string{"22:OrchestrationCompleted(" + strings.Join(tenResults, ",") + ")"},
			},
		},
	}
}
