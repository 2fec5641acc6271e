package faults

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS returns a client that sends requests through api, applying the
// injector's rules above the SDK's retryer, and delivering again the
// messages a [Duplicate] fault picked. Wrap each process's client
// separately with one shared injector.
func (in *Injector) SQS(api SQS) SQS {
	return &sqsClient{in: in, api: api}
}

// sqsClient is the wrapper [Injector.SQS] returns.
type sqsClient struct {
	in  *Injector
	api SQS
}

func (s *sqsClient) SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return run(ctx, s.in, call[*sqs.SendMessageBatchOutput]{
		op: OpSendMessageBatch, input: params,
		send: func(ctx context.Context, _ bool, _ Fault) (*sqs.SendMessageBatchOutput, error) {
			return s.api.SendMessageBatch(ctx, params, optFns...)
		},
	})
}

func (s *sqsClient) DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return run(ctx, s.in, call[*sqs.DeleteMessageBatchOutput]{
		op: OpDeleteMessageBatch, input: params,
		send: func(ctx context.Context, _ bool, _ Fault) (*sqs.DeleteMessageBatchOutput, error) {
			return s.api.DeleteMessageBatch(ctx, params, optFns...)
		},
	})
}

func (s *sqsClient) ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return run(ctx, s.in, call[*sqs.ReceiveMessageOutput]{
		op: OpReceiveMessage, input: params,
		send: func(ctx context.Context, active bool, f Fault) (*sqs.ReceiveMessageOutput, error) {
			queue := aws.ToString(params.QueueUrl)
			if active {
				if dups := s.in.takeDuplicates(queue, int(params.MaxNumberOfMessages)); len(dups) > 0 {
					return &sqs.ReceiveMessageOutput{Messages: dups}, nil
				}
			}
			out, err := s.api.ReceiveMessage(ctx, params, optFns...)
			if _, dup := f.(duplicate); dup && err == nil {
				s.in.addDuplicates(queue, out.Messages)
			}
			return out, err
		},
	})
}

// addDuplicates remembers msgs, received from queue, for delivery again.
func (in *Injector) addDuplicates(queue string, msgs []sqstypes.Message) {
	if len(msgs) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.duplicates == nil {
		in.duplicates = map[string][]sqstypes.Message{}
	}
	in.duplicates[queue] = append(in.duplicates[queue], msgs...)
}

// takeDuplicates removes and returns up to limit (at least one) messages
// remembered for queue, counting them.
func (in *Injector) takeDuplicates(queue string, limit int) []sqstypes.Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	pending := in.duplicates[queue]
	if len(pending) == 0 {
		return nil
	}
	n := min(len(pending), max(limit, 1))
	out := pending[:n:n]
	if n == len(pending) {
		delete(in.duplicates, queue)
	} else {
		in.duplicates[queue] = pending[n:]
	}
	in.stats.fault(OpReceiveMessage, KindDuplicate, int64(n))
	return out
}
