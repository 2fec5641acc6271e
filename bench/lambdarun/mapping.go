package lambdarun

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is the part of the SQS client a [Mapping] calls.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// Defaults of [Mapping].
const (
	DefaultBatchSize   = 10
	DefaultConcurrency = 2
	// longPoll is each receive's wait, the most SQS allows.
	longPoll = 20
)

// Mapping is an SQS event source mapping with ReportBatchItemFailures and
// no batching window: Concurrency pollers each long-poll the queue (20 s),
// invoke the function with what one receive returned (at most BatchSize
// messages, with all their system attributes), and delete, ten to a
// request, the messages the response does not list as failed. A failed
// invocation, or a response that names a message not in the batch,
// deletes nothing: those messages come back after their visibility
// timeout, as with Lambda. Its requests go through SQS, so that a meter
// on that client bills them as SQS bills the mappings' requests.
type Mapping struct {
	// Function is invoked with the batches.
	Function *Function
	// SQS is a client of the queue's endpoint.
	SQS SQSAPI
	// QueueURL is the queue; QueueARN the eventSourceARN of its records
	// (default arn:aws:sqs:us-east-1:000000000000:<name>).
	QueueURL, QueueARN string
	// BatchSize bounds a batch, up to 10 (one receive); default 10.
	BatchSize int
	// Concurrency is the number of pollers, and so of the mapping's
	// invocations at once (its maximum concurrency); default 2.
	Concurrency int
	// Logger receives a line per failed receive, delete or invocation.
	// Default: discarded.
	Logger *slog.Logger

	inFlight atomic.Int64
}

// Run polls until ctx ends, then waits for the invocations under way to
// end and their messages to be deleted.
func (m *Mapping) Run(ctx context.Context) {
	if m.QueueARN == "" {
		m.QueueARN = "arn:aws:sqs:us-east-1:000000000000:" + queueName(m.QueueURL)
	}
	var wg sync.WaitGroup
	for range cmpOr(m.Concurrency, DefaultConcurrency) {
		wg.Go(func() {
			for ctx.Err() == nil {
				m.pollOnce(ctx)
			}
		})
	}
	wg.Wait()
}

// InFlight returns the number of batches received and not yet settled
// (invoked, and their messages deleted). A batch a receive is returning is
// not counted yet: its messages are in flight on the queue (not visible).
func (m *Mapping) InFlight() int { return int(m.inFlight.Load()) }

// pollOnce receives one batch and, if it is not empty, invokes the
// function with it and deletes what succeeded.
func (m *Mapping) pollOnce(ctx context.Context) {
	out, err := m.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(m.QueueURL),
		MaxNumberOfMessages:         int32(min(cmpOr(m.BatchSize, DefaultBatchSize), 10)),
		WaitTimeSeconds:             longPoll,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	switch {
	case err != nil && ctx.Err() == nil:
		m.log("lambdarun: receive failed", "queue", m.QueueURL, "error", err)
		sleep(ctx, time.Second)
		return
	case err != nil || len(out.Messages) == 0:
		return
	}
	m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	// The batch is served to its end whatever ctx does, as Lambda's
	// invocations are.
	m.invoke(context.WithoutCancel(ctx), out.Messages)
}

// invoke runs the function on msgs, records the invocation and deletes
// the messages it did not report as failed.
func (m *Mapping) invoke(ctx context.Context, msgs []types.Message) {
	event := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, msg := range msgs {
		event.Records[i] = m.record(msg)
	}
	payload, err := json.Marshal(event)
	if err != nil {
		m.log("lambdarun: encode batch", "error", err)
		return
	}
	out, inv, err := m.Function.Invoke(ctx, queueName(m.QueueURL), payload)
	inv.Records, inv.Failed = len(msgs), len(msgs)
	var failed map[string]bool
	if err == nil {
		failed, err = failedItems(out, event)
		if err != nil {
			inv.Err = err
		}
	}
	if err != nil {
		m.Function.Record(inv)
		m.log("lambdarun: the batch failed as a whole", "queue", m.QueueURL, "error", err)
		return
	}
	inv.Failed = len(failed)
	m.Function.Record(inv)
	var done []types.Message
	for _, msg := range msgs {
		if !failed[aws.ToString(msg.MessageId)] {
			done = append(done, msg)
		}
	}
	m.delete(ctx, done)
}

// record is msg as Lambda hands it to a function.
func (m *Mapping) record(msg types.Message) events.SQSMessage {
	return events.SQSMessage{
		MessageId:      aws.ToString(msg.MessageId),
		ReceiptHandle:  aws.ToString(msg.ReceiptHandle),
		Body:           aws.ToString(msg.Body),
		Md5OfBody:      aws.ToString(msg.MD5OfBody),
		Attributes:     msg.Attributes,
		EventSourceARN: m.QueueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "us-east-1",
	}
}

// failedItems reads a response's batch item failures. A response that is
// not an SQSEventResponse, or that names a message not in the batch, fails
// the whole batch, as Lambda treats it.
func failedItems(out []byte, event events.SQSEvent) (map[string]bool, error) {
	var resp events.SQSEventResponse
	if len(out) > 0 && string(out) != "null" {
		if err := json.Unmarshal(out, &resp); err != nil {
			return nil, fmt.Errorf("lambdarun: response %.200q: %w", out, err)
		}
	}
	inBatch := make(map[string]bool, len(event.Records))
	for _, r := range event.Records {
		inBatch[r.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("lambdarun: batch item failure %q names no message of the batch", f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

// delete deletes msgs, ten to a request.
func (m *Mapping) delete(ctx context.Context, msgs []types.Message) {
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, msg := range msgs[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle}
		}
		out, err := m.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.QueueURL), Entries: entries})
		switch {
		case err != nil:
			m.log("lambdarun: delete failed; the messages come back", "queue", m.QueueURL, "error", err)
		case len(out.Failed) > 0:
			m.log("lambdarun: some deletes failed; those messages come back", "queue", m.QueueURL, "failed", len(out.Failed))
		}
		msgs = msgs[n:]
	}
}

func (m *Mapping) log(msg string, args ...any) {
	if m.Logger != nil {
		m.Logger.Warn(msg, args...)
	}
}

// queueName is the last path element of a queue URL.
func queueName(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
