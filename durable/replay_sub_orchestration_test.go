package durable

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

func TestReplaySubOrchestration(t *testing.T) {
	runReplayCases(t, replaySubOrchestrationCases())
}

func replaySubOrchestrationCases() []reCase {
	return []reCase{
		{
			// History stores "sub::<event_id>"; the child's instance is
			// "<parent>::sub::<event_id>".
			name:    "auto_instance_id",
			orch:    reSubOrch("Child", "child-input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:SubOrchestrationScheduled(Child,sub::2,child-input)"},
				orch:    []provider.WorkItem{reChild(2, "test-instance::sub::2", "Child", "child-input")},
			},
		},
		{
			name: "replay_uses_history_instance",
			orch: reSubOrch("Child", "child-input"),
			history: reStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"Child","instance":"sub::2","input":"child-input"}
{"event_id":3,"source_event_id":2,"type":"SubOrchestrationCompleted","result":"child-result"}`,
			want: reWant{outcome: replay.Completed, output: "child-result", delta: []string{"4:OrchestrationCompleted(child-result)"}},
		},
		{
			name:    "explicit_instance_preserved",
			orch:    reSubOrch("Child", "child-input", WithInstanceID("my-custom-instance")),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:SubOrchestrationScheduled(Child,my-custom-instance,child-input)"},
				orch:    []provider.WorkItem{reChild(2, "my-custom-instance", "Child", "child-input")},
			},
		},
		{
			// Explicit drops in duroxide: explicit Cancel here. The terminal
			// turn starts neither child; each is sent its cancellation.
			name: "multiple_sub_orchs_unique_ids",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				CallSubOrchestration[Raw](ctx, "Child1", Raw("input1")).Cancel()
				CallSubOrchestration[Raw](ctx, "Child2", Raw("input2")).Cancel()
				return "done", nil
			},
			history: reStarted,
			want: reWant{
				outcome: replay.Completed,
				output:  "done",
				delta: []string{
					"2:SubOrchestrationScheduled(Child1,sub::2,input1)",
					"3:SubOrchestrationScheduled(Child2,sub::3,input2)",
					"4:SubOrchestrationCancelRequested<2(dropped_future)",
					"5:SubOrchestrationCancelRequested<3(dropped_future)",
					"6:OrchestrationCompleted(done)",
				},
				orch: []provider.WorkItem{
					provider.CancelInstanceItem{Instance: "test-instance::sub::2", Reason: replay.ReasonChildDropped},
					provider.CancelInstanceItem{Instance: "test-instance::sub::3", Reason: replay.ReasonChildDropped},
				},
			},
			check: func(t *testing.T, turn *replay.Turn) {
				var instances []string
				for _, ev := range turn.Commit.HistoryDelta {
					if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
						if !strings.HasPrefix(k.Instance, replay.SubOrchestrationPrefix) {
							t.Errorf("instance %q lacks the automatic prefix", k.Instance)
						}
						instances = append(instances, k.Instance)
					}
				}
				if len(instances) != 2 || instances[0] == instances[1] {
					t.Fatalf("instances %v, want two distinct", instances)
				}
			},
		},
	}
}

// TestReplayEngineRowCounts pins the number of rows ported from each of
// duroxide's tests/replay_engine files, so that a lost row fails.
func TestReplayEngineRowCounts(t *testing.T) {
	tables := map[string]struct {
		cases func() []reCase
		want  int
	}{
		"action_to_event.rs":         {replayActionToEventCases, 14},
		"cancellation.rs":            {replayCancellationCases, 5},
		"completion_messages.rs":     {replayCompletionMessagesCases, 11},
		"composition.rs":             {replayCompositionCases, 8},
		"edge_cases.rs":              {replayEdgeCasesCases, 9},
		"event_allocation.rs":        {replayEventAllocationCases, 4},
		"failure_handling.rs":        {replayFailureHandlingCases, 5},
		"fresh_execution.rs":         {replayFreshExecutionCases, 9},
		"is_replaying.rs":            {replayIsReplayingCases, 4},
		"panic_handling.rs":          {replayPanicHandlingCases, 3},
		"partial_completion.rs":      {replayPartialCompletionCases, 4},
		"replay_with_completions.rs": {replayReplayWithCompletionsCases, 5},
		"sequential_progress.rs":     {replaySequentialProgressCases, 7},
		"sub_orchestration.rs":       {replaySubOrchestrationCases, 4},
	}
	total := 0
	for file, tc := range tables {
		cases := tc.cases()
		names := map[string]bool{}
		for _, c := range cases {
			if c.name == "" || names[c.name] {
				t.Errorf("%s: empty or duplicate row name %q", file, c.name)
			}
			names[c.name] = true
			if c.run == nil && c.orch == nil {
				t.Errorf("%s: row %s has no orchestration", file, c.name)
			}
		}
		if len(cases) != tc.want {
			t.Errorf("%s: %d rows, want %d", file, len(cases), tc.want)
		}
		total += len(cases)
	}
	if total != 92 {
		t.Errorf("%d rows in all, want 92", total)
	}
}
