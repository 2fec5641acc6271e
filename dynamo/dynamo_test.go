package dynamo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// These tests cover what the conformance suite cannot see: the request
// budget, turns larger than one transaction, histories larger than one
// item or page, DynamoDB's size limits, lost responses and lost signals.

const (
	testName    = "Orch"
	testVersion = "1.0.0"
	longLock    = 30 * time.Second
)

func ptr[T any](v T) *T { return &v }

func ev(id uint64, instance string, kind provider.EventKind) provider.Event {
	return provider.Event{EventID: id, InstanceID: instance, ExecutionID: 1, TimestampMs: uint64(time.Now().UnixMilli()), DuroxideVersion: "0.1.29", Kind: kind}
}

func started(instance string) provider.Event {
	return ev(1, instance, provider.OrchestrationStarted{Name: testName, Version: testVersion, Input: "{}"})
}

func startItem(instance string) provider.StartOrchestrationItem {
	return provider.StartOrchestrationItem{Instance: instance, Orchestration: testName, Input: "{}", Version: ptr(testVersion), ExecutionID: 1}
}

func meta() provider.ExecutionMetadata {
	return provider.ExecutionMetadata{OrchestrationName: testName, OrchestrationVersion: testVersion}
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// startAndFetch enqueues a start for instance and fetches its first turn.
func startAndFetch(ctx context.Context, t *testing.T, p provider.Provider, instance string) *provider.OrchestrationItem {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0), "EnqueueForOrchestrator")
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem: got %+v, want instance %q", item, instance)
	}
	return item
}

// activities is a turn scheduling n activities of instance.
func activities(instance string, n int) provider.TurnCommit {
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(instance)}, Metadata: meta()}
	for i := range n {
		id := uint64(i + 2)
		commit.HistoryDelta = append(commit.HistoryDelta, ev(id, instance, provider.ActivityScheduled{Name: "A", Input: fmt.Sprint(i)}))
		commit.WorkerItems = append(commit.WorkerItems, provider.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: "A", Input: fmt.Sprint(i)})
	}
	return commit
}

// TestRequestBudget asserts the request count of each hot-path operation
// (docs/design.md §5) with an SDK middleware counting requests.
func TestRequestBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true, Meter: meter})
	const inst = "budget"

	check := func(what string, max int) {
		t.Helper()
		u := meter.Reset()
		if u.Total() > max {
			t.Errorf("%s: %d requests %v, want at most %d", what, u.Total(), u.Requests, max)
		}
		if u.Total() == 0 {
			t.Errorf("%s: no request counted: the meter is not attached", what)
		}
	}

	// A program checks the layout once after New (the first enqueue would
	// otherwise): later calls make no request for it.
	must(t, p.CheckLayout(ctx), "CheckLayout")
	check("CheckLayout of a new table (GetItem, PutItem)", 2)
	must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")
	check("EnqueueForOrchestrator", 1)

	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil {
		t.Fatal("FetchOrchestrationItem: no item")
	}
	check("FetchOrchestrationItem (signalled, first turn: no history to read)", 2)

	must(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, longLock), "RenewOrchestrationItemLock")
	check("RenewOrchestrationItemLock", 1)

	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "AckOrchestrationItem")
	check("AckOrchestrationItem", 1)

	// The turn's only activity, no older one queued: the signal addresses
	// the row, and the fetch claims it without reading the index.
	work, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.DefaultOnlyTags())
	must(t, err, "FetchWorkItem")
	if work == nil {
		t.Fatal("FetchWorkItem: no item")
	}
	if u := meter.Usage(); u.Requests["UpdateItem"] != 1 || u.Total() != 1 {
		t.Errorf("FetchWorkItem (addressed by its signal): %v, want one UpdateItem", u.Requests)
	}
	check("FetchWorkItem (addressed by its signal)", 1)

	must(t, p.RenewWorkItemLock(ctx, work.LockToken, longLock), "RenewWorkItemLock")
	check("RenewWorkItemLock", 1)

	must(t, p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "ok"}), "AckWorkItem")
	check("AckWorkItem", 1)

	// An activity enqueued on its own: the index first, then the claim.
	must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 8, Name: "A"}), "EnqueueForWorker")
	meter.Reset()
	work, err = p.FetchWorkItem(ctx, longLock, 0, nil, provider.DefaultOnlyTags())
	must(t, err, "FetchWorkItem (enqueued alone)")
	if work == nil || work.Item.ID != 8 {
		t.Fatalf("FetchWorkItem (enqueued alone): %+v, want activity 8", work)
	}
	check("FetchWorkItem (signalled, found in the shard's index)", 2)
	must(t, p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 8, Result: "ok"}), "AckWorkItem 8")
	meter.Reset()

	// A session activity: the claim of the activity and of its session in
	// one transaction, which returns nothing, then a read of the activity
	// (the ready index does not project it).
	sess := provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 9, Name: "S", SessionID: ptr("s-1")}
	must(t, p.EnqueueForWorker(ctx, sess), "EnqueueForWorker")
	meter.Reset()
	cfg := &provider.SessionFetchConfig{OwnerID: "w-1", LockTimeout: longLock}
	work, err = p.FetchWorkItem(ctx, longLock, 0, cfg, provider.DefaultOnlyTags())
	must(t, err, "FetchWorkItem (session)")
	if work == nil {
		t.Fatal("FetchWorkItem (session): no item")
	}
	check("FetchWorkItem (signalled, claiming a session)", 3)
	must(t, p.RenewWorkItemLock(ctx, work.LockToken, longLock), "RenewWorkItemLock (session)")
	check("RenewWorkItemLock (session)", 1)
	must(t, p.AckWorkItem(ctx, work.LockToken, nil), "AckWorkItem (session)")
	check("AckWorkItem (session)", 1)
}

// TestAckFromAnotherProcess checks that an ack by a process that did not
// fetch the turn reads the lock row once and then commits.
func TestAckFromAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, env := dynamotest.New(t, dynamotest.Config{})
	meter := &dynamotest.Meter{}
	b := env.NewProvider(t, dynamotest.Config{Meter: meter})
	item := startAndFetch(ctx, t, a, "other")
	must(t, b.AckOrchestrationItem(ctx, item.LockToken, activities("other", 2)), "ack through another provider")
	if u := meter.Usage(); u.Total() != 2 || u.Requests["Query"] != 1 || u.Requests["TransactWriteItems"] != 1 {
		t.Errorf("ack from another process: requests %v, want one Query and one TransactWriteItems", u.Requests)
	}
	if err := a.AckOrchestrationItem(ctx, item.LockToken, activities("other", 2)); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Errorf("second ack of one turn through the fetching provider: got %v, want ErrInvalidLockToken", err)
	}
}

// TestSecondAckOfOneCommitFails: once an ack has returned success, another
// ack of the turn through the same process fails with ErrInvalidLockToken,
// even with the same commit. The suite's ConcurrentAckPrevention failed
// under fault injection: the first ack's response was lost, a concurrent
// duplicate committed and returned, and the first ack's retry, finding no
// turn cached, read that the commit was in and returned success too.
func TestSecondAckOfOneCommitFails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{})
	item := startAndFetch(ctx, t, p, "twice")
	commit := activities("twice", 1)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack")
	if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Errorf("second ack of the same commit through the same provider: got %v, want ErrInvalidLockToken", err)
	}
	// Another process cannot tell a retry from a duplicate: its ack of a
	// commit that is in succeeds (provider/doc.go).
	other := env.NewProvider(t, dynamotest.Config{})
	must(t, other.AckOrchestrationItem(ctx, item.LockToken, commit), "the same ack through another provider")
}

// faultyAPI passes requests to a real client and fails the ones its rule
// picks: before sending them (the request never happened) or after (the
// response was lost).
type faultyAPI struct {
	dynamo.API
	mu    sync.Mutex
	calls map[string]int
	// rule gets the operation and its 1-based count; it returns an error to
	// inject and whether the request is sent first.
	rule func(op string, n int) (err error, sent bool)
}

func newFaulty(inner dynamo.API) *faultyAPI {
	return &faultyAPI{API: inner, calls: map[string]int{}}
}

func (f *faultyAPI) setRule(rule func(op string, n int) (error, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule, f.calls = rule, map[string]int{}
}

func (f *faultyAPI) fault(op string) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.rule == nil {
		return nil, false
	}
	return f.rule(op, f.calls[op])
}

var errInjected = errors.New("injected failure")

func call[O any](f *faultyAPI, op string, do func() (O, error)) (O, error) {
	err, sent := f.fault(op)
	if err == nil {
		return do()
	}
	var zero O
	if sent {
		if _, realErr := do(); realErr != nil {
			return zero, realErr
		}
	}
	return zero, err
}

func (f *faultyAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return call(f, "TransactWriteItems", func() (*dynamodb.TransactWriteItemsOutput, error) { return f.API.TransactWriteItems(ctx, in, o...) })
}

func (f *faultyAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return call(f, "UpdateItem", func() (*dynamodb.UpdateItemOutput, error) { return f.API.UpdateItem(ctx, in, o...) })
}

func (f *faultyAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return call(f, "BatchWriteItem", func() (*dynamodb.BatchWriteItemOutput, error) { return f.API.BatchWriteItem(ctx, in, o...) })
}

// faultyProvider returns a provider whose DynamoDB client is f, and a
// second, healthy provider on the same table to observe it.
func faultyProvider(t *testing.T) (*dynamo.Provider, *dynamo.Provider, *faultyAPI) {
	t.Helper()
	observer, env := dynamotest.New(t, dynamotest.Config{})
	f := newFaulty(env.Endpoints.DynamoDB(env.AWS))
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.Client = f }})
	return p, observer, f
}

// workerRows counts the queued activities of the table.
func workerRows(ctx context.Context, t *testing.T, p provider.Provider) int {
	t.Helper()
	admin, _ := provider.AdminOf(p)
	d, err := admin.QueueDepths(ctx)
	must(t, err, "QueueDepths")
	return d.WorkerQueue
}

// TestLargeTurnAllOrNothing commits a turn of 1,000 activities, which takes
// the staged protocol, with a failure injected at each step. Readers see
// the whole turn or none of it: before the commit the lock stays held;
// after it, a reader overlays the staged rows it has not applied yet. A
// retried ack completes the turn exactly once.
func TestLargeTurnAllOrNothing(t *testing.T) {
	t.Parallel()
	const n = 1000
	// The lock outlives the slowest emulator: these tests are about
	// atomicity, not leases.
	const lock = 10 * time.Minute
	for _, tc := range []struct {
		name string
		// fail picks the request to fail; sent makes it fail after it was
		// carried out (a lost response).
		fail func(op string, n int) bool
		sent bool
		// absorbed: the provider retries the failure itself and the ack
		// succeeds.
		absorbed bool
	}{
		// The commit is the turn's first transaction; the ack sends it up
		// to four times. Every attempt fails: nothing is committed.
		{name: "BeforeCommit", fail: func(op string, n int) bool { return op == "TransactWriteItems" && n <= 4 }},
		// The first attempt's response is lost: sent again with its
		// ClientRequestToken, which DynamoDB answers as the first.
		{name: "CommitResponseLost", fail: func(op string, n int) bool { return op == "TransactWriteItems" && n == 1 }, sent: true, absorbed: true},
		// Every attempt's response is lost: committed, and the ack fails.
		{name: "CommitResponsesLost", fail: func(op string, n int) bool { return op == "TransactWriteItems" && n <= 4 }, sent: true},
		// Every apply attempt fails: the ack gives up with a retryable error.
		{name: "DuringApply", fail: func(op string, n int) bool { return op == "TransactWriteItems" && n >= 4 }},
		// One apply attempt fails: retried inside the ack.
		{name: "DuringApplyTransient", fail: func(op string, n int) bool { return op == "TransactWriteItems" && n == 4 }, absorbed: true},
		{name: "Success", fail: func(string, int) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p, observer, f := faultyProvider(t)
			inst := "big-" + tc.name
			must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")
			item, err := p.FetchOrchestrationItem(ctx, lock, 0, nil)
			if err != nil || item == nil {
				t.Fatalf("FetchOrchestrationItem: %v, %v", item, err)
			}
			commit := activities(inst, n)
			f.setRule(func(op string, n int) (error, bool) {
				if tc.fail(op, n) {
					return errInjected, tc.sent
				}
				return nil, false
			})
			err = p.AckOrchestrationItem(ctx, item.LockToken, commit)
			f.setRule(nil)
			if tc.name == "Success" || tc.absorbed {
				must(t, err, "AckOrchestrationItem")
			} else if err == nil || !provider.IsRetryable(err) {
				t.Fatalf("ack with an injected failure: got %v, want a retryable error", err)
			}

			history, err := observer.Read(ctx, inst)
			must(t, err, "Read")
			queued := workerRows(ctx, t, observer)
			// The history is the turn's whole or none of it; the activities,
			// in other partitions, appear as the turn is applied, never
			// before its commit (readers do not finish it).
			if (len(history) != 0 && len(history) != n+1) || (len(history) == 0 && queued != 0) || queued > n {
				t.Fatalf("after the failed ack: %d events and %d activities visible, want none or all (%d and at most %d)", len(history), queued, n+1, n)
			}
			if (tc.name == "Success" || tc.absorbed) && len(history) == 0 {
				t.Fatal("after a successful ack nothing is visible")
			}
			if tc.name != "Success" && !tc.absorbed {
				if got, err := observer.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || got != nil {
					t.Fatalf("fetch while the turn's lock is held: got %v, %v; want nothing", got, err)
				}
			}

			if tc.name != "Success" && !tc.absorbed {
				must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "retried ack")
			}
			history, err = observer.Read(ctx, inst)
			must(t, err, "Read after the retry")
			if len(history) != n+1 {
				t.Fatalf("after the retry: %d events, want %d", len(history), n+1)
			}
			for i, e := range history {
				if e.EventID != uint64(i+1) {
					t.Fatalf("event %d has id %d: history out of order", i, e.EventID)
				}
			}
			if q := workerRows(ctx, t, observer); q != n {
				t.Fatalf("after the retry: %d activities queued, want exactly %d", q, n)
			}
			// The lock is released: a new message is fetchable at once.
			must(t, observer.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "d"}, 0), "enqueue")
			next, err := observer.FetchOrchestrationItem(ctx, longLock, 0, nil)
			must(t, err, "fetch after the large turn")
			if next == nil || next.Instance != inst || len(next.History) != n+1 {
				t.Fatalf("fetch after the large turn: got %+v", next)
			}
		})
	}
}

// TestLargeHistoryTurn commits 300 KB of new history in one turn, more
// actions than one transaction takes, and reads it back whole.
func TestLargeHistoryTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, observer, f := faultyProvider(t)
	const inst = "history-300k"
	item := startAndFetch(ctx, t, p, inst)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
	payload := strings.Repeat("h", 2000)
	for i := range 150 { // 150 × 2 KB = 300 KB
		commit.HistoryDelta = append(commit.HistoryDelta, ev(uint64(i+2), inst, provider.ExternalEvent{Name: "e", Data: payload}))
	}
	// Every apply transaction fails (the provider retries a transient
	// failure itself): history must not be half visible.
	f.setRule(func(op string, n int) (error, bool) {
		return map[bool]error{true: errInjected}[op == "TransactWriteItems"], false
	})
	err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
	f.setRule(nil)
	if err == nil {
		t.Fatal("ack with a failed apply succeeded")
	}
	h, err := observer.Read(ctx, inst)
	must(t, err, "Read")
	if len(h) != 0 && len(h) != 151 {
		t.Fatalf("after the failed apply: %d events visible, want none or all 151", len(h))
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "retried ack")
	h, err = observer.Read(ctx, inst)
	must(t, err, "Read after retry")
	if len(h) != 151 {
		t.Fatalf("after the retry: %d events, want 151", len(h))
	}
}

// TestTwoMegabyteHistory stores an execution's history of 2 MB, over many
// items and query pages, and reads it back intact and in order.
func TestTwoMegabyteHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{})
	const inst = "history-2m"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	const perTurn, turns, size = 5, 4, 100 * 1024 // 20 events of 100 KB
	next := uint64(2)
	for turn := range turns {
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "x"}, 0), "enqueue")
		item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		must(t, err, "fetch")
		if item == nil || len(item.History) != 1+turn*perTurn {
			t.Fatalf("turn %d: fetched %+v", turn, item)
		}
		var delta []provider.Event
		for range perTurn {
			data := fmt.Sprintf("%06d", next) + strings.Repeat("d", size)
			delta = append(delta, ev(next, inst, provider.ExternalEvent{Name: "e", Data: data}))
			next++
		}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta}), "ack")
	}
	h, err := p.Read(ctx, inst)
	must(t, err, "Read")
	if len(h) != 1+perTurn*turns {
		t.Fatalf("read %d events, want %d", len(h), 1+perTurn*turns)
	}
	total := 0
	for i, e := range h[1:] {
		x, ok := e.Kind.(provider.ExternalEvent)
		want := fmt.Sprintf("%06d", i+2)
		if !ok || e.EventID != uint64(i+2) || !strings.HasPrefix(x.Data, want) || len(x.Data) != 6+size {
			t.Fatalf("event %d: id %d, kind %T, data prefix %q (want %q) length %d", i+2, e.EventID, e.Kind, x.Data[:min(6, len(x.Data))], want, len(x.Data))
		}
		total += len(x.Data)
	}
	if total < 2*1000*1000 {
		t.Fatalf("history holds %d bytes of data, want at least 2 MB", total)
	}
}

// TestOversizedEventRejected checks that an event too large for one item
// fails the ack permanently with ErrInvalidInput, writes nothing, and
// leaves the lock for a valid ack.
func TestOversizedEventRejected(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{})
	const inst = "oversized"
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 1)
	commit.HistoryDelta = append(commit.HistoryDelta, ev(3, inst, provider.ExternalEvent{Name: "big", Data: strings.Repeat("x", dynamo.MaxItemBytes)}))
	err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
	var pe *provider.Error
	if !errors.Is(err, provider.ErrInvalidInput) || !errors.As(err, &pe) || pe.Retryable {
		t.Fatalf("ack with an oversized event: got %v, want a permanent ErrInvalidInput", err)
	}
	if h, err := p.Read(ctx, inst); err != nil || len(h) != 0 {
		t.Fatalf("after the rejected ack: history %d events (%v), want none", len(h), err)
	}
	if q := workerRows(ctx, t, p); q != 0 {
		t.Fatalf("after the rejected ack: %d activities queued, want none", q)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "valid ack on the same lock")
}

// TestIDLimits checks that the longest instance id DynamoDB can key
// round-trips and a longer one is refused with ErrInvalidInput.
func TestIDLimits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{})
	longest := strings.Repeat("é", dynamo.MaxIDBytes/2) // 2 bytes each
	item := startAndFetch(ctx, t, p, longest)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(longest, 1)), "ack of the longest id")
	if h, err := p.Read(ctx, longest); err != nil || len(h) != 2 {
		t.Fatalf("Read of the longest id: %d events, %v", len(h), err)
	}
	err := p.EnqueueForOrchestrator(ctx, startItem(longest+"x"), 0)
	if !errors.Is(err, provider.ErrInvalidInput) {
		t.Fatalf("enqueue for an id of %d bytes: got %v, want ErrInvalidInput", len(longest)+1, err)
	}
}

// TestRetriedAckAfterLostResponse loses the response of every attempt of
// a committed turn transaction (the provider resends it itself, with the
// same request token): the ack reports a retryable error, and the caller's
// retry succeeds without applying the turn twice, as does any later repeat.
func TestRetriedAckAfterLostResponse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, observer, f := faultyProvider(t)
	const inst = "lost-response"
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 3)
	commit.OrchestratorItems = []provider.WorkItem{provider.ExternalRaisedItem{Instance: "elsewhere", Name: "x", Data: "y"}}
	f.setRule(func(op string, n int) (error, bool) {
		return map[bool]error{true: errInjected}[op == "TransactWriteItems"], true
	})
	err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
	f.setRule(nil)
	if !provider.IsRetryable(err) {
		t.Fatalf("ack whose response was lost: got %v, want a retryable error", err)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "retried ack")
	if h, err := observer.Read(ctx, inst); err != nil || len(h) != 4 {
		t.Fatalf("history after the retry: %d events (%v), want 4", len(h), err)
	}
	if q := workerRows(ctx, t, observer); q != 3 {
		t.Fatalf("after the retry: %d activities queued, want 3", q)
	}
	admin, _ := provider.AdminOf(observer)
	d, err := admin.QueueDepths(ctx)
	must(t, err, "QueueDepths")
	if d.OrchestratorQueue != 1 {
		t.Fatalf("after the retry: %d orchestrator messages, want 1", d.OrchestratorQueue)
	}
	// Once more, after the retry returned success: a second ack of the
	// turn, which fails (TestSecondAckOfOneCommitFails) and applies
	// nothing; another commit for the spent token fails too.
	if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("third ack of the same commit, after the retry succeeded: got %v, want ErrInvalidLockToken", err)
	}
	if h, err := observer.Read(ctx, inst); err != nil || len(h) != 4 {
		t.Fatalf("history after the third ack: %d events (%v), want 4", len(h), err)
	}
	if q := workerRows(ctx, t, observer); q != 3 {
		t.Fatalf("after the third ack: %d activities queued, want 3", q)
	}
	other := provider.TurnCommit{ExecutionID: 1, Metadata: meta()}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, other); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("ack of another commit with the spent token: got %v, want ErrInvalidLockToken", err)
	}
}

// droppingSQS is an SQS client whose sends are acknowledged and dropped.
type droppingSQS struct {
	*sqs.Client
	mu      sync.Mutex
	dropped int
}

func (d *droppingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	d.mu.Lock()
	d.dropped += len(in.Entries)
	d.mu.Unlock()
	return &sqs.SendMessageBatchOutput{}, nil
}

// TestDroppedSignal loses the wake-up of work committed by one process
// while another waits: the waiting fetch ends at its pollTimeout without
// it, and a later fetch finds it by a sweep, without a signal. So a lost
// signal delays work by at most one sweep interval.
func TestDroppedSignal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	dropper := &droppingSQS{Client: env.Endpoints.SQS(env.AWS)}
	sender := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.SQSClient = dropper }})
	// The waiter's fetches share one sweep per interval (from SweepInterval).
	waiter := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.SweepInterval = time.Second }})
	const inst = "dropped"

	first := make(chan *provider.OrchestrationItem, 1)
	go func() {
		item, err := waiter.FetchOrchestrationItem(ctx, longLock, 2*time.Second, nil)
		if err != nil {
			t.Errorf("waiting fetch: %v", err)
		}
		first <- item
	}()
	must(t, sender.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue with a dropped signal")
	if got := <-first; got != nil && got.Instance != inst {
		t.Fatalf("waiting fetch: got %q", got.Instance)
	} else if got != nil {
		return // its sweep ran after the commit: found without any signal
	}
	dropper.mu.Lock()
	dropped := dropper.dropped
	dropper.mu.Unlock()
	if dropped == 0 {
		t.Fatal("no signal was dropped: the test exercises nothing")
	}
	// The next fetch would wait an hour for a signal; it must not need one.
	item, err := waiter.FetchOrchestrationItem(ctx, longLock, time.Hour, nil)
	must(t, err, "next fetch")
	if item == nil || item.Instance != inst {
		t.Fatalf("next fetch: got %+v, want instance %q", item, inst)
	}
}

// holdingSQS is an SQS client that, once hold is called, holds every
// SendMessageBatch until release is closed (or its context ends).
type holdingSQS struct {
	*sqs.Client
	held     atomic.Bool
	entered  chan struct{} // receives once per held call
	release  chan struct{}
	returned atomic.Int32 // held calls that returned
}

func (h *holdingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if h.held.Load() {
		h.entered <- struct{}{}
		defer h.returned.Add(1)
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Client.SendMessageBatch(ctx, in, o...)
}

// TestAckDoesNotWaitForTheWakeUpSend checks that a turn's ack returns once
// its transaction committed, while the SQS message that wakes other
// processes for the activity it scheduled is still being sent, and that
// the message then reaches another process.
func TestAckDoesNotWaitForTheWakeUpSend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	holder := &holdingSQS{Client: env.Endpoints.SQS(env.AWS), entered: make(chan struct{}, 4), release: make(chan struct{})}
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.SQSClient = holder }})
	const inst = "ack-without-waiting"

	item := startAndFetch(ctx, t, p, inst)
	holder.held.Store(true)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "ack")
	if n := holder.returned.Load(); n != 0 {
		t.Fatalf("the ack returned after %d held sends had ended: it waited for SQS", n)
	}
	<-holder.entered // the wake-up's send began, and the ack did not wait for it
	close(holder.release)
	// The message then reaches the worker queue, for other processes.
	out, err := holder.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &env.WorkerQueueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 10})
	must(t, err, "ReceiveMessage")
	want := base64.StdEncoding.EncodeToString([]byte(inst))
	if len(out.Messages) != 1 || !strings.Contains(aws.ToString(out.Messages[0].Body), want) {
		t.Fatalf("worker queue: %d messages (%v), want the activity's wake-up naming %q", len(out.Messages), out.Messages, want)
	}
}

// awsConfigForOptions is a configuration New accepts; New makes no request.
func awsConfigForOptions() aws.Config { return aws.Config{Region: "us-east-1"} }

// TestNewRejectsBadOptions checks the options New refuses.
func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for name, fn := range map[string]func(*dynamo.Options){
		"no table":          func(o *dynamo.Options) {},
		"shards too many":   func(o *dynamo.Options) { o.TableName, o.Shards = "t", dynamo.MaxShards+1 },
		"shards negative":   func(o *dynamo.Options) { o.TableName, o.Shards = "t", -1 },
		"one queue twice":   func(o *dynamo.Options) { o.TableName, o.OrchestratorQueueURL, o.WorkerQueueURL = "t", "q", "q" },
		"long poll too big": func(o *dynamo.Options) { o.TableName, o.MaxLongPoll = "t", time.Minute },
	} {
		if _, err := dynamo.New(awsConfigForOptions(), fn); !errors.Is(err, dynamo.ErrInvalidOptions) {
			t.Errorf("%s: got %v, want ErrInvalidOptions", name, err)
		}
	}
}
