package dynamo_test

import (
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/dynamo"
	"github.com/dynoxide/dynoxide/dynamo/dynamotest"
	"github.com/dynoxide/dynoxide/dynamo/internal/keys"
	"github.com/dynoxide/dynoxide/provider"
	"github.com/dynoxide/dynoxide/queues"
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
	// relook 0.1, 0.3, 0.9 and 1.5 s after its index showed nothing, and
	// none after the budget.
	meter.Reset()
	if w, err := p.FetchWorkItem(ctx, longLock, 3*time.Second, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch while the empty shard is looked at again: %+v, %v; want nothing", w, err)
	}
	if q := meter.Usage().Requests["Query"]; q != 4 {
		t.Errorf("a fetch waiting out the index-lag budget made %d Queries (%v), want 4 (its relooks)", q, meter.Usage().Requests)
	}
	meter.Reset()
	if w, err := p.FetchWorkItem(ctx, longLock, 500*time.Millisecond, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch after the budget: %+v, %v; want nothing", w, err)
	}
	if q := meter.Usage().Requests["Query"]; q != 0 {
		t.Errorf("a fetch after the budget was spent made %d Queries (%v), want none", q, meter.Usage().Requests)
	}
}
