package providertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// poisonMessageTests returns the PoisonMessage category (duroxide module
// poison_message).
func poisonMessageTests() []testCase {
	return []testCase{
		{"OrchestrationAttemptCountStartsAtOne", poisonMessageOrchestrationAttemptCountStartsAtOne},
		{"OrchestrationAttemptCountIncrementsOnRefetch", poisonMessageOrchestrationAttemptCountIncrementsOnRefetch},
		{"WorkerAttemptCountStartsAtOne", poisonMessageWorkerAttemptCountStartsAtOne},
		{"WorkerAttemptCountIncrementsOnLockExpiry", poisonMessageWorkerAttemptCountIncrementsOnLockExpiry},
		{"AttemptCountIsPerMessage", poisonMessageAttemptCountIsPerMessage},
		{"AbandonWorkItemIgnoreAttemptDecrements", poisonMessageAbandonWorkItemIgnoreAttemptDecrements},
		{"AbandonOrchestrationItemIgnoreAttemptDecrements", poisonMessageAbandonOrchestrationItemIgnoreAttemptDecrements},
		{"IgnoreAttemptNeverGoesNegative", poisonMessageIgnoreAttemptNeverGoesNegative},
		{"MaxAttemptCountAcrossMessageBatch", poisonMessageMaxAttemptCountAcrossMessageBatch},
	}
}

// poisonMessageFetchOrch fetches an orchestration item that must exist and
// checks its attempt count.
func poisonMessageFetchOrch(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, wantAttempt uint32, what string) *provider.OrchestrationItem {
	t.Helper()
	item := mustFetchOrch(ctx, t, p, lockTimeout)
	wantEqual(t, item.AttemptCount, wantAttempt, what+": attempt count")
	return item
}

// poisonMessageFetchWork fetches a work item that must exist and checks its
// attempt count.
func poisonMessageFetchWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, wantAttempt uint32, what string) *provider.LockedWorkItem {
	t.Helper()
	w := mustFetchWork(ctx, t, p, lockTimeout)
	wantEqual(t, w.AttemptCount, wantAttempt, what+": attempt count")
	return w
}

// poisonMessageAckWork acks a fetched activity with a completion.
func poisonMessageAckWork(ctx context.Context, t *testing.T, p provider.Provider, w *provider.LockedWorkItem) {
	t.Helper()
	must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{
		Instance: w.Item.Instance, ExecutionID: w.Item.ExecutionID, ID: w.Item.ID, Result: "done",
	}), "AckWorkItem")
}

// poisonMessageAckOrch acks a fetched orchestration item with an empty turn.
func poisonMessageAckOrch(ctx context.Context, t *testing.T, p provider.Provider, item *provider.OrchestrationItem) {
	t.Helper()
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
}

// poisonMessageOrchestrationAttemptCountStartsAtOne checks that the first
// fetch of an orchestration item reports attempt count 1.
func poisonMessageOrchestrationAttemptCountStartsAtOne(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueOrch(ctx, t, p, startItem("poison-test-1"), 0)
	item := poisonMessageFetchOrch(ctx, t, p, longLease, 1, "first fetch")
	poisonMessageAckOrch(ctx, t, p, item)
}

// poisonMessageOrchestrationAttemptCountIncrementsOnRefetch checks that each
// abandon and refetch of an orchestration item adds one to its attempt count.
func poisonMessageOrchestrationAttemptCountIncrementsOnRefetch(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := longLease // expiry is not the subject

	enqueueOrch(ctx, t, p, startItem("poison-test-2"), 0)
	var item *provider.OrchestrationItem
	for attempt := uint32(1); attempt <= 3; attempt++ {
		if item != nil {
			must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "AbandonOrchestrationItem")
		}
		item = poisonMessageFetchOrch(ctx, t, p, lockTimeout, attempt, fmt.Sprintf("fetch %d", attempt))
	}
	poisonMessageAckOrch(ctx, t, p, item)
}

// poisonMessageWorkerAttemptCountStartsAtOne checks that the first fetch of a
// work item reports attempt count 1.
func poisonMessageWorkerAttemptCountStartsAtOne(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueWorker(ctx, t, p, activityItem("poison-test-3", provider.InitialExecutionID, 1))
	w := poisonMessageFetchWork(ctx, t, p, longLease, 1, "first fetch")
	wantEqual(t, w.Item.Instance, "poison-test-3", "fetched activity instance")
	poisonMessageAckWork(ctx, t, p, w)
}

// poisonMessageWorkerAttemptCountIncrementsOnLockExpiry checks that a work
// item redelivered after its lock expired reports attempt count 2.
func poisonMessageWorkerAttemptCountIncrementsOnLockExpiry(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := s.lockTimeout()

	enqueueWorker(ctx, t, p, activityItem("poison-test-4", provider.InitialExecutionID, 1))
	_ = poisonMessageFetchWork(ctx, t, p, lockTimeout, 1, "first fetch")

	sleepPast(ctx, t, lockTimeout)

	w := poisonMessageFetchWork(ctx, t, p, longLease, 2, "fetch after the lock expired")
	poisonMessageAckWork(ctx, t, p, w)
}

// poisonMessageAttemptCountIsPerMessage checks that two different work items
// each start at attempt count 1: counts belong to messages, not to the queue.
func poisonMessageAttemptCountIsPerMessage(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := longLease // expiry is not the subject

	a := activityItem("poison-test-5a", provider.InitialExecutionID, 1)
	a.Name = "Activity1"
	b := activityItem("poison-test-5b", provider.InitialExecutionID, 2)
	b.Name = "Activity2"
	enqueueWorker(ctx, t, p, a)
	enqueueWorker(ctx, t, p, b)

	w1 := poisonMessageFetchWork(ctx, t, p, lockTimeout, 1, "fetch of the first item")
	w2 := poisonMessageFetchWork(ctx, t, p, lockTimeout, 1, "fetch of the second item")
	if w1.Item.ID == w2.Item.ID {
		t.Fatalf("both fetches returned activity %d, want two different items", w1.Item.ID)
	}

	poisonMessageAckWork(ctx, t, p, w1)
	poisonMessageAckWork(ctx, t, p, w2)
}

// poisonMessageAbandonWorkItemIgnoreAttemptDecrements checks that abandoning
// a work item with ignoreAttempt undoes the fetch's increment.
func poisonMessageAbandonWorkItemIgnoreAttemptDecrements(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := longLease // expiry is not the subject

	enqueueWorker(ctx, t, p, activityItem("poison-test-ignore-1", provider.InitialExecutionID, 1))
	w1 := poisonMessageFetchWork(ctx, t, p, lockTimeout, 1, "first fetch")
	must(t, p.AbandonWorkItem(ctx, w1.LockToken, 0, false), "AbandonWorkItem(ignoreAttempt=false)")

	w2 := poisonMessageFetchWork(ctx, t, p, lockTimeout, 2, "second fetch")
	must(t, p.AbandonWorkItem(ctx, w2.LockToken, 0, true), "AbandonWorkItem(ignoreAttempt=true)")

	// 2, minus the ignored attempt, plus this fetch.
	w3 := poisonMessageFetchWork(ctx, t, p, lockTimeout, 2, "third fetch")
	poisonMessageAckWork(ctx, t, p, w3)
}

// poisonMessageAbandonOrchestrationItemIgnoreAttemptDecrements checks that
// abandoning an orchestration item with ignoreAttempt undoes the fetch's
// increment.
func poisonMessageAbandonOrchestrationItemIgnoreAttemptDecrements(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := longLease // expiry is not the subject

	enqueueOrch(ctx, t, p, startItem("poison-test-ignore-2"), 0)
	item1 := poisonMessageFetchOrch(ctx, t, p, lockTimeout, 1, "first fetch")
	must(t, p.AbandonOrchestrationItem(ctx, item1.LockToken, 0, false), "AbandonOrchestrationItem(ignoreAttempt=false)")

	item2 := poisonMessageFetchOrch(ctx, t, p, lockTimeout, 2, "second fetch")
	must(t, p.AbandonOrchestrationItem(ctx, item2.LockToken, 0, true), "AbandonOrchestrationItem(ignoreAttempt=true)")

	// 2, minus the ignored attempt, plus this fetch.
	item3 := poisonMessageFetchOrch(ctx, t, p, lockTimeout, 2, "third fetch")
	poisonMessageAckOrch(ctx, t, p, item3)
}

// poisonMessageIgnoreAttemptNeverGoesNegative checks that repeated
// ignoreAttempt abandons floor the stored count at 0, so each fetch reports 1.
func poisonMessageIgnoreAttemptNeverGoesNegative(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lockTimeout := longLease // expiry is not the subject

	enqueueWorker(ctx, t, p, activityItem("poison-test-never-neg", provider.InitialExecutionID, 1))
	var w *provider.LockedWorkItem
	for fetch := 1; fetch <= 3; fetch++ {
		if w != nil {
			must(t, p.AbandonWorkItem(ctx, w.LockToken, 0, true), "AbandonWorkItem(ignoreAttempt=true)")
		}
		w = poisonMessageFetchWork(ctx, t, p, lockTimeout, 1, fmt.Sprintf("fetch %d", fetch))
	}
	poisonMessageAckWork(ctx, t, p, w)
}

// poisonMessageMaxAttemptCountAcrossMessageBatch checks that a batch holding
// a message fetched three times and one fetched once reports attempt count 3.
func poisonMessageMaxAttemptCountAcrossMessageBatch(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "poison-batch-test"
	lockTimeout := longLease // expiry is not the subject

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item1 := poisonMessageFetchOrch(ctx, t, p, lockTimeout, 1, "first fetch")
	if len(item1.Messages) != 1 {
		t.Fatalf("first fetch: got %d messages, want 1", len(item1.Messages))
	}
	must(t, p.AbandonOrchestrationItem(ctx, item1.LockToken, 0, false), "AbandonOrchestrationItem")

	item2 := poisonMessageFetchOrch(ctx, t, p, lockTimeout, 2, "second fetch")

	// A completion arrives while the instance is locked; it is not part of
	// this batch and has not been delivered yet.
	enqueueOrch(ctx, t, p, provider.ActivityCompletedItem{
		Instance: inst, ExecutionID: provider.InitialExecutionID, ID: 1, Result: "activity result",
	}, 0)
	must(t, p.AbandonOrchestrationItem(ctx, item2.LockToken, 0, false), "AbandonOrchestrationItem")

	item3 := mustFetchOrch(ctx, t, p, lockTimeout)
	if len(item3.Messages) != 2 {
		t.Fatalf("third fetch: got %d messages, want 2 (start and completion)", len(item3.Messages))
	}
	wantEqual(t, item3.AttemptCount, uint32(3), "third fetch: attempt count (max of 3 and 1)")
	poisonMessageAckOrch(ctx, t, p, item3)
}
