package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// KV limits of duroxide 0.1.29 (runtime.md §3.7); the 0.1.26 sources these
// tests come from had 100 keys and 16 KiB values.
const (
	kvMaxKeys       = 150
	kvMaxValueBytes = 64 * 1024
)

var kvTests = []Test{
	{"kv_set_value_visible_via_client", kvSetValueVisibleViaClient},
	{"kv_get_missing_key_returns_none", kvGetMissingKeyReturnsNone},
	{"kv_set_multiple_values_same_turn", kvSetMultipleValuesSameTurn},
	{"kv_overwrite_same_key", kvOverwriteSameKey},
	{"kv_clear_single_value", kvClearSingleValue},
	{"kv_clear_all_values", kvClearAllValues},
	{"kv_persists_across_turns", kvPersistsAcrossTurns},
	{"kv_typed_round_trip", kvTypedRoundTrip},
	{"kv_get_value_reads_local_state", kvGetValueReadsLocalState},
	{"kv_survives_continue_as_new", kvSurvivesContinueAsNew},
	{"kv_get_value_from_instance", kvGetValueFromInstance},
	{"kv_deleted_with_instance", kvDeletedWithInstance},
	{"kv_exceeding_key_limit_fails_orchestration", kvExceedingKeyLimitFails},
	{"kv_exceeding_value_size_limit_fails_orchestration", kvExceedingValueSizeLimitFails},
	{"kv_at_key_limit_succeeds", kvAtKeyLimitSucceeds},
	{"kv_clear_all_resets_key_count", kvClearAllResetsKeyCount},
	{"kv_works_in_select_branch", kvWorksInSelectBranch},
	{"kv_accessible_after_completion", kvAccessibleAfterCompletion},
	{"kv_accessible_after_failure", kvAccessibleAfterFailure},
	{"kv_not_accessible_after_deletion", kvNotAccessibleAfterDeletion},
	{"kv_prune_execution_removes_orphan_keys", kvPruneExecutionRemovesOrphanKeys},
	{"kv_delete_instance_removes_all_kv", kvDeleteInstanceRemovesAllKV},
	{"kv_update_across_turns", kvUpdateAcrossTurns},
	{"kv_clear_value_then_reset", kvClearValueThenReset},
	{"kv_overwrite_after_can", kvOverwriteAfterCAN},
	{"kv_clear_after_can", kvClearAfterCAN},
	{"kv_can_chain_accumulation", kvCANChainAccumulation},
	{"kv_bulk_prune", kvBulkPrune},
	{"client_get_value_running", clientGetValueRunning},
	{"kv_get_value_from_instance_key_missing", kvGetValueFromInstanceKeyMissing},
	{"kv_get_value_from_instance_unknown_instance", kvGetValueFromInstanceUnknownInstance},
	{"kv_get_value_from_instance_typed_e2e", kvGetValueFromInstanceTypedE2E},
	{"kv_get_value_from_instance_replay_safe", kvGetValueFromInstanceReplaySafe},
	{"kv_get_value_from_instance_after_source_update", kvGetValueFromInstanceAfterSourceUpdate},
	{"kv_parent_child_isolation", kvParentChildIsolation},
	{"kv_delete_parent_cascades_child_kv", kvDeleteParentCascadesChildKV},
	{"kv_interleaved_with_activities_and_timers", kvInterleavedWithActivitiesAndTimers},
	{"kv_in_fan_out_fan_in", kvInFanOutFanIn},
	{"kv_json_value", kvJSONValue},
	{"kv_empty_key", kvEmptyKey},
	{"kv_clear_value_then_set_same_key", kvClearValueThenSetSameKey},
	{"kv_get_value_from_instance_self", kvGetValueFromInstanceSelf},
	{"kv_get_value_typed_wrong_type", kvGetValueTypedWrongType},
	{"kv_single_thread_basic", kvSingleThreadBasic},
	{"kv_single_thread_can_with_kv", kvSingleThreadCANWithKV},
	{"kv_stress_concurrent_writes", kvStressConcurrentWrites},
	{"kv_stress_high_key_count", kvStressHighKeyCount},
	{"kv_stress_cross_instance_reads", kvStressCrossInstanceReads},
	{"kv_stress_can_throughput", kvStressCANThroughput},
	{"kv_client_get_all_values", kvClientGetAllValues},
	{"kv_client_get_all_values_empty", kvClientGetAllValuesEmpty},
	{"kv_client_get_all_values_after_overwrite", kvClientGetAllValuesAfterOverwrite},
	{"kv_client_get_all_values_after_clear", kvClientGetAllValuesAfterClear},
	{"kv_client_get_all_values_across_can", kvClientGetAllValuesAcrossCAN},
	{"kv_prune_old_values_by_timestamp", kvPruneOldValuesByTimestamp},
	{"kv_prune_with_zero_threshold_does_nothing", kvPruneWithZeroThresholdDoesNothing},
	{"kv_prune_empty_returns_zero", kvPruneEmptyReturnsZero},
	{"kv_prune_current_turn_keys_with_max_threshold", kvPruneCurrentTurnKeysWithMaxThreshold},
	{"kv_prune_unpersisted_current_turn_key_with_wall_clock", kvPruneUnpersistedCurrentTurnKeyWithWallClock},
	{"kv_prune_selective_by_age", kvPruneSelectiveByAge},
	{"kv_read_modify_write_across_turns", kvReadModifyWriteAcrossTurns},
	{"kv_read_modify_write_every_turn", kvReadModifyWriteEveryTurn},
	{"kv_clear_all_then_set_across_turns", kvClearAllThenSetAcrossTurns},
	{"kv_clear_single_with_prior_execution_value", kvClearSingleWithPriorExecutionValue},
	{"kv_rmw_across_can_boundary", kvRMWAcrossCANBoundary},
}

// kvOrch is an untyped orchestration.
type kvOrch = func(ctx *durable.OrchestrationContext, in string) (string, error)

// kvActivities are the activities the KV tests call.
func kvActivities() []durable.Definition {
	ok := func(context.Context, string) (string, error) { return "ok", nil }
	return []durable.Definition{
		durable.ActivityFunc("Noop", ok),
		durable.ActivityFunc("Task", ok),
		durable.ActivityFunc("DoWork", func(context.Context, string) (string, error) { return "result", nil }),
		durable.ActivityFunc("FastTask", func(context.Context, string) (string, error) { return "fast", nil }),
		durable.ActivityFunc("Work", func(context.Context, string) (string, error) { return "worked", nil }),
		durable.ActivityFunc("Process", func(_ context.Context, in string) (string, error) { return "result_" + in, nil }),
		durable.ActivityFunc("FailActivity", func(context.Context, string) (string, error) { return "", errors.New("boom") }),
	}
}

// kvServe serves the KV activities and orchs (name → code), with opts.
func kvServe(h *H, orchs map[string]kvOrch, opts ...func(*durable.Options)) {
	h.Helper()
	defs := kvActivities()
	for name, fn := range orchs {
		defs = append(defs, durable.OrchestrationFunc(name, fn))
	}
	h.Runtime(h.Registry(defs...), opts...)
}

// kvRun serves one orchestration, runs id with input and waits.
func kvRun(h *H, id, input, name string, fn kvOrch, opts ...func(*durable.Options)) *durable.Status {
	h.Helper()
	kvServe(h, map[string]kvOrch{name: fn}, opts...)
	h.Start(name, id, durable.Raw(input))
	return h.Wait(id)
}

// kvCompleted runs like kvRun and returns the output, failing unless the
// orchestration completed.
func kvCompleted(h *H, id, input, name string, fn kvOrch, opts ...func(*durable.Options)) string {
	h.Helper()
	st := kvRun(h, id, input, name, fn, opts...)
	if st.State != durable.StateCompleted {
		h.Fatalf("%s: %v (%v); want Completed", id, st.State, st.Failure)
	}
	return st.Output
}

// kvExpect checks the client's view of key (want nil: absent).
func kvExpect(h *H, id, key string, want *string) {
	h.Helper()
	v, ok, err := h.Client.KVValue(h.Ctx(), id, key)
	if err != nil {
		h.Fatal(err)
	}
	switch {
	case want == nil && ok:
		h.Fatalf("%s: key %q = %q; want absent", id, key, v)
	case want != nil && !ok:
		h.Fatalf("%s: key %q absent; want %q", id, key, *want)
	case want != nil && v != *want:
		h.Fatalf("%s: key %q = %q; want %q", id, key, v, *want)
	}
}

// kvExpectAll checks the client's view of every key.
func kvExpectAll(h *H, id string, want map[string]string) {
	h.Helper()
	all, err := h.Client.KVValues(h.Ctx(), id)
	if err != nil {
		h.Fatal(err)
	}
	if len(all) != len(want) {
		h.Fatalf("%s: KV %v; want %v", id, all, want)
	}
	for k, v := range want {
		if all[k] != v {
			h.Fatalf("%s: KV %v; want %v", id, all, want)
		}
	}
}

func kvP(s string) *string { return &s }

// kvOut expects the orchestration output.
func kvOut(h *H, got, want string) {
	h.Helper()
	if got != want {
		h.Fatalf("output %q; want %q", got, want)
	}
}

// kvCall awaits activity name.
func kvCall(ctx *durable.OrchestrationContext, name, in string) (string, error) {
	v, err := durable.CallActivity[durable.Raw](ctx, name, durable.Raw(in)).Get(ctx)
	return string(v), err
}

// kvGetOr returns key's value, or def.
func kvGetOr(ctx *durable.OrchestrationContext, key, def string) string {
	if v, ok := ctx.KV().Get(key); ok {
		return v
	}
	return def
}

// kvFromInstance reads another instance's key, or def.
func kvFromInstance(ctx *durable.OrchestrationContext, inst, key, def string) (string, error) {
	v, err := durable.ValueFromInstance(ctx, inst, key).Get(ctx)
	if err != nil {
		return "", err
	}
	if v == nil {
		return def, nil
	}
	return *v, nil
}

// kvExpectFailure checks a failure message holds every part.
func kvExpectFailure(h *H, st *durable.Status, parts ...string) {
	h.Helper()
	if st.State != durable.StateFailed {
		h.Fatalf("state %v; want Failed", st.State)
	}
	msg := st.Failure.DisplayMessage()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			h.Fatalf("failure %q; want it to contain %q", msg, p)
		}
	}
}

// kvWriterOrch sets key=value and then waits for "done".
func kvWriterOrch(key, value string) kvOrch {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set(key, value)
		cxWaitForever(ctx, "done")
		return "done", nil
	}
}

// kvFinishWriter ends a writer started with kvWriterOrch.
func kvFinishWriter(h *H, id string) {
	h.Helper()
	cxAwaitSubs(h, id, "done", 1)
	eeRaise(h, id, "done", "")
	h.Completed(id)
}

func kvSetValueVisibleViaClient(h *H) {
	kvCompleted(h, "kv-set-1", "", "SetKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("progress", "50%")
		return "done", nil
	})
	kvExpect(h, "kv-set-1", "progress", kvP("50%"))
}

func kvGetMissingKeyReturnsNone(h *H) {
	kvCompleted(h, "kv-miss", "", "NoKV", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil })
	kvExpect(h, "kv-miss", "nope", nil)
}

func kvSetMultipleValuesSameTurn(h *H) {
	kvCompleted(h, "kv-multi", "", "MultiKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("a", "1")
		ctx.KV().Set("b", "2")
		ctx.KV().Set("c", "3")
		return "done", nil
	})
	kvExpect(h, "kv-multi", "a", kvP("1"))
	kvExpect(h, "kv-multi", "b", kvP("2"))
	kvExpect(h, "kv-multi", "c", kvP("3"))
}

func kvOverwriteSameKey(h *H) {
	kvCompleted(h, "kv-ow", "", "OverwriteKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("k", "first")
		ctx.KV().Set("k", "second")
		return "done", nil
	})
	kvExpect(h, "kv-ow", "k", kvP("second"))
}

func kvClearSingleValue(h *H) {
	kvCompleted(h, "kv-clr", "", "ClearKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("x", "10")
		ctx.KV().Delete("x")
		return "done", nil
	})
	kvExpect(h, "kv-clr", "x", nil)
}

func kvClearAllValues(h *H) {
	kvCompleted(h, "kv-clra", "", "ClearAllKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("a", "1")
		ctx.KV().Set("b", "2")
		ctx.KV().Clear()
		return "done", nil
	})
	kvExpect(h, "kv-clra", "a", nil)
	kvExpect(h, "kv-clra", "b", nil)
}

func kvPersistsAcrossTurns(h *H) {
	kvCompleted(h, "kv-turns", "", "KVTurns", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("step", "before_activity")
		_, _ = kvCall(ctx, "DoWork", "")
		if v, _ := ctx.KV().Get("step"); v != "before_activity" {
			return "", fmt.Errorf("step = %q after the turn; want before_activity", v)
		}
		ctx.KV().Set("step", "after_activity")
		return "done", nil
	})
	kvExpect(h, "kv-turns", "step", kvP("after_activity"))
}

func kvTypedRoundTrip(h *H) {
	// duradyn's KV holds strings; typed values are JSON, as duroxide's
	// set_kv_value_typed / get_kv_value_typed.
	kvCompleted(h, "kv-typed", "", "TypedKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		b, _ := json.Marshal(int32(42))
		ctx.KV().Set("count", string(b))
		raw, _ := ctx.KV().Get("count")
		var v int32
		if err := json.Unmarshal([]byte(raw), &v); err != nil || v != 42 {
			return "", fmt.Errorf("typed read %d, %v", v, err)
		}
		return "done", nil
	})
	raw, _, err := h.Client.KVValue(h.Ctx(), "kv-typed", "count")
	var v int32
	if err == nil {
		err = json.Unmarshal([]byte(raw), &v)
	}
	if err != nil || v != 42 {
		h.Fatalf("client typed read %d, %v; want 42", v, err)
	}
}

func kvGetValueReadsLocalState(h *H) {
	kvCompleted(h, "kv-local", "", "LocalKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, ok := ctx.KV().Get("x"); ok {
			return "", errors.New("x set initially")
		}
		ctx.KV().Set("x", "hello")
		if v, ok := ctx.KV().Get("x"); !ok || v != "hello" {
			return "", errors.New("set not visible")
		}
		ctx.KV().Delete("x")
		if _, ok := ctx.KV().Get("x"); ok {
			return "", errors.New("cleared key visible")
		}
		return "done", nil
	})
}

func kvSurvivesContinueAsNew(h *H) {
	// duroxide counts runs with a shared counter; the execution id is the
	// deterministic equivalent.
	out := kvCompleted(h, "kv-can", "", "CANKVV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() == 1 {
			ctx.KV().Set("counter", "1")
			return "", ctx.ContinueAsNew(durable.Raw("next"))
		}
		if v, _ := ctx.KV().Get("counter"); v != "1" {
			return "", fmt.Errorf("counter %q after continue-as-new; want 1", v)
		}
		return "done", nil
	})
	kvOut(h, out, "done")
	kvExpect(h, "kv-can", "counter", kvP("1"))
}

// kvCrossInstance starts writer (kvWriterOrch(key, value)), waits until
// its value is visible, runs reader and returns its output.
func kvCrossInstance(h *H, writerID, key, value, readerID string, reader kvOrch) string {
	h.Helper()
	kvServe(h, map[string]kvOrch{"Writer": kvWriterOrch(key, value), "Reader": reader})
	h.Start("Writer", writerID, durable.Raw(""))
	// duroxide sleeps 500 ms for the writer's first turn.
	if _, err := h.Client.WaitForKVValue(h.Ctx(), writerID, key); err != nil {
		h.Fatal(err)
	}
	h.Start("Reader", readerID, durable.Raw(""))
	out := h.Completed(readerID)
	kvFinishWriter(h, writerID)
	return out
}

func kvGetValueFromInstance(h *H) {
	out := kvCrossInstance(h, "kv-writer", "secret", "42", "kv-reader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return kvFromInstance(ctx, "kv-writer", "secret", "missing")
	})
	kvOut(h, out, "42")
}

func kvDeletedWithInstance(h *H) {
	kvCompleted(h, "kv-del", "", "KVDel", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("foo", "bar")
		return "done", nil
	})
	kvExpect(h, "kv-del", "foo", kvP("bar"))
	if _, err := h.Client.DeleteInstance(h.Ctx(), "kv-del", true); err != nil {
		h.Fatal(err)
	}
	kvExpect(h, "kv-del", "foo", nil)
}

// kvSetKeys sets n keys prefix{i} = val_{i}.
func kvSetKeys(ctx *durable.OrchestrationContext, prefix string, n int) {
	for i := range n {
		ctx.KV().Set(fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("val_%d", i))
	}
}

func kvExceedingKeyLimitFails(h *H) {
	st := kvRun(h, "kv-limit", "", "TooManyKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		kvSetKeys(ctx, "key_", kvMaxKeys+1)
		return "done", nil
	})
	kvExpectFailure(h, st, "KV key count")
}

func kvExceedingValueSizeLimitFails(h *H) {
	st := kvRun(h, "kv-big", "", "BigValue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("big", strings.Repeat("x", kvMaxValueBytes+1))
		return "done", nil
	})
	kvExpectFailure(h, st, "KV value", "exceeds limit")
}

func kvAtKeyLimitSucceeds(h *H) {
	kvCompleted(h, "kv-exact", "", "ExactKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		kvSetKeys(ctx, "key_", kvMaxKeys)
		return "done", nil
	})
}

func kvClearAllResetsKeyCount(h *H) {
	kvCompleted(h, "kv-clr-refill", "", "ClearAndRefill", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		kvSetKeys(ctx, "old_", kvMaxKeys)
		ctx.KV().Clear()
		kvSetKeys(ctx, "new_", kvMaxKeys)
		return "done", nil
	})
}

func kvWorksInSelectBranch(h *H) {
	out := kvCompleted(h, "kv-sel", "", "SelectKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		timer := ctx.CreateTimer(60 * time.Second)
		activity := durable.CallActivity[durable.Raw](ctx, "FastTask", durable.Raw(""))
		if durable.Race(ctx, timer, activity) == 0 {
			ctx.KV().Set("winner", "timer")
		} else {
			if _, err := activity.Get(ctx); err != nil {
				return "", err
			}
			ctx.KV().Set("winner", "activity")
		}
		return kvGetOr(ctx, "winner", ""), nil
	})
	kvOut(h, out, "activity")
	kvExpect(h, "kv-sel", "winner", kvP("activity"))
}

func kvAccessibleAfterCompletion(h *H) {
	kvCompleted(h, "kv-complete", "", "Completer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("status", "done")
		ctx.KV().Set("result", "42")
		return "completed", nil
	})
	kvExpect(h, "kv-complete", "status", kvP("done"))
	kvExpect(h, "kv-complete", "result", kvP("42"))
}

func kvAccessibleAfterFailure(h *H) {
	st := kvRun(h, "kv-fail", "", "Failer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("progress", "started")
		ctx.KV().Set("step", "pre-activity")
		if _, err := kvCall(ctx, "FailActivity", ""); err != nil {
			return "", err
		}
		return "unreachable", nil
	})
	if st.State != durable.StateFailed {
		h.Fatalf("state %v; want Failed", st.State)
	}
	kvExpect(h, "kv-fail", "progress", kvP("started"))
	kvExpect(h, "kv-fail", "step", kvP("pre-activity"))
}

func kvNotAccessibleAfterDeletion(h *H) {
	kvCompleted(h, "kv-del", "", "KvOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("important", "data")
		ctx.KV().Set("other", "stuff")
		return "done", nil
	})
	kvExpect(h, "kv-del", "important", kvP("data"))
	res, err := h.Client.DeleteInstance(h.Ctx(), "kv-del", false)
	if err != nil {
		h.Fatal(err)
	}
	if res.InstancesDeleted < 1 {
		h.Fatalf("deleted %+v", res)
	}
	kvExpect(h, "kv-del", "important", nil)
	kvExpect(h, "kv-del", "other", nil)
}

// kvTwoExecutions runs first in execution 1 and then continues as new
// into second.
func kvTwoExecutions(first, second func(ctx *durable.OrchestrationContext) (string, error)) kvOrch {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() == 1 {
			if _, err := first(ctx); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew(durable.Raw("next"))
		}
		return second(ctx)
	}
}

// kvPruneTest runs a two-execution orchestration setting ephemeral and
// persistent keys, prunes the first execution and checks both survive.
func kvPruneTest(h *H, id, onlyFirst, shared string) {
	kvCompleted(h, id, "", "PruneKv", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set(onlyFirst, "exec1")
		ctx.KV().Set(shared, "exec1")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set(shared, "exec2")
		return "done", nil
	}))
	kvExpect(h, id, onlyFirst, kvP("exec1"))
	kvExpect(h, id, shared, kvP("exec2"))
	res, err := h.Client.PruneExecutions(h.Ctx(), id, provider.PruneOptions{KeepLast: 1})
	if err != nil {
		h.Fatal(err)
	}
	if res.ExecutionsDeleted < 1 {
		h.Fatalf("pruned %+v; want execution 1 gone", res)
	}
	// KV is instance-scoped: a key only the pruned execution wrote survives.
	kvExpect(h, id, onlyFirst, kvP("exec1"))
	kvExpect(h, id, shared, kvP("exec2"))
}

func kvPruneExecutionRemovesOrphanKeys(h *H) { kvPruneTest(h, "kv-prune", "ephemeral", "persistent") }

func kvBulkPrune(h *H) { kvPruneTest(h, "kv-bprune", "first_only", "shared") }

func kvDeleteInstanceRemovesAllKV(h *H) {
	kvCompleted(h, "kv-delinst", "", "KvDelInst", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("a", "1")
		ctx.KV().Set("b", "2")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("c", "3")
		return "done", nil
	}))
	kvExpectAll(h, "kv-delinst", map[string]string{"a": "1", "b": "2", "c": "3"})
	res, err := h.Client.DeleteInstance(h.Ctx(), "kv-delinst", false)
	if err != nil {
		h.Fatal(err)
	}
	if res.InstancesDeleted < 1 {
		h.Fatalf("deleted %+v", res)
	}
	for _, k := range []string{"a", "b", "c"} {
		kvExpect(h, "kv-delinst", k, nil)
	}
}

func kvUpdateAcrossTurns(h *H) {
	kvCompleted(h, "kv-upd", "", "UpdateAcross", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("counter", "1")
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		if v := kvGetOr(ctx, "counter", ""); v != "1" {
			return "", fmt.Errorf("turn 2 counter %q", v)
		}
		ctx.KV().Set("counter", "2")
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		if v := kvGetOr(ctx, "counter", ""); v != "2" {
			return "", fmt.Errorf("turn 3 counter %q", v)
		}
		return "done", nil
	})
	kvExpect(h, "kv-upd", "counter", kvP("2"))
}

func kvClearValueThenReset(h *H) {
	kvCompleted(h, "kv-clreset", "", "ClearReset", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("key", "old")
		ctx.KV().Delete("key")
		ctx.KV().Set("key", "new")
		return "done", nil
	})
	kvExpect(h, "kv-clreset", "key", kvP("new"))
}

func kvOverwriteAfterCAN(h *H) {
	kvCompleted(h, "kv-canovr", "", "CanOverwrite", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("A", "old")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("A", "new")
		return "done", nil
	}))
	kvExpect(h, "kv-canovr", "A", kvP("new"))
}

func kvClearAfterCAN(h *H) {
	kvCompleted(h, "kv-canclr", "", "CanClear", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("A", "val_a")
		ctx.KV().Set("B", "val_b")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Clear()
		return "done", nil
	}))
	kvExpect(h, "kv-canclr", "A", nil)
	kvExpect(h, "kv-canclr", "B", nil)
}

func kvCANChainAccumulation(h *H) {
	kvCompleted(h, "kv-accum", "", "CanAccum", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		switch ctx.ExecutionID() {
		case 1:
			ctx.KV().Set("count", "1")
			return "", ctx.ContinueAsNew(durable.Raw("next"))
		case 2:
			n, err := strconv.Atoi(kvGetOr(ctx, "count", "0"))
			if err != nil {
				return "", err
			}
			ctx.KV().Set("count", strconv.Itoa(n+1))
			return "", ctx.ContinueAsNew(durable.Raw("next2"))
		}
		if v := kvGetOr(ctx, "count", ""); v != "2" {
			return "", fmt.Errorf("count %q; want 2", v)
		}
		return "done", nil
	})
	kvExpect(h, "kv-accum", "count", kvP("2"))
}

func clientGetValueRunning(h *H) {
	kvServe(h, map[string]kvOrch{"RunningKV": kvWriterOrch("progress", "initialized")})
	h.Start("RunningKV", "kv-running", durable.Raw(""))
	v, err := h.Client.WaitForKVValue(h.Ctx(), "kv-running", "progress")
	if err != nil {
		h.Fatal(err)
	}
	if v != "initialized" {
		h.Fatalf("progress %q", v)
	}
	if st, err := h.Client.Status(h.Ctx(), "kv-running"); err != nil || st.State != durable.StateRunning {
		h.Fatalf("status %v, %v; want the value visible while Running", st, err)
	}
	kvFinishWriter(h, "kv-running")
}

func kvGetValueFromInstanceKeyMissing(h *H) {
	out := kvCrossInstance(h, "kv-writer2", "exists", "yes", "kv-reader2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return kvFromInstance(ctx, "kv-writer2", "nonexistent", "none")
	})
	kvOut(h, out, "none")
}

func kvGetValueFromInstanceUnknownInstance(h *H) {
	out := kvCompleted(h, "kv-unknown", "", "ReaderUnknown", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return kvFromInstance(ctx, "no-such-inst", "key", "none")
	})
	kvOut(h, out, "none")
}

func kvGetValueFromInstanceTypedE2E(h *H) {
	b, _ := json.Marshal([]uint32{1, 2, 3})
	out := kvCrossInstance(h, "kv-tw", "config", string(b), "kv-tr", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		raw, err := durable.ValueFromInstance(ctx, "kv-tw", "config").Get(ctx)
		if err != nil || raw == nil {
			return fmt.Sprint(raw), err
		}
		var v []uint32
		if err := json.Unmarshal([]byte(*raw), &v); err != nil {
			return "", err
		}
		// duroxide formats Some([1, 2, 3]) with Rust's Debug.
		return fmt.Sprint(v), nil
	})
	kvOut(h, out, "[1 2 3]")
}

func kvGetValueFromInstanceReplaySafe(h *H) {
	out := kvCrossInstance(h, "kv-source", "data", "source_value", "kv-replayer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := kvFromInstance(ctx, "kv-source", "data", "missing")
		if err != nil {
			return "", err
		}
		// A later turn replays the recorded read.
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		return v, nil
	})
	kvOut(h, out, "source_value")
}

func kvGetValueFromInstanceAfterSourceUpdate(h *H) {
	kvServe(h, map[string]kvOrch{
		"LiveSource": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("v", "1")
			cxWaitForever(ctx, "update")
			ctx.KV().Set("v", "2")
			cxWaitForever(ctx, "done")
			return "done", nil
		},
		"LiveReader": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v1, err := kvFromInstance(ctx, "kv-lsrc", "v", "")
			if err != nil {
				return "", err
			}
			ctx.KV().Set("read1", v1)
			cxWaitForever(ctx, "source_updated")
			v2, err := kvFromInstance(ctx, "kv-lsrc", "v", "")
			if err != nil {
				return "", err
			}
			ctx.KV().Set("read2", v2)
			return v1 + "," + v2, nil
		},
	})
	h.Start("LiveSource", "kv-lsrc", durable.Raw(""))
	cxAwaitSubs(h, "kv-lsrc", "update", 1)
	h.Start("LiveReader", "kv-lrdr", durable.Raw(""))
	cxAwaitSubs(h, "kv-lrdr", "source_updated", 1)
	eeRaise(h, "kv-lsrc", "update", "")
	h.WaitFor("the source's v = 2", func() bool {
		v, _, _ := h.Client.KVValue(context.Background(), "kv-lsrc", "v")
		return v == "2"
	})
	eeRaise(h, "kv-lrdr", "source_updated", "")
	kvOut(h, h.Completed("kv-lrdr"), "1,2")
	kvExpect(h, "kv-lrdr", "read1", kvP("1"))
	kvExpect(h, "kv-lrdr", "read2", kvP("2"))
	kvFinishWriter(h, "kv-lsrc")
}

func kvParentChildIsolation(h *H) {
	kvServe(h, map[string]kvOrch{
		"Parent": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("role", "parent")
			v, err := durable.CallSubOrchestration[durable.Raw](ctx, "Child", durable.Raw("")).Get(ctx)
			return string(v), err
		},
		"Child": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if v, ok := ctx.KV().Get("role"); ok {
				return "", fmt.Errorf("child sees parent KV role=%q", v)
			}
			ctx.KV().Set("role", "child")
			return "child_done", nil
		},
	})
	h.Start("Parent", "kv-parent-iso", durable.Raw(""))
	kvOut(h, h.Completed("kv-parent-iso"), "child_done")
	kvExpect(h, "kv-parent-iso", "role", kvP("parent"))
	kvExpect(h, cxChildOf(h, "kv-parent-iso"), "role", kvP("child"))
}

func kvDeleteParentCascadesChildKV(h *H) {
	kvServe(h, map[string]kvOrch{
		"ParentDel": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("parent_key", "parent_val")
			_, err := durable.CallSubOrchestration[durable.Raw](ctx, "ChildDel", durable.Raw("")).Get(ctx)
			return "done", err
		},
		"ChildDel": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("child_key", "child_val")
			return "done", nil
		},
	})
	h.Start("ParentDel", "kv-pdel", durable.Raw(""))
	h.Completed("kv-pdel")
	child := cxChildOf(h, "kv-pdel")
	kvExpect(h, child, "child_key", kvP("child_val"))
	res, err := h.Client.DeleteInstance(h.Ctx(), "kv-pdel", false)
	if err != nil {
		h.Fatal(err)
	}
	if res.InstancesDeleted < 1 {
		h.Fatalf("deleted %+v", res)
	}
	kvExpect(h, "kv-pdel", "parent_key", nil)
	kvExpect(h, child, "child_key", nil)
}

func kvInterleavedWithActivitiesAndTimers(h *H) {
	out := kvCompleted(h, "kv-interl", "", "Interleave", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("step", "1")
		if _, err := kvCall(ctx, "Work", ""); err != nil {
			return "", err
		}
		ctx.KV().Set("step", "2")
		if err := ctx.Sleep(time.Millisecond); err != nil {
			return "", err
		}
		ctx.KV().Clear()
		ctx.KV().Set("step", "final")
		return kvGetOr(ctx, "step", ""), nil
	})
	kvOut(h, out, "final")
	kvExpect(h, "kv-interl", "step", kvP("final"))
}

func kvInFanOutFanIn(h *H) {
	kvCompleted(h, "kv-fanout", "", "FanOutKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var fs []durable.Future[durable.Raw]
		for i := range 5 {
			fs = append(fs, durable.CallActivity[durable.Raw](ctx, "Process", durable.Raw(strconv.Itoa(i))))
		}
		vs, err := durable.AwaitAll(ctx, fs...)
		if err != nil {
			return "", err
		}
		for i, v := range vs {
			ctx.KV().Set(fmt.Sprintf("result_%d", i), string(v))
		}
		return "done", nil
	})
	for i := range 5 {
		kvExpect(h, "kv-fanout", fmt.Sprintf("result_%d", i), kvP(fmt.Sprintf("result_%d", i)))
	}
}

func kvJSONValue(h *H) {
	const v = `{"nested": [1,2,3]}`
	kvCompleted(h, "kv-json", "", "JsonKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("data", v)
		return "done", nil
	})
	kvExpect(h, "kv-json", "data", kvP(v))
}

func kvEmptyKey(h *H) {
	kvCompleted(h, "kv-emptykey", "", "EmptyKeyKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("", "value_for_empty_key")
		return "done", nil
	})
	kvExpect(h, "kv-emptykey", "", kvP("value_for_empty_key"))
}

func kvClearValueThenSetSameKey(h *H) {
	out := kvCompleted(h, "kv-clrset", "", "ClearSetSame", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("A", "1")
		ctx.KV().Delete("A")
		ctx.KV().Set("A", "2")
		return kvGetOr(ctx, "A", ""), nil
	})
	kvOut(h, out, "2")
	kvExpect(h, "kv-clrset", "A", kvP("2"))
}

func kvGetValueFromInstanceSelf(h *H) {
	out := kvCompleted(h, "kv-self", "", "SelfRead", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("key", "local_val")
		// A turn boundary materializes the value.
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		return kvFromInstance(ctx, "kv-self", "key", "missing")
	})
	kvOut(h, out, "local_val")
}

func kvGetValueTypedWrongType(h *H) {
	out := kvCompleted(h, "kv-typemis", "", "TypeMismatch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		b, _ := json.Marshal([]uint32{1, 2, 3})
		ctx.KV().Set("data", string(b))
		raw, ok := ctx.KV().Get("data")
		if !ok {
			return "none", nil
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return "error_caught", nil
		}
		return fmt.Sprintf("unexpected: %v", m), nil
	})
	kvOut(h, out, "error_caught")
}

// kvSingleThread is duroxide's current-thread runtime: one slot each.
func kvSingleThread(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = 1, 1 }

func kvSingleThreadBasic(h *H) {
	out := kvCompleted(h, "kv-st", "", "STKv", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("key", "val")
		if _, err := kvCall(ctx, "Task", ""); err != nil {
			return "", err
		}
		return kvGetOr(ctx, "key", ""), nil
	}, kvSingleThread)
	kvOut(h, out, "val")
	kvExpect(h, "kv-st", "key", kvP("val"))
}

func kvSingleThreadCANWithKV(h *H) {
	kvCompleted(h, "kv-stcan", "", "STCAN", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("count", "1")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		if v := kvGetOr(ctx, "count", ""); v != "1" {
			return "", fmt.Errorf("count %q; want 1", v)
		}
		return "done", nil
	}), kvSingleThread)
	kvExpect(h, "kv-stcan", "count", kvP("1"))
}

func kvStressConcurrentWrites(h *H) {
	kvServe(h, map[string]kvOrch{"ConcWrite": func(ctx *durable.OrchestrationContext, in string) (string, error) {
		for i := range 5 {
			ctx.KV().Set(fmt.Sprintf("key_%d", i), fmt.Sprintf("val_%s_%d", in, i))
		}
		return "wrote_" + in, nil
	}})
	for i := range 10 {
		h.Start("ConcWrite", fmt.Sprintf("kv-conc-%d", i), durable.Raw(strconv.Itoa(i)))
	}
	for i := range 10 {
		kvOut(h, h.Completed(fmt.Sprintf("kv-conc-%d", i)), fmt.Sprintf("wrote_%d", i))
	}
	for _, i := range []int{0, 3, 7, 9} {
		kvExpect(h, fmt.Sprintf("kv-conc-%d", i), "key_0", kvP(fmt.Sprintf("val_%d_0", i)))
	}
}

func kvStressHighKeyCount(h *H) {
	kvCompleted(h, "kv-manykeys", "", "ManyKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := range kvMaxKeys {
			ctx.KV().Set(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
		}
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		// Overwrite with the same values in the next turn.
		for i := range kvMaxKeys {
			ctx.KV().Set(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
		}
		return "done", nil
	})
	all, err := h.Client.KVValues(h.Ctx(), "kv-manykeys")
	if err != nil {
		h.Fatal(err)
	}
	for i := range kvMaxKeys {
		if all[fmt.Sprintf("k%d", i)] != fmt.Sprintf("v%d", i) {
			h.Fatalf("key k%d = %q", i, all[fmt.Sprintf("k%d", i)])
		}
	}
}

func kvStressCrossInstanceReads(h *H) {
	kvServe(h, map[string]kvOrch{
		"SharedWriter": kvWriterOrch("shared", "producer_value"),
		"ConcReader": func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return kvFromInstance(ctx, "kv-shared-src", "shared", "missing")
		},
	})
	h.Start("SharedWriter", "kv-shared-src", durable.Raw(""))
	if _, err := h.Client.WaitForKVValue(h.Ctx(), "kv-shared-src", "shared"); err != nil {
		h.Fatal(err)
	}
	for i := range 10 {
		h.Start("ConcReader", fmt.Sprintf("kv-reader-%d", i), durable.Raw(""))
	}
	for i := range 10 {
		kvOut(h, h.Completed(fmt.Sprintf("kv-reader-%d", i)), "producer_value")
	}
	kvFinishWriter(h, "kv-shared-src")
}

func kvStressCANThroughput(h *H) {
	kvCompleted(h, "kv-can-tput", "0", "CANThroughput", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		// duroxide counts with a shared counter; the input carries it here.
		i, err := strconv.Atoi(in)
		if err != nil {
			return "", err
		}
		ctx.KV().Set("iter", strconv.Itoa(i))
		if i < 4 {
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(i + 1)))
		}
		return "done", nil
	})
	kvExpect(h, "kv-can-tput", "iter", kvP("4"))
	if st := h.Wait("kv-can-tput"); st.ExecutionID != 5 {
		h.Fatalf("execution %d; want 5", st.ExecutionID)
	}
}

func kvClientGetAllValues(h *H) {
	kvCompleted(h, "kv-all-1", "", "SetMulti", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("a", "1")
		ctx.KV().Set("b", "2")
		ctx.KV().Set("c", "3")
		return "done", nil
	})
	kvExpectAll(h, "kv-all-1", map[string]string{"a": "1", "b": "2", "c": "3"})
}

func kvClientGetAllValuesEmpty(h *H) {
	kvCompleted(h, "kv-all-empty", "", "NoKV", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil })
	kvExpectAll(h, "kv-all-empty", map[string]string{})
}

func kvClientGetAllValuesAfterOverwrite(h *H) {
	kvCompleted(h, "kv-all-ow", "", "Overwrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("x", "old")
		ctx.KV().Set("y", "keep")
		ctx.KV().Set("x", "new")
		return "done", nil
	})
	kvExpectAll(h, "kv-all-ow", map[string]string{"x": "new", "y": "keep"})
}

func kvClientGetAllValuesAfterClear(h *H) {
	kvCompleted(h, "kv-all-clr", "", "ClearSome", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("a", "1")
		ctx.KV().Set("b", "2")
		ctx.KV().Set("c", "3")
		ctx.KV().Delete("b")
		return "done", nil
	})
	kvExpectAll(h, "kv-all-clr", map[string]string{"a": "1", "c": "3"})
}

func kvClientGetAllValuesAcrossCAN(h *H) {
	kvCompleted(h, "kv-all-can", "0", "CANKV", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, err := strconv.Atoi(in)
		if err != nil {
			return "", err
		}
		ctx.KV().Set(fmt.Sprintf("key_%d", n), fmt.Sprintf("val_%d", n))
		if n < 2 {
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		return "done", nil
	})
	kvExpectAll(h, "kv-all-can", map[string]string{"key_0": "val_0", "key_1": "val_1", "key_2": "val_2"})
}

func kvPruneOldValuesByTimestamp(h *H) {
	out := kvCompleted(h, "kv-prune-ts", "0", "PruneTS", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "0" {
			ctx.KV().Set("old1", "v1")
			ctx.KV().Set("old2", "v2")
			return "", ctx.ContinueAsNew(durable.Raw("1"))
		}
		// The snapshot holds old1 and old2 with their timestamps; "now" is
		// certainly later.
		if err := ctx.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		now, err := ctx.UTCNow().Get(ctx)
		if err != nil {
			return "", err
		}
		ctx.KV().Set("fresh", "v3") // set after the cutoff
		return fmt.Sprintf("removed:%d", ctx.KV().PruneUpdatedBefore(now)), nil
	})
	kvOut(h, out, "removed:2")
	kvExpect(h, "kv-prune-ts", "old1", nil)
	kvExpect(h, "kv-prune-ts", "old2", nil)
	kvExpect(h, "kv-prune-ts", "fresh", kvP("v3"))
}

func kvPruneWithZeroThresholdDoesNothing(h *H) {
	out := kvCompleted(h, "kv-prune-0", "0", "PruneZero", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "0" {
			ctx.KV().Set("a", "1")
			ctx.KV().Set("b", "2")
			return "", ctx.ContinueAsNew(durable.Raw("1"))
		}
		removed := ctx.KV().PruneUpdatedBefore(time.UnixMilli(0))
		return fmt.Sprintf("removed:%d,a:%s,b:%s", removed, kvGetOr(ctx, "a", ""), kvGetOr(ctx, "b", "")), nil
	})
	kvOut(h, out, "removed:0,a:1,b:2")
}

// kvFarFuture stands for duroxide's u64::MAX cutoff.
var kvFarFuture = time.UnixMilli(math.MaxInt64)

func kvPruneEmptyReturnsZero(h *H) {
	out := kvCompleted(h, "kv-prune-empty", "", "PruneEmpty", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return fmt.Sprintf("removed:%d", ctx.KV().PruneUpdatedBefore(kvFarFuture)), nil
	})
	kvOut(h, out, "removed:0")
}

func kvPruneCurrentTurnKeysWithMaxThreshold(h *H) {
	out := kvCompleted(h, "kv-prune-max", "", "PruneMax", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("x", "1")
		ctx.KV().Set("y", "2")
		removed := ctx.KV().PruneUpdatedBefore(kvFarFuture)
		return fmt.Sprintf("removed:%d,x:%s,y:%s", removed, kvGetOr(ctx, "x", "gone"), kvGetOr(ctx, "y", "gone")), nil
	})
	kvOut(h, out, "removed:2,x:gone,y:gone")
}

func kvPruneUnpersistedCurrentTurnKeyWithWallClock(h *H) {
	out := kvCompleted(h, "kv-prune-wall", "", "PruneWall", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("ephemeral", "will_be_pruned")
		// As in duroxide, a wall clock read inside orchestration code (never
		// do this in real code): a cutoff certainly after the key's time, to
		// show unpersisted keys of this turn are prunable by real timestamps.
		// The 1 ms pause only moves to the next millisecond.
		time.Sleep(time.Millisecond)                       //durablevet:ignore the port's point
		removed := ctx.KV().PruneUpdatedBefore(time.Now()) //durablevet:ignore the port's point
		return fmt.Sprintf("removed:%d,ephemeral:%s", removed, kvGetOr(ctx, "ephemeral", "gone")), nil
	})
	kvOut(h, out, "removed:1,ephemeral:gone")
	kvExpect(h, "kv-prune-wall", "ephemeral", nil)
}

func kvPruneSelectiveByAge(h *H) {
	out := kvCompleted(h, "kv-prune-sel", "0", "PruneSel", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		phase, rest, _ := strings.Cut(in, ":")
		switch phase {
		case "0":
			ctx.KV().Set("old_key", "old_val")
			return "", ctx.ContinueAsNew(durable.Raw("1"))
		case "1":
			if err := ctx.Sleep(50 * time.Millisecond); err != nil {
				return "", err
			}
			boundary, err := ctx.UTCNow().Get(ctx)
			if err != nil {
				return "", err
			}
			ctx.KV().Set("recent_key", "recent_val")
			return "", ctx.ContinueAsNew(durable.Raw(fmt.Sprintf("2:%d", boundary.UnixMilli())))
		}
		ms, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return "", err
		}
		if err := ctx.Sleep(10 * time.Millisecond); err != nil {
			return "", err
		}
		removed := ctx.KV().PruneUpdatedBefore(time.UnixMilli(ms))
		return fmt.Sprintf("removed:%d,old:%s,recent:%s", removed, kvGetOr(ctx, "old_key", "gone"), kvGetOr(ctx, "recent_key", "gone")), nil
	})
	kvOut(h, out, "removed:1,old:gone,recent:recent_val")
}

func kvReadModifyWriteAcrossTurns(h *H) {
	out := kvCompleted(h, "kv-rmw", "", "ReadModifyWrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.KV().Set("counter", "1")
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		if v := kvGetOr(ctx, "counter", "missing"); v != "1" {
			return "", fmt.Errorf("turn 2 sees %q; want 1", v)
		}
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		n, err := strconv.Atoi(kvGetOr(ctx, "counter", "missing"))
		if err != nil {
			return "", err
		}
		ctx.KV().Set("counter", strconv.Itoa(n+1))
		return strconv.Itoa(n + 1), nil
	})
	kvOut(h, out, "2")
	kvExpect(h, "kv-rmw", "counter", kvP("2"))
}

// kvIncrementTurns increments counter n times, one turn each.
func kvIncrementTurns(ctx *durable.OrchestrationContext, n int) (string, error) {
	for range n {
		c, err := strconv.Atoi(kvGetOr(ctx, "counter", "0"))
		if err != nil {
			return "", err
		}
		ctx.KV().Set("counter", strconv.Itoa(c+1))
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
	}
	return kvGetOr(ctx, "counter", "0"), nil
}

func kvReadModifyWriteEveryTurn(h *H) {
	// Replaying an earlier turn must not see the snapshot's later value.
	out := kvCompleted(h, "kv-rmw-every", "", "RMWEveryTurn", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return kvIncrementTurns(ctx, 5)
	})
	kvOut(h, out, "5")
	kvExpect(h, "kv-rmw-every", "counter", kvP("5"))
}

func kvClearAllThenSetAcrossTurns(h *H) {
	out := kvCompleted(h, "kv-ca-rmw", "", "ClearAllRMW", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("old_key", "old_val")
		ctx.KV().Set("shared", "from_exec_1")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Clear()
		ctx.KV().Set("new_key", "new_val")
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		ctx.KV().Set("final", "done")
		return fmt.Sprintf("old=%s,shared=%s,new=%s", kvGetOr(ctx, "old_key", "none"), kvGetOr(ctx, "shared", "none"), kvGetOr(ctx, "new_key", "none")), nil
	}))
	kvOut(h, out, "old=none,shared=none,new=new_val")
	kvExpect(h, "kv-ca-rmw", "old_key", nil)
	kvExpect(h, "kv-ca-rmw", "final", kvP("done"))
	kvExpect(h, "kv-ca-rmw", "new_key", kvP("new_val"))
}

func kvClearSingleWithPriorExecutionValue(h *H) {
	out := kvCompleted(h, "kv-csp", "", "ClearSinglePrior", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("session_token", "abc123")
		ctx.KV().Set("keep_me", "alive")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Delete("session_token")
		if _, err := kvCall(ctx, "Noop", ""); err != nil {
			return "", err
		}
		return fmt.Sprintf("token=%s,kept=%s", kvGetOr(ctx, "session_token", "none"), kvGetOr(ctx, "keep_me", "none")), nil
	}))
	kvOut(h, out, "token=none,kept=alive")
}

func kvRMWAcrossCANBoundary(h *H) {
	out := kvCompleted(h, "kv-rmw-can", "", "RmwCan", kvTwoExecutions(func(ctx *durable.OrchestrationContext) (string, error) {
		ctx.KV().Set("counter", "5")
		return "", nil
	}, func(ctx *durable.OrchestrationContext) (string, error) {
		return kvIncrementTurns(ctx, 3)
	}))
	kvOut(h, out, "8")
	kvExpect(h, "kv-rmw-can", "counter", kvP("8"))
}
