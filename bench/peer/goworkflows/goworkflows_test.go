package goworkflows

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/backend/history"
	"github.com/cschleiden/go-workflows/core"
	"github.com/cschleiden/go-workflows/workflow"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/redis/go-redis/v9"
)

// Sizes: tiny in -short mode (the CI smoke), larger otherwise; the
// environment variables DURADYN_BENCH_PEER_INSTANCES and
// DURADYN_BENCH_PEER_FANOUT override them (the test then logs the
// figures, for measuring by hand).
func sizes(t *testing.T) (instances, fanOut int) {
	t.Helper()
	instances, fanOut = 20, 100
	if testing.Short() {
		instances, fanOut = 5, 20
	}
	instances = envSize(t, "DURADYN_BENCH_PEER_INSTANCES", instances)
	fanOut = envSize(t, "DURADYN_BENCH_PEER_FANOUT", fanOut)
	return instances, fanOut
}

func envSize(t *testing.T, name string, fallback int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return fallback
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// startRedis starts a private Redis for t. Without redis-server it fails
// with ErrNoRedis's message, unless DURADYN_BENCH_NO_REDIS=1 (then it
// skips t).
func startRedis(t *testing.T) string {
	t.Helper()
	addr, stop, err := StartRedis(t.Context(), t.TempDir())
	if errors.Is(err, ErrNoRedis) && os.Getenv("DURADYN_BENCH_NO_REDIS") == "1" {
		t.Skipf("DURADYN_BENCH_NO_REDIS=1: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop Redis: %v", err)
		}
	})
	return addr
}

// configFor returns a Config for backend with its Dir or a started Redis.
func configFor(t *testing.T, backend string) Config {
	t.Helper()
	c := Config{Backend: backend}
	switch backend {
	case BackendSQLiteFile:
		c.Dir = t.TempDir()
	case BackendRedis:
		c.RedisAddr = startRedis(t)
	}
	return c
}

// logFigures logs what a run measured.
func logFigures(t *testing.T, r report.Result) {
	t.Helper()
	lat := slices.Clone(r.Latencies)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	line := r.Scenario + " on " + r.System + ": " + strconv.Itoa(r.Activities) + " activities in " +
		r.Elapsed.Round(time.Millisecond).String() + ", " +
		strconv.FormatFloat(float64(r.Activities)/r.Elapsed.Seconds(), 'f', 0, 64) + " activities/s, p50 " +
		pct(0.50).Round(time.Millisecond).String() + ", p99 " + pct(0.99).Round(time.Millisecond).String()
	if r.PeerCommands > 0 {
		line += ", " + strconv.Itoa(r.PeerCommands) + " Redis commands (" +
			strconv.FormatFloat(float64(r.PeerCommands)/float64(r.Activities), 'f', 1, 64) + " per activity)"
	}
	t.Log(line)
}

// checkResult checks the fields every scenario fills.
func checkResult(t *testing.T, r report.Result, backend, scenario string, activities, latencies int) {
	t.Helper()
	if r.Scenario != scenario {
		t.Errorf("Scenario = %q, want %q", r.Scenario, scenario)
	}
	if want := "go-workflows/" + backend; r.System != want {
		t.Errorf("System = %q, want %q", r.System, want)
	}
	if r.Activities != activities {
		t.Errorf("Activities = %d, want %d", r.Activities, activities)
	}
	if r.Elapsed <= 0 {
		t.Errorf("Elapsed = %v, want > 0", r.Elapsed)
	}
	if r.CPU <= 0 {
		t.Errorf("CPU = %v, want > 0 (the process ran the workflows)", r.CPU)
	}
	if len(r.Latencies) != latencies {
		t.Errorf("%d latencies, want %d", len(r.Latencies), latencies)
	}
	for i, l := range r.Latencies {
		if l <= 0 || l > r.Elapsed {
			t.Errorf("latency %d = %v, want in (0, Elapsed=%v]", i, l, r.Elapsed)
		}
	}
	if backend == BackendRedis && r.PeerCommands <= 0 {
		t.Errorf("PeerCommands = %d, want > 0 on Redis", r.PeerCommands)
	}
	if backend != BackendRedis && r.PeerCommands != 0 {
		t.Errorf("PeerCommands = %d, want 0 without Redis", r.PeerCommands)
	}
	if r.Notes == "" {
		t.Error("Notes empty, want the configuration")
	}
}

func TestHelloCities5CompletesEveryInstanceOnEveryBackend(t *testing.T) {
	instances, _ := sizes(t)
	want := make([]string, len(Cities))
	for i, city := range Cities {
		want[i] = "Hello, " + city + "!"
	}
	for _, backend := range Backends() {
		t.Run(backend, func(t *testing.T) {
			c := configFor(t, backend)
			c.Instances = instances
			r, outputs, err := helloCities5Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r, backend, "HelloCities5", instances*5, instances)
			if len(outputs) != instances {
				t.Fatalf("%d outputs, want %d", len(outputs), instances)
			}
			for i, got := range outputs {
				if !slices.Equal(got, want) {
					t.Errorf("instance %d returned %q, want %q", i, got, want)
				}
			}
			logFigures(t, r)
		})
	}
}

func TestFanOutCompletesEveryActivityOnEveryBackend(t *testing.T) {
	_, n := sizes(t)
	for _, backend := range Backends() {
		t.Run(backend, func(t *testing.T) {
			c := configFor(t, backend)
			c.FanOut = n
			r, outputs, err := fanOutRun(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r, backend, "FanOut"+strconv.Itoa(n), n, 1)
			if len(outputs) != 1 || len(outputs[0]) != n {
				t.Fatalf("outputs %d×%d, want 1×%d", len(outputs), len(outputs[0]), n)
			}
			for i, got := range outputs[0] {
				if want := "Hello, " + Cities[i%len(Cities)] + "!"; got != want {
					t.Errorf("greeting %d = %q, want %q", i, got, want)
				}
			}
			logFigures(t, r)
		})
	}
}

func TestExportedScenariosReturnTheirResult(t *testing.T) {
	r, err := HelloCities5(t.Context(), Config{Backend: BackendMonoprocess, Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, BackendMonoprocess, "HelloCities5", 10, 2)
	r, err = FanOut(t.Context(), Config{Backend: BackendMonoprocess, FanOut: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, BackendMonoprocess, "FanOut3", 3, 1)
}

func TestRedisRunsStartOnAFreshKeyspace(t *testing.T) {
	c := configFor(t, BackendRedis)
	c.Instances = 2
	// The instance IDs repeat: the second run fails if the first run's
	// instances are still there.
	var commands []int
	for run := range 2 {
		r, err := HelloCities5(t.Context(), c)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		commands = append(commands, r.PeerCommands)
	}
	rdb := redis.NewClient(&redis.Options{Addr: c.RedisAddr})
	defer rdb.Close()
	keys, err := rdb.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, "hello-000002") {
			t.Errorf("key %q of an instance neither run started", k)
		}
	}
	if len(keys) == 0 {
		t.Error("no keys after the second run, want its instances")
	}
	if commands[0] <= 0 || commands[1] <= 0 {
		t.Errorf("PeerCommands = %v, want both > 0", commands)
	}
}

func TestSQLiteFileRunRemovesItsDatabase(t *testing.T) {
	c := configFor(t, BackendSQLiteFile)
	c.Instances = 1
	if _, err := HelloCities5(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("Dir holds %d entries after the run, want none (first: %s)", len(left), left[0].Name())
	}
}

func TestInvalidConfigsFailWithErrConfig(t *testing.T) {
	for name, c := range map[string]Config{
		"unknown backend":      {Backend: "mysql", Instances: 1, FanOut: 1},
		"sqlite-file no Dir":   {Backend: BackendSQLiteFile, Instances: 1, FanOut: 1},
		"redis no address":     {Backend: BackendRedis, Instances: 1, FanOut: 1},
		"no instances/fan-out": {Backend: BackendMonoprocess},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := HelloCities5(t.Context(), c); !errors.Is(err, ErrConfig) {
				t.Errorf("HelloCities5: err = %v, want ErrConfig", err)
			}
			if _, err := FanOut(t.Context(), c); !errors.Is(err, ErrConfig) {
				t.Errorf("FanOut: err = %v, want ErrConfig", err)
			}
		})
	}
}

func TestStartRedisAnswersPingUntilStopped(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("DURADYN_BENCH_NO_REDIS") == "1" {
		t.Skipf("DURADYN_BENCH_NO_REDIS=1: %v", err)
	}
	dir := t.TempDir()
	addr, stop, err := StartRedis(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		stop()
		t.Fatalf("PING: %v", err)
	}
	appendonly, err := rdb.ConfigGet(t.Context(), "appendonly").Result()
	if err != nil {
		t.Fatal(err)
	}
	if appendonly["appendonly"] != "yes" {
		t.Errorf("appendonly = %q, want yes", appendonly["appendonly"])
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if err := rdb.Ping(t.Context()).Err(); err == nil {
		t.Error("PING answered after stop")
	}
}

func TestStartRedisWithoutBinaryFailsWithErrNoRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, err := StartRedis(t.Context(), t.TempDir())
	if !errors.Is(err, ErrNoRedis) {
		t.Fatalf("err = %v, want ErrNoRedis", err)
	}
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("err = %v, want it to wrap the lookup's exec.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "bench/scripts/install-redis") {
		t.Errorf("err = %q, want it to name bench/scripts/install-redis", err)
	}
}

func TestParseCommandStatsSumsCallsWithoutInfo(t *testing.T) {
	stats, err := parseCommandStats("# Commandstats\r\n" +
		"cmdstat_xadd:calls=12,usec=80,usec_per_call=6.67,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_info:calls=7,usec=10,usec_per_call=1.43,rejected_calls=0,failed_calls=0\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.total(); got != 15 {
		t.Errorf("total = %d, want 15 (INFO left out)", got)
	}
	before := commandStats{"xadd": 2}
	if got := stats.sub(before).total(); got != 13 {
		t.Errorf("total after sub = %d, want 13", got)
	}
}

// TestWaitStoppedGivesUpOnAStuckWorker: a worker whose tasks never finish
// costs the run workerStopTimeout, not the rest of the benchmark.
func TestWaitStoppedGivesUpOnAStuckWorker(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stuck := func() error { <-release; return nil }
	if err := waitStopped(stuck, 50*time.Millisecond); !errors.Is(err, errWorkerStuck) {
		t.Fatalf("waitStopped of a stuck worker = %v, want errWorkerStuck", err)
	}
	boom := errors.New("boom")
	if err := waitStopped(func() error { return boom }, time.Minute); !errors.Is(err, boom) {
		t.Fatalf("waitStopped of a stopped worker = %v, want its error", err)
	}
}

// helloStart is one HelloCities5 instance and what it returns.
func helloStart() ([]start, []string) {
	want := make([]string, len(Cities))
	for i, city := range Cities {
		want[i] = Greeting(city)
	}
	return []start{{id: "hello-000000", workflow: helloCities5Name}}, want
}

// TestMaxHistoryBoundIsWhatGoWorkflowsWrites: an instance whose activities
// each wake a workflow task of their own (HelloCities5's sequential ones)
// writes exactly historyEventsPerActivity events per activity and
// historyEventsPerWorkflow more, the most an instance of that many
// activities can write; go-workflows completes it under a maximum history
// of that many events and fails it under one less, and the run reports
// the workflow's own error.
func TestMaxHistoryBoundIsWhatGoWorkflowsWrites(t *testing.T) {
	starts, want := helloStart()
	exact := int64(historyEventsPerActivity*len(Cities) + historyEventsPerWorkflow)
	c := Config{Backend: BackendMonoprocess}
	r := report.Result{Scenario: "HelloCities5", System: System(c.Backend)}

	if _, _, err := runScenario(t.Context(), c, r, starts, len(Cities), exact, want); err != nil {
		t.Fatalf("max history %d: %v", exact, err)
	}
	r, _, err := runScenario(t.Context(), c, r, starts, len(Cities), exact-1, want)
	if !errors.Is(err, ErrWorkflowFailed) {
		t.Fatalf("max history %d: err = %v, want ErrWorkflowFailed", exact-1, err)
	}
	t.Log(err)
	if msg := err.Error(); !strings.Contains(msg, "workflow history size exceeded") || strings.Contains(msg, "JSON") {
		t.Errorf("max history %d: err = %q, want go-workflows' own error, not a decoding one", exact-1, msg)
	}
	if !strings.Contains(r.Notes, "max history raised to "+strconv.FormatInt(exact-1, 10)+" events") {
		t.Errorf("Notes = %q, want the max history", r.Notes)
	}
}

// TestMaxHistorySizeLeavesRoomForEveryEvent checks the bound's arithmetic
// at the benchmark's sizes: room for historyEventsPerActivity events per
// activity and historyEventsPerWorkflow more (what
// TestMaxHistoryBoundIsWhatGoWorkflowsWrites counts go-workflows writing
// at most), never below go-workflows' default, and the notes say the
// bound used.
func TestMaxHistorySizeLeavesRoomForEveryEvent(t *testing.T) {
	if historyHeadroom < historyEventsPerWorkflow {
		t.Fatalf("historyHeadroom %d < historyEventsPerWorkflow %d", historyHeadroom, historyEventsPerWorkflow)
	}
	for _, n := range []int{1, 5, 1000, 3300, 10000, 100000} {
		need := int64(historyEventsPerActivity*n + historyEventsPerWorkflow)
		if got := maxHistorySize(n); got < need {
			t.Errorf("maxHistorySize(%d) = %d, want at least %d", n, got, need)
		}
	}
	if got, def := maxHistorySize(len(Cities)), backend.DefaultOptions.MaxHistorySize; got != def {
		t.Errorf("maxHistorySize(%d) = %d, want the default %d", len(Cities), got, def)
	}
	if got := maxHistorySize(10000); got != 30100 {
		t.Errorf("maxHistorySize(10000) = %d, want 30100", got)
	}
	n := notes(BackendMonoprocess, workerOptions(BackendMonoprocess, Config{}.runTimeout(10000)), maxHistorySize(10000))
	if !strings.Contains(n, "max history raised to 30100 events") {
		t.Errorf("notes = %q, want the raised max history", n)
	}
}

// TestExecutorCacheOutlastsTheRun: go-workflows closes a cached executor
// whose TTL expires even while it runs a workflow task; with the default
// 10 s, FanOut10000's fan-in tasks (minutes long) had their executor
// closed under them and the workflow finished without a result. The TTL
// the worker gets is at least the run's time limit, and the notes say so.
func TestExecutorCacheOutlastsTheRun(t *testing.T) {
	for _, backendName := range Backends() {
		for _, n := range []int{1, 500, 1000, 10000} {
			limit := Config{}.runTimeout(n)
			wo := workerOptions(backendName, limit)
			if wo.WorkflowExecutorCacheTTL < limit {
				t.Errorf("%s, %d activities: WorkflowExecutorCacheTTL = %v, want at least the run's limit %v", backendName, n, wo.WorkflowExecutorCacheTTL, limit)
			}
			if wo.WorkflowExecutorCacheSize != executorCacheSize {
				t.Errorf("%s: WorkflowExecutorCacheSize = %d, want %d", backendName, wo.WorkflowExecutorCacheSize, executorCacheSize)
			}
		}
	}
	limit := Config{}.runTimeout(10000)
	n := notes(BackendRedis, workerOptions(BackendRedis, limit), maxHistorySize(10000))
	if want := "executor cache TTL raised from 10s to " + limit.String(); !strings.Contains(n, want) {
		t.Errorf("notes = %q, want %q", n, want)
	}
}

// TestTimeoutSetIsTheRunsLimit: a scenario gives the peer the limit its
// duradyn systems get; unset, the limit grows with the activities.
func TestTimeoutSetIsTheRunsLimit(t *testing.T) {
	if got := (Config{Timeout: 21 * time.Minute}).runTimeout(10000); got != 21*time.Minute {
		t.Errorf("limit with Timeout 21m = %v, want 21m", got)
	}
	if small, large := (Config{}).runTimeout(10), (Config{}).runTimeout(10000); small >= large {
		t.Errorf("default limits %v for 10 activities and %v for 10,000: want more room for more", small, large)
	}
}

// TestUnknownWorkflowFailsWithItsError: a workflow that fails is reported
// with ErrWorkflowFailed and go-workflows' error, not as an unreadable
// result.
func TestUnknownWorkflowFailsWithItsError(t *testing.T) {
	c := Config{Backend: BackendMonoprocess}
	r := report.Result{Scenario: "Unknown", System: System(c.Backend)}
	starts := []start{{id: "unknown", workflow: "NoSuchWorkflow"}}
	_, _, err := runScenario(t.Context(), c, r, starts, 1, maxHistorySize(1), []string{"x"})
	if !errors.Is(err, ErrWorkflowFailed) {
		t.Fatalf("err = %v, want ErrWorkflowFailed", err)
	}
	if !strings.Contains(err.Error(), "NoSuchWorkflow not found") {
		t.Errorf("err = %q, want go-workflows' error naming the workflow", err)
	}
}

// completer is a backend whose CompleteWorkflowTask succeeds and does
// nothing.
type completer struct{ backend.Backend }

func (completer) CompleteWorkflowTask(context.Context, *backend.WorkflowTask, core.WorkflowInstanceState,
	[]*history.Event, []*history.Event, []*history.Event, []*history.WorkflowEvent,
) error {
	return nil
}

// TestFinishRecorderKeepsHowEachInstanceFinished: the recorder keeps a
// finished instance's error, and errNoResult for one that finished with
// neither a result nor an error (what an executor closed mid-task
// writes).
func TestFinishRecorderKeepsHowEachInstanceFinished(t *testing.T) {
	finished := func(a *history.ExecutionCompletedAttributes) []*history.Event {
		return []*history.Event{
			history.NewPendingEvent(time.Now(), history.EventType_WorkflowTaskStarted, &history.WorkflowTaskStartedAttributes{}),
			history.NewPendingEvent(time.Now(), history.EventType_WorkflowExecutionFinished, a),
		}
	}
	boom := &workflow.Error{Message: "boom"}
	rec := newFinishRecorder(completer{}, []string{"ok", "failed", "empty"})
	for id, events := range map[string][]*history.Event{
		"ok":     finished(&history.ExecutionCompletedAttributes{Result: []byte(`["Hello, Tokyo!"]`)}),
		"failed": finished(&history.ExecutionCompletedAttributes{Error: boom}),
		"empty":  finished(&history.ExecutionCompletedAttributes{}),
	} {
		task := &backend.WorkflowTask{WorkflowInstance: core.NewWorkflowInstance(id, "1")}
		if err := rec.CompleteWorkflowTask(t.Context(), task, core.WorkflowInstanceStateFinished, events, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-rec.Done():
	default:
		t.Fatal("Done not closed after every instance finished")
	}
	if err := rec.Failure("ok"); err != nil {
		t.Errorf("Failure(ok) = %v, want nil", err)
	}
	if err := rec.Failure("failed"); err == nil || err.Error() != "boom" {
		t.Errorf("Failure(failed) = %v, want the workflow's error boom", err)
	}
	if err := rec.Failure("empty"); !errors.Is(err, errNoResult) {
		t.Errorf("Failure(empty) = %v, want errNoResult", err)
	}
}

// TestFanOut10000CompletesOnMonoprocess runs FanOut10000 as the benchmark
// does, on the quickest backend: its fan-in tasks run for minutes, longer
// than go-workflows' default executor cache TTL, and its history is over
// 20,000 events, twice the default maximum.
func TestFanOut10000CompletesOnMonoprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: FanOut10000 takes minutes (its fan-in tasks alone run for over two on 2 cores); TestMaxHistoryBoundIsWhatGoWorkflowsWrites and TestExecutorCacheOutlastsTheRun check the bounds it depends on")
	}
	if raceEnabled {
		t.Skip("race detector: FanOut10000 would take several times its minutes, past go test's default timeout")
	}
	const n = 10000
	r, outputs, err := fanOutRun(t.Context(), Config{Backend: BackendMonoprocess, FanOut: n})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, BackendMonoprocess, "FanOut10000", n, 1)
	if len(outputs) != 1 || len(outputs[0]) != n {
		t.Fatalf("%d outputs, want 1 of %d greetings", len(outputs), n)
	}
	logFigures(t, r)
}
