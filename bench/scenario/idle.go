package scenario

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// Names of the idle scenarios.
const (
	StartAfterIdleName = "StartAfterIdle"
	IdleName           = "Idle"
)

// minutesPerMonth is the month the idle cost is given for: 30 days.
const minutesPerMonth = 30 * 24 * 60

// Extra keys of the Idle scenario.
const (
	ExtraDynamoDBPerMinute = "ddb req/min"
	ExtraSQSPerMinute      = "sqs req/min"
	ExtraIdleMonth         = "idle $/month (2 processes)"
)

// StartAfterIdle starts a runtime of default options on every system (all
// at once), lets them idle for idle, then on each system in turn starts one
// instance with one activity and measures from its start to its completion,
// with the requests of that interval: what the first work after a quiet
// spell costs, and how long it waits for a dispatcher to notice.
func StartAfterIdle(ctx context.Context, env *Env, idle time.Duration) ([]report.Result, error) {
	return afterIdle(ctx, env, StartAfterIdleName, 0, idle, func(ctx context.Context, d *Deployment, _ billing.Usage, _ time.Time) (report.Result, error) {
		r := report.Result{Notes: fmt.Sprintf("runtime with default options, idle for %v before the start", idle)}
		if d.System.DynamoDB {
			r.Notes += "; " + minimalRequestsNote
		}
		const id = "after-idle"
		before := d.Usage()
		began := time.Now()
		if err := helloOnce.Start(ctx, d.Client, id, "Oslo"); err != nil {
			return r, err
		}
		at, err := d.WaitCompleted(ctx, id)
		if err != nil {
			return r, err
		}
		u := d.Usage().Sub(before)
		setUsage(&r, u)
		r.Elapsed = at.Sub(began)
		r.Latencies = []time.Duration{r.Elapsed}
		if n, took := minimalRequests(u); d.System.DynamoDB && took > 0 {
			setExtra(&r, ExtraMinimalRequests, float64(n))
			setExtra(&r, ExtraMinimalTime, float64(took)/float64(time.Millisecond))
			setExtra(&r, ExtraRoundTripRatio, float64(r.Elapsed)/float64(took))
		}
		out, err := durable.WaitForOutput[string](ctx, d.Observer, id)
		if err != nil {
			return r, err
		}
		if out != greeting("Oslo") {
			return r, fmt.Errorf("%w: %s returned %q", ErrWrongOutput, id, out)
		}
		r.Activities = 1
		return r, nil
	})
}

// Extra keys of the StartAfterIdle scenario.
const (
	ExtraMinimalRequests = "minimal requests"
	ExtraMinimalTime     = "minimal requests' time (ms)"
	ExtraRoundTripRatio  = "round trip / minimal requests' time"
)

// minimalRequestsNote says what minimalRequests counts.
const minimalRequestsNote = "minimal requests: the round trip's DynamoDB writes (the start, the first turn's lock, a commit per turn, the activity's ack, its claim when its turn could not hand it to a waiting fetch, and the second turn's lock when the first did not keep it: 5 at the floor) and SQS sends (the start's wake-up; a dispatcher's commit sends none when a fetch of its own process waits for the work), each timed from its sending to its response and summed"

// writeOps and sendOps are the DynamoDB operations that write and the SQS
// operations that send.
var (
	writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
	sendOps  = []string{"SendMessage", "SendMessageBatch"}
)

// minimalRequests returns how many of u's requests a round trip cannot do
// without, and the sum of their times: the DynamoDB writes (claims and
// commits) and the SQS sends (wake-ups). The rest are left out: reads,
// receives (long polls that were waiting when the sends arrived, so their
// time is mostly the wait) and deletes of delivered signals.
func minimalRequests(u billing.Usage) (n int, took time.Duration) {
	for _, op := range writeOps {
		n += u.DynamoDB[op]
		took += u.DynamoDBTime[op]
	}
	for _, op := range sendOps {
		n += u.SQS[op]
		took += u.SQSTime[op]
	}
	return n, took
}

// idleSettle is the most time Idle lets pass between a runtime's start
// and the measurement, so that the sweeps every slot makes on start-up are
// not counted as idle cost.
const idleSettle = 10 * time.Second

// Idle starts one runtime of default options on every system (all at once)
// and counts the requests it makes while idle for idle: DynamoDB and SQS
// requests per minute, and what a deployment of two such processes costs
// per month idle.
func Idle(ctx context.Context, env *Env, idle time.Duration) ([]report.Result, error) {
	settle := min(idle/10, idleSettle)
	return afterIdle(ctx, env, IdleName, settle, idle, func(_ context.Context, d *Deployment, before billing.Usage, since time.Time) (report.Result, error) {
		r := report.Result{Notes: fmt.Sprintf("one runtime with default options (LongPollTimeout 30 s, 2 orchestration and 2 worker slots), measured from %v after its start (the start-up sweeps left out); month = 30 days", settle)}
		u := d.Usage().Sub(before)
		r.Elapsed = time.Since(since)
		setUsage(&r, u)
		minutes := r.Elapsed.Minutes()
		setExtra(&r, ExtraDynamoDBPerMinute, float64(u.DynamoDBRequests())/minutes)
		setExtra(&r, ExtraSQSPerMinute, float64(u.SQSRequests())/minutes)
		setExtra(&r, ExtraIdleMonth, 2*u.Dollars()/minutes*minutesPerMonth)
		return r, nil
	})
}

// afterIdle sets every system up, starts a runtime of default options on
// each and has its client check the table's layout, all at once; waits
// settle, takes each system's usage, waits idle; then calls measure on each
// system in turn with that usage and the time it was taken; then tears
// everything down.
func afterIdle(ctx context.Context, env *Env, scenario string, settle, idle time.Duration, measure func(ctx context.Context, d *Deployment, before billing.Usage, since time.Time) (report.Result, error)) ([]report.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, settle+idle+10*time.Minute)
	defer cancel()
	systems := env.systems()
	deps := make([]*Deployment, len(systems))
	befores := make([]billing.Usage, len(systems))
	sinces := make([]time.Time, len(systems))
	errs := make([]error, len(systems))
	var wg sync.WaitGroup
	for i, s := range systems {
		wg.Go(func() {
			env.logf("%s on %s: setting up", scenario, s.Name)
			d, err := s.Setup(ctx, env)
			if err != nil {
				errs[i] = err
				return
			}
			deps[i] = d
			if _, err := d.StartRuntime(ctx); err != nil {
				errs[i] = err
				return
			}
			// The client checks the table's layout once, at its first
			// request; a long-lived client did so long before the work
			// that follows an idle spell.
			if lc, ok := d.Provider.(layoutChecker); ok {
				errs[i] = lc.CheckLayout(ctx)
			}
		})
	}
	wg.Wait()
	sleepErr := sleepCtx(ctx, settle)
	for i, d := range deps {
		if d != nil {
			befores[i], sinces[i] = d.Usage(), time.Now()
		}
	}
	env.logf("%s: %d systems idle for %v", scenario, len(systems), idle)
	sleepErr = errors.Join(sleepErr, sleepCtx(ctx, idle))

	results := make([]report.Result, len(systems))
	for i, s := range systems {
		var r report.Result
		err := errors.Join(errs[i], sleepErr)
		if err == nil {
			r, err = measure(ctx, deps[i], befores[i], sinces[i])
		}
		r.Scenario, r.System = scenario, s.Name
		r.Notes = joinNotes(s.Notes, r.Notes, deps[i].meterNote())
		if err != nil {
			errs[i] = fmt.Errorf("%w: %s on %s: %w", ErrScenario, scenario, s.Name, err)
			r.Notes = joinNotes("FAILED: "+errs[i].Error(), r.Notes)
			env.logf("%s on %s: %v", scenario, s.Name, errs[i])
		} else {
			errs[i] = nil
			env.logf("%s on %s: %d DynamoDB and %d SQS requests measured over %v", scenario, s.Name, sum(r.DynamoDB), sum(r.SQS), r.Elapsed.Round(time.Millisecond))
		}
		results[i] = r
	}

	for i, d := range deps {
		if d == nil {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := d.Close(cctx); err != nil {
				errs[i] = errors.Join(errs[i], fmt.Errorf("%w: %s on %s: teardown: %w", ErrScenario, scenario, systems[i].Name, err))
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
