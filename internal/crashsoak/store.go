package crashsoak

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

// NewStore creates a table and two SQS queues on ep, all named after name,
// for a soak outside a test (a test gets them from dynamotest.NewEnv), and
// returns them with the function that deletes them.
func NewStore(ctx context.Context, ep localstack.Endpoints, name string) (Store, func(context.Context) error, error) {
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		return Store{}, nil, fmt.Errorf("crashsoak: AWS config: %w", err)
	}
	db, sq := ep.DynamoDB(cfg), ep.SQS(cfg)
	s := Store{Endpoints: ep, Table: name}
	var queues []string
	drop := func(ctx context.Context) error {
		var errs []error
		for _, q := range queues {
			if _, err := sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
				errs = append(errs, fmt.Errorf("crashsoak: delete queue %s: %w", q, err))
			}
		}
		if err := tables.Delete(ctx, db, name); err != nil {
			errs = append(errs, fmt.Errorf("crashsoak: delete table %s: %w", name, err))
		}
		return errors.Join(errs...)
	}
	if err := tables.Create(ctx, db, name); err != nil {
		return Store{}, nil, fmt.Errorf("crashsoak: %w", err)
	}
	for _, q := range []*string{&s.OrchestratorQueueURL, &s.WorkerQueueURL} {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("%s-%d", name, len(queues)))})
		if err != nil {
			return Store{}, nil, errors.Join(fmt.Errorf("crashsoak: create queue: %w", err), drop(context.WithoutCancel(ctx)))
		}
		*q = aws.ToString(out.QueueUrl)
		queues = append(queues, *q)
	}
	return s, drop, nil
}
