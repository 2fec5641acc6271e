package lambdasim

import (
	"context"
	"encoding/json"
	"errors"
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

// SQSAPI is the part of the SQS client an [EventSourceMapping] calls.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// EventSourceMapping simulates an SQS event source mapping with
// ReportBatchItemFailures: MaximumConcurrency pollers each long-poll the
// queue, gather a batch (BatchSize messages, or what came within
// MaximumBatchingWindow), invoke the function with it as a real
// [events.SQSEvent], and delete the messages the response does not list
// as failed. A failed invocation (an error, a kill, a timeout) or a
// response naming a message that is not in the batch deletes nothing.
// Messages not deleted come back when their visibility timeout ends: the
// queue's, which the mapping leaves alone (the function may shorten it).
type EventSourceMapping struct {
	// Function is invoked with the batches.
	Function *Function
	// SQS is a client of the queue's endpoint.
	SQS SQSAPI
	// QueueURL is the queue; QueueARN the eventSourceARN of its records
	// (default arn:aws:sqs:us-east-1:000000000000:<name>).
	QueueURL, QueueARN string
	// BatchSize bounds a batch; default 10.
	BatchSize int
	// MaximumBatchingWindow is how long a poller gathers a batch larger
	// than one receive returns; default 0 (one receive).
	MaximumBatchingWindow time.Duration
	// MaximumConcurrency bounds the invocations of this mapping at once
	// (its pollers); default 2, the least AWS accepts.
	MaximumConcurrency int
	// Logger receives a line per failed receive or delete. Default:
	// discarded.
	Logger *slog.Logger

	stats esmCounters
}

type esmCounters struct {
	batches, messages, deleted, itemFailures, failedBatches atomic.Int64
}

// ESMStats counts what a mapping has done.
type ESMStats struct {
	// Batches counts invocations; Messages, the messages they carried.
	Batches, Messages int64
	// Deleted counts messages deleted after an invocation; ItemFailures,
	// those a response listed as failed; FailedBatches, invocations that
	// deleted nothing (an error, a kill, a timeout, an invalid response).
	Deleted, ItemFailures, FailedBatches int64
}

// Stats returns the mapping's counters.
func (m *EventSourceMapping) Stats() ESMStats {
	c := &m.stats
	return ESMStats{Batches: c.batches.Load(), Messages: c.messages.Load(), Deleted: c.deleted.Load(),
		ItemFailures: c.itemFailures.Load(), FailedBatches: c.failedBatches.Load()}
}

// Run polls until ctx ends, then waits for the invocations under way. It
// fails at once, as Lambda refuses to create the mapping, when the queue's
// visibility timeout is shorter than the function's timeout.
func (m *EventSourceMapping) Run(ctx context.Context) error {
	out, err := m.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(m.QueueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return fmt.Errorf("lambdasim: queue attributes: %w", err)
	}
	vt, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return fmt.Errorf("lambdasim: queue visibility timeout: %w", err)
	}
	if time.Duration(vt)*time.Second < m.Function.Timeout {
		return fmt.Errorf("lambdasim: the queue's visibility timeout (%d s) is shorter than the function's timeout (%v)", vt, m.Function.Timeout)
	}
	if m.QueueARN == "" {
		m.QueueARN = "arn:aws:sqs:us-east-1:000000000000:" + queueName(m.QueueURL)
	}
	var wg sync.WaitGroup
	for range max(m.MaximumConcurrency, 2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.poll(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// poll is one poller: batch, invoke, delete, until ctx ends.
func (m *EventSourceMapping) poll(ctx context.Context) {
	for ctx.Err() == nil {
		msgs := m.gather(ctx)
		if len(msgs) == 0 {
			continue
		}
		m.invoke(ctx, msgs)
	}
}

// gather receives one batch: what one long poll returns, then more within
// the batching window, up to BatchSize.
func (m *EventSourceMapping) gather(ctx context.Context) []types.Message {
	size := m.BatchSize
	if size <= 0 {
		size = 10
	}
	var msgs []types.Message
	windowEnd := time.Time{}
	for len(msgs) < size {
		wait := int32(20)
		if len(msgs) > 0 {
			if windowEnd.IsZero() {
				windowEnd = time.Now().Add(m.MaximumBatchingWindow)
			}
			left := time.Until(windowEnd)
			if left <= 0 {
				break
			}
			wait = int32(min(left/time.Second, 20))
		}
		out, err := m.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(m.QueueURL),
			MaxNumberOfMessages:         int32(min(size-len(msgs), 10)),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() == nil {
				m.log("lambdasim: receive failed", "error", err)
				sleepCtx(ctx, time.Second)
			}
			break
		}
		msgs = append(msgs, out.Messages...)
		if m.MaximumBatchingWindow <= 0 {
			break
		}
	}
	return msgs
}

// invoke runs the function on msgs and deletes what it handled.
func (m *EventSourceMapping) invoke(ctx context.Context, msgs []types.Message) {
	m.stats.batches.Add(1)
	m.stats.messages.Add(int64(len(msgs)))
	event := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, msg := range msgs {
		event.Records[i] = m.record(msg)
	}
	payload, err := json.Marshal(event)
	if err != nil {
		m.log("lambdasim: encode batch", "error", err)
		return
	}
	out, err := m.Function.Invoke(context.WithoutCancel(ctx), payload)
	if err != nil {
		m.stats.failedBatches.Add(1)
		return
	}
	failed, err := failedItems(out, event)
	if err != nil {
		m.stats.failedBatches.Add(1)
		m.log("lambdasim: response taken as a failure of the whole batch", "error", err)
		return
	}
	m.stats.itemFailures.Add(int64(len(failed)))
	var done []types.Message
	for _, msg := range msgs {
		if !failed[aws.ToString(msg.MessageId)] {
			done = append(done, msg)
		}
	}
	m.delete(context.WithoutCancel(ctx), done)
}

// failedItems reads a response's batch item failures. A response that is
// not an SQSEventResponse, or that names a message not in the batch or no
// message at all, fails the whole batch, as Lambda treats it.
func failedItems(out []byte, event events.SQSEvent) (map[string]bool, error) {
	var resp events.SQSEventResponse
	if len(out) > 0 && string(out) != "null" {
		if err := json.Unmarshal(out, &resp); err != nil {
			return nil, fmt.Errorf("response %.200q: %w", out, err)
		}
	}
	inBatch := make(map[string]bool, len(event.Records))
	for _, r := range event.Records {
		inBatch[r.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("%w: item identifier %q is not in the batch", errBadResponse, f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

var errBadResponse = errors.New("invalid batch item failures")

// record is msg as Lambda hands it to a function.
func (m *EventSourceMapping) record(msg types.Message) events.SQSMessage {
	attrs := map[string]string{}
	for k, v := range msg.Attributes {
		attrs[k] = v
	}
	return events.SQSMessage{
		MessageId:      aws.ToString(msg.MessageId),
		ReceiptHandle:  aws.ToString(msg.ReceiptHandle),
		Body:           aws.ToString(msg.Body),
		Md5OfBody:      aws.ToString(msg.MD5OfBody),
		Attributes:     attrs,
		EventSourceARN: m.QueueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "us-east-1",
	}
}

// delete deletes msgs, ten to a request.
func (m *EventSourceMapping) delete(ctx context.Context, msgs []types.Message) {
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, msg := range msgs[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle}
		}
		out, err := m.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.QueueURL), Entries: entries})
		switch {
		case err != nil:
			m.log("lambdasim: delete failed", "error", err)
		default:
			m.stats.deleted.Add(int64(len(out.Successful)))
		}
		msgs = msgs[n:]
	}
}

func (m *EventSourceMapping) log(msg string, args ...any) {
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

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
