package dynamo_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// TestLostDirectClaimIsNotTriedAgain: a fetch holds signals addressing two
// activity rows for a claim (Signal.Claim), the older of which another
// process has claimed. The fetch loses that claim and wins the newer row.
// The signal of the row it lost must not go back to the process's list:
// every later fetch of the process would try it first (its claim is the
// oldest) and lose it again, one UpdateItem each, and more such signals
// pile up behind it. In a two-process benchmark with work waiting, that
// was four claims lost for each one won.
func TestLostDirectClaimIsNotTriedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	meter := &dynamotest.Meter{}
	loser := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) { o.SweepInterval = time.Hour }})
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "lost-claim"
	first := startAndFetch(ctx, t, other, inst)
	must(t, other.AckOrchestrationItem(ctx, first.LockToken, activities(inst, 2)), "first turn")

	// The signals a turn sends for its activities: each names its row and
	// the ready key the turn wrote, for a direct claim.
	var sigs []queues.Signal
	for _, id := range []uint64{2, 3} {
		row, work := activityRow(ctx, t, env, inst, id)
		sigs = append(sigs, queues.Signal{Kind: queues.Worker, Shard: keys.ShardOf(inst, 4), Instance: inst, Work: work, Claim: attrString(row, "rq_sk")})
	}
	// The other process takes the older activity.
	if taken, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || taken == nil || taken.Item.ID != 2 {
		t.Fatalf("other process's fetch: %+v, %v; want activity 2", taken, err)
	}
	dynamo.RequeueSignals(loser, sigs...)
	got, err := loser.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	if err != nil || got == nil || got.Item.ID != 3 {
		t.Fatalf("fetch with both signals: %+v, %v; want activity 3", got, err)
	}
	if n := meter.Usage().Requests["UpdateItem"]; n != 2 {
		t.Fatalf("fetch with both signals made %d UpdateItem calls, want 2 (the claim lost, the claim won)", n)
	}
	// Nothing is left to take: the next fetch sweeps, finds both rows
	// claimed, and claims nothing.
	if item, err := loser.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || item != nil {
		t.Fatalf("next fetch: %+v, %v; want nothing", item, err)
	}
	if n := meter.Usage().Requests["UpdateItem"]; n != 2 {
		t.Errorf("the next fetch made %d more claims, want none: the signal of the claim lost was tried again", n-2)
	}
}
