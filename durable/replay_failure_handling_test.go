package durable

import (
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

func TestReplayFailureHandling(t *testing.T) {
	runReplayCases(t, replayFailureHandlingCases())
}

func replayFailureHandlingCases() []reCase {
	const activity = reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`
	const child = reStarted + `
{"event_id":2,"type":"SubOrchestrationScheduled","name":"Child","instance":"sub::2","input":"input"}`
	// A system failure aborts the turn before the code runs.
	ran := map[string]bool{}
	tracked := func(name string, orch func(*OrchestrationContext, string) (string, error)) func(*OrchestrationContext, string) (string, error) {
		return func(ctx *OrchestrationContext, in string) (string, error) {
			ran[name] = true
			return orch(ctx, in)
		}
	}
	notRun := func(name string) func(*testing.T, *replay.Turn) {
		return func(t *testing.T, _ *replay.Turn) {
			if ran[name] {
				t.Fatal("the orchestration ran; a system failure must abort the turn first")
			}
		}
	}
	return []reCase{
		{
			name:    "application_error_propagates",
			orch:    reSingleActivity("Task", "input"),
			history: activity,
			msgs:    `{"ActivityFailed":{"instance":"test-instance","execution_id":1,"id":2,"details":{"Application":{"kind":"ActivityFailed","message":"business rule violated","retryable":false}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/OrchestrationFailed",
				failure: "business rule violated",
				delta:   []string{"3:ActivityFailed<2(business rule violated)", "4:OrchestrationFailed(business rule violated)"},
			},
		},
		{
			name:    "infrastructure_error_aborts",
			orch:    tracked("infrastructure_error_aborts", reSingleActivity("Task", "input")),
			history: activity,
			msgs:    `{"ActivityFailed":{"instance":"test-instance","execution_id":1,"id":2,"details":{"Infrastructure":{"operation":"test","message":"database connection lost","retryable":false}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Infrastructure",
				failure: "infrastructure:test: database connection lost",
				delta: []string{
					"3:ActivityFailed<2(infrastructure:test: database connection lost)",
					"4:OrchestrationFailed(infrastructure:test: database connection lost)",
				},
			},
			check: notRun("infrastructure_error_aborts"),
		},
		{
			name:    "configuration_error_aborts",
			orch:    tracked("configuration_error_aborts", reSingleActivity("Task", "input")),
			history: activity,
			msgs:    `{"ActivityFailed":{"instance":"test-instance","execution_id":1,"id":2,"details":{"Configuration":{"kind":"Nondeterminism","resource":"test","message":"activity not registered"}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Configuration/Nondeterminism",
				failure: "nondeterministic: activity not registered",
				delta: []string{
					"3:ActivityFailed<2(nondeterministic: activity not registered)",
					"4:OrchestrationFailed(nondeterministic: activity not registered)",
				},
			},
			check: notRun("configuration_error_aborts"),
		},
		{
			name:    "sub_orch_infra_error_aborts_parent",
			orch:    tracked("sub_orch_infra_error_aborts_parent", reSubOrch("Child", "input")),
			history: child,
			msgs:    `{"SubOrchFailed":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":2,"details":{"Infrastructure":{"operation":"child","message":"child infra failure","retryable":false}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Infrastructure",
				failure: "infrastructure:child: child infra failure",
				delta: []string{
					"3:SubOrchestrationFailed<2(infrastructure:child: child infra failure)",
					"4:OrchestrationFailed(infrastructure:child: child infra failure)",
				},
			},
			check: notRun("sub_orch_infra_error_aborts_parent"),
		},
		{
			name:    "sub_orch_app_error_propagates",
			orch:    reSubOrch("Child", "input"),
			history: child,
			msgs:    `{"SubOrchFailed":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":2,"details":{"Application":{"kind":"OrchestrationFailed","message":"child business error","retryable":false}}}}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Application/OrchestrationFailed",
				failure: "child business error",
				delta: []string{
					"3:SubOrchestrationFailed<2(child business error)",
					"4:OrchestrationFailed(child business error)",
				},
			},
		},
	}
}
