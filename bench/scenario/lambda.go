package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/bench/lambdarun"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/lambdahost"
	"github.com/duradyn/duradyn/localstack"
)

// The deployment ServerlessCost runs on: the function and mappings of
// examples/lambda.
const (
	// lambdaTimeout is the function's timeout: examples/lambda's, the
	// most the queues' visibility timeout (30 s) allows.
	lambdaTimeout = 30 * time.Second
	// lambdaBatchSize and lambdaConcurrency are each event source
	// mapping's batch size and maximum concurrency, examples/lambda's.
	lambdaBatchSize   = 10
	lambdaConcurrency = 10
)

// lambdaDeployment is a table and its two queues served as on Lambda: a
// function whose execution environments each build a [lambdahost.Host],
// invoked by an event source mapping on each queue. Its clients (the
// hosts' and the mappings') are metered when the deployment is.
type lambdaDeployment struct {
	*Deployment
	cfg                  aws.Config
	endpoints            localstack.Endpoints
	table                string
	orchQueue, workQueue string
	dynamoDBMeter        []func(*dynamodb.Options)
	sqsMeter             []func(*sqs.Options)
	// admin is an unmetered SQS client: it reads the queues' depths.
	admin *sqs.Client
}

// lambdaSystem names and describes the deployment in results.
var lambdaSystem = System{Name: "duradyn/lambda+dynamodb-local+sqs", DynamoDB: true,
	Notes: "DynamoDB provider with SQS wake-up queues, 16 shards, hosted by lambdahost: a Host per execution environment (default options: 4 orchestration and 4 worker slots, Idle 250 ms, StopBefore 3 s) behind an event source mapping on each queue (batches of 10, no batching window, maximum concurrency 10, ReportBatchItemFailures) and a function timeout of 30 s, as examples/lambda deploys them; the mappings and the function run in this process (bench/lambdarun)"}

// setUpLambda creates a fresh table and queues, metered or not, and a
// client and an observer on them, as [dynamoSetup] does for the
// long-running systems; the function is built on it by runOnLambda.
func setUpLambda(ctx context.Context, env *Env, metered bool) (_ *lambdaDeployment, err error) {
	d := &Deployment{System: lambdaSystem, logger: env.logger(), completions: newCompletions()}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			err = errors.Join(err, d.Close(cctx))
		}
	}()
	cfg, err := d.awsConfig(ctx, env)
	if err != nil {
		return nil, err
	}
	ep := env.Endpoints
	db, sq := ep.DynamoDB(cfg), ep.SQS(cfg)
	ld := &lambdaDeployment{Deployment: d, cfg: cfg, endpoints: ep, table: "bench-lambda-" + randomHex(), admin: sq}
	if ld.orchQueue, ld.workQueue, err = d.createStore(ctx, db, sq, ld.table, true); err != nil {
		return nil, err
	}
	if ld.dynamoDBMeter, ld.sqsMeter, err = d.attachMeter(ctx, db, ld.table, metered); err != nil {
		return nil, err
	}
	if err := d.connect(cfg, db, ld.table, ld.providerOptions); err != nil {
		return nil, err
	}
	return ld, nil
}

// providerOptions points a provider at the deployment's table and queues
// through its (metered) clients.
func (ld *lambdaDeployment) providerOptions(o *dynamo.Options) {
	o.TableName = ld.table
	o.OrchestratorQueueURL = ld.orchQueue
	o.WorkerQueueURL = ld.workQueue
	o.Client = ld.endpoints.DynamoDB(ld.cfg, ld.dynamoDBMeter...)
	o.SQSClient = ld.sqsClient()
}

// sqsClient is a new (metered) SQS client of the deployment.
func (ld *lambdaDeployment) sqsClient() *sqs.Client { return ld.endpoints.SQS(ld.cfg, ld.sqsMeter...) }

// newEnvironment is the function's initialisation, what its main does
// before lambda.Start: the registry and a host, whose provider uses
// clients of its own. Its runtimes report completed instances to the
// deployment, so that waiting for them makes no request.
func (ld *lambdaDeployment) newEnvironment(ctx context.Context) (lambdarun.Environment, error) {
	reg, err := newRegistry()
	if err != nil {
		return lambdarun.Environment{}, err
	}
	sqsClient := ld.sqsClient()
	h, err := lambdahost.New(ctx, reg, func(o *lambdahost.Options) {
		o.Logger = ld.logger
		o.SQSClient = sqsClient
		o.Provider = func(po *dynamo.Options) {
			ld.providerOptions(po)
			po.SQSClient = sqsClient
		}
		o.Runtime = func(ro *durable.Options) { ro.Observer = durable.ObserverFuncs{OnTurnCommitted: ld.turnCommitted} }
	})
	if err != nil {
		return lambdarun.Environment{}, err
	}
	return lambdarun.Environment{Handler: h.Handle, Close: h.Close}, nil
}

// turnCommitted records the completion of an instance whose terminal turn
// committed.
func (ld *lambdaDeployment) turnCommitted(e durable.TurnEvent) {
	if e.Outcome == "completed" || e.Outcome == "failed" {
		ld.completions.completed(e.Instance, time.Now())
	}
}

// startMappings runs an event source mapping on each queue, invoking fn,
// until the returned stop is called; stop waits for the invocations under
// way and retires fn's environments.
func (ld *lambdaDeployment) startMappings(ctx context.Context, fn *lambdarun.Function, logger *slog.Logger) ([]*lambdarun.Mapping, func()) {
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sqsClient := ld.sqsClient()
	var mappings []*lambdarun.Mapping
	var wg sync.WaitGroup
	for _, url := range []string{ld.orchQueue, ld.workQueue} {
		m := &lambdarun.Mapping{Function: fn, SQS: sqsClient, QueueURL: url,
			BatchSize: lambdaBatchSize, Concurrency: lambdaConcurrency, Logger: logger}
		mappings = append(mappings, m)
		wg.Go(func() { m.Run(mctx) })
	}
	var once sync.Once
	return mappings, func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err := fn.Close(); err != nil {
				logger.Warn("scenario: closing the function's environments", "error", err)
			}
		})
	}
}

// settle returns once the queues hold no message (visible, in flight or
// delayed) and no mapping has a batch under way: everything the workload
// led to has run, the invocations that found nothing left to do (a signal
// reported as failed, back after its backoff) included.
func (ld *lambdaDeployment) settle(ctx context.Context, mappings []*lambdarun.Mapping) error {
	idle := func() bool {
		for _, m := range mappings {
			if m.InFlight() > 0 {
				return false
			}
		}
		return true
	}
	for {
		if idle() {
			n, err := ld.queued(ctx)
			if err != nil {
				return err
			}
			if n == 0 && idle() {
				return nil
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the queues to empty: %w", err)
		}
	}
}

// queued is the number of messages on both queues, visible, in flight or
// delayed, as the queues' approximate counts say.
func (ld *lambdaDeployment) queued(ctx context.Context) (int, error) {
	total := 0
	for _, url := range []string{ld.orchQueue, ld.workQueue} {
		out, err := ld.admin.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
		})
		if err != nil {
			return 0, fmt.Errorf("queue depth of %s: %w", url, err)
		}
		for _, v := range out.Attributes {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("queue depth of %s: %q: %w", url, v, err)
			}
			total += n
		}
	}
	return total, nil
}
