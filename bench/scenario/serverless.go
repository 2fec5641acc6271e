package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/lambdarun"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// ServerlessCostName is the name of the ServerlessCost scenario.
const ServerlessCostName = "ServerlessCost"

// ServerlessConfig sizes ServerlessCost.
type ServerlessConfig struct {
	// Instances is the number of HelloCities5 instances.
	Instances int
	// ChainSteps is the length of the chain.
	ChainSteps int
}

// Extra columns of ServerlessCost. The figures per activity are the
// unmetered run's invocations, priced by Lambda's rules
// ([billing.LambdaCost]).
const (
	ExtraInvocationsPerActivity = "invocations/activity"
	ExtraBilledMsPerInvocation  = "billed ms/invocation"
	ExtraColdStarts             = "cold starts"
	ExtraRecordsPerInvocation   = "signals/invocation"
	ExtraItemFailures           = "batch item failures"
)

// ExtraGBSecondsPerActivity is the extra column of the GB-seconds billed
// per activity at memoryMB.
func ExtraGBSecondsPerActivity(memoryMB int) string {
	return fmt.Sprintf("GB-s/activity at %d MB", memoryMB)
}

// ExtraTotalDollars is the extra column of the dollars per million
// activities at memoryMB: DynamoDB, SQS and Lambda.
func ExtraTotalDollars(memoryMB int) string {
	return fmt.Sprintf("total $/million activities at %d MB", memoryMB)
}

// serverlessNote says where a ServerlessCost result's figures come from.
const serverlessNote = "each invocation's duration measured from the handler's call to its return, plus lambdahost.New's time for a cold start, " +
	"rounded up to the ms, as Lambda bills; GB-s = billed seconds × memory / 1,024 MB; Lambda at its us-east-1 arm64 list prices " +
	"($0.20 per million requests, $0.0000133334 per GB-s); invocations and durations from a second run of the same workload without the meter, " +
	"on this machine's cores against the emulators (a 128 MB function has about a fourteenth of a vCPU); " +
	"DynamoDB and SQS requests, the mappings' receives and deletes included, from the metered run: '$/million activities' is theirs, " +
	"'total' adds Lambda; the sweep schedule, a fixed cost (about 43,800 invocations a month), is not included"

// ServerlessCost runs HelloCities5 (c.Instances instances) and one chain
// of c.ChainSteps activities through the Lambda host, when env's systems
// include DynamoDBSQS: a function of [lambdahost.Host]s behind an SQS
// event source mapping on each queue, as examples/lambda deploys it
// ([lambdarun]). Each workload runs twice on a fresh table: metered, for
// the DynamoDB and SQS requests and their cost, then unmetered, for the
// invocations and their durations (the meter's reads of item images would
// lengthen them). Each result gives, per activity, the invocations and
// the GB-seconds billed at 128, 256 and 512 MB, and the dollars per
// million activities of DynamoDB and SQS, and of all three.
func ServerlessCost(ctx context.Context, env *Env, c ServerlessConfig) ([]report.Result, error) {
	if _, ok := env.system(DynamoDBSQS); !ok {
		return nil, nil
	}
	var results []report.Result
	var errs []error
	for _, w := range []lambdaWorkload{helloOnLambda(c.Instances), chainOnLambda(c.ChainSteps)} {
		r, err := serverlessOn(ctx, env, w)
		results = append(results, r)
		errs = append(errs, err)
	}
	return results, errors.Join(errs...)
}

// serverlessOn runs w metered, then unmetered, and returns its result.
func serverlessOn(ctx context.Context, env *Env, w lambdaWorkload) (report.Result, error) {
	system := fmt.Sprintf("%s (%s)", lambdaSystem.Name, w.label)
	fail := func(r report.Result, err error) (report.Result, error) {
		err = fmt.Errorf("%w: %s on %s: %w", ErrScenario, ServerlessCostName, system, err)
		r.Scenario, r.System = ServerlessCostName, system
		r.Notes = joinNotes("FAILED: "+err.Error(), lambdaSystem.Notes)
		env.logf("%v", err)
		return r, err
	}
	metered, err := runOnLambda(ctx, env, w, system, true)
	if err != nil {
		return fail(metered.result, err)
	}
	timed, err := runOnLambda(ctx, env, w, system, false)
	if err == nil && timed.result.Activities != metered.result.Activities {
		err = fmt.Errorf("the unmetered run completed %d activities, the metered one %d", timed.result.Activities, metered.result.Activities)
	}
	if err != nil {
		return fail(metered.result, err)
	}
	r := metered.result
	r.Scenario, r.System = ServerlessCostName, system
	r.Elapsed, r.Latencies = timed.result.Elapsed, timed.result.Latencies
	setLambdaFigures(&r, timed)
	r.Notes = joinNotes(lambdaSystem.Notes, w.notes, serverlessNote, metered.result.Notes)
	env.logf("%s on %s: metered run %v, unmetered run %v; Lambda at 256 MB: $%.4g per million activities unmetered, $%.4g metered",
		ServerlessCostName, system, metered.cost, timed.cost,
		timed.cost.Dollars(256)/float64(r.Activities)*1e6, metered.cost.Dollars(256)/float64(r.Activities)*1e6)
	return r, nil
}

// setLambdaFigures sets r's Lambda columns from run's invocations, and
// r's DynamoDB and SQS cost with them in the totals.
func setLambdaFigures(r *report.Result, run lambdaRun) {
	a := float64(r.Activities)
	setExtra(r, ExtraInvocationsPerActivity, float64(run.cost.Invocations)/a)
	if n := float64(run.cost.Invocations); n > 0 {
		setExtra(r, ExtraBilledMsPerInvocation, float64(run.cost.Billed.Milliseconds())/n)
		setExtra(r, ExtraRecordsPerInvocation, float64(run.records)/n)
	}
	setExtra(r, ExtraColdStarts, float64(run.coldStarts))
	setExtra(r, ExtraItemFailures, float64(run.failed))
	for _, mb := range billing.LambdaMemorySizes {
		setExtra(r, ExtraGBSecondsPerActivity(mb), run.cost.GBSeconds(mb)/a)
		setExtra(r, ExtraTotalDollars(mb), (r.Dollars+run.cost.Dollars(mb))/a*1e6)
	}
}

// lambdaRun is what one run of a workload on a Lambda deployment
// measured.
type lambdaRun struct {
	// result has the activities, the times and, metered, the requests.
	result report.Result
	// cost is the function's invocations and billed duration.
	cost billing.LambdaCost
	// coldStarts counts the environments initialised.
	coldStarts int
	// records counts the messages the invocations got, failed those they
	// reported as failed.
	records, failed int
}

// runOnLambda sets a Lambda deployment up (metered or not), runs w on it,
// waits until the queues are empty and no invocation is under way, and
// returns what it measured from the first start to then.
func runOnLambda(ctx context.Context, env *Env, w lambdaWorkload, system string, metered bool) (run lambdaRun, err error) {
	which := "metered run"
	if !metered {
		which = "unmetered run, for the invocations' durations"
	}
	env.logf("%s on %s: setting up, %s", ServerlessCostName, system, which)
	ctx, cancel := context.WithTimeoutCause(ctx, w.timeout, fmt.Errorf("%s on %s took more than %v", ServerlessCostName, system, w.timeout))
	defer cancel()
	ld, err := setUpLambda(ctx, env, metered)
	if err != nil {
		return run, err
	}
	defer func() {
		run.result.Notes = joinNotes(run.result.Notes, ld.meterNote())
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := ld.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
		}
	}()
	fn := &lambdarun.Function{Init: ld.newEnvironment, Timeout: lambdaTimeout}
	mappings, stop := ld.startMappings(ctx, fn, ld.logger)
	defer stop()
	before := ld.Usage()
	began := time.Now()
	if run.result, err = w.run(ctx, ld.Deployment); err != nil {
		return run, err
	}
	if err := ld.settle(ctx, mappings); err != nil {
		return run, err
	}
	setUsage(&run.result, ld.Usage().Sub(before))
	invocations := fn.Invocations()
	run.coldStarts = fn.Environments()
	stop()
	for _, inv := range invocations {
		run.cost.Add(inv.Ran(lambdaTimeout))
		run.records += inv.Records
		run.failed += inv.Failed
		if inv.Err != nil {
			return run, fmt.Errorf("an invocation from %s failed: %w", inv.Source, inv.Err)
		}
	}
	env.logf("%s on %s: %s done in %v; %d activities, %v, %d cold starts, %d DynamoDB and %d SQS requests",
		ServerlessCostName, system, which, time.Since(began).Round(time.Millisecond), run.result.Activities, run.cost,
		run.coldStarts, run.result.DynamoDBRequests(), run.result.SQSRequests())
	return run, nil
}

// lambdaWorkload is what ServerlessCost runs on a Lambda deployment.
type lambdaWorkload struct {
	// label names the workload in the result's system.
	label string
	// notes describes it in the result's notes.
	notes string
	// ids are the instances it starts, all at once.
	ids []string
	// timeout bounds one run.
	timeout time.Duration
	// start starts one instance; check returns how many activities it
	// completed, or why its output is wrong.
	start func(ctx context.Context, d *Deployment, id string) error
	check func(ctx context.Context, d *Deployment, id string) (int, error)
}

// run starts every instance, waits for their terminal turns and checks
// their outputs: the result has the activities, the time from the first
// start to the last completion and each instance's latency.
func (w lambdaWorkload) run(ctx context.Context, d *Deployment) (report.Result, error) {
	var r report.Result
	began := time.Now()
	started, err := startAll(ctx, w.ids, func(ctx context.Context, id string) error { return w.start(ctx, d, id) })
	if err != nil {
		return r, err
	}
	last, latencies, err := waitAll(ctx, d, w.ids, started)
	if err != nil {
		return r, err
	}
	r.Elapsed, r.Latencies = last.Sub(began), latencies
	for _, id := range w.ids {
		n, err := w.check(ctx, d, id)
		if err != nil {
			return r, fmt.Errorf("%s: %w", id, err)
		}
		r.Activities += n
	}
	return r, nil
}

// helloOnLambda is HelloCities5 with instances instances.
func helloOnLambda(instances int) lambdaWorkload {
	ids := make([]string, instances)
	for i := range ids {
		ids[i] = fmt.Sprintf("hello-%06d", i)
	}
	want := make([]string, len(cities))
	for i, c := range cities {
		want[i] = greeting(c)
	}
	return lambdaWorkload{
		label:   fmt.Sprintf("%s, %d instances", HelloCities5Name, instances),
		notes:   fmt.Sprintf("%d HelloCities5 instances (five activities one after the other) started at once; latency from start to the commit of the terminal turn", instances),
		ids:     ids,
		timeout: 5*time.Minute + time.Duration(instances)*200*time.Millisecond,
		start: func(ctx context.Context, d *Deployment, id string) error {
			return helloCities5.Start(ctx, d.Client, id, struct{}{})
		},
		check: func(ctx context.Context, d *Deployment, id string) (int, error) {
			got, err := durable.WaitForOutput[[]string](ctx, d.Observer, id)
			if err != nil {
				return 0, err
			}
			if !slices.Equal(got, want) {
				return 0, fmt.Errorf("%w: returned %q", ErrWrongOutput, got)
			}
			return len(got), nil
		},
	}
}

// chainOnLambda is one chain of n activities.
func chainOnLambda(n int) lambdaWorkload {
	return lambdaWorkload{
		label:   ChainName(n),
		notes:   fmt.Sprintf("one instance calling %d activities one after the other", n),
		ids:     []string{"chain"},
		timeout: 5*time.Minute + time.Duration(n)*600*time.Millisecond,
		start: func(ctx context.Context, d *Deployment, id string) error {
			return chain.Start(ctx, d.Client, id, n)
		},
		check: func(ctx context.Context, d *Deployment, id string) (int, error) {
			got, err := durable.WaitForOutput[int](ctx, d.Observer, id)
			if err != nil {
				return 0, err
			}
			if got != n {
				return 0, fmt.Errorf("%w: %d of %d steps returned their input", ErrWrongOutput, got, n)
			}
			return got, nil
		},
	}
}
