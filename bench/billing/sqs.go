package billing

import (
	"context"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// sqsChunkBytes is the payload one billed SQS request carries: "each 64 KB
// chunk of a payload is billed as 1 request (for example, an API action with
// a 256 KB payload is billed as 4 requests)"
// (https://aws.amazon.com/sqs/pricing/).
const sqsChunkBytes = 64 * 1024

// SQS installs the SQS counting middleware on an SQS client's options:
//
//	q := sqs.NewFromConfig(cfg, meter.SQS)
//
// Every API action counts as one request by operation name, failed ones
// too; the billed requests add one per started 64 KB chunk of its payload,
// and at least one: a SendMessageBatch of ten small messages is one billed
// request, a 100 KB SendMessage two. The payload of SendMessage and
// SendMessageBatch is what they send, that of ReceiveMessage what it
// receives: message bodies and message attributes (names, data types and
// values), all messages of a batch together. Other actions are billed as
// one request each.
func (m *Meter) SQS(o *sqs.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BillingMeterSQS", m.handleSQS), middleware.After)
	})
}

func (m *Meter) handleSQS(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	sent := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	took := time.Since(sent)
	payload := 0
	switch p := in.Parameters.(type) {
	case *sqs.SendMessageInput:
		payload = len(deref(p.MessageBody)) + attributesSize(p.MessageAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range p.Entries {
			payload += len(deref(e.MessageBody)) + attributesSize(e.MessageAttributes)
		}
	case *sqs.ReceiveMessageInput:
		if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && err == nil {
			for _, msg := range r.Messages {
				payload += len(deref(msg.Body)) + attributesSize(msg.MessageAttributes)
			}
		}
	}
	billed := max(1, ceilDiv(payload, sqsChunkBytes))
	op := awsmiddleware.GetOperationName(ctx)
	m.count(func(u *Usage) {
		addCount(&u.SQS, op)
		addTime(&u.SQSTime, op, took)
		u.SQSBilled += billed
	})
	return out, md, err
}

// attributesSize is the size of SQS message attributes: each name, data type
// and value
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html).
func attributesSize(attrs map[string]types.MessageAttributeValue) int {
	size := 0
	for name, v := range attrs {
		size += len(name) + len(deref(v.DataType)) + len(deref(v.StringValue)) + len(v.BinaryValue)
		for _, s := range v.StringListValues {
			size += len(s)
		}
		for _, b := range v.BinaryListValues {
			size += len(b)
		}
	}
	return size
}
