package dynamo_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
	"github.com/duradyn/duradyn/tables"
)

// TestStaleShardSignalHoldsUpNoOtherShard: a signal naming no row (a
// turn's, for several activities) reaches every fetch of the process, and
// the copies of those that did not take the activities find their shard
// empty. One such copy ahead of a signal for work in another shard made
// the fetch look at the empty shard again and again, for the index-lag
// budget (1.5 s and four more Queries), before the other shard; two worker
// slots doing so left a runtime idle beside its work long enough for
// RunUntilIdle to stop. Now every signalled shard is queried once: the
// work is taken with two Queries, and the empty shard is looked at again by
// the fetches that follow, until the budget is spent (indexlag.go).
func TestStaleShardSignalHoldsUpNoOtherShard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const shards = 16
	env := dynamotest.NewEnv(t, false)
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Shards: shards, Meter: meter})
	// Another process writes the activity; its signal stays there.
	writer := env.NewProvider(t, dynamotest.Config{Shards: shards})
	const inst = "work-in-another-shard"
	must(t, writer.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	shard := keys.ShardOf(keys.WorkerRoutingKey(inst, nil), shards)
	empty := (shard + 1) % shards
	stale := queues.Signal{Kind: queues.Worker, Shard: empty, Instance: "emptied"}
	dynamo.RequeueSignals(p, stale, queues.Signal{Kind: queues.Worker, Shard: shard, Instance: inst})

	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	if err != nil || w == nil || w.Item.Instance != inst {
		t.Fatalf("fetch with a stale signal ahead of one for work: %+v, %v; want the activity", w, err)
	}
	if q := meter.Usage().Requests["Query"]; q != 2 {
		t.Errorf("the fetch made %d Queries, want 2 (one per signalled shard, none again for the empty one)", q)
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 1, Result: "r"}), "ack")

	// The empty shard is looked at again, by the fetches that follow: a
	// relook 0.1 s after its index showed nothing, then after twice the
	// time since (at 0.3, 0.9 and 1.5 s when each look is made on time;
	// fewer when a fetch comes to one late), and none after the budget.
	meter.Reset()
	if w, err := p.FetchWorkItem(ctx, longLock, 3*time.Second, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch while the empty shard is looked at again: %+v, %v; want nothing", w, err)
	}
	if q := meter.Usage().Requests["Query"]; q < 1 || q > 4 {
		t.Errorf("a fetch waiting out the index-lag budget made %d Queries (%v), want 1 to 4 (its relooks)", q, meter.Usage().Requests)
	}
	meter.Reset()
	if w, err := p.FetchWorkItem(ctx, longLock, 500*time.Millisecond, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch after the budget: %+v, %v; want nothing", w, err)
	}
	if q := meter.Usage().Requests["Query"]; q != 0 {
		t.Errorf("a fetch after the budget was spent made %d Queries (%v), want none", q, meter.Usage().Requests)
	}
}

// TestShardSignalPassedOverDuringATryIsLookedAtAgain: a fetch that comes
// to a shard signal while another fetch of the process tries the shard
// passes over it, and the try may have read the index just before the
// signal's rows were written. The signal was dropped, and the rows waited
// for a sweep (an hour apart here). Now the fetch that ends the try has
// the shard looked at again: the waiting fetch takes the activity.
func TestShardSignalPassedOverDuringATryIsLookedAtAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	in := faults.New(11)
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: 1, Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(o.Client)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	// The first fetch sweeps; none after it does.
	if got, err := p.FetchWorkItem(ctx, longLock, 10*time.Millisecond, nil, provider.AnyTag()); err != nil || got != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", got, err)
	}
	// The writer's signals stay in its process.
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})

	// The first fetch tries the shard for a signal naming a row that is
	// gone; its Query reads the index, and its answer is held.
	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpQuery}, Rate: 1, Count: 1, Fault: faults.HoldResponse(gate)})
	dynamo.RequeueSignals(p, queues.Signal{Kind: queues.Worker, Shard: 0, Instance: "gone", Work: keys.WorkerSK(1, 99)})
	first := make(chan *provider.LockedWorkItem, 1)
	go func() {
		w, err := p.FetchWorkItem(ctx, longLock, 100*time.Millisecond, nil, provider.AnyTag())
		if err != nil {
			t.Errorf("first fetch: %v", err)
		}
		first <- w
	}()
	select {
	case <-gate.Arrived():
	case <-ctx.Done():
		t.Fatal("the first fetch's Query never came")
	}
	// Meanwhile the activity is written, and its shard signal reaches a
	// second fetch, which passes over the shard the first one tries.
	const inst = "written-during-the-try"
	must(t, writer.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	dynamo.RequeueSignals(p, queues.Signal{Kind: queues.Worker, Shard: 0, Instance: inst})
	second := make(chan *provider.LockedWorkItem, 1)
	go func() {
		w, err := p.FetchWorkItem(ctx, longLock, 5*time.Second, nil, provider.AnyTag())
		if err != nil {
			t.Errorf("second fetch: %v", err)
		}
		second <- w
	}()
	// The second fetch has taken the signal and waits (or is about to):
	// release the first fetch's Query, which read the index before the
	// activity was written.
	for dynamo.WaitingFetches(p, queues.Worker) < 1 {
		select {
		case <-ctx.Done():
			t.Fatal("the second fetch never waited")
		case <-time.After(5 * time.Millisecond):
		}
	}
	gate.Release()
	if w := <-first; w != nil {
		t.Fatalf("the first fetch took %+v; want nothing (its Query read the index before the write)", w.Item)
	}
	if w := <-second; w == nil || w.Item.Instance != inst {
		t.Fatalf("the second fetch got %+v; want the activity written during the first one's try", w)
	}
}

// TestShardSignalAheadOfItsIndexFindsItsRow: a signal naming no row reaches
// a fetch before the ready index shows the activity it announces (the
// index lags 400 ms here; on AWS it is eventually consistent). The fetch's
// Query shows nothing, and the shard is looked at again by relooks within
// the index-lag budget: the waiting fetch takes the activity, though no
// sweep comes for an hour.
func TestShardSignalAheadOfItsIndexFindsItsRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	in := faults.New(12)
	in.SetIndexLag(400*time.Millisecond, 400*time.Millisecond, tables.IndexReady)
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(o.Client)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	// The first fetch sweeps; none after it does.
	if got, err := p.FetchWorkItem(ctx, longLock, 10*time.Millisecond, nil, provider.AnyTag()); err != nil || got != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", got, err)
	}
	// The lagging index knows its past through the queries made of it: one
	// of the shard before the write is the view it shows for 400 ms.
	if _, err := in.DynamoDB(env.DB).Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(env.Table),
		IndexName:                 aws.String(tables.IndexReady),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": tables.AttrReadyPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.ReadyWorkerPK(0)}},
	}); err != nil {
		t.Fatalf("query of the empty shard: %v", err)
	}
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	const inst = "ahead-of-its-index"
	must(t, writer.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	dynamo.RequeueSignals(p, queues.Signal{Kind: queues.Worker, Shard: 0, Instance: inst})

	meter.Reset()
	lagged := in.Stats().Faults[faults.KindLaggedQuery]
	w, err := p.FetchWorkItem(ctx, longLock, 5*time.Second, nil, provider.AnyTag())
	if err != nil || w == nil || w.Item.Instance != inst {
		t.Fatalf("fetch woken by a shard signal ahead of the index: %+v, %v; want the activity", w, err)
	}
	if got := in.Stats().Faults[faults.KindLaggedQuery] - lagged; got < 2 {
		t.Errorf("%d Queries were served from the lagging index, want at least 2 (the signal's and a relook's): the test tests nothing", got)
	}
	if q := meter.Usage().Requests["Query"]; q < 2 || q > 5 {
		t.Errorf("the fetch made %d Queries, want 2 to 5 (the signal's and at most 4 relooks)", q)
	}
}
