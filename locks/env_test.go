package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/queues"
	"github.com/duradyn/duradyn/tables"
)

// testShards keeps List at four queries per call: the emulator serves
// parallel tests' queries far slower than DynamoDB does.
const testShards = 4

// dynamoEnv is one test's table and, optionally, orchestrator queue.
type dynamoEnv struct {
	ep       localstack.Endpoints
	cfg      aws.Config
	db       *dynamodb.Client
	table    string
	queueURL string          // "" without a queue
	local    *queues.Signals // shared by the lockers of a test without a queue
}

// newDynamoEnv creates a fresh table (and queue) for t, deleted when t ends.
func newDynamoEnv(t testing.TB, withQueue bool) *dynamoEnv {
	t.Helper()
	ep := localstack.ForTest(t)
	ctx := t.Context()
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("AWS config: %v", err)
	}
	env := &dynamoEnv{ep: ep, cfg: cfg, db: ep.DynamoDB(cfg), table: localstack.UniqueName(t, "dx")}
	if err := tables.Create(ctx, env.db, env.table); err != nil {
		t.Fatalf("create table %s: %v", env.table, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tables.Delete(ctx, env.db, env.table); err != nil {
			t.Errorf("delete table %s: %v", env.table, err)
		}
	})
	if withQueue {
		env.queueURL = localstack.NewQueue(t, ep, localstack.UniqueName(t, "dxo"))
	}
	return env
}

// signals returns the signals of a new process: its own [queues.Signals]
// on the test's queue or, without a queue, the in-process signals every
// locker of the test shares (lockers in one process).
func (env *dynamoEnv) signals(t testing.TB) *queues.Signals {
	t.Helper()
	if env.queueURL == "" && env.local != nil {
		return env.local
	}
	var api queues.API
	if env.queueURL != "" {
		api = env.ep.SQS(env.cfg)
	}
	s, err := queues.New(api, func(o *queues.Options) {
		o.OrchestratorQueueURL = env.queueURL
		o.Logger = testlog.New(t)
	})
	if err != nil {
		t.Fatalf("queues.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if env.queueURL == "" {
		env.local = s
	}
	return s
}

// locker returns a locker on env's table, closed when t ends; optFns
// adjust its options last.
func (env *dynamoEnv) locker(t testing.TB, optFns ...func(*locks.DynamoOptions)) *locks.Dynamo {
	t.Helper()
	fns := append([]func(*locks.DynamoOptions){func(o *locks.DynamoOptions) {
		o.TableName = env.table
		o.Client = env.ep.DynamoDB(env.cfg)
		locks.WithShards(testShards)(o)
		o.Logger = testlog.New(t)
	}}, optFns...)
	l, err := locks.NewDynamo(env.cfg, fns...)
	if err != nil {
		t.Fatalf("NewDynamo: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// withSignals sets the locker's signals to a new process's.
func (env *dynamoEnv) withSignals(t testing.TB) func(*locks.DynamoOptions) {
	s := env.signals(t)
	return func(o *locks.DynamoOptions) { o.Signals = s }
}

// withClock sets the locker's clock.
func withClock(c locks.Clock) func(*locks.DynamoOptions) {
	return func(o *locks.DynamoOptions) { o.Clock = c }
}
