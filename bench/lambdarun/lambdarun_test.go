package lambdarun_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/bench/lambdarun"
)

func TestFunctionInitialisesOnDemandAndReusesEnvironments(t *testing.T) {
	inits := 0
	var deadlines []time.Duration
	fn := &lambdarun.Function{
		Timeout: time.Minute,
		Init: func(context.Context) (lambdarun.Environment, error) {
			inits++
			time.Sleep(5 * time.Millisecond)
			return lambdarun.Environment{Handler: func(ctx context.Context, payload json.RawMessage) (any, error) {
				d, _ := ctx.Deadline()
				deadlines = append(deadlines, time.Until(d))
				return string(payload), nil
			}}, nil
		},
	}
	for i := range 3 {
		out, inv, err := fn.Invoke(t.Context(), "q", []byte(`"hi"`))
		if err != nil || string(out) != `"\"hi\""` {
			t.Fatalf("invocation %d: %s, %v", i, out, err)
		}
		if cold := inv.Init > 0; cold != (i == 0) || (i == 0 && inv.Init < 5*time.Millisecond) {
			t.Errorf("invocation %d: init %v; want the first alone to carry it", i, inv.Init)
		}
		if got := inv.Ran(time.Minute); got != inv.Init+inv.Duration {
			t.Errorf("invocation %d ran %v, want init %v + duration %v", i, got, inv.Init, inv.Duration)
		}
	}
	if inits != 1 || fn.Environments() != 1 || fn.Busy() != 0 {
		t.Errorf("%d inits, %d environments, %d busy; want 1, 1, 0", inits, fn.Environments(), fn.Busy())
	}
	for _, d := range deadlines {
		if d <= 59*time.Second || d > time.Minute {
			t.Errorf("deadline %v away, want the timeout", d)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	boom := errors.New("boom")
	fn := &lambdarun.Function{Timeout: 10 * time.Millisecond, Init: func(context.Context) (lambdarun.Environment, error) {
		return lambdarun.Environment{Handler: func(_ context.Context, p json.RawMessage) (any, error) {
			if string(p) == "slow" {
				time.Sleep(20 * time.Millisecond)
				return nil, nil
			}
			return nil, boom
		}}, nil
	}}
	if _, inv, err := fn.Invoke(t.Context(), "q", []byte("x")); !errors.Is(err, lambdarun.ErrFunction) || !errors.Is(err, boom) || inv.Err == nil {
		t.Errorf("a handler's error: %v (recorded %v)", err, inv.Err)
	}
	_, inv, err := fn.Invoke(t.Context(), "q", []byte("slow"))
	if !errors.Is(err, lambdarun.ErrTimedOut) {
		t.Errorf("a handler past its deadline: %v", err)
	}
	if got := inv.Ran(fn.Timeout); got != inv.Init+fn.Timeout {
		t.Errorf("a timed-out invocation ran %v, want its timeout billed", got)
	}
	if _, _, err := (&lambdarun.Function{}).Invoke(t.Context(), "q", nil); err == nil {
		t.Error("a function without Init or Timeout invoked")
	}
}

// fakeQueue hands out one batch, then waits for the receiver's context;
// it records the deletes.
type fakeQueue struct {
	mu      sync.Mutex
	batch   []types.Message
	deleted []string
}

func (q *fakeQueue) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.mu.Lock()
	batch := q.batch
	q.batch = nil
	q.mu.Unlock()
	if batch != nil {
		return &sqs.ReceiveMessageOutput{Messages: batch}, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (q *fakeQueue) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range in.Entries {
		q.deleted = append(q.deleted, aws.ToString(e.ReceiptHandle))
	}
	return &sqs.DeleteMessageBatchOutput{}, nil
}

// runMapping runs a mapping of one poller until the function recorded an
// invocation, and returns the event the handler got and the receipts
// deleted.
func runMapping(t *testing.T, respond func(events.SQSEvent) (any, error)) (events.SQSEvent, []string, lambdarun.Invocation) {
	t.Helper()
	q := &fakeQueue{}
	for _, id := range []string{"a", "b", "c"} {
		q.batch = append(q.batch, types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("r-" + id), Body: aws.String("body " + id),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	var got events.SQSEvent
	fn := &lambdarun.Function{Timeout: time.Second, Init: func(context.Context) (lambdarun.Environment, error) {
		return lambdarun.Environment{Handler: func(_ context.Context, p json.RawMessage) (any, error) {
			if err := json.Unmarshal(p, &got); err != nil {
				return nil, err
			}
			return respond(got)
		}}, nil
	}}
	m := &lambdarun.Mapping{Function: fn, SQS: q, QueueURL: "http://sqs/000000000000/orders", Concurrency: 1}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	for len(fn.Invocations()) == 0 || m.InFlight() > 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	q.mu.Lock()
	defer q.mu.Unlock()
	return got, q.deleted, fn.Invocations()[0]
}

func TestMappingDeletesAllButTheBatchItemFailures(t *testing.T) {
	event, deleted, inv := runMapping(t, func(e events.SQSEvent) (any, error) {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "b"}}}, nil
	})
	if len(event.Records) != 3 {
		t.Fatalf("the handler got %d records, want 3", len(event.Records))
	}
	r := event.Records[0]
	if r.EventSource != "aws:sqs" || r.EventSourceARN != "arn:aws:sqs:us-east-1:000000000000:orders" || r.Body != "body a" ||
		r.ReceiptHandle != "r-a" || r.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("record %+v", r)
	}
	if want := []string{"r-a", "r-c"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	if inv.Records != 3 || inv.Failed != 1 || inv.Source != "orders" || inv.Err != nil {
		t.Errorf("recorded %+v", inv)
	}
}

func TestMappingDeletesNothingOfAFailedBatch(t *testing.T) {
	for name, respond := range map[string]func(events.SQSEvent) (any, error){
		"function error": func(events.SQSEvent) (any, error) { return nil, errors.New("boom") },
		"unknown item": func(events.SQSEvent) (any, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "zzz"}}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, deleted, inv := runMapping(t, respond)
			if len(deleted) != 0 || inv.Err == nil || inv.Failed != 3 {
				t.Errorf("deleted %v; recorded %+v", deleted, inv)
			}
		})
	}
}
