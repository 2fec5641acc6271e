package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/bench/peer/goworkflows"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// startConcurrency bounds the client's concurrent starts.
const startConcurrency = 16

// HelloCities5Name is the name of the HelloCities5 scenario.
const HelloCities5Name = "HelloCities5"

// HelloCities5 starts instances instances of an orchestration that greets
// five cities one after the other (five sequential activities), all at once,
// on every system with the runtimes rt describes (one of default options
// for the zero value), and measures from the first start to the last
// completion, with each instance's latency. Then it runs go-workflows'
// HelloCities5 on env.Peers, with the peer's own defaults whatever rt.
func HelloCities5(ctx context.Context, env *Env, instances int, rt Runtimes) ([]report.Result, error) {
	timeout := 5*time.Minute + time.Duration(instances)*100*time.Millisecond
	results, err := onEverySystem(ctx, env, HelloCities5Name, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		return helloCities5On(ctx, d, instances, rt)
	})
	peers := runPeers(ctx, env, HelloCities5Name, func(ctx context.Context, c goworkflows.Config) (report.Result, error) {
		c.Instances = instances
		return goworkflows.HelloCities5(ctx, c)
	})
	return append(results, peers...), err
}

func helloCities5On(ctx context.Context, d *Deployment, instances int, rt Runtimes) (report.Result, error) {
	want := make([]string, len(cities))
	for i, c := range cities {
		want[i] = greeting(c)
	}
	return instancesOn(ctx, d, instances, "hello", rt, func(ctx context.Context, id string) error {
		return helloCities5.Start(ctx, d.Client, id, struct{}{})
	}, func(ctx context.Context, id string) (int, error) {
		got, err := durable.WaitForOutput[[]string](ctx, d.Observer, id)
		if err != nil {
			return 0, err
		}
		if !slices.Equal(got, want) {
			return 0, fmt.Errorf("%w: returned %q", ErrWrongOutput, got)
		}
		return len(got), nil
	})
}

// HelloCities5PayloadName is the name of the HelloCities5Payload scenario
// with payloads of bytes.
func HelloCities5PayloadName(bytes int) string { return HelloCities5Name + payloadSuffix(bytes) }

// payloadSuffix names payloads of bytes in a scenario's name: "Payload1KB"
// for whole KB, "Payload100B" otherwise.
func payloadSuffix(bytes int) string {
	if bytes%1024 == 0 {
		return fmt.Sprintf("Payload%dKB", bytes/1024)
	}
	return fmt.Sprintf("Payload%dB", bytes)
}

// HelloCities5Payload is HelloCities5 with payloads: each activity's input
// carries bytes of filler beside its city, and its output greets all of
// it, so both are about bytes long. It runs on the duradyn systems only,
// to show what a payload costs in write and read units, and, after
// DynamoDBSQS, on DynamoDBSQSUncompressed, to show what compressing
// payloads saves.
func HelloCities5Payload(ctx context.Context, env *Env, instances, bytes int) ([]report.Result, error) {
	timeout := 5*time.Minute + time.Duration(instances)*100*time.Millisecond
	var systems []System
	for _, s := range env.systems() {
		systems = append(systems, s)
		if s.Name == DynamoDBSQS {
			systems = append(systems, uncompressedSystem())
		}
	}
	return onSystems(ctx, env, systems, HelloCities5PayloadName(bytes), timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		r, err := instancesOn(ctx, d, instances, "hello-payload", Runtimes{}, func(ctx context.Context, id string) error {
			return helloCities5Padded.Start(ctx, d.Client, id, bytes)
		}, func(ctx context.Context, id string) (int, error) {
			return durable.WaitForOutput[int](ctx, d.Observer, id)
		})
		r.Notes = joinNotes(r.Notes, fmt.Sprintf("activity inputs and outputs of %d pseudo-random hex digits and a city's name", bytes))
		return r, err
	})
}

// Runtimes is how many runtimes a scenario starts on a duradyn system, and
// with how many slots. The zero value is one runtime of default options.
type Runtimes struct {
	// Count is the number of runtimes, each on its own provider as
	// separate processes would be (0: one).
	Count int
	// Slots, when above 0, is each runtime's OrchestrationConcurrency and
	// WorkerConcurrency (0: the runtime's defaults, 2 and 2).
	Slots int
}

// start starts the runtimes rt describes on d.
func (rt Runtimes) start(ctx context.Context, d *Deployment) error {
	for range max(rt.Count, 1) {
		if _, err := d.StartRuntime(ctx, func(o *durable.Options) {
			if rt.Slots > 0 {
				o.OrchestrationConcurrency, o.WorkerConcurrency = rt.Slots, rt.Slots
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// String describes rt for a result's notes.
func (rt Runtimes) String() string {
	slots := "default options (2 orchestration and 2 worker slots)"
	if rt.Slots > 0 {
		slots = fmt.Sprintf("%d orchestration and %d worker slots, other options default", rt.Slots, rt.Slots)
	}
	if rt.Count > 1 {
		return fmt.Sprintf("%d runtimes on one table, each with its own provider and %s", rt.Count, slots)
	}
	return "runtime with " + slots
}

// instancesOn starts the runtimes rt describes, then instances instances
// named prefix-000000, ... with runInstances.
func instancesOn(ctx context.Context, d *Deployment, instances int, prefix string, rt Runtimes,
	start func(ctx context.Context, id string) error, check func(ctx context.Context, id string) (int, error)) (report.Result, error) {
	if err := rt.start(ctx, d); err != nil {
		return report.Result{}, err
	}
	ids := make([]string, instances)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	r, err := runInstances(ctx, d, ids, start, check)
	r.Notes = rt.String() + "; latency from start to the commit of the terminal turn"
	return r, err
}

// runInstances starts ids with start, all at once, and measures from the
// first start to the last completion, with each instance's latency; check
// returns how many activities an instance completed, or why its output is
// wrong.
func runInstances(ctx context.Context, d *Deployment, ids []string,
	start func(ctx context.Context, id string) error, check func(ctx context.Context, id string) (int, error)) (report.Result, error) {
	var r report.Result
	before, cpu := d.Usage(), report.ProcessCPU()
	began := time.Now()
	started, err := startAll(ctx, ids, start)
	if err != nil {
		return r, err
	}
	last, latencies, err := waitAll(ctx, d, ids, started)
	if err != nil {
		return r, err
	}
	r.CPU = report.ProcessCPU() - cpu
	setUsage(&r, d.Usage().Sub(before))
	r.Elapsed = last.Sub(began)
	r.Latencies = latencies
	for _, id := range ids {
		n, err := check(ctx, id)
		if err != nil {
			return r, fmt.Errorf("%s: %w", id, err)
		}
		r.Activities += n
	}
	return r, nil
}

// startAll starts every id with start, startConcurrency at a time, and
// returns when each start was called.
func startAll(ctx context.Context, ids []string, start func(ctx context.Context, id string) error) ([]time.Time, error) {
	started := make([]time.Time, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(startConcurrency, len(ids)) {
		wg.Go(func() {
			for i := range next {
				started[i] = time.Now()
				if err := start(ctx, ids[i]); err != nil {
					errs[i] = fmt.Errorf("start %s: %w", ids[i], err)
				}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	return started, errors.Join(errs...)
}

// waitAll waits until every instance's terminal turn committed and returns
// the last such time and each instance's latency from its start.
func waitAll(ctx context.Context, d *Deployment, ids []string, started []time.Time) (time.Time, []time.Duration, error) {
	var last time.Time
	latencies := make([]time.Duration, len(ids))
	for i, id := range ids {
		at, err := d.WaitCompleted(ctx, id)
		if err != nil {
			return last, nil, err
		}
		latencies[i] = at.Sub(started[i])
		if at.After(last) {
			last = at
		}
	}
	return last, latencies, nil
}

// PeerSystem is the System of a go-workflows backend's results.
func PeerSystem(backend string) string { return goworkflows.System(backend) }

// runPeers runs fn on every peer backend of env. A peer that cannot run
// gets a result saying why (Redis not installed, or its error); peers'
// failures are not the scenario's.
func runPeers(ctx context.Context, env *Env, scenario string, fn func(ctx context.Context, c goworkflows.Config) (report.Result, error)) []report.Result {
	var results []report.Result
	for _, backend := range env.Peers {
		system := PeerSystem(backend)
		if backend == "redis" && env.RedisAddr == "" {
			reason := "no Redis address"
			if env.RedisErr != nil {
				reason = env.RedisErr.Error()
			}
			if errors.Is(env.RedisErr, goworkflows.ErrNoRedis) {
				reason = "Redis was not installed (" + reason + ")"
			}
			env.logf("%s on %s: not run: %s", scenario, system, reason)
			results = append(results, report.Result{Scenario: scenario, System: system, Notes: "not run: " + reason})
			continue
		}
		env.logf("%s on %s: running", scenario, system)
		began := time.Now()
		r, err := fn(ctx, goworkflows.Config{Backend: backend, Dir: env.PeerDir, RedisAddr: env.RedisAddr})
		if r.System == "" {
			r.System = system
		}
		r.Scenario = scenario
		if err != nil {
			env.logf("%s on %s: failed: %v", scenario, system, err)
			r.Notes = joinNotes("FAILED: "+err.Error(), r.Notes)
		} else {
			env.logf("%s on %s: done in %v (%d activities)", scenario, system, time.Since(began).Round(time.Millisecond), r.Activities)
		}
		results = append(results, r)
	}
	return results
}

// WarmUp runs instances HelloCities5 instances on the first DynamoDB system
// of env and records nothing: the emulator (DynamoDB Local runs on a JVM)
// is slow until its hot paths are compiled, and the first system measured
// should not pay for that.
func WarmUp(ctx context.Context, env *Env, instances int) error {
	for _, s := range env.systems() {
		if !s.DynamoDB {
			continue
		}
		quiet := *env
		quiet.Logf = nil
		_, err := onSystem(ctx, &quiet, s, "WarmUp", 5*time.Minute, timesMetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
			return helloCities5On(ctx, d, instances, Runtimes{})
		})
		return err
	}
	return nil
}
