package queues_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// The SDK client satisfies the narrow interface.
var _ queues.API = (*sqs.Client)(nil)

// generous bounds every wait a test expects to end; tests never assert
// tighter timings than "it returned".
const generous = 5 * time.Second

// newSignals returns a Signals closed at the end of the test.
func newSignals(t *testing.T, api queues.API, optFns ...func(*queues.Options)) *queues.Signals {
	t.Helper()
	optFns = append([]func(*queues.Options){func(o *queues.Options) { o.Logger = testlog.New(t) }}, optFns...)
	s, err := queues.New(api, optFns...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// queueURLs sets both queue URLs.
func queueURLs(orchestrator, worker string) func(*queues.Options) {
	return func(o *queues.Options) {
		o.OrchestratorQueueURL = orchestrator
		o.WorkerQueueURL = worker
	}
}

// waitResult is what a Wait call returned, and how long it took.
type waitResult struct {
	sigs    []queues.Signal
	err     error
	elapsed time.Duration
}

// goWait calls Wait in a goroutine and returns a channel for its result.
func goWait(ctx context.Context, s *queues.Signals, kind queues.Kind, timeout time.Duration) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		start := time.Now()
		sigs, err := s.Wait(ctx, kind, timeout)
		ch <- waitResult{sigs, err, time.Since(start)}
	}()
	return ch
}

// awaitWaiting waits (at most generous) until n calls of Wait for kind
// are blocked on s.
func awaitWaiting(t *testing.T, s *queues.Signals, kind queues.Kind, n int) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for s.Waiting(kind) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters of kind %v blocked, want %d", s.Waiting(kind), kind, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// result waits (at most generous) for a goWait result.
func result(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(2 * generous):
		t.Fatal("Wait did not return")
		return waitResult{}
	}
}

// collect calls Wait until every signal in want has been received (in any
// order, duplicates allowed) or the deadline passes, and returns what was
// received.
func collect(t *testing.T, s *queues.Signals, kind queues.Kind, want []queues.Signal) []queues.Signal {
	t.Helper()
	var got []queues.Signal
	deadline := time.Now().Add(3 * generous)
	for time.Now().Before(deadline) {
		missing := false
		for _, w := range want {
			if !containsSignal(got, w) {
				missing = true
				break
			}
		}
		if !missing {
			return got
		}
		sigs, err := s.Wait(t.Context(), kind, 2*time.Second)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		got = append(got, sigs...)
	}
	t.Fatalf("received %v, want all of %v", got, want)
	return nil
}

// containsSignal reports whether list holds sig. A message carries VisibleAt
// to the millisecond, rounded up: a received VisibleAt is sig's or less than
// a millisecond after it.
func containsSignal(list []queues.Signal, sig queues.Signal) bool {
	return slices.ContainsFunc(list, func(s queues.Signal) bool {
		d := s.VisibleAt.Sub(sig.VisibleAt)
		return s.Kind == sig.Kind && s.Shard == sig.Shard && s.Instance == sig.Instance &&
			d >= 0 && d < time.Millisecond
	})
}

// drain receives raw messages from url until a receive of waitSeconds comes
// back empty, and returns their bodies.
func drain(t *testing.T, c *sqs.Client, url string, waitSeconds int32) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds,
		})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("DeleteMessage: %v", err)
			}
		}
	}
}

// gatedAPI forwards to an SQS client but holds every SendMessageBatch until
// release is closed.
type gatedAPI struct {
	queues.API
	entered chan struct{} // receives once per SendMessageBatch call
	release chan struct{}
}

func (g *gatedAPI) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.API.SendMessageBatch(ctx, in, optFns...)
}

func TestNew_Options(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		api  queues.API
		fn   func(*queues.Options)
		ok   bool
	}{
		{"zero value, nil API", nil, nil, true},
		{"queue URL needs an API", nil, queueURLs("http://q/o", ""), false},
		{"same URL for both kinds", &sqs.Client{}, queueURLs("http://q/x", "http://q/x"), false},
		{"long poll too long", nil, func(o *queues.Options) { o.MaxLongPoll = 21 * time.Second }, false},
		{"long poll under a second", nil, func(o *queues.Options) { o.MaxLongPoll = 900 * time.Millisecond }, false},
		{"negative backoff", nil, func(o *queues.Options) { o.ErrorBackoff = -time.Second }, false},
		{"negative pending", nil, func(o *queues.Options) { o.MaxPending = -1 }, false},
		{"explicit values", &sqs.Client{}, func(o *queues.Options) {
			queueURLs("http://q/o", "http://q/w")(o)
			o.MaxLongPoll, o.ErrorBackoff, o.MaxPending = 5*time.Second, time.Millisecond, 3
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := queues.New(tc.api, tc.fn)
			if (err == nil) != tc.ok {
				t.Fatalf("New error = %v, want ok=%v", err, tc.ok)
			}
			if s != nil {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestSignals_InvalidInput(t *testing.T) {
	t.Parallel()
	s := newSignals(t, nil)
	for _, sig := range []queues.Signal{{Kind: 0}, {Kind: queues.Schedule + 1}, {Kind: queues.Worker, Shard: -1}} {
		err := s.Notify(t.Context(), queues.Signal{Kind: queues.Orchestrator}, sig)
		if !errors.Is(err, provider.ErrInvalidInput) || provider.IsRetryable(err) {
			t.Errorf("Notify(%+v) = %v, want permanent ErrInvalidInput", sig, err)
		}
	}
	if _, err := s.Wait(t.Context(), 0, time.Millisecond); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("Wait(kind 0) = %v, want ErrInvalidInput", err)
	}
	// The valid signal of the refused call was not delivered either.
	if sigs, err := s.Wait(t.Context(), queues.Orchestrator, 0); err != nil || len(sigs) != 0 {
		t.Errorf("Wait after refused Notify = %v, %v; want nothing", sigs, err)
	}
}

// In-process only: Notify wakes a blocked Wait and no request is made.
func TestSignals_InProcessWakesWithoutRequests(t *testing.T) {
	t.Parallel()
	s := newSignals(t, nil)
	ch := goWait(t.Context(), s, queues.Orchestrator, time.Minute)
	awaitWaiting(t, s, queues.Orchestrator, 1)
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 2, Instance: "order-1"}
	if err := s.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	if r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v; want %v", r.sigs, r.err, sig)
	}
	if got := s.Stats(); got != (queues.Stats{}) {
		t.Errorf("Stats = %+v, want no requests", got)
	}
}

// With a queue: the in-process wake does not wait for SQS. SendMessageBatch
// is held back, and the waiter wakes anyway.
func TestSignals_InProcessWakeDoesNotWaitForSQS(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	gated := &gatedAPI{API: c, entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := newSignals(t, gated, queueURLs(newQueue(t, "orch"), newQueue(t, "work")))

	ch := goWait(t.Context(), s, queues.Worker, time.Minute)
	awaitWaiting(t, s, queues.Worker, 1)
	sig := queues.Signal{Kind: queues.Worker, Shard: 1}
	notified := make(chan error, 1)
	go func() { notified <- s.Notify(t.Context(), sig) }()
	<-gated.entered
	r := result(t, ch)
	if r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v; want %v", r.sigs, r.err, sig)
	}
	if n := s.Stats().MessagesSent; n != 0 {
		t.Fatalf("%d messages sent before the waiter woke", n)
	}
	close(gated.release)
	if err := <-notified; err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SendMessageBatchRequests != 1 || st.MessagesSent != 1 {
		t.Errorf("Stats = %+v, want one SendMessageBatch of one message", st)
	}
}

// A signal from another process (another Signals on the same queues) wakes
// a Wait through SQS, and the waiter deletes the message.
func TestSignals_WakesAcrossProcesses(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	receiver := newSignals(t, c, queueURLs(orch, work))
	sender := newSignals(t, c, queueURLs(orch, work))

	ch := goWait(t.Context(), receiver, queues.Orchestrator, 15*time.Second)
	awaitWaiting(t, receiver, queues.Orchestrator, 1)
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 7, Instance: "order-42"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	if r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v; want %v", r.sigs, r.err, sig)
	}
	if st := sender.Stats(); st.SendMessageBatchRequests != 1 || st.ReceiveMessageRequests != 0 {
		t.Errorf("sender Stats = %+v", st)
	}
	// The poller deletes after it delivers: give it a moment.
	deadline := time.Now().Add(generous)
	for receiver.Stats().DeleteMessageBatchRequests == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := receiver.Stats()
	if st.ReceiveMessageRequests < 1 || st.DeleteMessageBatchRequests != 1 || st.MessagesReceived != 1 || st.Errors != 0 {
		t.Errorf("receiver Stats = %+v, want >=1 receive, 1 delete, 1 message", st)
	}
	if left := drain(t, c, orch, 0); len(left) != 0 {
		t.Errorf("messages left on the queue: %q", left)
	}
	// Nothing crossed over to the other kind.
	if sigs, err := receiver.Wait(t.Context(), queues.Worker, 0); err != nil || len(sigs) != 0 {
		t.Errorf("worker Wait = %v, %v", sigs, err)
	}
}

// A sub-second Wait with nothing sent returns with no signals; it is not
// stretched to SQS's whole seconds.
func TestSignals_SubSecondTimeout(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	for _, tc := range []struct {
		name string
		fn   func(*queues.Options)
	}{
		{"with queue", queueURLs(newQueue(t, "orch"), "")},
		{"in-process only", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSignals(t, c, tc.fn)
			r := result(t, goWait(t.Context(), s, queues.Orchestrator, 300*time.Millisecond))
			if r.err != nil || len(r.sigs) != 0 {
				t.Fatalf("Wait = %v, %v; want nothing", r.sigs, r.err)
			}
			if r.elapsed > generous {
				t.Fatalf("Wait(300ms) took %v", r.elapsed)
			}
			t.Logf("Wait(300ms) returned after %v; stats %+v", r.elapsed, s.Stats())
		})
	}
}

// A kind without a queue URL never makes SQS requests, even while the other
// kind has one.
func TestSignals_NoRequestsForKindWithoutQueue(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	s := newSignals(t, c, queueURLs(newQueue(t, "orch"), ""))
	sig := queues.Signal{Kind: queues.Worker, Shard: 3}
	ch := goWait(t.Context(), s, queues.Worker, 1500*time.Millisecond)
	awaitWaiting(t, s, queues.Worker, 1)
	if err := s.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v", r.sigs, r.err)
	}
	if r := result(t, goWait(t.Context(), s, queues.Worker, 1200*time.Millisecond)); r.err != nil || len(r.sigs) != 0 {
		t.Fatalf("second Wait = %v, %v", r.sigs, r.err)
	}
	if st := s.Stats(); st != (queues.Stats{}) {
		t.Errorf("Stats = %+v, want no requests", st)
	}
}

// Signals sent while nobody waits are kept for the next Wait.
func TestSignals_KeptForNextWait(t *testing.T) {
	t.Parallel()
	s := newSignals(t, nil, func(o *queues.Options) { o.MaxPending = 2 })
	a := queues.Signal{Kind: queues.Orchestrator, Instance: "a"}
	b := queues.Signal{Kind: queues.Orchestrator, Instance: "b"}
	c := queues.Signal{Kind: queues.Orchestrator, Instance: "c"}
	for _, sig := range []queues.Signal{a, b, b, c} {
		if err := s.Notify(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
	}
	sigs, err := s.Wait(t.Context(), queues.Orchestrator, 0)
	if err != nil || len(sigs) != 2 || !containsSignal(sigs, b) || !containsSignal(sigs, c) {
		t.Fatalf("Wait = %v, %v; want the newest two, b and c", sigs, err)
	}
	if sigs, err := s.Wait(t.Context(), queues.Orchestrator, 0); err != nil || len(sigs) != 0 {
		t.Fatalf("second Wait = %v, %v; want nothing", sigs, err)
	}
}

// Identical signals in one Notify are sent once.
func TestSignals_NotifyDeduplicates(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	s := newSignals(t, c, queueURLs(orch, ""))
	vis := time.Now().Add(-time.Second)
	a := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "x", VisibleAt: vis}
	b := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "y"}
	if err := s.Notify(t.Context(), a, b, a, b, a); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SendMessageBatchRequests != 1 || st.MessagesSent != 2 {
		t.Fatalf("Stats = %+v, want one SendMessageBatch of 2 messages", st)
	}
	if bodies := drain(t, c, orch, 1); len(bodies) != 2 {
		t.Fatalf("queue held %d messages, want 2: %q", len(bodies), bodies)
	}
}

// More than 10 signals are sent in batches of at most 10, and all arrive.
func TestSignals_NotifySplitsBatches(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	sender := newSignals(t, c, queueURLs(orch, work))
	receiver := newSignals(t, c, queueURLs(orch, work))
	var sigs []queues.Signal
	for i := range 23 {
		sigs = append(sigs, queues.Signal{Kind: queues.Worker, Shard: i})
	}
	sigs = append(sigs, queues.Signal{Kind: queues.Orchestrator, Shard: 0, Instance: "o"})
	if err := sender.Notify(t.Context(), sigs...); err != nil {
		t.Fatal(err)
	}
	// 23 worker signals: 10+10+3; 1 orchestrator signal: 1.
	if st := sender.Stats(); st.SendMessageBatchRequests != 4 || st.MessagesSent != 24 {
		t.Fatalf("Stats = %+v, want 4 SendMessageBatch calls, 24 messages", st)
	}
	collect(t, receiver, queues.Worker, sigs[:23])
	collect(t, receiver, queues.Orchestrator, sigs[23:])
}

// Instance ids with '#', any Unicode and NUL survive SQS.
func TestSignals_InstanceIDsRoundTrip(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	sender := newSignals(t, c, queueURLs(orch, ""))
	receiver := newSignals(t, c, queueURLs(orch, ""))
	vis := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	var sigs []queues.Signal
	for i, id := range []string{
		"plain", "a#b#c", "ütf-8 ✓ 日本語", "emoji 🎉", "nul\x00inside", "\x00", "tab\tnew\nline",
		"\uFFFE\uFFFF", "invalid utf-8 \xff\xfe", "<&>\"'\\", "",
	} {
		sigs = append(sigs, queues.Signal{Kind: queues.Orchestrator, Shard: i, Instance: id, VisibleAt: vis})
	}
	if err := sender.Notify(t.Context(), sigs...); err != nil {
		t.Fatal(err)
	}
	got := collect(t, receiver, queues.Orchestrator, sigs)
	for _, g := range got {
		if g.Kind != queues.Orchestrator || !g.VisibleAt.Equal(vis) {
			t.Errorf("received %+v, want kind orchestrator and VisibleAt %v", g, vis)
		}
	}
}

// A delayed signal is not delivered before its delay, in either path.
func TestSignals_DelayedSignal(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	sender := newSignals(t, c, queueURLs(orch, ""))
	receiver := newSignals(t, c, queueURLs(orch, ""))
	start := time.Now()
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 5, Instance: "timer", VisibleAt: start.Add(1500 * time.Millisecond)}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	if st := sender.Stats(); st.MessagesSent != 1 {
		t.Fatalf("Stats = %+v, want 1 message sent", st)
	}

	// SQS: an immediate short receive sees nothing. (VisibilityTimeout 0: a
	// message received by mistake is not hidden from the receiver below.)
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &orch, MaxNumberOfMessages: 10, VisibilityTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Fatalf("delayed message received after %v: %q", time.Since(start), aws.ToString(out.Messages[0].Body))
	}
	// ... and it arrives later (DelaySeconds is rounded up: 2 s).
	got := collect(t, receiver, queues.Orchestrator, []queues.Signal{sig})
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("delayed signal received after %v, before its delay", elapsed)
	}
	t.Logf("received %v after %v", got, time.Since(start))

	// In-process: the sender's own waiter is woken by a timer at VisibleAt.
	start = time.Now()
	sig2 := queues.Signal{Kind: queues.Orchestrator, Shard: 6, VisibleAt: start.Add(300 * time.Millisecond)}
	local := newSignals(t, nil)
	if err := local.Notify(t.Context(), sig2); err != nil {
		t.Fatal(err)
	}
	if sigs, _ := local.Wait(t.Context(), queues.Orchestrator, 0); len(sigs) != 0 {
		t.Fatalf("delayed signal available at once: %v", sigs)
	}
	r := result(t, goWait(t.Context(), local, queues.Orchestrator, generous))
	if r.err != nil || !containsSignal(r.sigs, sig2) {
		t.Fatalf("Wait = %v, %v", r.sigs, r.err)
	}
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
		t.Errorf("in-process delayed signal delivered after %v", elapsed)
	}
}

// A delayed signal that reaches a receiver whose clock is behind the
// sender's (DelaySeconds counts on SQS's clock) is held until its VisibleAt
// by the receiver's clock: before then the receiver's fetch would not see the
// work, and the signal would be spent for nothing.
func TestSignals_EarlySignalHeldUntilVisible(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	const behind = 2 * time.Second
	receiverNow := func() time.Time { return time.Now().Add(-behind) }
	sender := newSignals(t, c, queueURLs(orch, ""))
	receiver := newSignals(t, c, queueURLs(orch, ""), func(o *queues.Options) { o.Now = receiverNow })
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "skewed", VisibleAt: time.Now().Add(time.Second)}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	got := collect(t, receiver, queues.Orchestrator, []queues.Signal{sig})
	if now := receiverNow(); now.Before(sig.VisibleAt) {
		t.Fatalf("received %v at %v by the receiver's clock, before its VisibleAt %v", got, now, sig.VisibleAt)
	}
	if st := receiver.Stats(); st.MessagesReceived != 1 {
		t.Errorf("receiver Stats = %+v, want the one message", st)
	}
}

// Signals more than 15 minutes away are neither sent nor scheduled.
func TestSignals_BeyondMaxDelay(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	s := newSignals(t, c, queueURLs(orch, ""))
	far := queues.Signal{Kind: queues.Orchestrator, VisibleAt: time.Now().Add(queues.MaxDelay + time.Minute)}
	near := queues.Signal{Kind: queues.Orchestrator, VisibleAt: time.Now().Add(queues.MaxDelay - time.Minute)}
	if err := s.Notify(t.Context(), far, near); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SignalsDeferred != 1 || st.MessagesSent != 1 || st.SendMessageBatchRequests != 1 {
		t.Errorf("Stats = %+v, want 1 deferred, 1 sent", st)
	}
}

// A signal a little more than MaxDelay away is kept in memory and sent once
// it is within MaxDelay.
func TestSignals_DeferredSignalSentWhenWithinMaxDelay(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	s := newSignals(t, c, queueURLs(orch, ""))
	far := queues.Signal{Kind: queues.Orchestrator, Instance: "timer", VisibleAt: time.Now().Add(queues.MaxDelay + 200*time.Millisecond)}
	if err := s.Notify(t.Context(), far); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SignalsDeferred != 1 || st.MessagesSent != 0 {
		t.Fatalf("Stats = %+v, want 1 deferred, none sent yet", st)
	}
	awaitStats(t, s, "deferred signal sent", func(st queues.Stats) bool { return st.MessagesSent == 1 })
}

// Beyond MaxDeferred, signals more than MaxDelay away are dropped and
// counted.
func TestSignals_MaxDeferred(t *testing.T) {
	t.Parallel()
	s := newSignals(t, nil, func(o *queues.Options) { o.MaxDeferred = 2 })
	for i := range 3 {
		sig := queues.Signal{Kind: queues.Worker, Shard: i, VisibleAt: time.Now().Add(time.Hour)}
		if err := s.Notify(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.SignalsDeferred != 2 || st.SignalsBeyondMaxDelay != 1 {
		t.Errorf("Stats = %+v, want 2 deferred, 1 beyond", st)
	}
}

// Many goroutines waiting on one kind share one long poll, and all of them
// are woken by one signal.
func TestSignals_WaitersShareOnePoll(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	receiver := newSignals(t, c, queueURLs(orch, ""))
	sender := newSignals(t, c, queueURLs(orch, ""))
	const n = 8
	chans := make([]<-chan waitResult, n)
	for i := range chans {
		chans[i] = goWait(t.Context(), receiver, queues.Orchestrator, 15*time.Second)
	}
	awaitWaiting(t, receiver, queues.Orchestrator, n)
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "shared"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		if r := result(t, ch); r.err != nil || !containsSignal(r.sigs, sig) {
			t.Errorf("waiter %d: Wait = %v, %v", i, r.sigs, r.err)
		}
	}
	if st := receiver.Stats(); st.ReceiveMessageRequests > 2 {
		t.Errorf("%d waiters made %d ReceiveMessage requests, want 1 (2 at most)", n, st.ReceiveMessageRequests)
	}
}

// Notify reports SQS failures with a classified error; in-process waiters
// are woken anyway.
func TestSignals_NotifyErrors(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	missing := newQueue(t, "gone")
	if _, err := c.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: &missing}); err != nil {
		t.Fatal(err)
	}
	s := newSignals(t, c, queueURLs(missing, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Instance: "i"}
	err := s.Notify(t.Context(), sig)
	var pe *provider.Error
	if !errors.As(err, &pe) || provider.IsRetryable(err) {
		t.Fatalf("Notify to a deleted queue = %v, want a permanent *provider.Error", err)
	}
	t.Logf("Notify error: %v", err)
	if sigs, _ := s.Wait(t.Context(), queues.Orchestrator, 0); !containsSignal(sigs, sig) {
		t.Errorf("in-process waiters not woken: %v", sigs)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ok := newSignals(t, c, queueURLs(newQueue(t, "orch"), ""))
	if err := ok.Notify(ctx, sig); err == nil || provider.IsRetryable(err) {
		t.Errorf("Notify with a cancelled ctx = %v, want a permanent error", err)
	}
}

// Wait returns ctx's error when ctx ends.
func TestSignals_WaitContextCancelled(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	s := newSignals(t, c, queueURLs(newQueue(t, "orch"), ""))
	ctx, cancel := context.WithCancel(t.Context())
	ch := goWait(ctx, s, queues.Orchestrator, time.Minute)
	awaitWaiting(t, s, queues.Orchestrator, 1)
	cancel()
	if r := result(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait = %v, %v; want context.Canceled", r.sigs, r.err)
	}
}

// Close ends every goroutine, wakes blocked waiters with ErrClosed, and
// refuses later calls. Not parallel: it checks for leaked goroutines.
func TestSignals_Close(t *testing.T) {
	c := sqsClient(t)
	orch, work := newQueue(t, "orch"), newQueue(t, "work")
	defer goleak.VerifyNone(t, append(leakOptions(), goleak.IgnoreCurrent())...)

	s, err := queues.New(c, queueURLs(orch, work), func(o *queues.Options) { o.Logger = testlog.New(t) })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		kind := queues.Orchestrator
		if i%2 == 1 {
			kind = queues.Worker
		}
		wg.Go(func() {
			_, err := s.Wait(t.Context(), kind, time.Minute)
			errs <- err
		})
	}
	// A pending in-process timer must be stopped too.
	if err := s.Notify(t.Context(), queues.Signal{Kind: queues.Worker, VisibleAt: time.Now().Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	awaitStats(t, s, "both pollers in long polls", func(st queues.Stats) bool { return st.ReceiveMessageRequests >= 2 })
	closeStart := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	select {
	case <-closed:
	case <-time.After(generous):
		t.Fatal("Close did not return")
	}
	t.Logf("Close returned after %v", time.Since(closeStart))
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, queues.ErrClosed) {
			t.Errorf("Wait during Close = %v, want ErrClosed", err)
		}
	}
	if err := s.Notify(t.Context(), queues.Signal{Kind: queues.Worker}); !errors.Is(err, queues.ErrClosed) {
		t.Errorf("Notify after Close = %v", err)
	}
	if _, err := s.Wait(t.Context(), queues.Worker, time.Second); !errors.Is(err, queues.ErrClosed) {
		t.Errorf("Wait after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A process that receives its own message does not wake its waiters twice:
// Notify woke them in-process already.
func TestSignals_OwnMessagesWakeOnce(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	s := newSignals(t, c, queueURLs(orch, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Instance: "self"}
	if err := s.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	if sigs, err := s.Wait(t.Context(), queues.Orchestrator, 0); err != nil || !containsSignal(sigs, sig) {
		t.Fatalf("Wait = %v, %v; want the in-process signal", sigs, err)
	}
	if r := result(t, goWait(t.Context(), s, queues.Orchestrator, 2*time.Second)); r.err != nil || len(r.sigs) != 0 {
		t.Fatalf("second Wait = %v, %v; want nothing", r.sigs, r.err)
	}
	st := s.Stats()
	if st.MessagesFromSelf != 1 || st.DeleteMessageBatchRequests != 1 {
		t.Errorf("Stats = %+v, want the own message received and deleted", st)
	}
	if left := drain(t, c, orch, 0); len(left) != 0 {
		t.Errorf("messages left on the queue: %q", left)
	}
}

// busyWithPollInFlight returns a process on the orchestrator queue orch
// whose dispatcher waited and left, as one that found work does (here by
// cancelling: a wake-up by Notify would end the poll with the process's own
// message), more than the grace period ago: its 20 s long poll is in
// flight with nobody waiting.
func busyWithPollInFlight(t *testing.T, c *sqs.Client, orch string) *queues.Signals {
	t.Helper()
	busy := newSignals(t, c, queueURLs(orch, ""))
	ctx, cancel := context.WithCancel(t.Context())
	ch := goWait(ctx, busy, queues.Orchestrator, 15*time.Second)
	awaitStats(t, busy, "busy's poll is in flight", func(st queues.Stats) bool { return st.ReceiveMessageRequests == 1 })
	cancel()
	if r := result(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait = %v, %v", r.sigs, r.err)
	}
	// The grace period is a rule of time, so a sleep.
	time.Sleep(time.Second)
	return busy
}

// A process whose waiters all left keeps its long poll in flight: SQS, like
// the emulators, keeps a cancelled receive open on its side and hands it the
// next message, which would then be lost for the receive's visibility
// timeout. A signal the poll receives after the waiters have been gone for
// half a second goes back to the queue at once, unchanged, and reaches a
// process that waits.
func TestSignals_SignalForABusyProcessGoesBack(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	busy := busyWithPollInFlight(t, c, orch)
	sender := newSignals(t, c, queueURLs(orch, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 2, Instance: "for-the-idle"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	st := awaitStats(t, busy, "busy sends the signal back and deletes the copy it received", func(st queues.Stats) bool {
		return st.SignalsReturned == 1 && st.DeleteMessageBatchRequests == 1
	})
	if st.MessagesReceived != 1 || st.ReceiveMessageRequests != 1 || st.SendMessageBatchRequests != 1 || st.MessagesSent != 1 {
		t.Errorf("busy process: %+v, want one receive of the message, one send back and one delete", st)
	}
	if sigs, err := busy.Wait(t.Context(), queues.Orchestrator, 0); err != nil || len(sigs) != 0 {
		t.Errorf("busy kept %v, %v; want nothing kept", sigs, err)
	}
	// A process that waits now gets it.
	third := newSignals(t, c, queueURLs(orch, ""))
	collect(t, third, queues.Orchestrator, []queues.Signal{sig})
	if st := third.Stats(); st.MessagesReceived != 1 {
		t.Errorf("third process: %+v, want the one message", st)
	}
	if left := drain(t, c, orch, 0); len(left) != 0 {
		t.Errorf("messages left on the queue: %q", left)
	}
}

// A signal the poll receives within the grace period after the last waiter
// left is kept for the next Wait of the process. When none comes for it
// within the grace period (the process's dispatchers have stopped, as a
// runtime's do at shutdown while its provider stays open), it goes back to
// the queue and reaches a process that waits, instead of staying with a
// process that will never use it.
func TestSignals_KeptSignalNobodyTakesGoesBack(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	stopped := newSignals(t, c, queueURLs(orch, ""))
	ctx, cancel := context.WithCancel(t.Context())
	ch := goWait(ctx, stopped, queues.Orchestrator, 15*time.Second)
	awaitStats(t, stopped, "the poll is in flight", func(st queues.Stats) bool { return st.ReceiveMessageRequests == 1 })
	cancel()
	if r := result(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait = %v, %v", r.sigs, r.err)
	}
	// At once, so that the poll in flight receives it within the grace
	// period and keeps it for a Wait that never comes.
	sender := newSignals(t, c, queueURLs(orch, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "cancel-me"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	awaitStats(t, stopped, "the stopped process receives the signal", func(st queues.Stats) bool { return st.MessagesReceived == 1 })
	waiting := newSignals(t, c, queueURLs(orch, ""))
	collect(t, waiting, queues.Orchestrator, []queues.Signal{sig})
	if st := stopped.Stats(); st.SignalsReturned != 1 {
		t.Errorf("stopped process: %+v, want the signal sent back", st)
	}
	if sigs, err := stopped.Wait(t.Context(), queues.Orchestrator, 0); err != nil || len(sigs) != 0 {
		t.Errorf("stopped process kept %v, %v; want nothing kept", sigs, err)
	}
}

// A received signal a waiter hands back (Requeue: a fetch whose try failed
// as its runtime stopped) and that no Wait takes goes back to the queue the
// same way; a signal the process had only locally is not sent, as its copy
// went to SQS when it was sent.
func TestSignals_RequeuedSignalNobodyTakesGoesBack(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	stopping := newSignals(t, c, queueURLs(orch, ""))
	sender := newSignals(t, c, queueURLs(orch, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 2, Instance: "requeued"}
	ch := goWait(t.Context(), stopping, queues.Orchestrator, 15*time.Second)
	awaitWaiting(t, stopping, queues.Orchestrator, 1)
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	if r.err != nil || !containsSignal(r.sigs, sig) {
		t.Fatalf("Wait = %v, %v; want the signal", r.sigs, r.err)
	}
	local := queues.Signal{Kind: queues.Orchestrator, Shard: 2, Instance: "local"}
	stopping.Requeue(append(r.sigs, local)...)
	// SignalsReturned counts before the send's response is in.
	st := awaitStats(t, stopping, "the requeued signal goes back", func(st queues.Stats) bool {
		return st.SignalsReturned >= 1 && st.SendMessageBatchRequests >= 1
	})
	if st.SignalsReturned != 1 || st.SendMessageBatchRequests != 1 {
		t.Errorf("stopping process: %+v, want one signal sent back in one send (the received one)", st)
	}
	waiting := newSignals(t, c, queueURLs(orch, ""))
	got := collect(t, waiting, queues.Orchestrator, []queues.Signal{sig})
	if containsSignal(got, local) {
		t.Errorf("the local signal was sent: %v", got)
	}
	// The local signal is still there for the process's next Wait.
	if sigs, err := stopping.Wait(t.Context(), queues.Orchestrator, 0); err != nil || len(sigs) != 1 || !containsSignal(sigs, local) {
		t.Errorf("stopping process kept %v, %v; want the local signal only", sigs, err)
	}
}

// A Wait whose context ends as signals reach it leaves the received ones
// with the process, as Requeue would: the caller, a fetch that is stopping,
// would drop them, and their messages are gone from SQS. Signals the
// process only posted (Unsent) come back with the error, for the caller to
// send on. The race is the select of a waiter woken by both at once, so it
// is run many times.
func TestSignals_WaitEndedByContextLeavesReceivedSignals(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	s := newSignals(t, c, queueURLs(orch, ""))
	sender := newSignals(t, c, queueURLs(orch, ""))
	received := queues.Signal{Kind: queues.Orchestrator, Shard: 3, Instance: "received"}
	if err := sender.Notify(t.Context(), received); err != nil {
		t.Fatal(err)
	}
	got := collect(t, s, queues.Orchestrator, []queues.Signal{received})
	i := slices.IndexFunc(got, func(sig queues.Signal) bool { return sig.Instance == received.Instance })
	received = got[i] // as the poller delivered it: marked received
	local := queues.Signal{Kind: queues.Orchestrator, Shard: 3, Instance: "local"}
	ended, unsent, wentBack := 0, 0, 0
	for round := range 100 {
		returnedBefore := s.Stats().SignalsReturned
		ctx, cancel := context.WithCancel(t.Context())
		ch := goWait(ctx, s, queues.Orchestrator, time.Minute)
		awaitWaiting(t, s, queues.Orchestrator, 1)
		cancel()
		// Posted while the waiter is free, the local signal is handed to it
		// unsent.
		if err := s.Post(local); err != nil {
			t.Fatal(err)
		}
		s.Requeue(received)
		r := result(t, ch)
		if r.err == nil {
			// The waiter woke for the signals first: it has them all.
			if !containsSignal(r.sigs, received) {
				t.Fatalf("round %d: Wait = %v, nil; want the received signal", round, r.sigs)
			}
		} else {
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("round %d: Wait = %v, %v", round, r.sigs, r.err)
			}
			ended++
			if containsSignal(r.sigs, received) {
				t.Fatalf("round %d: Wait returned the received signal with %v; want it left with the process", round, r.err)
			}
			for _, sig := range r.sigs {
				if !sig.Unsent() {
					t.Fatalf("round %d: Wait returned %+v with %v; want only unsent signals", round, sig, r.err)
				}
				unsent++
			}
			// Kept for the next Wait, or, if that came more than half a
			// second later (a loaded machine), sent back to its queue.
			if left, _ := s.Wait(t.Context(), queues.Orchestrator, 0); !containsSignal(left, received) {
				awaitStats(t, s, fmt.Sprintf("round %d: the received signal, not kept for the next Wait (%v), goes back", round, left),
					func(st queues.Stats) bool { return st.SignalsReturned > returnedBefore })
				wentBack++
			}
		}
		// Empty the list for the next round (the local signal is kept
		// when the waiter had gone before it was posted).
		for sigs, _ := s.Wait(t.Context(), queues.Orchestrator, 0); len(sigs) > 0; sigs, _ = s.Wait(t.Context(), queues.Orchestrator, 0) {
		}
	}
	t.Logf("%d of 100 Waits ended with their context, returning %d unsent signals; %d received signals went back to their queue before the next Wait", ended, unsent, wentBack)
}

// A signal sent back names its original sender, so that the sender's own
// poller takes it as its own (its waiters had it in the process already)
// and nobody is woken by it twice there.
func TestSignals_SignalSentBackKeepsItsSender(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	busy := busyWithPollInFlight(t, c, orch)
	sender := newSignals(t, c, queueURLs(orch, ""))
	sig := queues.Signal{Kind: queues.Orchestrator, Instance: "own"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	awaitStats(t, busy, "busy sends the signal back", func(st queues.Stats) bool { return st.SignalsReturned == 1 })
	// The sender had the signal in the process; it collects it now, then
	// waits and receives the copy sent back as its own.
	if sigs, err := sender.Wait(t.Context(), queues.Orchestrator, 0); err != nil || !containsSignal(sigs, sig) {
		t.Fatalf("sender's Wait = %v, %v; want the in-process signal", sigs, err)
	}
	ch := goWait(t.Context(), sender, queues.Orchestrator, 15*time.Second)
	awaitStats(t, sender, "the sender receives its own signal back", func(st queues.Stats) bool { return st.MessagesFromSelf == 1 })
	if err := sender.Notify(t.Context(), queues.Signal{Kind: queues.Orchestrator, Instance: "next"}); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.err != nil || containsSignal(r.sigs, sig) {
		t.Errorf("sender's second Wait = %v, %v; want the next signal only", r.sigs, r.err)
	}
}

// TestRequeue: signals a waiter hands back reach the next wait of their
// kind.
// TestRequeueAfter: a signal requeued with a delay reaches a waiter after
// it, once however often it was requeued meanwhile, and not at all when
// Close comes first.
func TestRequeueAfter(t *testing.T) {
	s, err := queues.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	sig := queues.Signal{Kind: queues.Worker, Shard: 2, Instance: "i"}
	s.RequeueAfter(50*time.Millisecond, sig)
	s.RequeueAfter(50*time.Millisecond, sig)
	if got, _ := s.Wait(t.Context(), queues.Worker, 0); len(got) != 0 {
		t.Fatalf("a signal requeued for later came at once: %v", got)
	}
	var got []queues.Signal
	for len(got) == 0 {
		if got, err = s.Wait(t.Context(), queues.Worker, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != sig {
		t.Fatalf("Wait after RequeueAfter: %v; want %v once", got, sig)
	}
	if more, _ := s.Wait(t.Context(), queues.Worker, 200*time.Millisecond); len(more) != 0 {
		t.Fatalf("the signal requeued twice came twice: %v", more)
	}
	s.RequeueAfter(time.Hour, sig)
	s.Close() // would wait an hour for the timer if Close kept it
}

func TestRequeue(t *testing.T) {
	s, err := queues.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sig := queues.Signal{Kind: queues.Worker, Shard: 1, Instance: "i", Work: "w"}
	s.Requeue(sig)
	got, err := s.Wait(t.Context(), queues.Worker, 0)
	if err != nil || len(got) != 1 || got[0] != sig {
		t.Fatalf("Wait after Requeue: %v, %v; want %v", got, err, sig)
	}
	if got, _ := s.Wait(t.Context(), queues.Orchestrator, 0); len(got) != 0 {
		t.Fatalf("a requeued worker signal reached the orchestrator kind: %v", got)
	}
}
