package duradyn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/runtimetest"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider"
)

// Crash recovery: runtimes on the DynamoDB provider are killed with SIGKILL
// at chosen points (right after an orchestration fetch locked a turn, inside
// an activity, between the writes of a turn too large for one transaction)
// and restarted, again and again; a last runtime then runs everything to the
// end. Every instance must finish as a run without crashes finishes it, with
// a well-formed history and nothing left behind in the table.
//
// The runtimes run in child processes: the test binary itself, re-executed
// with -test.run=^TestCrashRecoveryProcess$ and the configuration in the
// environment variable crashProcessEnv. A child prints "MARK <kind> <detail>"
// on stdout when it reaches its kill point and then blocks there; the parent
// kills it on that line.

// crashProcessEnv carries a crashProcessConfig (JSON) to a child process.
const crashProcessEnv = "DURADYN_CRASH_PROCESS"

// Kill points (the kinds of marker a child prints).
const (
	killFetched   = "fetched"    // an orchestration fetch returned a locked turn
	killActivity  = "activity"   // an activity is running
	killLargeTurn = "large-turn" // a write of a staged large turn is about to be sent
)

// crashProcessConfig tells a child process where the table and queues are and
// where to stop.
type crashProcessConfig struct {
	DynamoDBURL, SQSURL, Region string
	Table                       string
	OrchestratorQueueURL        string
	WorkerQueueURL              string
	// Kill is the kill point (killFetched, killActivity, killLargeTurn), or
	// "" for a runtime that runs until its stdin closes.
	Kill string
	// At is the ordinal (from 1) of the fetch or activity start to stop at.
	At int
	// Step is the write of a large turn to stop before: "commit" or
	// "apply-<n>" (staging row n; the last one also finishes the turn).
	Step string
}

// The workload. Outputs are deterministic functions of the inputs:
//
//	crashFlow(i)              = 3s+1 where s = 2i + 2(i+1)
//	crashChild(x)             = 2x+1
//	crashFanOut({Base, N})    = Σ_{k<N} 2(Base+k)
var (
	// crashActivityHook, when set (in a child), runs at the start of every
	// activity.
	crashActivityHook func(ctx context.Context)

	crashDouble = durable.NewActivity("CrashDouble", func(ctx context.Context, x int) (int, error) {
		if crashActivityHook != nil {
			crashActivityHook(ctx)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 2 * x, nil
	})

	crashChild = durable.NewOrchestration("CrashChild", func(ctx *durable.OrchestrationContext, x int) (int, error) {
		v, err := crashDouble.Call(ctx, x).Get(ctx)
		if err != nil {
			return 0, err
		}
		return v + 1, nil
	})

	crashFlow = durable.NewOrchestration("CrashFlow", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		// Two activities and a short timer at once, then a child.
		a, b := crashDouble.Call(ctx, i), crashDouble.Call(ctx, i+1)
		timer := ctx.CreateTimer(20 * time.Millisecond)
		ab, err := durable.AwaitAll(ctx, a, b)
		if err != nil {
			return 0, err
		}
		if _, err := timer.Get(ctx); err != nil {
			return 0, err
		}
		s := ab[0] + ab[1]
		d, err := crashChild.CallSub(ctx, s).Get(ctx)
		if err != nil {
			return 0, err
		}
		return s + d, nil
	})

	crashFanOut = durable.NewOrchestration("CrashFanOut", func(ctx *durable.OrchestrationContext, in crashFanIn) (int, error) {
		// One turn schedules every activity: 2 writes each (history event,
		// worker row), far more than one transaction's 100 actions, so the
		// provider stages the turn and applies it in steps.
		fs := make([]durable.Future[int], in.N)
		for k := range fs {
			fs[k] = crashDouble.Call(ctx, in.Base+k)
		}
		vs, err := durable.AwaitAll(ctx, fs...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, nil
	})
)

type crashFanIn struct{ Base, N int }

func crashChildWant(x int) int { return 2*x + 1 }

func crashFlowWant(i int) int {
	s := 2*i + 2*(i+1)
	return s + crashChildWant(s)
}

func crashFanOutWant(in crashFanIn) int {
	sum := 0
	for k := range in.N {
		sum += 2 * (in.Base + k)
	}
	return sum
}

// Workload size.
const (
	// crashShards is the ready index's shards on the test's table (the
	// parent's provider and every child's): two, so that sweeps merge
	// shards, yet each sweep costs the emulator two queries only.
	crashShards = 2

	crashFlows   = 200
	crashFanOutN = 100 // activities one fan-out turn schedules
)

// crashKillDepths are the fetches (activity starts) after which the
// runtimes killed after a fetch (in an activity) are killed: the kills
// spread over the workload's life, yet leave about half of it to the last
// runtime.
var crashKillDepths = []int{3, 30, 90, 180}

// crashRuntimeOptions are every child's runtime options. Leases are short
// so that work a killed child held comes back within seconds. The wake-up
// signals a killed child had taken are made up for by sweeps: every 5 s
// while a process has work, each handing all the rows it saw to the
// process's fetches.
func crashRuntimeOptions(o *durable.Options) {
	o.OrchestrationConcurrency = 8
	o.WorkerConcurrency = 8
	o.LongPollTimeout = 5 * time.Second
	o.OrchestratorLockTimeout = 5 * time.Second
	o.OrchestratorLockRenewalBuffer = 2 * time.Second
	o.WorkerLockTimeout = 5 * time.Second
	o.WorkerLockRenewalBuffer = 2 * time.Second
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestCrashRecovery kills runtimes with SIGKILL at each kill point a few
// times, then lets a last runtime finish the work, and checks every
// instance: completed with the output of a run without crashes, one
// terminal event, contiguous event ids, each activity completed exactly
// once, and no message, staged turn or turn mark left in the table.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: crash recovery starts and kills a dozen runtime processes and runs 400 instances (about two minutes)")
	}
	// Parallel: it waits out killed processes' leases more than it
	// computes, so it runs beside the package's other parallel tests
	// once the suites are done.
	t.Parallel()
	began := time.Now()
	env := dynamotest.NewEnv(t, true)
	t.Logf("table and queues created (%s)", time.Since(began).Round(time.Millisecond))
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: crashShards})
	client := durable.NewClient(p, func(o *durable.ClientOptions) { o.PollMax = 250 * time.Millisecond })
	ctx := t.Context()
	base := crashProcessConfig{
		DynamoDBURL: env.Endpoints.DynamoDBURL, SQSURL: env.Endpoints.SQSURL, Region: env.Endpoints.Region,
		Table: env.Table, OrchestratorQueueURL: env.OrchestratorQueueURL, WorkerQueueURL: env.WorkerQueueURL,
	}

	want := map[string]int{}
	fanIns := map[string]crashFanIn{}
	kills := map[string]int{}
	var killLog []string
	killAt := func(c crashProcessConfig) {
		t.Helper()
		h := startCrashProcess(t, c)
		detail := h.waitMarker(c.Kill, 3*time.Minute)
		h.kill()
		kills[c.Kill]++
		line := fmt.Sprintf("kill %2d: %s %s", len(killLog)+1, c.Kill, detail)
		killLog = append(killLog, line)
		t.Logf("%s (%s)", line, time.Since(began).Round(time.Millisecond))
	}

	// Large turns first: each fan-out is started just before a runtime that
	// is killed at one step of the first large turn it writes, most likely
	// the fan-out's (or the roll-forward of an earlier one). Before the
	// flows are started, so that the fan-out is not queued behind them.
	for k, step := range []string{"commit", "apply-0", "apply-1"} {
		id := fmt.Sprintf("crash-fan-%d", k)
		in := crashFanIn{Base: 1000 * (k + 1), N: crashFanOutN}
		if err := crashFanOut.Start(ctx, client, id, in); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		fanIns[id] = in
		want[id] = crashFanOutWant(in)
		c := base
		c.Kill, c.Step = killLargeTurn, step
		killAt(c)
	}

	// Then the flows, with kills after fetches and inside activities, at
	// varying depths, alternately.
	crashParallel(t, crashFlows, func(i int) error {
		return crashFlow.Start(ctx, client, crashFlowID(i), i)
	})
	for i := range crashFlows {
		want[crashFlowID(i)] = crashFlowWant(i)
	}
	t.Logf("%d flows started (%s)", crashFlows, time.Since(began).Round(time.Millisecond))
	for _, at := range crashKillDepths {
		c := base
		c.Kill, c.At = killFetched, at
		killAt(c)
		c.Kill, c.At = killActivity, at
		killAt(c)
	}

	// The last runtime runs until every root instance has finished.
	final := startCrashProcess(t, base)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	roots := slices.Sorted(maps.Keys(want))
	for _, id := range roots {
		s, err := client.WaitForCompletion(waitCtx, id)
		if err != nil {
			t.Fatalf("wait for %s: %v\nlast runtime's stderr:\n%s", id, err, final.stderr.tail(8<<10))
		}
		if s.State != durable.StateCompleted {
			t.Errorf("%s: %s (%v), want Completed", id, s.State, s.Failure)
		}
	}
	finished := time.Since(began)
	final.stop(time.Minute)

	n := checkCrashRecovery(t, client, env, want, fanIns)
	t.Logf("kills: %v; %d instances (%d roots)\n%s", kills, n, len(roots), strings.Join(killLog, "\n"))
	t.Logf("all finished after %s; checked after %s", finished.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

func crashFlowID(i int) string { return fmt.Sprintf("crash-flow-%03d", i) }

// checkCrashRecovery checks every instance's history and output, and that
// nothing is left queued or half-applied. It returns how many instances
// there are.
func checkCrashRecovery(t *testing.T, client *durable.Client, env *dynamotest.Env, want map[string]int, fanIns map[string]crashFanIn) int {
	t.Helper()
	ctx := t.Context()
	ids, err := client.ListInstances(ctx)
	if err != nil {
		t.Fatalf("list instances: %v", err)
	}
	var (
		mu       sync.Mutex
		children = map[string]string{} // child -> parent
		subs     = map[string]int{}    // parent -> children scheduled
	)
	crashParallel(t, len(ids), func(n int) error {
		id := ids[n]
		execs, err := client.ListExecutions(ctx, id)
		if err != nil {
			return fmt.Errorf("%s: list executions: %w", id, err)
		}
		if !slices.Equal(execs, []uint64{1}) {
			return fmt.Errorf("%s: executions %v, want [1]", id, execs)
		}
		events, err := client.History(ctx, id, 1)
		if err != nil {
			return fmt.Errorf("%s: history: %w", id, err)
		}
		parent, scheduled, err := checkCrashHistory(id, events, want, fanIns)
		if err != nil {
			return fmt.Errorf("%s: %w\nhistory: %v", id, err, runtimetest.EventTypes(events))
		}
		mu.Lock()
		defer mu.Unlock()
		if parent != "" {
			children[id] = parent
		}
		subs[id] += scheduled
		return nil
	})

	// Every root exists; every flow has exactly one child, a CrashChild.
	for id := range want {
		if !slices.Contains(ids, id) {
			t.Errorf("%s is not listed", id)
		}
	}
	if len(ids) != len(want)+crashFlows {
		t.Errorf("%d instances, want %d roots and %d children", len(ids), len(want), crashFlows)
	}
	perParent := map[string]int{}
	for _, parent := range children {
		perParent[parent]++
	}
	for i := range crashFlows {
		id := crashFlowID(i)
		if perParent[id] != 1 || subs[id] != 1 {
			t.Errorf("%s: %d children, %d scheduled; want 1", id, perParent[id], subs[id])
		}
	}

	// Nothing left queued.
	depths, err := client.QueueDepths(ctx)
	if err != nil {
		t.Fatalf("queue depths: %v", err)
	}
	if depths != (provider.QueueDepths{}) {
		t.Errorf("queue depths %+v, want all zero", depths)
	}

	// The counter cells, moved by turns killed before, during and after
	// their commits (large ones included), agree with the table.
	metrics, err := client.SystemMetrics(ctx)
	if err != nil {
		t.Fatalf("system metrics: %v", err)
	}
	if scanned, err := env.ScanMetrics(ctx); err != nil {
		t.Fatalf("scan metrics: %v", err)
	} else if metrics != scanned || metrics.TotalInstances != uint64(len(ids)) || metrics.CompletedInstances != uint64(len(ids)) {
		t.Errorf("SystemMetrics = %+v; the table holds %+v (%d instances, all completed)", metrics, scanned, len(ids))
	}

	// Nothing left in the table either, locked or not: no orchestrator
	// message (#Q# rows), no worker row (W# partitions), no committed large
	// turn still pending (a lock row with "turn", a turn mark H#…#~).
	// Staging rows (T#) of turns staged but never committed may remain
	// until their TTL: the crash came before the commit.
	var messages, workers, pending, marks, staged int
	pages := dynamodb.NewScanPaginator(env.DB, &dynamodb.ScanInput{TableName: aws.String(env.Table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("scan %s: %v", env.Table, err)
		}
		for _, row := range page.Items {
			pk, sk := crashAttrS(row, "pk"), crashAttrS(row, "sk")
			switch {
			case strings.HasPrefix(pk, "W#"):
				workers++
				t.Errorf("worker row left: %s %s", pk, sk)
			case strings.HasPrefix(sk, "#Q#"):
				messages++
				t.Errorf("orchestrator message left: %s %s", pk, sk)
			case sk == "#LOCK" && row["turn"] != nil:
				pending++
				t.Errorf("large turn still pending: %s", pk)
			case strings.HasPrefix(sk, "H#") && strings.HasSuffix(sk, "#~"):
				marks++
				t.Errorf("turn mark left: %s %s", pk, sk)
			case strings.HasPrefix(sk, "T#"):
				staged++
			}
		}
	}
	t.Logf("table: %d messages, %d worker rows, %d pending large turns, %d turn marks; %d staging rows of uncommitted turns",
		messages, workers, pending, marks, staged)
	return len(ids)
}

// checkCrashHistory checks one instance's only execution and returns its
// parent ("" for a root) and how many sub-orchestrations it scheduled.
func checkCrashHistory(id string, events []provider.Event, want map[string]int, fanIns map[string]crashFanIn) (parent string, subs int, err error) {
	if err := runtimetest.CheckInvariants(events); err != nil {
		return "", 0, err
	}
	if len(events) == 0 {
		return "", 0, errors.New("empty history")
	}
	started := events[0].Kind.(provider.OrchestrationStarted) // CheckInvariants checked it
	last := events[len(events)-1]
	done, ok := last.Kind.(provider.OrchestrationCompleted)
	if !ok {
		return "", 0, fmt.Errorf("last event is %s, want OrchestrationCompleted", last.Kind.EventType())
	}
	terminals := 0
	scheduled := map[uint64]bool{}
	results := map[uint64]int{}
	for _, ev := range events {
		if ev.IsTerminal() {
			terminals++
		}
		switch ev.Kind.(type) {
		case provider.ActivityScheduled:
			scheduled[ev.EventID] = true
		case provider.ActivityCompleted, provider.ActivityFailed:
			if ev.SourceEventID == nil {
				return "", 0, fmt.Errorf("event %d: %s without a source", ev.EventID, ev.Kind.EventType())
			}
			results[*ev.SourceEventID]++
		case provider.SubOrchestrationScheduled:
			subs++
		}
	}
	if terminals != 1 {
		return "", 0, fmt.Errorf("%d terminal events, want 1", terminals)
	}
	for sid, n := range results {
		if n != 1 || !scheduled[sid] {
			return "", 0, fmt.Errorf("activity %d: %d results (scheduled: %t), want 1", sid, n, scheduled[sid])
		}
	}
	for sid := range scheduled {
		if results[sid] != 1 {
			return "", 0, fmt.Errorf("activity %d has no result", sid)
		}
	}

	var wantOut, wantActs int
	switch started.Name {
	case crashFlow.Name():
		w, ok := want[id]
		if !ok {
			return "", 0, fmt.Errorf("unexpected %s instance", started.Name)
		}
		wantOut, wantActs = w, 2
	case crashFanOut.Name():
		in, ok := fanIns[id]
		if !ok {
			return "", 0, fmt.Errorf("unexpected %s instance", started.Name)
		}
		wantOut, wantActs = want[id], in.N
	case crashChild.Name():
		if started.ParentInstance == nil {
			return "", 0, errors.New("child without a parent")
		}
		parent = *started.ParentInstance
		x, err := strconv.Atoi(started.Input)
		if err != nil {
			return "", 0, fmt.Errorf("child input %q: %w", started.Input, err)
		}
		wantOut, wantActs = crashChildWant(x), 1
	default:
		return "", 0, fmt.Errorf("unexpected orchestration %q", started.Name)
	}
	if len(scheduled) != wantActs {
		return "", 0, fmt.Errorf("%d activities scheduled, want %d", len(scheduled), wantActs)
	}
	if done.Output != strconv.Itoa(wantOut) {
		return "", 0, fmt.Errorf("output %s, want %d", done.Output, wantOut)
	}
	return parent, subs, nil
}

func crashAttrS(row map[string]types.AttributeValue, name string) string {
	if v, ok := row[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// parallel runs fn(0..n-1) on a few goroutines and fails t with the errors.
func crashParallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i == 10 {
			t.Errorf("... and %d more", len(errs)-i)
			break
		}
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

// crashProcess is a child process running a runtime.
type crashProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *crashLineSink
	stderr *crashLineSink
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
	races  sync.Once
}

// startCrashProcess starts a child process running TestCrashRecoveryProcess
// with c.
func startCrashProcess(t *testing.T, c crashProcessConfig) *crashProcess {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecoveryProcess$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), crashProcessEnv+"="+string(raw))
	h := &crashProcess{t: t, cmd: cmd, stdout: newCrashLineSink(), stderr: newCrashLineSink(), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.stdout, h.stderr
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	crashDieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start runtime process: %v", err)
	}
	go func() {
		h.err = cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.exited
		h.checkRaces()
	})
	return h
}

// waitMarker waits for the child's marker of kind and returns what follows
// it. It fails t if the child exits or the timeout passes first.
func (h *crashProcess) waitMarker(kind string, timeout time.Duration) string {
	h.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	prefix := "MARK " + kind
	for seen := 0; ; {
		lines, changed := h.stdout.snapshot()
		for _, l := range lines[seen:] {
			if rest, ok := strings.CutPrefix(l, prefix); ok && (rest == "" || rest[0] == ' ') {
				return strings.TrimSpace(rest)
			}
		}
		seen = len(lines)
		select {
		case <-changed:
		case <-h.exited:
			if lines, _ := h.stdout.snapshot(); len(lines) > seen {
				continue
			}
			h.t.Fatalf("runtime process exited (%v) before its %s marker\nstderr:\n%s", h.err, kind, h.stderr.tail(8<<10))
		case <-timer.C:
			h.t.Fatalf("no %s marker within %s\nstderr:\n%s", kind, timeout, h.stderr.tail(8<<10))
		}
	}
}

// kill kills the child with SIGKILL and waits for it to be gone.
func (h *crashProcess) kill() {
	h.t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		h.t.Fatalf("kill runtime process: %v", err)
	}
	<-h.exited
	h.checkRaces()
}

// stop closes the child's stdin, which shuts its runtime down gracefully,
// and waits for it to exit successfully.
func (h *crashProcess) stop(timeout time.Duration) {
	h.t.Helper()
	_ = h.stdin.Close()
	select {
	case <-h.exited:
	case <-time.After(timeout):
		h.t.Fatalf("runtime process did not stop within %s\nstderr:\n%s", timeout, h.stderr.tail(8<<10))
	}
	if h.err != nil {
		h.t.Errorf("runtime process: %v\nstderr:\n%s", h.err, h.stderr.tail(8<<10))
	}
	h.checkRaces()
}

// checkRaces fails t if the race detector reported a race in the child
// (once the child is gone; later calls do nothing).
func (h *crashProcess) checkRaces() {
	h.t.Helper()
	h.races.Do(func() {
		out := h.stderr.String()
		if i := strings.Index(out, "WARNING: DATA RACE"); i >= 0 {
			h.t.Errorf("data race in a runtime process:\n%s", out[i:min(len(out), i+8<<10)])
		}
	})
}

// crashLineSink collects a child's output and splits it into lines.
type crashLineSink struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	lines   []string
	changed chan struct{}
}

func newCrashLineSink() *crashLineSink { return &crashLineSink{changed: make(chan struct{})} }

func (s *crashLineSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all.Len() < 4<<20 {
		s.all.Write(b)
	}
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.lines = append(s.lines, string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return len(b), nil
}

// snapshot returns the complete lines so far and a channel closed at the
// next write.
func (s *crashLineSink) snapshot() ([]string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines), s.changed
}

func (s *crashLineSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.String()
}

// tail returns the last n bytes of the output.
func (s *crashLineSink) tail(n int) string {
	out := s.String()
	return out[max(0, len(out)-n):]
}

// TestCrashRecoveryProcess is not a test: it is the runtime process
// TestCrashRecovery starts (and kills), and skips unless started so.
func TestCrashRecoveryProcess(t *testing.T) {
	raw := os.Getenv(crashProcessEnv)
	if raw == "" {
		t.Skip("the runtime process of TestCrashRecovery; runs only when that test starts it")
	}
	var c crashProcessConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatalf("%s: %v", crashProcessEnv, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The parent closes stdin to stop this runtime gracefully.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	var markMu sync.Mutex
	mark := func(kind, detail string) {
		markMu.Lock()
		defer markMu.Unlock()
		fmt.Fprintf(os.Stdout, "MARK %s %s\n", kind, detail)
	}
	// block stops the calling goroutine at the kill point: the parent kills
	// the process on the marker.
	block := func(ctx context.Context) { <-ctx.Done() }

	ep := localstack.Endpoints{DynamoDBURL: c.DynamoDBURL, SQSURL: c.SQSURL, Region: c.Region}
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var db dynamo.API = ep.DynamoDB(cfg)
	if c.Kill == killLargeTurn {
		db = crashLargeTurnKillPoint(db, c.Step, func(detail string) { mark(killLargeTurn, detail) })
	}
	dp, err := dynamo.New(cfg, func(o *dynamo.Options) {
		// As dynamotest builds the parent's provider.
		o.TableName = c.Table
		o.OrchestratorQueueURL = c.OrchestratorQueueURL
		o.WorkerQueueURL = c.WorkerQueueURL
		o.Shards = crashShards
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		o.Client = db
		o.SQSClient = ep.SQS(cfg)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()

	var p provider.Provider = dp
	var count atomic.Int64
	switch c.Kill {
	case killFetched:
		p = &crashFetchKillPoint{Provider: dp, hit: func(ctx context.Context, item *provider.OrchestrationItem) {
			if count.Add(1) == int64(c.At) {
				mark(killFetched, fmt.Sprintf("%s (fetch %d, %d messages)", item.Instance, c.At, len(item.Messages)))
				block(ctx)
			}
		}}
	case killActivity:
		crashActivityHook = func(ctx context.Context) {
			if count.Add(1) == int64(c.At) {
				info, _ := durable.ActivityInfoFrom(ctx)
				mark(killActivity, fmt.Sprintf("%s activity %d (start %d, attempt %d)", info.Instance, info.ID, c.At, info.Attempt))
				block(ctx)
			}
		}
	}

	reg, err := durable.NewRegistry(crashDouble, crashChild, crashFlow, crashFanOut)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, crashRuntimeOptions)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); err != nil {
		t.Errorf("runtime: %v", err)
	}
}

// crashFetchKillPoint is the provider of a child killed right after an
// orchestration fetch: hit runs on every fetch that locked a turn.
type crashFetchKillPoint struct {
	*dynamo.Provider
	hit func(ctx context.Context, item *provider.OrchestrationItem)
}

func (f *crashFetchKillPoint) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := f.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		f.hit(ctx, item)
	}
	return item, err
}

// crashLargeTurnKillPoint wraps db so that the first write of a large turn
// that is step (the commit or "apply-<n>"; see the DynamoDB provider's
// commitLargeTurn) is held before it is sent, and reports it through mark.
// Writes are told apart by the rows they touch (docs/design.md §3 and §5):
// staging rows (sort key T#…), whose last apply also ends the turn, and the
// commit transaction that starts with the lock row's "SET #turn".
func crashLargeTurnKillPoint(db dynamo.API, step string, mark func(detail string)) dynamo.API {
	in := faults.New(1)
	gate := faults.NewGate()
	var (
		mu     sync.Mutex
		staged = map[string]bool{} // instance partitions this process staged a turn in
		fired  bool
		detail string
	)
	match := func(r faults.Request) bool {
		var pk, got string
		switch r.Op {
		case faults.OpBatchWriteItem:
			for _, reqs := range r.Input.(*dynamodb.BatchWriteItemInput).RequestItems {
				for _, w := range reqs {
					if w.PutRequest != nil && strings.HasPrefix(crashAttrS(w.PutRequest.Item, "sk"), "T#") {
						mu.Lock()
						staged[crashAttrS(w.PutRequest.Item, "pk")] = true
						mu.Unlock()
					}
				}
			}
			return false
		case faults.OpTransactWriteItems:
			items := r.Input.(*dynamodb.TransactWriteItemsInput).TransactItems
			if u := items[0].Update; u != nil && crashAttrS(u.Key, "sk") == "#LOCK" && strings.HasPrefix(aws.ToString(u.UpdateExpression), "SET #turn = :tid") {
				pk, got = crashAttrS(u.Key, "pk"), "commit"
				break
			}
			for _, a := range items {
				if a.Delete == nil {
					continue
				}
				if sk := crashAttrS(a.Delete.Key, "sk"); strings.HasPrefix(sk, "T#") {
					n, _ := strconv.Atoi(sk[strings.LastIndexByte(sk, '#')+1:])
					pk, got = crashAttrS(a.Delete.Key, "pk"), "apply-"+strconv.Itoa(n)
				}
			}
		}
		if got != step {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if fired {
			return false
		}
		fired = true
		who := "committed by this process"
		if !staged[pk] {
			who = "rolled forward by this process"
		}
		detail = fmt.Sprintf("%s before %s (%s)", strings.TrimPrefix(pk, "I#"), step, who)
		return true
	}
	in.Add(faults.Rule{
		Ops:   []string{faults.OpBatchWriteItem, faults.OpTransactWriteItems},
		Match: match, Rate: 1, Count: 1, Fault: faults.Hold(gate),
	})
	go func() {
		<-gate.Arrived()
		mu.Lock()
		d := detail
		mu.Unlock()
		mark(d)
	}()
	return in.DynamoDB(db)
}
