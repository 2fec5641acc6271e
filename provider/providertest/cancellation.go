package providertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Cancellation covers activity cancellation by "lock stealing": an
// orchestration turn deletes worker-queue entries through
// TurnCommit.CancelledActivities, and the worker holding such an entry learns
// of it when its renew or ack fails. The worker queue never consults
// orchestration state: an activity stays fetchable and renewable whatever
// became of its instance (the older tests of this category are named after
// an ExecutionState return value that no longer exists; they now check just
// that).

// cancellationTests returns the Cancellation category.
func cancellationTests() []testCase {
	return []testCase{
		{"FetchReturnsRunningStateForActiveOrchestration", cancellationFetchReturnsRunningStateForActiveOrchestration},
		{"FetchReturnsTerminalStateWhenOrchestrationCompleted", cancellationFetchReturnsTerminalStateWhenOrchestrationCompleted},
		{"FetchReturnsTerminalStateWhenOrchestrationFailed", cancellationFetchReturnsTerminalStateWhenOrchestrationFailed},
		{"FetchReturnsTerminalStateWhenOrchestrationContinuedAsNew", cancellationFetchReturnsTerminalStateWhenOrchestrationContinuedAsNew},
		{"FetchReturnsMissingStateWhenInstanceDeleted", cancellationFetchReturnsMissingStateWhenInstanceDeleted},
		{"RenewReturnsRunningWhenOrchestrationActive", cancellationRenewReturnsRunningWhenOrchestrationActive},
		{"RenewReturnsTerminalWhenOrchestrationCompleted", cancellationRenewReturnsTerminalWhenOrchestrationCompleted},
		{"RenewReturnsMissingWhenInstanceDeleted", cancellationRenewReturnsMissingWhenInstanceDeleted},
		{"AckWorkItemNoneDeletesWithoutEnqueue", cancellationAckWorkItemNoneDeletesWithoutEnqueue},
		{"CancelledActivitiesDeletedFromWorkerQueue", cancellationCancelledActivitiesDeletedFromWorkerQueue},
		{"AckWorkItemFailsWhenEntryDeleted", cancellationAckWorkItemFailsWhenEntryDeleted},
		{"RenewFailsWhenEntryDeleted", cancellationRenewFailsWhenEntryDeleted},
		{"CancellingNonexistentActivitiesIsIdempotent", cancellationCancellingNonexistentActivitiesIsIdempotent},
		{"BatchCancellationDeletesMultipleActivities", cancellationBatchCancellationDeletesMultipleActivities},
		{"SameActivityInWorkerItemsAndCancelledIsNoop", cancellationSameActivityInWorkerItemsAndCancelledIsNoop},
		{"OrphanActivityAfterInstanceForceDeletion", cancellationOrphanActivityAfterInstanceForceDeletion},
	}
}

// cancellationLock is the lock timeout of the fetches in this category: long
// enough never to expire during a test.
const cancellationLock = 30 * time.Second

// cancellationRunningMetadata is first-turn metadata that also records the
// Running status, as the tests of this category send it.
func cancellationRunningMetadata() provider.ExecutionMetadata {
	meta := startMetadata()
	meta.Status = provider.StatusRunning
	return meta
}

// cancellationStartTurn enqueues a start for instance, fetches it and acks
// the first turn: OrchestrationStarted followed by extra, the worker items
// work, the cancellations cancelled, and meta.
func cancellationStartTurn(ctx context.Context, t *testing.T, p provider.Provider, instance string, extra []provider.Event, meta provider.ExecutionMetadata, work []provider.ActivityExecuteItem, cancelled []provider.ScheduledActivityIdentifier) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, cancellationLock)
	if item.Instance != instance {
		t.Fatalf("start turn: fetched instance %q, want %q", item.Instance, instance)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:         provider.InitialExecutionID,
		HistoryDelta:        append([]provider.Event{startedEvent(instance, provider.InitialExecutionID)}, extra...),
		WorkerItems:         work,
		Metadata:            meta,
		CancelledActivities: cancelled,
	})
}

// cancellationNextTurn raises an external event on instance to trigger a
// turn, fetches it and returns the locked item.
func cancellationNextTurn(ctx context.Context, t *testing.T, p provider.Provider, instance string) *provider.OrchestrationItem {
	t.Helper()
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: "Trigger", Data: "{}"}, 0)
	item := mustFetchOrch(ctx, t, p, cancellationLock)
	if item.Instance != instance {
		t.Fatalf("next turn: fetched instance %q, want %q", item.Instance, instance)
	}
	return item
}

// cancellationActivity is activity id of execution 1 of instance, named
// name.
func cancellationActivity(instance string, id uint64, name string) provider.ActivityExecuteItem {
	a := activityItem(instance, provider.InitialExecutionID, id)
	a.Name = name
	return a
}

// cancellationIdentity is the cancellation identity of activity id of
// execution 1 of instance.
func cancellationIdentity(instance string, id uint64) provider.ScheduledActivityIdentifier {
	return provider.ScheduledActivityIdentifier{Instance: instance, ExecutionID: provider.InitialExecutionID, ActivityID: id}
}

// cancellationFetchActivity fetches a work item and fails t unless it is
// want.
func cancellationFetchActivity(ctx context.Context, t *testing.T, p provider.Provider, want provider.ActivityExecuteItem) *provider.LockedWorkItem {
	t.Helper()
	got := mustFetchWork(ctx, t, p, cancellationLock)
	wantEqual(t, got.Item, want, "fetched work item")
	return got
}

// cancellationWantNoWork fails t if a work item can be fetched.
func cancellationWantNoWork(ctx context.Context, t *testing.T, p provider.Provider, why string) {
	t.Helper()
	if got := fetchWork(ctx, t, p, cancellationLock, nil, provider.DefaultOnlyTags()); got != nil {
		t.Fatalf("%s: want an empty worker queue, got activity %d of %q (%s)", why, got.Item.ID, got.Item.Instance, got.Item.Name)
	}
}

// cancellationWorkSurvivesTerminalTurn acks a first turn that schedules an
// activity and ends the execution with last and status, then checks that
// the activity can still be fetched.
func cancellationWorkSurvivesTerminalTurn(t *testing.T, s *suite, instance string, last provider.EventKind, status string, output *string) {
	ctx := s.context(t)
	p := s.provider(t)
	activity := cancellationActivity(instance, 1, "TestActivity")
	meta := startMetadata()
	meta.Status = status
	meta.Output = output
	cancellationStartTurn(ctx, t, p, instance, []provider.Event{event(2, instance, provider.InitialExecutionID, last)}, meta, []provider.ActivityExecuteItem{activity}, nil)

	h := readHistory(ctx, t, p, instance)
	if len(h) != 2 || !h[1].IsTerminal() {
		t.Fatalf("history after the terminal turn: got event ids %v, want [1 2] ending with a terminal event", eventIDs(h))
	}
	cancellationFetchActivity(ctx, t, p, activity)
}

// cancellationFetchReturnsRunningStateForActiveOrchestration checks that an activity of a running instance is fetchable.
func cancellationFetchReturnsRunningStateForActiveOrchestration(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-running"
	activity := cancellationActivity(inst, 1, "TestActivity")
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{activity}, nil)
	cancellationFetchActivity(ctx, t, p, activity)
}

// cancellationFetchReturnsTerminalStateWhenOrchestrationCompleted checks that an activity stays fetchable after its instance completed.
func cancellationFetchReturnsTerminalStateWhenOrchestrationCompleted(t *testing.T, s *suite) {
	cancellationWorkSurvivesTerminalTurn(t, s, "inst-completed",
		provider.OrchestrationCompleted{Output: "done"}, provider.StatusCompleted, ptr("done"))
}

// cancellationFetchReturnsTerminalStateWhenOrchestrationFailed checks that an activity stays fetchable after its instance failed.
func cancellationFetchReturnsTerminalStateWhenOrchestrationFailed(t *testing.T, s *suite) {
	cancellationWorkSurvivesTerminalTurn(t, s, "inst-failed",
		provider.OrchestrationFailed{Details: provider.ApplicationDetails{
			Kind:    provider.AppErrorKind{Code: provider.AppOrchestrationFailed},
			Message: "boom",
		}}, provider.StatusFailed, nil)
}

// cancellationFetchReturnsTerminalStateWhenOrchestrationContinuedAsNew checks that an activity stays fetchable after its execution continued as new.
func cancellationFetchReturnsTerminalStateWhenOrchestrationContinuedAsNew(t *testing.T, s *suite) {
	cancellationWorkSurvivesTerminalTurn(t, s, "inst-can",
		provider.OrchestrationContinuedAsNew{Input: "new-input"}, provider.StatusContinuedAsNew, ptr("new-input"))
}

// cancellationFetchReturnsMissingStateWhenInstanceDeleted checks that an activity of an instance that does not exist is fetchable.
func cancellationFetchReturnsMissingStateWhenInstanceDeleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	activity := cancellationActivity("inst-missing", 1, "TestActivity")
	enqueueWorker(ctx, t, p, activity)
	cancellationFetchActivity(ctx, t, p, activity)
}

// cancellationRenewReturnsRunningWhenOrchestrationActive checks that an activity lock of a running instance can be renewed.
func cancellationRenewReturnsRunningWhenOrchestrationActive(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-renew-run"
	activity := cancellationActivity(inst, 1, "TestActivity")
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{activity}, nil)
	locked := cancellationFetchActivity(ctx, t, p, activity)
	must(t, p.RenewWorkItemLock(ctx, locked.LockToken, cancellationLock), "RenewWorkItemLock")
}

// cancellationRenewReturnsTerminalWhenOrchestrationCompleted checks that an activity lock can still be renewed after its instance completed.
func cancellationRenewReturnsTerminalWhenOrchestrationCompleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-renew-term"
	activity := cancellationActivity(inst, 1, "TestActivity")
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{activity}, nil)
	locked := cancellationFetchActivity(ctx, t, p, activity)

	// A second turn completes the instance while the activity is in flight.
	item := cancellationNextTurn(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(2, inst, provider.InitialExecutionID, provider.OrchestrationCompleted{Output: "done"})},
		Metadata:     provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("done")},
	})
	if h := readHistory(ctx, t, p, inst); len(h) != 2 || !h[1].IsTerminal() {
		t.Fatalf("history after the completing turn: got event ids %v, want [1 2] ending with a terminal event", eventIDs(h))
	}

	must(t, p.RenewWorkItemLock(ctx, locked.LockToken, cancellationLock), "RenewWorkItemLock after the instance completed")
}

// cancellationRenewReturnsMissingWhenInstanceDeleted checks that an activity lock of an instance that does not exist can be renewed.
func cancellationRenewReturnsMissingWhenInstanceDeleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	activity := cancellationActivity("inst-renew-missing", 1, "TestActivity")
	enqueueWorker(ctx, t, p, activity)
	locked := cancellationFetchActivity(ctx, t, p, activity)
	must(t, p.RenewWorkItemLock(ctx, locked.LockToken, cancellationLock), "RenewWorkItemLock")
}

// cancellationAckWorkItemNoneDeletesWithoutEnqueue checks that acking an activity with no completion removes it and enqueues nothing.
func cancellationAckWorkItemNoneDeletesWithoutEnqueue(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-ack-none"
	// The instance exists and is idle, so a completion enqueued by mistake
	// would make it fetchable.
	createInstance(ctx, t, p, inst)
	activity := cancellationActivity(inst, 1, "TestActivity")
	enqueueWorker(ctx, t, p, activity)
	locked := cancellationFetchActivity(ctx, t, p, activity)

	must(t, p.AckWorkItem(ctx, locked.LockToken, nil), "AckWorkItem(nil)")

	cancellationWantNoWork(ctx, t, p, "after AckWorkItem(nil)")
	wantNoOrch(ctx, t, p, "after AckWorkItem(nil)")
}

// cancellationCancelledActivitiesDeletedFromWorkerQueue checks that an ack's CancelledActivities remove exactly the named worker entries.
func cancellationCancelledActivitiesDeletedFromWorkerQueue(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-cancel-delete"
	a1 := cancellationActivity(inst, 1, "Activity1")
	a2 := cancellationActivity(inst, 2, "Activity2")
	a3 := cancellationActivity(inst, 3, "Activity3")
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{a1, a2, a3}, nil)

	// The activities are on the queue: take one and put it back.
	locked := mustFetchWork(ctx, t, p, cancellationLock)
	must(t, p.AbandonWorkItem(ctx, locked.LockToken, 0, false), "AbandonWorkItem")

	item := cancellationNextTurn(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:         provider.InitialExecutionID,
		CancelledActivities: []provider.ScheduledActivityIdentifier{cancellationIdentity(inst, 1), cancellationIdentity(inst, 2)},
	})

	cancellationFetchActivity(ctx, t, p, a3)
	cancellationWantNoWork(ctx, t, p, "after cancelling activities 1 and 2 and fetching 3")
}

// cancellationAckWorkItemFailsWhenEntryDeleted checks that a worker ack fails permanently once its entry is gone, and then enqueues nothing.
func cancellationAckWorkItemFailsWhenEntryDeleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	// The entry is removed by acking it without a completion; acking it
	// again must fail.
	const inst = "inst-ack-stolen"
	activity := cancellationActivity(inst, 1, "TestActivity")
	enqueueWorker(ctx, t, p, activity)
	locked := cancellationFetchActivity(ctx, t, p, activity)
	must(t, p.AckWorkItem(ctx, locked.LockToken, nil), "AckWorkItem(nil)")
	err := p.AckWorkItem(ctx, locked.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 1, Result: "done"})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckWorkItem after the entry was deleted")

	// The entry is removed by an orchestration turn that cancels it while a
	// worker holds it: the worker's ack must fail and its completion must
	// not reach the (live, idle) instance.
	const inst2 = "inst-ack-cancelled"
	locked2 := cancellationStealHeldActivity(ctx, t, p, inst2)
	err = p.AckWorkItem(ctx, locked2.LockToken, provider.ActivityCompletedItem{Instance: inst2, ExecutionID: 1, ID: 2, Result: "done"})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckWorkItem after the activity was cancelled")
	wantNoOrch(ctx, t, p, "after a failed AckWorkItem of a cancelled activity")
}

// cancellationStealHeldActivity starts instance with activity 2 scheduled,
// has a worker lock it, then commits a turn that cancels it while the worker
// still holds it. It returns the worker's now stale lock.
func cancellationStealHeldActivity(ctx context.Context, t *testing.T, p provider.Provider, instance string) *provider.LockedWorkItem {
	t.Helper()
	activity := cancellationActivity(instance, 2, "TestActivity")
	cancellationStartTurn(ctx, t, p, instance, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{activity}, nil)
	locked := cancellationFetchActivity(ctx, t, p, activity)
	item := cancellationNextTurn(ctx, t, p, instance)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:         provider.InitialExecutionID,
		CancelledActivities: []provider.ScheduledActivityIdentifier{cancellationIdentity(instance, 2)},
	})
	return locked
}

// cancellationRenewFailsWhenEntryDeleted checks that renewing a worker lock fails once its entry is gone.
func cancellationRenewFailsWhenEntryDeleted(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	// Entry removed by an ack without completion.
	activity := cancellationActivity("inst-renew-stolen", 1, "TestActivity")
	enqueueWorker(ctx, t, p, activity)
	locked := cancellationFetchActivity(ctx, t, p, activity)
	must(t, p.AckWorkItem(ctx, locked.LockToken, nil), "AckWorkItem(nil)")
	err := p.RenewWorkItemLock(ctx, locked.LockToken, cancellationLock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock after the entry was deleted")

	// Entry removed by an orchestration turn that cancels the activity while
	// a worker holds it: the failed renewal is the worker's signal.
	const inst2 = "inst-renew-cancelled"
	locked2 := cancellationStealHeldActivity(ctx, t, p, inst2)
	err = p.RenewWorkItemLock(ctx, locked2.LockToken, cancellationLock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock after the activity was cancelled")
}

// cancellationCancellingNonexistentActivitiesIsIdempotent checks that cancelling activities that are not queued does not fail the ack.
func cancellationCancellingNonexistentActivitiesIsIdempotent(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-cancel-idempotent"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := mustFetchOrch(ctx, t, p, cancellationLock)
	err := p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID:         provider.InitialExecutionID,
		HistoryDelta:        []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:            startMetadata(),
		CancelledActivities: []provider.ScheduledActivityIdentifier{cancellationIdentity(inst, 999), cancellationIdentity(inst, 1)},
	})
	must(t, err, "AckOrchestrationItem cancelling activities that are not queued")
	wantEqual(t, eventIDs(readHistory(ctx, t, p, inst)), []uint64{1}, "history event ids after the ack")
}

// cancellationBatchCancellationDeletesMultipleActivities checks that one ack can cancel several queued activities.
func cancellationBatchCancellationDeletesMultipleActivities(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-batch-cancel"
	var work []provider.ActivityExecuteItem
	var cancelled []provider.ScheduledActivityIdentifier
	for i := uint64(1); i <= 5; i++ {
		work = append(work, cancellationActivity(inst, i, fmt.Sprintf("Activity%d", i)))
		cancelled = append(cancelled, cancellationIdentity(inst, i))
	}
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), work, nil)

	item := cancellationNextTurn(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID, CancelledActivities: cancelled})

	cancellationWantNoWork(ctx, t, p, "after cancelling all 5 activities in one ack")
}

// cancellationSameActivityInWorkerItemsAndCancelledIsNoop checks that an activity scheduled and cancelled in the same ack is not left on the queue.
func cancellationSameActivityInWorkerItemsAndCancelledIsNoop(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-schedule-then-cancel"
	dropped := cancellationActivity(inst, 2, "DroppedActivity")
	normal := cancellationActivity(inst, 3, "NormalActivity")
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(),
		[]provider.ActivityExecuteItem{dropped, normal},
		[]provider.ScheduledActivityIdentifier{cancellationIdentity(inst, 2)})

	locked := cancellationFetchActivity(ctx, t, p, normal)
	must(t, p.AckWorkItem(ctx, locked.LockToken, nil), "AckWorkItem(nil)")
	cancellationWantNoWork(ctx, t, p, "the activity scheduled and cancelled in one ack")
}

// cancellationOrphanActivityAfterInstanceForceDeletion checks that force-deleting an instance leaves the worker queue usable: a surviving activity can be fetched and acked.
func cancellationOrphanActivityAfterInstanceForceDeletion(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "inst-orphan-activity"
	activity := cancellationActivity(inst, 1, "TestActivity")
	activity.Input = "test-input"
	cancellationStartTurn(ctx, t, p, inst, nil, cancellationRunningMetadata(), []provider.ActivityExecuteItem{activity}, nil)

	res, err := provider.DeleteInstance(ctx, admin, inst, true)
	must(t, err, "DeleteInstance(force)")
	if res.InstancesDeleted == 0 {
		t.Fatalf("DeleteInstance(force): got %+v, want at least one instance deleted", res)
	}
	_, err = admin.InstanceInfo(ctx, inst)
	wantErr(t, err, provider.ErrNotFound, "InstanceInfo after force delete")

	// Deleting the instance may or may not have removed its activity; if it
	// is still there, it must run to completion without errors.
	locked := fetchWork(ctx, t, p, 5*time.Second, nil, provider.DefaultOnlyTags())
	if locked == nil {
		return
	}
	wantEqual(t, locked.Item, activity, "surviving work item")
	err = p.AckWorkItem(ctx, locked.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 1, Result: "orphan-result"})
	must(t, err, "AckWorkItem of the orphaned activity")
}
