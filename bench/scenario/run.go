package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// ErrScenario is wrapped by the error a scenario returns for a system that
// did not finish it.
var ErrScenario = errors.New("scenario failed")

// setUsage fills r's request and cost figures from u, the usage of the
// measured interval.
func setUsage(r *report.Result, u billing.Usage) {
	r.DynamoDB = u.DynamoDB
	r.WRU, r.RRU = u.WRU, u.RRU
	r.WRUByItem = u.WRUByItem
	r.SQS = u.SQS
	r.Dollars = u.Dollars()
	r.ProvisionedDollars = u.ProvisionedDollars(billing.AutoScalingTargetUtilization)
}

// measureInstance starts one instance, id, with start and waits for its
// terminal turn: r gets the usage, the elapsed time and, as its one
// latency, the same.
func measureInstance(ctx context.Context, d *Deployment, r *report.Result, id string, start func(ctx context.Context) error) error {
	before, cpu := d.Usage(), report.ProcessCPU()
	began := time.Now()
	if err := start(ctx); err != nil {
		return err
	}
	at, err := d.WaitCompleted(ctx, id)
	if err != nil {
		return err
	}
	r.CPU = report.ProcessCPU() - cpu
	setUsage(r, d.Usage().Sub(before))
	r.Elapsed = at.Sub(began)
	r.Latencies = []time.Duration{r.Elapsed}
	return nil
}

// setEvents sets r's "events" figure to the length of id's history.
func setEvents(ctx context.Context, d *Deployment, r *report.Result, id string) error {
	h, err := d.Observer.History(ctx, id, 0)
	if err != nil {
		return err
	}
	setExtra(r, "events", float64(len(h)))
	return nil
}

// setExtra sets r.Extra[key], making the map if needed.
func setExtra(r *report.Result, key string, v float64) {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	r.Extra[key] = v
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// timing says which run of a system gives a result its times.
type timing int

const (
	// timesMetered: the one metered run gives every figure.
	timesMetered timing = iota
	// timesUnmetered: on a system with DynamoDB, the workload runs twice,
	// metered for the requests, capacity and cost, then unmetered for the
	// throughput and latencies ([timesFrom]). The meter reads item images
	// on the endpoint beside the requests it counts (a BatchGetItem before
	// every transaction, a GetItem after every update): on DynamoDB Local,
	// which serialises its writes, that load and the read ahead of each
	// transaction cost HelloCities5 about a quarter of its throughput.
	timesUnmetered
)

// ExtraMeteredRate is the extra column of a result whose times come from
// an unmetered run: the activities a second of the metered run.
const ExtraMeteredRate = "activities/s, metered run"

// unmeteredTimesNote says where the figures of a result of timesUnmetered
// come from.
const unmeteredTimesNote = "throughput and latencies from a second run of the same workload without the meter (its reads of item images load the endpoint and delay every transaction); requests, capacity and cost from the metered run, whose throughput is the column '" + ExtraMeteredRate + "'"

// onSystem sets system s up, runs fn on it within timeout and tears it
// down; with timesUnmetered, on a system with DynamoDB, it then does it all
// again unmetered and takes the times from that run. A failure becomes a
// result whose Notes say what failed, and an error wrapping ErrScenario.
func onSystem(ctx context.Context, env *Env, s System, scenario string, timeout time.Duration, times timing, fn func(ctx context.Context, d *Deployment) (report.Result, error)) (report.Result, error) {
	r, err := runOnSystem(ctx, env, s, scenario, timeout, true, fn)
	if err != nil || times != timesUnmetered || !s.DynamoDB {
		return r, err
	}
	u, err := runOnSystem(ctx, env, s, scenario, timeout, false, fn)
	if err == nil {
		u, err = timesFrom(r, u)
	}
	if err != nil {
		err = fmt.Errorf("%w: %s on %s, unmetered: %w", ErrScenario, scenario, s.Name, err)
		r.Notes = joinNotes("FAILED: "+err.Error(), r.Notes)
		return r, err
	}
	return u, nil
}

// timesFrom returns the metered result with the throughput, latencies and
// CPU time of the unmetered run of the same workload, the metered run's throughput
// as ExtraMeteredRate, and a note saying so. It fails when the two runs
// did not complete the same activities.
func timesFrom(metered, unmetered report.Result) (report.Result, error) {
	if metered.Activities != unmetered.Activities || len(metered.Latencies) != len(unmetered.Latencies) {
		return metered, fmt.Errorf("the unmetered run completed %d activities with %d latencies, the metered one %d with %d",
			unmetered.Activities, len(unmetered.Latencies), metered.Activities, len(metered.Latencies))
	}
	r := metered
	r.Extra = maps.Clone(metered.Extra)
	setExtra(&r, ExtraMeteredRate, metered.ActivitiesPerSecond())
	r.Elapsed, r.Latencies, r.CPU = unmetered.Elapsed, unmetered.Latencies, unmetered.CPU
	r.Notes = joinNotes(r.Notes, unmeteredTimesNote)
	return r, nil
}

// runOnSystem is one run of onSystem: metered or not.
func runOnSystem(ctx context.Context, env *Env, s System, scenario string, timeout time.Duration, metered bool, fn func(ctx context.Context, d *Deployment) (report.Result, error)) (report.Result, error) {
	run := "setting up"
	if !metered {
		run = "setting up again without the meter, for the times"
	}
	env.logf("%s on %s: %s", scenario, s.Name, run)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%s on %s took more than %v", scenario, s.Name, timeout))
	defer cancel()
	began := time.Now()
	r, err := func() (r report.Result, err error) {
		d, err := s.setUp(ctx, env, metered)
		if err != nil {
			return r, err
		}
		defer func() {
			r.Notes = joinNotes(r.Notes, d.meterNote())
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if cerr := d.Close(cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
			}
		}()
		return fn(ctx, d)
	}()
	r.Scenario, r.System = scenario, s.Name
	r.Notes = joinNotes(s.Notes, r.Notes)
	if err != nil {
		err = fmt.Errorf("%w: %s on %s: %w", ErrScenario, scenario, s.Name, err)
		r.Notes = joinNotes("FAILED: "+err.Error(), r.Notes)
		env.logf("%s on %s: %v", scenario, s.Name, err)
		return r, err
	}
	env.logf("%s on %s: done in %v; measured %v, %d activities, %d DynamoDB and %d SQS requests",
		scenario, s.Name, time.Since(began).Round(time.Millisecond), r.Elapsed.Round(time.Millisecond), r.Activities, sum(r.DynamoDB), sum(r.SQS))
	return r, nil
}

// onEverySystem runs fn on every system of env, one after the other.
func onEverySystem(ctx context.Context, env *Env, scenario string, timeout time.Duration, times timing, fn func(ctx context.Context, d *Deployment) (report.Result, error)) ([]report.Result, error) {
	return onSystems(ctx, env, env.systems(), scenario, timeout, times, fn)
}

// onSystems is onEverySystem on systems.
func onSystems(ctx context.Context, env *Env, systems []System, scenario string, timeout time.Duration, times timing, fn func(ctx context.Context, d *Deployment) (report.Result, error)) ([]report.Result, error) {
	var results []report.Result
	var errs []error
	for _, s := range systems {
		r, err := onSystem(ctx, env, s, scenario, timeout, times, fn)
		results = append(results, r)
		errs = append(errs, err)
	}
	return results, errors.Join(errs...)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// failure is why st failed, or "" when it did not.
func failure(st *durable.Status) string {
	if st.Failure == nil {
		return ""
	}
	return st.Failure.DisplayMessage()
}
