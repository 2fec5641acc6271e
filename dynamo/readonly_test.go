package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests read instances through a client that may only read, as an
// IAM policy granting GetItem, Query, BatchGetItem and Scan would allow,
// while a large turn of the instance is at each step of its protocol
// (docs/design.md §5, reads during a large turn): every read API answers
// with the history and records as of the last published turn, and none
// sends a write.

// readOnlyOps are the operations the read-only client lets through.
var readOnlyOps = map[string]bool{"GetItem": true, "Query": true, "BatchGetItem": true, "Scan": true}

// writeRefuser is an SDK middleware that answers every operation but
// readOnlyOps with AccessDeniedException, as IAM does, without sending
// it, and counts what it let through and what it refused.
type writeRefuser struct {
	mu      sync.Mutex
	sent    map[string]int
	refused map[string]int
}

// attach installs the refuser on a DynamoDB client's options.
func (w *writeRefuser) attach(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ReadOnlyPolicy",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				w.mu.Lock()
				allowed := readOnlyOps[op]
				if allowed {
					w.sent[op]++
				} else {
					w.refused[op]++
				}
				w.mu.Unlock()
				if !allowed {
					return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{
						Code: "AccessDeniedException", Message: "not authorized to perform: dynamodb:" + op, Fault: smithy.FaultClient,
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// counts returns what w let through and refused since the last call, and
// starts counting anew.
func (w *writeRefuser) counts() (sent, refused map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent, refused = w.sent, w.refused
	w.sent, w.refused = map[string]int{}, map[string]int{}
	return sent, refused
}

// readOnlyProvider returns a provider on env whose client may only read,
// and its refuser. A write through it is refused and counted. With in, the
// client's requests also go through in.
func readOnlyProvider(ctx context.Context, t *testing.T, env *dynamotest.Env, in *faults.Injector) (*dynamo.Provider, *writeRefuser) {
	t.Helper()
	w := &writeRefuser{sent: map[string]int{}, refused: map[string]int{}}
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		o.Client = env.Endpoints.DynamoDB(env.AWS, w.attach)
		if in != nil {
			o.Client = in.DynamoDB(o.Client)
		}
	}})
	err := p.EnqueueForOrchestrator(ctx, startItem("read-only-probe"), 0)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("a write through the read-only client: %v; want AccessDeniedException", err)
	}
	if _, refused := w.counts(); len(refused) == 0 {
		t.Fatal("the refused write was not counted")
	}
	return p, w
}

// readOnlyTurnSize is the number of activities of the large turn: more
// actions than one transaction takes, and more than one staging row.
const readOnlyTurnSize = 150

// readOnlyTurns returns the first turn of instance (a small one) and the
// large turn after it, which takes one raised event, sets a KV key and the
// custom status, schedules readOnlyTurnSize activities and starts a
// sub-orchestration.
func readOnlyTurns(instance string) (first, large provider.TurnCommit) {
	s1, s2 := "s1", "s2"
	first = provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		started(instance),
		ev(2, instance, provider.KeyValueSet{Key: "k", Value: "v1", LastUpdatedAtMs: 1}),
		ev(3, instance, provider.CustomStatusUpdated{Status: &s1}),
	}}
	large = provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		ev(4, instance, provider.ExternalEvent{Name: "e", Data: "d"}),
	}}
	for i := range readOnlyTurnSize {
		id := uint64(5 + i)
		large.HistoryDelta = append(large.HistoryDelta, ev(id, instance, provider.ActivityScheduled{Name: "A", Input: fmt.Sprint(i)}))
		large.WorkerItems = append(large.WorkerItems, provider.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: "A", Input: fmt.Sprint(i)})
	}
	next := uint64(5 + readOnlyTurnSize)
	large.HistoryDelta = append(large.HistoryDelta,
		ev(next, instance, provider.KeyValueSet{Key: "k", Value: "v2", LastUpdatedAtMs: 2}),
		ev(next+1, instance, provider.CustomStatusUpdated{Status: &s2}))
	parentEvent := next + 1
	large.OrchestratorItems = append(large.OrchestratorItems, provider.StartOrchestrationItem{
		Instance: instance + "-child", Orchestration: testName, Input: "{}", Version: ptr(testVersion),
		ParentInstance: &instance, ParentID: &parentEvent, ExecutionID: 1,
	})
	return first, large
}

// largeTurnFetched runs instance's first turn on writer, raises the event
// its large turn takes, and fetches that turn: the item to ack with large.
func largeTurnFetched(ctx context.Context, t *testing.T, writer *dynamo.Provider, instance string) (item *provider.OrchestrationItem, large provider.TurnCommit) {
	t.Helper()
	first, large := readOnlyTurns(instance)
	item = startAndFetch(ctx, t, writer, instance)
	must(t, writer.AckOrchestrationItem(ctx, item.LockToken, first), "first turn")
	must(t, writer.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: instance, Name: "e", Data: "d"}, 0), "raise")
	item, err := writer.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil || len(item.History) != 3 {
		t.Fatalf("fetch of the large turn: %+v, %v", item, err)
	}
	return item, large
}

// instanceView is what a reader sees of an instance through every read
// API that answers about it.
type instanceView struct {
	events, executionEvents int
	lastEvent               uint64
	status, customStatus    string
	customVersion           uint64
	kv, kvAll               string
	statsEvents, statsKeys  uint64
	executions              []uint64
	latest                  uint64
	listed                  bool
	children                []string
}

// wantView is the view of the instance after turns of events in all,
// the last of which left custom status status (its version-th) and KV
// value kv, and started the sub-orchestrations children.
func wantView(events int, status string, version uint64, kv string, children ...string) instanceView {
	return instanceView{children: children,
		events: events, executionEvents: events, lastEvent: uint64(events),
		status: provider.StatusRunning, customStatus: status, customVersion: version,
		kv: kv, kvAll: "k=" + kv, statsEvents: uint64(events), statsKeys: 1,
		executions: []uint64{1}, latest: 1, listed: true,
	}
}

// readView reads instance through every read API of p. The calls that do
// not answer about one instance (metrics, queue depths) only have to
// succeed.
func readView(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string) instanceView {
	t.Helper()
	var v instanceView
	history, err := p.Read(ctx, instance)
	must(t, err, "Read")
	v.events = len(history)
	for i, e := range history {
		if e.EventID != uint64(i+1) {
			t.Fatalf("Read: event %d has id %d", i, e.EventID)
		}
		v.lastEvent = e.EventID
	}
	for _, read := range []func(context.Context, string) ([]provider.Event, error){
		func(ctx context.Context, id string) ([]provider.Event, error) { return p.ReadWithExecution(ctx, id, 1) },
		p.ReadHistory,
		func(ctx context.Context, id string) ([]provider.Event, error) {
			return p.ReadHistoryWithExecutionID(ctx, id, 1)
		},
	} {
		again, err := read(ctx, instance)
		must(t, err, "read history")
		if len(again) != len(history) {
			t.Fatalf("the history reads disagree: %d events and %d", len(history), len(again))
		}
	}
	info, err := p.InstanceInfo(ctx, instance)
	must(t, err, "InstanceInfo")
	v.status = info.Status
	exec, err := p.ExecutionInfo(ctx, instance, 1)
	must(t, err, "ExecutionInfo")
	v.executionEvents = exec.EventCount
	cs, err := p.CustomStatus(ctx, instance, 0)
	must(t, err, "CustomStatus")
	if cs != nil && cs.Status != nil {
		v.customStatus, v.customVersion = *cs.Status, cs.Version
	}
	readKV(ctx, t, p, instance, &v)
	v.executions, err = p.ListExecutions(ctx, instance)
	must(t, err, "ListExecutions")
	v.latest, err = p.LatestExecutionID(ctx, instance)
	must(t, err, "LatestExecutionID")
	readLists(ctx, t, p, instance, &v)
	return v
}

// readKV reads instance's KV store and stats into v.
func readKV(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, v *instanceView) {
	t.Helper()
	value, _, err := p.KVValue(ctx, instance, "k")
	must(t, err, "KVValue")
	v.kv = value
	all, err := p.KVValues(ctx, instance)
	must(t, err, "KVValues")
	var pairs []string
	for k, x := range all {
		pairs = append(pairs, k+"="+x)
	}
	slices.Sort(pairs)
	v.kvAll = strings.Join(pairs, ",")
	stats, err := p.InstanceStats(ctx, instance)
	must(t, err, "InstanceStats")
	v.statsEvents, v.statsKeys = stats.HistoryEventCount, stats.KVUserKeyCount
}

// readLists runs the reads of many instances and of the instance's
// relatives, and records whether the instance is listed.
func readLists(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, v *instanceView) {
	t.Helper()
	ids, err := p.ListInstances(ctx)
	must(t, err, "ListInstances")
	v.listed = slices.Contains(ids, instance)
	_, err = p.ListInstancesByStatus(ctx, provider.StatusRunning)
	must(t, err, "ListInstancesByStatus")
	_, err = p.ListInstancesPage(ctx, provider.InstanceQuery{})
	must(t, err, "ListInstancesPage")
	v.children, err = p.ListChildren(ctx, instance)
	must(t, err, "ListChildren")
	_, err = p.ParentID(ctx, instance)
	must(t, err, "ParentID")
	_, err = p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	_, err = p.QueueDepths(ctx)
	must(t, err, "QueueDepths")
}

// checkReadOnly reads instance through r, compares what it sees with want,
// and checks that r sent reads and no write.
func checkReadOnly(ctx context.Context, t *testing.T, r *dynamo.Provider, w *writeRefuser, instance, when string, want instanceView) {
	t.Helper()
	got := readView(ctx, t, r, instance)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: the read-only client sees\n %+v\nwant\n %+v", when, got, want)
	}
	sent, refused := w.counts()
	if len(refused) != 0 {
		t.Errorf("%s: the reads attempted writes %v (refused)", when, refused)
	}
	if len(sent) == 0 {
		t.Fatalf("%s: no request went through the read-only client", when)
	}
}

// isApply picks a large turn's apply transaction: its first action checks
// that the lock row holds the turn, or, in the last one, releases the lock
// on that condition.
func isApply(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.TransactWriteItemsInput)
	if !ok || len(in.TransactItems) == 0 {
		return false
	}
	switch first := in.TransactItems[0]; {
	case first.ConditionCheck != nil:
		return aws.ToString(first.ConditionCheck.ConditionExpression) == "#turn = :tid"
	case first.Update != nil:
		return aws.ToString(first.Update.ConditionExpression) == "#turn = :tid"
	}
	return false
}

// nthMatch picks the n-th request that match picks.
func nthMatch(n int64, match func(faults.Request) bool) func(faults.Request) bool {
	var seen atomic.Int64
	return func(r faults.Request) bool { return match(r) && seen.Add(1) == n }
}

// stagingRows counts the staging rows in instance's partition.
func stagingRows(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) int {
	t.Helper()
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(env.Table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)},
			":t":  &types.AttributeValueMemberS{Value: keys.StagePrefix},
		},
		ConsistentRead: aws.Bool(true),
		Select:         types.SelectCount,
	})
	must(t, err, "count staging rows")
	return int(out.Count)
}

// readOnlyStep is the step of the large turn's protocol at which the
// reads run.
type readOnlyStep struct {
	name string
	// hold picks the request of the committer that waits while the
	// instance is read.
	hold func(faults.Request) bool
	// published says whether the turn is published at that step.
	published bool
	// staged is the number of staging rows left at that step (the turn
	// takes two).
	staged int
	// dies makes the committer stop there for good (its context ends).
	dies bool
}

// TestReadOnlyClientDuringALargeTurn reads an instance through a client
// that may not write while its large turn is (a) staged but not
// committed (the committer stalled before its commit), (b) committed but
// not applied, or half applied (the last row's apply releases the lock),
// and (c) left half applied by a committer that died. Each read API
// answers as of the last published turn (the turn invisible before its
// commit, whole after it) and none attempts a write. After (c), a fetch by a process that may
// write finishes the turn (fetches take the lock and may write) and the
// read-only client sees the same.
func TestReadOnlyClientDuringALargeTurn(t *testing.T) {
	t.Parallel()
	for _, step := range []readOnlyStep{
		{name: "StagedNotCommitted", hold: isLockCommit, staged: 2},
		{name: "CommittedNotApplied", hold: nthMatch(1, isApply), published: true, staged: 2},
		{name: "HalfApplied", hold: nthMatch(2, isApply), published: true, staged: 1},
		{name: "CommitterDiedHalfApplied", hold: nthMatch(2, isApply), published: true, staged: 1, dies: true},
	} {
		t.Run(step.name, func(t *testing.T) {
			t.Parallel()
			runReadOnlyStep(t, step)
		})
	}
}

// runReadOnlyStep runs one case of TestReadOnlyClientDuringALargeTurn.
func runReadOnlyStep(t *testing.T, step readOnlyStep) {
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(21)
	clock := faults.NewFakeClock(time.Now())
	writer := faultyOn(t, env, in, clock, dynamotest.Config{ShortPoll: true, Options: heldAcks})
	reader, refuser := readOnlyProvider(ctx, t, env, nil)
	inst := "read-only-" + step.name
	item, large := largeTurnFetched(ctx, t, writer, inst)
	before := wantView(3, "s1", 1, "v1")
	checkReadOnly(ctx, t, reader, refuser, inst, "after the first turn", before)

	gate := faults.NewGate()
	defer gate.Release()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Match: step.hold, Fault: faults.Hold(gate)})
	ackCtx, die := context.WithCancel(ctx)
	defer die()
	acked := make(chan error, 1)
	go func() { acked <- writer.AckOrchestrationItem(ackCtx, item.LockToken, large) }()
	must(t, gate.Wait(ctx, 1), "the committer at its gate")
	if n := stagingRows(ctx, t, env, inst); n != step.staged {
		t.Fatalf("%d staging rows while the turn is under way; want %d", n, step.staged)
	}
	if step.dies {
		die()
		if err := <-acked; err == nil {
			t.Fatal("the ack of a committer that died mid-apply succeeded")
		}
	}
	after := wantView(3+1+readOnlyTurnSize+2, "s2", 2, "v2", inst+"-child")
	want := before
	if step.published {
		want = after
	}
	checkReadOnly(ctx, t, reader, refuser, inst, "during the large turn", want)
	if _, turn := lockRow(ctx, t, env, inst)["turn"]; turn != step.published {
		t.Fatalf("after the reads the lock row holds a pending turn: %v; want %v (readers finish nothing)", turn, step.published)
	}
	if step.dies {
		finishByFetch(ctx, t, env, clock, inst, after.events)
	} else {
		gate.Release()
		must(t, <-acked, "the large ack")
	}
	checkReadOnly(ctx, t, reader, refuser, inst, "after the large turn", after)
	if n := stagingRows(ctx, t, env, inst); n != 0 {
		t.Fatalf("%d staging rows left after the turn finished", n)
	}
}

// finishByFetch fetches instance, whose committer died with its large
// turn half applied, from a process that may write, once the dead
// committer's lease is over: the fetch finishes the turn and hands out its
// whole history (events).
func finishByFetch(ctx context.Context, t *testing.T, env *dynamotest.Env, clock *faults.Clock, instance string, events int) {
	t.Helper()
	p := faultyOn(t, env, faults.New(22), clock, dynamotest.Config{ShortPoll: true})
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: instance, Name: "e2", Data: "d"}, 0), "raise after the committer died")
	clock.Advance(longLock + time.Minute)
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil || len(item.History) != events || len(item.Messages) != 1 {
		t.Fatalf("fetch after the committer died: %+v, %v; want the whole turn (%d events) and the new event", item, err, events)
	}
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "release the fetched turn")
}

// TestReadsOfAPendingLargeTurnCost: a read that meets no pending large
// turn costs what it did (Read: the latest execution's record and the
// history, two Queries; KVValues: one Query, of the KV rows and the lock
// row after them; KVValue: one GetItem), and one that meets a committed
// turn not yet applied costs two Queries more (the turn's staging rows,
// and its range again), and writes nothing.
func TestReadsOfAPendingLargeTurnCost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, writer := faulty(t, 23, heldAcks)
	meter := &dynamotest.Meter{}
	reader := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Meter: meter})
	const inst = "read-cost"
	item, large := largeTurnFetched(ctx, t, writer, inst)

	cost := func(when string, wantEvents int, want map[string]map[string]int) {
		t.Helper()
		wantKV := "v1"
		if wantEvents > 3 {
			wantKV = "v2"
		}
		kvRead := func(value string, err error) (int, error) {
			if err == nil && value != wantKV {
				return 0, fmt.Errorf("read %q, want %q", value, wantKV)
			}
			return wantEvents, err
		}
		reads := map[string]func() (int, error){
			"Read": func() (int, error) { h, err := reader.Read(ctx, inst); return len(h), err },
			"KVValues": func() (int, error) {
				kv, err := reader.KVValues(ctx, inst)
				return kvRead(kv["k"], err)
			},
			"KVValue": func() (int, error) {
				v, _, err := reader.KVValue(ctx, inst, "k")
				return kvRead(v, err)
			},
		}
		for name, read := range reads {
			meter.Reset()
			n, err := read()
			must(t, err, when+": "+name)
			if n != wantEvents {
				t.Fatalf("%s: %s read %d events, want %d", when, name, n, wantEvents)
			}
			u := meter.Reset()
			t.Logf("%s: %s made %v, %.1f read units", when, name, u.Requests, u.TotalCapacity())
			if fmt.Sprint(u.Requests) != fmt.Sprint(want[name]) {
				t.Errorf("%s: %s made %v, want %v", when, name, u.Requests, want[name])
			}
		}
	}
	cost("before the large turn", 3, map[string]map[string]int{
		"Read": {"Query": 2}, "KVValues": {"Query": 1}, "KVValue": {"GetItem": 1},
	})
	gate := faults.NewGate()
	defer gate.Release()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Match: isApply, Fault: faults.Hold(gate)})
	acked := make(chan error, 1)
	go func() { acked <- writer.AckOrchestrationItem(ctx, item.LockToken, large) }()
	must(t, gate.Wait(ctx, 1), "the first apply at its gate")
	cost("while the committed turn waits for its apply", 3+1+readOnlyTurnSize+2, map[string]map[string]int{
		"Read": {"Query": 4}, "KVValues": {"Query": 3}, "KVValue": {"GetItem": 1},
	})
	gate.Release()
	must(t, <-acked, "the large ack")
	cost("after the large turn", 3+1+readOnlyTurnSize+2, map[string]map[string]int{
		"Read": {"Query": 2}, "KVValues": {"Query": 1}, "KVValue": {"GetItem": 1},
	})
}

// isStagingRead picks a Query of a large turn's staging rows.
func isStagingRead(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.QueryInput)
	if !ok {
		return false
	}
	from, _ := in.ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS)
	return from != nil && strings.HasPrefix(from.Value, keys.StagePrefix)
}

// TestReadMeetsALargeTurnThatFinishesMeanwhile: a read-only Read meets
// the mark of a committed large turn, and the turn is applied and finished
// before the reader's Query of its staging rows: the reader finds none,
// reads the history again, finds the turn finished and returns that read,
// the whole turn, without a write.
func TestReadMeetsALargeTurnThatFinishesMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, writer := faulty(t, 24, heldAcks)
	readerFaults := faults.New(25)
	reader, refuser := readOnlyProvider(ctx, t, env, readerFaults)
	const inst = "read-only-finishing"
	item, large := largeTurnFetched(ctx, t, writer, inst)
	applyGate, stagingGate := faults.NewGate(), faults.NewGate()
	defer applyGate.Release()
	defer stagingGate.Release()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Match: isApply, Fault: faults.Hold(applyGate)})
	readerFaults.Add(faults.Rule{Ops: []string{faults.OpQuery}, Rate: 1, Count: 1, Match: isStagingRead, Fault: faults.Hold(stagingGate)})
	acked := make(chan error, 1)
	go func() { acked <- writer.AckOrchestrationItem(ctx, item.LockToken, large) }()
	must(t, applyGate.Wait(ctx, 1), "the first apply at its gate")

	type result struct {
		events []provider.Event
		err    error
	}
	read := make(chan result, 1)
	go func() {
		h, err := reader.Read(ctx, inst)
		read <- result{h, err}
	}()
	must(t, stagingGate.Wait(ctx, 1), "the reader's staging read at its gate (it met the mark)")
	applyGate.Release()
	must(t, <-acked, "the large ack")
	if n := stagingRows(ctx, t, env, inst); n != 0 {
		t.Fatalf("%d staging rows after the ack", n)
	}
	stagingGate.Release()
	got := <-read
	must(t, got.err, "Read")
	if want := 3 + 1 + readOnlyTurnSize + 2; len(got.events) != want {
		t.Fatalf("Read of a turn that finished meanwhile: %d events, want %d", len(got.events), want)
	}
	if _, refused := refuser.counts(); len(refused) != 0 {
		t.Fatalf("the read attempted writes %v", refused)
	}
}
