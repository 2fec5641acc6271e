package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// scenarioTests port duroxide's tests/scenarios: versioned replays and
// upgrades, rolling deployments, the version-from-history regression,
// the toygres instance-actor patterns, single-slot runtimes (duroxide's
// current_thread tokio runtime) and the chat pattern.
var scenarioTests = []Test{
	// replay_versioning.rs
	{"e2e_eternal_orch_v1_to_v2_event_upgrade", e2eEternalOrchV1ToV2EventUpgrade},
	{"e2e_upgrade_with_preexisting_v1_history", e2eUpgradeWithPreexistingV1History},
	{"v2_events_deserialize_with_feature_flag", v2EventsDeserializeWithFeatureFlag},
	// rolling_deployment.rs
	{"e2e_rolling_deployment_three_nodes", e2eRollingDeploymentThreeNodes},
	{"e2e_rolling_deployment_version_upgrade", e2eRollingDeploymentVersionUpgrade},
	// version_replay_bug.rs
	{"e2e_replay_completion_only_must_use_version_from_history", e2eReplayCompletionOnlyMustUseVersionFromHistory},
	{"e2e_replay_completion_only_after_can_must_use_version_from_history", e2eReplayCompletionOnlyAfterCANMustUseVersionFromHistory},
	{"unit_workitem_reader_completion_only_must_preserve_version", unitWorkitemReaderCompletionOnlyMustPreserveVersion},
	{"unit_workitem_reader_nth_execution_must_preserve_version", unitWorkitemReaderNthExecutionMustPreserveVersion},
	{"unit_workitem_reader_completion_only_tuple_field_analysis", unitWorkitemReaderCompletionOnlyTupleFieldAnalysis},
	{"unit_input_comes_from_extract_context_not_workitem_reader", unitInputComesFromExtractContextNotWorkitemReader},
	{"unit_nth_execution_history_starts_with_orchestration_started", unitNthExecutionHistoryStartsWithOrchestrationStarted},
	{"e2e_can_input_preserved_during_completion_only_replay", e2eCANInputPreservedDuringCompletionOnlyReplay},
	{"unit_completion_only_replay_uses_nth_execution_input", unitCompletionOnlyReplayUsesNthExecutionInput},
	// toygres.rs
	{"continue_as_new_chain_5_iterations", continueAsNewChain5Iterations},
	{"continue_as_new_chain_with_activities", continueAsNewChainWithActivities},
	{"concurrent_continue_as_new_chains", concurrentContinueAsNewChains},
	{"instance_actor_pattern_stress_test", instanceActorPatternStressTest},
	{"timer_fires_at_correct_time_regression", timerFiresAtCorrectTimeRegression},
	// single_thread.rs
	{"single_thread_basic_orchestration", singleThreadBasicOrchestration},
	{"single_thread_sequential_activities", singleThreadSequentialActivities},
	{"single_thread_timer_handling", singleThreadTimerHandling},
	{"single_thread_continue_as_new", singleThreadContinueAsNew},
	{"single_thread_concurrent_orchestrations", singleThreadConcurrentOrchestrations},
	{"single_thread_single_concurrency", singleThreadSingleConcurrency},
	{"single_thread_1x1_cooperative_activity_cancellation", singleThread1x1CooperativeActivityCancellation},
	{"single_thread_1x1_runaway_activity_aborted", singleThread1x1RunawayActivityAborted},
	// copilot_chat.rs
	{"copilot_chat_scenario", copilotChatScenario},
}

// ---- replay_versioning.rs
//
// duroxide's v2 handlers use schedule_wait2 (ExternalSubscribed2 /
// ExternalEvent2, a feature-gated event family duradyn does not have).
// The ports keep the point — an execution started by continue-as-new on a
// new version records a different family of events, with a clean boundary
// — by having v2 receive its events through a persistent queue
// (ExternalSubscribedPersistent / ExternalEventPersistent) instead.

// scnUpgrader registers Upgrader 1.0.0 (three "approval" events, then
// continue-as-new on 2.0.0) and 2.0.0 (two "approval" queue messages).
func scnUpgrader(prefix string) []durable.Definition {
	return []durable.Definition{
		durable.OrchestrationFunc("Upgrader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var got []string
			for range 3 {
				d, err := verWait(ctx, "approval")
				if err != nil {
					return "", err
				}
				got = append(got, d)
			}
			return "", ctx.ContinueAsNew(durable.Raw(strings.Join(got, ",")), durable.Version("2.0.0"))
		}),
		durable.OrchestrationFunc("Upgrader", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			got := strings.Split(in, ",")
			for range 2 {
				d, err := verDequeue(ctx, "approval")
				if err != nil {
					return "", err
				}
				got = append(got, d)
			}
			return prefix + strings.Join(got, "+"), nil
		}, durable.Version("2.0.0")),
	}
}

// scnAwaitCount waits until id's current history holds n events of type typ.
func scnAwaitCount(h *H, id, typ string, n int) {
	h.Helper()
	h.WaitFor(fmt.Sprintf("%d %s in %s", n, typ, id), func() bool { return Count(h.history(id), typ) >= n })
}

// scnAwaitExecutionVersion waits until id's current execution runs version.
func scnAwaitExecutionVersion(h *H, id, version string) {
	h.Helper()
	h.WaitFor(id+" on "+version, func() bool {
		hist := h.history(id)
		if len(hist) == 0 {
			return false
		}
		s, ok := hist[0].Kind.(provider.OrchestrationStarted)
		return ok && s.Version == version
	})
}

// scnV2Phase sends the two queue messages v2 waits for.
func scnV2Phase(h *H, id, prefix string) {
	h.Helper()
	for i := range 2 {
		scnAwaitCount(h, id, "ExternalSubscribedPersistent", i+1)
		if err := h.Client.EnqueueEvent(h.Ctx(), id, "approval", durable.Raw(fmt.Sprintf("%s%d", prefix, i))); err != nil {
			h.Fatal(err)
		}
		scnAwaitCount(h, id, "ExternalEventPersistent", i+1)
	}
}

// scnWantOutput waits for id to complete with want; if it completes with
// something else, the failure lists both executions' events with the data
// each event or dequeue delivered, so that a duplicate delivery and a
// mismatched one tell themselves apart.
func scnWantOutput(h *H, id, want string) {
	h.Helper()
	if got := h.Completed(id); got != want {
		h.Fatalf("output = %q; want %q\nexecution 1: %s\nexecution 2: %s", got, want,
			scnDeliveries(verExecution(h, id, 1)), scnDeliveries(verExecution(h, id, 2)))
	}
}

// scnDeliveries describes events: each one's id and type, with the data of
// the events that deliver data.
func scnDeliveries(events []provider.Event) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, " %d:%s", ev.EventID, ev.Kind.EventType())
		switch k := ev.Kind.(type) {
		case provider.ExternalEvent:
			fmt.Fprintf(&b, "(%s)", k.Data)
		case provider.QueueEventDelivered:
			fmt.Fprintf(&b, "(%s)", k.Data)
		}
	}
	return b.String()
}

// scnCheckBoundary checks that execution 1 holds only positional events and
// execution 2 only queue events.
func scnCheckBoundary(h *H, id string) (e1, e2 []provider.Event) {
	h.Helper()
	e1, e2 = verExecution(h, id, 1), verExecution(h, id, 2)
	if Count(e1, "ExternalSubscribed") == 0 || Count(e1, "ExternalEvent") == 0 || Count(e1, "ExternalSubscribedPersistent")+Count(e1, "ExternalEventPersistent") != 0 {
		h.Errorf("v1 execution %v: want only ExternalSubscribed/ExternalEvent", EventTypes(e1))
	}
	if Count(e2, "ExternalSubscribedPersistent") == 0 || Count(e2, "ExternalEventPersistent") == 0 || Count(e2, "ExternalSubscribed")+Count(e2, "ExternalEvent") != 0 {
		h.Errorf("v2 execution %v: want only persistent (queue) events (clean boundary)", EventTypes(e2))
	}
	return e1, e2
}

func e2eEternalOrchV1ToV2EventUpgrade(h *H) {
	const id = "upgrader-1"
	h.Serve(scnUpgrader("final:")...)
	h.Start("Upgrader", id, durable.Raw("init"), durable.Version("1.0.0"))
	for i := range 3 {
		scnAwaitCount(h, id, "ExternalSubscribed", i+1)
		if err := h.Client.RaiseEvent(h.Ctx(), id, "approval", durable.Raw(fmt.Sprintf("v1-data-%d", i))); err != nil {
			h.Fatal(err)
		}
		if i < 2 {
			// The last one ends the execution: the current history is then
			// the next execution's.
			scnAwaitCount(h, id, "ExternalEvent", i+1)
		}
	}
	scnAwaitExecutionVersion(h, id, "2.0.0")
	scnV2Phase(h, id, "v2-data-")
	scnWantOutput(h, id, "final:v1-data-0+v1-data-1+v1-data-2+v2-data-0+v2-data-1")
	execs, err := h.Client.ListExecutions(h.Ctx(), id)
	if err == nil && len(execs) < 2 {
		h.Fatalf("executions %v; want v1 and v2", execs)
	}
	scnCheckBoundary(h, id)
}

func e2eUpgradeWithPreexistingV1History(h *H) {
	const id, old = "upgrade-hist", "0.1.10"
	// Phase 1: the history an older runtime (0.1.10) left: started, two
	// events received, waiting for the third.
	ev := func(eventID uint64, kind provider.EventKind) provider.Event {
		return verEvent(id, 1, eventID, old, kind)
	}
	version := "1.0.0"
	meta := provider.ExecutionMetadata{OrchestrationName: "Upgrader", OrchestrationVersion: version}
	first := meta
	pinned := verSemver(h, old)
	first.PinnedDuroxideVersion = &pinned
	verSeedTurn(h,
		provider.StartOrchestrationItem{Instance: id, Orchestration: "Upgrader", Version: &version, Input: "seed", ExecutionID: 1},
		provider.TurnCommit{ExecutionID: 1, Metadata: first, HistoryDelta: []provider.Event{
			ev(1, provider.OrchestrationStarted{Name: "Upgrader", Version: version, Input: "seed"}),
			ev(2, provider.ExternalSubscribed{Name: "approval"}),
		}})
	for i, data := range []string{"old-0", "old-1"} {
		next := uint64(3 + 2*i)
		verSeedTurn(h,
			provider.ExternalRaisedItem{Instance: id, Name: "approval", Data: data},
			provider.TurnCommit{ExecutionID: 1, Metadata: meta, HistoryDelta: []provider.Event{
				ev(next, provider.ExternalEvent{Name: "approval", Data: data}),
				ev(next+1, provider.ExternalSubscribed{Name: "approval"}),
			}})
	}
	seeded := h.History(id)
	if len(seeded) != 6 || seeded[0].DuroxideVersion != old || Count(seeded, "ExternalSubscribed") != 3 || Count(seeded, "ExternalEvent") != 2 {
		h.Fatalf("seeded history %v (stamp %q)", EventTypes(seeded), seeded[0].DuroxideVersion)
	}

	// Phase 2: this runtime, with v1 and v2, replays the old history.
	h.Serve(scnUpgrader("upgraded:")...)
	if err := h.Client.RaiseEvent(h.Ctx(), id, "approval", durable.Raw("old-2")); err != nil {
		h.Fatal(err)
	}
	scnAwaitExecutionVersion(h, id, "2.0.0")
	scnV2Phase(h, id, "new-")
	scnWantOutput(h, id, "upgraded:old-0+old-1+old-2+new-0+new-1")
	e1, e2 := scnCheckBoundary(h, id)
	if ev, _ := verStarted(h, e1); ev.DuroxideVersion != old {
		h.Errorf("v1 OrchestrationStarted stamped %q; want the old %s kept", ev.DuroxideVersion, old)
	}
	if ev, _ := verStarted(h, e2); ev.DuroxideVersion != durable.ReplayVersion {
		h.Errorf("v2 OrchestrationStarted stamped %q; want %s", ev.DuroxideVersion, durable.ReplayVersion)
	}
}

func v2EventsDeserializeWithFeatureFlag(h *H) {
	// The feature (and the event family) does not exist in duradyn: the
	// port asserts the other side of the boundary, that they are refused.
	serdeBoundaryV2Events(h)
}

// ---- rolling_deployment.rs

// scnRollingOptions let work bounce between nodes while they upgrade.
func scnRollingOptions(base, maxDelay time.Duration) func(*durable.Options) {
	return func(o *durable.Options) {
		o.MaxAttempts = 50
		o.UnregisteredBackoff = durable.UnregisteredBackoff{Base: base, Max: maxDelay}
	}
}

func e2eRollingDeploymentThreeNodes(h *H) {
	var executed atomic.Bool
	orch := durable.OrchestrationFunc("RollingDeployOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return verAct(ctx, "NewActivity", "test-input")
	})
	newActivity := durable.ActivityFunc("NewActivity", func(_ context.Context, in string) (string, error) {
		executed.Store(true)
		return "NewActivity result: " + in, nil
	})
	opts := scnRollingOptions(50*time.Millisecond, 200*time.Millisecond)
	oldReg, newReg := h.Registry(orch), h.Registry(orch, newActivity)
	rt1 := h.Runtime(oldReg, opts)
	rt2 := h.Runtime(oldReg, opts)
	h.Runtime(newReg, opts)
	const id = "rolling-deployment-test"
	h.Start("RollingDeployOrch", id, durable.Raw(""))
	// duroxide upgrades after 2 s; here once the activity is queued.
	h.AwaitEvent(id, "ActivityScheduled")
	verStop(h, rt1)
	h.Runtime(newReg, opts)
	verStop(h, rt2)
	h.Runtime(newReg, opts)
	h.verWant("output", h.Completed(id), "NewActivity result: test-input")
	if !executed.Load() {
		h.Fatal("the activity did not run")
	}
}

func e2eRollingDeploymentVersionUpgrade(h *H) {
	v1 := durable.OrchestrationFunc("VersionedOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", ctx.ContinueAsNew(durable.Raw("upgraded"), durable.Version("2.0.0"))
	})
	v2 := verPrefix("VersionedOrch", "v2-completed:", durable.Version("2.0.0"))
	opts := scnRollingOptions(100*time.Millisecond, 500*time.Millisecond)
	oldReg, newReg := h.Registry(v1), h.Registry(v1, v2)
	rt1 := h.Runtime(oldReg, opts)
	rt2 := h.Runtime(oldReg, opts)
	h.Runtime(newReg, opts)
	const id = "version-upgrade-test"
	h.Start("VersionedOrch", id, durable.Raw("{}"), durable.Version("1.0.0"))
	// duroxide upgrades after 1 s; here once v1 has continued as new.
	h.WaitFor("execution 1 to continue as new", func() bool {
		e1, err := verStore(h).ReadWithExecution(context.Background(), id, 1)
		return err == nil && Count(e1, "OrchestrationContinuedAsNew") == 1
	})
	verStop(h, rt1)
	h.Runtime(newReg, opts)
	verStop(h, rt2)
	h.Runtime(newReg, opts)
	h.verWant("output", h.Completed(id), "v2-completed:upgraded")
}

// ---- version_replay_bug.rs
//
// duroxide's unit tests there check WorkItemReader/HistoryManager, which
// pick the name, version, input and parent of a turn whose batch holds only
// completions. duradyn's engine does that in one place for every turn
// (each turn replays from the stored history); the ports run such
// completion-only turns end to end and check what the orchestration code
// saw in them.

// scnSeen formats what orchestration code saw.
func scnSeen(ctx *durable.OrchestrationContext, in string) string {
	return fmt.Sprintf("%s|%s|%s|exec=%d", ctx.Name(), ctx.Version(), in, ctx.ExecutionID())
}

// serveReplaying serves defs on a runtime that replays every turn's
// history rather than resuming code it kept from the last turn
// (ExecutionCacheSize): the scenarios that check what code sees on a
// completion-only turn need the code to run again on that turn.
func (h *H) serveReplaying(defs ...durable.Definition) *durable.Runtime {
	h.Helper()
	return h.Runtime(h.Registry(defs...), func(o *durable.Options) { o.ExecutionCacheSize = -1 })
}

// scnAllEqual fails unless seen has at least n entries, all want.
func scnAllEqual(h *H, what string, seen []string, want string, n int) {
	h.Helper()
	if len(seen) < n {
		h.Fatalf("%s ran %d times %v; want at least %d (a completion-only turn)", what, len(seen), seen, n)
	}
	for _, s := range seen {
		if s != want {
			h.Fatalf("%s saw %v; want only %q", what, seen, want)
		}
	}
}

// scnPruneActivities are the activities of SystemPruner's two versions.
func scnPruneActivities() []durable.Definition {
	return []durable.Definition{
		durable.ActivityFunc("system-prune", func(_ context.Context, in string) (string, error) { return "pruned:" + in, nil }),
		durable.ActivityFunc("system-prune-2", func(_ context.Context, in string) (string, error) { return "pruned-v2:" + in, nil }),
	}
}

func scnPruner103(calls *atomic.Int32) durable.Definition {
	return durable.OrchestrationFunc("SystemPruner", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		calls.Add(1)
		// A different activity: replaying a 1.0.2 history with it would be
		// nondeterministic.
		return verAct(ctx, "system-prune-2", "prune-input")
	}, durable.Version("1.0.3"))
}

func e2eReplayCompletionOnlyMustUseVersionFromHistory(h *H) {
	var v102, v103 atomic.Int32
	h.Serve(append(scnPruneActivities(),
		durable.OrchestrationFunc("SystemPruner", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v102.Add(1)
			return verAct(ctx, "system-prune", "prune-input")
		}, durable.Version("1.0.2")),
		scnPruner103(&v103))...)
	h.Start("SystemPruner", "issue49-repro", durable.Raw("test-input"), durable.Version("1.0.2"))
	h.verWant("output", h.Completed("issue49-repro"), "pruned:prune-input")
	if n := v102.Load(); n < 2 {
		h.Fatalf("1.0.2 ran %d times; want the first turn and the completion-only one", n)
	}
	if n := v103.Load(); n != 0 {
		h.Fatalf("1.0.3 ran %d times replaying a 1.0.2 instance", n)
	}
}

func e2eReplayCompletionOnlyAfterCANMustUseVersionFromHistory(h *H) {
	var exec1, exec2, v103 atomic.Int32
	h.Serve(append(scnPruneActivities(),
		durable.OrchestrationFunc("SystemPruner", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if in == "first-execution" {
				exec1.Add(1)
				return "", ctx.ContinueAsNew(durable.Raw("second-execution"), durable.Version("1.0.2"))
			}
			exec2.Add(1)
			return verAct(ctx, "system-prune", "prune-input")
		}, durable.Version("1.0.2")),
		scnPruner103(&v103))...)
	h.Start("SystemPruner", "issue49-can-repro", durable.Raw("first-execution"), durable.Version("1.0.2"))
	h.verWant("output", h.Completed("issue49-can-repro"), "pruned:prune-input")
	if exec1.Load() == 0 || exec2.Load() < 2 {
		h.Fatalf("1.0.2 ran %d times in execution 1 and %d in execution 2; want ≥1 and ≥2", exec1.Load(), exec2.Load())
	}
	if n := v103.Load(); n != 0 {
		h.Fatalf("1.0.3 ran %d times replaying execution 2 of a 1.0.2 instance", n)
	}
}

// scnChildFields runs parent "parent-inst", whose child "test-inst"
// (orchestration test-orch on version, input original-input) completes in a
// completion-only turn; newer, when set, is a higher version registered
// too. It checks what the child saw in every turn and that its result
// reached the parent's scheduling event through the parent link kept in
// its history.
func scnChildFields(h *H, version, newer string) {
	h.Helper()
	seen, newerSeen := &verCalls{}, &verCalls{}
	defs := []durable.Definition{
		durable.ActivityFunc("SomeActivity", func(_ context.Context, in string) (string, error) { return "result:" + in, nil }),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			seen.add(scnSeen(ctx, in))
			return verAct(ctx, "SomeActivity", "activity-input")
		}, durable.Version(version)),
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return verSub(ctx, "test-orch", "original-input", durable.Version(version), durable.WithInstanceID("test-inst"))
		}),
	}
	if newer != "" {
		defs = append(defs, durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			newerSeen.add(scnSeen(ctx, in))
			return verAct(ctx, "OtherActivity", in)
		}, durable.Version(newer)))
	}
	h.serveReplaying(defs...)
	h.Start("Parent", "parent-inst", durable.Raw(""))
	h.verWant("parent output", h.Completed("parent-inst"), "result:activity-input")
	scnAllEqual(h, "the child", seen.list(), "test-orch|"+version+"|original-input|exec=1", 2)
	if s := newerSeen.list(); len(s) != 0 {
		h.Fatalf("version %s ran: %v", newer, s)
	}
	h.Completed("test-inst")
	_, started := verStarted(h, h.History("test-inst"))
	var scheduled uint64
	for _, ev := range h.History("parent-inst") {
		if _, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
			scheduled = ev.EventID
		}
	}
	if started.ParentInstance == nil || *started.ParentInstance != "parent-inst" || started.ParentID == nil || *started.ParentID != scheduled {
		h.Fatalf("child started %+v; want parent parent-inst, parent id %d", started, scheduled)
	}
	for _, ev := range h.History("parent-inst") {
		if _, ok := ev.Kind.(provider.SubOrchestrationCompleted); ok && (ev.SourceEventID == nil || *ev.SourceEventID != scheduled) {
			h.Fatalf("child result delivered to %v; want event %d", ev.SourceEventID, scheduled)
		}
	}
}

func unitWorkitemReaderCompletionOnlyMustPreserveVersion(h *H) {
	scnChildFields(h, "1.0.2", "1.0.3")
}

func unitWorkitemReaderCompletionOnlyTupleFieldAnalysis(h *H) {
	scnChildFields(h, "1.0.0", "")
}

// scnCANThenActivity registers test-orch: 1.0.0 continues as new on 2.0.0
// with input can-input; 2.0.0 calls SomeActivity; 3.0.0 (the latest) must
// never run. seen records what 2.0.0 saw.
func scnCANThenActivity(h *H, seen, latest *verCalls) {
	h.serveReplaying(
		durable.ActivityFunc("SomeActivity", func(_ context.Context, in string) (string, error) { return in, nil }),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return "", ctx.ContinueAsNew(durable.Raw("can-input"), durable.Version("2.0.0"))
		}),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			seen.add(scnSeen(ctx, in))
			return verAct(ctx, "SomeActivity", "activity-input")
		}, durable.Version("2.0.0")),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			latest.add(scnSeen(ctx, in))
			return "", errors.New("3.0.0 must not run")
		}, durable.Version("3.0.0")),
	)
	h.Start("test-orch", "test-inst", durable.Raw("first-input"), durable.Version("1.0.0"))
	h.verWant("output", h.Completed("test-inst"), "activity-input")
}

func unitWorkitemReaderNthExecutionMustPreserveVersion(h *H) {
	// The original's execution 2 also carries a parent; a continue-as-new
	// carries none in either engine, so the parent fields are checked by
	// unit_workitem_reader_completion_only_must_preserve_version.
	seen, latest := &verCalls{}, &verCalls{}
	scnCANThenActivity(h, seen, latest)
	scnAllEqual(h, "execution 2", seen.list(), "test-orch|2.0.0|can-input|exec=2", 2)
	if s := latest.list(); len(s) != 0 {
		h.Fatalf("the latest version ran: %v", s)
	}
}

func unitNthExecutionHistoryStartsWithOrchestrationStarted(h *H) {
	seen, latest := &verCalls{}, &verCalls{}
	scnCANThenActivity(h, seen, latest)
	e2 := verExecution(h, "test-inst", 2)
	if len(e2) < 2 {
		h.Fatalf("execution 2: %v", EventTypes(e2))
	}
	s, ok := e2[0].Kind.(provider.OrchestrationStarted)
	if !ok || e2[0].EventID != 1 || e2[0].ExecutionID != 2 || s.Name != "test-orch" || s.Version != "2.0.0" || s.Input != "can-input" {
		h.Fatalf("execution 2 begins with %+v %+v; want OrchestrationStarted #1 of test-orch 2.0.0 with can-input", e2[0], e2[0].Kind)
	}
	a, ok := e2[1].Kind.(provider.ActivityScheduled)
	if !ok || e2[1].EventID != 2 || a.Name != "SomeActivity" || a.Input != "activity-input" {
		h.Fatalf("execution 2's second event %+v", e2[1])
	}
}

func unitInputComesFromExtractContextNotWorkitemReader(h *H) {
	seen := &verCalls{}
	h.serveReplaying(
		durable.ActivityFunc("SomeActivity", func(_ context.Context, in string) (string, error) { return in, nil }),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			seen.add(in)
			return verAct(ctx, "SomeActivity", "activity-input")
		}),
	)
	const input = "ORIGINAL-INPUT-FROM-FIRST-TURN"
	h.Start("test-orch", "test-inst", durable.Raw(input))
	h.verWant("output", h.Completed("test-inst"), "activity-input")
	scnAllEqual(h, "the orchestration", seen.list(), input, 2)
}

func e2eCANInputPreservedDuringCompletionOnlyReplay(h *H) {
	v1, v2 := &verCalls{}, &verCalls{}
	h.serveReplaying(
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return in, nil }),
		durable.OrchestrationFunc("InputTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			v1.add(in)
			return "", ctx.ContinueAsNew(durable.Raw("INPUT-FOR-V2-FROM-CAN"), durable.Version("2.0.0"))
		}),
		durable.OrchestrationFunc("InputTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			v2.add(in)
			r, err := verAct(ctx, "Echo", in)
			return "v2-got-input:" + r, err
		}, durable.Version("2.0.0")),
	)
	h.Start("InputTest", "input-test", durable.Raw("ORIGINAL-INPUT-FOR-V1"), durable.Version("1.0.0"))
	h.verWant("output", h.Completed("input-test"), "v2-got-input:INPUT-FOR-V2-FROM-CAN")
	if !slices.Contains(v1.list(), "ORIGINAL-INPUT-FOR-V1") {
		h.Fatalf("v1 saw %v", v1.list())
	}
	scnAllEqual(h, "v2", v2.list(), "INPUT-FOR-V2-FROM-CAN", 2)
}

func unitCompletionOnlyReplayUsesNthExecutionInput(h *H) {
	seen := &verCalls{}
	h.serveReplaying(
		durable.ActivityFunc("SomeActivity", func(_ context.Context, in string) (string, error) { return in, nil }),
		durable.OrchestrationFunc("test-orch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			seen.add(fmt.Sprintf("%d|%s", ctx.ExecutionID(), in))
			if ctx.ExecutionID() == 1 {
				return "", ctx.ContinueAsNew(durable.Raw("CAN-INPUT-FOR-EXECUTION-2"))
			}
			return verAct(ctx, "SomeActivity", "activity-input")
		}),
	)
	h.Start("test-orch", "test-inst", durable.Raw("EXECUTION-1-INPUT"))
	h.verWant("output", h.Completed("test-inst"), "activity-input")
	var e1, e2 []string
	for _, s := range seen.list() {
		if strings.HasPrefix(s, "1|") {
			e1 = append(e1, s)
		} else {
			e2 = append(e2, s)
		}
	}
	scnAllEqual(h, "execution 1", e1, "1|EXECUTION-1-INPUT", 1)
	scnAllEqual(h, "execution 2", e2, "2|CAN-INPUT-FOR-EXECUTION-2", 2)
}

// ---- toygres.rs

// scnCounter continues as new with input+1 until it reaches last.
func scnCounter(name string, last int, step func(ctx *durable.OrchestrationContext, n int) error) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if step != nil {
			if err := step(ctx, n); err != nil {
				return "", err
			}
		}
		if n < last {
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		return fmt.Sprintf("completed at %d", n), nil
	})
}

// scnCheckChain checks the n executions of a continue-as-new chain.
func scnCheckChain(h *H, id string, n uint64, each func(exec uint64, hist []provider.Event)) {
	h.Helper()
	for exec := uint64(1); exec <= n; exec++ {
		hist := verExecution(h, id, exec)
		_, s := verStarted(h, hist)
		if !strings.HasPrefix(s.Version, "1.") {
			h.Errorf("%s execution %d ran version %q", id, exec, s.Version)
		}
		want := "OrchestrationContinuedAsNew"
		if exec == n {
			want = "OrchestrationCompleted"
		}
		if last := verLast(hist); last != want {
			h.Errorf("%s execution %d ends with %s; want %s", id, exec, last, want)
		}
		if err := CheckInvariants(hist); err != nil {
			h.Errorf("%s execution %d: %v", id, exec, err)
		}
		if each != nil {
			each(exec, hist)
		}
	}
}

func continueAsNewChain5Iterations(h *H) {
	h.Serve(scnCounter("Counter", 4, nil))
	h.Start("Counter", "counter-chain", durable.Raw("0"))
	h.verWant("output", h.Completed("counter-chain"), "completed at 4")
	scnCheckChain(h, "counter-chain", 5, nil)
}

func continueAsNewChainWithActivities(h *H) {
	h.Serve(
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return in, nil }),
		scnCounter("CounterWithActivity", 4, func(ctx *durable.OrchestrationContext, n int) error {
			want := fmt.Sprintf("step-%d", n)
			got, err := verAct(ctx, "Echo", want)
			if err != nil {
				return fmt.Errorf("activity failed: %w", err)
			}
			if got != want {
				return fmt.Errorf("echo returned %q; want %q", got, want)
			}
			return nil
		}),
	)
	const id = "counter-activity-chain"
	h.Start("CounterWithActivity", id, durable.Raw("0"))
	h.verWant("output", h.Completed(id), "completed at 4")
	scnCheckChain(h, id, 5, func(exec uint64, hist []provider.Event) {
		if Count(hist, "ActivityScheduled") != 1 || Count(hist, "ActivityCompleted") != 1 {
			h.Errorf("execution %d: %v; want one activity scheduled and completed", exec, EventTypes(hist))
		}
	})
}

func concurrentContinueAsNewChains(h *H) {
	h.Serve(scnCounter("ConcurrentCounter", 4, nil))
	for i := range 5 {
		h.Start("ConcurrentCounter", fmt.Sprintf("concurrent-chain-%d", i), durable.Raw("0"))
	}
	for i := range 5 {
		id := fmt.Sprintf("concurrent-chain-%d", i)
		h.verWant(id, h.Completed(id), "completed at 4")
		scnCheckChain(h, id, 5, nil)
	}
}

// The instance actor's messages (toygres's CMS activities).
type (
	scnConnIn struct {
		K8sName string `json:"k8s_name"`
	}
	scnConnOut struct {
		Found            bool    `json:"found"`
		ConnectionString *string `json:"connection_string"`
		State            *string `json:"state"`
	}
	scnTestConnIn struct {
		ConnectionString string `json:"connection_string"`
	}
	scnTestConnOut struct {
		Version string `json:"version"`
	}
	scnHealthIn struct {
		K8sName         string  `json:"k8s_name"`
		Status          string  `json:"status"`
		PostgresVersion *string `json:"postgres_version"`
		ResponseTimeMs  *int32  `json:"response_time_ms"`
		ErrorMessage    *string `json:"error_message"`
	}
	scnRecorded struct {
		Recorded bool `json:"recorded"`
	}
	scnUpdateIn struct {
		K8sName      string `json:"k8s_name"`
		HealthStatus string `json:"health_status"`
	}
	scnUpdated struct {
		Updated bool `json:"updated"`
	}
	scnActorIn struct {
		K8sName         string `json:"k8s_name"`
		OrchestrationID string `json:"orchestration_id"`
		Iteration       uint64 `json:"iteration"`
	}
)

func scnInstanceActor(ctx *durable.OrchestrationContext, in scnActorIn) (string, error) {
	ctx.Logger().Info("instance actor iteration", "iteration", in.Iteration, "k8s_name", in.K8sName, "orchestration", in.OrchestrationID)
	if in.Iteration >= 4 {
		return fmt.Sprintf("completed after %d executions", in.Iteration+1), nil
	}
	conn, err := durable.CallActivity[scnConnOut](ctx, "cms-get-instance-connection", scnConnIn{in.K8sName}).Get(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to get instance connection: %w", err)
	}
	if !conn.Found {
		return "instance not found", nil
	}
	if conn.ConnectionString == nil {
		if err := ctx.Sleep(10 * time.Millisecond); err != nil {
			return "", err
		}
		in.Iteration++
		return "", ctx.ContinueAsNew(in)
	}
	status := "healthy"
	var version, errMsg *string
	out, err := durable.CallActivity[scnTestConnOut](ctx, "test-connection", scnTestConnIn{*conn.ConnectionString}).Get(ctx)
	if err != nil {
		status = "unhealthy"
		msg := err.Error()
		errMsg = &msg
	} else {
		version = &out.Version
	}
	rt := int32(50)
	if _, err := durable.CallActivity[scnRecorded](ctx, "cms-record-health-check", scnHealthIn{in.K8sName, status, version, &rt, errMsg}).Get(ctx); err != nil {
		return "", fmt.Errorf("failed to record health check: %w", err)
	}
	if _, err := durable.CallActivity[scnUpdated](ctx, "cms-update-instance-health", scnUpdateIn{in.K8sName, status}).Get(ctx); err != nil {
		return "", fmt.Errorf("failed to update instance health: %w", err)
	}
	if err := ctx.Sleep(10 * time.Millisecond); err != nil {
		return "", err
	}
	in.Iteration++
	return "", ctx.ContinueAsNew(in)
}

func instanceActorPatternStressTest(h *H) {
	h.Serve(
		durable.NewActivity("cms-get-instance-connection", func(_ context.Context, in scnConnIn) (scnConnOut, error) {
			conn, state := "postgresql://localhost/db_"+in.K8sName, "running"
			return scnConnOut{true, &conn, &state}, nil
		}),
		durable.NewActivity("test-connection", func(_ context.Context, in scnTestConnIn) (scnTestConnOut, error) {
			if !strings.HasPrefix(in.ConnectionString, "postgresql://") {
				return scnTestConnOut{}, fmt.Errorf("bad connection string %q", in.ConnectionString)
			}
			return scnTestConnOut{"PostgreSQL 16.1"}, nil
		}),
		durable.NewActivity("cms-record-health-check", func(_ context.Context, in scnHealthIn) (scnRecorded, error) {
			if in.Status != "healthy" || in.PostgresVersion == nil {
				return scnRecorded{}, fmt.Errorf("unexpected health record %+v", in)
			}
			return scnRecorded{true}, nil
		}),
		durable.NewActivity("cms-update-instance-health", func(_ context.Context, _ scnUpdateIn) (scnUpdated, error) {
			return scnUpdated{true}, nil
		}),
		durable.NewOrchestration("InstanceActor", scnInstanceActor),
	)
	ids := []string{"instance-actor-test-1", "instance-actor-test-2", "instance-actor-test-3"}
	for i, id := range ids {
		h.Start("InstanceActor", id, scnActorIn{fmt.Sprintf("test-instance-%d", i+1), fmt.Sprintf("orch-123-%d", i+1), 0})
	}
	for _, id := range ids {
		out, err := durable.WaitForOutput[string](h.Ctx(), h.Client, id)
		if err != nil {
			h.Fatalf("%s: %v", id, err)
		}
		if !strings.Contains(out, "completed after 5 executions") {
			h.Fatalf("%s output %q", id, out)
		}
		scnCheckChain(h, id, 5, func(exec uint64, hist []provider.Event) {
			if _, s := verStarted(h, hist); s.Name != "InstanceActor" {
				h.Errorf("%s execution %d runs %q", id, exec, s.Name)
			}
			if n := Count(hist, "ActivityScheduled"); exec < 5 && n < 4 {
				h.Errorf("%s execution %d scheduled %d activities; want at least 4", id, exec, n)
			}
			if n := Count(hist, "TimerFired"); exec < 5 && n != 1 {
				h.Errorf("%s execution %d fired %d timers; want 1", id, exec, n)
			}
		})
	}
}

func timerFiresAtCorrectTimeRegression(h *H) {
	// duroxide races a 1 s timer against a 100 ms activity after 2 s of
	// activity work and expects the activity to win. Here the real time
	// spent is shorter and the timer longer, and the history shows the
	// timer's fire time counted from when it was created, not from the
	// previous TimerFired.
	const slow, raceTimer = 300 * time.Millisecond, 10 * time.Second
	h.Serve(
		durable.ActivityFunc("SlowActivity", func(ctx context.Context, in string) (string, error) {
			ms, _ := strconv.Atoi(in)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return "activity_done", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		}),
		durable.OrchestrationFunc("TimerBugTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if err := ctx.Sleep(100 * time.Millisecond); err != nil {
				return "", err
			}
			if _, err := verAct(ctx, "SlowActivity", strconv.Itoa(int(slow/time.Millisecond))); err != nil {
				return "", err
			}
			timer := ctx.CreateTimer(raceTimer)
			activity := durable.CallActivity[durable.Raw](ctx, "SlowActivity", durable.Raw("0"))
			if durable.Race(ctx, timer, activity) == 0 {
				return "timer_won", nil
			}
			r, err := activity.Get(ctx)
			if err != nil {
				return "activity_failed: " + err.Error(), nil
			}
			return string(r), nil
		}),
	)
	h.Start("TimerBugTest", "timer-bug-test", durable.Raw(""))
	h.verWant("race winner", h.Completed("timer-bug-test"), "activity_done")
	created := ofKindScn[provider.TimerCreated](h.History("timer-bug-test"))
	if len(created) != 2 {
		h.Fatalf("%d timers created; want 2", len(created))
	}
	first, second := created[0].Kind.(provider.TimerCreated), created[1].Kind.(provider.TimerCreated)
	if min := first.FireAtMs + uint64((slow + raceTimer).Milliseconds()); second.FireAtMs < min {
		h.Fatalf("race timer fires at %d, before %d: counted from the earlier timer, not from its creation", second.FireAtMs, min)
	}
	if second.FireAtMs < created[1].TimestampMs+uint64(raceTimer.Milliseconds()) {
		h.Fatalf("race timer fires at %d, less than %v after its creation at %d", second.FireAtMs, raceTimer, created[1].TimestampMs)
	}
}

// ofKindScn returns the events of kind K.
func ofKindScn[K provider.EventKind](events []provider.Event) []provider.Event {
	var out []provider.Event
	for _, ev := range events {
		if _, ok := ev.Kind.(K); ok {
			out = append(out, ev)
		}
	}
	return out
}

// ---- single_thread.rs
//
// duroxide runs these on tokio's current_thread runtime (an embedded
// host); the ports run one orchestration slot and one worker slot.

func scnOneByOne(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = 1, 1 }

func singleThreadBasicOrchestration(h *H) {
	h.Runtime(h.Registry(
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return "echo: " + in, nil }),
		durable.OrchestrationFunc("SingleThreadOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return verAct(ctx, "Echo", in)
		}),
	), scnOneByOne)
	h.Start("SingleThreadOrch", "single-thread-test", durable.Raw("hello"))
	h.verWant("output", h.Completed("single-thread-test"), "echo: hello")
}

func singleThreadSequentialActivities(h *H) {
	h.Runtime(h.Registry(
		durable.ActivityFunc("Add", func(_ context.Context, in string) (string, error) {
			n, _ := strconv.Atoi(in)
			return strconv.Itoa(n + 1), nil
		}),
		durable.OrchestrationFunc("SequentialOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			for range 3 {
				var err error
				if in, err = verAct(ctx, "Add", in); err != nil {
					return "", err
				}
			}
			return in, nil
		}),
	), scnOneByOne)
	h.Start("SequentialOrch", "sequential-test", durable.Raw("0"))
	h.verWant("output", h.Completed("sequential-test"), "3")
	if n := Count(h.History("sequential-test"), "ActivityCompleted"); n != 3 {
		h.Fatalf("%d activities completed; want 3", n)
	}
}

func singleThreadTimerHandling(h *H) {
	h.Runtime(h.Registry(durable.OrchestrationFunc("TimerOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return "timer_done", nil
	})), scnOneByOne)
	h.Start("TimerOrch", "timer-test", durable.Raw(""))
	h.verWant("output", h.Completed("timer-test"), "timer_done")
	if Count(h.History("timer-test"), "TimerFired") != 1 {
		h.Fatalf("history %v; want the timer fired", EventTypes(h.History("timer-test")))
	}
}

func singleThreadContinueAsNew(h *H) {
	h.Runtime(h.Registry(durable.OrchestrationFunc("CounterOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		return fmt.Sprintf("done:%d", n), nil
	})), scnOneByOne)
	h.Start("CounterOrch", "can-test", durable.Raw("0"))
	h.verWant("output", h.Completed("can-test"), "done:3")
	scnCheckChain(h, "can-test", 4, nil)
}

func singleThreadConcurrentOrchestrations(h *H) {
	h.Runtime(h.Registry(
		durable.ActivityFunc("Process", func(_ context.Context, in string) (string, error) { return "processed:" + in, nil }),
		durable.OrchestrationFunc("ConcurrentOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return verAct(ctx, "Process", in)
		}),
	), scnOneByOne)
	for i := range 3 {
		h.Start("ConcurrentOrch", fmt.Sprintf("concurrent-%d", i), durable.Raw(strconv.Itoa(i)))
	}
	for i := range 3 {
		h.verWant("output", h.Completed(fmt.Sprintf("concurrent-%d", i)), fmt.Sprintf("processed:%d", i))
	}
}

func singleThreadSingleConcurrency(h *H) {
	h.Runtime(h.Registry(
		durable.ActivityFunc("Work", func(_ context.Context, in string) (string, error) { return "result:" + in, nil }),
		durable.OrchestrationFunc("SingleConcOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return verAct(ctx, "Work", in)
		}),
	), scnOneByOne)
	h.Start("SingleConcOrch", "single-conc-test", durable.Raw("data"))
	h.verWant("output", h.Completed("single-conc-test"), "result:data")
}

// scnFastCancel: a short worker lock so a stolen lock is noticed quickly.
func scnFastCancel(grace time.Duration) func(*durable.Options) {
	return func(o *durable.Options) {
		o.WorkerLockTimeout = 2 * time.Second
		o.WorkerLockRenewalBuffer = 500 * time.Millisecond
		o.ActivityCancellationGracePeriod = grace
	}
}

func singleThread1x1CooperativeActivityCancellation(h *H) {
	started, saw := make(chan struct{}), make(chan error, 1)
	var once atomic.Bool
	h.Runtime(h.Registry(
		durable.ActivityFunc("CooperativeActivity", func(ctx context.Context, _ string) (string, error) {
			if once.CompareAndSwap(false, true) {
				close(started)
			}
			select {
			case <-ctx.Done():
				saw <- context.Cause(ctx)
				return "cancelled_gracefully", nil
			case <-time.After(60 * time.Second):
				return "timeout", nil
			}
		}),
		durable.OrchestrationFunc("CooperativeOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = verAct(ctx, "CooperativeActivity", "input")
			return "done", nil
		}),
	), scnOneByOne, scnFastCancel(5*time.Second))
	const id = "cooperative-cancel-test"
	h.Start("CooperativeOrch", id, durable.Raw(""))
	scnRecv(h, started, "the activity to start")
	if err := h.Client.CancelInstance(h.Ctx(), id, "test_cancellation"); err != nil {
		h.Fatal(err)
	}
	if cause := scnRecv(h, saw, "the activity to see the cancellation"); !errors.Is(cause, durable.ErrActivityCancelled) {
		h.Fatalf("activity cancelled with cause %v; want ErrActivityCancelled", cause)
	}
	h.Failed(id)
	if Count(h.History(id), "ActivityCompleted") != 0 {
		h.Fatal("the cancelled activity's result was recorded")
	}
}

// scnRecv waits for ch to deliver or close.
func scnRecv[T any](h *H, ch <-chan T, what string) T {
	h.Helper()
	select {
	case v := <-ch:
		return v
	case <-h.Ctx().Done():
		h.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func singleThread1x1RunawayActivityAborted(h *H) {
	var attempts atomic.Int32
	release := make(chan struct{})
	h.Runtime(h.Registry(
		// Ignores cancellation; "runs for 30 s" (until the test ends).
		durable.ActivityFunc("RunawayActivity", func(context.Context, string) (string, error) {
			attempts.Add(1)
			<-release
			return "done", nil
		}),
		durable.ActivityFunc("Next", func(context.Context, string) (string, error) { return "next", nil }),
		durable.OrchestrationFunc("RunawayOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = verAct(ctx, "RunawayActivity", "input")
			return "ok", nil
		}),
		durable.OrchestrationFunc("NextOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return verAct(ctx, "Next", "")
		}),
	), scnOneByOne, scnFastCancel(200*time.Millisecond))
	h.Cleanup(func() { close(release) }) // runs before the runtime's shutdown
	const id = "runaway-cancel-test"
	h.Start("RunawayOrch", id, durable.Raw(""))
	h.WaitFor("the activity to start", func() bool { return attempts.Load() == 1 })
	if err := h.Client.CancelInstance(h.Ctx(), id, "cancel_runaway"); err != nil {
		h.Fatal(err)
	}
	h.Failed(id)
	// duroxide checks the elapsed time stays below the activity's 30 s; here
	// the only worker slot must be given up after the grace period while
	// the runaway activity still runs: another activity then completes.
	h.Start("NextOrch", "runaway-next", durable.Raw(""))
	h.verWant("next output", h.Completed("runaway-next"), "next")
	if n := attempts.Load(); n != 1 {
		h.Fatalf("runaway activity started %d times; want once", n)
	}
	if Count(h.History(id), "ActivityCompleted") != 0 {
		h.Fatal("the runaway activity's result was recorded")
	}
}

// ---- copilot_chat.rs

type scnChatMessage struct {
	Seq  uint32 `json:"seq"`
	Text string `json:"text"`
}

type scnChatStatus struct {
	State        string  `json:"state"`
	LastResponse *string `json:"last_response"`
	MsgSeq       uint32  `json:"msg_seq"`
}

// scnWaitChat follows id's custom status until it is a ChatStatus with
// state and seq.
func scnWaitChat(h *H, id string, version *uint64, state string, seq uint32) scnChatStatus {
	h.Helper()
	for {
		st, err := h.Client.WaitForStatusChange(h.Ctx(), id, *version)
		if err != nil {
			h.Fatalf("waiting for state=%s seq=%d: %v", state, seq, err)
		}
		if st.State != durable.StateRunning {
			h.Fatalf("%s is %v while waiting for state=%s seq=%d", id, st.State, state, seq)
		}
		*version = st.CustomStatusVersion
		var cs scnChatStatus
		if st.CustomStatus != nil && json.Unmarshal([]byte(*st.CustomStatus), &cs) == nil && cs.State == state && cs.MsgSeq == seq {
			return cs
		}
	}
}

func copilotChatScenario(h *H) {
	h.Serve(
		durable.ActivityFunc("GenerateResponse", func(_ context.Context, msg string) (string, error) { return "Echo: " + msg, nil }),
		durable.OrchestrationFunc("ChatBot", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// One message per execution; custom status and queued messages
			// carry over continue-as-new.
			msg, err := durable.Dequeue[scnChatMessage](ctx, "inbox").Get(ctx)
			if err != nil {
				return "", err
			}
			resp, err := verAct(ctx, "GenerateResponse", msg.Text)
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(scnChatStatus{State: "replied", LastResponse: &resp, MsgSeq: msg.Seq})
			if err != nil {
				return "", err
			}
			ctx.SetCustomStatus(string(b))
			if strings.Contains(strings.ToLower(msg.Text), "bye") {
				return fmt.Sprintf("Chat ended after %d messages", msg.Seq), nil
			}
			return "", ctx.ContinueAsNew(durable.Raw(""))
		}),
	)
	const id = "chat-42"
	h.Start("ChatBot", id, durable.Raw(""))
	var version uint64
	send := func(seq uint32, text string) {
		if err := h.Client.EnqueueEvent(h.Ctx(), id, "inbox", scnChatMessage{seq, text}); err != nil {
			h.Fatal(err)
		}
	}
	for _, turn := range []struct {
		seq        uint32
		text, want string
	}{{1, "Hello!", "Echo: Hello!"}, {2, "How are you?", "Echo: How are you?"}} {
		send(turn.seq, turn.text)
		cs := scnWaitChat(h, id, &version, "replied", turn.seq)
		if cs.LastResponse == nil || *cs.LastResponse != turn.want {
			h.Fatalf("reply %v; want %q", cs.LastResponse, turn.want)
		}
	}
	send(3, "Bye!")
	st := h.Wait(id)
	if st.State != durable.StateCompleted || st.Output != "Chat ended after 3 messages" {
		h.Fatalf("final status %v output %q", st.State, st.Output)
	}
	var cs scnChatStatus
	if st.CustomStatus == nil || json.Unmarshal([]byte(*st.CustomStatus), &cs) != nil {
		h.Fatalf("final custom status %v", st.CustomStatus)
	}
	if cs.State != "replied" || cs.LastResponse == nil || *cs.LastResponse != "Echo: Bye!" || cs.MsgSeq != 3 {
		h.Fatalf("final custom status %+v", cs)
	}
}
