package memprovider_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
	"github.com/duradyn/duradyn/provider/providertest"
)

// conformanceFactory is the suite's factory for memprovider: a fresh store
// per test, every capability and hook (Lacks declares nothing missing).
func conformanceFactory() providertest.Factory {
	return providertest.Factory{
		NewProvider: func(t *testing.T) provider.Provider { return memprovider.New() },
		LockTimeout: time.Second,
		LongPolling: true,
		CorruptHistory: func(t *testing.T, p provider.Provider, instance string) {
			t.Helper()
			if !memprovider.CorruptHistory(p.(*memprovider.Provider), instance) {
				t.Fatalf("CorruptHistory: instance %q has no history", instance)
			}
		},
		MaxAttemptCount: func(t *testing.T, p provider.Provider, instance string) uint32 {
			return memprovider.MaxAttemptCount(p.(*memprovider.Provider), instance)
		},
		// Lacks is empty: memprovider implements provider.Admin and both
		// hooks are set, so every test runs.
	}
}

// TestConformance runs the provider conformance suite.
func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, conformanceFactory())
}

// TestConformanceRetrying runs the suite through providertest.Retrying, as
// runtimes and fault-injection runs use providers: the wrapper must keep
// every behaviour and every optional interface (a lost provider.Admin fails
// the tests that need it, since the factory declares nothing missing).
func TestConformanceRetrying(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.RetryingFactory(conformanceFactory(), providertest.RetryPolicy{}))
}

// fakeClock is a manually advanced clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// waitingProvider returns a provider and a channel that receives a value
// each time one of its long polls starts waiting.
func waitingProvider(optFns ...func(*memprovider.Options)) (*memprovider.Provider, <-chan struct{}) {
	p := memprovider.New(optFns...)
	waiting := make(chan struct{}, 1)
	memprovider.SetWaitHook(p, func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	return p, waiting
}

// longPoll is how long the blocking tests let a fetch wait; they require the
// fetch to return well before it.
const longPoll = 30 * time.Second

// prompt is the most a woken fetch may take.
const prompt = 5 * time.Second

func startItem(instance string) provider.StartOrchestrationItem {
	v := "1.0.0"
	return provider.StartOrchestrationItem{Instance: instance, Orchestration: "Orch", Input: "{}", Version: &v, ExecutionID: 1}
}

// receive waits for a result from ch for at most prompt.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(prompt):
		t.Fatalf("%s: no result within %v", what, prompt)
		var zero T
		return zero
	}
}

type orchResult struct {
	item    *provider.OrchestrationItem
	err     error
	elapsed time.Duration
}

type workResult struct {
	item    *provider.LockedWorkItem
	err     error
	elapsed time.Duration
}

func fetchOrchAsync(ctx context.Context, p *memprovider.Provider, pollTimeout time.Duration) <-chan orchResult {
	ch := make(chan orchResult, 1)
	go func() {
		start := time.Now()
		item, err := p.FetchOrchestrationItem(ctx, time.Minute, pollTimeout, nil)
		ch <- orchResult{item, err, time.Since(start)}
	}()
	return ch
}

func fetchWorkAsync(ctx context.Context, p *memprovider.Provider, pollTimeout time.Duration) <-chan workResult {
	ch := make(chan workResult, 1)
	go func() {
		start := time.Now()
		item, err := p.FetchWorkItem(ctx, time.Minute, pollTimeout, nil, provider.DefaultOnlyTags())
		ch <- workResult{item, err, time.Since(start)}
	}()
	return ch
}

// TestFetchOrchestrationItemWakesOnEnqueue checks that a blocked long poll
// returns an item enqueued while it waits, long before its poll timeout.
func TestFetchOrchestrationItemWakesOnEnqueue(t *testing.T) {
	ctx := t.Context()
	p, waiting := waitingProvider()
	results := fetchOrchAsync(ctx, p, longPoll)
	receive(t, waiting, "fetch waiting")
	if err := p.EnqueueForOrchestrator(ctx, startItem("wake-orch"), 0); err != nil {
		t.Fatal(err)
	}
	r := receive(t, results, "FetchOrchestrationItem")
	if r.err != nil || r.item == nil {
		t.Fatalf("FetchOrchestrationItem = %v, %v; want the item", r.item, r.err)
	}
	if r.item.Instance != "wake-orch" || len(r.item.Messages) != 1 {
		t.Fatalf("got instance %q with %d messages, want wake-orch with 1", r.item.Instance, len(r.item.Messages))
	}
	if r.elapsed >= prompt {
		t.Fatalf("fetch took %v, want well under the %v poll timeout", r.elapsed, longPoll)
	}
}

// TestFetchWorkItemWakesOnEnqueue checks the same for the worker queue.
func TestFetchWorkItemWakesOnEnqueue(t *testing.T) {
	ctx := t.Context()
	p, waiting := waitingProvider()
	results := fetchWorkAsync(ctx, p, longPoll)
	receive(t, waiting, "fetch waiting")
	act := provider.ActivityExecuteItem{Instance: "wake-work", ExecutionID: 1, ID: 2, Name: "A", Input: "x"}
	if err := p.EnqueueForWorker(ctx, act); err != nil {
		t.Fatal(err)
	}
	r := receive(t, results, "FetchWorkItem")
	if r.err != nil || r.item == nil {
		t.Fatalf("FetchWorkItem = %v, %v; want the item", r.item, r.err)
	}
	if r.item.Item != act || r.item.AttemptCount != 1 {
		t.Fatalf("got %+v (attempt %d), want %+v (attempt 1)", r.item.Item, r.item.AttemptCount, act)
	}
	if r.elapsed >= prompt {
		t.Fatalf("fetch took %v, want well under the %v poll timeout", r.elapsed, longPoll)
	}
}

// TestFetchWorkItemWakesOnAbandon checks that abandoning an activity wakes
// a worker waiting for work.
func TestFetchWorkItemWakesOnAbandon(t *testing.T) {
	ctx := t.Context()
	p, waiting := waitingProvider()
	act := provider.ActivityExecuteItem{Instance: "abandon-wake", ExecutionID: 1, ID: 2, Name: "A"}
	if err := p.EnqueueForWorker(ctx, act); err != nil {
		t.Fatal(err)
	}
	first, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, provider.DefaultOnlyTags())
	if err != nil || first == nil {
		t.Fatalf("first fetch = %v, %v", first, err)
	}
	results := fetchWorkAsync(ctx, p, longPoll)
	receive(t, waiting, "fetch waiting")
	if err := p.AbandonWorkItem(ctx, first.LockToken, 0, false); err != nil {
		t.Fatal(err)
	}
	r := receive(t, results, "FetchWorkItem")
	if r.err != nil || r.item == nil || r.item.AttemptCount != 2 {
		t.Fatalf("FetchWorkItem = %+v, %v; want the abandoned item on attempt 2", r.item, r.err)
	}
}

// TestLongPollReturnsDelayedItem checks that an item whose visibility time
// arrives during a long poll is returned then, without any other wake-up.
func TestLongPollReturnsDelayedItem(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	const delay = 300 * time.Millisecond
	if err := p.EnqueueForOrchestrator(ctx, startItem("delayed"), delay); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, longPoll, nil)
	elapsed := time.Since(start)
	if err != nil || item == nil || item.Instance != "delayed" {
		t.Fatalf("FetchOrchestrationItem = %v, %v; want instance delayed", item, err)
	}
	if elapsed < delay-10*time.Millisecond || elapsed >= prompt {
		t.Fatalf("fetch returned after %v, want about %v", elapsed, delay)
	}
}

// TestLongPollReturnsItemWhenLockExpires checks that a long poll picks up an
// instance whose lock expires while it waits.
func TestLongPollReturnsItemWhenLockExpires(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	if err := p.EnqueueForOrchestrator(ctx, startItem("expiring"), 0); err != nil {
		t.Fatal(err)
	}
	const lease = 300 * time.Millisecond
	first, err := p.FetchOrchestrationItem(ctx, lease, 0, nil)
	if err != nil || first == nil {
		t.Fatalf("first fetch = %v, %v", first, err)
	}
	start := time.Now()
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, longPoll, nil)
	elapsed := time.Since(start)
	if err != nil || item == nil || item.AttemptCount != 2 {
		t.Fatalf("FetchOrchestrationItem = %+v, %v; want the item again on attempt 2", item, err)
	}
	if elapsed >= prompt {
		t.Fatalf("fetch returned after %v, want about %v", elapsed, lease)
	}
}

// TestLongPollEndsWhenContextCancelled checks that cancelling ctx ends a
// waiting fetch at once with an error wrapping context.Canceled.
func TestLongPollEndsWhenContextCancelled(t *testing.T) {
	for _, queue := range []string{"orchestrator", "worker"} {
		t.Run(queue, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			p, waiting := waitingProvider()
			var errs <-chan error
			if queue == "orchestrator" {
				ch := fetchOrchAsync(ctx, p, longPoll)
				errs = afterResult(ch, func(r orchResult) error { return nilItem(r.item == nil, r.err) })
			} else {
				ch := fetchWorkAsync(ctx, p, longPoll)
				errs = afterResult(ch, func(r workResult) error { return nilItem(r.item == nil, r.err) })
			}
			receive(t, waiting, "fetch waiting")
			cancel()
			err := receive(t, errs, "fetch after cancel")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("fetch error = %v, want one wrapping context.Canceled", err)
			}
			if provider.IsRetryable(err) {
				t.Fatalf("fetch error %v is retryable, want permanent", err)
			}
		})
	}
}

func afterResult[T any](ch <-chan T, f func(T) error) <-chan error {
	out := make(chan error, 1)
	go func() { out <- f(<-ch) }()
	return out
}

func nilItem(isNil bool, err error) error {
	if !isNil {
		return errors.New("fetch returned an item")
	}
	return err
}

// TestShortPollReturnsAtOnce checks that pollTimeout 0 never waits.
func TestShortPollReturnsAtOnce(t *testing.T) {
	p, waiting := waitingProvider()
	item, err := p.FetchOrchestrationItem(t.Context(), time.Second, 0, nil)
	if item != nil || err != nil {
		t.Fatalf("FetchOrchestrationItem = %v, %v; want nil, nil", item, err)
	}
	work, err := p.FetchWorkItem(t.Context(), time.Second, 0, nil, provider.AnyTag())
	if work != nil || err != nil {
		t.Fatalf("FetchWorkItem = %v, %v; want nil, nil", work, err)
	}
	select {
	case <-waiting:
		t.Fatal("a fetch with pollTimeout 0 waited")
	default:
	}
}

// TestInjectedClockExpiresLeases checks that Options.Now drives lock expiry
// on both queues without sleeping.
func TestInjectedClockExpiresLeases(t *testing.T) {
	ctx := t.Context()
	clock := newFakeClock()
	p := memprovider.New(func(o *memprovider.Options) { o.Now = clock.Now })
	if err := p.EnqueueForOrchestrator(ctx, startItem("clocked"), 0); err != nil {
		t.Fatal(err)
	}
	act := provider.ActivityExecuteItem{Instance: "clocked", ExecutionID: 1, ID: 2, Name: "A"}
	if err := p.EnqueueForWorker(ctx, act); err != nil {
		t.Fatal(err)
	}
	const lease = 10 * time.Second
	first, err := p.FetchOrchestrationItem(ctx, lease, 0, nil)
	if err != nil || first == nil {
		t.Fatalf("fetch = %v, %v", first, err)
	}
	work, err := p.FetchWorkItem(ctx, lease, 0, nil, provider.DefaultOnlyTags())
	if err != nil || work == nil {
		t.Fatalf("fetch work = %v, %v", work, err)
	}

	clock.Advance(lease - time.Millisecond)
	if again, err := p.FetchOrchestrationItem(ctx, lease, 0, nil); again != nil || err != nil {
		t.Fatalf("fetch before expiry = %v, %v; want nil, nil", again, err)
	}
	if err := p.RenewWorkItemLock(ctx, work.LockToken, lease); err != nil {
		t.Fatalf("renew work lock before expiry: %v", err)
	}

	clock.Advance(time.Millisecond) // exactly at the orchestration lease end
	second, err := p.FetchOrchestrationItem(ctx, lease, 0, nil)
	if err != nil || second == nil || second.AttemptCount != 2 {
		t.Fatalf("fetch after expiry = %+v, %v; want the item on attempt 2", second, err)
	}
	err = p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1})
	if !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("ack with the expired token = %v, want ErrInvalidLockToken", err)
	}

	clock.Advance(lease) // past the renewed worker lease
	if err := p.AckWorkItem(ctx, work.LockToken, nil); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("ack of the expired activity = %v, want ErrInvalidLockToken", err)
	}
	again, err := p.FetchWorkItem(ctx, lease, 0, nil, provider.DefaultOnlyTags())
	if err != nil || again == nil || again.AttemptCount != 2 {
		t.Fatalf("refetch work = %+v, %v; want the activity on attempt 2", again, err)
	}
}

// TestUnstartedInstanceDoesNotBlockOthers checks that messages for an
// instance that has not started (and are not orphan queue messages) stay
// queued without holding up later work of other instances.
func TestUnstartedInstanceDoesNotBlockOthers(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	raised := provider.ExternalRaisedItem{Instance: "not-started", Name: "ev", Data: "d"}
	if err := p.EnqueueForOrchestrator(ctx, raised, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.EnqueueForOrchestrator(ctx, startItem("started"), 0); err != nil {
		t.Fatal(err)
	}
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil || item.Instance != "started" {
		t.Fatalf("fetch = %v, %v; want instance started", item, err)
	}
	if err := p.EnqueueForOrchestrator(ctx, startItem("not-started"), 0); err != nil {
		t.Fatal(err)
	}
	item, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil || item.Instance != "not-started" {
		t.Fatalf("fetch = %v, %v; want instance not-started", item, err)
	}
	if len(item.Messages) != 2 || item.Messages[0] != provider.WorkItem(raised) || item.AttemptCount != 1 {
		t.Fatalf("messages = %+v (attempt %d), want the buffered event then the start, attempt 1", item.Messages, item.AttemptCount)
	}
}

// TestCorruptHistory checks that undecodable stored events fail reads with
// ErrCorruptData, come back from fetch as HistoryError with the lock held,
// and do not stop an ack from appending.
func TestCorruptHistory(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	if err := p.EnqueueForOrchestrator(ctx, startItem("corrupt"), 0); err != nil {
		t.Fatal(err)
	}
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("fetch = %v, %v", item, err)
	}
	started := provider.Event{EventID: 1, InstanceID: "corrupt", ExecutionID: 1, Kind: provider.OrchestrationStarted{Name: "Orch", Version: "1.0.0"}}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{started},
		Metadata:     provider.ExecutionMetadata{OrchestrationName: "Orch", OrchestrationVersion: "1.0.0"},
	}); err != nil {
		t.Fatal(err)
	}
	// A read decodes the history, and the provider keeps what it decoded:
	// corruption of the stored bytes still shows.
	if h, err := p.Read(ctx, "corrupt"); err != nil || len(h) != 1 {
		t.Fatalf("Read before the corruption = %d events, %v; want the started event", len(h), err)
	}
	memprovider.CorruptHistory(p, "corrupt")
	if _, err := p.Read(ctx, "corrupt"); !errors.Is(err, provider.ErrCorruptData) || !errors.Is(err, provider.ErrUnknownKind) {
		t.Fatalf("Read = %v, want ErrCorruptData wrapping ErrUnknownKind", err)
	}
	if err := p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: "corrupt", Name: "e"}, 0); err != nil {
		t.Fatal(err)
	}
	item, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil || !errors.Is(item.HistoryError, provider.ErrCorruptData) || len(item.History) != 0 {
		t.Fatalf("fetch = %+v, %v; want the item with HistoryError and no history", item, err)
	}
	if again, _ := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil); again != nil {
		t.Fatal("instance with corrupt history was not locked by the fetch that reported it")
	}
	failed := provider.Event{EventID: 99999, InstanceID: "corrupt", ExecutionID: 1, Kind: provider.OrchestrationCompleted{Output: "x"}}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID: 1, HistoryDelta: []provider.Event{failed}, Metadata: provider.ExecutionMetadata{Status: provider.StatusFailed},
	}); err != nil {
		t.Fatalf("ack onto corrupt history: %v", err)
	}
	info, err := p.InstanceInfo(ctx, "corrupt")
	if err != nil || info.Status != provider.StatusFailed {
		t.Fatalf("InstanceInfo = %+v, %v; want status Failed", info, err)
	}
}

// TestFailedAckChangesNothing checks that an ack rejected for a duplicate
// event id writes nothing and keeps the lock, so a corrected ack succeeds.
func TestFailedAckChangesNothing(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	if err := p.EnqueueForOrchestrator(ctx, startItem("dup"), 0); err != nil {
		t.Fatal(err)
	}
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("fetch = %v, %v", item, err)
	}
	if err := p.AppendWithExecution(ctx, "dup", 1, []provider.Event{{EventID: 2, Kind: provider.TimerCreated{FireAtMs: 1}}}); err != nil {
		t.Fatal(err)
	}
	started := provider.Event{EventID: 1, Kind: provider.OrchestrationStarted{Name: "Orch", Version: "1.0.0"}}
	dup := provider.Event{EventID: 2, Kind: provider.TimerCreated{FireAtMs: 2}}
	commit := provider.TurnCommit{
		ExecutionID:       1,
		HistoryDelta:      []provider.Event{started, dup},
		WorkerItems:       []provider.ActivityExecuteItem{{Instance: "dup", ExecutionID: 1, ID: 3}},
		OrchestratorItems: []provider.WorkItem{startItem("child")},
		Metadata:          provider.ExecutionMetadata{OrchestrationName: "Orch", OrchestrationVersion: "1.0.0"},
	}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); !errors.Is(err, provider.ErrDuplicateEvent) {
		t.Fatalf("ack = %v, want ErrDuplicateEvent", err)
	}
	// No instance record: the instance is still pending, as its start is
	// still queued.
	if info, err := p.InstanceInfo(ctx, "dup"); err != nil || info.Status != provider.StatusPending {
		t.Fatalf("InstanceInfo after failed ack = %+v, %v; want status Pending", info, err)
	}
	depths, _ := p.QueueDepths(ctx)
	if depths.OrchestratorQueue != 0 || depths.WorkerQueue != 0 {
		t.Fatalf("queue depths after failed ack = %+v, want nothing enqueued and the batch still locked", depths)
	}
	commit.HistoryDelta = commit.HistoryDelta[:1]
	if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); err != nil {
		t.Fatalf("corrected ack: %v", err)
	}
	h, err := p.Read(ctx, "dup")
	if err != nil || len(h) != 2 || h[1].Kind != (provider.TimerCreated{FireAtMs: 1}) {
		t.Fatalf("history = %+v, %v; want the started event and the original event 2", h, err)
	}
}

// TestDescriber checks the provider's name and version.
func TestDescriber(t *testing.T) {
	p := memprovider.New()
	if provider.NameOf(p) != "memprovider" || provider.VersionOf(p) != memprovider.Version {
		t.Fatalf("NameOf/VersionOf = %q/%q", provider.NameOf(p), provider.VersionOf(p))
	}
}
