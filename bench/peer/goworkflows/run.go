package goworkflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/client"
	"github.com/cschleiden/go-workflows/worker"
	"github.com/cschleiden/go-workflows/workflow"
	"github.com/duradyn/duradyn/bench/report"
)

// startConcurrency bounds the client's concurrent starts, as on duradyn's
// side of the benchmark.
const startConcurrency = 16

// HelloCities5 starts c.Instances instances of a workflow that greets the
// five Cities one after the other (five sequential "Hello" activities),
// all at once, on c.Backend, and measures from the first start to the last
// completion, with each instance's latency from its start. It checks every
// instance's output (ErrWorkflowFailed with the workflow's error when one
// failed). Activities is c.Instances*5; for the "redis" backend,
// PeerCommands is the Redis commands executed in the measured part.
func HelloCities5(ctx context.Context, c Config) (report.Result, error) {
	r, _, err := helloCities5Run(ctx, c)
	return r, err
}

// FanOut runs one workflow on c.Backend that schedules c.FanOut "Hello"
// activities at once and waits for all of them, and measures from its
// start to its completion (also its one latency). It checks the output
// (ErrWorkflowFailed with the workflow's error when it failed). Activities
// is c.FanOut; for the "redis" backend, PeerCommands is the
// Redis commands executed in the measured part.
func FanOut(ctx context.Context, c Config) (report.Result, error) {
	r, _, err := fanOutRun(ctx, c)
	return r, err
}

// helloCities5Run is HelloCities5, also returning each instance's output.
func helloCities5Run(ctx context.Context, c Config) (report.Result, [][]string, error) {
	r := report.Result{Scenario: "HelloCities5", System: System(c.Backend)}
	if c.Instances < 1 {
		return r, nil, fmt.Errorf("%w: Instances is %d", ErrConfig, c.Instances)
	}
	starts := make([]start, c.Instances)
	for i := range starts {
		starts[i] = start{id: fmt.Sprintf("hello-%06d", i), workflow: helloCities5Name}
	}
	want := make([]string, len(Cities))
	for i, city := range Cities {
		want[i] = Greeting(city)
	}
	return runScenario(ctx, c, r, starts, len(Cities), maxHistorySize(len(Cities)), want)
}

// fanOutRun is FanOut, also returning the workflow's output.
func fanOutRun(ctx context.Context, c Config) (report.Result, [][]string, error) {
	r := report.Result{Scenario: fmt.Sprintf("FanOut%d", c.FanOut), System: System(c.Backend)}
	if c.FanOut < 1 {
		return r, nil, fmt.Errorf("%w: FanOut is %d", ErrConfig, c.FanOut)
	}
	want := make([]string, c.FanOut)
	for i := range want {
		want[i] = Greeting(fanOutCity(i))
	}
	starts := []start{{id: "fan-out", workflow: fanOutName, args: []any{c.FanOut}}}
	return runScenario(ctx, c, r, starts, c.FanOut, maxHistorySize(c.FanOut), want)
}

// start is one workflow instance a scenario starts.
type start struct {
	id       string
	workflow string
	args     []any
}

// Worker configuration. go-workflows' benchmark uses worker.DefaultOptions
// with an executor cache of 128 and, for Redis, no polling interval (its
// task reads block); the defaults are 2 workflow and 2 activity pollers and
// no limit on parallel tasks.
const executorCacheSize = 128

// History bound. go-workflows fails a workflow whose history reaches the
// backend's MaxHistorySize (default 10,000 events): its executor checks,
// before each workflow task's commands, that the history so far plus the
// task's WorkflowTaskStarted and new events stay below it. Runs whose
// instances may write more raise it to maxHistorySize.
const (
	// historyEventsPerActivity bounds the events one activity adds: its
	// ActivityScheduled and ActivityCompleted events and at most one
	// WorkflowTaskStarted, that of the workflow task its completion wakes
	// (a task starts only for new events, and often takes many
	// completions at once).
	historyEventsPerActivity = 3
	// historyEventsPerWorkflow is what an instance writes besides its
	// activities: WorkflowExecutionStarted, the first task's
	// WorkflowTaskStarted and WorkflowExecutionFinished.
	historyEventsPerWorkflow = 3
	// historyHeadroom covers the events per workflow and leaves room for
	// retried activities (an ActivityFailed, a backoff timer's two events,
	// a new ActivityScheduled and the tasks they wake).
	historyHeadroom = 100
)

// maxHistorySize is the backend's MaxHistorySize for instances of
// perInstance activities each: the default, or historyEventsPerActivity
// per activity and historyHeadroom when that is more.
func maxHistorySize(perInstance int) int64 {
	return max(backend.DefaultOptions.MaxHistorySize, int64(historyEventsPerActivity*perInstance+historyHeadroom))
}

// executorCacheTTL is the worker's WorkflowExecutorCacheTTL for a run
// whose time limit is limit: the limit, or the default when that is
// longer. go-workflows' executor cache closes an executor whose entry
// expires even while the executor runs a workflow task (the entry's TTL
// restarts when a task takes the executor, not when it ends); its
// workflow's coroutines are then stopped, and the workflow either hangs or
// finishes with neither a result nor an error. A fan-in task is long: each
// ActivityCompleted event resumes every coroutine still waiting (one per
// activity not yet completed, as DefaultActivityOptions retries), so
// FanOut10000's last tasks took minutes against the default 10 s, and its
// workflow finished without a result. No task outlives the run.
func executorCacheTTL(limit time.Duration) time.Duration {
	return max(worker.DefaultOptions.WorkflowExecutorCacheTTL, limit)
}

// workerOptions is the worker configuration of a run on backendName whose
// time limit is limit.
func workerOptions(backendName string, limit time.Duration) worker.Options {
	wo := worker.DefaultOptions
	wo.WorkflowExecutorCacheSize = executorCacheSize
	wo.WorkflowExecutorCacheTTL = executorCacheTTL(limit)
	if backendName == BackendRedis {
		wo.WorkflowPollingInterval = 0
		wo.ActivityPollingInterval = 0
	}
	return wo
}

// runScenario runs starts on a fresh c.Backend whose maximum history size
// is maxHistory, measures until every instance finished, and checks that
// each returned want; perInstance is how many activities one instance
// runs.
func runScenario(ctx context.Context, c Config, r report.Result, starts []start, perInstance int, maxHistory int64, want []string) (report.Result, [][]string, error) {
	if err := c.check(); err != nil {
		return r, nil, err
	}
	activities := perInstance * len(starts)
	limit := c.runTimeout(activities)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	logs := &errorLog{}
	opts := []backend.BackendOption{backend.WithLogger(slog.New(logs))}
	if maxHistory != backend.DefaultOptions.MaxHistorySize {
		opts = append(opts, backend.WithMaxHistorySize(maxHistory))
	}
	p, err := openPeer(ctx, c, opts...)
	if err != nil {
		return r, nil, err
	}
	ids := make([]string, len(starts))
	for i, s := range starts {
		ids[i] = s.id
	}
	rec := newFinishRecorder(p.backend, ids)

	wo := workerOptions(c.Backend, limit)
	r.Notes = notes(c.Backend, wo, maxHistory)

	g := &greeter{}
	w := worker.New(rec, &wo)
	if err := register(w, g); err != nil {
		return r, nil, errors.Join(err, p.close())
	}
	workerCtx, stopWorker := context.WithCancel(ctx)
	if err := w.Start(workerCtx); err != nil {
		stopWorker()
		return r, nil, errors.Join(fmt.Errorf("start worker: %w", err), p.close())
	}
	// Stop the worker, wait for its tasks and pollers (at most
	// workerStopTimeout), then close the backend, on every path out.
	shutdown := func() error {
		stopWorker()
		return errors.Join(waitStopped(w.WaitForCompletion, workerStopTimeout), p.close())
	}

	cl := client.New(rec)
	outputs, err := measure(ctx, p, rec, cl, starts, &r)
	if err == nil {
		if executed := int(g.executed.Load()); executed != activities {
			r.Notes += fmt.Sprintf("; %d activity executions for %d activities (retries)", executed, activities)
		}
		err = checkOutputs(starts, outputs, want)
		if err == nil {
			r.Activities = activities
		}
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %d of %d finished within %v: %w", ErrTimeout, rec.Finished(), len(starts), limit, err)
	}
	if err != nil {
		if logged := logs.Errors(); len(logged) > 0 {
			err = fmt.Errorf("%w (last errors logged by go-workflows: %s)", err, strings.Join(logged, "; "))
		}
	}
	return r, outputs, errors.Join(err, shutdown())
}

// workerStopTimeout bounds the wait for a stopped worker's tasks. After a
// FanOut10000 on Redis that ended with the workflow's result unreadable,
// go-workflows' WaitForCompletion waited on a task for over 25 minutes
// and held the whole benchmark run.
const workerStopTimeout = time.Minute

// errWorkerStuck reports a worker whose tasks did not finish within
// workerStopTimeout of its stop.
var errWorkerStuck = errors.New("goworkflows: the stopped worker's tasks did not finish")

// waitStopped runs wait (a worker's WaitForCompletion) and returns its
// error, or errWorkerStuck when it has not returned within timeout; it is
// then left running (with whatever goroutines it waits for).
func waitStopped(wait func() error, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w within %v; its goroutines are left behind", errWorkerStuck, timeout)
	}
}

// runTimeout bounds one run of the given activities: c.Timeout when set,
// or a default generous for a loaded 2-core machine.
func (c Config) runTimeout(activities int) time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return time.Minute + time.Duration(activities)*50*time.Millisecond
}

// measure starts every instance, waits until all finished, fills r's
// Elapsed, Latencies, PeerCommands and CPU, then reads each instance's output.
func measure(ctx context.Context, p *peer, rec *finishRecorder, cl *client.Client, starts []start, r *report.Result) ([][]string, error) {
	var before commandStats
	if p.redis != nil {
		var err error
		if before, err = readCommandStats(ctx, p.redis); err != nil {
			return nil, err
		}
	}

	cpu := report.ProcessCPU()
	began := time.Now()
	startedAt, instances, err := startAll(ctx, cl, starts)
	if err != nil {
		return nil, err
	}
	select {
	case <-rec.Done():
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for completions: %w", ctx.Err())
	}
	r.CPU = report.ProcessCPU() - cpu

	if p.redis != nil {
		after, err := readCommandStats(ctx, p.redis)
		if err != nil {
			return nil, err
		}
		r.PeerCommands = after.sub(before).total()
	}
	var last time.Time
	r.Latencies = make([]time.Duration, len(starts))
	for i, s := range starts {
		at, _ := rec.FinishedAt(s.id)
		r.Latencies[i] = at.Sub(startedAt[i])
		if at.After(last) {
			last = at
		}
	}
	r.Elapsed = last.Sub(began)

	outputs := make([][]string, len(starts))
	for i, inst := range instances {
		if err := rec.Failure(starts[i].id); err != nil {
			return outputs, fmt.Errorf("%w: %s: %w", ErrWorkflowFailed, starts[i].id, err)
		}
		out, err := client.GetWorkflowResult[[]string](ctx, cl, inst, time.Minute)
		if err != nil {
			return outputs, resultError(starts[i].id, err)
		}
		outputs[i] = out
	}
	return outputs, nil
}

// resultError is the error of an instance whose result could not be read:
// ErrWorkflowFailed with the workflow's own error when it failed, was
// canceled or was terminated, else the reading's error.
func resultError(id string, err error) error {
	var wfErr *workflow.Error
	if errors.As(err, &wfErr) || errors.Is(err, client.ErrWorkflowCanceled) || errors.Is(err, client.ErrWorkflowTerminated) {
		return fmt.Errorf("%w: %s: %w", ErrWorkflowFailed, id, err)
	}
	return fmt.Errorf("result of %s: %w", id, err)
}

// startAll creates every instance, startConcurrency at a time, and returns
// when each creation was called and the instances.
func startAll(ctx context.Context, cl *client.Client, starts []start) ([]time.Time, []*workflow.Instance, error) {
	startedAt := make([]time.Time, len(starts))
	instances := make([]*workflow.Instance, len(starts))
	errs := make([]error, len(starts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(startConcurrency, len(starts)) {
		wg.Go(func() {
			for i := range next {
				s := starts[i]
				startedAt[i] = time.Now()
				inst, err := cl.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: s.id}, s.workflow, s.args...)
				if err != nil {
					errs[i] = fmt.Errorf("start %s: %w", s.id, err)
				}
				instances[i] = inst
			}
		})
	}
	for i := range starts {
		next <- i
	}
	close(next)
	wg.Wait()
	return startedAt, instances, errors.Join(errs...)
}

// checkOutputs checks that every instance returned want.
func checkOutputs(starts []start, outputs [][]string, want []string) error {
	for i, got := range outputs {
		if !slices.Equal(got, want) {
			return fmt.Errorf("%w: %s returned %d greetings %.200q, want %d", ErrWrongOutput, starts[i].id, len(got), got, len(want))
		}
	}
	return nil
}

// notes describes the configuration of a run for report.Result.Notes.
func notes(backendName string, wo worker.Options, maxHistory int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "go-workflows v1.2.0, worker and client in one process; worker.DefaultOptions: %d workflow + %d activity pollers, no parallel-task limit, executor cache %d",
		wo.WorkflowPollers, wo.ActivityPollers, wo.WorkflowExecutorCacheSize)
	switch backendName {
	case BackendRedis:
		b.WriteString(", no polling interval (blocking reads), as go-workflows' benchmark; redis-server with appendonly yes, appendfsync always; PeerCommands from INFO commandstats (INFO excluded), commands run inside Lua scripts included")
	case BackendMonoprocess:
		fmt.Fprintf(&b, ", polling interval %v (pollers are woken when a task is created); SQLite in memory", wo.WorkflowPollingInterval)
	case BackendSQLiteMemory:
		fmt.Fprintf(&b, ", polling interval %v; SQLite in memory", wo.WorkflowPollingInterval)
	case BackendSQLiteFile:
		fmt.Fprintf(&b, ", polling interval %v; SQLite file (WAL)", wo.WorkflowPollingInterval)
	}
	if maxHistory != backend.DefaultOptions.MaxHistorySize {
		fmt.Fprintf(&b, "; max history raised to %d events", maxHistory)
	}
	if ttl := wo.WorkflowExecutorCacheTTL; ttl != worker.DefaultOptions.WorkflowExecutorCacheTTL {
		fmt.Fprintf(&b, "; executor cache TTL raised from %v to %v, the run's time limit (go-workflows closes a cached executor whose TTL expires even while it runs a workflow task)",
			worker.DefaultOptions.WorkflowExecutorCacheTTL, ttl)
	}
	fmt.Fprintf(&b, "; logging off; %d concurrent starters; latency from start to the commit of the finishing workflow task", startConcurrency)
	return b.String()
}
