package queues_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/queues"
)

// awaitStats waits (at most 3 × generous) until cond holds for s's Stats.
func awaitStats(t *testing.T, s *queues.Signals, what string, cond func(queues.Stats) bool) queues.Stats {
	t.Helper()
	deadline := time.Now().Add(3 * generous)
	for {
		st := s.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Stats = %+v", what, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Lock and Schedule signals travel on the orchestrator queue and reach the
// waiters of their own kind in another process, not the orchestrator's.
func TestSignals_LockAndScheduleKindsAcrossProcesses(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	receiver := newSignals(t, c, queueURLs(orch, work))
	sender := newSignals(t, c, queueURLs(orch, work))
	for _, sig := range []queues.Signal{
		{Kind: queues.Lock, Instance: "tenant-1/nightly"},
		{Kind: queues.Schedule, Shard: 3, VisibleAt: time.Now().Add(-time.Second)},
	} {
		// The receiver waits for both kinds on the queue (a kind it never
		// waited for would be sent on, not kept).
		if _, err := receiver.Wait(t.Context(), sig.Kind, 0); err != nil {
			t.Fatal(err)
		}
		orchWait := goWait(t.Context(), receiver, queues.Orchestrator, 2*time.Second)
		if err := sender.Notify(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
		collect(t, receiver, sig.Kind, []queues.Signal{sig})
		if r := result(t, orchWait); len(r.sigs) != 0 {
			t.Errorf("%s signal reached the orchestrator waiter: %v", sig.Kind, r.sigs)
		}
	}
	if left := drain(t, c, orch, 0); len(left) != 0 {
		t.Errorf("messages left on the orchestrator queue: %q", left)
	}
	if left := drain(t, c, work, 0); len(left) != 0 {
		t.Errorf("messages left on the worker queue: %q", left)
	}
}

// A process that receives a signal of a kind it never waits for (its poller
// runs for another kind on the same queue) sends it on instead of keeping
// it, and the process that waits for that kind gets it.
func TestSignals_KindNobodyWaitsForIsSentOn(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	lockOnly := newSignals(t, c, queueURLs(orch, ""))
	runtime := newSignals(t, c, queueURLs(orch, ""))
	sender := newSignals(t, c, queueURLs(orch, ""))

	// Only lockOnly polls the queue: it receives the orchestrator signal.
	lockWait := goWait(t.Context(), lockOnly, queues.Lock, 3*generous)
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "order-7"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	// Alone on the queue, it may receive its own first sending on (which
	// has no delay) and decline it again before it closes: at least once.
	awaitStats(t, lockOnly, "lock-only process sends the signal on", func(st queues.Stats) bool { return st.SignalsDeclined >= 1 })
	if pending, _ := lockOnly.Wait(t.Context(), queues.Orchestrator, 0); len(pending) != 0 {
		t.Errorf("lock-only process kept %v for an orchestrator waiter it never had", pending)
	}
	// lockOnly stops polling, so that only runtime can receive the signal
	// sent on (with both polling, it could bounce back to lockOnly until
	// its hops run out).
	if err := lockOnly.Close(); err != nil {
		t.Fatal(err)
	}
	if r := result(t, lockWait); len(r.sigs) != 0 {
		t.Errorf("lock waiter woken by %v", r.sigs)
	}
	got := collect(t, runtime, queues.Orchestrator, []queues.Signal{sig})
	if len(got) != 1 {
		t.Errorf("runtime received %v, want the one signal", got)
	}
}

// Decline sends a signal on to another process; the copies that every
// waiter of the process received are sent on once.
func TestSignals_DeclineSendsOnOnce(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	work := newQueue(t, "work")
	a := newSignals(t, c, queueURLs("", work))
	b := newSignals(t, c, queueURLs("", work))
	sender := newSignals(t, c, queueURLs("", work))

	sig := queues.Signal{Kind: queues.Worker, Shard: 2, Instance: "order-9", Work: "row-1"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	got := collect(t, a, queues.Worker, []queues.Signal{sig})
	// Two waiters of a got the signal (a broadcast); both decline it.
	for range 2 {
		if err := a.Decline(t.Context(), got...); err != nil {
			t.Fatal(err)
		}
	}
	if st := a.Stats(); st.SignalsDeclined != 1 || st.MessagesSent != 1 {
		t.Errorf("a's Stats = %+v, want one signal sent on", st)
	}
	collect(t, b, queues.Worker, []queues.Signal{sig})
	if left := drain(t, c, work, 0); len(left) != 0 {
		t.Errorf("messages left on the queue: %q", left)
	}
}

// A declined signal that comes back to the process that declined it is sent
// on again without waking that process, and dropped after MaxHops: a signal
// nobody can use does not circulate for ever.
func TestSignals_DeclinedSignalStopsAfterMaxHops(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	work := newQueue(t, "work")
	only := newSignals(t, c, queueURLs("", work))
	sender := newSignals(t, c, queueURLs("", work))

	sig := queues.Signal{Kind: queues.Worker, Shard: 4, Instance: "nobody-can"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	got := collect(t, only, queues.Worker, []queues.Signal{sig})
	if err := only.Decline(t.Context(), got...); err != nil {
		t.Fatal(err)
	}
	// Keep a waiter so that the poller runs; it must not be woken again.
	ch := goWait(t.Context(), only, queues.Worker, 3*generous)
	st := awaitStats(t, only, "signal dropped after MaxHops", func(st queues.Stats) bool { return st.SignalsDeclinedTooOften == 1 })
	if st.SignalsDeclined != queues.MaxHops {
		t.Errorf("Stats = %+v, want %d signals sent on", st, queues.MaxHops)
	}
	if err := only.Close(); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); len(r.sigs) != 0 {
		t.Errorf("the declining process was woken by its own declined signal: %v", r.sigs)
	}
	if left := drain(t, c, work, 0); len(left) != 0 {
		t.Errorf("messages left on the queue: %q", left)
	}
}

// A kind without a queue has nowhere to send a declined signal: Decline
// drops it without a request.
func TestSignals_DeclineWithoutQueue(t *testing.T) {
	t.Parallel()
	s := newSignals(t, nil)
	if err := s.Decline(t.Context(), queues.Signal{Kind: queues.Orchestrator, Instance: "x"}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st != (queues.Stats{}) {
		t.Errorf("Stats = %+v, want nothing", st)
	}
	if err := s.Decline(t.Context(), queues.Signal{Kind: 0}); err == nil {
		t.Error("Decline of an invalid kind succeeded")
	}
}

// A lock's release notice that comes back to the process that sent it is
// sent on (its own waiters had it in-process); other processes' lock
// waiters get it.
func TestSignals_OwnLockNoticeIsSentOn(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	gate := faults.NewGate()
	in := faults.New(11)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	// Once the releaser has sent its notice on, its receives are held, so
	// that the copy it sent goes to the other process: the releaser's own
	// lock waiter would take it (a notice this process declined is taken
	// again when a waiter is there now).
	var self atomic.Pointer[queues.Signals]
	sentOn := func(faults.Request) bool { s := self.Load(); return s != nil && s.Stats().SignalsDeclined > 0 }
	releaserGate := faults.NewGate()
	t.Cleanup(releaserGate.Release)
	releaserIn := faults.New(12)
	releaserIn.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Match: sentOn, Fault: faults.Hold(releaserGate)})
	releaser := newSignals(t, releaserIn.SQS(c), queueURLs(orch, ""))
	self.Store(releaser)
	waiter := newSignals(t, in.SQS(c), queueURLs(orch, ""))

	// The waiter's receives are held: only the releaser's poller runs.
	waiting := goWait(t.Context(), waiter, queues.Lock, 3*generous)
	if err := gate.Wait(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	own := make(chan []queues.Signal, 100)
	go func() {
		for ctx.Err() == nil {
			sigs, _ := releaser.Wait(ctx, queues.Lock, time.Second)
			own <- sigs
		}
	}()
	sig := queues.Signal{Kind: queues.Lock, Instance: "nightly-report"}
	if err := releaser.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	awaitStats(t, releaser, "releaser sends its own notice on", func(st queues.Stats) bool { return st.SignalsDeclined >= 1 })
	cancel()
	gate.Release()
	r := result(t, waiting)
	if r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("other process's lock waiter: %v, %v; want %v", r.sigs, r.err, sig)
	}
}

// A lock's release notice that reached a process while none of its lock
// waiters was waiting is sent on; when it comes back and a lock waiter is
// there by then, that waiter gets it (the notice is not declined for good
// by the process that once had no use for it).
func TestSignals_LockNoticeDeclinedWhileNobodyWaitedComesBack(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	receiver := newSignals(t, c, queueURLs(orch, ""))
	sender := newSignals(t, c, queueURLs(orch, ""))
	if _, err := receiver.Wait(t.Context(), queues.Lock, 0); err != nil {
		t.Fatal(err)
	}
	// Only an orchestrator waiter keeps the receiver's poller running.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	orchWait := goWait(ctx, receiver, queues.Orchestrator, time.Minute)
	sig := queues.Signal{Kind: queues.Lock, Instance: "nightly-report"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	awaitStats(t, receiver, "notice without a lock waiter sent on", func(st queues.Stats) bool { return st.SignalsDeclined >= 1 })
	collect(t, receiver, queues.Lock, []queues.Signal{sig})
	cancel()
	if r := result(t, orchWait); len(r.sigs) != 0 {
		t.Errorf("lock notice reached the orchestrator waiter: %v", r.sigs)
	}
}
