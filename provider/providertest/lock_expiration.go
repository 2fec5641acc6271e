package providertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/provider"
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
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, lock)
	if item := fetchOrch(ctx, t, p, lock); item != nil {
		t.Fatalf("fetch while instance-A is locked: got instance %q, want none", item.Instance)
	}

	sleepPast(ctx, t, lock)

	second := mustFetchOrch(ctx, t, p, lock)
	if second.Instance != "instance-A" {
		t.Fatalf("fetch after lock expiry: got instance %q, want instance-A", second.Instance)
	}
	if second.LockToken == first.LockToken {
		t.Fatalf("fetch after lock expiry reused lock token %q", first.LockToken)
	}

	err := p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckOrchestrationItem with the expired token")
	wantNoOrch(ctx, t, p, "after the rejected ack, the new lock is still held")
}

// lockExpirationAbandonReleasesLockImmediately checks that abandoning an
// orchestration item makes the instance fetchable at once.
func lockExpirationAbandonReleasesLockImmediately(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, lock)
	if item := fetchOrch(ctx, t, p, lock); item != nil {
		t.Fatalf("fetch while instance-A is locked: got instance %q, want none", item.Instance)
	}

	must(t, p.AbandonOrchestrationItem(ctx, first.LockToken, 0, false), "AbandonOrchestrationItem")

	second := mustFetchOrch(ctx, t, p, lock)
	if second.Instance != "instance-A" {
		t.Fatalf("fetch after abandon: got instance %q, want instance-A", second.Instance)
	}
	if second.LockToken == first.LockToken {
		t.Fatalf("fetch after abandon reused lock token %q", first.LockToken)
	}
}

// lockExpirationLockRenewalOnAck checks that a successful ack releases the
// lock at once, so a message that arrived during the lock is fetchable
// straight after the ack.
func lockExpirationLockRenewalOnAck(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, lock)
	if item := fetchOrch(ctx, t, p, lock); item != nil {
		t.Fatalf("fetch while instance-A is locked: got instance %q, want none", item.Instance)
	}

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	if item := fetchOrch(ctx, t, p, lock); item != nil {
		t.Fatalf("fetch after a new message for locked instance-A: got instance %q, want none", item.Instance)
	}

	ack(ctx, t, p, first.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent("instance-A", provider.InitialExecutionID)},
	})

	second := mustFetchOrch(ctx, t, p, lock)
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
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()
	const fetchers = 5

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	first := mustFetchOrch(ctx, t, p, lock)
	lockedBy := time.Now() // the lock was won before this instant

	// Fetcher i tries at i tenths of the lock timeout, so every attempt
	// falls well inside the lock's lifetime.
	results := make([]instanceLockingFetch, fetchers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := instanceLockingWait(ctx, time.Duration(i)*lock/10); err != nil {
				results[i].err = err
				return
			}
			results[i].item, results[i].err = p.FetchOrchestrationItem(ctx, lock, 0, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i, r := range results {
		must(t, r.err, "fetcher during the lock: FetchOrchestrationItem")
		if r.item != nil {
			t.Fatalf("fetcher %d got instance %q while the first lock was live, want none", i, r.item.Instance)
		}
	}

	sleepPast(ctx, t, time.Until(lockedBy.Add(lock)))

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
}

// lockExpirationWorkerLockRenewalSuccess checks that a live worker lock can
// be renewed, stays held, and still acks afterwards.
func lockExpirationWorkerLockRenewalSuccess(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueWorker(ctx, t, p, lockExpirationActivity("test-instance"))
	item := mustFetchWork(ctx, t, p, lock)
	lockExpirationWantNoWork(ctx, t, p, lock, "fetch while the activity is locked")

	must(t, p.RenewWorkItemLock(ctx, item.LockToken, lock), "RenewWorkItemLock")
	lockExpirationWantNoWork(ctx, t, p, lock, "fetch after renewal")

	must(t, p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted("test-instance")), "AckWorkItem after renewal")
}

// lockExpirationWorkerLockRenewalInvalidToken checks that renewing an
// unknown worker lock token fails.
func lockExpirationWorkerLockRenewalInvalidToken(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)

	err := p.RenewWorkItemLock(ctx, "invalid-token-123", 30*time.Second)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock with an unknown token")
}

// lockExpirationWorkerLockRenewalAfterExpiration checks that an expired
// worker lock cannot be renewed.
func lockExpirationWorkerLockRenewalAfterExpiration(t *testing.T, s *suite) {
	ctx := testContext(t)
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
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()
	const instance = "test-lock-renewal-extends"

	// Schedule the activity through a running orchestration's turn.
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	orch := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	meta := startMetadata()
	meta.Status = provider.StatusRunning
	ack(ctx, t, p, orch.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
		WorkerItems:  []provider.ActivityExecuteItem{lockExpirationActivity(instance)},
		Metadata:     meta,
	})

	item := mustFetchWork(ctx, t, p, lock)
	fetched := time.Now() // the original lock expires no later than fetched+lock

	// Renew at 60% of the lock's lifetime for a full lock timeout: the lock
	// now runs to about 160%.
	sleepUntil := fetched.Add(lock * 6 / 10)
	if err := instanceLockingWait(ctx, time.Until(sleepUntil)); err != nil {
		t.Fatalf("waiting to renew: %v", err)
	}
	must(t, p.RenewWorkItemLock(ctx, item.LockToken, lock), "RenewWorkItemLock")

	// Check at 120%: past the original expiry, before the renewed one.
	if err := instanceLockingWait(ctx, time.Until(fetched.Add(lock*12/10))); err != nil {
		t.Fatalf("waiting past the original expiry: %v", err)
	}
	lockExpirationWantNoWork(ctx, t, p, lock, "fetch past the original expiry of a renewed lock")
}

// lockExpirationWorkerLockRenewalAfterAck checks that a worker lock cannot
// be renewed once the item has been acked.
func lockExpirationWorkerLockRenewalAfterAck(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueWorker(ctx, t, p, lockExpirationActivity("test-instance"))
	item := mustFetchWork(ctx, t, p, lock)
	must(t, p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted("test-instance")), "AckWorkItem")

	err := p.RenewWorkItemLock(ctx, item.LockToken, lock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewWorkItemLock after ack")
}

// lockExpirationAbandonWorkItemReleasesLock checks that an abandoned work
// item can be fetched again at once, under a new token.
func lockExpirationAbandonWorkItemReleasesLock(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()
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
// with a delay stays invisible until the delay has passed.
func lockExpirationAbandonWorkItemWithDelay(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()
	const instance = "test-abandon-delay"
	const delay = 500 * time.Millisecond
	want := lockExpirationActivity(instance)

	enqueueWorker(ctx, t, p, want)
	first := mustFetchWork(ctx, t, p, lock)

	must(t, p.AbandonWorkItem(ctx, first.LockToken, delay, false), "AbandonWorkItem with delay")
	lockExpirationWantNoWork(ctx, t, p, lock, "fetch right after abandoning with a delay")

	sleepPast(ctx, t, delay)

	second := mustFetchWork(ctx, t, p, lock)
	wantEqual(t, second.Item, want, "activity fetched after the delay")
	must(t, p.AckWorkItem(ctx, second.LockToken, lockExpirationCompleted(instance)), "AckWorkItem")
}

// lockExpirationWorkerAckFailsAfterLockExpiry checks that a worker ack with
// an expired lock fails even though nobody else took the item, and that the
// item stays queued.
func lockExpirationWorkerAckFailsAfterLockExpiry(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()
	const instance = "ack-expiry-test"

	enqueueWorker(ctx, t, p, lockExpirationActivity(instance))
	item := mustFetchWork(ctx, t, p, lock)

	sleepPast(ctx, t, lock+100*time.Millisecond)

	err := p.AckWorkItem(ctx, item.LockToken, lockExpirationCompleted(instance))
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckWorkItem after the lock expired")

	again := fetchWork(ctx, t, p, 5*time.Second, nil, provider.DefaultOnlyTags())
	if again == nil {
		t.Fatal("the activity whose expired ack was rejected is no longer fetchable")
	}
	wantEqual(t, again.Item, lockExpirationActivity(instance), "activity fetched after the rejected ack")
}

// lockExpirationOrchestrationLockRenewalAfterExpiration checks that an
// expired orchestration lock cannot be renewed.
func lockExpirationOrchestrationLockRenewalAfterExpiration(t *testing.T, s *suite) {
	ctx := testContext(t)
	p := s.provider(t)
	lock := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem("orch-renewal-expiry"), 0)
	item := mustFetchOrch(ctx, t, p, lock)

	sleepPast(ctx, t, lock)

	err := p.RenewOrchestrationItemLock(ctx, item.LockToken, lock)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "RenewOrchestrationItemLock after the lock expired")
}
