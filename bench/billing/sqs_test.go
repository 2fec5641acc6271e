package billing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/localstack"
)

func TestSQS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, plainSchema())
	ep := localstack.ForTest(t)
	cfg, err := ep.AWSConfig(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := ep.SQS(cfg, f.meter.SQS)
	url := aws.String(localstack.NewQueue(t, ep, localstack.UniqueName(t, "billing")))

	step := func(what string, wantOp string, wantBilled int, fn func() error) {
		t.Helper()
		began := time.Now()
		u := f.measure(t, func() {
			if err := fn(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		})
		if took := u.SQSTime[wantOp]; took <= 0 || took > time.Since(began) {
			t.Errorf("%s: timed %v, want more than 0 and at most the call's %v", what, took, time.Since(began))
		}
		if u.SQS[wantOp] != 1 || u.SQSRequests() != 1 || u.SQSBilled != wantBilled {
			t.Errorf("%s: SQS %v, billed %d; want one %s, billed %d", what, u.SQS, u.SQSBilled, wantOp, wantBilled)
		}
		if u.DynamoDBRequests() != 0 {
			t.Errorf("%s: counted DynamoDB requests %v", what, u.DynamoDB)
		}
	}
	step("send", "SendMessage", 1, func() error {
		_, err := q.SendMessage(f.ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("hello"),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}})
		return err
	})
	step("batch of 10", "SendMessageBatch", 1, func() error {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String("m")})
		}
		_, err := q.SendMessageBatch(f.ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		return err
	})
	step("100 KB message", "SendMessage", 2, func() error {
		_, err := q.SendMessage(f.ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(strings.Repeat("x", 100*1024))})
		return err
	})
	var receipt *string
	step("receive", "ReceiveMessage", 1, func() error {
		out, err := q.ReceiveMessage(f.ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 1})
		if err == nil && len(out.Messages) > 0 {
			receipt = out.Messages[0].ReceiptHandle
		}
		return err
	})
	if receipt == nil {
		t.Fatal("received no message")
	}
	step("delete", "DeleteMessage", 1, func() error {
		_, err := q.DeleteMessage(f.ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: receipt})
		return err
	})
	// The whole run: 5 requests, 6 billed.
	u := f.meter.Usage()
	if u.SQSRequests() != 5 || u.SQSBilled != 6 {
		t.Errorf("total: %d requests, %d billed; want 5 and 6", u.SQSRequests(), u.SQSBilled)
	}
	if got, want := u.Dollars(), 6*billing.SQSRequestPrice; !approxEqual(got, want) {
		t.Errorf("Dollars = %v, want %v", got, want)
	}
}
