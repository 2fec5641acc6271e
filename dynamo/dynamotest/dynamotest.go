// Package dynamotest runs the dynamo provider in tests against a fresh
// table (and queues) per test on package localstack's emulator, gives the
// conformance suite its hooks, and meters requests and consumed capacity.
package dynamotest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/providertest"
	"github.com/duradyn/duradyn/tables"
)

// Config describes the provider a test gets.
type Config struct {
	// Queues, for [New], gives the table fresh SQS queues; else signals
	// stay local. Every provider of an [Env] with queues uses them
	// (NewProvider); [Env.NewQuietWriter] makes one that sends none.
	Queues bool
	// ShortPoll sets [dynamo.Options.ShortPoll].
	ShortPoll bool
	// Shards sets [dynamo.Options.Shards]. Default 4: a shared emulator
	// serves sweeps of many shards slowly; four still exercise the merge.
	Shards int
	// Meter, when set, counts the provider's DynamoDB requests.
	Meter *Meter
	// Options adjusts the provider's options last (clients, clock, shards).
	Options func(*dynamo.Options)
}

// Env is one test's table, queues and clients.
type Env struct {
	Endpoints localstack.Endpoints // the emulator's
	AWS       aws.Config           // the SDK configuration for Endpoints
	DB        *dynamodb.Client     // a client without the provider's meter
	Table     string               // the test's table
	// OrchestratorQueueURL and WorkerQueueURL are "" without Config.Queues.
	OrchestratorQueueURL, WorkerQueueURL string
}

// NewEnv creates a fresh table (and queues) for t, deleted when t ends.
func NewEnv(t testing.TB, queues bool) *Env {
	t.Helper()
	ep := localstack.ForTest(t)
	ctx := t.Context()
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("dynamotest: AWS config: %v", err)
	}
	env := &Env{Endpoints: ep, AWS: cfg, DB: ep.DynamoDB(cfg), Table: localstack.UniqueName(t, "dx")}
	if err := tables.Create(ctx, env.DB, env.Table); err != nil {
		t.Fatalf("dynamotest: create table %s: %v", env.Table, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tables.Delete(ctx, env.DB, env.Table); err != nil {
			t.Errorf("dynamotest: delete table %s: %v", env.Table, err)
		}
	})
	if queues {
		env.OrchestratorQueueURL = localstack.NewQueue(t, ep, localstack.UniqueName(t, "dxo"))
		env.WorkerQueueURL = localstack.NewQueue(t, ep, localstack.UniqueName(t, "dxw"))
	}
	return env
}

// NewProvider returns a provider on env, closed when t ends.
func (env *Env) NewProvider(t testing.TB, c Config) *dynamo.Provider {
	t.Helper()
	p, err := dynamo.New(env.AWS, func(o *dynamo.Options) {
		o.TableName = env.Table
		o.OrchestratorQueueURL = env.OrchestratorQueueURL
		o.WorkerQueueURL = env.WorkerQueueURL
		o.ShortPoll = c.ShortPoll
		o.Shards = cmp.Or(c.Shards, 4)
		o.Logger = testlog.New(t)
		o.Client = env.Endpoints.DynamoDB(env.AWS, c.Meter.attach)
		if env.OrchestratorQueueURL != "" {
			o.SQSClient = env.Endpoints.SQS(env.AWS)
		}
		if c.Options != nil {
			c.Options(o)
		}
	})
	if err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	registry.Store(p, env)
	return p
}

// NewQuietWriter returns a provider on env that sends no signals (closed
// when t ends): its work is found only by sweeps, as after a lost signal.
func (env *Env) NewQuietWriter(t testing.TB, c Config) *dynamo.Provider {
	t.Helper()
	quiet := *env
	quiet.OrchestratorQueueURL, quiet.WorkerQueueURL = "", ""
	return quiet.NewProvider(t, c)
}

// New returns a provider on a fresh table (and queues), gone when t ends.
func New(t testing.TB, c Config) (*dynamo.Provider, *Env) {
	t.Helper()
	env := NewEnv(t, c.Queues)
	return env.NewProvider(t, c), env
}

// registry maps providers made here to their Env, for the suite's hooks.
var registry sync.Map

func envOf(t *testing.T, p provider.Provider) *Env {
	t.Helper()
	env, ok := registry.Load(p)
	if !ok {
		t.Fatalf("dynamotest: provider %T was not made by dynamotest", p)
	}
	return env.(*Env)
}

// Factory is the conformance suite's factory for providers configured by c.
func Factory(c Config) providertest.Factory {
	return providertest.Factory{
		NewProvider: func(t *testing.T) provider.Provider {
			p, _ := New(t, c)
			return p
		},
		LockTimeout: 3 * time.Second,
		// An empty short-poll fetch takes 10-450ms on a shared emulator; the
		// suite takes the best of a few against a 500ms poll timeout.
		ShortPollThreshold: 250 * time.Millisecond,
		LongPolling:        !c.ShortPoll,
		CorruptHistory:     CorruptHistory,
		MaxAttemptCount:    MaxAttemptCount,
		// Lacks is empty: every test runs.
	}
}

// CorruptHistory overwrites instance's stored events with undecodable data.
func CorruptHistory(t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	env := envOf(t, p)
	ctx := t.Context()
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(env.Table),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :h)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(keys.InstancePK(instance)), ":h": str(keys.HistPrefix)},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("dynamotest: read history of %q: %v", instance, err)
	}
	for _, row := range out.Items {
		// A row holds one event ("ev") or several ("evs"), maybe compressed.
		if events, ok := row["evs"].(*types.AttributeValueMemberL); ok {
			for i := range events.Value {
				events.Value[i] = str(`{"event_id":`)
			}
		} else {
			delete(row, "evs")
			delete(row, "nev")
			row["ev"] = str(`{"event_id":`)
		}
		if _, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: row}); err != nil {
			t.Fatalf("dynamotest: corrupt history of %q: %v", instance, err)
		}
	}
	// As AppendWithExecution does, mark the lock row so that no process
	// uses a history it cached before.
	_, err = env.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(env.Table),
		Key:                       map[string]types.AttributeValue{"pk": str(keys.InstancePK(instance)), "sk": str(keys.Lock)},
		UpdateExpression:          aws.String("SET hmark = :mark ADD ver :one"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":mark": str(fmt.Sprintf("corrupted-%d", time.Now().UnixNano())), ":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	var cond *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cond) {
		t.Fatalf("dynamotest: mark the history of %q as written: %v", instance, err)
	}
}

// MaxAttemptCount returns the highest attempt count on instance's lock row.
func MaxAttemptCount(t *testing.T, p provider.Provider, instance string) uint32 {
	t.Helper()
	env := envOf(t, p)
	out, err := env.DB.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(env.Table),
		Key:            map[string]types.AttributeValue{"pk": str(keys.InstancePK(instance)), "sk": str(keys.Lock)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("dynamotest: read lock of %q: %v", instance, err)
	}
	var highest uint32
	if m, ok := out.Item["att"].(*types.AttributeValueMemberM); ok {
		for _, v := range m.Value {
			if nv, ok := v.(*types.AttributeValueMemberN); ok {
				var c uint32
				if err := json.Unmarshal([]byte(nv.Value), &c); err == nil {
					highest = max(highest, c)
				}
			}
		}
	}
	return highest
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
