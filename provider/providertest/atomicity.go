package providertest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

// atomicityTests returns the Atomicity category.
func atomicityTests() []testCase {
	return []testCase{
		{"AtomicityFailureRollback", atomicityFailureRollback},
		{"MultiOperationAtomicAck", atomicityMultiOperationAtomicAck},
		{"LockReleasedOnlyOnSuccessfulAck", atomicityLockReleasedOnlyOnSuccessfulAck},
		{"ConcurrentAckPrevention", atomicityConcurrentAckPrevention},
	}
}

// atomicityScheduled is an ActivityScheduled event for activity n.
func atomicityScheduled(id uint64, instance string, n int) provider.Event {
	return event(id, instance, provider.InitialExecutionID, provider.ActivityScheduled{
		Name:  fmt.Sprintf("Activity%d", n),
		Input: fmt.Sprintf("input%d", n),
	})
}

// atomicityFailureRollback checks that an ack that fails on a duplicate
// event id applies none of its parts (history, worker and orchestrator
// items, status), keeps the instance locked, and can be retried on the same
// lock.
func atomicityFailureRollback(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const instance = "instance-A"

	enqueueOrch(ctx, t, p, startItem(instance), 0)
	first := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	ack(ctx, t, p, first.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})
	wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1}, "history after the first turn")

	enqueueOrch(ctx, t, p, startItem(instance), 0)
	second := mustFetchOrch(ctx, t, p, instanceLockingLongLock)

	// A new event followed by one that repeats event 1, together with work
	// for both queues and a terminal status: the duplicate must sink all of
	// it.
	failing := provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			atomicityScheduled(2, instance, 1),
			startedEvent(instance, provider.InitialExecutionID),
		},
		WorkerItems:       []provider.ActivityExecuteItem{activityItem(instance, provider.InitialExecutionID, 2)},
		OrchestratorItems: []provider.WorkItem{provider.ExternalRaisedItem{Instance: instance, Name: "leaked", Data: "x"}},
		Metadata:          provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("done")},
	}
	err := p.AckOrchestrationItem(ctx, second.LockToken, failing)
	wantPermanent(t, err, provider.ErrDuplicateEvent, "AckOrchestrationItem with a duplicate event id")

	wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1}, "history after the failed ack")
	if w := fetchWork(ctx, t, p, instanceLockingLongLock, nil, provider.DefaultOnlyTags()); w != nil {
		t.Fatalf("the failed ack enqueued activity %d of %q", w.Item.ID, w.Item.Instance)
	}
	if a, ok := s.optionalAdmin(t, p); ok {
		info, err := a.ExecutionInfo(ctx, instance, provider.InitialExecutionID)
		must(t, err, "ExecutionInfo")
		if info.Status != provider.StatusRunning {
			t.Fatalf("execution status after the failed ack: got %q, want %q", info.Status, provider.StatusRunning)
		}
	}
	wantNoOrch(ctx, t, p, "after the failed ack the instance is still locked")

	// The lock and its batch are intact: the same token commits a valid turn.
	ack(ctx, t, p, second.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{atomicityScheduled(2, instance, 1)},
	})
	wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1, 2}, "history after retrying the ack")
	wantNoOrch(ctx, t, p, "after the retried ack (nothing of the failed ack may have been enqueued)")
}

// atomicityMultiOperationAtomicAck checks that one ack with history, worker
// items and orchestrator items makes all of them visible, each in the order
// given.
func atomicityMultiOperationAtomicAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const instance = "instance-A"
	const fireAt = 1234567890

	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, instanceLockingLongLock)

	var workers []provider.ActivityExecuteItem
	for n := 1; n <= 3; n++ {
		w := activityItem(instance, provider.InitialExecutionID, uint64(n+1))
		w.Name = fmt.Sprintf("Activity%d", n)
		w.Input = fmt.Sprintf("input%d", n)
		workers = append(workers, w)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			startedEvent(instance, provider.InitialExecutionID),
			atomicityScheduled(2, instance, 1),
			atomicityScheduled(3, instance, 2),
			atomicityScheduled(4, instance, 3),
			event(5, instance, provider.InitialExecutionID, provider.TimerCreated{FireAtMs: fireAt}),
		},
		WorkerItems: workers,
		OrchestratorItems: []provider.WorkItem{
			provider.TimerFiredItem{Instance: instance, ExecutionID: provider.InitialExecutionID, ID: 5, FireAtMs: fireAt},
			provider.ExternalRaisedItem{Instance: instance, Name: "TestEvent", Data: "test-data"},
		},
		Metadata: startMetadata(),
	})

	wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1, 2, 3, 4, 5}, "history after the ack")

	for i, want := range workers {
		got := fetchWork(ctx, t, p, instanceLockingLongLock, nil, provider.DefaultOnlyTags())
		if got == nil {
			t.Fatalf("worker queue: item %d of 3 missing", i+1)
		}
		wantEqual(t, got.Item, want, fmt.Sprintf("worker item %d", i+1))
	}
	if extra := fetchWork(ctx, t, p, instanceLockingLongLock, nil, provider.DefaultOnlyTags()); extra != nil {
		t.Fatalf("worker queue: unexpected fourth item, activity %d", extra.Item.ID)
	}

	next := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	if next.Instance != instance {
		t.Fatalf("orchestrator queue: fetched instance %q, want %q", next.Instance, instance)
	}
	if len(next.Messages) != 2 {
		t.Fatalf("orchestrator queue: got %d messages, want 2 (TimerFired, ExternalRaised)", len(next.Messages))
	}
	if _, ok := next.Messages[0].(provider.TimerFiredItem); !ok {
		t.Fatalf("orchestrator message 1 is %s, want TimerFired", next.Messages[0].Kind())
	}
	if _, ok := next.Messages[1].(provider.ExternalRaisedItem); !ok {
		t.Fatalf("orchestrator message 2 is %s, want ExternalRaised", next.Messages[1].Kind())
	}
}

// atomicityLockReleasedOnlyOnSuccessfulAck checks that an ack with a wrong
// token fails, writes nothing and leaves the real lock held until it
// expires.
func atomicityLockReleasedOnlyOnSuccessfulAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "instance-A"

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem(instance), 0)
		_, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		held := fetched.earliest(lock)
		if _, missed := noOrchBefore(ctx, t, p, held, "fetch while "+instance+" is locked"); missed != "" {
			return missed
		}

		err := p.AckOrchestrationItem(ctx, "invalid-lock-token", provider.TurnCommit{
			ExecutionID:  provider.InitialExecutionID,
			HistoryDelta: []provider.Event{event(2, instance, provider.InitialExecutionID, provider.OrchestrationStarted{Name: testOrchestration, Version: testVersion, Input: "{}"})},
		})
		wantPermanent(t, err, provider.ErrInvalidLockToken, "AckOrchestrationItem with a wrong token")

		if _, missed := noOrchBefore(ctx, t, p, held, "fetch after the rejected ack (lock still held)"); missed != "" {
			return missed
		}
		if h := readHistory(ctx, t, p, instance); len(h) != 0 {
			t.Fatalf("the rejected ack wrote history: event ids %v", eventIDs(h))
		}

		sleepUntil(ctx, t, fetched.latest(lock).Add(pastMargin))

		item := mustFetchOrch(ctx, t, p, lock)
		if item.Instance != instance {
			t.Fatalf("fetch after lock expiry: got instance %q, want %q", item.Instance, instance)
		}
		return ""
	})
}

// atomicityConcurrentAckPrevention checks that when two goroutines ack the
// same lock at once exactly one succeeds and the turn is applied once.
func atomicityConcurrentAckPrevention(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const instance = "instance-A"

	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, instanceLockingLongLock)

	var (
		errs  [2]error
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
				ExecutionID:  provider.InitialExecutionID,
				HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
				Metadata:     startMetadata(),
			})
		}()
	}
	close(start)
	wg.Wait()

	switch {
	case errs[0] == nil && errs[1] == nil:
		t.Fatal("both concurrent acks with one lock token succeeded, want exactly one")
	case errs[0] != nil && errs[1] != nil:
		t.Fatalf("both concurrent acks failed, want exactly one to succeed: %v; %v", errs[0], errs[1])
	}
	loser := errs[0]
	if loser == nil {
		loser = errs[1]
	}
	wantErr(t, loser, nil, "the losing concurrent ack")

	wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1}, "history after the concurrent acks")
	err := p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "a third ack with the consumed token")
	wantNoOrch(ctx, t, p, "after the winning ack consumed the batch")
}
