package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/provider"
)

// credentialsTimeout bounds the search for credentials.
const credentialsTimeout = 15 * time.Second

// awsConfig loads the SDK configuration: the default chain, with the
// region, static credentials, profile and shared files the environment
// given to run names.
func (a *app) awsConfig() (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if a.g.region != "" {
		opts = append(opts, config.WithRegion(a.g.region))
	}
	if id, secret := a.getenv("AWS_ACCESS_KEY_ID"), a.getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, a.getenv("AWS_SESSION_TOKEN"))))
	}
	if v := a.getenv("AWS_PROFILE"); v != "" {
		opts = append(opts, config.WithSharedConfigProfile(v))
	}
	if v := a.getenv("AWS_CONFIG_FILE"); v != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{v}))
	}
	if v := a.getenv("AWS_SHARED_CREDENTIALS_FILE"); v != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{v}))
	}
	opts = append(opts, config.WithLogger(logging.NewStandardLogger(a.stderr)))
	cfg, err := config.LoadDefaultConfig(a.ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, usageError("no AWS region: set --region or AWS_REGION")
	}
	ctx, cancel := context.WithTimeout(a.ctx, credentialsTimeout)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if a.ctx.Err() != nil {
			// The command's own deadline or an interrupt, not missing
			// credentials: say that.
			return aws.Config{}, a.awsError(fmt.Errorf("AWS credentials: %w", a.ctx.Err()))
		}
		return aws.Config{}, errors.New("no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role")
	}
	return cfg, nil
}

// dynamoClient builds the DynamoDB client.
func (a *app) dynamoClient(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, dynamo.BoundClient(cfg, dynamo.DefaultRequestTimeout), func(o *dynamodb.Options) {
		if a.g.ddbEndpoint != "" {
			o.BaseEndpoint = aws.String(a.g.ddbEndpoint)
			// Emulators such as DynamoDB Local omit the CRC32 header on
			// error responses.
			o.DisableValidateResponseChecksum = true
		}
	})
}

// connect loads the configuration and builds the DynamoDB client.
func (a *app) connect() error {
	if a.g.table == "" {
		return usageError("no table: set --table or DURADYN_TABLE")
	}
	cfg, err := a.awsConfig()
	if err != nil {
		return err
	}
	a.db = a.dynamoClient(cfg)
	return a.newProvider(cfg)
}

// newProvider builds the provider and client with the shard count given or
// stored in the table (16 for a table without a layout record).
func (a *app) newProvider(cfg aws.Config) error {
	shards := a.g.shards
	if a.g.shardsSource == "" {
		layout, found, err := dynamo.ReadLayout(a.ctx, a.db, a.g.table)
		if err != nil {
			return a.tableError(err)
		}
		shards = dynamo.DefaultShards
		if found {
			shards = layout.Shards
		}
	}
	p, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = a.g.table
		o.Shards = shards
		o.OrchestratorQueueURL = a.g.orchQueue
		o.WorkerQueueURL = a.g.workerQueue
		o.ShortPoll = true
		o.Client = a.db
		o.Logger = a.logger()
		if a.g.orchQueue != "" || a.g.workerQueue != "" {
			o.SQSClient = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
				if a.g.sqsEndpoint != "" {
					o.BaseEndpoint = aws.String(a.g.sqsEndpoint)
				}
			})
		}
	})
	if err != nil {
		return usageError("%v", err)
	}
	a.p = p
	a.client = durable.NewClient(p)
	return nil
}

// open connects and checks the table's layout. With write, a table
// without a layout record gets this shard count; otherwise nothing is
// written and only a recorded layout is compared.
func (a *app) open(write bool) error {
	if err := a.connect(); err != nil {
		return err
	}
	if write {
		if err := a.p.CheckLayout(a.ctx); err != nil {
			return a.tableError(err)
		}
		return nil
	}
	layout, found, err := dynamo.ReadLayout(a.ctx, a.db, a.g.table)
	if err != nil {
		return a.tableError(err)
	}
	if found && layout != a.p.Layout() {
		return a.tableError(&dynamo.LayoutMismatchError{Table: a.g.table, Stored: layout, Configured: a.p.Layout()})
	}
	return nil
}

// openForEnqueue opens for a command that enqueues work, warning when no
// queue wakes the runtimes.
func (a *app) openForEnqueue() error {
	if err := a.open(true); err != nil {
		return err
	}
	if a.g.orchQueue == "" {
		fmt.Fprintln(a.stderr, "duradyn: warning: no --orchestrator-queue-url: running dispatchers find this work at their next sweep")
	}
	return nil
}

// tableError words errors about the table itself.
func (a *app) tableError(err error) error {
	var mismatch *dynamo.LayoutMismatchError
	if errors.As(err, &mismatch) {
		if mismatch.Stored.Version != mismatch.Configured.Version {
			return fmt.Errorf("table %s has data layout version %d; this duradyn reads version %d",
				a.g.table, mismatch.Stored.Version, mismatch.Configured.Version)
		}
		return fmt.Errorf("table %s was created with %d shards, but %s is %d: omit it to use the table's",
			a.g.table, mismatch.Stored.Shards, a.g.shardsSource, mismatch.Configured.Shards)
	}
	return a.awsError(err)
}

// awsError words AWS errors that have a clear cause.
func (a *app) awsError(err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("table %s not found (create it with \"duradyn table create\" or the Terraform module)", a.g.table)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ValidationException":
			if strings.Contains(api.ErrorMessage(), "key") {
				return fmt.Errorf("table %s does not have duradyn's schema (\"duradyn table ensure\" lists the differences): %s", a.g.table, api.ErrorMessage())
			}
		case "UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException", "MissingAuthenticationTokenException":
			return fmt.Errorf("AWS rejected the credentials: %s", api.ErrorMessage())
		case "AccessDeniedException":
			return fmt.Errorf("access denied: %s", api.ErrorMessage())
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && a.g.timeout > 0 {
		return fmt.Errorf("timed out after %v", a.g.timeout)
	}
	return err
}

// instanceError words an error about instance id.
func (a *app) instanceError(id string, err error) error {
	if errors.Is(err, provider.ErrNotFound) {
		return notFoundError("instance %s not found", id)
	}
	return a.awsError(err)
}

// requireInstance fails with exit code 3 when instance id does not exist.
// requireLive is requireInstance for a command (cmd) that sends an
// instance something: a finished instance fails it, and nothing is sent.
func (a *app) requireLive(id, cmd string) (*provider.InstanceInfo, error) {
	info, err := a.requireInstance(id)
	if err != nil {
		return nil, err
	}
	if info.Status == provider.StatusCompleted || info.Status == provider.StatusFailed {
		return nil, fmt.Errorf("%s: instance %s is %s; a finished instance takes no more events, messages or cancellations, and was left unchanged", cmd, id, displayStatus(info))
	}
	return info, nil
}

func (a *app) requireInstance(id string) (*provider.InstanceInfo, error) {
	info, err := a.client.InstanceInfo(a.ctx, id)
	if err != nil {
		return nil, a.instanceError(id, err)
	}
	return info, nil
}
