package providertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// The KV store has two layers (contract §1.3.2 step 9, §1.3.15, §4.8): a
// store holding the state as of the instance's last finished execution, and
// the current execution's delta (values and tombstones) written by every
// ack. A terminal ack merges the delta into the store. The snapshot that
// FetchOrchestrationItem returns is the store alone; client reads (KVValue,
// KVValues) see the store overlaid by the delta. Prune never touches KV;
// deleting an instance removes both layers.

// kvStoreTests returns the KVStore category.
func kvStoreTests() []testCase {
	return []testCase{
		{"KVSetAndGet", kvStoreSetAndGet},
		{"KVOverwrite", kvStoreOverwrite},
		{"KVClearSingle", kvStoreClearSingle},
		{"KVClearAll", kvStoreClearAll},
		{"KVGetNonexistent", kvStoreGetNonexistent},
		{"KVSnapshotInFetch", kvStoreSnapshotInFetch},
		{"KVSnapshotAfterClearSingle", kvStoreSnapshotAfterClearSingle},
		{"KVSnapshotAfterClearAll", kvStoreSnapshotAfterClearAll},
		{"KVExecutionIDTracking", kvStoreExecutionIDTracking},
		{"KVCrossExecutionOverwrite", kvStoreCrossExecutionOverwrite},
		{"KVCrossExecutionRemoveReadd", kvStoreCrossExecutionRemoveReadd},
		{"KVPrunePreservesOverwritten", kvStorePrunePreservesOverwritten},
		{"KVPrunePreservesAllKeys", kvStorePrunePreservesAllKeys},
		{"KVInstanceIsolation", kvStoreInstanceIsolation},
		{"KVDeleteInstanceCascades", kvStoreDeleteInstanceCascades},
		{"KVClearNonexistentKey", kvStoreClearNonexistentKey},
		{"KVGetUnknownInstance", kvStoreGetUnknownInstance},
		{"KVSetAfterClear", kvStoreSetAfterClear},
		{"KVEmptyValue", kvStoreEmptyValue},
		{"KVLargeValue", kvStoreLargeValue},
		{"KVSpecialCharsInKey", kvStoreSpecialCharsInKey},
		{"KVSnapshotEmpty", kvStoreSnapshotEmpty},
		{"KVSnapshotCrossExecution", kvStoreSnapshotCrossExecution},
		{"KVPruneCurrentExecutionProtected", kvStorePruneCurrentExecutionProtected},
		{"KVDeleteInstanceWithChildren", kvStoreDeleteInstanceWithChildren},
		{"KVClearIsolation", kvStoreClearIsolation},
		{"KVDeltaSnapshotExcludesCurrentExecution", kvStoreDeltaSnapshotExcludesCurrentExecution},
		{"KVDeltaSnapshotIncludesCompletedExecution", kvStoreDeltaSnapshotIncludesCompletedExecution},
		{"KVDeltaClientReadsMerged", kvStoreDeltaClientReadsMerged},
		{"KVDeltaTombstoneOverridesStore", kvStoreDeltaTombstoneOverridesStore},
		{"KVDeltaClearAllTombstonesStore", kvStoreDeltaClearAllTombstonesStore},
		{"KVDeltaMergedOnCompletion", kvStoreDeltaMergedOnCompletion},
		{"KVDeltaMergedOnCAN", kvStoreDeltaMergedOnCAN},
		{"KVDeltaDeleteInstanceCascades", kvStoreDeltaDeleteInstanceCascades},
		{"KVDeltaPruneUntouchedKeySurvives", kvStoreDeltaPruneUntouchedKeySurvives},
	}
}

// ---------------------------------------------------------------------------
// Helpers

// kvStoreSetEvent is a KeyValueSet event. Its LastUpdatedAtMs is the event
// id, so snapshots can be checked for the timestamp of the winning write.
func kvStoreSetEvent(id uint64, instance string, executionID uint64, key, value string) provider.Event {
	return event(id, instance, executionID, provider.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: id})
}

// kvStoreClearEvent is a KeyValueCleared event.
func kvStoreClearEvent(id uint64, instance string, executionID uint64, key string) provider.Event {
	return event(id, instance, executionID, provider.KeyValueCleared{Key: key})
}

// kvStoreClearAllEvent is a KeyValuesCleared event.
func kvStoreClearAllEvent(id uint64, instance string, executionID uint64) provider.Event {
	return event(id, instance, executionID, provider.KeyValuesCleared{})
}

// kvStoreFetch enqueues an external event for instance, so that it has a
// turn to take, and fetches that turn.
func kvStoreFetch(ctx context.Context, t *testing.T, p provider.Provider, instance string) *provider.OrchestrationItem {
	t.Helper()
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: "poke", Data: "{}"}, 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem: got instance %q, want %q", item.Instance, instance)
	}
	return item
}

// kvStoreAck runs one turn of instance that appends delta to executionID
// with empty metadata (the execution stays as it is).
func kvStoreAck(ctx context.Context, t *testing.T, p provider.Provider, instance string, executionID uint64, delta ...provider.Event) {
	t.Helper()
	item := kvStoreFetch(ctx, t, p, instance)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: executionID, HistoryDelta: delta})
}

// kvStoreSnapshot runs an empty turn of instance on executionID and returns
// the KV snapshot its fetch delivered.
func kvStoreSnapshot(ctx context.Context, t *testing.T, p provider.Provider, instance string, executionID uint64) map[string]provider.KVEntry {
	t.Helper()
	item := kvStoreFetch(ctx, t, p, instance)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: executionID})
	return item.KVSnapshot
}

// kvStoreComplete ends executionID of instance with OrchestrationCompleted
// and status Completed, which merges the execution's KV delta into the
// store.
func kvStoreComplete(ctx context.Context, t *testing.T, p provider.Provider, instance string, executionID uint64) {
	t.Helper()
	item := kvStoreFetch(ctx, t, p, instance)
	meta := startMetadata()
	meta.Status = provider.StatusCompleted
	meta.Output = ptr("done")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  executionID,
		HistoryDelta: []provider.Event{event(9999, instance, executionID, provider.OrchestrationCompleted{Output: "done"})},
		Metadata:     meta,
	})
}

// kvStoreContinueAsNew ends execution newExecutionID-1 of instance with
// status ContinuedAsNew (merging its KV delta into the store), then runs
// the ContinueAsNew turn that starts execution newExecutionID.
func kvStoreContinueAsNew(ctx context.Context, t *testing.T, p provider.Provider, instance string, newExecutionID uint64) {
	t.Helper()
	item := kvStoreFetch(ctx, t, p, instance)
	meta := startMetadata()
	meta.Status = provider.StatusContinuedAsNew
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: newExecutionID - 1, Metadata: meta})

	enqueueOrch(ctx, t, p, provider.ContinueAsNewItem{
		Instance:           instance,
		Orchestration:      testOrchestration,
		Input:              "{}",
		Version:            ptr(testVersion),
		CarryForwardEvents: []provider.CarryForwardEvent{},
	}, 0)
	item = mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem (continue-as-new): got instance %q, want %q", item.Instance, instance)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  newExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, newExecutionID)},
		Metadata:     startMetadata(),
	})
}

// kvStorePrune prunes instance down to its current execution and checks
// that exactly the executions in remaining are left, so that a test of
// what survives a prune knows the prune really removed something.
func kvStorePrune(ctx context.Context, t *testing.T, admin provider.Admin, instance string, remaining ...uint64) {
	t.Helper()
	_, err := admin.PruneExecutions(ctx, instance, provider.PruneOptions{KeepLast: 1})
	must(t, err, "PruneExecutions("+instance+")")
	execs, err := admin.ListExecutions(ctx, instance)
	must(t, err, "ListExecutions("+instance+")")
	wantEqual(t, execs, remaining, "executions left after PruneExecutions(keep_last=1)")
}

// kvStoreShow formats a KV read result for failure messages, shortening
// long values.
func kvStoreShow(value string, ok bool) string {
	if !ok {
		return "absent"
	}
	if len(value) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", value[:40], len(value))
	}
	return fmt.Sprintf("%q", value)
}

// kvStoreWantValue checks the client view of one key: KVValue must return
// want (absent when want is nil), and KVValues must agree with it.
func kvStoreWantValue(ctx context.Context, t *testing.T, p provider.Provider, instance, key string, want *string, why string) {
	t.Helper()
	wantValue, wantOK := "", want != nil
	if want != nil {
		wantValue = *want
	}
	got, ok, err := p.KVValue(ctx, instance, key)
	must(t, err, fmt.Sprintf("KVValue(%q, %q)", instance, key))
	if ok != wantOK || got != wantValue {
		t.Fatalf("%s: KVValue(%q, %q) = %s, want %s", why, instance, key, kvStoreShow(got, ok), kvStoreShow(wantValue, wantOK))
	}
	all, err := p.KVValues(ctx, instance)
	must(t, err, fmt.Sprintf("KVValues(%q)", instance))
	got, ok = all[key]
	if ok != wantOK || got != wantValue {
		t.Fatalf("%s: KVValues(%q)[%q] = %s, want %s (as KVValue reports)", why, instance, key, kvStoreShow(got, ok), kvStoreShow(wantValue, wantOK))
	}
}

// kvStoreWantNoValues checks that the client view of instance has no keys.
func kvStoreWantNoValues(ctx context.Context, t *testing.T, p provider.Provider, instance, why string) {
	t.Helper()
	all, err := p.KVValues(ctx, instance)
	must(t, err, fmt.Sprintf("KVValues(%q)", instance))
	if len(all) != 0 {
		t.Fatalf("%s: KVValues(%q) = %v, want no keys", why, instance, all)
	}
}

// kvStoreWantSnapshot checks that a fetch's KV snapshot holds exactly want
// (values and timestamps).
func kvStoreWantSnapshot(t *testing.T, got, want map[string]provider.KVEntry, why string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	wantEqual(t, got, want, why+": KV snapshot")
}

// kvStoreEntry is the snapshot entry written by kvStoreSetEvent(id, ...).
func kvStoreEntry(id uint64, value string) provider.KVEntry {
	return provider.KVEntry{Value: value, LastUpdatedAtMs: id}
}

// ---------------------------------------------------------------------------
// Set, overwrite, clear

// kvStoreSetAndGet checks that a KeyValueSet acked in a turn is readable.
func kvStoreSetAndGet(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-set"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "counter", "42"))
	kvStoreWantValue(ctx, t, p, inst, "counter", ptr("42"), "after set")
}

// kvStoreOverwrite checks that a later KeyValueSet of a key replaces its value.
func kvStoreOverwrite(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-over"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "status", "old"))
	kvStoreWantValue(ctx, t, p, inst, "status", ptr("old"), "after first set")
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(101, inst, 1, "status", "new"))
	kvStoreWantValue(ctx, t, p, inst, "status", ptr("new"), "after overwrite")
}

// kvStoreClearSingle checks that KeyValueCleared removes the key.
func kvStoreClearSingle(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-clr1"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "remove_me", "x"))
	kvStoreWantValue(ctx, t, p, inst, "remove_me", ptr("x"), "before clear")
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearEvent(101, inst, 1, "remove_me"))
	kvStoreWantValue(ctx, t, p, inst, "remove_me", nil, "after KeyValueCleared")
}

// kvStoreClearAll checks that KeyValuesCleared removes every key.
func kvStoreClearAll(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-clra"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "a", "1"),
		kvStoreSetEvent(101, inst, 1, "b", "2"))
	kvStoreWantValue(ctx, t, p, inst, "a", ptr("1"), "before clear-all")
	kvStoreWantValue(ctx, t, p, inst, "b", ptr("2"), "before clear-all")
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearAllEvent(102, inst, 1))
	kvStoreWantValue(ctx, t, p, inst, "a", nil, "after KeyValuesCleared")
	kvStoreWantValue(ctx, t, p, inst, "b", nil, "after KeyValuesCleared")
}

// kvStoreGetNonexistent checks that a key never set reads as absent.
func kvStoreGetNonexistent(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-none"
	createInstance(ctx, t, p, inst)
	kvStoreWantValue(ctx, t, p, inst, "nope", nil, "key never set")
}

// ---------------------------------------------------------------------------
// Snapshot delivered by fetch

// kvStoreSnapshotInFetch checks that a fetch after a completed execution
// carries that execution's values in its snapshot.
func kvStoreSnapshotInFetch(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-fetch"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "x", "10"),
		kvStoreSetEvent(101, inst, 1, "y", "20"))
	kvStoreComplete(ctx, t, p, inst, 1)
	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"x": kvStoreEntry(100, "10"),
		"y": kvStoreEntry(101, "20"),
	}, "after execution 1 completed")
}

// kvStoreSnapshotAfterClearSingle checks that a key cleared before its
// execution completed is missing from the next snapshot.
func kvStoreSnapshotAfterClearSingle(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-fclr1"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "keep", "yes"),
		kvStoreSetEvent(101, inst, 1, "remove", "bye"))
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearEvent(102, inst, 1, "remove"))
	kvStoreComplete(ctx, t, p, inst, 1)
	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"keep": kvStoreEntry(100, "yes"),
	}, "after clearing \"remove\" and completing")
}

// kvStoreSnapshotAfterClearAll checks that the snapshot is empty after the
// execution cleared all its keys.
func kvStoreSnapshotAfterClearAll(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-fclra"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "a", "1"),
		kvStoreSetEvent(101, inst, 1, "b", "2"))
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearAllEvent(102, inst, 1))
	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, nil, "after KeyValuesCleared")
}

// ---------------------------------------------------------------------------
// Across executions, and pruning

// kvStoreExecutionIDTracking checks that a key overwritten by execution 2
// keeps execution 2's value after execution 1 is pruned.
func kvStoreExecutionIDTracking(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-exec"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "shared", "from_exec_1"))
	kvStoreWantValue(ctx, t, p, inst, "shared", ptr("from_exec_1"), "set in execution 1")

	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "shared", "from_exec_2"))
	kvStoreWantValue(ctx, t, p, inst, "shared", ptr("from_exec_2"), "overwritten in execution 2")

	kvStorePrune(ctx, t, admin, inst, 2)
	kvStoreWantValue(ctx, t, p, inst, "shared", ptr("from_exec_2"), "after pruning execution 1")
}

// kvStoreCrossExecutionOverwrite checks that execution 2 sees execution 1's
// value and that its own overwrite wins.
func kvStoreCrossExecutionOverwrite(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-xexec"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "k", "v1"))
	kvStoreWantValue(ctx, t, p, inst, "k", ptr("v1"), "set in execution 1")

	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "k", "v2"))
	kvStoreWantValue(ctx, t, p, inst, "k", ptr("v2"), "overwritten in execution 2")
}

// kvStoreCrossExecutionRemoveReadd checks a key set in execution 1,
// cleared in execution 2 and set again in execution 3.
func kvStoreCrossExecutionRemoveReadd(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-xrm"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "cycle", "exec1"))
	kvStoreWantValue(ctx, t, p, inst, "cycle", ptr("exec1"), "set in execution 1")

	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreClearEvent(200, inst, 2, "cycle"))
	kvStoreWantValue(ctx, t, p, inst, "cycle", nil, "cleared in execution 2")

	kvStoreContinueAsNew(ctx, t, p, inst, 3)
	kvStoreAck(ctx, t, p, inst, 3, kvStoreSetEvent(300, inst, 3, "cycle", "exec3"))
	kvStoreWantValue(ctx, t, p, inst, "cycle", ptr("exec3"), "set again in execution 3")
}

// kvStorePrunePreservesOverwritten checks that pruning execution 1 keeps a
// key that execution 2 overwrote.
func kvStorePrunePreservesOverwritten(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-prn1"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "survive", "v1"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "survive", "v2"))

	kvStorePrune(ctx, t, admin, inst, 2)
	kvStoreWantValue(ctx, t, p, inst, "survive", ptr("v2"), "after pruning execution 1")
}

// kvStorePrunePreservesAllKeys checks that pruning the only execution that
// wrote a key keeps the key: KV belongs to the instance.
func kvStorePrunePreservesAllKeys(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-prn2"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "orphan", "survives"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "keeper", "alive"))
	kvStoreWantValue(ctx, t, p, inst, "orphan", ptr("survives"), "before prune")
	kvStoreWantValue(ctx, t, p, inst, "keeper", ptr("alive"), "before prune")

	kvStorePrune(ctx, t, admin, inst, 2)
	kvStoreWantValue(ctx, t, p, inst, "orphan", ptr("survives"), "key written only by pruned execution 1")
	kvStoreWantValue(ctx, t, p, inst, "keeper", ptr("alive"), "key written by execution 2")
}

// ---------------------------------------------------------------------------
// Instances, deletion, edge cases

// kvStoreInstanceIsolation checks that two instances keep separate values
// under the same key.
func kvStoreInstanceIsolation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const a, b = "kv-iso-a", "kv-iso-b"
	createInstance(ctx, t, p, a)
	createInstance(ctx, t, p, b)
	kvStoreAck(ctx, t, p, a, 1, kvStoreSetEvent(100, a, 1, "shared_name", "from_a"))
	kvStoreAck(ctx, t, p, b, 1, kvStoreSetEvent(100, b, 1, "shared_name", "from_b"))
	kvStoreWantValue(ctx, t, p, a, "shared_name", ptr("from_a"), "instance a")
	kvStoreWantValue(ctx, t, p, b, "shared_name", ptr("from_b"), "instance b")
}

// kvStoreDeleteInstanceCascades checks that deleting a completed instance
// removes its KV.
func kvStoreDeleteInstanceCascades(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-del"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "doomed", "bye"))
	kvStoreComplete(ctx, t, p, inst, 1)
	kvStoreWantValue(ctx, t, p, inst, "doomed", ptr("bye"), "before delete")

	_, err := provider.DeleteInstance(ctx, admin, inst, false)
	must(t, err, "DeleteInstance("+inst+", force=false)")
	kvStoreWantValue(ctx, t, p, inst, "doomed", nil, "after delete")
	kvStoreWantNoValues(ctx, t, p, inst, "after delete")
}

// kvStoreClearNonexistentKey checks that clearing a key never set is
// accepted and leaves it absent.
func kvStoreClearNonexistentKey(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-clrne"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearEvent(100, inst, 1, "never_existed"))
	kvStoreWantValue(ctx, t, p, inst, "never_existed", nil, "after clearing a key never set")
}

// kvStoreGetUnknownInstance checks that reading KV of an unknown instance
// finds nothing and is not an error.
func kvStoreGetUnknownInstance(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "no-such-instance"
	const known = "kv-known"
	createInstance(ctx, t, p, known)
	kvStoreAck(ctx, t, p, known, 1, kvStoreSetEvent(100, known, 1, "key", "v"))

	kvStoreWantValue(ctx, t, p, inst, "key", nil, "unknown instance")
	kvStoreWantNoValues(ctx, t, p, inst, "unknown instance")
	kvStoreWantValue(ctx, t, p, known, "key", ptr("v"), "an instance that exists, beside the unknown one")
}

// kvStoreSetAfterClear checks that a clear-all followed by a set in the
// same ack leaves only the new key.
func kvStoreSetAfterClear(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-sac"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "old_a", "1"),
		kvStoreSetEvent(101, inst, 1, "old_b", "2"))
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreClearAllEvent(102, inst, 1),
		kvStoreSetEvent(103, inst, 1, "new_x", "fresh"))
	kvStoreWantValue(ctx, t, p, inst, "old_a", nil, "cleared before the set")
	kvStoreWantValue(ctx, t, p, inst, "old_b", nil, "cleared before the set")
	kvStoreWantValue(ctx, t, p, inst, "new_x", ptr("fresh"), "set after the clear-all")
}

// kvStoreEmptyValue checks that an empty string is a stored value, not an
// absent key.
func kvStoreEmptyValue(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-empty"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "blank", ""))
	kvStoreWantValue(ctx, t, p, inst, "blank", ptr(""), "empty value")
}

// kvStoreLargeValue checks that a value of the runtime's maximum size
// (64 KiB) round-trips unchanged.
func kvStoreLargeValue(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-big"
	createInstance(ctx, t, p, inst)
	big := strings.Repeat("x", 64*1024)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "payload", big))
	kvStoreWantValue(ctx, t, p, inst, "payload", &big, "64 KiB value")
}

// kvStoreSpecialCharsInKey checks keys with spaces, non-ASCII text, dots,
// slashes and emoji.
func kvStoreSpecialCharsInKey(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-chars"
	createInstance(ctx, t, p, inst)
	pairs := [][2]string{
		{"key with spaces", "v1"},
		{"日本語キー", "v2"},
		{"dotted.key.name", "v3"},
		{"path/like/key", "v4"},
		{"emoji🎉key", "v5"},
	}
	var delta []provider.Event
	for i, kv := range pairs {
		delta = append(delta, kvStoreSetEvent(100+uint64(i), inst, 1, kv[0], kv[1]))
	}
	kvStoreAck(ctx, t, p, inst, 1, delta...)
	for _, kv := range pairs {
		kvStoreWantValue(ctx, t, p, inst, kv[0], ptr(kv[1]), "special-character key")
	}
}

// kvStoreSnapshotEmpty checks that an instance without KV gets an empty
// snapshot.
func kvStoreSnapshotEmpty(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-sempty"
	createInstance(ctx, t, p, inst)
	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, nil, "instance without KV")
}

// kvStoreSnapshotCrossExecution checks that during execution 2 the snapshot
// holds execution 1's key but not the key execution 2 has just written.
func kvStoreSnapshotCrossExecution(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-scross"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "A", "from_exec1"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "B", "from_exec2"))

	snap := kvStoreSnapshot(ctx, t, p, inst, 2)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"A": kvStoreEntry(100, "from_exec1"),
	}, "during execution 2 (B is the current execution's write)")
}

// kvStorePruneCurrentExecutionProtected checks that pruning an instance
// with a single running execution keeps its KV.
func kvStorePruneCurrentExecutionProtected(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-prncur"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "alive", "yes"))

	kvStorePrune(ctx, t, admin, inst, 1)
	kvStoreWantValue(ctx, t, p, inst, "alive", ptr("yes"), "after pruning with keep_last=1")
}

// kvStoreDeleteInstanceWithChildren checks that deleting a parent also
// removes its child's KV.
func kvStoreDeleteInstanceWithChildren(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const parent, child = "kv-parent", "kv-child"
	createInstance(ctx, t, p, parent)
	kvStoreAck(ctx, t, p, parent, 1, kvStoreSetEvent(100, parent, 1, "parent_key", "parent_val"))

	start := startItem(child)
	start.ParentInstance = ptr(parent)
	start.ParentID = ptr[uint64](1)
	enqueueOrch(ctx, t, p, start, 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != child {
		t.Fatalf("FetchOrchestrationItem: got instance %q, want %q", item.Instance, child)
	}
	started := startedEvent(child, 1)
	started.Kind = provider.OrchestrationStarted{
		Name:           testOrchestration,
		Version:        testVersion,
		Input:          "{}",
		ParentInstance: ptr(parent),
		ParentID:       ptr[uint64](1),
	}
	meta := startMetadata()
	meta.ParentInstanceID = parent
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{started},
		Metadata:     meta,
	})
	kvStoreAck(ctx, t, p, child, 1, kvStoreSetEvent(100, child, 1, "child_key", "child_val"))

	kvStoreComplete(ctx, t, p, child, 1)
	kvStoreComplete(ctx, t, p, parent, 1)
	kvStoreWantValue(ctx, t, p, parent, "parent_key", ptr("parent_val"), "parent before delete")
	kvStoreWantValue(ctx, t, p, child, "child_key", ptr("child_val"), "child before delete")

	_, err := provider.DeleteInstance(ctx, admin, parent, false)
	must(t, err, "DeleteInstance("+parent+", force=false)")
	kvStoreWantValue(ctx, t, p, parent, "parent_key", nil, "parent after deleting the parent")
	kvStoreWantValue(ctx, t, p, child, "child_key", nil, "child after deleting the parent")
	kvStoreWantNoValues(ctx, t, p, child, "child after deleting the parent")
}

// kvStoreClearIsolation checks that a clear-all on one instance leaves
// another instance's keys alone.
func kvStoreClearIsolation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const a, b = "kv-ciso-a", "kv-ciso-b"
	createInstance(ctx, t, p, a)
	createInstance(ctx, t, p, b)
	kvStoreAck(ctx, t, p, a, 1, kvStoreSetEvent(100, a, 1, "shared", "from_a"))
	kvStoreAck(ctx, t, p, b, 1, kvStoreSetEvent(100, b, 1, "shared", "from_b"))
	kvStoreAck(ctx, t, p, a, 1, kvStoreClearAllEvent(101, a, 1))
	kvStoreWantValue(ctx, t, p, a, "shared", nil, "instance a after its clear-all")
	kvStoreWantValue(ctx, t, p, b, "shared", ptr("from_b"), "instance b after a's clear-all")
}

// ---------------------------------------------------------------------------
// Store and current-execution delta

// kvStoreDeltaSnapshotExcludesCurrentExecution checks that a value written
// by an earlier turn of the running execution is visible to clients but
// not in the next fetch's snapshot.
func kvStoreDeltaSnapshotExcludesCurrentExecution(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-ds1"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "counter", "1"))
	kvStoreWantValue(ctx, t, p, inst, "counter", ptr("1"), "client read during execution 1")

	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, nil, "execution 1 still running (its own write must not be in the snapshot)")
}

// kvStoreDeltaSnapshotIncludesCompletedExecution checks that after
// continue-as-new the new execution's snapshot holds the old execution's
// value.
func kvStoreDeltaSnapshotIncludesCompletedExecution(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-ds2"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "counter", "5"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)

	snap := kvStoreSnapshot(ctx, t, p, inst, 2)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"counter": kvStoreEntry(100, "5"),
	}, "execution 2 after continue-as-new")
}

// kvStoreDeltaClientReadsMerged checks that client reads overlay the
// current execution's writes on the store: delta values win, untouched
// store keys and delta-only keys are both visible.
func kvStoreDeltaClientReadsMerged(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-dm"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "color", "red"),
		kvStoreSetEvent(101, inst, 1, "size", "large"))
	kvStoreComplete(ctx, t, p, inst, 1)

	kvStoreAck(ctx, t, p, inst, 2,
		kvStoreSetEvent(200, inst, 2, "color", "blue"),
		kvStoreSetEvent(201, inst, 2, "shape", "circle"))
	kvStoreWantValue(ctx, t, p, inst, "color", ptr("blue"), "key in store and delta (delta wins)")
	kvStoreWantValue(ctx, t, p, inst, "size", ptr("large"), "key only in store")
	kvStoreWantValue(ctx, t, p, inst, "shape", ptr("circle"), "key only in delta")
}

// kvStoreDeltaTombstoneOverridesStore checks that clearing a stored key in
// the current execution hides it from client reads.
func kvStoreDeltaTombstoneOverridesStore(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-dt"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "temp", "exists"))
	kvStoreComplete(ctx, t, p, inst, 1)

	kvStoreAck(ctx, t, p, inst, 2, kvStoreClearEvent(200, inst, 2, "temp"))
	kvStoreWantValue(ctx, t, p, inst, "temp", nil, "stored key cleared by the current execution")
}

// kvStoreDeltaClearAllTombstonesStore checks that a clear-all in the
// current execution hides every stored key, while a key set after it stays
// visible.
func kvStoreDeltaClearAllTombstonesStore(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-dca"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "a", "1"),
		kvStoreSetEvent(101, inst, 1, "b", "2"))
	kvStoreComplete(ctx, t, p, inst, 1)

	kvStoreAck(ctx, t, p, inst, 2,
		kvStoreClearAllEvent(200, inst, 2),
		kvStoreSetEvent(201, inst, 2, "c", "3"))
	kvStoreWantValue(ctx, t, p, inst, "a", nil, "stored key after clear-all")
	kvStoreWantValue(ctx, t, p, inst, "b", nil, "stored key after clear-all")
	kvStoreWantValue(ctx, t, p, inst, "c", ptr("3"), "key set after clear-all")
}

// kvStoreDeltaMergedOnCompletion checks that a value written during an
// execution is still readable after the execution completes.
func kvStoreDeltaMergedOnCompletion(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-dmc"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "result", "42"))
	kvStoreComplete(ctx, t, p, inst, 1)
	kvStoreWantValue(ctx, t, p, inst, "result", ptr("42"), "after the execution completed")
}

// kvStoreDeltaMergedOnCAN checks that continue-as-new merges the
// execution's writes, the latest per key, into the next execution's
// snapshot.
func kvStoreDeltaMergedOnCAN(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-dmc2"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "version", "1"),
		kvStoreSetEvent(101, inst, 1, "progress", "50%"))
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(102, inst, 1, "progress", "100%"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)

	snap := kvStoreSnapshot(ctx, t, p, inst, 2)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"version":  kvStoreEntry(100, "1"),
		"progress": kvStoreEntry(102, "100%"),
	}, "execution 2 after continue-as-new")
}

// kvStoreDeltaDeleteInstanceCascades checks that force-deleting a running
// instance removes values that exist only in its current-execution delta.
func kvStoreDeltaDeleteInstanceCascades(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-ddel"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "data", "important"))
	kvStoreWantValue(ctx, t, p, inst, "data", ptr("important"), "before delete")

	_, err := provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance("+inst+", force=true)")
	kvStoreWantValue(ctx, t, p, inst, "data", nil, "after delete")
	kvStoreWantNoValues(ctx, t, p, inst, "after delete")
}

// kvStoreDeltaPruneUntouchedKeySurvives checks that keys written only by
// executions 1 and 2 survive pruning both, for clients and in execution
// 3's snapshot.
func kvStoreDeltaPruneUntouchedKeySurvives(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "kv-dprn"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1, kvStoreSetEvent(100, inst, 1, "stale_config", "from_exec_1"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreAck(ctx, t, p, inst, 2, kvStoreSetEvent(200, inst, 2, "other", "unrelated"))
	kvStoreContinueAsNew(ctx, t, p, inst, 3)
	kvStoreWantValue(ctx, t, p, inst, "stale_config", ptr("from_exec_1"), "before prune")
	kvStoreWantValue(ctx, t, p, inst, "other", ptr("unrelated"), "before prune")

	kvStorePrune(ctx, t, admin, inst, 3)
	kvStoreWantValue(ctx, t, p, inst, "stale_config", ptr("from_exec_1"), "key of pruned execution 1")
	kvStoreWantValue(ctx, t, p, inst, "other", ptr("unrelated"), "key of pruned execution 2")

	snap := kvStoreSnapshot(ctx, t, p, inst, 3)
	kvStoreWantSnapshot(t, snap, map[string]provider.KVEntry{
		"stale_config": kvStoreEntry(100, "from_exec_1"),
		"other":        kvStoreEntry(200, "unrelated"),
	}, "execution 3 after pruning executions 1 and 2")
}

// ---------------------------------------------------------------------------
// duradyn's additions: tombstones reaching the store

// kvStoreAdditions returns duradyn's additions to KVStore. duroxide's tests
// never finish an execution that cleared a key the store already held, so a
// provider whose terminal merge never deletes store entries would pass them.
func kvStoreAdditions() []testCase {
	return []testCase{
		{"KVClearInNextExecutionDeletesStoredKey", kvStoreClearInNextExecutionDeletesStoredKey},
		{"KVClearAllInNextExecutionDeletesStoredKeys", kvStoreClearAllInNextExecutionDeletesStoredKeys},
		{"KVSnapshotAfterClearAllCompleted", kvStoreSnapshotAfterClearAllCompleted},
	}
}

// kvStoreClearInNextExecutionDeletesStoredKey checks that a key set in
// execution 1, continued as new, and cleared in execution 2 is gone from
// client reads and from the snapshot once execution 2 has completed.
func kvStoreClearInNextExecutionDeletesStoredKey(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-clr-next"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "gone", "1"),
		kvStoreSetEvent(101, inst, 1, "kept", "2"))
	kvStoreContinueAsNew(ctx, t, p, inst, 2)
	kvStoreWantSnapshot(t, kvStoreSnapshot(ctx, t, p, inst, 2), map[string]provider.KVEntry{
		"gone": kvStoreEntry(100, "1"),
		"kept": kvStoreEntry(101, "2"),
	}, "execution 2 after continue-as-new (both keys stored)")

	kvStoreAck(ctx, t, p, inst, 2, kvStoreClearEvent(200, inst, 2, "gone"))
	kvStoreComplete(ctx, t, p, inst, 2)

	kvStoreWantValue(ctx, t, p, inst, "gone", nil, "stored key cleared by execution 2, after it completed")
	kvStoreWantValue(ctx, t, p, inst, "kept", ptr("2"), "stored key execution 2 left alone, after it completed")
	all, err := p.KVValues(ctx, inst)
	must(t, err, "KVValues")
	wantEqual(t, all, map[string]string{"kept": "2"}, "KVValues after execution 2 completed")
	kvStoreWantSnapshot(t, kvStoreSnapshot(ctx, t, p, inst, 2), map[string]provider.KVEntry{
		"kept": kvStoreEntry(101, "2"),
	}, "after execution 2 cleared \"gone\" and completed")
}

// kvStoreClearAllInNextExecutionDeletesStoredKeys checks that keys stored
// by completed execution 1 and cleared all at once by execution 2 are gone
// from client reads and from the snapshot once execution 2 has completed,
// while a key set after the clear stays.
func kvStoreClearAllInNextExecutionDeletesStoredKeys(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-clra-next"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "a", "1"),
		kvStoreSetEvent(101, inst, 1, "b", "2"))
	kvStoreComplete(ctx, t, p, inst, 1)

	kvStoreAck(ctx, t, p, inst, 2,
		kvStoreClearAllEvent(200, inst, 2),
		kvStoreSetEvent(201, inst, 2, "c", "3"))
	kvStoreComplete(ctx, t, p, inst, 2)

	kvStoreWantValue(ctx, t, p, inst, "a", nil, "stored key after execution 2 cleared all and completed")
	kvStoreWantValue(ctx, t, p, inst, "b", nil, "stored key after execution 2 cleared all and completed")
	kvStoreWantValue(ctx, t, p, inst, "c", ptr("3"), "key set after the clear-all, after completion")
	all, err := p.KVValues(ctx, inst)
	must(t, err, "KVValues")
	wantEqual(t, all, map[string]string{"c": "3"}, "KVValues after execution 2 completed")
	kvStoreWantSnapshot(t, kvStoreSnapshot(ctx, t, p, inst, 2), map[string]provider.KVEntry{
		"c": kvStoreEntry(201, "3"),
	}, "after execution 2 cleared all, set c and completed")
}

// kvStoreSnapshotAfterClearAllCompleted checks that an execution that set
// keys, cleared them all in a later turn and completed leaves nothing in the
// store: the snapshot and client reads are empty. (KVSnapshotAfterClearAll
// never completes the execution, so its snapshot is empty whatever the
// provider merges.)
func kvStoreSnapshotAfterClearAllCompleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "kv-fclra-done"
	createInstance(ctx, t, p, inst)
	kvStoreAck(ctx, t, p, inst, 1,
		kvStoreSetEvent(100, inst, 1, "a", "1"),
		kvStoreSetEvent(101, inst, 1, "b", "2"))
	kvStoreAck(ctx, t, p, inst, 1, kvStoreClearAllEvent(102, inst, 1))
	kvStoreComplete(ctx, t, p, inst, 1)

	kvStoreWantNoValues(ctx, t, p, inst, "after clear-all and completion")
	snap := kvStoreSnapshot(ctx, t, p, inst, 1)
	kvStoreWantSnapshot(t, snap, nil, "after KeyValuesCleared and completion")
}
