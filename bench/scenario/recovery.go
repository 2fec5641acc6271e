package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/internal/crashsoak"
)

// RecoveryName is the name of the Recovery scenario.
const RecoveryName = "Recovery"

// Extra keys of the Recovery scenario.
const (
	ExtraRecoveryItems       = "items held at the kill"
	ExtraRecoveryP50         = "recovery p50 (s)"
	ExtraRecoveryP99         = "recovery p99 (s)"
	ExtraRecoveryMax         = "recovery max (s)"
	ExtraRenewalsPerMinute   = "renewals/min per long activity"
	ExtraRenewalWRUPerMinute = "renewal WRU/min per long activity"
	ExtraWatcherPerMinute    = "ddb req/min of an idle process beside it"
)

// RecoveryConfig sizes Recovery.
type RecoveryConfig struct {
	// Rounds is how many worker processes are killed.
	Rounds int
	// LongActivity is how long the activity whose renewals are counted
	// runs.
	LongActivity time.Duration
}

// Recovery measures, on DynamoDBSQS with default options, what crash
// recovery takes and costs. Worker processes (package
// internal/crashsoak) run beside two that survive; in each round one takes
// work until it holds running activities, turns under way and an activity
// handed to one of its slots that it never started, and is killed with
// SIGKILL: the result's latencies are the times from the kill until
// another process fetched each item. Then one runtime runs an activity of
// c.LongActivity alone, and again beside a runtime with nothing to do: the
// renewals of the activity's lease per minute and their write units, and
// the DynamoDB requests per minute the idle runtime makes while it watches
// the other's lease.
func Recovery(ctx context.Context, env *Env, c RecoveryConfig) ([]report.Result, error) {
	if c.Rounds < 1 || c.LongActivity < 2*time.Second {
		return nil, fmt.Errorf("%w: Recovery %+v: want a round or more and an activity of 2 s or more", ErrBadSize, c)
	}
	s, ok := env.system(DynamoDBSQS)
	if !ok {
		return nil, nil
	}
	r := report.Result{Scenario: RecoveryName, System: s.Name,
		Notes: fmt.Sprintf("default options; %d worker processes killed with SIGKILL beside 2 that survive, each holding 4 running activities, 2 turns under way and 1 handed activity never started; latencies from the kill to another process's fetch of each item; renewals of an activity running %v", c.Rounds, c.LongActivity)}
	err := recoveryTimes(ctx, env, c, &r)
	if err == nil {
		err = renewalCost(ctx, env, s, c.LongActivity, &r)
	}
	if err != nil {
		err = fmt.Errorf("%w: %s on %s: %w", ErrScenario, RecoveryName, s.Name, err)
		r.Notes = joinNotes("FAILED: "+err.Error(), r.Notes)
	}
	return []report.Result{r}, err
}

// recoveryTimes runs the kill soak on a table and queues of its own and
// sets r's latencies and recovery figures.
func recoveryTimes(ctx context.Context, env *Env, c RecoveryConfig, r *report.Result) (err error) {
	dir, err := os.MkdirTemp("", "bench-recovery-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	env.logf("%s: building the worker command", RecoveryName)
	bin, err := crashsoak.Build(ctx, dir, false)
	if err != nil {
		return err
	}
	store, drop, err := crashsoak.NewStore(ctx, env.Endpoints, "bench-recovery-"+randomHex())
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		err = errors.Join(err, drop(dctx))
	}()
	began := time.Now()
	res, err := crashsoak.Run(ctx, crashsoak.Config{Binary: bin, Store: store, Survivors: 2, Rounds: c.Rounds,
		Hold: crashsoak.Hold{Activities: 4, Turns: 2, Handed: 1}, Logf: env.logf})
	if err != nil {
		return err
	}
	rec := res.Recoveries()
	if len(rec) == 0 {
		return errors.New("no item was held at a kill")
	}
	r.Elapsed, r.Latencies = time.Since(began), rec
	seconds := func(d time.Duration) float64 { return d.Seconds() }
	setExtra(r, ExtraRecoveryItems, float64(len(rec)))
	setExtra(r, ExtraRecoveryP50, seconds(crashsoak.Percentile(rec, 50)))
	setExtra(r, ExtraRecoveryP99, seconds(crashsoak.Percentile(rec, 99)))
	setExtra(r, ExtraRecoveryMax, seconds(slices.Max(rec)))
	if n := len(res.Items) - len(rec); n > 0 {
		r.Notes = joinNotes(r.Notes, fmt.Sprintf("%d items not held at the kill (taken over before it, or lost) left out", n))
	}
	return nil
}

// longActivity runs for its input's duration, reporting its start on
// longStarted.
var longStarted = make(chan struct{}, 1)

var longActivity = durable.NewActivity("RecoveryLong", func(ctx context.Context, d time.Duration) (int, error) {
	longStarted <- struct{}{}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return 0, nil
})

var longOrchestration = durable.NewOrchestration("RecoveryLong", func(ctx *durable.OrchestrationContext, d time.Duration) (int, error) {
	return longActivity.Call(ctx, d).Get(ctx)
})

// renewalCost runs an activity of length d on a runtime of default
// options, alone and then beside an idle runtime, and sets r's renewal and
// watcher figures.
func renewalCost(ctx context.Context, env *Env, s System, d time.Duration, r *report.Result) error {
	alone, window, err := longRun(ctx, env, s, d, false)
	if err != nil {
		return err
	}
	beside, _, err := longRun(ctx, env, s, d, true)
	if err != nil {
		return err
	}
	minutes := window.Minutes()
	setExtra(r, ExtraRenewalsPerMinute, float64(alone.DynamoDB["UpdateItem"])/minutes)
	setExtra(r, ExtraRenewalWRUPerMinute, alone.WRU/minutes)
	setExtra(r, ExtraWatcherPerMinute, float64(beside.DynamoDBRequests()-alone.DynamoDBRequests())/minutes)
	setUsage(r, alone)
	return nil
}

// longRun runs one long activity of length d on a fresh deployment of s,
// beside an idle runtime when watcher is set, and returns the usage of the
// activity's run over window: from its start to a second before its end.
func longRun(ctx context.Context, env *Env, s System, d time.Duration, watcher bool) (_ billing.Usage, window time.Duration, err error) {
	dep, err := s.Setup(ctx, env)
	if err != nil {
		return billing.Usage{}, 0, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		err = errors.Join(err, dep.Close(cctx))
	}()
	reg, err := durable.NewRegistry(longActivity, longOrchestration)
	if err != nil {
		return billing.Usage{}, 0, err
	}
	for i := range 1 + btoi(watcher) {
		p, closeFn, err := dep.newProvider()
		if err != nil {
			return billing.Usage{}, 0, err
		}
		rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) { o.Logger = dep.logger.With("runtime", i) })
		if err == nil {
			err = rt.Start(ctx)
		}
		if err != nil {
			return billing.Usage{}, 0, errors.Join(err, closeFn())
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			err = errors.Join(err, rt.Shutdown(sctx), closeFn())
		}()
	}
	id := "long-" + randomHex()
	if err := longOrchestration.Start(ctx, dep.Client, id, d); err != nil {
		return billing.Usage{}, 0, err
	}
	select {
	case <-longStarted:
	case <-ctx.Done():
		return billing.Usage{}, 0, ctx.Err()
	}
	before, began := dep.Usage(), time.Now()
	if err := sleepCtx(ctx, d-time.Second); err != nil {
		return billing.Usage{}, 0, err
	}
	u, window := dep.Usage().Sub(before), time.Since(began)
	if _, err := dep.Observer.WaitForCompletion(ctx, id); err != nil {
		return billing.Usage{}, 0, err
	}
	return u, window, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
