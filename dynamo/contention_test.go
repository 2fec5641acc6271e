package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// spreadRecorder stands in for the random draw of a contended fetch's
// first row: it records each draw's range and always draws its last row.
type spreadRecorder struct {
	mu    sync.Mutex
	draws []int
}

func (r *spreadRecorder) draw(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draws = append(r.draws, n)
	return n - 1
}

func (r *spreadRecorder) count() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.draws...)
}

// workerShard is the worker shard of instance's activities without a
// session, of a provider with dynamotest's 4 shards.
func workerShard(instance string) int { return keys.ShardOf(keys.WorkerRoutingKey(instance, nil), 4) }

// twentyActivities returns a table where another process has started
// instance and queued its activities 2 to 21 in one turn.
func twentyActivities(t *testing.T, instance string) *dynamotest.Env {
	t.Helper()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	first := startAndFetch(ctx, t, other, instance)
	must(t, other.AckOrchestrationItem(ctx, first.LockToken, activities(instance, 20)), "first turn")
	return env
}

// claimSignals are the signals a turn sends for activities ids of
// instance: each names its row and the ready key the turn wrote, for a
// direct claim.
func claimSignals(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string, ids ...uint64) []queues.Signal {
	t.Helper()
	var sigs []queues.Signal
	for _, id := range ids {
		row, work := activityRow(ctx, t, env, instance, id)
		sigs = append(sigs, queues.Signal{Kind: queues.Worker, Shard: workerShard(instance), Instance: instance, Work: work, Claim: attrString(row, "rq_sk")})
	}
	return sigs
}

// fetchFromShard fetches an activity of p through a signal of instance's
// worker shard (its index read oldest first) and returns its id.
func fetchFromShard(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string) uint64 {
	t.Helper()
	dynamo.RequeueSignals(p, queues.Signal{Kind: queues.Worker, Shard: workerShard(instance)})
	got, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	if err != nil || got == nil {
		t.Fatalf("fetch through the shard's signal: %+v, %v; want an activity", got, err)
	}
	return got.Item.ID
}

// TestAClaimLostToAnotherProcessSpreadsTheShardsNextClaims: two processes
// whose workers read one shard's index try its oldest row first, and all
// but one lose that claim (a conditional write each) to meet again at the
// next row. A process that lost a claim to another starts its claims in
// that shard, for a while, at a row drawn among the oldest 16; after a
// while without a loss, at the oldest row again (exact FIFO for a process
// alone: TestAStaleIndexOfItsOwnClaimsKeepsTheOrder).
func TestAClaimLostToAnotherProcessSpreadsTheShardsNextClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "contended"
	env := twentyActivities(t, inst)

	clock := faults.NewFakeClock(time.Now())
	spread := &spreadRecorder{}
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
		o.SweepInterval = time.Hour
		o.Now = clock.Now
	}})
	dynamo.SetClaimSpread(p, spread.draw)

	// A third process (without the signals the turn left in the process
	// that ran it) takes activity 2; this one then loses its claim of it, and
	// takes activity 3.
	sigs := claimSignals(ctx, t, env, inst, 2, 3) // as the turn wrote them
	rival := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	if taken, err := rival.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || taken == nil || taken.Item.ID != 2 {
		t.Fatalf("rival process's fetch: %+v, %v; want activity 2", taken, err)
	}
	dynamo.RequeueSignals(p, sigs...)
	if got, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || got == nil || got.Item.ID != 3 {
		t.Fatalf("fetch with the two signals: %+v, %v; want activity 3", got, err)
	}
	if draws := spread.count(); len(draws) != 0 {
		t.Fatalf("direct claims drew their first row (%v)", draws)
	}

	// Contended: activities 4 to 21 are ready; the fetch draws among the
	// oldest 16 (4 to 19) and starts at the one drawn, the last. It may
	// take session work, as a runtime's fetches do.
	dynamo.RequeueSignals(p, queues.Signal{Kind: queues.Worker, Shard: workerShard(inst)})
	got, err := p.FetchWorkItem(ctx, longLock, 0, &provider.SessionFetchConfig{OwnerID: "w1", LockTimeout: longLock}, provider.AnyTag())
	if err != nil || got == nil {
		t.Fatalf("contended fetch: %+v, %v; want an activity", got, err)
	}
	if id := got.Item.ID; id != 19 {
		t.Errorf("fetch after a claim lost to another process took activity %d, want 19 (the row drawn)", id)
	}
	if draws := spread.count(); len(draws) != 1 || draws[0] != 16 {
		t.Errorf("draws of the contended fetch: %v, want one among 16 rows", draws)
	}

	// A window later without a loss: the oldest first again.
	clock.Advance(time.Second)
	if id := fetchFromShard(ctx, t, p, inst); id != 4 {
		t.Errorf("fetch a second after the loss took activity %d, want 4, the oldest", id)
	}
	if draws := spread.count(); len(draws) != 1 {
		t.Errorf("the fetch after the window drew its first row (%v)", draws)
	}
}

// TestAStaleIndexOfItsOwnClaimsKeepsTheOrder: on AWS the ready index
// lags, and may show a row this process has already claimed as ready.
// That is no other process competing: the process's next claims still
// take the oldest row first, and they pass over the rows it holds instead
// of claiming them again (a failed conditional write each).
func TestAStaleIndexOfItsOwnClaimsKeepsTheOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "own-stale-claim"
	env := twentyActivities(t, inst)

	in := faults.New(41)
	// Every query of the ready index sees it as the first query of the
	// shard found it: the rows this process claims since still look ready.
	in.SetIndexLag(time.Hour, time.Hour)
	meter := &dynamotest.Meter{}
	spread := &spreadRecorder{}
	p := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval = time.Hour
		o.Client = in.DynamoDB(o.Client)
	}})
	dynamo.SetClaimSpread(p, spread.draw)

	for want := uint64(2); want <= 4; want++ {
		if id := fetchFromShard(ctx, t, p, inst); id != want {
			t.Fatalf("fetch %d took activity %d, want %d, the oldest not yet taken", want-1, id, want)
		}
	}
	// The index showed the fetches the rows they had claimed: 2 and 3 were
	// passed over, where they were tried again, and lost, before 3 and 4
	// were won.
	if n := meter.Usage().Requests["UpdateItem"]; n != 3 {
		t.Errorf("the three fetches made %d claims, want 3 (none of a row the process holds)", n)
	}
	if draws := spread.count(); len(draws) != 0 {
		t.Errorf("fetches that lost claims only to their own process drew their first row (%v)", draws)
	}
}
