package providertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Deletion covers the deletion part of the management capability: deleting
// one instance with its descendants, the atomic batch delete underneath it,
// the tree primitives (ListChildren, ParentID, GetInstanceTree), and the two
// safety properties that make deletion safe during processing: a deleted
// instance's held lock and worker entries die with it, so neither a pending
// turn nor an in-flight activity can write into the instance or a new one of
// the same id.

// deletionTests returns the Deletion category.
func deletionTests() []testCase {
	return []testCase{
		{"DeleteTerminalInstances", deletionDeleteTerminalInstances},
		{"DeleteRunningRejectedForceSucceeds", deletionDeleteRunningRejectedForceSucceeds},
		{"DeleteNonexistentInstance", deletionDeleteNonexistentInstance},
		{"DeleteCleansQueuesAndLocks", deletionDeleteCleansQueuesAndLocks},
		{"CascadeDeleteHierarchy", deletionCascadeDeleteHierarchy},
		{"ForceDeletePreventsAckRecreation", deletionForceDeletePreventsAckRecreation},
		{"ListChildren", deletionListChildren},
		{"DeleteGetParentID", deletionDeleteGetParentID},
		{"DeleteGetInstanceTree", deletionDeleteGetInstanceTree},
		{"DeleteInstancesAtomic", deletionDeleteInstancesAtomic},
		{"DeleteInstancesAtomicForce", deletionDeleteInstancesAtomicForce},
		{"DeleteInstancesAtomicOrphanDetection", deletionDeleteInstancesAtomicOrphanDetection},
		{"StaleActivityAfterDeleteRecreate", deletionStaleActivityAfterDeleteRecreate},
	}
}

// deletionTree is a three-level instance hierarchy: root has the children
// child1 and child2, and child2 has the child grandchild. Every instance is
// completed, with two history events and one execution.
type deletionTree struct {
	root, child1, child2, grandchild string
}

// all returns the tree's ids, sorted.
func (d deletionTree) all() []string {
	return slices.Sorted(slices.Values([]string{d.root, d.child1, d.child2, d.grandchild}))
}

// deletionBuildTree creates a deletionTree under root, with child ids
// formed as the runtime forms them for sub-orchestrations.
func deletionBuildTree(ctx context.Context, t *testing.T, p provider.Provider, root string) deletionTree {
	t.Helper()
	d := deletionTree{root: root, child1: root + "::sub::2", child2: root + "::sub::3"}
	d.grandchild = d.child2 + "::sub::4"
	completeInstance(ctx, t, p, d.root, "", provider.StatusCompleted)
	completeInstance(ctx, t, p, d.child1, d.root, provider.StatusCompleted)
	completeInstance(ctx, t, p, d.child2, d.root, provider.StatusCompleted)
	completeInstance(ctx, t, p, d.grandchild, d.child2, provider.StatusCompleted)
	return d
}

// deletionCancelInstance starts instance and cancels it: a second turn,
// triggered by a CancelInstance message, records the request and fails the
// execution with a cancellation. The instance ends Failed with three events.
func deletionCancelInstance(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	createInstance(ctx, t, p, instance)
	const reason = "user requested cancellation"
	enqueueOrch(ctx, t, p, provider.CancelInstanceItem{Instance: instance, Reason: reason}, 0)
	item := mustFetchOrch(ctx, t, p, deletionLock)
	if item.Instance != instance {
		t.Fatalf("cancel turn: fetched instance %q, want %q", item.Instance, instance)
	}
	details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: reason}, Message: reason}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(2, instance, provider.InitialExecutionID, provider.OrchestrationCancelRequested{Reason: reason}),
			event(3, instance, provider.InitialExecutionID, provider.OrchestrationFailed{Details: details}),
		},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusFailed, Output: ptr("canceled: " + reason)},
	})
}

// deletionLock is the lock timeout of the fetches in this category: long
// enough never to expire during a test.
const deletionLock = 30 * time.Second

// deletionWantExists fails t unless admin knows instance.
func deletionWantExists(ctx context.Context, t *testing.T, admin provider.Admin, instance string) {
	t.Helper()
	if _, err := admin.InstanceInfo(ctx, instance); err != nil {
		t.Fatalf("InstanceInfo(%q): want the instance to exist, got %v", instance, err)
	}
}

// deletionWantGone fails t unless instance has left no trace that p or
// admin report: no instance record, no executions, no history.
func deletionWantGone(ctx context.Context, t *testing.T, p provider.Provider, admin provider.Admin, instance string) {
	t.Helper()
	_, err := admin.InstanceInfo(ctx, instance)
	wantPermanent(t, err, provider.ErrNotFound, "InstanceInfo("+instance+") after delete")
	wantMessage(t, err, "InstanceInfo("+instance+") after delete", "not found")
	execs, err := admin.ListExecutions(ctx, instance)
	must(t, err, "ListExecutions("+instance+")")
	if len(execs) != 0 {
		t.Fatalf("ListExecutions(%q) after delete: got %v, want none", instance, execs)
	}
	if h := readHistory(ctx, t, p, instance); len(h) != 0 {
		t.Fatalf("Read(%q) after delete: got event ids %v, want none", instance, eventIDs(h))
	}
	// A lagging listing may show a deleted row until it converges.
	awaitTrue(ctx, t, "ListInstances after delete", func() (bool, string) {
		ids, err := admin.ListInstances(ctx)
		must(t, err, "ListInstances")
		return !slices.Contains(ids, instance), fmt.Sprintf("%q is still listed", instance)
	})
}

// deletionSorted returns ids sorted, as a non-nil slice.
func deletionSorted(ids []string) []string {
	out := append([]string{}, ids...)
	slices.Sort(out)
	return out
}

// deletionDeleteTerminalInstances checks that completed, failed and cancelled instances are deleted from everywhere, with exact counts.
func deletionDeleteTerminalInstances(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const completed, failed, cancelled = "delete-term-completed", "delete-term-failed", "delete-term-cancelled"
	completeInstance(ctx, t, p, completed, "", provider.StatusCompleted)
	completeInstance(ctx, t, p, failed, "", provider.StatusFailed)
	deletionCancelInstance(ctx, t, p, cancelled)
	for _, id := range []string{completed, failed, cancelled} {
		deletionWantExists(ctx, t, admin, id)
	}

	for _, c := range []struct {
		id     string
		events uint64
	}{{completed, 2}, {failed, 2}, {cancelled, 3}} {
		res, err := provider.DeleteInstance(ctx, admin, c.id, false)
		must(t, err, "DeleteInstance("+c.id+")")
		wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 1, ExecutionsDeleted: 1, EventsDeleted: c.events}, "DeleteInstance("+c.id+") counts")
		deletionWantGone(ctx, t, p, admin, c.id)
	}
}

// deletionDeleteRunningRejectedForceSucceeds checks that a running instance is deleted only with force.
func deletionDeleteRunningRejectedForceSucceeds(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "delete-running-force"
	createInstance(ctx, t, p, inst)

	_, err := provider.DeleteInstance(ctx, admin, inst, false)
	wantPermanent(t, err, provider.ErrStillRunning, "DeleteInstance of a running instance without force")
	wantMessage(t, err, "DeleteInstance of a running instance without force", "still running")
	deletionWantExists(ctx, t, admin, inst)
	wantEqual(t, eventIDs(readHistory(ctx, t, p, inst)), []uint64{1}, "history after the rejected delete")

	res, err := provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance(force) of a running instance")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 1, ExecutionsDeleted: 1, EventsDeleted: 1}, "DeleteInstance(force) counts")
	deletionWantGone(ctx, t, p, admin, inst)
}

// deletionDeleteNonexistentInstance checks that deleting an unknown instance fails with a permanent not-found error.
func deletionDeleteNonexistentInstance(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	for _, force := range []bool{false, true} {
		_, err := provider.DeleteInstance(ctx, admin, "does-not-exist-12345", force)
		wantPermanent(t, err, provider.ErrNotFound, "DeleteInstance of an unknown instance")
		wantMessage(t, err, "DeleteInstance of an unknown instance", "not found")
	}
}

// deletionDeleteCleansQueuesAndLocks checks that a delete removes the instance's queued messages and leaves nothing behind that affects a new instance with the same id.
func deletionDeleteCleansQueuesAndLocks(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "delete-queues-locks"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	enqueueWorker(ctx, t, p, activityItem(inst, provider.InitialExecutionID, 1))
	item := mustFetchOrch(ctx, t, p, deletionLock)
	meta := startMetadata()
	meta.Status = provider.StatusCompleted
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:     meta,
	})

	res, err := provider.DeleteInstance(ctx, admin, inst, false)
	must(t, err, "DeleteInstance")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 1, ExecutionsDeleted: 1, EventsDeleted: 1, QueueMessagesDeleted: 1}, "DeleteInstance counts (the queued activity included)")
	deletionWantGone(ctx, t, p, admin, inst)
	if w := fetchWork(ctx, t, p, deletionLock, nil, provider.DefaultOnlyTags()); w != nil {
		t.Fatalf("worker queue after delete: got activity %d of %q, want none", w.Item.ID, w.Item.Instance)
	}

	// The id is free for a new instance, and nothing of the old one shows.
	const name, version, input = "ReusedOrch", "2.0.0", `{"reused": true}`
	enqueueOrch(ctx, t, p, provider.StartOrchestrationItem{
		Instance: inst, Orchestration: name, Input: input, Version: ptr(version), ExecutionID: provider.InitialExecutionID,
	}, 0)
	item = mustFetchOrch(ctx, t, p, deletionLock)
	if item.Instance != inst || item.OrchestrationName != name || item.ExecutionID != provider.InitialExecutionID || len(item.History) != 0 {
		t.Fatalf("fetch of the recreated instance: got instance %q, name %q, execution %d, %d history events; want %q, %q, 1, none",
			item.Instance, item.OrchestrationName, item.ExecutionID, len(item.History), inst, name)
	}
	err = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(provider.InitialEventID, inst, provider.InitialExecutionID,
			provider.OrchestrationStarted{Name: name, Version: version, Input: input})},
		Metadata: provider.ExecutionMetadata{OrchestrationName: name, OrchestrationVersion: version},
	})
	must(t, err, "AckOrchestrationItem of the recreated instance")

	info, err := admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo of the recreated instance")
	if info.OrchestrationName != name || info.OrchestrationVersion != version {
		t.Fatalf("recreated instance: got name %q version %q, want %q %q", info.OrchestrationName, info.OrchestrationVersion, name, version)
	}
	h := readHistory(ctx, t, p, inst)
	if len(h) != 1 {
		t.Fatalf("history of the recreated instance: got event ids %v, want [1]", eventIDs(h))
	}
	if started, ok := h[0].Kind.(provider.OrchestrationStarted); !ok || started.Name != name || started.Input != input {
		t.Fatalf("history of the recreated instance: got %#v, want the new OrchestrationStarted", h[0].Kind)
	}

	_, err = provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance(force) of the recreated instance")
}

// deletionCascadeDeleteHierarchy checks that sub-orchestrations cannot be deleted directly and that deleting the root removes the whole tree with aggregated counts.
func deletionCascadeDeleteHierarchy(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	d := deletionBuildTree(ctx, t, p, "cascade-root")
	for _, id := range d.all() {
		deletionWantExists(ctx, t, admin, id)
	}

	for _, c := range []struct {
		id    string
		force bool
	}{{d.child1, false}, {d.child1, true}, {d.child2, false}, {d.grandchild, false}, {d.grandchild, true}} {
		_, err := provider.DeleteInstance(ctx, admin, c.id, c.force)
		what := "DeleteInstance of sub-orchestration " + c.id
		wantPermanent(t, err, provider.ErrSubOrchestration, what)
		msg := strings.ToLower(err.Error())
		if !strings.Contains(msg, "sub-orchestration") && !strings.Contains(msg, "root") && !strings.Contains(msg, "parent") {
			t.Fatalf("%s: error %q mentions none of sub-orchestration, root, parent", what, err)
		}
	}
	for _, id := range d.all() {
		deletionWantExists(ctx, t, admin, id)
	}

	res, err := provider.DeleteInstance(ctx, admin, d.root, false)
	must(t, err, "DeleteInstance of the root")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 4, ExecutionsDeleted: 4, EventsDeleted: 8}, "DeleteInstance counts for the 4-instance tree")
	for _, id := range d.all() {
		deletionWantGone(ctx, t, p, admin, id)
	}
}

// deletionForceDeletePreventsAckRecreation checks that force-deleting an instance during a turn makes that turn's ack fail without recreating anything.
func deletionForceDeletePreventsAckRecreation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "zombie-prevention"
	createInstance(ctx, t, p, inst)
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: inst, Name: "test-event", Data: "{}"}, 0)
	item := mustFetchOrch(ctx, t, p, deletionLock)
	if item.Instance != inst {
		t.Fatalf("fetched instance %q, want %q", item.Instance, inst)
	}

	res, err := provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance(force) while a turn holds the lock")
	if res.InstancesDeleted != 1 {
		t.Fatalf("DeleteInstance(force): got %+v, want 1 instance deleted", res)
	}

	err = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(2, inst, provider.InitialExecutionID, provider.ExternalEvent{Name: "test-event", Data: "{}"})},
	})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckOrchestrationItem after the instance was force-deleted")

	deletionWantGone(ctx, t, p, admin, inst)
	wantNoOrch(ctx, t, p, "after the force delete and the failed ack")
}

// deletionListChildren checks that ListChildren returns exactly the direct children, and nothing for leaves and unknown instances.
func deletionListChildren(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	d := deletionBuildTree(ctx, t, p, "list-children-root")

	for _, c := range []struct {
		id   string
		want []string
	}{
		{d.root, deletionSorted([]string{d.child1, d.child2})},
		{d.child2, []string{d.grandchild}},
		{d.child1, []string{}},
		{d.grandchild, []string{}},
		{"non-existent", []string{}},
	} {
		got, err := admin.ListChildren(ctx, c.id)
		must(t, err, "ListChildren("+c.id+")")
		wantEqual(t, deletionSorted(got), c.want, "ListChildren("+c.id+")")
	}

	_, err := provider.DeleteInstance(ctx, admin, d.root, true)
	must(t, err, "DeleteInstance(force) of the root")
}

// deletionDeleteGetParentID checks that ParentID is empty for roots, names the parent of children, and fails for unknown instances.
func deletionDeleteGetParentID(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const root = "parent-id-root"
	child := root + "::sub::2"
	completeInstance(ctx, t, p, root, "", provider.StatusCompleted)
	completeInstance(ctx, t, p, child, root, provider.StatusCompleted)

	got, err := admin.ParentID(ctx, root)
	must(t, err, "ParentID(root)")
	wantEqual(t, got, "", "ParentID(root)")
	got, err = admin.ParentID(ctx, child)
	must(t, err, "ParentID(child)")
	wantEqual(t, got, root, "ParentID(child)")

	_, err = admin.ParentID(ctx, "non-existent")
	wantPermanent(t, err, provider.ErrNotFound, "ParentID of an unknown instance")
	wantMessage(t, err, "ParentID of an unknown instance", "not found")

	_, err = provider.DeleteInstance(ctx, admin, root, true)
	must(t, err, "DeleteInstance(force) of the root")
}

// deletionDeleteGetInstanceTree checks that GetInstanceTree returns the root and every descendant, and a leaf alone.
func deletionDeleteGetInstanceTree(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	d := deletionBuildTree(ctx, t, p, "tree-root")

	tree, err := provider.GetInstanceTree(ctx, admin, d.root)
	must(t, err, "GetInstanceTree(root)")
	wantEqual(t, tree.RootID, d.root, "tree root id")
	wantEqual(t, tree.Size(), 4, "tree size")
	if tree.IsRootOnly() {
		t.Fatal("tree of the root: IsRootOnly is true, want false")
	}
	wantEqual(t, deletionSorted(tree.AllIDs), d.all(), "tree ids")

	leaf, err := provider.GetInstanceTree(ctx, admin, d.grandchild)
	must(t, err, "GetInstanceTree(leaf)")
	wantEqual(t, leaf.AllIDs, []string{d.grandchild}, "leaf tree ids")
	if !leaf.IsRootOnly() {
		t.Fatal("tree of a leaf: IsRootOnly is false, want true")
	}

	_, err = provider.DeleteInstance(ctx, admin, d.root, true)
	must(t, err, "DeleteInstance(force) of the root")
}

// deletionDeleteInstancesAtomic checks that DeleteInstancesAtomic deletes every listed instance and reports aggregate counts.
func deletionDeleteInstancesAtomic(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	ids := []string{"atomic-del-1", "atomic-del-2", "atomic-del-3"}
	for _, id := range ids {
		completeInstance(ctx, t, p, id, "", provider.StatusCompleted)
		deletionWantExists(ctx, t, admin, id)
	}

	res, err := admin.DeleteInstancesAtomic(ctx, ids, false)
	must(t, err, "DeleteInstancesAtomic")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 3, ExecutionsDeleted: 3, EventsDeleted: 6}, "DeleteInstancesAtomic counts")
	for _, id := range ids {
		deletionWantGone(ctx, t, p, admin, id)
	}
}

// deletionDeleteInstancesAtomicForce checks that a batch holding a running instance is refused as a whole without force and deleted with it.
func deletionDeleteInstancesAtomicForce(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const completed, running = "atomic-force-completed", "atomic-force-running"
	completeInstance(ctx, t, p, completed, "", provider.StatusCompleted)
	createInstance(ctx, t, p, running)
	ids := []string{completed, running}

	_, err := admin.DeleteInstancesAtomic(ctx, ids, false)
	wantPermanent(t, err, provider.ErrStillRunning, "DeleteInstancesAtomic without force")
	wantMessage(t, err, "DeleteInstancesAtomic without force", "still running")
	deletionWantExists(ctx, t, admin, completed)
	deletionWantExists(ctx, t, admin, running)

	res, err := admin.DeleteInstancesAtomic(ctx, ids, true)
	must(t, err, "DeleteInstancesAtomic(force)")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 2, ExecutionsDeleted: 2, EventsDeleted: 3}, "DeleteInstancesAtomic(force) counts")
	deletionWantGone(ctx, t, p, admin, completed)
	deletionWantGone(ctx, t, p, admin, running)
}

// deletionDeleteInstancesAtomicOrphanDetection checks that deleting a parent without its child fails and deletes nothing, and that deleting both succeeds.
func deletionDeleteInstancesAtomicOrphanDetection(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const root = "orphan-detect-root"
	child := root + "::sub::2"
	completeInstance(ctx, t, p, root, "", provider.StatusCompleted)
	completeInstance(ctx, t, p, child, root, provider.StatusCompleted)

	// As if the child had been spawned after the caller read the tree.
	_, err := admin.DeleteInstancesAtomic(ctx, []string{root}, false)
	wantPermanent(t, err, provider.ErrTreeChanged, "DeleteInstancesAtomic of a parent without its child")
	msg := strings.ToLower(err.Error())
	if !strings.Contains(msg, "child") && !strings.Contains(msg, "orphan") && !strings.Contains(msg, "tree") {
		t.Fatalf("DeleteInstancesAtomic of a parent without its child: error %q mentions none of child, orphan, tree", err)
	}
	deletionWantExists(ctx, t, admin, root)
	deletionWantExists(ctx, t, admin, child)
	wantEqual(t, eventIDs(readHistory(ctx, t, p, root)), []uint64{1, 2}, "root history after the refused delete")

	res, err := admin.DeleteInstancesAtomic(ctx, []string{root, child}, false)
	must(t, err, "DeleteInstancesAtomic of the whole tree")
	wantEqual(t, res, provider.DeleteInstanceResult{InstancesDeleted: 2, ExecutionsDeleted: 2, EventsDeleted: 4}, "DeleteInstancesAtomic counts")
	deletionWantGone(ctx, t, p, admin, root)
	deletionWantGone(ctx, t, p, admin, child)
}

// deletionStaleActivityAfterDeleteRecreate checks that an activity in flight when its instance is deleted cannot deliver its result to a new instance of the same id.
func deletionStaleActivityAfterDeleteRecreate(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "stale-activity-recreate"
	exec := provider.InitialExecutionID

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := mustFetchOrch(ctx, t, p, deletionLock)
	old := activityItem(inst, exec, 2)
	old.Name, old.Input = "OldActivity", "old-input"
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: exec,
		HistoryDelta: []provider.Event{
			startedEvent(inst, exec),
			event(2, inst, exec, provider.ActivityScheduled{Name: old.Name, Input: old.Input}),
		},
		WorkerItems: []provider.ActivityExecuteItem{old},
		Metadata:    startMetadata(),
	})
	locked := mustFetchWork(ctx, t, p, deletionLock)
	wantEqual(t, locked.Item, old, "fetched activity")

	res, err := provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance(force) while the activity runs")
	if res.InstancesDeleted != 1 {
		t.Fatalf("DeleteInstance(force): got %+v, want 1 instance deleted", res)
	}
	deletionWantGone(ctx, t, p, admin, inst)

	// Recreate the instance exactly as before.
	createInstance(ctx, t, p, inst)
	info, err := admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo of the recreated instance")
	wantEqual(t, info.OrchestrationName, testOrchestration, "recreated instance name")

	err = p.AckWorkItem(ctx, locked.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: exec, ID: 2, Result: "stale-result-from-old-instance"})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckWorkItem of the deleted instance's activity")

	// The next turn of the new instance holds only the probe.
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: inst, Name: "probe-event", Data: "{}"}, 0)
	item = mustFetchOrch(ctx, t, p, deletionLock)
	if item.Instance != inst {
		t.Fatalf("probe turn: fetched instance %q, want %q", item.Instance, inst)
	}
	for _, m := range item.Messages {
		if c, ok := m.(provider.ActivityCompletedItem); ok {
			t.Fatalf("probe turn: the new instance received a stale completion %+v", c)
		}
	}
	wantEqual(t, item.Messages, []provider.WorkItem{provider.ExternalRaisedItem{Instance: inst, Name: "probe-event", Data: "{}"}}, "probe turn messages")
	wantEqual(t, eventIDs(item.History), []uint64{1}, "probe turn history (the new instance's only)")
}
