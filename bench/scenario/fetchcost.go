package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// FetchCostName is the name of the FetchCost scenario.
const FetchCostName = "FetchCost"

// Extra keys of the FetchCost scenario.
const (
	ExtraTerminalInstances = "terminal instances"
	ExtraRequestsPerTurn   = "ddb req/turn"
	ExtraRRUPerTurn        = "RRU/turn"
	ExtraWRUPerTurn        = "WRU/turn"
	// The requests and read units of one QueueDepths and one
	// SystemMetrics at the size, with no runtime running.
	ExtraQueueDepthsRequests   = "QueueDepths requests"
	ExtraQueueDepthsRRU        = "QueueDepths RRU"
	ExtraSystemMetricsRequests = "SystemMetrics requests"
	ExtraSystemMetricsRRU      = "SystemMetrics RRU"
)

// seedChunk is how many terminal instances are started before their
// completions are awaited; the budget is checked between chunks.
const seedChunk = 1000

// seedOrchestrationSlots is the orchestration slots of the runtime that
// seeds the table (the seeding is not measured).
const seedOrchestrationSlots = 8

// FetchCostConfig sizes the FetchCost scenario.
type FetchCostConfig struct {
	// Sizes are the numbers of terminal instances the table holds when the
	// round trips are measured, in any order (for example 10 and 100,000).
	Sizes []int
	// RoundTrips is how many one-activity instances are measured at each
	// size, one after the other.
	RoundTrips int
	// SeedBudget bounds the time seeding may take: when it runs out before
	// a size is reached, seeding stops after the chunk under way, that size
	// is measured with the instances seeded so far, and the result says so.
	SeedBudget time.Duration
}

// FetchCost measures, on the system DynamoDBSQS (if env has it), what one
// orchestration turn costs while the table holds more and more terminal
// instances. The table is seeded with real runs of an orchestration that
// completes on its first turn (no activities), started in bulk through the
// client and completed by a seeding runtime; then a runtime of default
// options runs one warm-up and RoundTrips one-activity instances (two
// turns each), and the requests of those round trips are divided by their
// turns. Each size is its own result, with what one QueueDepths and one
// SystemMetrics cost at that size, followed by a result for each read of
// the web console measured at that size (consoleCost).
func FetchCost(ctx context.Context, env *Env, c FetchCostConfig) ([]report.Result, error) {
	var system System
	found := false
	for _, s := range env.systems() {
		if s.Name == DynamoDBSQS {
			system, found = s, true
		}
	}
	if !found || len(c.Sizes) == 0 {
		return nil, nil
	}
	sizes := slices.Sorted(slices.Values(c.Sizes))
	roundTrips := max(1, c.RoundTrips)
	timeout := c.SeedBudget + 10*time.Minute

	var results []report.Result
	_, err := onSystem(ctx, env, system, FetchCostName, timeout, timesMetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		// Terminal instances: the seeded ones, and the measured ones of
		// the sizes before.
		seeded, measured := 0, 0
		for _, size := range sizes {
			var note string
			if seeded < size {
				var err error
				if seeded, note, err = seed(ctx, env, d, seeded, size, c.SeedBudget); err != nil {
					return report.Result{}, err
				}
			}
			terminal := seeded + measured
			res, err := roundTripCost(ctx, d, terminal, roundTrips)
			measured += 1 + roundTrips
			if err == nil {
				err = adminReadCost(ctx, d, &res, 1+roundTrips+terminal)
			}
			res.Scenario, res.System = FetchCostName, system.Name
			res.Notes = joinNotes(system.Notes, fmt.Sprintf("%d terminal instances", terminal), note, res.Notes)
			if err != nil {
				return report.Result{}, err
			}
			env.logf("%s: %d terminal instances: %.1f DynamoDB requests, %.2f RRU and %.2f WRU per turn; QueueDepths %.0f requests, %.1f RRU; SystemMetrics %.0f requests, %.1f RRU",
				FetchCostName, terminal, res.Extra[ExtraRequestsPerTurn], res.Extra[ExtraRRUPerTurn], res.Extra[ExtraWRUPerTurn],
				res.Extra[ExtraQueueDepthsRequests], res.Extra[ExtraQueueDepthsRRU], res.Extra[ExtraSystemMetricsRequests], res.Extra[ExtraSystemMetricsRRU])
			pages, err := consoleCost(ctx, d, terminal)
			if err != nil {
				return report.Result{}, err
			}
			for _, p := range pages {
				env.logf("%s: %d terminal instances: %s: p50 %v, p99 %v; %.1f requests, %.1f RRU, %.0f items read a load",
					FetchCostName, terminal, p.System, p.Latency(50), p.Latency(99),
					p.Extra[ExtraConsoleRequestsPerLoad], p.Extra[ExtraConsoleRRUPerLoad], p.Extra[ExtraConsoleItemsPerLoad])
			}
			results = append(append(results, res), pages...)
		}
		return report.Result{}, nil
	})
	if err != nil {
		results = append(results, report.Result{Scenario: FetchCostName, System: system.Name, Notes: joinNotes("FAILED: "+err.Error(), system.Notes)})
	}
	return results, err
}

// seed brings the table from `from` to `to` terminal instances with a
// seeding runtime (Deployment.StartSeedingRuntime: its starts and turns are
// not metered and send nothing to the wake-up queues), seedChunk instances
// at a time, and returns how many the table holds. When budget runs out
// first, it stops after the chunk that used it up and returns a note
// saying so. (An estimate from the first chunks would stop it short: the
// emulator serves them more slowly than the rest.)
func seed(ctx context.Context, env *Env, d *Deployment, from, to int, budget time.Duration) (seeded int, note string, err error) {
	_, seeder, err := d.StartSeedingRuntime(ctx, func(o *durable.Options) { o.OrchestrationConcurrency = seedOrchestrationSlots })
	if err != nil {
		return from, "", err
	}
	defer func() { err = errors.Join(err, d.StopRuntimes(ctx)) }()
	began, start := time.Now(), from
	for from < to {
		if elapsed := time.Since(began); budget > 0 && elapsed >= budget {
			note = fmt.Sprintf("%d terminal instances asked for: seeding ran at %.0f instances/s here and stopped at %d, when its budget of %v ran out", to, float64(from-start)/elapsed.Seconds(), from, budget)
			env.logf("%s: %s", FetchCostName, note)
			break
		}
		n := min(seedChunk, to-from)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("seed-%07d", from+i)
		}
		started, err := startAll(ctx, ids, func(ctx context.Context, id string) error {
			return trivial.Start(ctx, seeder, id, struct{}{})
		})
		if err == nil {
			_, _, err = waitAll(ctx, d, ids, started)
		}
		if err != nil {
			return from, note, err
		}
		from += n
		env.logf("%s: %d terminal instances seeded (%.0f/s)", FetchCostName, from, float64(from-start)/time.Since(began).Seconds())
	}
	return from, note, nil
}

// roundTripCost starts a runtime of default options, runs one unmeasured
// one-activity instance, then measures roundTrips more, one after the
// other, and stops the runtime.
func roundTripCost(ctx context.Context, d *Deployment, terminal, roundTrips int) (r report.Result, err error) {
	if _, err := d.StartRuntime(ctx); err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, d.StopRuntimes(ctx)) }()
	run := func(id string) (time.Duration, error) {
		began := time.Now()
		if err := helloOnce.Start(ctx, d.Client, id, "Oslo"); err != nil {
			return 0, err
		}
		at, err := d.WaitCompleted(ctx, id)
		return at.Sub(began), err
	}
	if _, err := run(fmt.Sprintf("warm-up-%d", terminal)); err != nil {
		return r, err
	}
	before := d.Usage()
	began := time.Now()
	for i := range roundTrips {
		l, err := run(fmt.Sprintf("probe-%d-%d", terminal, i))
		if err != nil {
			return r, err
		}
		r.Latencies = append(r.Latencies, l)
	}
	r.Elapsed = time.Since(began)
	u := d.Usage().Sub(before)
	setUsage(&r, u)
	r.Activities = roundTrips
	turns := float64(2 * roundTrips)
	setExtra(&r, ExtraTerminalInstances, float64(terminal))
	setExtra(&r, ExtraRequestsPerTurn, float64(u.DynamoDBRequests())/turns)
	setExtra(&r, ExtraRRUPerTurn, u.RRU/turns)
	setExtra(&r, ExtraWRUPerTurn, u.WRU/turns)
	r.Notes = fmt.Sprintf("%d one-activity round trips (2 turns each) after a warm-up, runtime with default options; per-turn figures are the round trips' requests (the activity's included) over their turns", roundTrips)
	return r, nil
}

// adminReadCost measures one QueueDepths and one SystemMetrics on d's
// metered provider, with no runtime running, into r's extras, and checks
// that SystemMetrics counts instances, all of them completed; it reports
// the requests and read units each made.
func adminReadCost(ctx context.Context, d *Deployment, r *report.Result, instances int) error {
	admin, ok := provider.AdminOf(d.Provider)
	if !ok {
		return fmt.Errorf("%s: the provider offers no management reads", FetchCostName)
	}
	before := d.Usage()
	if _, err := admin.QueueDepths(ctx); err != nil {
		return fmt.Errorf("QueueDepths: %w", err)
	}
	u := d.Usage().Sub(before)
	setExtra(r, ExtraQueueDepthsRequests, float64(u.DynamoDBRequests()))
	setExtra(r, ExtraQueueDepthsRRU, u.RRU)
	before = d.Usage()
	m, err := admin.SystemMetrics(ctx)
	if err != nil {
		return fmt.Errorf("SystemMetrics: %w", err)
	}
	u = d.Usage().Sub(before)
	setExtra(r, ExtraSystemMetricsRequests, float64(u.DynamoDBRequests()))
	setExtra(r, ExtraSystemMetricsRRU, u.RRU)
	if m.TotalInstances < uint64(instances) || m.RunningInstances != 0 {
		return fmt.Errorf("SystemMetrics counted %d instances, %d running; want at least %d, none running", m.TotalInstances, m.RunningInstances, instances)
	}
	return nil
}
