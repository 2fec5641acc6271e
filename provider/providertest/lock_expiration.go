package providertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// lockExpirationTests returns the LockExpiration category.
func lockExpirationTests() []testCase {
	return []testCase{
		{"LockExpiresAfterTimeout", lockExpirationLockExpiresAfterTimeout},
		{"AbandonReleasesLockImmediately", lockExpirationAbandonReleasesLockImmediately},
		{"LockRenewalOnAck", lockExpirationLockRenewalOnAck},
		{"ConcurrentLockAttemptsRespectExpiration", lockExpirationConcurrentLockAttemptsRespectExpiration},
		{"WorkerLockRenewalSuccess", lockExpirationWorkerLockRenewalSuccess},
		{"WorkerLockRenewalInvalidToken", lockExpirationWorkerLockRenewalInvalidToken},
		{"WorkerLockRenewalAfterExpiration", lockExpirationWorkerLockRenewalAfterExpiration},
		{"WorkerLockRenewalExtendsTimeout", lockExpirationWorkerLockRenewalExtendsTimeout},
		{"WorkerLockRenewalAfterAck", lockExpirationWorkerLockRenewalAfterAck},
		{"AbandonWorkItemReleasesLock", lockExpirationAbandonWorkItemReleasesLock},
		{"AbandonWorkItemWithDelay", lockExpirationAbandonWorkItemWithDelay},
		{"WorkerAckFailsAfterLockExpiry", lockExpirationWorkerAckFailsAfterLockExpiry},
		{"OrchestrationLockRenewalAfterExpiration", lockExpirationOrchestrationLockRenewalAfterExpiration},
	}
}

// lockExpirationActivity is the worker item the worker-lock tests enqueue.
func lockExpirationActivity(instance string) provider.ActivityExecuteItem {
	item := activityItem(instance, provider.InitialExecutionID, 1)
	item.Input = "test"
	return item
}

// lockExpirationCompleted is the completion of lockExpirationActivity.
func lockExpirationCompleted(instance string) provider.ActivityCompletedItem {
	return provider.ActivityCompletedItem{Instance: instance, ExecutionID: provider.InitialExecutionID, ID: 1, Result: "done"}
}

// lockExpirationWantNoWork fails t if an untagged, session-less work item
// can be fetched.
func lockExpirationWantNoWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, why string) {
	t.Helper()
	if item := fetchWork(ctx, t, p, lockTimeout, nil, provider.DefaultOnlyTags()); item != nil {
		t.Fatalf("%s: want no work item, got activity %d of %q", why, item.Item.ID, item.Item.Instance)
	}
}

// lockExpirationLockExpiresAfterTimeout checks that an instance whose lock
// is not acked becomes fetchable with a new token after the lock timeout,
// and that the old token can no longer ack.
func lockExpirationLockExpiresAfterTimeout(t *testing.T, s *suite) {
	ctx := s.context(t)

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
		first, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		if _, missed := noOrchBefore(ctx, t, p, fetched.earliest(lock), "fetch while instance-A is locked"); missed != "" {
			return missed
		}

		sleepPast(ctx, t, lock)

		second, refetched := mustFetchOrchTimed(ctx, t, p, lock)
		if second.Instance != "instance-A" {
			t.Fatalf("fetch after lock expiry: got instance %q, want instance-A", second.Instance)
		}
		if second.LockToken == first.LockToken {
			t.Fatalf("fetch after lock expiry reused lock token %q", first.LockToken)
		}

		err := p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
		wantPermanent(t, err, provider.ErrInvalidLockToken, "AckOrchestrationItem with the expired token")
		_, missed := noOrchBefore(ctx, t, p, refetched.earliest(lock), "after the rejected ack, the new lock is still held")
		return missed
	})
}

// lockExpirationAbandonReleasesLockImmediately checks that abandoning an
// orchestration item makes the instance fetchable at once. The lock is long,
// so only the abandon can have released it.
func lockExpirationAbandonReleasesLockImmediately(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, longLease)
	if item := fetchOrch(ctx, t, p, longLease); item != nil {
		t.Fatalf("fetch while instance-A is locked: got instance %q, want none", item.Instance)
	}

	must(t, p.AbandonOrchestrationItem(ctx, first.LockToken, 0, false), "AbandonOrchestrationItem")

	second := mustFetchOrch(ctx, t, p, longLease)
	if second.Instance != "instance-A" {
		t.Fatalf("fetch after abandon: got instance %q, want instance-A", second.Instance)
	}
	if second.LockToken == first.LockToken {
		t.Fatalf("fetch after abandon reused lock token %q", first.LockToken)
	}
}

// lockExpirationLockRenewalOnAck checks that a successful ack releases the
// lock at once, so a message that arrived during the lock is fetchable
// straight after the ack. The lock is long, so only the ack can have
// released it.
func lockExpirationLockRenewalOnAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, longLease)
	if item := fetchOrch(ctx, t, p, longLease); item != nil {
		t.Fatalf("fetch while instance-A is locked: got instance %q, want none", item.Instance)
	}

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	if item := fetchOrch(ctx, t, p, longLease); item != nil {
		t.Fatalf("fetch after a new message for locked instance-A: got instance %q, want none", item.Instance)
	}

	ack(ctx, t, p, first.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent("instance-A", provider.InitialExecutionID)},
	})

	second := mustFetchOrch(ctx, t, p, longLease)
	if second.Instance != "instance-A" {
		t.Fatalf("fetch after ack: got instance %q, want instance-A", second.Instance)
	}
	if len(second.Messages) != 1 {
		t.Fatalf("fetch after ack: got %d messages, want 1 (the one enqueued during the lock)", len(second.Messages))
	}
}

// lockExpirationConcurrentLockAttemptsRespectExpiration checks that
// fetchers spread over the first part of a lock's lifetime all come back
// empty, and that once it has expired exactly one of several simultaneous
// fetchers takes the instance.
func lockExpirationConcurrentLockAttemptsRespectExpiration(t *testing.T, s *suite) {
	ctx := s.context(t)
	const fetchers = 5

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
		first, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		held := fetched.earliest(lock)

		// Fetcher i tries at i tenths of the lock timeout, so every attempt
		// falls well inside the lock's lifetime.
		results := make([]instanceLockingFetch, fetchers)
		spans := make([]span, fetchers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range fetchers {
			wg.Go(func() {
				<-start
				if err := instanceLockingWait(ctx, time.Until(fetched.start.Add(time.Duration(i)*lock/10))); err != nil {
					results[i].err = err
					return
				}
				spans[i] = timed(func() { results[i].item, results[i].err = p.FetchOrchestrationItem(ctx, lock, 0, nil) })
			})
		}
		close(start)
		wg.Wait()
		missed := ""
		for i, r := range results {
			must(t, r.err, "fetcher during the lock: FetchOrchestrationItem")
			switch {
			case !spans[i].endsBefore(held):
				missed = spans[i].missed(fmt.Sprintf("fetcher %d", i), held)
			case r.item != nil:
				t.Fatalf("fetcher %d got instance %q while the first lock was live, want none", i, r.item.Instance)
			}
		}
		if missed != "" {
			return missed
		}

		sleepUntil(ctx, t, fetched.latest(lock).Add(pastMargin))

		won := instanceLockingWinners(t, instanceLockingContest(ctx, p, fetchers, lock))
		if len(won) != 1 {
			t.Fatalf("after lock expiry %d of %d concurrent fetchers locked instance-A, want exactly 1", len(won), fetchers)
		}
		if won[0].Instance != "instance-A" {
			t.Fatalf("after lock expiry: got instance %q, want instance-A", won[0].Instance)
		}
		if won[0].LockToken == first.LockToken {
			t.Fatalf("fetch after lock expiry reused lock token %q", first.LockToken)
		}
		return ""
	})
}

// lockExpirationWorkerLockRenewalSuccess checks that a live worker lock can
// be renewed, stays held, and still acks afterwards.
func lockExpirationWorkerLockRenewalSuccess(t *testing.T, s *suite) {
	ctx := s.context(t)

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueWorker(ctx, t, p, lockExpirationActivity("test-instance"))
		item, fetched := fetchWorkTimed(ctx, t, p, lock, nil, provider.DefaultOnlyTags())
		if item == nil {
			t.Fatal("FetchWorkItem: want the activity, got none")
		}
		if _, missed := noWorkBefore(ctx, t, p, fetched.earliest(lock), "fetch while the activity is locked"); missed != "" {
			return missed
		}

		renewed, missed := heldCall(t, fetched.earliest(lock), "RenewWorkItemLock", func() error {
			return p.RenewWorkItemLock(ctx, item.LockToken, lock)
		})
		if missed != "" {
			return missed
		}
		if _, missed := noWorkBefore(ctx, t, p, renewed.earliest(lock), "fetch after renewal"); missed != "" {
			return missed
		}

		_, missed = heldCall(t, renewed.earliest(lock), "AckWorkItem after renewal", func() error {
			return p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted("test-instance"))
		})
		return missed
	})
}

// lockExpirationWorkerLockRenewalInvalidToken checks that renewing an
// unknown worker lock token fails.
func lockExpirationWorkerLockRenewalInvalidToken(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	err := p.RenewWorkItemLock(ctx, "invalid-token-123", 30*time.Second)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock with an unknown token")
}

// lockExpirationWorkerLockRenewalAfterExpiration checks that an expired
// worker lock cannot be renewed.
func lockExpirationWorkerLockRenewalAfterExpiration(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueWorker(ctx, t, p, lockExpirationActivity("test-instance"))
	item := mustFetchWork(ctx, t, p, lock)

	sleepPast(ctx, t, lock)

	err := p.RenewWorkItemLock(ctx, item.LockToken, lock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock after the lock expired")
}

// lockExpirationWorkerLockRenewalExtendsTimeout checks that a renewal made
// part-way through a worker lock keeps the item locked past the original
// expiry.
func lockExpirationWorkerLockRenewalExtendsTimeout(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "test-lock-renewal-extends"

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		// Schedule the activity through a running orchestration's turn.
		enqueueOrch(ctx, t, p, startItem(instance), 0)
		orch := mustFetchOrch(ctx, t, p, longLease)
		meta := startMetadata()
		meta.Status = provider.StatusRunning
		ack(ctx, t, p, orch.LockToken, provider.TurnCommit{
			ExecutionID:  provider.InitialExecutionID,
			HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
			WorkerItems:  []provider.ActivityExecuteItem{lockExpirationActivity(instance)},
			Metadata:     meta,
		})

		item, fetched := fetchWorkTimed(ctx, t, p, lock, nil, provider.DefaultOnlyTags())
		if item == nil {
			t.Fatal("FetchWorkItem: want the activity, got none")
		}

		// Renew at 60% of the lock's lifetime for a full lock timeout: the
		// lock now runs to about 160%.
		sleepUntil(ctx, t, fetched.start.Add(lock*6/10))
		renewed, missed := heldCall(t, fetched.earliest(lock), "RenewWorkItemLock at 60% of the lock", func() error {
			return p.RenewWorkItemLock(ctx, item.LockToken, lock)
		})
		if missed != "" {
			return missed
		}

		// Check at 120%: past the original expiry, before the renewed one.
		sleepUntil(ctx, t, fetched.latest(lock).Add(lock/5))
		_, missed = noWorkBefore(ctx, t, p, renewed.earliest(lock), "fetch past the original expiry of a renewed lock")
		return missed
	})
}

// lockExpirationWorkerLockRenewalAfterAck checks that a worker lock cannot
// be renewed once the item has been acked.
func lockExpirationWorkerLockRenewalAfterAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueWorker(ctx, t, p, lockExpirationActivity("test-instance"))
	item := mustFetchWork(ctx, t, p, longLease)
	must(t, p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted("test-instance")), "AckWorkItem")

	err := p.RenewWorkItemLock(ctx, item.LockToken, lock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock after ack")
}

// lockExpirationAbandonWorkItemReleasesLock checks that an abandoned work
// item can be fetched again at once, under a new token. The lock is long, so
// only the abandon can have released it.
func lockExpirationAbandonWorkItemReleasesLock(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lock := longLease
	const instance = "test-abandon-work"
	want := lockExpirationActivity(instance)

	enqueueWorker(ctx, t, p, want)
	first := mustFetchWork(ctx, t, p, lock)
	wantEqual(t, first.Item, want, "fetched activity")
	lockExpirationWantNoWork(ctx, t, p, lock, "fetch while the activity is locked")

	must(t, p.AbandonWorkItem(ctx, first.LockToken, 0, false), "AbandonWorkItem")

	second := mustFetchWork(ctx, t, p, lock)
	wantEqual(t, second.Item, want, "activity fetched after abandon")
	if second.LockToken == first.LockToken {
		t.Fatalf("fetch after abandon reused lock token %q", first.LockToken)
	}
	must(t, p.AckWorkItem(ctx, second.LockToken, lockExpirationCompleted(instance)), "AckWorkItem")
}

// lockExpirationAbandonWorkItemWithDelay checks that a work item abandoned
// with a delay stays invisible until the delay has passed: right after the
// abandon and late in the delay.
func lockExpirationAbandonWorkItemWithDelay(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "test-abandon-delay"
	want := lockExpirationActivity(instance)

	s.tries(t, func(p provider.Provider) string {
		delay := s.window(ctx, t, p, 500*time.Millisecond)
		enqueueWorker(ctx, t, p, want)
		first := mustFetchWork(ctx, t, p, longLease)

		abandoned := timed(func() {
			must(t, p.AbandonWorkItem(ctx, first.LockToken, delay, false), "AbandonWorkItem with delay")
		})
		hidden := abandoned.earliest(delay)
		took, missed := noWorkBefore(ctx, t, p, hidden, "fetch right after abandoning with a delay")
		if missed != "" {
			return missed
		}
		sleepUntil(ctx, t, abandoned.late(delay, took))
		if _, missed := noWorkBefore(ctx, t, p, hidden, "fetch late in the abandon delay"); missed != "" {
			return missed
		}

		sleepUntil(ctx, t, abandoned.latest(delay).Add(pastMargin))

		second := mustFetchWork(ctx, t, p, longLease)
		wantEqual(t, second.Item, want, "activity fetched after the delay")
		must(t, p.AckWorkItem(ctx, second.LockToken, lockExpirationCompleted(instance)), "AckWorkItem")
		return ""
	})
}

// lockExpirationWorkerAckFailsAfterLockExpiry checks that a worker ack with
// an expired lock fails even though nobody else took the item, and that the
// item stays queued.
func lockExpirationWorkerAckFailsAfterLockExpiry(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lock := s.lockTimeout()
	const instance = "ack-expiry-test"

	enqueueWorker(ctx, t, p, lockExpirationActivity(instance))
	item := mustFetchWork(ctx, t, p, lock)

	sleepPast(ctx, t, lock+pastMargin)

	err := p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted(instance))
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckWorkItem after the lock expired")

	again := awaitWork(ctx, t, p, 5*time.Second, nil, provider.DefaultOnlyTags())
	if again == nil {
		t.Fatal("the activity whose expired ack was rejected is no longer fetchable" + convergenceNote(ctx))
	}
	wantEqual(t, again.Item, lockExpirationActivity(instance), "activity fetched after the rejected ack")
}

// lockExpirationOrchestrationLockRenewalAfterExpiration checks that an
// expired orchestration lock cannot be renewed.
func lockExpirationOrchestrationLockRenewalAfterExpiration(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem("orch-renewal-expiry"), 0)
	item := mustFetchOrch(ctx, t, p, lock)

	sleepPast(ctx, t, lock)

	err := p.RenewOrchestrationItemLock(ctx, item.LockToken, lock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewOrchestrationItemLock after the lock expired")
}

// lockExpirationAdditions returns duradyn's additions to LockExpiration.
func lockExpirationAdditions() []testCase {
	return []testCase{
		{"OrchestrationLockRenewalExtendsLock", lockExpirationOrchestrationLockRenewalExtendsLock},
		{"OrchestrationLockHeldLateInLease", lockExpirationOrchestrationLockHeldLateInLease},
		{"AbandonOrchestrationItemWithDelay", lockExpirationAbandonOrchestrationItemWithDelay},
	}
}

// lockExpirationOrchestrationLockRenewalExtendsLock checks that renewing a
// live orchestration lock at 60% of its lifetime succeeds and keeps the
// instance locked past the original expiry (a competing fetch gets
// nothing), and that the turn then commits on the renewed lock.
func lockExpirationOrchestrationLockRenewalExtendsLock(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "orch-renewal-extends"

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem(instance), 0)
		item, fetched := mustFetchOrchTimed(ctx, t, p, lock)

		sleepUntil(ctx, t, fetched.start.Add(lock*6/10))
		renewed, missed := heldCall(t, fetched.earliest(lock), "RenewOrchestrationItemLock at 60% of the lock", func() error {
			return p.RenewOrchestrationItemLock(ctx, item.LockToken, lock)
		})
		if missed != "" {
			return missed
		}

		// Check at 120%: past the original expiry, before the renewed one.
		sleepUntil(ctx, t, fetched.latest(lock).Add(lock/5))
		if _, missed := noOrchBefore(ctx, t, p, renewed.earliest(lock), "competing fetch past the original expiry of a renewed lock"); missed != "" {
			return missed
		}

		_, missed = heldCall(t, renewed.earliest(lock), "AckOrchestrationItem on the renewed lock", func() error {
			return p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
				ExecutionID:  provider.InitialExecutionID,
				HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
				Metadata:     startMetadata(),
			})
		})
		if missed != "" {
			return missed
		}
		wantEqual(t, eventIDs(readHistory(ctx, t, p, instance)), []uint64{1}, "history after the ack on the renewed lock")
		return ""
	})
}

// lockExpirationOrchestrationLockHeldLateInLease checks that an
// orchestration lock still excludes other fetchers late in its lifetime,
// not only just after it was won, and that its holder can still commit
// then.
func lockExpirationOrchestrationLockHeldLateInLease(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "orch-lock-late"

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem(instance), 0)
		item, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		held := fetched.earliest(lock)

		sleepUntil(ctx, t, fetched.late(lock, fetched.took()))
		if _, missed := noOrchBefore(ctx, t, p, held, "fetch late in the lock"); missed != "" {
			return missed
		}
		_, missed := heldCall(t, held, "AckOrchestrationItem late in the lock", func() error {
			return p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
				ExecutionID:  provider.InitialExecutionID,
				HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
				Metadata:     startMetadata(),
			})
		})
		return missed
	})
}

// lockExpirationAbandonOrchestrationItemWithDelay checks that abandoning an
// orchestration item with a delay hides the instance's messages for that
// delay (right after the abandon and late in it), then
// redelivers the same batch with its attempt counted; a message that was
// already delayed further keeps its own visibility.
func lockExpirationAbandonOrchestrationItemWithDelay(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "orch-abandon-delay"

	s.tries(t, func(p provider.Provider) string {
		// The further delayed message stays five delays away.
		delay := s.window(ctx, t, p, time.Second)
		later := 5 * delay
		enqueueOrch(ctx, t, p, startItem(instance), 0)
		laterEnq := timed(func() {
			enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: "later", Data: "{}"}, later)
		})
		first := mustFetchOrch(ctx, t, p, longLease)
		wantEqual(t, first.Instance, instance, "first fetch: instance")

		abandoned := timed(func() {
			must(t, p.AbandonOrchestrationItem(ctx, first.LockToken, delay, false), "AbandonOrchestrationItem with delay")
		})
		hidden := abandoned.earliest(delay)
		took, missed := noOrchBefore(ctx, t, p, hidden, "fetch right after abandoning with a delay")
		if missed != "" {
			return missed
		}
		sleepUntil(ctx, t, abandoned.late(delay, took))
		if _, missed := noOrchBefore(ctx, t, p, hidden, "fetch late in the abandon delay"); missed != "" {
			return missed
		}

		sleepUntil(ctx, t, abandoned.latest(delay).Add(pastMargin))
		second, fetched := mustFetchOrchTimed(ctx, t, p, longLease)
		if stillLater := laterEnq.earliest(later); !fetched.endsBefore(stillLater) {
			return fetched.missed("fetch after the abandon delay", stillLater)
		}
		wantEqual(t, second.Instance, instance, "fetch after the abandon delay: instance")
		wantEqual(t, second.Messages, first.Messages, "fetch after the abandon delay: messages (the further delayed one must not be moved forward)")
		wantEqual(t, second.AttemptCount, uint32(2), "fetch after the abandon delay: attempt count")
		if second.LockToken == first.LockToken {
			t.Fatalf("fetch after the abandon delay reused lock token %q", first.LockToken)
		}
		return ""
	})
}
