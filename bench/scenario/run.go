package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dynoxide/dynoxide/bench/billing"
	"github.com/dynoxide/dynoxide/bench/report"
	"github.com/dynoxide/dynoxide/durable"
)

// ErrScenario is wrapped by the error a scenario returns for a system that
// did not finish it.
var ErrScenario = errors.New("scenario failed")

// setUsage fills r's request and cost figures from u, the usage of the
// measured interval.
func setUsage(r *report.Result, u billing.Usage) {
	r.DynamoDB = u.DynamoDB
	r.WRU, r.RRU = u.WRU, u.RRU
	r.SQS = u.SQS
	r.Dollars = u.Dollars()
	r.ProvisionedDollars = u.ProvisionedDollars(billing.AutoScalingTargetUtilization)
}

// measureInstance starts one instance, id, with start and waits for its
// terminal turn: r gets the usage, the elapsed time and, as its one
// latency, the same.
func measureInstance(ctx context.Context, d *Deployment, r *report.Result, id string, start func(ctx context.Context) error) error {
	before := d.Usage()
	began := time.Now()
	if err := start(ctx); err != nil {
		return err
	}
	at, err := d.WaitCompleted(ctx, id)
	if err != nil {
		return err
	}
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

// onSystem sets system s up, runs fn on it within timeout and tears it
// down. A failure becomes a result whose Notes say what failed, and an
// error wrapping ErrScenario.
func onSystem(ctx context.Context, env *Env, s System, scenario string, timeout time.Duration, fn func(ctx context.Context, d *Deployment) (report.Result, error)) (report.Result, error) {
	env.logf("%s on %s: setting up", scenario, s.Name)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%s on %s took more than %v", scenario, s.Name, timeout))
	defer cancel()
	began := time.Now()
	r, err := func() (r report.Result, err error) {
		d, err := s.Setup(ctx, env)
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
func onEverySystem(ctx context.Context, env *Env, scenario string, timeout time.Duration, fn func(ctx context.Context, d *Deployment) (report.Result, error)) ([]report.Result, error) {
	return onSystems(ctx, env, env.systems(), scenario, timeout, fn)
}

// onSystems is onEverySystem on systems.
func onSystems(ctx context.Context, env *Env, systems []System, scenario string, timeout time.Duration, fn func(ctx context.Context, d *Deployment) (report.Result, error)) ([]report.Result, error) {
	var results []report.Result
	var errs []error
	for _, s := range systems {
		r, err := onSystem(ctx, env, s, scenario, timeout, fn)
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
