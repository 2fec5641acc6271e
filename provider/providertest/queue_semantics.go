package providertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// queueSemanticsTests returns the QueueSemantics category (duroxide module
// queue_semantics).
func queueSemanticsTests() []testCase {
	return []testCase{
		{"WorkerQueueFIFOOrdering", queueSemanticsWorkerQueueFIFOOrdering},
		{"WorkerPeekLockSemantics", queueSemanticsWorkerPeekLockSemantics},
		{"WorkerAckAtomicity", queueSemanticsWorkerAckAtomicity},
		{"TimerDelayedVisibility", queueSemanticsTimerDelayedVisibility},
		{"LostLockTokenHandling", queueSemanticsLostLockTokenHandling},
		{"WorkerItemImmediateVisibility", queueSemanticsWorkerItemImmediateVisibility},
		{"WorkerDelayedVisibilitySkipsFutureItems", queueSemanticsWorkerDelayedVisibilitySkipsFutureItems},
		{"OrphanQueueMessagesDropped", queueSemanticsOrphanQueueMessagesDropped},
	}
}

// queueSemanticsStartWithoutMetadata runs an instance's first turn with only
// its OrchestrationStarted event and no name/version metadata, as duroxide's
// queue tests do: history exists, the instance record may not.
func queueSemanticsStartWithoutMetadata(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item.Instance, instance, "start fetch: instance")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
	})
}

// queueSemanticsActivity is activity id of execution 1 of instance, named
// name with input input.
func queueSemanticsActivity(instance string, id uint64, name, input string) provider.ActivityExecuteItem {
	a := activityItem(instance, provider.InitialExecutionID, id)
	a.Name = name
	a.Input = input
	return a
}

// queueSemanticsDone is the completion of activity id of execution 1.
func queueSemanticsDone(instance string, id uint64, result string) provider.ActivityCompletedItem {
	return provider.ActivityCompletedItem{Instance: instance, ExecutionID: provider.InitialExecutionID, ID: id, Result: result}
}

// queueSemanticsWantNoWork fails t if an untagged, session-less work item
// can be fetched.
func queueSemanticsWantNoWork(ctx context.Context, t *testing.T, p provider.Provider, why string) {
	t.Helper()
	if w := fetchWork(ctx, t, p, 30*time.Second, nil, provider.DefaultOnlyTags()); w != nil {
		t.Fatalf("%s: want no work item, got activity %d of %q", why, w.Item.ID, w.Item.Instance)
	}
}

// queueSemanticsWorkerQueueFIFOOrdering checks that worker items come back in
// exactly the order they were enqueued.
func queueSemanticsWorkerQueueFIFOOrdering(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	for i := range uint64(5) {
		enqueueWorker(ctx, t, p, queueSemanticsActivity("instance-A", i, fmt.Sprintf("Activity%d", i), fmt.Sprintf("input%d", i)))
	}
	for i := range uint64(5) {
		w := mustFetchWork(ctx, t, p, 30*time.Second)
		wantEqual(t, w.Item.ID, i, fmt.Sprintf("fetch %d: activity id", i))
		wantEqual(t, w.Item.Name, fmt.Sprintf("Activity%d", i), fmt.Sprintf("fetch %d: activity name", i))
	}
	queueSemanticsWantNoWork(ctx, t, p, "after fetching all five")
}

// queueSemanticsWorkerPeekLockSemantics checks that a fetched worker item is
// hidden while locked and removed only by its ack.
func queueSemanticsWorkerPeekLockSemantics(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueWorker(ctx, t, p, queueSemanticsActivity("instance-A", 1, "Activity1", "input1"))
	w := mustFetchWork(ctx, t, p, 30*time.Second)
	wantEqual(t, w.Item.ID, uint64(1), "fetched activity id")

	queueSemanticsWantNoWork(ctx, t, p, "while the item is locked")

	must(t, p.AckWorkItem(ctx, w.LockToken, queueSemanticsDone("instance-A", 1, "result1")), "AckWorkItem")
	queueSemanticsWantNoWork(ctx, t, p, "after the ack")
}

// queueSemanticsWorkerAckAtomicity checks that a worker ack both removes the
// activity and delivers its completion to the orchestrator queue.
func queueSemanticsWorkerAckAtomicity(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-A"

	queueSemanticsStartWithoutMetadata(ctx, t, p, inst)

	enqueueWorker(ctx, t, p, queueSemanticsActivity(inst, 1, "Activity1", "input1"))
	w := mustFetchWork(ctx, t, p, 30*time.Second)
	done := queueSemanticsDone(inst, 1, "result1")
	must(t, p.AckWorkItem(ctx, w.LockToken, done), "AckWorkItem")

	queueSemanticsWantNoWork(ctx, t, p, "after the worker ack")

	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item.Instance, inst, "orchestration fetch: instance")
	if len(item.Messages) != 1 {
		t.Fatalf("orchestration fetch: got %d messages, want 1 (the completion)", len(item.Messages))
	}
	got, ok := item.Messages[0].(provider.ActivityCompletedItem)
	if !ok {
		t.Fatalf("orchestration fetch: message is %s, want ActivityCompleted", item.Messages[0].Kind())
	}
	wantEqual(t, got, done, "delivered completion")
}

// queueSemanticsTimerDelayedVisibility checks that a TimerFired enqueued with
// a delay stays invisible until the delay has passed: right after the
// enqueue and late in the delay.
func queueSemanticsTimerDelayedVisibility(t *testing.T, s *suite) {
	ctx := s.context(t)
	const inst = "instance-A"

	s.tries(t, func(p provider.Provider) string {
		delay := s.window(ctx, t, p, 5*time.Second)
		queueSemanticsStartWithoutMetadata(ctx, t, p, inst)

		// FireAtMs is 0: on this path visibility comes from the delay.
		enq := timed(func() {
			enqueueOrch(ctx, t, p, provider.TimerFiredItem{Instance: inst, ExecutionID: provider.InitialExecutionID, ID: 1, FireAtMs: 0}, delay)
		})
		hidden := enq.earliest(delay)
		took, missed := noOrchBefore(ctx, t, p, hidden, "right after enqueueing a timer delayed "+delay.String())
		if missed != "" {
			return missed
		}
		sleepUntil(ctx, t, enq.late(delay, took))
		if _, missed := noOrchBefore(ctx, t, p, hidden, "late in the timer's "+delay.String()+" delay"); missed != "" {
			return missed
		}

		sleepUntil(ctx, t, enq.latest(delay).Add(pastMargin))
		item := mustFetchOrch(ctx, t, p, longLease)
		wantEqual(t, item.Instance, inst, "fetch after the delay: instance")
		if len(item.Messages) != 1 {
			t.Fatalf("fetch after the delay: got %d messages, want 1 (the timer)", len(item.Messages))
		}
		if _, ok := item.Messages[0].(provider.TimerFiredItem); !ok {
			t.Fatalf("fetch after the delay: message is %s, want TimerFired", item.Messages[0].Kind())
		}
		return ""
	})
}

// queueSemanticsLostLockTokenHandling checks that a locked worker item whose
// token is never used again is redelivered once its lock expires.
func queueSemanticsLostLockTokenHandling(t *testing.T, s *suite) {
	ctx := s.context(t)

	s.tries(t, func(p provider.Provider) string {
		lockTimeout := s.window(ctx, t, p, s.lockTimeout())
		enqueueWorker(ctx, t, p, queueSemanticsActivity("instance-A", 1, "Activity1", "input1"))
		// The token is dropped, as by a crashed worker.
		first, fetched := fetchWorkTimed(ctx, t, p, lockTimeout, nil, provider.DefaultOnlyTags())
		if first == nil {
			t.Fatal("first fetch: want the activity, got none")
		}
		if _, missed := noWorkBefore(ctx, t, p, fetched.earliest(lockTimeout), "fetch while locked"); missed != "" {
			return missed
		}

		sleepPast(ctx, t, lockTimeout)

		w := mustFetchWork(ctx, t, p, longLease)
		wantEqual(t, w.Item.ID, uint64(1), "redelivered activity id")
		return ""
	})
}

// queueSemanticsWorkerItemImmediateVisibility checks that a newly enqueued
// worker item can be fetched at once.
func queueSemanticsWorkerItemImmediateVisibility(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "test-immediate-vis"

	enqueueWorker(ctx, t, p, queueSemanticsActivity(inst, 1, "TestActivity", "test"))

	w := fetchWork(ctx, t, p, longLease, nil, provider.DefaultOnlyTags())
	if w == nil {
		t.Fatal("fetch right after enqueue: want the new item, got none")
	}
	wantEqual(t, w.Item.Name, "TestActivity", "fetched activity name")

	must(t, p.AckWorkItem(ctx, w.LockToken, queueSemanticsDone(inst, 1, "done")), "AckWorkItem")
}

// queueSemanticsWorkerDelayedVisibilitySkipsFutureItems checks that an
// unlocked worker item whose visibility lies in the future is skipped, right
// after it was hidden and late in its delay, and becomes fetchable once that
// time has passed.
func queueSemanticsWorkerDelayedVisibilitySkipsFutureItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	const inst = "test-delayed-vis"

	s.tries(t, func(p provider.Provider) string {
		// The second fetch awaits item 2 inside the delay, past the
		// abandon's write, which discovery may lag (see awaitWorkTimed):
		// the delay holds the convergence bound as well.
		delay := s.window(ctx, t, p, 500*time.Millisecond) + convergenceOf(ctx).bound
		enqueueWorker(ctx, t, p, queueSemanticsActivity(inst, 1, "Activity1", "first"))
		enqueueWorker(ctx, t, p, queueSemanticsActivity(inst, 2, "Activity2", "second"))
		// The first fetch must take the older item (see settle).
		settle(ctx, t)

		w1 := mustFetchWork(ctx, t, p, longLease)
		wantEqual(t, w1.Item.ID, uint64(1), "first fetch: activity id")

		// Unlock the first item but hide it for the delay.
		abandoned := timed(func() {
			must(t, p.AbandonWorkItem(ctx, w1.LockToken, delay, false), "AbandonWorkItem with delay")
		})
		hidden := abandoned.earliest(delay)

		w2, fetched := awaitWorkTimed(ctx, t, p, longLease, nil, provider.DefaultOnlyTags())
		if !fetched.endsBefore(hidden) {
			return fetched.missed("second fetch", hidden)
		}
		if w2 == nil {
			t.Fatal("second fetch: want activity 2, got none")
		}
		wantEqual(t, w2.Item.ID, uint64(2), "second fetch: activity id (the delayed first item must be skipped)")

		took, missed := noWorkBefore(ctx, t, p, hidden, "third fetch (item 1 delayed, item 2 locked)")
		if missed != "" {
			return missed
		}
		sleepUntil(ctx, t, abandoned.late(delay, max(took, fetched.took())))
		if _, missed := noWorkBefore(ctx, t, p, hidden, "fetch late in item 1's delay"); missed != "" {
			return missed
		}

		sleepUntil(ctx, t, abandoned.latest(delay).Add(pastMargin))
		w3 := mustFetchWork(ctx, t, p, longLease)
		wantEqual(t, w3.Item.ID, uint64(1), "fetch after the delay: activity id")

		must(t, p.AckWorkItem(ctx, w2.LockToken, queueSemanticsDone(inst, 2, "done")), "AckWorkItem(2)")
		must(t, p.AckWorkItem(ctx, w3.LockToken, queueSemanticsDone(inst, 1, "done")), "AckWorkItem(1)")
		return ""
	})
}

// queueSemanticsOrphanQueueMessagesDropped checks that QueueMessages for an
// instance that was never started are deleted by fetch, and that a
// QueueMessage for an existing instance is delivered.
func queueSemanticsOrphanQueueMessagesDropped(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const (
		orphan   = "orphan-test"
		existing = "orphan-test-existing"
	)

	for _, data := range []string{"v1", "v2"} {
		enqueueOrch(ctx, t, p, provider.QueueMessageItem{Instance: orphan, Name: "ConfigUpdate", Data: data}, 0)
	}
	for i := 1; i <= 2; i++ {
		if item := fetchOrch(ctx, t, p, 5*time.Second); item != nil {
			t.Fatalf("fetch %d with only orphan queue messages: want none, got instance %q with %d messages", i, item.Instance, len(item.Messages))
		}
	}

	// Had the orphans stayed queued, starting that instance now would
	// deliver them with the start.
	enqueueOrch(ctx, t, p, startItem(orphan), 0)
	started := mustFetchOrch(ctx, t, p, 5*time.Second)
	wantEqual(t, started.Instance, orphan, "fetch of the later start: instance")
	if len(started.Messages) != 1 {
		kinds := make([]string, len(started.Messages))
		for i, m := range started.Messages {
			kinds[i] = m.Kind()
		}
		t.Fatalf("fetch of the later start: got messages %v, want only the start (orphans must have been deleted)", kinds)
	}
	ack(ctx, t, p, started.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(orphan, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})

	createInstance(ctx, t, p, existing)
	enqueueOrch(ctx, t, p, provider.QueueMessageItem{Instance: existing, Name: "ConfigUpdate", Data: "v3"}, 0)

	item := mustFetchOrch(ctx, t, p, 5*time.Second)
	wantEqual(t, item.Instance, existing, "fetch for the existing instance: instance")
	found := false
	for _, m := range item.Messages {
		if qm, ok := m.(provider.QueueMessageItem); ok && qm.Name == "ConfigUpdate" && qm.Data == "v3" {
			found = true
		}
	}
	if !found {
		t.Fatalf("fetch for the existing instance: messages %+v lack the ConfigUpdate/v3 queue message", item.Messages)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: item.ExecutionID})
}

// queueSemanticsAdditions returns duradyn's additions to QueueSemantics.
func queueSemanticsAdditions() []testCase {
	return []testCase{
		{"TimerFromAckInvisibleUntilFireAt", queueSemanticsTimerFromAckInvisibleUntilFireAt},
	}
}

// queueSemanticsTimerFromAckInvisibleUntilFireAt checks that a TimerFired
// an ack enqueues with a future FireAtMs stays invisible until that instant
// (right after the ack and late before it) while an item of the same ack is
// visible at once, and is delivered once the instant has passed.
func queueSemanticsTimerFromAckInvisibleUntilFireAt(t *testing.T, s *suite) {
	ctx := s.context(t)
	const inst = "acked-timer"

	s.tries(t, func(p provider.Provider) string {
		delay := s.window(ctx, t, p, time.Second)
		createInstance(ctx, t, p, inst)
		enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: inst, Name: "poke", Data: "{}"}, 0)
		turn := mustFetchOrch(ctx, t, p, longLease)

		fireAt := time.UnixMilli(time.Now().Add(delay).UnixMilli())
		fireAtMs := uint64(fireAt.UnixMilli())
		timer := provider.TimerFiredItem{Instance: inst, ExecutionID: provider.InitialExecutionID, ID: 2, FireAtMs: fireAtMs}
		alongside := provider.ExternalRaisedItem{Instance: inst, Name: "alongside", Data: "now"}
		ack(ctx, t, p, turn.LockToken, provider.TurnCommit{
			ExecutionID:       provider.InitialExecutionID,
			HistoryDelta:      []provider.Event{event(2, inst, provider.InitialExecutionID, provider.TimerCreated{FireAtMs: fireAtMs})},
			OrchestratorItems: []provider.WorkItem{timer, alongside},
		})

		// The timer fires when the provider's clock reads fireAt; the
		// other item of the ack is visible at once.
		hidden := fireAt.Add(-clockAgreement)
		item, fetched := fetchOrchTimed(ctx, t, p, longLease)
		if !fetched.endsBefore(hidden) {
			return fetched.missed("fetch right after the ack", hidden)
		}
		if item == nil {
			t.Fatal("fetch right after the ack: want the ExternalRaised enqueued with the timer, got none")
		}
		wantEqual(t, item.Instance, inst, "fetch right after the ack: instance")
		wantEqual(t, item.Messages, []provider.WorkItem{alongside}, "fetch right after the ack: messages (the timer fires in "+delay.String()+")")
		ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})

		took, missed := noOrchBefore(ctx, t, p, hidden, "fetch before the timer's FireAtMs")
		if missed != "" {
			return missed
		}
		// The window is the delay that ends at hidden.
		opened := span{start: hidden.Add(-delay), end: hidden.Add(-delay)}
		sleepUntil(ctx, t, opened.late(delay, max(took, fetched.took())))
		if _, missed := noOrchBefore(ctx, t, p, hidden, "fetch late before the timer's FireAtMs"); missed != "" {
			return missed
		}

		sleepUntil(ctx, t, fireAt.Add(clockAgreement+pastMargin))
		fired := mustFetchOrch(ctx, t, p, longLease)
		wantEqual(t, fired.Instance, inst, "fetch after FireAtMs: instance")
		wantEqual(t, fired.Messages, []provider.WorkItem{timer}, "fetch after FireAtMs: messages")
		return ""
	})
}
