package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// versioningTests port duroxide's versioning_tests.rs (orchestration
// versions, policies and the registry) and capability_filtering_tests.rs
// (which runtimes replay which pinned executions).
var versioningTests = []Test{
	{"runtime_start_versioned_string_uses_explicit_version", runtimeStartVersionedStringUsesExplicitVersion},
	{"runtime_start_versioned_typed_uses_explicit_version", runtimeStartVersionedTypedUsesExplicitVersion},
	{"sub_orchestration_versioned_explicit_and_policy", subOrchestrationVersionedExplicitAndPolicy},
	{"detached_versioned_uses_policy_latest", detachedVersionedUsesPolicyLatest},
	{"continue_as_new_versioned_typed_explicit", continueAsNewVersionedTypedExplicit},
	{"start_uses_latest_version", startUsesLatestVersion},
	{"policy_exact_pins_start", policyExactPinsStart},
	{"sub_orchestration_uses_latest_by_default_and_pinned_when_set", subOrchestrationUsesLatestByDefaultAndPinnedWhenSet},
	{"parent_calls_child_upgrade_child_and_verify_latest_used", parentCallsChildUpgradeChildAndVerifyLatestUsed},
	{"continue_as_new_upgrades_version_deterministically", continueAsNewUpgradesVersionDeterministically},
	{"register_default_is_1_0_0_and_list_versions", registerDefaultIs100AndListVersions},
	{"register_multiple_versions_latest_is_highest", registerMultipleVersionsLatestIsHighest},
	{"policy_exact_pins_resolve_handler", policyExactPinsResolveHandler},
	{"duplicate_default_version_returns_error", duplicateDefaultVersionReturnsError},
	{"duplicate_specific_version_returns_error", duplicateSpecificVersionReturnsError},
	{"non_monotonic_registration_panics", nonMonotonicRegistrationPanics},
	{"resolve_handler_exact_missing_returns_none", resolveHandlerExactMissingReturnsNone},
	{"serde_boundary_v2_events", serdeBoundaryV2Events},

	{"runtime_abandons_incompatible_execution", runtimeAbandonsIncompatibleExecution},
	{"runtime_processes_compatible_execution_normally", runtimeProcessesCompatibleExecutionNormally},
	{"runtime_abandon_reaches_max_attempts_and_poisons", runtimeAbandonReachesMaxAttemptsAndPoisons},
	{"runtime_abandon_uses_short_delay", runtimeAbandonUsesShortDelay},
	{"execution_metadata_includes_pinned_version_on_new_orchestration", executionMetadataIncludesPinnedVersionOnNewOrchestration},
	{"existing_executions_without_pinned_version_remain_fetchable", existingExecutionsWithoutPinnedVersionRemainFetchable},
	{"default_supported_range_includes_current_and_older_versions", defaultSupportedRangeIncludesCurrentAndOlderVersions},
	{"default_supported_range_excludes_future_versions", defaultSupportedRangeExcludesFutureVersions},
	{"custom_supported_replay_versions_narrows_range", customSupportedReplayVersionsNarrowsRange},
	{"two_runtimes_different_version_ranges_route_correctly", twoRuntimesDifferentVersionRangesRouteCorrectly},
	{"sub_orchestration_gets_own_pinned_version", subOrchestrationGetsOwnPinnedVersion},
	{"runtime_logs_capability_declaration_at_startup", runtimeLogsCapabilityDeclarationAtStartup},
	{"overlapping_version_ranges_both_can_process", overlappingVersionRangesBothCanProcess},
	{"mixed_cluster_compatible_and_incompatible_items", mixedClusterCompatibleAndIncompatibleItems},
	{"pinned_version_extracted_from_orchestration_started_event", pinnedVersionExtractedFromOrchestrationStartedEvent},
	{"activity_completion_after_continue_as_new_is_discarded", activityCompletionAfterContinueAsNewIsDiscarded},
	{"wide_supported_range_drains_stuck_items_via_deserialization_error", wideSupportedRangeDrainsStuckItemsViaDeserializationError},
	{"runtime_logs_warning_on_incompatible_abandon", runtimeLogsWarningOnIncompatibleAbandon},
}

// ---- versioning_tests.rs

func runtimeStartVersionedStringUsesExplicitVersion(h *H) {
	reg := h.Registry(verConst("S", "v1"), verConst("S", "v2", durable.Version("2.0.0")))
	reg.SetVersionPolicy("S", durable.Latest())
	h.Runtime(reg)
	h.Start("S", "i1", durable.Raw(""), durable.Version("1.0.0"))
	h.verWant("output", h.Completed("i1"), "v1")
}

func runtimeStartVersionedTypedUsesExplicitVersion(h *H) {
	h.Serve(
		durable.NewOrchestration("T", func(*durable.OrchestrationContext, int) (int, error) { return 1, nil }),
		durable.NewOrchestration("T", func(*durable.OrchestrationContext, int) (int, error) { return 2, nil }, durable.Version("2.0.0")),
	)
	h.Start("T", "i2", 0, durable.Version("1.0.0"))
	out, err := durable.WaitForOutput[int](h.Ctx(), h.Client, "i2")
	if err != nil {
		h.Fatal(err)
	}
	if out != 1 {
		h.Fatalf("output %d; want 1", out)
	}
	h.CheckHistory("i2")
}

func subOrchestrationVersionedExplicitAndPolicy(h *H) {
	h.Serve(
		durable.OrchestrationFunc("P1", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return verSub(ctx, "C", "A", durable.Version("1.0.0"))
		}),
		durable.OrchestrationFunc("P2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return verSub(ctx, "C", "B")
		}),
		verConst("C", "c1"),
		verConst("C", "c2", durable.Version("2.0.0")),
	)
	h.Start("P1", "i3-1", durable.Raw(""))
	h.verWant("explicit 1.0.0 child", h.Completed("i3-1"), "c1")
	h.Start("P2", "i3-2", durable.Raw(""))
	h.verWant("child by policy (latest)", h.Completed("i3-2"), "c2")
}

func detachedVersionedUsesPolicyLatest(h *H) {
	h.Serve(
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// A detached start uses the registry's policy (latest).
			if err := ctx.StartOrchestration("Leaf", "child-1", durable.Raw("")); err != nil {
				return "", err
			}
			return "ok", nil
		}),
		verConst("Leaf", "l1"),
		verConst("Leaf", "l2", durable.Version("2.0.0")),
	)
	h.Start("Parent", "i4", durable.Raw(""))
	h.verWant("parent output", h.Completed("i4"), "ok")
	// duroxide starts a second Leaf from the client to see the version;
	// here the detached instance itself is checked.
	child := ""
	for _, ev := range h.History("i4") {
		if k, ok := ev.Kind.(provider.OrchestrationChained); ok {
			child = k.Instance
		}
	}
	if child == "" {
		h.Fatalf("no OrchestrationChained in %v", EventTypes(h.History("i4")))
	}
	h.verWant("detached child output", h.Completed(child), "l2")
	if _, s := verStarted(h, h.History(child)); s.Version != "2.0.0" {
		h.Fatalf("detached child ran version %q; want 2.0.0", s.Version)
	}
}

func continueAsNewVersionedTypedExplicit(h *H) {
	h.Serve(
		durable.OrchestrationFunc("Up", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return "", ctx.ContinueAsNew(durable.Raw("payload"), durable.Version("2.0.0"))
		}),
		durable.OrchestrationFunc("Up", func(_ *durable.OrchestrationContext, in string) (string, error) {
			if in != "payload" {
				return "", fmt.Errorf("input %q", in)
			}
			return "done", nil
		}, durable.Version("2.0.0")),
	)
	// duroxide starts with the default policy, which already picks 2.0.0;
	// starting on 1.0.0 makes the versioned continue-as-new happen.
	h.Start("Up", "i5", durable.Raw(""), durable.Version("1.0.0"))
	h.verWant("output", h.Completed("i5"), "done")
	if _, s := verStarted(h, verExecution(h, "i5", 2)); s.Version != "2.0.0" || s.Input != "payload" {
		h.Fatalf("execution 2 started %+v; want 2.0.0 with input payload", s)
	}
}

func startUsesLatestVersion(h *H) {
	h.Serve(verPrefix("OrderFlow", "v1:"), verPrefix("OrderFlow", "v1.1:", durable.Version("1.1.0")))
	h.Start("OrderFlow", "inst-vlatest", durable.Raw("X"))
	h.verWant("output", h.Completed("inst-vlatest"), "v1.1:X")
	if last := verLast(verExecution(h, "inst-vlatest", 1)); last != "OrchestrationCompleted" {
		h.Fatalf("last event %s; want OrchestrationCompleted", last)
	}
}

func policyExactPinsStart(h *H) {
	reg := h.Registry(verPrefix("OrderFlow", "v1:"), verPrefix("OrderFlow", "v1.1:", durable.Version("1.1.0")))
	reg.SetVersionPolicy("OrderFlow", durable.Exact("1.0.0"))
	h.Runtime(reg)
	h.Start("OrderFlow", "inst-vpin", durable.Raw("Y"))
	h.verWant("output", h.Completed("inst-vpin"), "v1:Y")
}

func subOrchestrationUsesLatestByDefaultAndPinnedWhenSet(h *H) {
	reg := h.Registry(
		durable.OrchestrationFunc("ParentFlow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return verSub(ctx, "ChildFlow", in)
		}),
		verPrefix("ChildFlow", "c1:"),
		verPrefix("ChildFlow", "c1.1:", durable.Version("1.1.0")),
	)
	h.Runtime(reg)
	h.Start("ParentFlow", "inst-child-latest", durable.Raw("Z"))
	h.verWant("output with the latest child", h.Completed("inst-child-latest"), "c1.1:Z")
	// The policy changes while the runtime runs.
	reg.SetVersionPolicy("ChildFlow", durable.Exact("1.0.0"))
	h.Start("ParentFlow", "inst-child-pinned", durable.Raw("Q"))
	h.verWant("output with the pinned child", h.Completed("inst-child-pinned"), "c1:Q")
}

func parentCallsChildUpgradeChildAndVerifyLatestUsed(h *H) {
	h.Serve(
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return verSub(ctx, "Child", in)
		}),
		verPrefix("Child", "cv1:"),
		verPrefix("Child", "cv1.1:", durable.Version("1.1.0")),
	)
	const id = "inst-parent-child-upgrade"
	h.Start("Parent", id, durable.Raw("inp"))
	h.verWant("output", h.Completed(id), "cv1.1:inp")
	hist := verExecution(h, id, 1)
	if last := verLast(hist); last != "OrchestrationCompleted" {
		h.Fatalf("last event %s; want OrchestrationCompleted", last)
	}
	if Count(hist, "SubOrchestrationCompleted") != 1 {
		h.Fatalf("history %v; want a SubOrchestrationCompleted", EventTypes(hist))
	}
}

func continueAsNewUpgradesVersionDeterministically(h *H) {
	reg := h.Registry(
		durable.OrchestrationFunc("Upgrader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return "", ctx.ContinueAsNew(durable.Raw("from_v1_to_v2"), durable.Version("2.0.0"))
		}),
		verPrefix("Upgrader", "v2_done:", durable.Version("2.0.0")),
	)
	reg.SetVersionPolicy("Upgrader", durable.Exact("1.0.0"))
	h.Runtime(reg)
	const id = "inst-can-upgrade"
	h.Start("Upgrader", id, durable.Raw("seed"))
	h.verWant("output", h.Completed(id), "v2_done:from_v1_to_v2")
	e1 := verExecution(h, id, 1)
	if _, s := verStarted(h, e1); s.Version != "1.0.0" || verLast(e1) != "OrchestrationContinuedAsNew" {
		h.Fatalf("execution 1 %v on %q; want 1.0.0 continued as new", EventTypes(e1), s.Version)
	}
	if _, s := verStarted(h, verExecution(h, id, 2)); s.Version != "2.0.0" {
		h.Fatalf("execution 2 ran %q; want 2.0.0", s.Version)
	}
	// The terminal status stays the same on a second look.
	h.verWant("output again", h.Completed(id), "v2_done:from_v1_to_v2")
}

func verEcho(name string, opts ...durable.Option) durable.Definition {
	return durable.OrchestrationFunc(name, func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }, opts...)
}

func registerDefaultIs100AndListVersions(h *H) {
	reg := h.Registry(verEcho("OrderFlow"))
	// The registry lists versions per name (a name with versions is
	// registered); it has no separate list of orchestration names.
	if vs := reg.OrchestrationVersions("OrderFlow"); !slices.Equal(vs, []string{"1.0.0"}) {
		h.Fatalf("versions %v; want [1.0.0]", vs)
	}
	if vs := reg.OrchestrationVersions("Missing"); len(vs) != 0 {
		h.Fatalf("versions of an unregistered name: %v", vs)
	}
}

func registerMultipleVersionsLatestIsHighest(h *H) {
	reg := h.Registry(verEcho("OrderFlow"), verEcho("OrderFlow", durable.Version("1.1.0")), verEcho("OrderFlow", durable.Version("2.0.0")))
	if vs := reg.OrchestrationVersions("OrderFlow"); !slices.Equal(vs, []string{"1.0.0", "1.1.0", "2.0.0"}) {
		h.Fatalf("versions %v; want [1.0.0 1.1.0 2.0.0]", vs)
	}
	if _, v, err := reg.ReplayResolver()("OrderFlow", nil); err != nil || v != "2.0.0" {
		h.Fatalf("latest resolves to %q (%v); want 2.0.0", v, err)
	}
}

func verResolve(h *H, reg *durable.Registry, name string, version *string) string {
	h.Helper()
	_, v, err := reg.ReplayResolver()(name, version)
	if err != nil {
		h.Fatalf("resolve %s: %v", name, err)
	}
	return v
}

func policyExactPinsResolveHandler(h *H) {
	reg := h.Registry(verEcho("OrderFlow"), verEcho("OrderFlow", durable.Version("1.1.0")))
	h.verWant("default (latest)", verResolve(h, reg, "OrderFlow", nil), "1.1.0")
	reg.SetVersionPolicy("OrderFlow", durable.Exact("1.0.0"))
	h.verWant("pinned", verResolve(h, reg, "OrderFlow", nil), "1.0.0")
	reg.SetVersionPolicy("OrderFlow", durable.Latest())
	h.verWant("unpinned", verResolve(h, reg, "OrderFlow", nil), "1.1.0")
}

func verExpectDuplicate(h *H, defs ...durable.Definition) {
	h.Helper()
	_, err := durable.NewRegistry(defs...)
	if !errors.Is(err, durable.ErrInvalidDefinition) || !strings.Contains(err.Error(), "registered twice") {
		h.Fatalf("NewRegistry with a duplicate: %v; want a duplicate registration error", err)
	}
}

func duplicateDefaultVersionReturnsError(h *H) {
	verExpectDuplicate(h, verEcho("OrderFlow"), verEcho("OrderFlow"))
}

func duplicateSpecificVersionReturnsError(h *H) {
	verExpectDuplicate(h, verEcho("OrderFlow", durable.Version("1.2.0")), verEcho("OrderFlow", durable.Version("1.2.0")))
}

func nonMonotonicRegistrationPanics(h *H) {
	// duradyn deviates: versions may be registered in any order (the
	// registry keeps them sorted), where duroxide's builder panics on a
	// version lower than the last one registered.
	reg := h.Registry(verEcho("OrderFlow", durable.Version("2.0.0")), verEcho("OrderFlow", durable.Version("1.1.0")))
	if err := reg.Add(verEcho("OrderFlow", durable.Version("1.0.0"))); err != nil {
		h.Fatalf("adding a lower version: %v", err)
	}
	if vs := reg.OrchestrationVersions("OrderFlow"); !slices.Equal(vs, []string{"1.0.0", "1.1.0", "2.0.0"}) {
		h.Fatalf("versions %v; want sorted [1.0.0 1.1.0 2.0.0]", vs)
	}
	h.verWant("latest", verResolve(h, reg, "OrderFlow", nil), "2.0.0")
}

func resolveHandlerExactMissingReturnsNone(h *H) {
	reg := h.Registry(verEcho("OrderFlow"))
	missing, one := "9.9.9", "1.0.0"
	if _, _, err := reg.ReplayResolver()("OrderFlow", &missing); err == nil {
		h.Fatal("resolving an unregistered version succeeded")
	}
	if _, _, err := reg.ReplayResolver()("Missing", &one); err == nil {
		h.Fatal("resolving an unregistered name succeeded")
	}
	h.verWant("registered exact version", verResolve(h, reg, "OrderFlow", &one), "1.0.0")
}

func serdeBoundaryV2Events(h *H) {
	// duradyn has no ExternalSubscribed2/ExternalEvent2 (duroxide's
	// replay-version-test feature): like a duroxide build without the
	// feature, it refuses to decode them, so it cannot replay histories
	// written by a runtime that has them.
	const head = `"event_id":2,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":0,"duroxide_version":"0.1.29"`
	for _, body := range []string{
		`{` + head + `,"type":"ExternalSubscribed2","name":"x","topic":"y"}`,
		`{` + head + `,"type":"ExternalEvent2","name":"x","topic":"y","data":"payload"}`,
	} {
		var ev provider.Event
		if err := json.Unmarshal([]byte(body), &ev); !errors.Is(err, provider.ErrUnknownKind) {
			h.Errorf("decoding %s: %v; want an unknown-kind error", body, err)
		}
	}
	var ev provider.Event
	if err := json.Unmarshal([]byte(`{`+head+`,"type":"ExternalSubscribed","name":"x"}`), &ev); err != nil {
		h.Fatalf("decoding a known event: %v", err)
	}
	if k, ok := ev.Kind.(provider.ExternalSubscribed); !ok || k.Name != "x" {
		h.Fatalf("decoded %+v", ev.Kind)
	}
}

// ---- capability_filtering_tests.rs

// verIdle is the orchestration seeded instances run: it completes at once.
func verIdle(name, out string) durable.Definition { return verConst(name, out) }

func runtimeAbandonsIncompatibleExecution(h *H) {
	verSeedPinned(h, "incompat-12", "TestOrch", "99.0.0")
	p := newVerProvider(h.P)
	h.runtimeOn(p, h.Registry(verIdle("TestOrch", "completed")), verShortPoll, func(o *durable.Options) { o.MaxAttempts = 3 })
	// duroxide sleeps 2 s; here the runtime's fetches are counted: each
	// one looked at the queue holding the incompatible instance.
	verAwaitFetches(h, p, 6)
	if a := p.abandonsOf("incompat-12"); len(a) != 0 {
		h.Fatalf("the incompatible instance was fetched (abandons %v); the filter should hide it", a)
	}
	verExpectUntouched(h, "incompat-12")
}

func runtimeProcessesCompatibleExecutionNormally(h *H) {
	h.Serve(verConst("CompatOrch", "compatible-ok"))
	h.Start("CompatOrch", "compat-13", durable.Raw("{}"))
	h.verWant("output", h.Completed("compat-13"), "compatible-ok")
}

func runtimeAbandonReachesMaxAttemptsAndPoisons(h *H) {
	// As in duroxide: with the provider honouring the filter the item never
	// reaches the runtime, so it is neither abandoned nor poisoned, however
	// low MaxAttempts is.
	verSeedPinned(h, "poison-14", "TestOrch", "99.0.0")
	p := newVerProvider(h.P)
	h.runtimeOn(p, h.Registry(verIdle("TestOrch", "should-not-reach")), verShortPoll, func(o *durable.Options) { o.MaxAttempts = 1 })
	verAwaitFetches(h, p, 6)
	if a := p.abandonsOf("poison-14"); len(a) != 0 {
		h.Fatalf("the incompatible instance was fetched (abandons %v)", a)
	}
	verExpectUntouched(h, "poison-14")
}

func runtimeAbandonUsesShortDelay(h *H) {
	// duroxide checks only that the instance is still Running after 500 ms.
	// Here a provider that ignores the filter hands the item to the
	// runtime, whose own check must abandon it with a delay (no spin) that
	// is short, and without poisoning it.
	verSeedPinned(h, "delay-15", "TestOrch", "99.0.0")
	p := newVerProvider(h.P)
	p.bypassFilter = true
	h.runtimeOn(p, h.Registry(verIdle("TestOrch", "should-not-reach")), func(o *durable.Options) { o.MaxAttempts = 100 })
	h.WaitFor("the incompatible instance to be abandoned", func() bool { return len(p.abandonsOf("delay-15")) > 0 })
	for _, a := range p.abandonsOf("delay-15") {
		if a.delay <= 0 || a.delay > 5*time.Second {
			h.Fatalf("abandoned with delay %v; want a short non-zero delay", a.delay)
		}
	}
	verExpectUntouched(h, "delay-15")
}

func executionMetadataIncludesPinnedVersionOnNewOrchestration(h *H) {
	h.Serve(verConst("MetaOrch", "meta-ok"))
	h.Start("MetaOrch", "meta-19", durable.Raw("{}"))
	h.verWant("output", h.Completed("meta-19"), "meta-ok")
	ev, _ := verStarted(h, h.History("meta-19"))
	if ev.DuroxideVersion != durable.ReplayVersion {
		h.Fatalf("pinned version %q; want %s", ev.DuroxideVersion, durable.ReplayVersion)
	}
	verSemver(h, ev.DuroxideVersion)
}

func existingExecutionsWithoutPinnedVersionRemainFetchable(h *H) {
	// An instance nobody has run yet (only its start is queued) has no
	// pinned version and is always admitted: even by a runtime whose range
	// (here 2.x only) excludes every pinned version involved.
	version := "1.0.0"
	if err := verStore(h).EnqueueForOrchestrator(h.Ctx(), provider.StartOrchestrationItem{
		Instance: "null-20", Orchestration: "NullOrch", Input: "{}", Version: &version, ExecutionID: 1,
	}, 0); err != nil {
		h.Fatal(err)
	}
	h.Runtime(h.Registry(verConst("NullOrch", "null-ok")), verRange(h, "2.0.0", "2.99.99"))
	h.verWant("output", h.Completed("null-20"), "null-ok")
}

func defaultSupportedRangeIncludesCurrentAndOlderVersions(h *H) {
	verSeedPinned(h, "range-older", "RangeOrch", "0.1.0")
	h.Serve(verConst("RangeOrch", "range-ok"))
	h.Start("RangeOrch", "range-26", durable.Raw("{}"))
	h.verWant("current version's output", h.Completed("range-26"), "range-ok")
	h.verWant("older version's output", h.Completed("range-older"), "range-ok")
}

func defaultSupportedRangeExcludesFutureVersions(h *H) {
	verSeedPinned(h, "future-27", "FutureOrch", "99.0.0")
	p := newVerProvider(h.P)
	h.runtimeOn(p, h.Registry(verIdle("FutureOrch", "should-not-reach")), verShortPoll, func(o *durable.Options) { o.MaxAttempts = 3 })
	verAwaitFetches(h, p, 6)
	verExpectUntouched(h, "future-27")
}

func customSupportedReplayVersionsNarrowsRange(h *H) {
	verSeedPinned(h, "narrow-28", "NarrowOrch", "1.0.0")
	p := newVerProvider(h.P)
	h.runtimeOn(p, h.Registry(verIdle("NarrowOrch", "should-not-reach")), verShortPoll, verRange(h, "2.0.0", "2.99.99"))
	verAwaitFetches(h, p, 6)
	verExpectUntouched(h, "narrow-28")
}

func twoRuntimesDifferentVersionRangesRouteCorrectly(h *H) {
	verSeedPinned(h, "v1-inst", "RoutingOrch", "1.0.0")
	verSeedPinned(h, "v2-inst", "RoutingOrch", "2.0.0")
	// Each runtime's code says which runtime ran the instance.
	h.Runtime(h.Registry(verConst("RoutingOrch", "routed-by-A")), verRange(h, "1.0.0", "1.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	h.Runtime(h.Registry(verConst("RoutingOrch", "routed-by-B")), verRange(h, "2.0.0", "2.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	h.verWant("v1 instance", h.Completed("v1-inst"), "routed-by-A")
	h.verWant("v2 instance", h.Completed("v2-inst"), "routed-by-B")
}

func subOrchestrationGetsOwnPinnedVersion(h *H) {
	h.Serve(
		durable.OrchestrationFunc("ParentOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			r, err := verSub(ctx, "ChildOrch", "child-input")
			return "parent-done:" + r, err
		}),
		verConst("ChildOrch", "child-done"),
	)
	h.Start("ParentOrch", "parent-24", durable.Raw("{}"))
	h.verWant("output", h.Completed("parent-24"), "parent-done:child-done")
	child := ""
	for _, ev := range h.History("parent-24") {
		if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
			child = k.Instance
			if strings.HasPrefix(child, "sub::") {
				child = "parent-24::" + child
			}
		}
	}
	if child == "" {
		h.Fatalf("no SubOrchestrationScheduled in %v", EventTypes(h.History("parent-24")))
	}
	h.Completed(child)
	if ev, _ := verStarted(h, h.History(child)); ev.DuroxideVersion != durable.ReplayVersion {
		h.Fatalf("child pinned at %q; want %s", ev.DuroxideVersion, durable.ReplayVersion)
	}
}

func runtimeLogsCapabilityDeclarationAtStartup(h *H) {
	logs := &verLogs{}
	h.Runtime(h.Registry(verConst("LogOrch", "ok")), func(o *durable.Options) { o.Logger = logs.logger() })
	rec, ok := logs.find(func(r verRecord) bool {
		_, has := r.attrs["supported_replay_versions"]
		return r.level == slog.LevelInfo && has
	})
	if !ok {
		h.Fatal("no startup log declaring the supported replay versions")
	}
	if v := rec.attrs["supported_replay_versions"]; !strings.Contains(v, durable.ReplayVersion) {
		h.Fatalf("declared range %q; want one up to %s", v, durable.ReplayVersion)
	}
}

func overlappingVersionRangesBothCanProcess(h *H) {
	verSeedPinned(h, "overlap-17", "OverlapOrch", "2.5.0")
	h.Runtime(h.Registry(verConst("OverlapOrch", "overlap-ok")), verRange(h, "1.0.0", "2.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	h.Runtime(h.Registry(verConst("OverlapOrch", "overlap-ok")), verRange(h, "2.0.0", "3.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	h.verWant("output", h.Completed("overlap-17"), "overlap-ok")
	// Completed once: one terminal event (checked by Completed) and the
	// seeded start followed by a single turn's events.
	if n := Count(h.History("overlap-17"), "OrchestrationCompleted"); n != 1 {
		h.Fatalf("%d completions", n)
	}
}

func mixedClusterCompatibleAndIncompatibleItems(h *H) {
	for i := range 3 {
		verSeedPinned(h, fmt.Sprintf("v1-mixed-%d", i), "MixedOrch", fmt.Sprintf("1.%d.0", i))
	}
	for i := range 2 {
		verSeedPinned(h, fmt.Sprintf("v2-mixed-%d", i), "MixedOrch", fmt.Sprintf("2.%d.0", i))
	}
	h.Runtime(h.Registry(verConst("MixedOrch", "mixed-ok-A")), verRange(h, "1.0.0", "1.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	h.Runtime(h.Registry(verConst("MixedOrch", "mixed-ok-B")), verRange(h, "2.0.0", "2.99.99"), func(o *durable.Options) { o.MaxAttempts = 50 })
	for i := range 3 {
		h.verWant("v1 instance on runtime A", h.Completed(fmt.Sprintf("v1-mixed-%d", i)), "mixed-ok-A")
	}
	for i := range 2 {
		h.verWant("v2 instance on runtime B", h.Completed(fmt.Sprintf("v2-mixed-%d", i)), "mixed-ok-B")
	}
}

func pinnedVersionExtractedFromOrchestrationStartedEvent(h *H) {
	verSeedPinned(h, "pinned-21", "PinnedOrch", "3.1.4")
	h.Runtime(h.Registry(verConst("PinnedOrch", "pinned-ok")), verRange(h, "0.0.0", "99.99.99"))
	h.verWant("output", h.Completed("pinned-21"), "pinned-ok")
	ev, _ := verStarted(h, h.History("pinned-21"))
	if ev.DuroxideVersion != "3.1.4" {
		h.Fatalf("pinned version %q; want 3.1.4 kept", ev.DuroxideVersion)
	}
}

func activityCompletionAfterContinueAsNewIsDiscarded(h *H) {
	h.Serve(
		durable.ActivityFunc("SlowActivity", func(_ context.Context, _ string) (string, error) { return "slow-result", nil }),
		durable.OrchestrationFunc("CANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if in == "start" {
				return "", ctx.ContinueAsNew(durable.Raw("second"))
			}
			if _, err := verWait(ctx, "done_signal"); err != nil {
				return "", err
			}
			return "can-complete", nil
		}),
	)
	const id = "can-25"
	h.Start("CANOrch", id, durable.Raw("start"))
	h.AwaitSubscription(id, "done_signal") // in the second execution: the first waits for nothing
	// A completion addressed to execution 1.
	if err := verStore(h).EnqueueForOrchestrator(h.Ctx(), provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: 999, Result: "stale-result"}, 0); err != nil {
		h.Fatal(err)
	}
	if err := h.Client.RaiseEvent(h.Ctx(), id, "done_signal", durable.Raw("go")); err != nil {
		h.Fatal(err)
	}
	h.verWant("output", h.Completed(id), "can-complete")
	for exec := uint64(1); exec <= 2; exec++ {
		for _, ev := range verExecution(h, id, exec) {
			if k, ok := ev.Kind.(provider.ActivityCompleted); ok && k.Result == "stale-result" {
				h.Fatalf("stale completion recorded in execution %d", exec)
			}
		}
	}
}

func wideSupportedRangeDrainsStuckItemsViaDeserializationError(h *H) {
	// duroxide corrupts the stored rows with SQL; here a wrapper makes the
	// provider report the instance's history as undecodable (HistoryError),
	// which is what such rows produce.
	verSeedPinned(h, "drain-29", "DrainOrch", "99.0.0")
	p := newVerProvider(h.P)
	p.corrupt = "drain-29"
	h.runtimeOn(p, h.Registry(verIdle("DrainOrch", "should-not-reach")), verRange(h, "0.0.0", "99.99.99"), func(o *durable.Options) {
		o.MaxAttempts = 2
		o.OrchestratorLockTimeout = 500 * time.Millisecond
		o.OrchestratorLockRenewalBuffer = 100 * time.Millisecond
	})
	var st *durable.Status
	h.WaitFor("the corrupt instance to fail", func() bool {
		s, err := h.Client.Status(h.Ctx(), "drain-29")
		st = s
		return err == nil && s.State == durable.StateFailed
	})
	poison, ok := st.Failure.(provider.PoisonDetails)
	if !ok {
		h.Fatalf("failure %#v; want poison", st.Failure)
	}
	if _, ok := poison.MessageType.(provider.PoisonFailedDeserialization); !ok {
		h.Fatalf("poison message type %#v; want a failed deserialization", poison.MessageType)
	}
	if a := p.abandonsOf("drain-29"); len(a) == 0 {
		h.Fatal("the undecodable history was failed without being retried first")
	}
}

func runtimeLogsWarningOnIncompatibleAbandon(h *H) {
	verSeedPinned(h, "warn-30", "WarnOrch", "99.0.0")
	p := newVerProvider(h.P)
	p.bypassFilter = true
	logs := &verLogs{}
	h.runtimeOn(p, h.Registry(verIdle("WarnOrch", "should-not-reach")), func(o *durable.Options) {
		o.MaxAttempts = 5
		o.Logger = logs.logger()
	})
	h.WaitFor("the incompatible instance to be abandoned", func() bool { return len(p.abandonsOf("warn-30")) > 0 })
	rec, ok := logs.find(func(r verRecord) bool { return r.level == slog.LevelWarn && r.attrs["instance_id"] == "warn-30" })
	if !ok {
		h.Fatal("no warning about the incompatible instance")
	}
	if !strings.Contains(rec.msg, "replay version") {
		h.Fatalf("warning %q does not name the replay version", rec.msg)
	}
	verExpectUntouched(h, "warn-30")
}
