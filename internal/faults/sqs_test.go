package faults_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
)

// sqsFixture is one test's queue, injector and wrapped client.
type sqsFixture struct {
	queue string
	in    *faults.Injector
	sqs   faults.SQS
}

func newSQSFixture(t *testing.T) *sqsFixture {
	t.Helper()
	env := dynamotest.NewEnv(t, true)
	in := faults.New(1)
	return &sqsFixture{queue: env.OrchestratorQueueURL, in: in, sqs: in.SQS(env.Endpoints.SQS(env.AWS))}
}

func (f *sqsFixture) send(t *testing.T, bodies ...string) error {
	t.Helper()
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(f.queue)}
	for i, b := range bodies {
		in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(string(rune('a' + i))), MessageBody: aws.String(b)})
	}
	_, err := f.sqs.SendMessageBatch(t.Context(), in)
	return err
}

// receive makes one receive (long-polling for up to wait seconds) and
// returns the messages.
func (f *sqsFixture) receive(t *testing.T, wait int32) []sqstypes.Message {
	t.Helper()
	out, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(f.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 60,
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

func (f *sqsFixture) delete(t *testing.T, msgs []sqstypes.Message) {
	t.Helper()
	in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(f.queue)}
	for i, m := range msgs {
		in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(string(rune('a' + i))), ReceiptHandle: m.ReceiptHandle})
	}
	if _, err := f.sqs.DeleteMessageBatch(t.Context(), in); err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
}

// receiveBody receives until a message with body arrives, failing after a
// few long polls.
func (f *sqsFixture) receiveBody(t *testing.T, body string) []sqstypes.Message {
	t.Helper()
	for range 10 {
		if msgs := f.receive(t, 2); len(msgs) > 0 {
			if len(msgs) != 1 || aws.ToString(msgs[0].Body) != body {
				t.Fatalf("received %d messages, want one with body %q", len(msgs), body)
			}
			return msgs
		}
	}
	t.Fatalf("message %q never arrived", body)
	return nil
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	f := newSQSFixture(t)
	f.in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Fault: faults.Duplicate()})
	if err := f.send(t, "m1"); err != nil {
		t.Fatal(err)
	}
	first := f.receiveBody(t, "m1")
	f.delete(t, first)

	again := f.receive(t, 0)
	if len(again) != 1 || aws.ToString(again[0].Body) != "m1" || aws.ToString(again[0].MessageId) != aws.ToString(first[0].MessageId) {
		t.Fatalf("second delivery %v, want m1 again", again)
	}
	f.delete(t, again) // deleting a duplicate does no harm
	if msgs := f.receive(t, 0); len(msgs) != 0 {
		t.Errorf("a third delivery: %v", msgs)
	}
	if n := f.in.Stats().Ops[faults.OpReceiveMessage].Faults[faults.KindDuplicate]; n != 1 {
		t.Errorf("duplicate deliveries counted %d, want 1", n)
	}
}

func TestSQSFaults(t *testing.T) {
	t.Parallel()
	f := newSQSFixture(t)
	t.Run("RequestThrottled", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpSendMessageBatch}, Rate: 1, Count: 1, Fault: faults.Throttle("")})
		defer remove()
		err := f.send(t, "throttled")
		if code := wantOpError(t, err, "SQS", "SendMessageBatch"); code != "RequestThrottled" {
			t.Errorf("code %q", code)
		}
		var rt *sqstypes.RequestThrottled
		if !errors.As(err, &rt) {
			t.Errorf("error %v is not a *sqstypes.RequestThrottled", err)
		}
		wantExhausted(t, err, http.StatusBadRequest)
	})
	t.Run("ThrottlingException", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 1, Count: 1, Fault: faults.Throttle("ThrottlingException")})
		defer remove()
		_, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.queue)})
		if code := wantOpError(t, err, "SQS", "ReceiveMessage"); code != "ThrottlingException" {
			t.Errorf("code %q", code)
		}
		var ge *smithy.GenericAPIError
		if !errors.As(err, &ge) {
			t.Errorf("error %v is not a *smithy.GenericAPIError", err)
		}
	})
	t.Run("ServerError", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpDeleteMessageBatch}, Rate: 1, Count: 1, Fault: faults.ServerError("")})
		defer remove()
		_, err := f.sqs.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(f.queue)})
		if code := wantOpError(t, err, "SQS", "DeleteMessageBatch"); code != "InternalServerError" {
			t.Errorf("code %q", code)
		}
		wantExhausted(t, err, http.StatusInternalServerError)
	})
	t.Run("LostResponse", func(t *testing.T) {
		remove := f.in.Add(faults.Rule{Ops: []string{faults.OpSendMessageBatch}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
		defer remove()
		err := f.send(t, "lost")
		if code := wantOpError(t, err, "SQS", "SendMessageBatch"); code != "" {
			t.Errorf("code %q", code)
		}
		wantExhausted(t, err, 0)
		f.delete(t, f.receiveBody(t, "lost")) // it was sent all the same
	})
	if err := f.send(t, "after"); err != nil {
		t.Errorf("send once the rules are spent: %v", err)
	}
}
