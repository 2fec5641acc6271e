package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests check that a fetch reads what its turn needs of an instance
// and nothing else: the messages visible now (not the future timers
// queued behind them) and no KV row it does not need (docs/design.md §3:
// messages keyed by visibility time; §5: the KV snapshot from the
// process's cache).

// turnProcs is one table with two processes on it: own runs an instance's
// turns one after another, as a lone dispatcher does; other takes a turn
// now and then, as a second dispatcher does. Each has its own meter.
type turnProcs struct {
	env               *dynamotest.Env
	own, other        *dynamo.Provider
	ownMeter, otherMe *dynamotest.Meter
}

func newTurnProcs(t *testing.T) *turnProcs {
	t.Helper()
	tp := &turnProcs{env: dynamotest.NewEnv(t, false), ownMeter: &dynamotest.Meter{}, otherMe: &dynamotest.Meter{}}
	tp.own = tp.env.NewProvider(t, dynamotest.Config{ShortPoll: true, Meter: tp.ownMeter})
	tp.other = tp.env.NewProvider(t, dynamotest.Config{ShortPoll: true, Meter: tp.otherMe})
	return tp
}

// startLocked enqueues a start for instance and fetches its first turn
// with a lock that outlives a large turn's ack on a loaded machine.
func startLocked(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string) *provider.OrchestrationItem {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0), "EnqueueForOrchestrator")
	item, err := p.FetchOrchestrationItem(ctx, 10*time.Minute, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem: got %+v, want instance %q", item, instance)
	}
	return item
}

// measuredFetch raises an event for instance through p, whose own wake-up
// signal leads its next fetch to the instance, and returns the turn that
// fetch locks with what the fetch alone cost.
func measuredFetch(ctx context.Context, t *testing.T, p *dynamo.Provider, meter *dynamotest.Meter, instance, name string) (*provider.OrchestrationItem, dynamotest.Usage) {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: instance, Name: name, Data: "{}"}, 0), "raise "+name)
	meter.Reset()
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	u := meter.Reset()
	must(t, err, "fetch after "+name)
	if item == nil || item.Instance != instance || len(item.Messages) != 1 {
		t.Fatalf("fetch after %s: got %+v, want the one event of %s", name, item, instance)
	}
	if _, ok := item.Messages[0].(provider.ExternalRaisedItem); !ok {
		t.Fatalf("fetch after %s: got %+v, want the event raised", name, item.Messages)
	}
	return item, u
}

// ackTurn acks item's turn with the event it took and extra events after
// it, under metadata m, with events of item's execution.
func ackTurn(ctx context.Context, t *testing.T, p *dynamo.Provider, item *provider.OrchestrationItem, m provider.ExecutionMetadata, extra ...provider.EventKind) {
	t.Helper()
	kinds := append([]provider.EventKind{provider.ExternalEvent{Name: "e", Data: "{}"}}, extra...)
	commit := provider.TurnCommit{ExecutionID: item.ExecutionID, Metadata: m}
	for i, k := range kinds {
		e := ev(uint64(len(item.History)+1+i), item.Instance, k)
		e.ExecutionID = item.ExecutionID
		commit.HistoryDelta = append(commit.HistoryDelta, e)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack")
}

// sameCost fails t when two fetches' requests or consumed capacity differ.
func sameCost(t *testing.T, what string, a, b dynamotest.Usage) {
	t.Helper()
	if a.Total() == 0 {
		t.Errorf("%s: no request counted: the meter is not attached", what)
	}
	if !maps.Equal(a.Requests, b.Requests) || !maps.Equal(a.Capacity, b.Capacity) {
		t.Errorf("%s: %v requests, %v units against %v requests, %v units; want the same", what, a.Requests, a.Capacity, b.Requests, b.Capacity)
	}
}

// TestFetchCostDoesNotGrowWithFutureTimers: an instance with 2,000 timers
// queued for the next hour costs a fetch what an instance with none costs,
// in requests and read units, whether the process that fetches ran the
// instance's last turn (its history cached) or not: the fetch's Query ends
// at the current time, and every future timer sorts after it.
func TestFetchCostDoesNotGrowWithFutureTimers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	type cost struct{ own, other dynamotest.Usage }
	costs := make([]cost, 2)
	for i, timers := range []int{0, 2000} {
		tp := newTurnProcs(t)
		inst := fmt.Sprintf("timers-%04d", timers)
		first := startLocked(ctx, t, tp.own, inst)
		commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
		fireAt := uint64(time.Now().Add(time.Hour).UnixMilli())
		for n := range timers {
			commit.OrchestratorItems = append(commit.OrchestratorItems,
				provider.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: uint64(1000 + n), FireAtMs: fireAt + uint64(n)})
		}
		must(t, tp.own.AckOrchestrationItem(ctx, first.LockToken, commit), "ack queueing the timers")
		// One turn more, so that both instances' histories are cached
		// alike (a large turn leaves none cached).
		warm, _ := measuredFetch(ctx, t, tp.own, tp.ownMeter, inst, "warm")
		ackTurn(ctx, t, tp.own, warm, meta())

		item, own := measuredFetch(ctx, t, tp.own, tp.ownMeter, inst, "own")
		ackTurn(ctx, t, tp.own, item, meta())
		item, other := measuredFetch(ctx, t, tp.other, tp.otherMe, inst, "other")
		ackTurn(ctx, t, tp.other, item, meta())
		costs[i] = cost{own, other}
		t.Logf("%d future timers: fetch after own ack %v requests, %v units; by another process %v requests, %v units",
			timers, own.Requests, own.Capacity, other.Requests, other.Capacity)
	}
	if want := map[string]int{"Query": 1, "PutItem": 1}; !maps.Equal(costs[0].own.Requests, want) {
		t.Errorf("fetch after own ack: %v requests, want %v", costs[0].own.Requests, want)
	}
	if want := map[string]int{"Query": 2, "PutItem": 1}; !maps.Equal(costs[0].other.Requests, want) {
		t.Errorf("fetch by another process: %v requests, want %v (control rows, lock, history)", costs[0].other.Requests, want)
	}
	sameCost(t, "fetch after own ack, 2,000 future timers against none", costs[1].own, costs[0].own)
	sameCost(t, "fetch by another process, 2,000 future timers against none", costs[1].other, costs[0].other)
}

// TestFetchCostDoesNotGrowWithKVKeys: an instance holding 1,000 KV keys
// costs a fetch what an instance without KV costs. Keys written by the
// current execution are in no snapshot, so no fetch reads them; keys in
// the store (a finished execution's) are the snapshot, which a process
// reads once and then takes from its cache while the lock row records the
// same store, whichever process ran the turns in between. (The other
// process's fetches compared follow one of its own, so that its history
// cache holds the same in both cases: the KV events are history too.)
func TestFetchCostDoesNotGrowWithKVKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	type cost struct{ delta, deltaOther, store, storeOther dynamotest.Usage }
	costs := make([]cost, 2)
	for i, n := range []int{0, 1000} {
		tp := newTurnProcs(t)
		inst := fmt.Sprintf("kv-%04d", n)
		var c cost
		first := startLocked(ctx, t, tp.own, inst)
		commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
		for k := range n {
			commit.HistoryDelta = append(commit.HistoryDelta, ev(uint64(2+k), inst, provider.KeyValueSet{Key: fmt.Sprintf("key-%04d", k), Value: "value", LastUpdatedAtMs: 7}))
		}
		must(t, tp.own.AckOrchestrationItem(ctx, first.LockToken, commit), "ack setting the keys")
		warm, _ := measuredFetch(ctx, t, tp.own, tp.ownMeter, inst, "warm")
		ackTurn(ctx, t, tp.own, warm, meta())

		// Execution 1 wrote the keys: they are its delta, in no snapshot.
		c.delta = runTurn(ctx, t, tp.own, tp.ownMeter, inst, "delta", 0)
		runTurn(ctx, t, tp.other, tp.otherMe, inst, "delta-other-first", 0)
		runTurn(ctx, t, tp.own, tp.ownMeter, inst, "delta-between", 0)
		c.deltaOther = runTurn(ctx, t, tp.other, tp.otherMe, inst, "delta-other", 0)

		continueAsNew(ctx, t, tp, inst)

		// Execution 2's snapshot is the store: the keys.
		c.store = runTurn(ctx, t, tp.own, tp.ownMeter, inst, "store", n)
		firstOther := runTurn(ctx, t, tp.other, tp.otherMe, inst, "store-other-first", n)
		runTurn(ctx, t, tp.own, tp.ownMeter, inst, "store-between", n)
		c.storeOther = runTurn(ctx, t, tp.other, tp.otherMe, inst, "store-other", n)
		costs[i] = c
		t.Logf("%d KV keys: own fetch %v/%v units in the delta, %v/%v in the store; another process %v/%v, %v/%v (its first fetch of the execution %v/%v)",
			n, c.delta.Requests, c.delta.Capacity, c.store.Requests, c.store.Capacity,
			c.deltaOther.Requests, c.deltaOther.Capacity, c.storeOther.Requests, c.storeOther.Capacity, firstOther.Requests, firstOther.Capacity)
	}
	sameCost(t, "fetch after own ack, 1,000 keys written by the execution against none", costs[1].delta, costs[0].delta)
	sameCost(t, "fetch by another process, 1,000 keys written by the execution against none", costs[1].deltaOther, costs[0].deltaOther)
	sameCost(t, "fetch after own ack, 1,000 keys in the store against none", costs[1].store, costs[0].store)
	sameCost(t, "fetch by another process that read the store before, 1,000 keys against none", costs[1].storeOther, costs[0].storeOther)
}

// runTurn runs one turn of instance on p (measuredFetch, ackTurn), checks
// that its snapshot holds wantKeys keys, and returns what the fetch cost.
func runTurn(ctx context.Context, t *testing.T, p *dynamo.Provider, meter *dynamotest.Meter, instance, name string, wantKeys int) dynamotest.Usage {
	t.Helper()
	item, u := measuredFetch(ctx, t, p, meter, instance, name)
	checkSnapshot(t, item, wantKeys)
	ackTurn(ctx, t, p, item, meta())
	return u
}

// checkSnapshot fails t unless item's KV snapshot holds n keys, each with
// the value the first turn set.
func checkSnapshot(t *testing.T, item *provider.OrchestrationItem, n int) {
	t.Helper()
	if len(item.KVSnapshot) != n {
		t.Fatalf("snapshot of %s holds %d keys, want %d", item.Instance, len(item.KVSnapshot), n)
	}
	for k, e := range item.KVSnapshot {
		if e.Value != "value" {
			t.Fatalf("snapshot of %s: %s = %q, want value", item.Instance, k, e.Value)
		}
	}
}

// continueAsNew ends execution 1 of inst with a continue-as-new, which
// folds its KV writes into the store, and runs execution 2's first turn:
// both on tp.own.
func continueAsNew(ctx context.Context, t *testing.T, tp *turnProcs, inst string) {
	t.Helper()
	item, _ := measuredFetch(ctx, t, tp.own, tp.ownMeter, inst, "end")
	can := meta()
	can.Status, can.Output = provider.StatusContinuedAsNew, ptr("next")
	id := uint64(len(item.History) + 1)
	must(t, tp.own.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: can,
		HistoryDelta:      []provider.Event{ev(id, inst, provider.ExternalEvent{Name: "e", Data: "{}"}), ev(id+1, inst, provider.OrchestrationContinuedAsNew{Input: "next"})},
		OrchestratorItems: []provider.WorkItem{provider.ContinueAsNewItem{Instance: inst, Orchestration: testName, Input: "next", Version: ptr(testVersion)}},
	}), "ack continuing as new")
	next, err := tp.own.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || next == nil || next.Instance != inst {
		t.Fatalf("fetch of the continue-as-new: %+v, %v", next, err)
	}
	start := started(inst)
	start.ExecutionID = 2
	must(t, tp.own.AckOrchestrationItem(ctx, next.LockToken, provider.TurnCommit{ExecutionID: 2, Metadata: meta(),
		HistoryDelta: []provider.Event{start}}), "ack starting execution 2")
}

// TestEndingTurnWithoutKVReadsNoKVRows: an instance that never wrote KV
// ends with a turn that sends its transaction alone. The lock row's digest
// says that the store and the execution's writes are empty, in this
// process (whose cache holds no state for the instance) as in another.
func TestEndingTurnWithoutKVReadsNoKVRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tp := newTurnProcs(t)
	for _, proc := range []struct {
		name  string
		p     *dynamo.Provider
		meter *dynamotest.Meter
	}{{"own", tp.own, tp.ownMeter}, {"other", tp.other, tp.otherMe}} {
		inst := "no-kv-end-" + proc.name
		first := startLocked(ctx, t, tp.own, inst)
		must(t, tp.own.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
		item, _ := measuredFetch(ctx, t, proc.p, proc.meter, inst, "e")
		done := meta()
		done.Status, done.Output = provider.StatusCompleted, ptr("ok")
		proc.meter.Reset()
		ackTurn(ctx, t, proc.p, item, done, provider.OrchestrationCompleted{Output: "ok"})
		if got, want := proc.meter.Reset().Requests, map[string]int{"TransactWriteItems": 1}; !maps.Equal(got, want) {
			t.Errorf("%s process: the ending turn made %v, want %v", proc.name, got, want)
		}
	}
}

// TestDueTimerAmongFutureTimersIsFetched: among 2,000 timers queued for
// the next hour, the one that falls due is found, by its wake-up signal
// or by a sweep, and the fetch that takes it reads it and not the others.
func TestDueTimerAmongFutureTimersIsFetched(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		queues bool
	}{{"signal", true}, {"sweep", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, tc.queues)
			clock := faults.NewFakeClock(time.Now())
			scans := &scanCounter{}
			p := env.NewProvider(t, dynamotest.Config{ShortPoll: !tc.queues, Options: func(o *dynamo.Options) {
				scans.API = o.Client
				o.Client = scans
				if !tc.queues {
					o.Now = clock.Now // the sweep's time moves when the test says
				}
			}})
			const inst = "due-timer"
			first := startLocked(ctx, t, p, inst)
			now := time.Now()
			if !tc.queues {
				now = clock.Now()
			}
			due := provider.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 2, FireAtMs: uint64(now.Add(time.Second).UnixMilli())}
			commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta(),
				OrchestratorItems: []provider.WorkItem{due}}
			for n := range 2000 {
				commit.OrchestratorItems = append(commit.OrchestratorItems,
					provider.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: uint64(1000 + n), FireAtMs: uint64(now.Add(time.Hour).UnixMilli())})
			}
			must(t, p.AckOrchestrationItem(ctx, first.LockToken, commit), "ack queueing the timers")
			if !tc.queues {
				if got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || got != nil {
					t.Fatalf("fetch before any timer is due: %+v, %v; want nothing", got, err)
				}
				clock.Advance(2 * time.Second)
			}
			got := fetchDue(ctx, t, p, scans, tc.queues)
			if len(got.Messages) != 1 || got.Messages[0] != provider.WorkItem(due) {
				t.Fatalf("fetch after the timer fell due: %+v, want the due timer alone", got.Messages)
			}
		})
	}
}

// fetchDue fetches until a turn comes (a wait for its signal with queues,
// one fetch after the clock moved without), and fails t when the fetch
// that locked it read more than a few rows of the instance's partition.
func fetchDue(ctx context.Context, t *testing.T, p *dynamo.Provider, scans *scanCounter, queues bool) *provider.OrchestrationItem {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		scans.scanned.Store(0)
		poll := time.Duration(0)
		if queues {
			poll = 10 * time.Second
		}
		got, err := p.FetchOrchestrationItem(ctx, longLock, poll, nil)
		must(t, err, "fetch of the due timer")
		if got == nil {
			continue
		}
		// The lock row, the instance record, the timer; the history (a
		// large turn leaves none cached) is one row.
		if n := scans.scanned.Load(); n > 6 {
			t.Errorf("the fetch read %d rows of the instance; want the due timer's and a handful more, not the 2,000 future timers", n)
		}
		return got
	}
	t.Fatal("the due timer was not fetched")
	return nil
}

// TestKVSnapshotInATornReadIsReadAgain: a process without the store in
// its cache reads the KV rows for its snapshot after it has locked the
// instance; a Query that runs while the previous turn's transaction is
// still making its rows visible can miss the store that turn left. The
// lock row's digest shows the read was torn, and the rows are read again:
// the snapshot holds the store.
func TestKVSnapshotInATornReadIsReadAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, p, other, torn := tornPair(t)
	const inst = "torn-snapshot"
	first := startAndFetch(ctx, t, p, inst)
	can := meta()
	can.Status, can.Output = provider.StatusContinuedAsNew, ptr("next")
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: can,
		HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.KeyValueSet{Key: "k", Value: "v", LastUpdatedAtMs: 2}),
			ev(3, inst, provider.OrchestrationContinuedAsNew{Input: "next"})},
		OrchestratorItems: []provider.WorkItem{provider.ContinueAsNewItem{Instance: inst, Orchestration: testName, Input: "next", Version: ptr(testVersion)}},
	}), "ack storing k and continuing as new")

	torn.hideNext(keys.InstancePK(inst), keys.KVSK("k"))
	item, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil || item.Instance != inst {
		t.Fatalf("fetch of execution 2: %+v, %v", item, err)
	}
	if e, ok := item.KVSnapshot["k"]; !ok || e.Value != "v" || len(item.KVSnapshot) != 1 {
		t.Fatalf("snapshot of execution 2 = %v; want k = v, which execution 1 stored", item.KVSnapshot)
	}
}

// TestRuntimeRefusesATableOfAnotherLayout: a runtime started on a table
// whose layout record names the previous layout version fails to start
// with the provider's typed error, before it fetches anything.
func TestRuntimeRefusesATableOfAnotherLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Meter: meter})
	_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: map[string]types.AttributeValue{
		"pk":             &types.AttributeValueMemberS{Value: keys.LayoutPK},
		"sk":             &types.AttributeValueMemberS{Value: keys.LayoutSK},
		"shards":         &types.AttributeValueMemberN{Value: "4"},
		"layout_version": &types.AttributeValueMemberN{Value: fmt.Sprint(dynamo.LayoutVersion - 1)},
	}})
	must(t, err, "write the previous version's layout record")
	reg, err := durable.NewRegistry()
	must(t, err, "NewRegistry")
	rt, err := durable.NewRuntime(p, reg)
	must(t, err, "NewRuntime")
	meter.Reset()
	err = rt.Start(ctx)
	var me *dynamo.LayoutMismatchError
	if !errors.Is(err, dynamo.ErrLayoutMismatch) || !errors.As(err, &me) || me.Stored.Version != dynamo.LayoutVersion-1 || me.Configured.Version != dynamo.LayoutVersion {
		t.Fatalf("Start on a version-%d table = %v; want a LayoutMismatchError naming versions %d and %d", dynamo.LayoutVersion-1, err, dynamo.LayoutVersion-1, dynamo.LayoutVersion)
	}
	if u := meter.Usage(); u.Requests["GetItem"] != 1 || u.Total() != 1 {
		t.Fatalf("Start made %v requests; want the layout record's read alone", u.Requests)
	}
}
