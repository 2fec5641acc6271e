package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Env is the configuration [NewFromEnv] and the duradyn command read
// from the environment.
type Env struct {
	Table string // DURADYN_TABLE
	// OrchestratorQueueURL and WorkerQueueURL are
	// DURADYN_ORCHESTRATOR_QUEUE_URL and DURADYN_WORKER_QUEUE_URL.
	OrchestratorQueueURL, WorkerQueueURL string
	// Shards is DURADYN_SHARDS; 0 if unset (the table's count applies).
	Shards int
	// DynamoDBEndpoint is DURADYN_DYNAMODB_ENDPOINT, else
	// AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL; "" for AWS's.
	DynamoDBEndpoint string
	// SQSEndpoint is DURADYN_SQS_ENDPOINT, else AWS_ENDPOINT_URL_SQS, else
	// AWS_ENDPOINT_URL; "" for AWS's.
	SQSEndpoint string
}

// ReadEnv reads the environment through getenv. A DURADYN_SHARDS outside
// 1..[MaxShards] is an error wrapping [ErrInvalidOptions].
func ReadEnv(getenv func(string) string) (Env, error) {
	e := Env{
		Table:                getenv("DURADYN_TABLE"),
		OrchestratorQueueURL: getenv("DURADYN_ORCHESTRATOR_QUEUE_URL"),
		WorkerQueueURL:       getenv("DURADYN_WORKER_QUEUE_URL"),
		DynamoDBEndpoint:     firstSet(getenv, "DURADYN_DYNAMODB_ENDPOINT", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"),
		SQSEndpoint:          firstSet(getenv, "DURADYN_SQS_ENDPOINT", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL"),
	}
	if v := getenv("DURADYN_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return e, fmt.Errorf("%w: DURADYN_SHARDS=%q is not a number", ErrInvalidOptions, v)
		}
		if n < 1 || n > MaxShards {
			return e, fmt.Errorf("%w: DURADYN_SHARDS %d is outside 1..%d", ErrInvalidOptions, n, MaxShards)
		}
		e.Shards = n
	}
	return e, nil
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// NewFromEnv returns a provider configured as the duradyn command is: [Env]
// and the SDK's default region and credentials chain. Without
// DURADYN_SHARDS it uses the table's recorded shard count (one GetItem),
// else [DefaultShards]. What optFns set wins over the environment.
func NewFromEnv(ctx context.Context, optFns ...func(*Options)) (*Provider, error) {
	e, err := ReadEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamo: AWS configuration: %w", err)
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Client == nil {
		o.Client = dynamodb.NewFromConfig(cfg, BoundClient(cfg, cmp.Or(o.RequestTimeout, DefaultRequestTimeout)), e.dynamoEndpoint)
	}
	if o.SQSClient == nil && (e.OrchestratorQueueURL != "" || e.WorkerQueueURL != "") {
		o.SQSClient = sqs.NewFromConfig(cfg, e.sqsEndpoint)
	}
	shards := e.Shards
	if shards == 0 && o.Shards == 0 && e.Table != "" {
		if layout, found, err := ReadLayout(ctx, o.Client, e.Table); err != nil {
			return nil, fmt.Errorf("dynamo: read the layout of table %s: %w", e.Table, err)
		} else if found {
			shards = layout.Shards
		}
	}
	return New(cfg, func(opts *Options) {
		*opts = o
		opts.TableName = firstNonEmpty(o.TableName, e.Table)
		opts.OrchestratorQueueURL = firstNonEmpty(o.OrchestratorQueueURL, e.OrchestratorQueueURL)
		opts.WorkerQueueURL = firstNonEmpty(o.WorkerQueueURL, e.WorkerQueueURL)
		if opts.Shards == 0 {
			opts.Shards = shards
		}
	})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dynamoEndpoint points a DynamoDB client at e's endpoint, if any.
func (e Env) dynamoEndpoint(o *dynamodb.Options) {
	if e.DynamoDBEndpoint != "" {
		o.BaseEndpoint = aws.String(e.DynamoDBEndpoint)
		// Emulators such as DynamoDB Local omit the CRC32 on errors.
		o.DisableValidateResponseChecksum = true
	}
}

// sqsEndpoint points an SQS client at e's endpoint, if any.
func (e Env) sqsEndpoint(o *sqs.Options) {
	if e.SQSEndpoint != "" {
		o.BaseEndpoint = aws.String(e.SQSEndpoint)
	}
}
