package queues_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/queues"
)

// recordingAPI keeps the bodies sent and counts receives, which it
// answers with nothing after the long poll asked for.
type recordingAPI struct {
	mu       sync.Mutex
	bodies   []string
	receives atomic.Int64
}

func (a *recordingAPI) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		a.bodies = append(a.bodies, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (a *recordingAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	a.receives.Add(1)
	t := time.NewTimer(time.Duration(in.WaitTimeSeconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return &sqs.ReceiveMessageOutput{}, ctx.Err()
}

func (a *recordingAPI) DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return &sqs.DeleteMessageBatchOutput{}, nil
}

func (a *recordingAPI) sent() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

func receiveElsewhere(t *testing.T, api queues.API) *queues.Signals {
	t.Helper()
	s, err := queues.New(api, func(o *queues.Options) {
		o.OrchestratorQueueURL = "https://sqs.example/000000000000/orchestrator"
		o.WorkerQueueURL = "https://sqs.example/000000000000/worker"
		o.ReceiveElsewhere = true
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReceiveElsewhereSendsButNeverReceives: with ReceiveElsewhere, Wait
// makes no receive; signals reach waiters through Deliver, and Notify
// still sends. A body sent parses back into the signal sent.
func TestReceiveElsewhereSendsButNeverReceives(t *testing.T) {
	t.Parallel()
	api := &recordingAPI{}
	s := receiveElsewhere(t, api)
	sig := queues.Signal{Kind: queues.Worker, Shard: 3, Instance: "i#1\x00é", Work: "row", Claim: "claim"}
	if err := s.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	// Notify keeps a copy for this process's next Wait; take it.
	if got, err := s.Wait(t.Context(), queues.Worker, 0); err != nil || len(got) != 1 {
		t.Fatalf("Wait = %v, %v; want the copy Notify kept", got, err)
	}
	bodies := api.sent()
	if len(bodies) != 1 {
		t.Fatalf("sent %d messages, want 1", len(bodies))
	}
	parsed, err := queues.ParseSignal(bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Kind != sig.Kind || parsed.Shard != sig.Shard || parsed.Instance != sig.Instance || parsed.Work != sig.Work || parsed.Claim != sig.Claim {
		t.Errorf("parsed %+v, want %+v", parsed, sig)
	}
	got := make(chan []queues.Signal, 1)
	go func() {
		sigs, _ := s.Wait(t.Context(), queues.Worker, time.Minute)
		got <- sigs
	}()
	awaitWaiting(t, s, queues.Worker, 1)
	s.Deliver(parsed)
	if sigs := <-got; len(sigs) != 1 || sigs[0].Instance != sig.Instance {
		t.Errorf("the waiter got %+v, want the delivered signal", sigs)
	}
	if n := api.receives.Load(); n != 0 {
		t.Errorf("%d receives, want none", n)
	}
}

// TestParseSignalRefusesWhatIsNoSignal: bodies of another format version,
// another kind or no JSON fail with ErrBadMessage.
func TestParseSignalRefusesWhatIsNoSignal(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "not json", `{"v":2,"kind":"worker","shard":0}`, `{"v":1,"kind":"nope","shard":0}`, `{"v":1,"kind":"worker","shard":-1}`} {
		if _, err := queues.ParseSignal(body); !errors.Is(err, queues.ErrBadMessage) {
			t.Errorf("ParseSignal(%q) = %v, want ErrBadMessage", body, err)
		}
	}
}

// TestTakeKeptTakesWhatNoWaitTook: signals delivered while nobody waits,
// and those waiting for their VisibleAt, are kept until TakeKept, which
// leaves nothing for a later Wait (their timers stopped).
func TestTakeKeptTakesWhatNoWaitTook(t *testing.T) {
	t.Parallel()
	s := receiveElsewhere(t, &recordingAPI{})
	now := queues.Signal{Kind: queues.Orchestrator, Shard: 1, Instance: "a"}
	later := queues.Signal{Kind: queues.Orchestrator, Shard: 2, Instance: "b", VisibleAt: time.Now().Add(time.Hour)}
	s.Deliver(now, later, queues.Signal{Kind: 0, Instance: "invalid"})
	if n := s.Kept(); n != 1 {
		t.Errorf("Kept = %d, want 1 (the one visible now)", n)
	}
	taken := s.TakeKept()
	if len(taken) != 2 {
		t.Fatalf("TakeKept = %+v, want the two valid signals", taken)
	}
	seen := map[string]bool{}
	for _, sig := range taken {
		seen[sig.Instance] = true
		// Signals carry VisibleAt to the millisecond, rounded up.
		if d := sig.VisibleAt.Sub(later.VisibleAt); sig.Instance == "b" && (d < 0 || d >= time.Millisecond) {
			t.Errorf("b taken with VisibleAt %v, want %v", sig.VisibleAt, later.VisibleAt)
		}
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("TakeKept = %+v, want a and b", taken)
	}
	if n := s.Kept(); n != 0 {
		t.Errorf("Kept = %d after TakeKept", n)
	}
	if again := s.TakeKept(); len(again) != 0 {
		t.Errorf("a second TakeKept = %+v, want nothing", again)
	}
}
