package providertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// instanceLockingTests returns the InstanceLocking category.
func instanceLockingTests() []testCase {
	return []testCase{
		{"ExclusiveInstanceLock", instanceLockingExclusiveInstanceLock},
		{"LockTokenUniqueness", instanceLockingLockTokenUniqueness},
		{"InvalidLockTokenRejection", instanceLockingInvalidLockTokenRejection},
		{"ConcurrentInstanceFetching", instanceLockingConcurrentInstanceFetching},
		{"CompletionsArrivingDuringLockBlocked", instanceLockingCompletionsArrivingDuringLockBlocked},
		{"CrossInstanceLockIsolation", instanceLockingCrossInstanceLockIsolation},
		{"MessageTaggingDuringLock", instanceLockingMessageTaggingDuringLock},
		{"AckOnlyAffectsLockedMessages", instanceLockingAckOnlyAffectsLockedMessages},
		{"MultiThreadedLockContention", instanceLockingMultiThreadedLockContention},
		{"MultiThreadedNoDuplicateProcessing", instanceLockingMultiThreadedNoDuplicateProcessing},
		{"MultiThreadedLockExpirationRecovery", instanceLockingMultiThreadedLockExpirationRecovery},
	}
}

// instanceLockingLongLock is the lock timeout of tests that never wait for
// a lock to expire.
const instanceLockingLongLock = longLease

// instanceLockingFetch is the outcome of one FetchOrchestrationItem call
// made on another goroutine.
type instanceLockingFetch struct {
	item *provider.OrchestrationItem
	err  error
}

// instanceLockingContest starts n goroutines that wait on one start signal
// and then each call FetchOrchestrationItem once (no polling) with
// lockTimeout against p. It returns every outcome, in goroutine order.
func instanceLockingContest(ctx context.Context, p provider.Provider, n int, lockTimeout time.Duration) []instanceLockingFetch {
	results := make([]instanceLockingFetch, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
			results[i] = instanceLockingFetch{item, err}
		}()
	}
	close(start)
	wg.Wait()
	return results
}

// instanceLockingWinners fails t if any contest outcome is an error and
// returns the items that were fetched.
func instanceLockingWinners(t *testing.T, results []instanceLockingFetch) []*provider.OrchestrationItem {
	t.Helper()
	var won []*provider.OrchestrationItem
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("concurrent fetcher %d: FetchOrchestrationItem: unexpected error: %v", i, r.err)
		}
		if r.item != nil {
			won = append(won, r.item)
		}
	}
	return won
}

// instanceLockingWait waits d or until ctx is done, for use off the test
// goroutine.
func instanceLockingWait(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// instanceLockingCompleted is the completion of activity id of instance's
// first execution.
func instanceLockingCompleted(instance string, id uint64) provider.ActivityCompletedItem {
	return provider.ActivityCompletedItem{
		Instance:    instance,
		ExecutionID: provider.InitialExecutionID,
		ID:          id,
		Result:      fmt.Sprintf("result-%d", id),
	}
}

// instanceLockingCompletedIDs returns the activity ids of the
// ActivityCompleted messages of a batch, in batch order.
func instanceLockingCompletedIDs(messages []provider.WorkItem) []uint64 {
	var ids []uint64
	for _, m := range messages {
		if c, ok := m.(provider.ActivityCompletedItem); ok {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// instanceLockingWantInstance fails t unless item belongs to instance.
func instanceLockingWantInstance(t *testing.T, item *provider.OrchestrationItem, instance, what string) {
	t.Helper()
	if item.Instance != instance {
		t.Fatalf("%s: fetched instance %q, want %q", what, item.Instance, instance)
	}
}

// instanceLockingExclusiveInstanceLock checks that a locked instance cannot
// be fetched again until its lock expires, and that the next lock gets a new
// token.
func instanceLockingExclusiveInstanceLock(t *testing.T, s *suite) {
	ctx := s.context(t)

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
		first, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		instanceLockingWantInstance(t, first, "instance-A", "first fetch")

		if _, missed := noOrchBefore(ctx, t, p, fetched.earliest(lock), "second fetch while instance-A is locked"); missed != "" {
			return missed
		}

		sleepPast(ctx, t, lock)

		second := mustFetchOrch(ctx, t, p, lock)
		instanceLockingWantInstance(t, second, "instance-A", "fetch after lock expiry")
		if second.LockToken == first.LockToken {
			t.Fatalf("fetch after lock expiry reused lock token %q", first.LockToken)
		}
		return ""
	})
}

// instanceLockingLockTokenUniqueness checks that every fetch returns a
// distinct lock token.
func instanceLockingLockTokenUniqueness(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	for i := range 5 {
		enqueueOrch(ctx, t, p, startItem(fmt.Sprintf("inst-%d", i)), 0)
	}
	tokens := map[string]string{}
	for range 5 {
		item := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
		if item.LockToken == "" {
			t.Fatalf("fetch of %q returned an empty lock token", item.Instance)
		}
		if other, dup := tokens[item.LockToken]; dup {
			t.Fatalf("lock token %q returned for both %q and %q", item.LockToken, other, item.Instance)
		}
		tokens[item.LockToken] = item.Instance
	}
}

// instanceLockingInvalidLockTokenRejection checks that ack and abandon
// reject an unknown token and leave the real lock in place.
func instanceLockingInvalidLockTokenRejection(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	mustFetchOrch(ctx, t, p, instanceLockingLongLock)

	err := p.AckOrchestrationItem(ctx, "invalid-token", provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AckOrchestrationItem with an unknown token")
	wantMessage(t, err, "AckOrchestrationItem with an unknown token", "Invalid lock token", "lock_token")

	err = p.AbandonOrchestrationItem(ctx, "invalid-token", 0, false)
	wantPermanent(t, err, provider.ErrInvalidLockToken, "AbandonOrchestrationItem with an unknown token")

	wantNoOrch(ctx, t, p, "after ack and abandon with an unknown token")
}

// instanceLockingConcurrentInstanceFetching checks that ten simultaneous
// fetchers over ten instances each get a different instance: every instance
// is fetched exactly once and no fetcher comes back empty.
func instanceLockingConcurrentInstanceFetching(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const n = 10
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("inst-%d", i)
		enqueueOrch(ctx, t, p, startItem(want[i]), 0)
	}

	won := instanceLockingWinners(t, instanceLockingContest(ctx, p, n, instanceLockingLongLock))
	if len(won) != n {
		t.Fatalf("%d concurrent fetchers over %d instances: %d got an item, want all of them", n, n, len(won))
	}
	var got []string
	tokens := map[string]bool{}
	for _, item := range won {
		got = append(got, item.Instance)
		if tokens[item.LockToken] {
			t.Fatalf("lock token %q returned twice", item.LockToken)
		}
		tokens[item.LockToken] = true
	}
	slices.Sort(got)
	slices.Sort(want)
	wantEqual(t, got, want, "instances fetched by the concurrent fetchers")
}

// instanceLockingCompletionsArrivingDuringLockBlocked checks that messages
// enqueued for a locked instance cannot be fetched until the lock is gone,
// and are then delivered together with the original batch.
func instanceLockingCompletionsArrivingDuringLockBlocked(t *testing.T, s *suite) {
	ctx := s.context(t)

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
		first, fetched := mustFetchOrchTimed(ctx, t, p, lock)
		instanceLockingWantInstance(t, first, "instance-A", "first fetch")

		for id := uint64(1); id <= 3; id++ {
			enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", id), 0)
		}
		if _, missed := noOrchBefore(ctx, t, p, fetched.earliest(lock), "fetch while instance-A is locked, after 3 completions arrived"); missed != "" {
			return missed
		}

		sleepPast(ctx, t, lock)

		item := mustFetchOrch(ctx, t, p, lock)
		instanceLockingWantInstance(t, item, "instance-A", "fetch after lock expiry")
		if len(item.Messages) != 4 {
			t.Fatalf("fetch after lock expiry: got %d messages, want 4 (the start and 3 completions)", len(item.Messages))
		}
		if _, ok := item.Messages[0].(provider.StartOrchestrationItem); !ok {
			t.Fatalf("fetch after lock expiry: first message is %s, want StartOrchestration", item.Messages[0].Kind())
		}
		wantEqual(t, instanceLockingCompletedIDs(item.Messages), []uint64{1, 2, 3}, "completion ids delivered after lock expiry")
		return ""
	})
}

// instanceLockingCrossInstanceLockIsolation checks that holding one
// instance's lock does not keep another instance from being fetched, acked
// and fetched again.
func instanceLockingCrossInstanceLockIsolation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	createInstance(ctx, t, p, "instance-A")
	createInstance(ctx, t, p, "instance-B")
	enqueueOrch(ctx, t, p, startItem("instance-A"), 0)
	enqueueOrch(ctx, t, p, startItem("instance-B"), 0)
	// The first fetch must take the oldest message: order among what
	// converged (see settle).
	settle(ctx, t)

	a := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, a, "instance-A", "first fetch (oldest message)")

	b := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, b, "instance-B", "fetch while instance-A is locked")

	ack(ctx, t, p, b.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID, Metadata: startMetadata()})

	enqueueOrch(ctx, t, p, provider.ActivityCompletedItem{Instance: "instance-B", ExecutionID: provider.InitialExecutionID, ID: 1, Result: "done"}, 0)
	b2 := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, b2, "instance-B", "second fetch of instance-B while instance-A is locked")
	wantEqual(t, instanceLockingCompletedIDs(b2.Messages), []uint64{1}, "completions in instance-B's second batch")
}

// instanceLockingMessageTaggingDuringLock checks that an ack deletes only
// the messages locked at fetch time; a message that arrived during the lock
// is delivered in the next turn.
func instanceLockingMessageTaggingDuringLock(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	createInstance(ctx, t, p, "instance-A")
	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 1), 0)
	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 2), 0)

	item := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, item, "instance-A", "first fetch")
	if len(item.Messages) != 2 {
		t.Fatalf("first fetch: got %d messages, want 2", len(item.Messages))
	}

	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 3), 0)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})

	next := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, next, "instance-A", "fetch after ack")
	if len(next.Messages) != 1 {
		t.Fatalf("fetch after ack: got %d messages, want 1 (the one that arrived during the lock)", len(next.Messages))
	}
	wantEqual(t, instanceLockingCompletedIDs(next.Messages), []uint64{3}, "completion ids after ack")
}

// instanceLockingAckOnlyAffectsLockedMessages checks that messages that
// arrive while an instance is locked are neither fetchable during the lock
// nor deleted by its ack.
func instanceLockingAckOnlyAffectsLockedMessages(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	createInstance(ctx, t, p, "instance-A")
	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 1), 0)

	item := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, item, "instance-A", "first fetch")
	wantEqual(t, instanceLockingCompletedIDs(item.Messages), []uint64{1}, "completion ids of the first batch")
	if len(item.Messages) != 1 {
		t.Fatalf("first fetch: got %d messages, want 1", len(item.Messages))
	}

	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 2), 0)
	enqueueOrch(ctx, t, p, instanceLockingCompleted("instance-A", 3), 0)
	wantNoOrch(ctx, t, p, "fetch while instance-A is locked")

	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})

	next := mustFetchOrch(ctx, t, p, instanceLockingLongLock)
	instanceLockingWantInstance(t, next, "instance-A", "fetch after ack")
	if len(next.Messages) != 2 {
		t.Fatalf("fetch after ack: got %d messages, want 2", len(next.Messages))
	}
	wantEqual(t, instanceLockingCompletedIDs(next.Messages), []uint64{2, 3}, "completion ids after ack")
}

// instanceLockingMultiThreadedLockContention checks that when ten goroutines
// fetch one instance at the same moment exactly one of them gets it, over
// several rounds of release and new work.
func instanceLockingMultiThreadedLockContention(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const (
		instance = "contention-instance"
		fetchers = 10
		rounds   = 5
	)
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	for round := range rounds {
		won := instanceLockingWinners(t, instanceLockingContest(ctx, p, fetchers, instanceLockingLongLock))
		if len(won) != 1 {
			t.Fatalf("round %d: %d of %d concurrent fetchers locked %q, want exactly 1", round, len(won), fetchers, instance)
		}
		winner := won[0]
		instanceLockingWantInstance(t, winner, instance, fmt.Sprintf("round %d winner", round))
		if len(winner.Messages) != 1 {
			t.Fatalf("round %d: winner got %d messages, want 1: %+v", round, len(winner.Messages), winner.Messages)
		}
		wantNoOrch(ctx, t, p, fmt.Sprintf("round %d: fetch while the winner holds the lock", round))

		commit := provider.TurnCommit{ExecutionID: provider.InitialExecutionID}
		if round == 0 {
			commit.HistoryDelta = []provider.Event{startedEvent(instance, provider.InitialExecutionID)}
			commit.Metadata = startMetadata()
		}
		ack(ctx, t, p, winner.LockToken, commit)
		if round < rounds-1 {
			enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: "next", Data: fmt.Sprint(round + 1)}, 0)
		}
	}
}

// instanceLockingMultiThreadedNoDuplicateProcessing checks that forty
// goroutines repeatedly fetching and acking twenty instances process every
// instance exactly once.
func instanceLockingMultiThreadedNoDuplicateProcessing(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const (
		instances = 20
		workers   = 2 * instances
	)
	for i := range instances {
		enqueueOrch(ctx, t, p, startItem(fmt.Sprintf("dup-test-%d", i)), 0)
	}

	var (
		mu        sync.Mutex
		processed = map[string]int{}
		wg        sync.WaitGroup
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				item, err := instanceLockingFetchRetrying(ctx, p, instanceLockingLongLock)
				if err != nil {
					t.Errorf("worker %d: FetchOrchestrationItem: %v", w, err)
					return
				}
				if item == nil {
					return
				}
				mu.Lock()
				processed[item.Instance]++
				times := processed[item.Instance]
				mu.Unlock()
				if times > 1 {
					t.Errorf("worker %d: instance %q fetched for processing %d times", w, item.Instance, times)
				}
				err = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
					ExecutionID:  provider.InitialExecutionID,
					HistoryDelta: []provider.Event{startedEvent(item.Instance, provider.InitialExecutionID)},
					Metadata:     startMetadata(),
				})
				if err != nil {
					t.Errorf("worker %d: AckOrchestrationItem(%q): %v", w, item.Instance, err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	if len(processed) != instances {
		t.Fatalf("%d of %d instances were processed, want all", len(processed), instances)
	}
	for i := range instances {
		inst := fmt.Sprintf("dup-test-%d", i)
		if processed[inst] != 1 {
			t.Fatalf("instance %q processed %d times, want 1", inst, processed[inst])
		}
		wantEqual(t, eventIDs(readHistory(ctx, t, p, inst)), []uint64{1}, "history of "+inst)
	}
	wantNoOrch(ctx, t, p, "after every instance was processed")
}

// instanceLockingFetchRetrying fetches an orchestration item, retrying a few
// times with a short backoff when the provider reports a retryable error
// (a lost race on a contended store).
func instanceLockingFetchRetrying(ctx context.Context, p provider.Provider, lockTimeout time.Duration) (*provider.OrchestrationItem, error) {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
		if err == nil || !provider.IsRetryable(err) || attempt == attempts {
			return item, err
		}
		if werr := instanceLockingWait(ctx, time.Duration(attempt)*10*time.Millisecond); werr != nil {
			return nil, err
		}
	}
}

// instanceLockingMultiThreadedLockExpirationRecovery checks, with three
// goroutines, that an instance whose holder stops responding stays locked
// until the lock expires, is then taken over by another goroutine with a new
// token, and that the old holder's late ack fails.
func instanceLockingMultiThreadedLockExpirationRecovery(t *testing.T, s *suite) {
	ctx := s.context(t)
	const instance = "expiration-instance"

	s.tries(t, func(p provider.Provider) string {
		lock := s.window(ctx, t, p, s.lockTimeout())
		enqueueOrch(ctx, t, p, startItem(instance), 0)

		var (
			holder, blocked, recovered instanceLockingFetch
			holderSpan, blockedSpan    span
			staleAck                   error
			wg                         sync.WaitGroup
		)
		start := make(chan struct{})
		held := make(chan struct{})      // closed once the holder has fetched
		takenOver := make(chan struct{}) // closed once the recoverer has fetched
		wg.Add(3)
		go func() { // holder: locks the instance, then goes silent
			defer wg.Done()
			<-start
			holderSpan = timed(func() { holder.item, holder.err = p.FetchOrchestrationItem(ctx, lock, 0, nil) })
			close(held)
			<-takenOver
			if holder.item != nil {
				staleAck = p.AckOrchestrationItem(ctx, holder.item.LockToken, provider.TurnCommit{
					ExecutionID:  provider.InitialExecutionID,
					HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
					Metadata:     startMetadata(),
				})
			}
		}()
		go func() { // competitor: tries while the lock is live
			defer wg.Done()
			<-start
			<-held
			blockedSpan = timed(func() { blocked.item, blocked.err = p.FetchOrchestrationItem(ctx, lock, 0, nil) })
		}()
		go func() { // recoverer: tries once the lock has run out
			defer wg.Done()
			defer close(takenOver)
			<-start
			<-held
			if err := instanceLockingWait(ctx, lock+pastMargin); err != nil {
				recovered.err = err
				return
			}
			recovered.item, recovered.err = p.FetchOrchestrationItem(ctx, lock, 0, nil)
		}()
		close(start)
		wg.Wait()

		must(t, holder.err, "holder: FetchOrchestrationItem")
		if holder.item == nil {
			t.Fatal("holder: FetchOrchestrationItem: want an item, got none")
		}
		instanceLockingWantInstance(t, holder.item, instance, "holder")

		must(t, blocked.err, "competitor: FetchOrchestrationItem")
		if live := holderSpan.earliest(lock); !blockedSpan.endsBefore(live) {
			return blockedSpan.missed("competitor's fetch", live)
		}
		if blocked.item != nil {
			t.Fatalf("competitor fetched %q while the holder's lock was live, want none", blocked.item.Instance)
		}

		must(t, recovered.err, "recoverer: FetchOrchestrationItem")
		if recovered.item == nil {
			t.Fatal("recoverer: want the instance once the holder's lock expired, got none")
		}
		instanceLockingWantInstance(t, recovered.item, instance, "recoverer")
		if recovered.item.LockToken == holder.item.LockToken {
			t.Fatalf("recoverer got the holder's lock token %q, want a new one", holder.item.LockToken)
		}

		wantPermanent(t, staleAck, provider.ErrInvalidLockToken, "holder's ack after its lock expired and was taken over")
		return ""
	})
}
