package runtimetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// Poison: messages delivered more than MaxAttempts times fail their
// orchestration (poison_message_tests.rs, unregistered_backoff_tests.rs).
// Attempt counts are inflated by the fault wrapper, as duroxide's
// PoisonInjectingProvider does.
var poisonTests = []Test{
	{"orchestration_attempt_count_increments_on_abandon", orchestrationAttemptCountIncrementsOnAbandon},
	{"worker_attempt_count_increments_on_lock_expiry", workerAttemptCountIncrementsOnLockExpiry},
	{"poison_message_type_orchestration", poisonMessageTypeOrchestration},
	{"poison_message_type_activity", poisonMessageTypeActivity},
	{"runtime_options_default_max_attempts", runtimeOptionsDefaultMaxAttempts},
	{"runtime_options_configurable_max_attempts", runtimeOptionsConfigurableMaxAttempts},
	{"e2e_orchestration_item_poison_fails_orchestration", e2eOrchestrationItemPoisonFailsOrchestration},
	{"e2e_activity_item_poison_fails_orchestration", e2eActivityItemPoisonFailsOrchestration},
	{"e2e_sub_orchestration_poison_fails_parent", e2eSubOrchestrationPoisonFailsParent},
	{"e2e_one_poisoned_activity_among_many", e2eOnePoisonedActivityAmongMany},
	{"e2e_custom_max_attempts_respected", e2eCustomMaxAttemptsRespected},
	{"e2e_activity_poisons_suborchestration_poisons_parent", e2eActivityPoisonsSuborchestrationPoisonsParent},
	{"e2e_poison_message_creates_instance_if_missing", e2ePoisonMessageCreatesInstanceIfMissing},
	// unregistered_backoff_tests.rs
	{"unknown_orchestration_fails_with_poison", unknownOrchestrationFailsWithPoison},
	{"unknown_activity_fails_with_poison", unknownActivityFailsWithPoison},
	{"test_backoff_calculation", testBackoffCalculation},
	{"test_backoff_custom_config", testBackoffCustomConfig},
	{"continue_as_new_to_missing_version_fails_with_poison", continueAsNewToMissingVersionFailsWithPoison},
	{"delete_poisoned_orchestration", deletePoisonedOrchestration},
}

// poisonOptions are duroxide's fast_runtime_options(max).
func poisonOptions(maxAttempts uint32) func(*durable.Options) {
	return func(o *durable.Options) {
		o.MaxAttempts = maxAttempts
		o.MinPollInterval = 5 * time.Millisecond
	}
}

// unregisteredOptions are unregistered_backoff_tests.rs's options.
func unregisteredOptions(o *durable.Options) {
	o.MaxAttempts = 3
	o.MinPollInterval = 10 * time.Millisecond
	o.UnregisteredBackoff = durable.UnregisteredBackoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
}

// relCall calls activity name with a plain-string input and returns its
// plain-string result.
func relCall(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) (string, error) {
	out, err := durable.CallActivity[durable.Raw](ctx, name, durable.Raw(in), opts...).Get(ctx)
	return string(out), err
}

// relSub calls sub-orchestration name with a plain-string input.
func relSub(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) (string, error) {
	out, err := durable.CallSubOrchestration[durable.Raw](ctx, name, durable.Raw(in), opts...).Get(ctx)
	return string(out), err
}

// liveRun counts a run of orchestration code on a first turn, not a
// replay (the harness replays every finished history).
func liveRun(ctx *durable.OrchestrationContext, n *atomic.Int32) {
	if !ctx.IsReplaying() {
		n.Add(1)
	}
}

// failedUnregistered waits for id to fail and checks its history's
// invariants, without the harness's replay check: no registered code can
// replay an orchestration that was never registered.
func failedUnregistered(h *H, id string) provider.ErrorDetails {
	h.Helper()
	st, err := h.Client.WaitForCompletion(h.Ctx(), id)
	if err != nil {
		h.Fatalf("wait %s: %v", id, err)
	}
	h.CheckHistory(id)
	if st.State != durable.StateFailed {
		h.Fatalf("%s: %v; want Failed", id, st.State)
	}
	return st.Failure
}

// poisonDetails asserts that d is poison with the given counts and returns it.
func poisonDetails(h *H, d provider.ErrorDetails, attempts, maxAttempts uint32) provider.PoisonDetails {
	h.Helper()
	p, ok := d.(provider.PoisonDetails)
	if !ok {
		h.Fatalf("failure %#v; want poison", d)
	}
	if attempts != 0 && p.AttemptCount != attempts {
		h.Errorf("attempt_count %d; want %d", p.AttemptCount, attempts)
	}
	if maxAttempts != 0 && p.MaxAttempts != maxAttempts {
		h.Errorf("max_attempts %d; want %d", p.MaxAttempts, maxAttempts)
	}
	return p
}

// Provider level: abandoning counts an attempt.
func orchestrationAttemptCountIncrementsOnAbandon(h *H) {
	ctx := h.Ctx()
	v := "1.0.0"
	if err := h.P.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{
		Instance: "attempt-test-1", Orchestration: "TestOrch", Input: "{}", Version: &v, ExecutionID: provider.InitialExecutionID,
	}, 0); err != nil {
		h.Fatalf("enqueue: %v", err)
	}
	for want := uint32(1); want <= 3; want++ {
		var item *provider.OrchestrationItem
		h.WaitFor("orchestration item", func() bool {
			var err error
			item, err = h.P.FetchOrchestrationItem(ctx, 5*time.Second, 0, nil)
			if err != nil {
				h.Fatalf("fetch: %v", err)
			}
			return item != nil
		})
		if item.AttemptCount != want {
			h.Fatalf("fetch %d: attempt_count %d", want, item.AttemptCount)
		}
		if err := h.P.AbandonOrchestrationItem(ctx, item.LockToken, 0, false); err != nil {
			h.Fatalf("abandon: %v", err)
		}
	}
}

// Provider level: a lock that expires counts an attempt. The original
// sleeps past the lock; this polls until the item is fetchable again.
func workerAttemptCountIncrementsOnLockExpiry(h *H) {
	ctx := h.Ctx()
	if err := h.P.EnqueueForWorker(ctx, provider.ActivityExecuteItem{
		Instance: "attempt-test-2", ExecutionID: provider.InitialExecutionID, ID: 1, Name: "TestActivity", Input: "{}",
	}); err != nil {
		h.Fatalf("enqueue: %v", err)
	}
	fetch := func(what string) *provider.LockedWorkItem {
		var item *provider.LockedWorkItem
		h.WaitFor(what, func() bool {
			var err error
			item, err = h.P.FetchWorkItem(ctx, h.Lease(300*time.Millisecond), 0, nil, provider.DefaultOnlyTags())
			if err != nil {
				h.Fatalf("fetch: %v", err)
			}
			return item != nil
		})
		return item
	}
	if first := fetch("first delivery"); first.AttemptCount != 1 {
		h.Fatalf("first fetch: attempt_count %d; want 1", first.AttemptCount)
	}
	second := fetch("delivery after the lock expired")
	if second.AttemptCount != 2 {
		h.Fatalf("second fetch: attempt_count %d; want 2", second.AttemptCount)
	}
	if err := h.P.AckWorkItem(ctx, second.LockToken, provider.ActivityCompletedItem{
		Instance: "attempt-test-2", ExecutionID: provider.InitialExecutionID, ID: 1, Result: "done",
	}); err != nil {
		h.Fatalf("ack: %v", err)
	}
}

func poisonMessageTypeOrchestration(h *H) {
	var d provider.ErrorDetails = provider.PoisonDetails{
		AttemptCount: 11, MaxAttempts: 10,
		MessageType: provider.PoisonOrchestration{Instance: "test-instance", ExecutionID: 1},
		Message:     "{}",
	}
	if d.Category() != "poison" || d.IsRetryable() {
		h.Errorf("category %q retryable %v", d.Category(), d.IsRetryable())
	}
	msg := d.DisplayMessage()
	for _, want := range []string{"orchestration", "test-instance", "11", "10"} {
		if !strings.Contains(msg, want) {
			h.Errorf("display message %q lacks %q", msg, want)
		}
	}
}

func poisonMessageTypeActivity(h *H) {
	var d provider.ErrorDetails = provider.PoisonDetails{
		AttemptCount: 5, MaxAttempts: 3,
		MessageType: provider.PoisonActivity{Instance: "test-instance", ExecutionID: 1, ActivityName: "TestActivity", ActivityID: 42},
		Message:     "{}",
	}
	if d.Category() != "poison" || d.IsRetryable() {
		h.Errorf("category %q retryable %v", d.Category(), d.IsRetryable())
	}
	msg := d.DisplayMessage()
	for _, want := range []string{"activity", "TestActivity", "42"} {
		if !strings.Contains(msg, want) {
			h.Errorf("display message %q lacks %q", msg, want)
		}
	}
}

// maxAttemptsBoundary checks, through a runtime built with opts, that a
// message on its max-th attempt runs and one on attempt max+1 is poison.
func maxAttemptsBoundary(h *H, maxAttempts uint32, opts func(*durable.Options)) {
	h.Helper()
	fp := relFaults(h)
	var ran atomic.Int32
	h.Runtime(h.Registry(durable.OrchestrationFunc("MaxOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		liveRun(ctx, &ran)
		return "ok", nil
	})), opts)
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: maxAttempts, Times: 1,
		Match: func(c Call) bool { return c.Instance == "at-max" }})
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: maxAttempts + 1, Times: 1,
		Match: func(c Call) bool { return c.Instance == "over-max" }})
	h.Start("MaxOrch", "at-max", durable.Raw(""))
	if out := h.Completed("at-max"); out != "ok" {
		h.Errorf("at-max output %q", out)
	}
	h.Start("MaxOrch", "over-max", durable.Raw(""))
	poisonDetails(h, h.Failed("over-max"), maxAttempts+1, maxAttempts)
	if n := ran.Load(); n != 1 {
		h.Errorf("orchestration code ran %d times; want 1 (only at-max)", n)
	}
}

// Options defaults are unexported: the default (10) is observed through a
// runtime that leaves MaxAttempts unset.
func runtimeOptionsDefaultMaxAttempts(h *H) {
	maxAttemptsBoundary(h, 10, func(o *durable.Options) { o.MaxAttempts = 0 })
}

func runtimeOptionsConfigurableMaxAttempts(h *H) {
	maxAttemptsBoundary(h, 5, func(o *durable.Options) { o.MaxAttempts = 5 })
}

func e2eOrchestrationItemPoisonFailsOrchestration(h *H) {
	fp := relFaults(h)
	var ran atomic.Int32
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: 11, Times: 1})
	h.Runtime(h.Registry(durable.OrchestrationFunc("SimpleOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		liveRun(ctx, &ran)
		return "", nil
	})), poisonOptions(10))
	const id = "poison-orch-test-1"
	h.Start("SimpleOrch", id, durable.Raw("{}"))
	p := poisonDetails(h, h.Failed(id), 11, 10)
	if mt, ok := p.MessageType.(provider.PoisonOrchestration); !ok || mt.Instance != id || mt.ExecutionID != provider.InitialExecutionID {
		h.Errorf("message type %#v", p.MessageType)
	}
	if p.Message == "" {
		h.Errorf("empty poison message")
	}
	if n := ran.Load(); n != 0 {
		h.Errorf("orchestration code ran %d times on a poisoned item", n)
	}
}

func e2eActivityItemPoisonFailsOrchestration(h *H) {
	fp := relFaults(h)
	var ran atomic.Int32
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("OrchWithActivity", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relCall(ctx, "TestActivity", "{}")
		}),
		durable.ActivityFunc("TestActivity", func(context.Context, string) (string, error) {
			ran.Add(1)
			return "activity-result", nil
		}),
	), poisonOptions(10))
	fp.Inject(Fault{Op: provider.OpFetchWorkItem, Mode: SetAttempts, Attempts: 11})
	const id = "poison-activity-test-1"
	h.Start("OrchWithActivity", id, durable.Raw("{}"))
	p := poisonDetails(h, h.Failed(id), 11, 10)
	mt, ok := p.MessageType.(provider.PoisonActivity)
	if !ok || mt.Instance != id || mt.ExecutionID != provider.InitialExecutionID || mt.ActivityName != "TestActivity" || mt.ActivityID == 0 {
		h.Errorf("message type %#v", p.MessageType)
	}
	if n := ran.Load(); n != 0 {
		h.Errorf("poisoned activity ran %d times", n)
	}
}

func e2eSubOrchestrationPoisonFailsParent(h *H) {
	fp := relFaults(h)
	const id = "poison-suborg-test-1"
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("ParentOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relSub(ctx, "ChildOrch", "{}")
		}),
		durable.OrchestrationFunc("ChildOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return "child-result", nil
		}),
	), poisonOptions(10))
	// The original skips the parent's first fetch; matching the child's
	// instance does the same without depending on fetch order.
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: 11, Times: 1,
		Match: func(c Call) bool { return c.Instance != id }})
	h.Start("ParentOrch", id, durable.Raw("{}"))
	p := poisonDetails(h, h.Failed(id), 11, 10)
	mt, ok := p.MessageType.(provider.PoisonOrchestration)
	if !ok || !strings.HasPrefix(mt.Instance, id) || mt.Instance == id || mt.ExecutionID != provider.InitialExecutionID {
		h.Errorf("message type %#v; want the child's", p.MessageType)
	}
	if p.Message == "" {
		h.Errorf("empty poison message")
	}
}

func e2eOnePoisonedActivityAmongMany(h *H) {
	fp := relFaults(h)
	var defs []durable.Definition
	defs = append(defs, durable.OrchestrationFunc("MultiActivityOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := relCall(ctx, "Activity1", "{}"); err != nil {
			return "", err
		}
		if _, err := relCall(ctx, "Activity2", "{}"); err != nil {
			return "", err
		}
		return relCall(ctx, "Activity3", "{}")
	}))
	for _, name := range []string{"Activity1", "Activity2", "Activity3"} {
		defs = append(defs, durable.ActivityFunc(name, func(context.Context, string) (string, error) { return "result", nil }))
	}
	h.Runtime(h.Registry(defs...), poisonOptions(5))
	fp.Inject(Fault{Op: provider.OpFetchWorkItem, Mode: SetAttempts, Attempts: 6})
	const id = "poison-multi-activity-test"
	h.Start("MultiActivityOrch", id, durable.Raw("{}"))
	p := poisonDetails(h, h.Failed(id), 6, 5)
	if mt, ok := p.MessageType.(provider.PoisonActivity); !ok || mt.ActivityName != "Activity1" {
		h.Errorf("message type %#v; want Activity1's", p.MessageType)
	}
	if n := Count(h.History(id), "ActivityScheduled"); n != 1 {
		h.Errorf("%d activities scheduled; want 1 (the poisoned one stops the rest)", n)
	}
}

func e2eCustomMaxAttemptsRespected(h *H) {
	fp := relFaults(h)
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: 4, Times: 1})
	h.Runtime(h.Registry(durable.OrchestrationFunc("CustomMaxOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return "success", nil
	})), poisonOptions(3))
	h.Start("CustomMaxOrch", "custom-max-attempts-test", durable.Raw("{}"))
	poisonDetails(h, h.Failed("custom-max-attempts-test"), 4, 3)
}

func e2eActivityPoisonsSuborchestrationPoisonsParent(h *H) {
	fp := relFaults(h)
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("GrandparentOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relSub(ctx, "ChildWithActivityOrch", "{}")
		}),
		durable.OrchestrationFunc("ChildWithActivityOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relCall(ctx, "ChildActivity", "{}")
		}),
		durable.ActivityFunc("ChildActivity", func(context.Context, string) (string, error) { return "activity-result", nil }),
	), poisonOptions(10))
	fp.Inject(Fault{Op: provider.OpFetchWorkItem, Mode: SetAttempts, Attempts: 11})
	const id = "poison-chain-test"
	h.Start("GrandparentOrch", id, durable.Raw("{}"))
	p := poisonDetails(h, h.Failed(id), 11, 10)
	if mt, ok := p.MessageType.(provider.PoisonActivity); !ok || mt.ActivityName != "ChildActivity" {
		h.Errorf("message type %#v; want ChildActivity's", p.MessageType)
	}
}

func e2ePoisonMessageCreatesInstanceIfMissing(h *H) {
	fp := relFaults(h)
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: SetAttempts, Attempts: 11, Times: 1})
	var ran atomic.Int32
	h.Runtime(h.Registry(durable.OrchestrationFunc("NeverRuns", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		liveRun(ctx, &ran)
		return "", nil
	})), poisonOptions(10))
	const id = "poison-creates-instance-test"
	h.Start("NeverRuns", id, durable.Raw(`{"test":"data"}`))
	p := poisonDetails(h, h.Failed(id), 11, 10)
	if mt, ok := p.MessageType.(provider.PoisonOrchestration); !ok || mt.Instance != id || mt.ExecutionID != provider.InitialExecutionID {
		h.Errorf("message type %#v", p.MessageType)
	}
	if n := ran.Load(); n != 0 {
		h.Errorf("orchestration code ran %d times", n)
	}
	info, err := h.Client.InstanceInfo(h.Ctx(), id)
	switch {
	case errors.Is(err, durable.ErrManagementNotAvailable):
	case err != nil:
		h.Fatalf("instance info: %v", err)
	default:
		if info.InstanceID != id || info.OrchestrationName != "NeverRuns" || info.Status != provider.StatusFailed {
			h.Errorf("instance info %+v", info)
		}
	}
	hist := h.History(id)
	if len(hist) < 2 {
		h.Fatalf("history %v; want at least 2 events", EventTypes(hist))
	}
	started, ok := hist[0].Kind.(provider.OrchestrationStarted)
	if !ok || started.Name != "NeverRuns" || started.Version == "" || !strings.Contains(started.Input, "test") {
		h.Errorf("first event %#v", hist[0].Kind)
	}
	failed, ok := hist[len(hist)-1].Kind.(provider.OrchestrationFailed)
	if !ok {
		h.Fatalf("last event %s; want OrchestrationFailed", hist[len(hist)-1].Kind.EventType())
	}
	if _, ok := failed.Details.(provider.PoisonDetails); !ok {
		h.Errorf("failed with %#v; want poison", failed.Details)
	}
}

func unknownOrchestrationFailsWithPoison(h *H) {
	h.Runtime(h.Registry(durable.OrchestrationFunc("VersionedOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return "v1: " + in, nil
	}, durable.Version("1.0.0"))), unregisteredOptions)
	h.Start("DoesNotExist", "inst-unknown-name", durable.Raw(""))
	h.Start("VersionedOrch", "inst-unknown-version", durable.Raw("input"), durable.Version("9.9.9"))
	causes := map[string]string{
		"inst-unknown-name":    `orchestration "DoesNotExist" is not registered on any worker that fetched it`,
		"inst-unknown-version": `orchestration "VersionedOrch" version 9.9.9 is not registered on any worker that fetched it`,
	}
	for _, id := range []string{"inst-unknown-name", "inst-unknown-version"} {
		p := poisonDetails(h, failedUnregistered(h, id), 0, 0)
		if p.AttemptCount <= p.MaxAttempts {
			h.Errorf("%s: attempt_count %d not above max_attempts %d", id, p.AttemptCount, p.MaxAttempts)
		}
		// duradyn's addition: the failure names its cause, which status
		// and info show.
		if p.Cause != causes[id] || !strings.HasSuffix(p.DisplayMessage(), ": "+causes[id]) {
			h.Errorf("%s: poison cause %q, display %q; want cause %q", id, p.Cause, p.DisplayMessage(), causes[id])
		}
		hist := h.History(id)
		found := false
		for _, ev := range hist {
			if f, ok := ev.Kind.(provider.OrchestrationFailed); ok {
				_, found = f.Details.(provider.PoisonDetails)
			}
		}
		if !found {
			h.Errorf("%s: no poison failure in history %v", id, EventTypes(hist))
		}
	}
}

func unknownActivityFailsWithPoison(h *H) {
	h.Runtime(h.Registry(durable.OrchestrationFunc("SimpleOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return relCall(ctx, "UnknownActivity", "input")
	})), unregisteredOptions)
	h.Start("SimpleOrch", "inst-activity-unknown", durable.Raw(""))
	p := poisonDetails(h, h.Failed("inst-activity-unknown"), 0, 3)
	if mt, ok := p.MessageType.(provider.PoisonActivity); !ok || mt.ActivityName != "UnknownActivity" {
		h.Errorf("message type %#v", p.MessageType)
	}
}

func testBackoffCalculation(h *H) {
	b := durable.UnregisteredBackoff{Base: time.Second, Max: 60 * time.Second}
	want := map[uint32]time.Duration{1: 1, 2: 2, 3: 4, 4: 8, 5: 16, 6: 32, 7: 60, 8: 60, 10: 60}
	for attempt, secs := range want {
		if got := b.Delay(attempt); got != secs*time.Second {
			h.Errorf("Delay(%d) = %v; want %v", attempt, got, secs*time.Second)
		}
	}
}

func testBackoffCustomConfig(h *H) {
	b := durable.UnregisteredBackoff{Base: 100 * time.Millisecond, Max: 500 * time.Millisecond}
	want := map[uint32]time.Duration{1: 100, 2: 200, 3: 400, 4: 500, 5: 500, 10: 500}
	for attempt, ms := range want {
		if got := b.Delay(attempt); got != ms*time.Millisecond {
			h.Errorf("Delay(%d) = %v; want %v", attempt, got, ms*time.Millisecond)
		}
	}
}

func continueAsNewToMissingVersionFailsWithPoison(h *H) {
	h.Runtime(h.Registry(durable.OrchestrationFunc("CanToMissing", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return "", ctx.ContinueAsNew(durable.Raw("new-input"), durable.Version("3.0.0"))
	}, durable.Version("1.0.0"))), unregisteredOptions)
	h.Start("CanToMissing", "can-missing-test", durable.Raw("start"), durable.Version("1.0.0"))
	poisonDetails(h, failedUnregistered(h, "can-missing-test"), 0, 3)
}

func deletePoisonedOrchestration(h *H) {
	h.Runtime(h.Registry(), unregisteredOptions)
	const id = "delete-after-poison"
	h.Start("UnregisteredOrch", id, durable.Raw("input"))
	poisonDetails(h, failedUnregistered(h, id), 0, 3)
	if _, err := h.Client.DeleteInstance(h.Ctx(), id, false); err != nil {
		if errors.Is(err, durable.ErrManagementNotAvailable) {
			return
		}
		h.Fatalf("delete: %v", err)
	}
	st, err := h.Client.Status(h.Ctx(), id)
	if err != nil || st.State != durable.StateNotFound {
		h.Errorf("after delete: %v %v; want NotFound", st, err)
	}
}
