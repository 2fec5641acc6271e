package dynamo_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// The admin gauges read the same whatever the work in flight
// (docs/design.md §5): SystemMetrics one Query of the counter cells,
// QueueDepths one Scan of the ready index. Turns between an execution's
// first and its last write no cell.

// adminCost is what one SystemMetrics and one QueueDepths call cost.
type adminCost struct {
	metricsRequests, depthsRequests int
	metricsRRU, depthsRRU           float64
	metrics                         provider.SystemMetrics
	depths                          provider.QueueDepths
}

// measureAdmin calls SystemMetrics and QueueDepths once each and meters
// them.
func measureAdmin(ctx context.Context, t *testing.T, p *dynamo.Provider, meter *dynamotest.Meter) adminCost {
	t.Helper()
	var c adminCost
	var err error
	meter.Reset()
	c.metrics, err = p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	u := meter.Reset()
	c.metricsRequests, c.metricsRRU = u.Total(), u.TotalCapacity()
	c.depths, err = p.QueueDepths(ctx)
	must(t, err, "QueueDepths")
	u = meter.Reset()
	c.depthsRequests, c.depthsRRU = u.Total(), u.TotalCapacity()
	return c
}

// waitingTurn is the first turn of an orchestration that waits for an
// event: it starts and subscribes, 2 events.
func waitingTurn(instance string) provider.TurnCommit {
	return provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		started(instance), ev(2, instance, provider.ExternalSubscribed{Name: "go"}),
	}}
}

// seedID names instance i of tree r of seedTimers.
func seedID(r, i int) string { return fmt.Sprintf("timer-%d-%04d", r, i) }

// seedTrees is how many providers seedTimers runs first turns on, each on
// a tree of its own.
const seedTrees = 4

// seedTimers starts n instances on env's table through providers, each
// instance waiting on a timer an hour away: a running instance of 2
// events and a delayed orchestrator message each. The starts form trees,
// each first turn starting up to 16 more, so that no start costs a request
// of its own; one provider runs each tree, on the signals its own turns
// leave, so that its fetches need no sweep: three requests an instance.
func seedTimers(ctx context.Context, t *testing.T, env *dynamotest.Env, n int) {
	t.Helper()
	fireAt := uint64(time.Now().Add(time.Hour).UnixMilli())
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var done atomic.Int64
	var wg sync.WaitGroup
	for r := range seedTrees {
		p := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
		must(t, p.EnqueueForOrchestrator(ctx, startItem(seedID(r, 0)), 0), "enqueue a tree's first start")
		wg.Go(func() {
			for done.Load() < int64(n) && ctx.Err() == nil {
				switch ran, err := firstTimerTurn(ctx, p, n/seedTrees, fireAt); {
				case err != nil:
					stop(err)
					return
				case ran:
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		t.Fatalf("start %d instances: %v", n, err)
	}
}

// firstTimerTurn fetches a turn and acks it as the first turn of an
// instance of seedTimers' trees of size instances; ran reports whether it
// found one.
func firstTimerTurn(ctx context.Context, p *dynamo.Provider, size int, fireAt uint64) (ran bool, err error) {
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil {
		if err != nil && !provider.IsRetryable(err) {
			return false, err
		}
		return false, nil
	}
	inst := item.Instance
	var tree, i int
	if _, err := fmt.Sscanf(inst, "timer-%d-%d", &tree, &i); err != nil {
		return false, fmt.Errorf("fetched %s: %w", inst, err)
	}
	commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		started(inst), ev(2, inst, provider.TimerCreated{FireAtMs: fireAt}),
	}}
	commit.OrchestratorItems = []provider.WorkItem{provider.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 2, FireAtMs: fireAt}}
	for c := 16*i + 1; c <= 16*i+16 && c < size; c++ {
		commit.OrchestratorItems = append(commit.OrchestratorItems, startItem(seedID(tree, c)))
	}
	if err := retry(ctx, func() error { return p.AckOrchestrationItem(ctx, item.LockToken, commit) }); err != nil {
		return false, fmt.Errorf("first turn of %s: %w", inst, err)
	}
	return true, nil
}

// TestAdminCostDoesNotGrowWithWorkInFlight: SystemMetrics and QueueDepths
// make the same requests with no instance as with 1,000 running instances
// each waiting on a timer (1,000 queued orchestrator messages), and
// SystemMetrics reads one unit at most both times; their answers are
// exact.
func TestAdminCostDoesNotGrowWithWorkInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Meter: meter, ShortPoll: true})
	const n = 1000 // a multiple of seedTrees

	empty := measureAdmin(ctx, t, p, meter)
	if empty.metrics != (provider.SystemMetrics{}) || empty.depths != (provider.QueueDepths{}) {
		t.Fatalf("on an empty table SystemMetrics = %+v, QueueDepths = %+v; want zeros", empty.metrics, empty.depths)
	}

	began := time.Now()
	seedTimers(ctx, t, env, n)
	t.Logf("%d instances started in %v", n, time.Since(began))

	full := measureAdmin(ctx, t, p, meter)
	want := provider.SystemMetrics{TotalInstances: n, TotalExecutions: n, RunningInstances: n, TotalEvents: 2 * n}
	if full.metrics != want || full.depths != (provider.QueueDepths{OrchestratorQueue: n}) {
		t.Fatalf("with %d instances waiting on timers SystemMetrics = %+v, QueueDepths = %+v; want %+v and %d orchestrator messages",
			n, full.metrics, full.depths, want, n)
	}
	t.Logf("SystemMetrics: %d and %d requests, %.1f and %.1f RRU; QueueDepths: %d and %d requests, %.1f and %.1f RRU (empty, %d running with a timer each)",
		empty.metricsRequests, full.metricsRequests, empty.metricsRRU, full.metricsRRU,
		empty.depthsRequests, full.depthsRequests, empty.depthsRRU, full.depthsRRU, n)
	// The cells fit one read unit, whatever they count (an empty table
	// has none: DynamoDB Local bills that 0).
	if empty.metricsRequests != 1 || full.metricsRequests != 1 || empty.metricsRRU > 1 || full.metricsRRU > 1 {
		t.Errorf("SystemMetrics made %d requests (%.1f RRU) on an empty table and %d (%.1f RRU) with %d running instances; want one Query of the cells, of one read unit at most, both times",
			empty.metricsRequests, empty.metricsRRU, full.metricsRequests, full.metricsRRU, n)
	}
	if empty.depthsRequests != 1 || full.depthsRequests != 1 {
		t.Errorf("QueueDepths made %d requests on an empty table and %d with %d queued messages; want one Scan of the ready index both times",
			empty.depthsRequests, full.depthsRequests, n)
	}
	// The Scan's units grow with the index it reads, a small fraction of
	// a unit per message: far from a read of each instance's lock.
	if full.depthsRRU > n/20 {
		t.Errorf("QueueDepths read %.1f RRU with %d queued messages; want under %d", full.depthsRRU, n, n/20)
	}
}

// cellSpy counts the writes of counter cells in the transactions the
// provider sends.
type cellSpy struct {
	dynamo.API
	writes atomic.Int64
}

// TransactWriteItems counts the input's updates of cells and sends it.
func (c *cellSpy) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, a := range in.TransactItems {
		if a.Update == nil {
			continue
		}
		if pk, ok := a.Update.Key["pk"].(*types.AttributeValueMemberS); ok && pk.Value == keys.MetricsPK {
			c.writes.Add(1)
		}
	}
	return c.API.TransactWriteItems(ctx, in, opts...)
}

// spiedProvider is a provider on a fresh table whose cell writes spy
// counts.
func spiedProvider(t *testing.T) (*dynamo.Provider, *dynamotest.Env, *cellSpy) {
	t.Helper()
	spy := &cellSpy{}
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		spy.API = o.Client
		o.Client = spy
	}})
	return p, env, spy
}

// ackNext fetches the next turn, which must be instance's, and acks it
// with commit; it returns how many cell writes the ack sent.
func ackNext(ctx context.Context, t *testing.T, p *dynamo.Provider, spy *cellSpy, instance string, commit func(*provider.OrchestrationItem) provider.TurnCommit) int64 {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil || item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem: %+v, %v; want a turn of %s", item, err, instance)
	}
	before := spy.writes.Load()
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit(item)), "ack")
	return spy.writes.Load() - before
}

// TestSystemMetricsCellsMoveOnlyWhenExecutionsStartOrEnd: a turn that
// starts an execution or ends one writes one cell; the turns in between
// write none. SystemMetrics counts a running execution's events as of its
// first turn and all of them once it ends, when it agrees with the table
// again, continue-as-new included.
func TestSystemMetricsCellsMoveOnlyWhenExecutionsStartOrEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env, spy := spiedProvider(t)
	const inst = "cell-moves"
	metrics := func() provider.SystemMetrics {
		t.Helper()
		m, err := p.SystemMetrics(ctx)
		must(t, err, "SystemMetrics")
		return m
	}
	raise := func(data string) {
		t.Helper()
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: data}, 0), "raise")
	}

	must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
	if w := ackNext(ctx, t, p, spy, inst, func(*provider.OrchestrationItem) provider.TurnCommit { return waitingTurn(inst) }); w != 1 {
		t.Fatalf("the first turn wrote %d cells, want 1", w)
	}
	checkMetrics(ctx, t, env, p, "after the first turn")
	// Three turns that deliver an event and wait again: no cell.
	for k := range uint64(3) {
		raise(fmt.Sprint(k))
		w := ackNext(ctx, t, p, spy, inst, func(*provider.OrchestrationItem) provider.TurnCommit {
			return provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
				ev(3+2*k, inst, provider.ExternalEvent{Name: "go", Data: fmt.Sprint(k)}),
				ev(4+2*k, inst, provider.ExternalSubscribed{Name: "go"}),
			}}
		})
		if w != 0 {
			t.Fatalf("turn %d in the middle of the execution wrote %d cells, want none", k+2, w)
		}
	}
	if m := metrics(); m.RunningInstances != 1 || m.TotalExecutions != 1 || m.TotalEvents != 2 {
		t.Fatalf("SystemMetrics after the middle turns = %+v; want 1 running instance counted with its first turn's 2 events", m)
	}

	// The execution continues as new (one cell), the next one starts (one)
	// and completes (one).
	raise("last")
	w := ackNext(ctx, t, p, spy, inst, func(*provider.OrchestrationItem) provider.TurnCommit {
		c := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
			ev(9, inst, provider.ExternalEvent{Name: "go", Data: "last"}), ev(10, inst, provider.OrchestrationContinuedAsNew{Input: "{}"}),
		}}
		c.Metadata.Status, c.Metadata.Output = provider.StatusContinuedAsNew, ptr("{}")
		c.OrchestratorItems = []provider.WorkItem{provider.ContinueAsNewItem{Instance: inst, Orchestration: testName, Input: "{}", Version: ptr(testVersion)}}
		return c
	})
	if w != 1 {
		t.Fatalf("the continue-as-new turn wrote %d cells, want 1", w)
	}
	checkMetrics(ctx, t, env, p, "after continue-as-new")
	if w := ackNext(ctx, t, p, spy, inst, func(*provider.OrchestrationItem) provider.TurnCommit { return lifeTurn(inst, 2, life{execs: 1}) }); w != 1 {
		t.Fatalf("the second execution's only turn wrote %d cells, want 1", w)
	}
	m := checkMetrics(ctx, t, env, p, "after the instance completed")
	if m.CompletedInstances != 1 || m.RunningInstances != 0 || m.TotalExecutions != 2 || m.TotalEvents != 10+2 {
		t.Fatalf("SystemMetrics = %+v; want one completed instance, 2 executions of 10 and 2 events", m)
	}
}

// TestSystemMetricsCountsCanceledInstances: an instance whose execution
// fails by cancellation counts as failed and canceled; one that fails
// otherwise only as failed; a delete takes both figures out.
func TestSystemMetricsCountsCanceledInstances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	end := func(inst string, details provider.ErrorDetails) {
		t.Helper()
		item := startAndFetch(ctx, t, p, inst)
		c := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.OrchestrationFailed{Details: details})}}
		c.Metadata.Status, c.Metadata.Output = provider.StatusFailed, ptr(details.DisplayMessage())
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, c), "ack of "+inst)
	}
	end("canceled", provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: "stop"}})
	end("failed", provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "boom"})
	m := checkMetrics(ctx, t, env, p, "after a cancellation and a failure")
	if m.FailedInstances != 2 || m.CanceledInstances != 1 {
		t.Fatalf("SystemMetrics = %+v; want 2 failed instances, 1 of them canceled", m)
	}
	if _, err := p.DeleteInstancesAtomic(ctx, []string{"canceled"}, false); err != nil {
		t.Fatalf("delete the canceled instance: %v", err)
	}
	m = checkMetrics(ctx, t, env, p, "after the canceled instance was deleted")
	if m.FailedInstances != 1 || m.CanceledInstances != 0 || m.TotalInstances != 1 {
		t.Fatalf("SystemMetrics = %+v; want 1 failed instance, none canceled", m)
	}
}

// TestQueueDepthsCountsMessagesOtherProcessesLock: QueueDepths leaves out
// the orchestrator messages that this provider's live locks hold, and
// counts those another process's lock holds (it reads no lock row); an
// abandon gives the messages back, an ack deletes them.
func TestQueueDepthsCountsMessagesOtherProcessesLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	b := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	depths := func(p *dynamo.Provider) int {
		t.Helper()
		d, err := p.QueueDepths(ctx)
		must(t, err, "QueueDepths")
		return d.OrchestratorQueue
	}
	const inst = "depth-locks"
	must(t, a.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
	must(t, a.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "1"}, 0), "raise")
	item, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil || len(item.Messages) != 2 {
		t.Fatalf("FetchOrchestrationItem: %+v, %v; want both messages", item, err)
	}
	if ga, gb := depths(a), depths(b); ga != 0 || gb != 2 {
		t.Fatalf("with both messages locked by a: a counts %d, b %d; want 0 and 2", ga, gb)
	}
	must(t, a.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "abandon")
	if ga, gb := depths(a), depths(b); ga != 2 || gb != 2 {
		t.Fatalf("after the abandon: a counts %d, b %d; want 2 and 2", ga, gb)
	}
	item, err = b.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem by b: %+v, %v", item, err)
	}
	if ga, gb := depths(a), depths(b); ga != 2 || gb != 0 {
		t.Fatalf("with both messages locked by b: a counts %d, b %d; want 2 and 0", ga, gb)
	}
	must(t, b.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 0)), "ack by b")
	if ga, gb := depths(a), depths(b); ga != 0 || gb != 0 {
		t.Fatalf("after the ack: a counts %d, b %d; want none", ga, gb)
	}
}
