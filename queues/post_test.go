package queues_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/queues"
)

// Post wakes this process's waiters and returns while its SQS message is
// still being sent; Flush returns once it is, and another process gets it.
func TestSignals_PostReturnsBeforeSQS(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	// The sender's receives are held, so that its own poller, still in
	// flight for a while after its waiter left, cannot take the message
	// (and drop it as its own) before the receiver does.
	hold := faults.NewGate()
	t.Cleanup(hold.Release)
	in := faults.New(14)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(hold)})
	gated := &gatedAPI{API: in.SQS(c), entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := newSignals(t, gated, queueURLs(orch, work))
	receiver := newSignals(t, c, queueURLs(orch, work))

	ch := goWait(t.Context(), s, queues.Worker, time.Minute)
	sig := queues.Signal{Kind: queues.Worker, Shard: 2, Instance: "order-1"}
	// The waiter may not be blocked yet: either way the signal reaches it
	// (kept for the next Wait otherwise).
	if err := s.Post(sig); err != nil {
		t.Fatal(err)
	}
	<-gated.entered // the sender holds the request; Post returned before it
	if r := result(t, ch); r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v; want %v", r.sigs, r.err, sig)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := s.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while the send is held = %v, want the context's deadline", err)
	}
	close(gated.release)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SendMessageBatchRequests != 1 || st.MessagesSent != 1 {
		t.Errorf("Stats = %+v, want one SendMessageBatch of one message", st)
	}
	collect(t, receiver, queues.Worker, []queues.Signal{sig})
}

// Signals posted while a send is in flight go out together afterwards, in
// batches of ten, each distinct signal once.
func TestSignals_PostCoalescesWhileSending(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	gated := &gatedAPI{API: c, entered: make(chan struct{}, 10), release: make(chan struct{})}
	s := newSignals(t, gated, queueURLs(orch, ""))

	if err := s.Post(queues.Signal{Kind: queues.Orchestrator, Shard: 0, Instance: "first"}); err != nil {
		t.Fatal(err)
	}
	<-gated.entered // the first round is in flight, holding one message
	var later []queues.Signal
	for i := range 25 {
		later = append(later, queues.Signal{Kind: queues.Orchestrator, Shard: i % 4, Instance: "order-" + string(rune('a'+i))})
	}
	for _, sig := range later {
		if err := s.Post(sig); err != nil {
			t.Fatal(err)
		}
	}
	for _, sig := range later[:5] {
		if err := s.Post(sig); err != nil { // repeats of signals waiting
			t.Fatal(err)
		}
	}
	close(gated.release)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// 1 request for the first round; the second takes 25 distinct of 30.
	if st := s.Stats(); st.SendMessageBatchRequests != 4 || st.MessagesSent != 26 || st.SignalsDropped != 0 {
		t.Fatalf("Stats = %+v, want 4 SendMessageBatch calls of 26 messages", st)
	}
	if bodies := drain(t, c, orch, 1); len(bodies) != 26 {
		t.Fatalf("queue held %d messages, want 26", len(bodies))
	}
}

// At most MaxPosted messages wait to be sent; the rest are dropped and
// counted.
func TestSignals_MaxPosted(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	gated := &gatedAPI{API: c, entered: make(chan struct{}, 10), release: make(chan struct{})}
	s := newSignals(t, gated, queueURLs(orch, ""), func(o *queues.Options) { o.MaxPosted = 3 })
	if err := s.Post(queues.Signal{Kind: queues.Orchestrator, Instance: "in-flight"}); err != nil {
		t.Fatal(err)
	}
	<-gated.entered
	for i := range 5 {
		if err := s.Post(queues.Signal{Kind: queues.Orchestrator, Shard: i}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Stats().SignalsDropped; n != 2 {
		t.Errorf("SignalsDropped = %d, want 2", n)
	}
	close(gated.release)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MessagesSent != 4 {
		t.Errorf("Stats = %+v, want 4 messages sent", st)
	}
}

// Close sends what was posted and not sent yet; Post after Close fails.
func TestSignals_CloseSendsPosted(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	s, err := queues.New(c, queueURLs(orch, work), func(o *queues.Options) { o.Logger = testlog.New(t) })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Post(queues.Signal{Kind: queues.Worker, Shard: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MessagesSent != 3 {
		t.Errorf("Stats after Close = %+v, want 3 messages sent", st)
	}
	if bodies := drain(t, c, work, 1); len(bodies) != 3 {
		t.Errorf("queue held %d messages, want 3", len(bodies))
	}
	if err := s.Post(queues.Signal{Kind: queues.Worker}); !errors.Is(err, queues.ErrClosed) {
		t.Errorf("Post after Close = %v, want ErrClosed", err)
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Errorf("Flush after Close = %v", err)
	}
}

// Close does not wait for ever for a send that cannot finish: a round of
// posted signals is given up on after its timeout (and all of them after
// CloseFlushTimeout), counted as an error.
func TestSignals_CloseGivesUpOnAStuckSend(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	gated := &gatedAPI{API: c, entered: make(chan struct{}, 10), release: make(chan struct{})}
	s, err := queues.New(gated, queueURLs(orch, ""), func(o *queues.Options) { o.Logger = testlog.New(t) })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Post(queues.Signal{Kind: queues.Orchestrator}); err != nil {
		t.Fatal(err)
	}
	<-gated.entered
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MessagesSent != 0 || st.Errors != 1 {
		t.Errorf("Stats = %+v, want nothing sent and one error", st)
	}
}

// A posted signal that names one unit of work is not sent when a waiter of
// this process is free to take it: the waiter gets it marked Unsent. Each
// free waiter counts for one such signal; the rest, signals that announce
// a shard, and Notify's signals are sent. A waiter that cannot act on an
// unsent signal declines it, and another process gets it.
// heldReceives returns Signals on two new queues whose receives are held
// at gate, so that what it gets comes in-process, with the SQS client and
// the queues' options for another process.
func heldReceives(t *testing.T) (s *queues.Signals, gate *faults.Gate, c *sqs.Client, urls func(*queues.Options)) {
	t.Helper()
	c = sqsClient(t)
	urls = queueURLs(newQueue(t, "orch"), newQueue(t, "work"))
	gate = faults.NewGate()
	t.Cleanup(gate.Release)
	in := faults.New(13)
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Hold(gate)})
	return newSignals(t, in.SQS(c), urls), gate, c, urls
}

func TestSignals_PostKeepsSignalsForFreeWaiters(t *testing.T) {
	t.Parallel()
	s, gate, c, urls := heldReceives(t)
	other := newSignals(t, c, urls)

	ch := goWait(t.Context(), s, queues.Worker, time.Minute)
	if err := gate.Wait(t.Context(), 1); err != nil { // the waiter is blocked
		t.Fatal(err)
	}
	first := queues.Signal{Kind: queues.Worker, Shard: 1, Instance: "order-1", Work: "activity-2"}
	second := queues.Signal{Kind: queues.Worker, Shard: 1, Instance: "order-1", Work: "activity-3"}
	shard := queues.Signal{Kind: queues.Worker, Shard: 2}
	if err := s.Post(first, second, shard); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	if r.err != nil || len(r.sigs) != 3 {
		t.Fatalf("Wait = %v, %v; want the three signals", r.sigs, r.err)
	}
	var kept queues.Signal
	for _, sig := range r.sigs {
		if want := sig.Work == first.Work; sig.Unsent() != want {
			t.Errorf("signal %+v: Unsent() = %v, want %v (one free waiter: the first signal naming work)", sig, sig.Unsent(), want)
		}
		if sig.Unsent() {
			kept = sig
		}
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MessagesSent != 2 || st.SignalsKeptLocal != 1 {
		t.Errorf("Stats = %+v, want 2 messages sent (the second signal and the shard's) and 1 kept", st)
	}

	// Notify sends whatever waits here: its caller's process may end.
	ch = goWait(t.Context(), s, queues.Orchestrator, time.Minute)
	if err := gate.Wait(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	notified := queues.Signal{Kind: queues.Orchestrator, Instance: "order-2"}
	if err := s.Notify(t.Context(), notified); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); len(r.sigs) != 1 || r.sigs[0].Unsent() {
		t.Fatalf("Wait = %+v, want the notified signal, sent", r.sigs)
	}
	if st := s.Stats(); st.MessagesSent != 3 || st.SignalsKeptLocal != 1 {
		t.Errorf("Stats = %+v, want the notified signal sent", st)
	}

	// The waiter could not use the kept signal: declined, it reaches the
	// other process.
	if err := s.Decline(t.Context(), kept); err != nil {
		t.Fatal(err)
	}
	got := collect(t, other, queues.Worker, []queues.Signal{first, second, shard})
	if i := slices.IndexFunc(got, func(sig queues.Signal) bool { return sig.Work == first.Work }); i < 0 || got[i].Unsent() {
		t.Errorf("the other process received %+v; want the declined signal, not marked unsent", got)
	}
}

// TestKeepSendsNothingAndMarksItsSignals: Keep hands a signal to this
// process's next Wait, even with none waiting, sends no message, and marks
// it as reaching this process alone; one visible later comes at its
// VisibleAt.
func TestKeepSendsNothingAndMarksItsSignals(t *testing.T) {
	t.Parallel()
	s, _, _, _ := heldReceives(t)
	now := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "kept-now"}
	later := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "kept-later"}
	later.VisibleAt = time.Now().Add(300 * time.Millisecond)
	s.Keep(now, later)
	got, err := s.Wait(t.Context(), queues.Orchestrator, 0)
	if err != nil || len(got) != 1 || got[0].Instance != "kept-now" || !got[0].Unsent() {
		t.Fatalf("first wait: %+v, %v; want kept-now, marked unsent", got, err)
	}
	got, err = s.Wait(t.Context(), queues.Orchestrator, 10*time.Second)
	if err != nil || len(got) != 1 || got[0].Instance != "kept-later" || !got[0].Unsent() {
		t.Fatalf("second wait: %+v, %v; want kept-later at its VisibleAt, marked unsent", got, err)
	}
	if time.Now().Before(later.VisibleAt) {
		t.Fatalf("kept-later came before its VisibleAt")
	}
	if st := s.Stats(); st.SendMessageBatchRequests != 0 || st.SignalsKeptLocal != 2 {
		t.Fatalf("stats %+v; want no send and 2 signals kept in the process", st)
	}
}
