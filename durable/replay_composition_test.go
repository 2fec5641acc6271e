package durable

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// reSelect2 races an activity against a timer (duroxide's Select2Handler);
// Race cancels the loser as select2 drops it.
func reSelect2(name, input string, d time.Duration) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		activity := CallActivity[Raw](ctx, name, Raw(input))
		timer := ctx.CreateTimer(d)
		if Race(ctx, activity, timer) == 1 {
			return "timeout", nil
		}
		r, err := activity.Get(ctx)
		if err != nil {
			return "", errors.New("activity_err:" + err.Error())
		}
		return "activity:" + string(r), nil
	}
}

func TestReplayComposition(t *testing.T) {
	runReplayCases(t, replayCompositionCases())
}

func replayCompositionCases() []reCase {
	const activityAndTimer = reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`
	const twoActivities = reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"A","input":"a"}
{"event_id":3,"type":"ActivityScheduled","name":"B","input":"b"}`
	return []reCase{
		{
			// The losing timer records nothing.
			name: "select2_activity_wins",
			orch: reSelect2("Task", "input", 60*time.Second),
			history: activityAndTimer + `
{"event_id":4,"source_event_id":2,"type":"ActivityCompleted","result":"activity-result"}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "activity:activity-result",
				delta:   []string{"5:OrchestrationCompleted(activity:activity-result)"},
			},
		},
		{
			// The losing activity is cancelled on its worker.
			name: "select2_timer_wins",
			orch: reSelect2("Task", "input", 60*time.Second),
			history: activityAndTimer + `
{"event_id":4,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}`,
			want: reWant{
				outcome:   replay.Completed,
				output:    "timeout",
				delta:     []string{"5:ActivityCancelRequested<2(dropped_future)", "6:OrchestrationCompleted(timeout)"},
				cancelled: []uint64{2},
			},
		},
		{
			name:    "select2_both_pending",
			orch:    reSelect2("Task", "input", 60*time.Second),
			history: activityAndTimer,
			want:    reWant{outcome: replay.Continue},
		},
		{
			name: "join_all_complete",
			orch: reJoinActivities("A", "a", "B", "b"),
			history: twoActivities + `
{"event_id":4,"source_event_id":2,"type":"ActivityCompleted","result":"result-a"}
{"event_id":5,"source_event_id":3,"type":"ActivityCompleted","result":"result-b"}`,
			want: reWant{
				outcome: replay.Completed,
				output:  "result-a,result-b",
				delta:   []string{"6:OrchestrationCompleted(result-a,result-b)"},
			},
		},
		{
			name: "join_partial_complete",
			orch: reJoinActivities("A", "a", "B", "b"),
			history: twoActivities + `
{"event_id":4,"source_event_id":2,"type":"ActivityCompleted","result":"result-a"}`,
			want: reWant{outcome: replay.Continue},
		},
		{
			name:    "join_fresh_schedule",
			orch:    reJoinActivities("A", "a", "B", "b", "C", "c"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(A,a)", "3:ActivityScheduled(B,b)", "4:ActivityScheduled(C,c)"},
				worker: []provider.ActivityExecuteItem{
					reExec(2, "A", "a"), reExec(3, "B", "b"), reExec(4, "C", "c"),
				},
			},
		},
		{
			name: "join_one_fails",
			orch: reJoinActivities("A", "a", "B", "b"),
			history: twoActivities + `
{"event_id":4,"source_event_id":2,"type":"ActivityCompleted","result":"result-a"}
{"event_id":5,"source_event_id":3,"type":"ActivityFailed","details":{"Application":{"kind":"ActivityFailed","message":"B failed","retryable":false}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/OrchestrationFailed",
				failure: "B failed",
				delta:   []string{"6:OrchestrationFailed(B failed)"},
			},
		},
		{
			// Every child of a large fan-in has completed in history: the
			// replay reaches the terminal event and sends no new work.
			name:    "join_large_completed_sub_orchestration_fan_in_reaches_terminal",
			orch:    reLargeSubOrchestrationFanIn(reLargeFanIn),
			history: reLargeFanInHistory(reLargeFanIn),
			want: reWant{
				outcome: replay.Completed,
				output:  strconv.Itoa(reLargeFanIn),
				delta:   []string{fmt.Sprintf("%d:OrchestrationCompleted(%d)", 2*reLargeFanIn+2, reLargeFanIn)},
			},
		},
	}
}

// reLargeFanIn is the number of children of the large fan-in.
const reLargeFanIn = 1024

// reLargeSubOrchestrationFanIn schedules n children of Child, child-i with
// input i, waits for all and returns n, failing unless child i returned i
// (duroxide's LargeSubOrchestrationFanInHandler).
func reLargeSubOrchestrationFanIn(n int) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		fs := make([]Future[Raw], n)
		for i := range fs {
			fs[i] = CallSubOrchestration[Raw](ctx, "Child", Raw(strconv.Itoa(i)), WithInstanceID(fmt.Sprintf("child-%d", i)))
		}
		results, err := AwaitAll(ctx, fs...)
		if err != nil {
			return "", err
		}
		for i, r := range results {
			if string(r) != strconv.Itoa(i) {
				return "", fmt.Errorf("result at index %d was %s", i, r)
			}
		}
		return strconv.Itoa(len(results)), nil
	}
}

// reLargeFanInHistory is the history of reLargeSubOrchestrationFanIn(n)
// after every child completed: the start, n schedules (ids 2..n+1), then n
// completions in schedule order.
func reLargeFanInHistory(n int) string {
	var b strings.Builder
	b.WriteString(reStarted)
	for i := range n {
		fmt.Fprintf(&b, "\n{\"event_id\":%d,\"type\":\"SubOrchestrationScheduled\",\"name\":\"Child\",\"instance\":\"child-%d\",\"input\":\"%d\"}", i+2, i, i)
	}
	for i := range n {
		fmt.Fprintf(&b, "\n{\"event_id\":%d,\"source_event_id\":%d,\"type\":\"SubOrchestrationCompleted\",\"result\":\"%d\"}", n+i+2, i+2, i)
	}
	return b.String()
}
