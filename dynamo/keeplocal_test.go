package dynamo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests check the wake-ups a process keeps to itself
// (queues.Signals.Post): a signal for one unit of work that a waiting fetch
// of the committing process can take is not sent to SQS.

// awaitCondition waits until cond holds. It happens within milliseconds
// when the provider works; the bound only turns a failure into a report
// rather than a hang.
func awaitCondition(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestActivityForAWaitingWorkerIsNotSent: a turn schedules an activity
// while a worker fetch of the same process waits. The fetch claims it from
// the in-process signal, and no SQS message is sent for it. (The activity
// is tagged: an untagged one would be handed to the fetch in the turn's
// own transaction, with no signal at all; handoff_test.go.)
func TestActivityForAWaitingWorkerIsNotSent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The receives are held: a waiting fetch shows as a held receive, and
	// nothing reaches the process through SQS.
	gate := faults.NewGate()
	t.Cleanup(gate.Release)
	in := faults.New(21)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true, Shards: 1, Options: func(o *dynamo.Options) {
		o.SQSClient = in.SQS(o.SQSClient)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	const inst = "kept-activity"
	turn := startAndFetch(ctx, t, p, inst)
	sentBefore := dynamo.SignalStats(p).MessagesSent // the start's, sent by Notify

	type fetched struct {
		w   *provider.LockedWorkItem
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		w, err := p.FetchWorkItem(ctx, longLock, 20*time.Second, nil, provider.AnyTag())
		done <- fetched{w, err}
	}()
	must(t, gate.Wait(ctx, 1), "the worker fetch waits")
	commit := activities(inst, 1)
	commit.WorkerItems[0].Tag = ptr("gpu")
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, commit), "turn scheduling an activity")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.Instance != inst || r.w.Item.ID != 2 {
		t.Fatalf("the waiting fetch got %+v, want activity 2 of %q", r.w, inst)
	}
	must(t, dynamo.FlushSignals(ctx, p), "flush")
	if st := dynamo.SignalStats(p); st.SignalsKeptLocal != 1 || st.MessagesSent != sentBefore {
		t.Fatalf("signal stats %+v: want the activity's signal kept (1) and no message sent after the start's %d", st, sentBefore)
	}
}

// TestSignalOnlyThisProcessHadReachesTheLockHolder: a process completes an
// activity of an instance another process holds locked, while one of its
// own orchestrator fetches waits. The completion's signal goes to that
// fetch only; finding the instance locked, the fetch sends it on, so that
// the holder takes the completion as soon as its turn ends rather than the
// first process at the end of the lease. Sweeps are an hour apart: only a
// signal brings the instance to the holder's fetch.
func TestSignalOnlyThisProcessHadReachesTheLockHolder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	noSweeps := func(o *dynamo.Options) { o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour }
	// holder's receives are watched: a receive means a fetch waits.
	var holderPolls atomic.Int64
	watch := faults.New(22)
	watch.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(faults.NewGate()),
		Match: func(faults.Request) bool { holderPolls.Add(1); return false }})
	holder := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		noSweeps(o)
		o.SQSClient = watch.SQS(o.SQSClient)
	}})
	// worker's receives are held: its waiting fetch shows as a held
	// receive, and what it sends on goes to the holder.
	gate := faults.NewGate()
	t.Cleanup(gate.Release)
	held := faults.New(23)
	held.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	worker := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		noSweeps(o)
		o.SQSClient = held.SQS(o.SQSClient)
	}})

	const inst = "held-elsewhere"
	turn := startAndFetch(ctx, t, holder, inst)
	must(t, holder.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	work, err := worker.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if work == nil {
		t.Fatal("the worker found no activity")
	}
	// The holder locks the instance's next turn (an event raised).
	must(t, holder.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "{}"}, 0), "raise")
	turn, err = holder.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "the holder's fetch")
	if turn == nil || turn.Instance != inst {
		t.Fatalf("the holder fetched %+v, want %q", turn, inst)
	}

	holderNext := fetchInBackground(ctx, holder, 20*time.Second)
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	workerNext := fetchInBackground(wctx, worker, 20*time.Second)
	must(t, gate.Wait(ctx, 1), "the worker's orchestrator fetch waits")
	awaitCondition(t, "the holder's fetch waits", func() bool { return holderPolls.Load() > 0 })

	// The completion: kept for the worker's waiting fetch, which finds the
	// instance locked and sends the signal on.
	must(t, worker.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "done"}), "AckWorkItem")
	awaitCondition(t, "the worker sends the signal on", func() bool { return dynamo.SignalStats(worker).SignalsDeclined > 0 })
	if st := dynamo.SignalStats(worker); st.SignalsKeptLocal != 1 {
		t.Errorf("worker's signal stats %+v: want the completion's signal kept for its waiting fetch", st)
	}
	event := ev(3, inst, provider.ExternalEvent{Name: "e", Data: "{}"})
	must(t, holder.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{event}, Metadata: meta()}), "the holder's turn")

	r := <-holderNext
	must(t, r.err, "the holder's next fetch")
	if r.item == nil || r.item.Instance != inst || len(r.item.Messages) != 1 {
		t.Fatalf("the holder's next fetch got %+v; want %q with the completion", r.item, inst)
	}
	if c, ok := r.item.Messages[0].(provider.ActivityCompletedItem); !ok || c.Result != "done" {
		t.Fatalf("the holder's next turn holds %T, want the completion", r.item.Messages[0])
	}
	stopWorker()
	if w := <-workerNext; w.item != nil {
		t.Fatalf("the worker's fetch also got %q", w.item.Instance)
	}
}
