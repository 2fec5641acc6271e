package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/internal/tablekeys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// ShardsConfig sizes the Shards scenario.
type ShardsConfig struct {
	// Shards is the table's shard count (dynamo.Options.Shards).
	Shards int
	// ChainSteps is the length of the one chain whose steps are measured
	// by partition.
	ChainSteps int
	// Instances is how many instances of a one-step chain run at once in
	// the spread run, with random ids: how evenly their index writes fall
	// on the shards.
	Instances int
	// FanOut is the activities the one hot instance schedules in one turn
	// and awaits.
	FanOut int
}

// validate reports, wrapping ErrBadSize, a size the scenario cannot run.
func (c ShardsConfig) validate() error {
	if c.Shards < 1 || c.Shards > dynamo.MaxShards || c.ChainSteps < 1 || c.Instances < 1 || c.FanOut < 1 {
		return fmt.Errorf("%w: Shards is %+v, want 1..%d shards and counts of at least 1", ErrBadSize, c, dynamo.MaxShards)
	}
	return nil
}

// ShardsName is the name of the Shards scenario on a table of n shards.
func ShardsName(n int) string { return fmt.Sprintf("Shards%d", n) }

// Extra figures of the Shards scenario. The WCU and RRU figures are per
// activity, by where the meter saw them land (billing.Partitions): the
// table's partition keys by kind (I#<instance> holds an instance's control
// rows and history, W#<instance> its activity rows), the ready index's
// orchestrator and worker shards (O#<k>, W#<k>) and the instances index's
// shards.
const (
	ExtraWCUInstance     = "WCU/activity: table I#<instance>"
	ExtraWCUWorkerRows   = "WCU/activity: table W#<instance>"
	ExtraWCUMetrics      = "WCU/activity: table #METRICS"
	ExtraWCUTableOther   = "WCU/activity: table, other keys"
	ExtraWCUReadyOrch    = "WCU/activity: ready O#<shard>"
	ExtraWCUReadyWorker  = "WCU/activity: ready W#<shard>"
	ExtraWCUInstancesIx  = "WCU/activity: instances index"
	ExtraRRUTable        = "RRU/activity: table"
	ExtraRRUIndexes      = "RRU/activity: indexes"
	ExtraBusiestWCU      = "busiest partition key: WCU"
	ExtraBusiestSeconds  = "busiest partition key: s at 1,000 WCU/s"
	ExtraBusiestRate     = "busiest partition key: WCU/s in this run"
	ExtraShardMean       = "index WCU per shard: mean"
	ExtraShardMaxDev     = "index WCU per shard: max, % from mean"
	ExtraShardMinDev     = "index WCU per shard: min, % from mean"
	ExtraShardMeanAbsDev = "index WCU per shard: mean |deviation| %"
	// ExtraStepSpan is the chain's seconds from its first activity's
	// schedule to its last's, by its history's timestamps: a handed
	// slot's ready entry moves at most about once a second of it
	// (docs/design.md, "A handed slot's ready entry").
	ExtraStepSpan = "chain: s from the first step's schedule to the last's"
)

// partitionWCULimit is what one DynamoDB partition writes a second.
const partitionWCULimit = 1000

// Shards measures where the writes of a table of c.Shards shards land, by
// partition key value of the table and of each index (the unit of
// DynamoDB's per-partition limits of 1,000 write and 3,000 read units a
// second), on DynamoDBSQS with Shards set, metered, in three runs:
//
//   - one chain of c.ChainSteps steps: what a step writes on each kind of
//     partition, from which docs/design.md derives the table's ceiling in
//     steps a second by shard count;
//   - c.Instances one-step chains started at once, with random ids as
//     applications make them: the index writes of each shard, and how far
//     the busiest and the idlest shard are from the mean;
//   - one instance fanning out c.FanOut activities and in again: what one
//     hot instance puts on its own partitions, and how long those take to
//     absorb at one partition's 1,000 write units a second.
//
// It runs nothing when env has no DynamoDBSQS system.
func Shards(ctx context.Context, env *Env, c ShardsConfig) ([]report.Result, error) {
	name := ShardsName(c.Shards)
	base, ok := env.system(DynamoDBSQS)
	if !ok {
		env.logf("%s: not run: it runs on %s only, which is not selected", name, DynamoDBSQS)
		return nil, nil
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	system := System{Name: base.Name, DynamoDB: true,
		Notes: fmt.Sprintf("DynamoDB provider, SQS wake-up queues (long polling), %d shards", c.Shards),
		setup: dynamoSetup(fmt.Sprintf("%s-%dshards", DynamoDBSQS, c.Shards), true, 0, func(o *dynamo.Options) { o.Shards = c.Shards })}
	runs := []struct {
		label   string
		timeout time.Duration
		fn      func(ctx context.Context, d *Deployment) (report.Result, error)
	}{
		{fmt.Sprintf("one chain of %d steps", c.ChainSteps), 5*time.Minute + time.Duration(c.ChainSteps)*300*time.Millisecond,
			func(ctx context.Context, d *Deployment) (report.Result, error) {
				return shardsChain(ctx, d, c.ChainSteps)
			}},
		// An instance is about ten requests: 20 ms on DynamoDB Local, 500 ms
		// on a 2-core machine running other work at a load of 35.
		{fmt.Sprintf("%d one-step chains at once", c.Instances), 5*time.Minute + time.Duration(c.Instances)*time.Second,
			func(ctx context.Context, d *Deployment) (report.Result, error) { return shardsSpread(ctx, d, c) }},
		{fmt.Sprintf("one instance fanning out %d", c.FanOut), 5*time.Minute + time.Duration(c.FanOut)*100*time.Millisecond,
			func(ctx context.Context, d *Deployment) (report.Result, error) { return shardsHot(ctx, d, c.FanOut) }},
	}
	var results []report.Result
	var errs []error
	for _, run := range runs {
		r, err := onSystem(ctx, env, system, name, run.timeout, timesMetered, run.fn)
		r.System = fmt.Sprintf("%s (%s)", system.Name, run.label)
		results = append(results, r)
		errs = append(errs, err)
	}
	return results, errors.Join(errs...)
}

// shardsChain runs one chain of n steps and sets its figures by partition.
func shardsChain(ctx context.Context, d *Deployment, n int) (report.Result, error) {
	r := report.Result{Notes: "runtime with default options (2 orchestration and 2 worker slots); a step is an activity and the turn its completion starts; its start and end are in the figures, spread over its steps"}
	if _, err := d.StartRuntime(ctx); err != nil {
		return r, err
	}
	const id = "chain"
	before := d.Meter.Partitions()
	if err := measureInstance(ctx, d, &r, id, func(ctx context.Context) error { return chain.Start(ctx, d.Client, id, n) }); err != nil {
		return r, err
	}
	parts := d.Meter.Partitions().Sub(before)
	got, err := durable.WaitForOutput[int](ctx, d.Observer, id)
	if err != nil {
		return r, err
	}
	if got != n {
		return r, fmt.Errorf("%w: %d of %d steps returned their input", ErrWrongOutput, got, n)
	}
	r.Activities = n
	setPartitionFigures(&r, parts)
	return r, setStepSpan(ctx, d, &r, id)
}

// setStepSpan sets r's ExtraStepSpan from id's history.
func setStepSpan(ctx context.Context, d *Deployment, r *report.Result, id string) error {
	h, err := d.Observer.History(ctx, id, 0)
	if err != nil {
		return err
	}
	var first, last uint64
	for _, e := range h {
		if _, ok := e.Kind.(provider.ActivityScheduled); ok {
			first = cmp.Or(first, e.TimestampMs)
			last = e.TimestampMs
		}
	}
	setExtra(r, ExtraStepSpan, float64(last-first)/1000)
	return nil
}

// shardsHot runs one instance that fans out n activities and sets its
// figures by partition.
func shardsHot(ctx context.Context, d *Deployment, n int) (report.Result, error) {
	r := report.Result{Notes: "runtime with default options (2 orchestration and 2 worker slots); all activities scheduled in one turn"}
	if _, err := d.StartRuntime(ctx); err != nil {
		return r, err
	}
	const id = "fan-out"
	before := d.Meter.Partitions()
	if err := measureInstance(ctx, d, &r, id, func(ctx context.Context) error { return fanOut.Start(ctx, d.Client, id, n) }); err != nil {
		return r, err
	}
	parts := d.Meter.Partitions().Sub(before)
	checked, err := durable.WaitForOutput[int](ctx, d.Observer, id)
	if err != nil {
		return r, err
	}
	if checked != n {
		return r, fmt.Errorf("%w: %d of %d results present", ErrWrongOutput, checked, n)
	}
	r.Activities = n
	setPartitionFigures(&r, parts)
	return r, nil
}

// shardsSpread runs c.Instances one-step chains at once, with ids drawn at
// random (from a fixed seed, so that every run spreads them alike), and sets
// its figures by partition and by shard.
func shardsSpread(ctx context.Context, d *Deployment, c ShardsConfig) (report.Result, error) {
	const notes = "runtime with default options (2 orchestration and 2 worker slots); instance ids of 16 random hex digits; latency from start to the commit of the terminal turn"
	if _, err := d.StartRuntime(ctx); err != nil {
		return report.Result{Notes: notes}, err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Instances), uint64(c.Shards)))
	ids := make([]string, c.Instances)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", rng.Uint64())
	}
	parts := d.Meter.Partitions()
	r, err := runInstances(ctx, d, ids, func(ctx context.Context, id string) error { return chain.Start(ctx, d.Client, id, 1) },
		func(ctx context.Context, id string) (int, error) {
			got, err := durable.WaitForOutput[int](ctx, d.Observer, id)
			if err == nil && got != 1 {
				err = fmt.Errorf("%w: %d of 1 step returned its input", ErrWrongOutput, got)
			}
			return got, err
		})
	r.Notes = notes
	if err != nil {
		return r, err
	}
	parts = d.Meter.Partitions().Sub(parts)
	setPartitionFigures(&r, parts)
	spread := shardSpread(parts, c.Shards)
	setExtra(&r, ExtraShardMean, spread.mean)
	setExtra(&r, ExtraShardMaxDev, spread.maxDev)
	setExtra(&r, ExtraShardMinDev, spread.minDev)
	setExtra(&r, ExtraShardMeanAbsDev, spread.meanAbsDev)
	r.Notes = joinNotes(r.Notes, fmt.Sprintf("index WCU by shard (ready O#<k> and W#<k>, instances L#<k>): %v", spread.perShard))
	return r, nil
}

// setPartitionFigures sets r's figures by partition from p: the WCU per
// activity on each kind of partition key, the RRU per activity of the
// table and of the indexes, and the busiest partition key, which the notes
// name.
func setPartitionFigures(r *report.Result, p billing.Partitions) {
	if r.Activities == 0 {
		return
	}
	per := func(v float64) float64 { return v / float64(r.Activities) }
	byKind := map[string]float64{}
	var busiest billing.Partition
	for part, u := range p.Writes {
		byKind[partitionKind(part)] += u
		if u > p.Writes[busiest] || u == p.Writes[busiest] && partitionLess(part, busiest) {
			busiest = part
		}
	}
	for _, k := range []string{ExtraWCUInstance, ExtraWCUWorkerRows, ExtraWCUMetrics, ExtraWCUTableOther, ExtraWCUReadyOrch, ExtraWCUReadyWorker, ExtraWCUInstancesIx} {
		setExtra(r, k, per(byKind[k]))
	}
	reads := map[bool]float64{}
	for e, u := range p.Reads {
		reads[e.Index != ""] += u
	}
	setExtra(r, ExtraRRUTable, per(reads[false]))
	setExtra(r, ExtraRRUIndexes, per(reads[true]))
	top := p.Writes[busiest]
	setExtra(r, ExtraBusiestWCU, top)
	setExtra(r, ExtraBusiestSeconds, top/partitionWCULimit)
	if r.Elapsed > 0 {
		setExtra(r, ExtraBusiestRate, top/r.Elapsed.Seconds())
	}
	where := "table"
	if busiest.Index != "" {
		where = busiest.Index + " index"
	}
	r.Notes = joinNotes(r.Notes, fmt.Sprintf("busiest partition key: %s %s", where, busiest.Key))
}

// partitionLess orders partitions by element and key, so that ties for
// the busiest partition are broken the same way every run.
func partitionLess(a, b billing.Partition) bool {
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.Key < b.Key
}

// partitionKind is the Extra figure whose writes part's are.
func partitionKind(part billing.Partition) string {
	switch {
	case part.Index == "" && strings.HasPrefix(part.Key, tablekeys.InstancePrefix):
		return ExtraWCUInstance
	case part.Index == "" && strings.HasPrefix(part.Key, tablekeys.WorkerPrefix):
		return ExtraWCUWorkerRows
	case part.Index == "" && part.Key == tablekeys.MetricsPK:
		return ExtraWCUMetrics
	case part.Index == "":
		return ExtraWCUTableOther
	case part.Index == tables.IndexReady && strings.HasPrefix(part.Key, tablekeys.ReadyWorkerPrefix):
		return ExtraWCUReadyWorker
	case part.Index == tables.IndexReady:
		return ExtraWCUReadyOrch
	}
	return ExtraWCUInstancesIx
}

// spread is how the index writes of a run fall on the shards.
type spread struct {
	// perShard are the index write units of each shard, by shard number.
	perShard []float64
	// mean is their mean; maxDev and minDev how far, in percent of the
	// mean, the busiest and the idlest shard are from it (minDev is
	// negative or zero); meanAbsDev the mean of every shard's distance.
	mean, maxDev, minDev, meanAbsDev float64
}

// shardSpread sums p's index writes by shard: the number that ends every
// index partition key ("O#3", "L#3"). Keys without one are left out.
func shardSpread(p billing.Partitions, shards int) spread {
	s := spread{perShard: make([]float64, shards)}
	total := 0.0
	for part, u := range p.Writes {
		if part.Index == "" {
			continue
		}
		k, err := strconv.Atoi(part.Key[strings.LastIndexByte(part.Key, '#')+1:])
		if err != nil || k < 0 || k >= shards {
			continue
		}
		s.perShard[k] += u
		total += u
	}
	s.mean = total / float64(shards)
	if s.mean == 0 {
		return s
	}
	dev := func(v float64) float64 { return (v/s.mean - 1) * 100 }
	s.maxDev, s.minDev = dev(slices.Max(s.perShard)), dev(slices.Min(s.perShard))
	for _, v := range s.perShard {
		s.meanAbsDev += math.Abs(dev(v)) / float64(shards)
	}
	return s
}
