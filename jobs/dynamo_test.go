package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/jobs/jobstest"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

// dynamoEnv is one test's table on the shared emulator.
type dynamoEnv struct {
	ep    localstack.Endpoints
	cfg   aws.Config
	db    *dynamodb.Client
	table string
}

// newDynamoEnv creates a fresh table for t, deleted when t ends.
func newDynamoEnv(t *testing.T) *dynamoEnv {
	t.Helper()
	ep := localstack.ForTest(t)
	cfg, err := ep.AWSConfig(t.Context())
	if err != nil {
		t.Fatalf("AWS config: %v", err)
	}
	env := &dynamoEnv{ep: ep, cfg: cfg, db: ep.DynamoDB(cfg), table: localstack.UniqueName(t, "dx")}
	if err := tables.Create(t.Context(), env.db, env.table); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tables.Delete(ctx, env.db, env.table); err != nil {
			t.Errorf("delete table %s: %v", env.table, err)
		}
	})
	return env
}

// store returns a store on env's table, adjusted by optFns.
func (env *dynamoEnv) store(t *testing.T, optFns ...func(*jobs.DynamoOptions)) *jobs.DynamoStore {
	t.Helper()
	s, err := jobs.NewDynamoStore(env.cfg, append([]func(*jobs.DynamoOptions){func(o *jobs.DynamoOptions) {
		o.TableName = env.table
		o.Client = env.db
		jobs.WithShards(4)(o)
		o.Logger = testlog.New(t)
	}}, optFns...)...)
	if err != nil {
		t.Fatalf("NewDynamoStore: %v", err)
	}
	return s
}

func TestDynamoStore(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) jobs.Store { return newDynamoEnv(t).store(t) })
}
