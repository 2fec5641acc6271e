package dynamo_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// TestSignalForAnotherProcessIsSentOn: the SQS copy of a worker signal
// reaches a process whose tag filter excludes the activity, while the
// process that could run it waits, its sweep done. The first process sends
// the signal on instead of swallowing it, and the second is woken by it
// long before its poll timeout, rather than at the sweep that follows.
func TestSignalForAnotherProcessIsSentOn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	// gpu's receives are held until other has taken the signal.
	gate := faults.NewGate()
	in := faults.New(9)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	gpu := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.SQSClient = in.SQS(o.SQSClient) }})
	other := env.NewProvider(t, dynamotest.Config{})
	sender := env.NewProvider(t, dynamotest.Config{})
	gpuTags, err := provider.OnlyTags("gpu")
	must(t, err, "OnlyTags")

	const pollTimeout = 20 * time.Second
	type fetched struct {
		w       *provider.LockedWorkItem
		err     error
		elapsed time.Duration
	}
	// (elapsed is reported, not asserted.)
	gpuDone := make(chan fetched, 1)
	go func() {
		start := time.Now()
		w, err := gpu.FetchWorkItem(ctx, longLock, pollTimeout, nil, gpuTags)
		gpuDone <- fetched{w, err, time.Since(start)}
	}()
	// gpu has swept (nothing yet) and waits: its receive is at the gate.
	must(t, gate.Wait(ctx, 1), "gpu's receive")
	otherDone := make(chan fetched, 1)
	go func() {
		w, err := other.FetchWorkItem(ctx, longLock, 3*time.Second, nil, provider.DefaultOnlyTags())
		otherDone <- fetched{w: w, err: err}
	}()
	tag := "gpu"
	must(t, sender.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "render", ExecutionID: 1, ID: 1, Name: "A", Input: "{}", Tag: &tag}), "enqueue")
	if r := <-otherDone; r.err != nil || r.w != nil {
		t.Fatalf("fetch of the process without the tag: %+v, %v; want nothing", r.w, r.err)
	}
	gate.Release()
	r := <-gpuDone
	must(t, r.err, "gpu's fetch")
	// A fetch does not sweep again after it began waiting: only a signal
	// can have brought the activity before its poll timeout.
	if r.w == nil || r.w.Item.Instance != "render" {
		t.Fatalf("gpu's fetch after %v: got %+v, want the tagged activity", r.elapsed, r.w)
	}
}

// TestOrchestratorSignalForAnotherVersionIsSentOn: the SQS copy of an
// orchestrator signal reaches a process whose capability filter rejects
// the instance's pinned version, while the process that can replay it
// waits. The first sends the signal on, and the second is woken by it.
func TestOrchestratorSignalForAnotherVersionIsSentOn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	gate := faults.NewGate()
	in := faults.New(10)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	v1 := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.SQSClient = in.SQS(o.SQSClient) }})
	v2 := env.NewProvider(t, dynamotest.Config{})
	sender := env.NewProvider(t, dynamotest.Config{})
	only := func(major uint64) *provider.CapabilityFilter {
		return &provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{{
			Min: provider.SemVer{Major: major}, Max: provider.SemVer{Major: major, Minor: 99, Patch: 99}}}}
	}
	const inst = "pinned-v1"
	// The first turn pins the execution to 1.0.0.
	item := startAndFetch(ctx, t, sender, inst)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
	commit.Metadata.PinnedDuroxideVersion = &provider.SemVer{Major: 1}
	must(t, sender.AckOrchestrationItem(ctx, item.LockToken, commit), "first turn")

	const pollTimeout = 20 * time.Second
	type fetched struct {
		item    *provider.OrchestrationItem
		err     error
		elapsed time.Duration
	}
	v1Done := make(chan fetched, 1)
	go func() {
		start := time.Now()
		item, err := v1.FetchOrchestrationItem(ctx, longLock, pollTimeout, only(1))
		v1Done <- fetched{item, err, time.Since(start)}
	}()
	must(t, gate.Wait(ctx, 1), "v1's receive")
	v2Done := make(chan fetched, 1)
	go func() {
		item, err := v2.FetchOrchestrationItem(ctx, longLock, 3*time.Second, only(2))
		v2Done <- fetched{item: item, err: err}
	}()
	must(t, sender.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0), "raise")
	if r := <-v2Done; r.err != nil || r.item != nil {
		t.Fatalf("fetch of the 2.x process: %+v, %v; want nothing", r.item, r.err)
	}
	gate.Release()
	r := <-v1Done
	must(t, r.err, "v1's fetch")
	// A fetch does not sweep again after it began waiting: only a signal
	// can have brought the instance before its poll timeout.
	if r.item == nil || r.item.Instance != inst {
		t.Fatalf("v1's fetch after %v: got %+v, want %q", r.elapsed, r.item, inst)
	}
}

// TestIdleFetchesShareOneSweep: concurrent fetches of a kind with a
// wake-up queue share one sweep of the ready index per interval instead of
// making one each; with the index empty, a sweep is one Scan, not a Query
// per shard.
func TestIdleFetchesShareOneSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	const shards = 4
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true, Shards: shards, Meter: meter,
		Options: func(o *dynamo.Options) { o.SweepInterval = time.Hour }})
	const slots = 4
	done := make(chan error, 2*slots)
	for range slots {
		go func() {
			w, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, nil, provider.AnyTag())
			if w != nil {
				err = errors.Join(err, errors.New("fetch of an empty queue returned work"))
			}
			done <- err
		}()
		go func() {
			item, err := p.FetchOrchestrationItem(ctx, longLock, 2*time.Second, nil)
			if item != nil {
				err = errors.Join(err, errors.New("fetch of an empty queue returned work"))
			}
			done <- err
		}()
	}
	for range 2 * slots {
		must(t, <-done, "fetch")
	}
	if u := meter.Usage(); u.Requests["Scan"] != 2 || u.Total() != 2 {
		t.Fatalf("%d fetches of each kind made %v; want one sweep per kind, each one Scan of the empty index (2 Scans)", slots, u.Requests)
	}
}

// TestSweepGoesByShardPastTheScanLimit: a sweep reads a small ready index
// with one Scan and takes its oldest eligible row, whatever its shard; an
// index with more rows than the Scan evaluates is swept by shard, oldest
// row first again, and the sweeps of the next minute go by shard without
// trying a Scan first.
func TestSweepGoesByShardPastTheScanLimit(t *testing.T) {
	t.Parallel()
	const shards, rows = 4, 6
	for _, kind := range []string{"orchestrator", "worker"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, false)
			meter := &dynamotest.Meter{}
			// Both clocks stand still, p's a millisecond after the writer's:
			// every row is eligible and has been for less than handOutAge,
			// so a sweep hands no row to p's next fetch as a signal, however
			// slowly this runs, and each fetch below sweeps.
			written := time.Now()
			p := env.NewProvider(t, dynamotest.Config{Shards: shards, Meter: meter, ShortPoll: true,
				Options: func(o *dynamo.Options) { o.Now = func() time.Time { return written.Add(time.Millisecond) } }})
			// Another process writes the rows, so that no signal of p's
			// announces them: p finds them by sweeps alone. Oldest first
			// (the sequence orders rows of one millisecond).
			src := env.NewProvider(t, dynamotest.Config{Shards: shards,
				Options: func(o *dynamo.Options) { o.Now = func() time.Time { return written } }})
			var want []string
			for i := range rows {
				inst := fmt.Sprintf("by-shard-%d", i)
				want = append(want, inst)
				if kind == "orchestrator" {
					must(t, src.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
				} else {
					must(t, src.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue activity")
				}
			}
			fetch := func() string {
				t.Helper()
				if kind == "orchestrator" {
					item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
					if err != nil || item == nil {
						t.Fatalf("FetchOrchestrationItem: %+v, %v", item, err)
					}
					return item.Instance
				}
				w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
				if err != nil || w == nil {
					t.Fatalf("FetchWorkItem: %+v, %v", w, err)
				}
				return w.Item.Instance
			}
			sweep := func(step string, wantInst string, wantReads map[string]int) {
				t.Helper()
				meter.Reset()
				got := fetch()
				if got != wantInst {
					t.Errorf("%s: fetched %s, want the oldest row's %s", step, got, wantInst)
				}
				u := meter.Usage()
				for op, n := range wantReads {
					if u.Requests[op] != n {
						t.Errorf("%s: %d %s requests (%v), want %d", step, u.Requests[op], op, u.Requests, n)
					}
				}
			}
			// ShortPoll: every fetch sweeps. The index holds 6 rows.
			dynamo.SetSweepScanLimit(p, rows+1)
			sweep("scan of a small index", want[0], map[string]int{"Scan": 1})
			dynamo.SetSweepScanLimit(p, 2)
			sweep("index past the scan limit", want[1], map[string]int{"Scan": 1})
			if u := meter.Usage(); u.Requests["Query"] < shards {
				t.Errorf("index past the scan limit: %v, want a Query of each of %d shards", u.Requests, shards)
			}
			sweep("sweep within a minute of the large index", want[2], map[string]int{"Scan": 0})
			if u := meter.Usage(); u.Requests["Query"] < shards {
				t.Errorf("sweep within a minute of the large index: %v, want a Query of each of %d shards", u.Requests, shards)
			}
		})
	}
}

// TestSweptWorkReachesEveryWaitingFetch: work no signal announced (its
// sender had no wake-up queue, as when a process that took the signals was
// killed) is found by one sweep, and the rows that sweep saw beyond the one
// its fetch took, eligible for long enough that their signals should have
// come, go to the process's other fetches. Before, they waited for the
// next sweep (here an hour away, by default up to five minutes), so a
// backlog left by a crash drained at one row per sweep interval.
func TestSweptWorkReachesEveryWaitingFetch(t *testing.T) {
	t.Parallel()
	const n = 4
	const pollTimeout = 20 * time.Second
	for _, kind := range []string{"orchestrator", "worker"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, true)
			// p's clock runs a minute ahead: it sees the rows as written
			// a minute ago, long enough for their signals to have come.
			p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
				o.SweepInterval = time.Hour
				o.Now = func() time.Time { return time.Now().Add(time.Minute) }
			}})
			silent := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
				o.OrchestratorQueueURL, o.WorkerQueueURL, o.SQSClient = "", "", nil
			}})
			for i := range n {
				inst := fmt.Sprintf("swept-%d", i)
				if kind == "orchestrator" {
					must(t, silent.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
				} else {
					must(t, silent.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue activity")
				}
			}
			got := make(chan string, n)
			errs := make(chan error, n)
			for range n {
				go func() {
					if kind == "orchestrator" {
						item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
						if item != nil {
							got <- item.Instance
						}
						errs <- err
						return
					}
					w, err := p.FetchWorkItem(ctx, longLock, pollTimeout, nil, provider.AnyTag())
					if w != nil {
						got <- w.Item.Instance
					}
					errs <- err
				}()
			}
			for range n {
				must(t, <-errs, "fetch")
			}
			close(got)
			seen := map[string]bool{}
			for inst := range got {
				if seen[inst] {
					t.Errorf("%s fetched twice", inst)
				}
				seen[inst] = true
			}
			if len(seen) != n {
				t.Fatalf("%d fetches waiting %v each got %d of the %d %s items one sweep saw: %v", n, pollTimeout, len(seen), n, kind, seen)
			}
		})
	}
}

// TestQueueDepthsScansTheReadyIndexOnce: QueueDepths reads the ready index
// with one Scan (not a Query per shard and queue, nor a lock row per
// instance with messages), and counts what no live lock holds.
func TestQueueDepthsScansTheReadyIndexOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Meter: meter, ShortPoll: true})
	for _, inst := range []string{"depth-a", "depth-b"} {
		must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "1"}, 0), "raise")
	}
	for id := range uint64(3) {
		must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "depth-a", ExecutionID: 1, ID: id + 2, Name: "A"}), "enqueue activity")
	}
	// One activity locked: not counted.
	if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w == nil {
		t.Fatalf("FetchWorkItem: %+v, %v", w, err)
	}
	admin, _ := provider.AdminOf(p)
	meter.Reset()
	d, err := admin.QueueDepths(ctx)
	must(t, err, "QueueDepths")
	if d.OrchestratorQueue != 4 || d.WorkerQueue != 2 {
		t.Errorf("QueueDepths = %+v, want 4 orchestrator and 2 worker messages", d)
	}
	if u := meter.Usage(); u.Requests["Scan"] != 1 || u.Total() != 1 {
		t.Errorf("QueueDepths made %v, want one Scan of the ready index", u.Requests)
	}
}
