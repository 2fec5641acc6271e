package durable

import (
	"slices"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

func TestReplayIsReplaying(t *testing.T) {
	runReplayCases(t, replayIsReplayingCases())
}

// reObserve records ctx.IsReplaying() at the points the orchestration
// reaches.
type reObserve struct{ seen []bool }

func (o *reObserve) mark(ctx *OrchestrationContext) { o.seen = append(o.seen, ctx.IsReplaying()) }

func (o *reObserve) want(want ...bool) func(*testing.T, *replay.Turn) {
	return func(t *testing.T, _ *replay.Turn) {
		if !slices.Equal(o.seen, want) {
			t.Fatalf("is_replaying observed %v, want %v", o.seen, want)
		}
	}
}

func replayIsReplayingCases() []reCase {
	var fresh, replayed, transition, zero reObserve
	return []reCase{
		{
			// OrchestrationStarted is persisted: the code starts replaying.
			name: "fresh_execution_not_replaying",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				fresh.mark(ctx)
				return "done", nil
			},
			history: reStarted,
			want:    reWant{outcome: replay.Completed, output: "done", delta: []string{"2:OrchestrationCompleted(done)"}},
			check:   fresh.want(true),
		},
		{
			// The whole history is persisted: replaying until it is consumed.
			name: "replay_is_replaying",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				replayed.mark(ctx)
				r, err := CallActivity[Raw](ctx, "Task", Raw("input")).Get(ctx)
				return string(r), err
			},
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want:  reWant{outcome: replay.Completed, output: "result", delta: []string{"4:OrchestrationCompleted(result)"}},
			check: replayed.want(true),
		},
		{
			name: "transitions_after_history",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				transition.mark(ctx)
				if _, err := CallActivity[Raw](ctx, "First", Raw("input")).Get(ctx); err != nil {
					return "", err
				}
				transition.mark(ctx)
				return "done", nil
			},
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"First","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
			want:  reWant{outcome: replay.Completed, output: "done", delta: []string{"4:OrchestrationCompleted(done)"}},
			check: transition.want(true, false),
		},
		{
			// Nothing persisted: the start item creates OrchestrationStarted
			// in this turn (duroxide's persisted_history_len = 0).
			name: "fresh_start_with_zero_persisted",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				zero.mark(ctx)
				return "done", nil
			},
			msgs: reStart,
			want: reWant{
				outcome: replay.Completed,
				output:  "done",
				delta:   []string{"1:OrchestrationStarted(TestOrch,1.0.0,test-input)", "2:OrchestrationCompleted(done)"},
			},
			check: zero.want(false),
		},
	}
}
