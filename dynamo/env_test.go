package dynamo_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
)

// TestNewFromEnvReachesTheEmulator: a worker built only from environment
// variables (the table, endpoints, queues, region and static credentials
// the duradyn command reads), with no endpoint in code, runs an
// orchestration on the emulator's table and queues.
func TestNewFromEnvReachesTheEmulator(t *testing.T) {
	env := dynamotest.NewEnv(t, true)
	for k, v := range map[string]string{
		"DURADYN_TABLE":                  env.Table,
		"DURADYN_DYNAMODB_ENDPOINT":      env.Endpoints.DynamoDBURL,
		"DURADYN_SQS_ENDPOINT":           env.Endpoints.SQSURL,
		"DURADYN_ORCHESTRATOR_QUEUE_URL": env.OrchestratorQueueURL,
		"DURADYN_WORKER_QUEUE_URL":       env.WorkerQueueURL,
		"AWS_REGION":                     env.AWS.Region,
		"AWS_ACCESS_KEY_ID":              "test",
		"AWS_SECRET_ACCESS_KEY":          "test",
		"AWS_CONFIG_FILE":                "/nonexistent", // no developer profile
		"AWS_SHARED_CREDENTIALS_FILE":    "/nonexistent",
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := dynamo.NewFromEnv(ctx)
	if err != nil {
		t.Fatalf("NewFromEnv: %v", err)
	}
	defer p.Close()
	greet := durable.NewActivity("Greet", func(_ context.Context, name string) (string, error) { return "Hello, " + name + "!", nil })
	hello := durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	reg, err := durable.NewRegistry(greet, hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(context.Background())
	if err := hello.Start(ctx, rt.Client(), "env-1", "world"); err != nil {
		t.Fatal(err)
	}
	out, err := durable.WaitForOutput[string](ctx, rt.Client(), "env-1")
	if err != nil || out != "Hello, world!" {
		t.Fatalf("output %q, %v; want Hello, world!", out, err)
	}
}

// TestReadEnv: the environment's settings, with the endpoint variables in
// their order of precedence, and a bad shard count refused.
func TestReadEnv(t *testing.T) {
	vars := map[string]string{
		"DURADYN_TABLE": "t", "DURADYN_SHARDS": "8",
		"AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_SQS": "http://sqs",
		"DURADYN_DYNAMODB_ENDPOINT": "http://ddb",
	}
	e, err := dynamo.ReadEnv(func(k string) string { return vars[k] })
	want := dynamo.Env{Table: "t", Shards: 8, DynamoDBEndpoint: "http://ddb", SQSEndpoint: "http://sqs"}
	if err != nil || e != want {
		t.Errorf("ReadEnv = %+v, %v; want %+v", e, err, want)
	}
	for _, bad := range []string{"x", "0", "257"} {
		vars["DURADYN_SHARDS"] = bad
		if _, err := dynamo.ReadEnv(func(k string) string { return vars[k] }); !errors.Is(err, dynamo.ErrInvalidOptions) {
			t.Errorf("DURADYN_SHARDS=%s: %v; want ErrInvalidOptions", bad, err)
		}
	}
}
