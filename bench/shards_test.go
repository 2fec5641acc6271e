package bench_test

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/bench/scenario"
)

// shardsTestConfig is the smaller run of Shards16 the test makes: 4 shards
// and 400 instances, 100 a shard on average, whose random ids put between
// 92 and 104 on a shard (a shard's count varies by about ±9 % from one set
// of 400 random ids to another).
var shardsTestConfig = scenario.ShardsConfig{Shards: 4, ChainSteps: 10, Instances: 400, FanOut: 20}

// TestShardsSpreadIndexWritesEvenly runs the Shards scenario on a table of
// 4 shards and checks what the meter saw land on each partition: the index
// writes of 400 one-step chains fall on every shard, the busiest and the
// idlest within 20 % of the mean; a chain's step writes its instance's
// partition and its worker ready-index shard; the hot instance's fan-out puts
// its busiest partition on one of its own keys.
func TestShardsSpreadIndexWritesEvenly(t *testing.T) {
	c := shardsTestConfig
	env := newEnv(t, false)
	results, err := scenario.Shards(t.Context(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results, want 3 (chain, spread, hot instance)", len(results))
	}
	chain, spread, hot := results[0], results[1], results[2]
	for i, want := range []int{c.ChainSteps, c.Instances, c.FanOut} {
		r := results[i]
		if r.Scenario != scenario.ShardsName(c.Shards) || r.Activities != want || strings.Contains(r.Notes, "FAILED") {
			t.Fatalf("%s: scenario %q, %d activities (%s); want %q, %d", r.System, r.Scenario, r.Activities, r.Notes, scenario.ShardsName(c.Shards), want)
		}
		checkPartitionsAddUp(t, r)
	}

	mean := spread.Extra[scenario.ExtraShardMean]
	maxDev, minDev := spread.Extra[scenario.ExtraShardMaxDev], spread.Extra[scenario.ExtraShardMinDev]
	t.Logf("index WCU per shard: mean %.0f, max %+.1f %%, min %+.1f %%, mean |deviation| %.1f %%",
		mean, maxDev, minDev, spread.Extra[scenario.ExtraShardMeanAbsDev])
	// Each instance writes its shard's ready partitions (its start, its
	// activity and its completion) and instances partition (its listing).
	if perInstance := mean * float64(c.Shards) / float64(c.Instances); perInstance < 6 {
		t.Errorf("%.1f index WCU per instance, want at least 6", perInstance)
	}
	if maxDev > 20 || minDev < -20 || minDev > 0 || maxDev < 0 {
		t.Errorf("index writes per shard from %+.1f %% to %+.1f %% of the mean, want within ±20 %%", minDev, maxDev)
	}

	// A step writes its instance's control rows, history and activity slot
	// (data layout 6); no activity row, and no orchestrator entry but the
	// start's.
	if chain.Extra[scenario.ExtraWCUInstance] < 1 {
		t.Errorf("chain: %s = %v, want at least 1", scenario.ExtraWCUInstance, chain.Extra[scenario.ExtraWCUInstance])
	}
	checkSlotEntryKept(t, chain, c.ChainSteps)
	for _, k := range []string{scenario.ExtraWCUWorkerRows, scenario.ExtraWCUReadyOrch} {
		if chain.Extra[k] >= 1 {
			t.Errorf("chain: %s = %v, want less than 1 (handed activities run in the slot)", k, chain.Extra[k])
		}
	}
	if !strings.Contains(hot.Notes, "busiest partition key: table I#fan-out") && !strings.Contains(hot.Notes, "busiest partition key: table W#fan-out") &&
		!strings.Contains(hot.Notes, "busiest partition key: ready index") {
		t.Errorf("hot instance: notes %q do not name one of its partitions as the busiest", hot.Notes)
	}
	if got, want := hot.Extra[scenario.ExtraBusiestSeconds], hot.Extra[scenario.ExtraBusiestWCU]/1000; got != want || got <= 0 {
		t.Errorf("hot instance: %s = %v, want %v (its WCU over 1,000 a second)", scenario.ExtraBusiestSeconds, got, want)
	}
}

// checkSlotEntryKept checks the rule of a handed slot's ready entry
// (docs/design.md): the entry, in its shard's worker key, is written by the
// first step (1 WCU) and kept by the next ones while it covers their
// leases, a second at most past the claim that last moved it; a move
// deletes one index entry and inserts another (2 WCU). So over a chain
// spanning s seconds it is written once, moved at most s times and deleted
// at the end: 2s+2 WCU, and 2s+4 with a move to spare for the steps' claims
// coming a little after their schedule. The span is the run's own: on a machine too slow for the
// steps to come within the second, the rule allows a move a step and the
// run cannot tell it from a regression, which the test reports as such: the
// bound must stay under the 2 WCU a step of an entry moved every step.
func checkSlotEntryKept(t *testing.T, chain report.Result, steps int) {
	t.Helper()
	span, ok := chain.Extra[scenario.ExtraStepSpan]
	if !ok {
		t.Fatalf("chain: no %q figure", scenario.ExtraStepSpan)
	}
	if limit := float64(steps - 3); span > limit {
		t.Fatalf("chain: its %d steps spanned %.1f s, over the %.1f s within which the slot's kept entry can be told from one moved a step: the machine ran them too slowly", steps, span, limit)
	}
	w := chain.Extra[scenario.ExtraWCUReadyWorker] * float64(steps)
	if bound := 2*span + 4; w <= 0 || w > bound {
		t.Errorf("chain: %.1f WCU on the slot's ready entry over %d steps in %.2f s; want more than 0 (the slot's entry) and at most %.1f (moved at most once a second)", w, steps, span, bound)
	}
	t.Logf("chain: %.1f WCU on the slot's ready entry over %d steps in %.2f s", w, steps, span)
}

// checkPartitionsAddUp checks that r's write units by kind of partition
// add up to its WRU: the meter placed every unit.
func checkPartitionsAddUp(t *testing.T, r report.Result) {
	t.Helper()
	sum := 0.0
	for _, k := range []string{scenario.ExtraWCUInstance, scenario.ExtraWCUWorkerRows, scenario.ExtraWCUMetrics, scenario.ExtraWCUTableOther,
		scenario.ExtraWCUReadyOrch, scenario.ExtraWCUReadyWorker, scenario.ExtraWCUInstancesIx} {
		sum += r.Extra[k]
	}
	if perActivity := r.WRU / float64(r.Activities); sum < perActivity*0.999 || sum > perActivity*1.001 {
		t.Errorf("%s: WCU per activity by partition sum to %v, WRU per activity is %v", r.System, sum, perActivity)
	}
}
