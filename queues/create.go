package queues

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// CreateAPI is the part of the SQS client [Create] calls.
type CreateAPI interface {
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
}

// The attributes [Create] gives the wake-up queues, the Terraform module's
// defaults:
//   - MessageRetentionPeriod 300 s: signals are hints (the work is in
//     DynamoDB), so a backlog built while no process ran need not be
//     drained for long;
//   - VisibilityTimeout 5 s: the receiver asks for 2 s on every receive and
//     deletes what it takes; this matters only to other consumers;
//   - ReceiveMessageWaitTimeSeconds 0: the Go SDK leaves WaitTimeSeconds=0
//     out of a request, so another value would turn the receiver's short
//     polls into long ones; it sets its own long-poll time on each receive;
//   - DelaySeconds 0, and SQS-managed server-side encryption.
const (
	QueueRetention         = 300
	QueueVisibilityTimeout = 5
)

// QueueURLs are the URLs of the two wake-up queues.
type QueueURLs struct {
	Orchestrator, Worker string
}

// Create creates the two standard wake-up queues of a table, named as the
// Terraform module names them by default: prefix+"-orchestrator" and
// prefix+"-worker", with the attributes above, and returns their URLs.
// Creating a queue that exists with the same attributes returns its URL
// (SQS's CreateQueue is idempotent); one with other attributes fails with
// SQS's QueueNameExists error.
func Create(ctx context.Context, api CreateAPI, prefix string) (QueueURLs, error) {
	var urls QueueURLs
	for _, q := range []struct {
		name string
		url  *string
	}{{prefix + "-orchestrator", &urls.Orchestrator}, {prefix + "-worker", &urls.Worker}} {
		out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
			QueueName: aws.String(q.name),
			Attributes: map[string]string{
				string(sqstypes.QueueAttributeNameMessageRetentionPeriod):        strconv.Itoa(QueueRetention),
				string(sqstypes.QueueAttributeNameVisibilityTimeout):             strconv.Itoa(QueueVisibilityTimeout),
				string(sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds): "0",
				string(sqstypes.QueueAttributeNameDelaySeconds):                  "0",
				string(sqstypes.QueueAttributeNameSqsManagedSseEnabled):          "true",
			},
		})
		if err != nil {
			return urls, fmt.Errorf("queues: create %s: %w", q.name, err)
		}
		*q.url = aws.ToString(out.QueueUrl)
	}
	return urls, nil
}
