package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/examples/orders"
	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator between the tests and stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// TestServeFromTheEnvironment: the worker, configured by environment
// variables alone (no endpoint in code), runs Hello and a whole order of
// the demo's workflow on the emulator, and returns nil once interrupted.
func TestServeFromTheEnvironment(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	workerCtx, stopWorker := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serve(workerCtx) }()
	defer func() {
		stopWorker()
		if err := <-served; err != nil {
			t.Errorf("serve returned %v after the interrupt, want nil", err)
		}
	}()

	// A client of its own, as the duradyn command would be, of the
	// worker's shard count (the default): a client of another is refused.
	client := durable.NewClient(env.NewProvider(t, dynamotest.Config{Queues: true, Shards: dynamo.DefaultShards}))
	if err := client.StartOrchestration(ctx, "h1", "Hello", "world"); err != nil {
		t.Fatal(err)
	}
	if out, err := durable.WaitForOutput[string](ctx, client, "h1"); err != nil || out != "Hello, world!" {
		t.Fatalf("Hello output %q, %v; want Hello, world!", out, err)
	}

	order := orders.Order{ID: "o1", Customer: "Ada", Card: "4242-4242-4242-4242",
		Lines: []orders.Line{{SKU: "KB-87", Qty: 1, PriceCents: 12900}, {SKU: "MOUSE-3", Qty: 2, PriceCents: 4900}}}
	if err := client.StartOrchestration(ctx, order.ID, "ProcessOrder", order); err != nil {
		t.Fatal(err)
	}
	awaitCustomStatus(ctx, t, client, order.ID, orders.StatusAwaitingDelivery)
	if err := client.RaiseEvent(ctx, order.ID, orders.EventDelivery, orders.Delivery{SignedBy: "Ada"}); err != nil {
		t.Fatal(err)
	}
	rc, err := durable.WaitForOutput[orders.Receipt](ctx, client, order.ID)
	if err != nil {
		t.Fatalf("ProcessOrder: %v", err)
	}
	if rc.TotalCents != 22700 || rc.Delivery != "signed by Ada" || rc.AuthCode == "" || rc.Tracking == "" {
		t.Errorf("receipt %+v, want $227.00, signed by Ada, with an auth code and a tracking number", rc)
	}
}

// awaitCustomStatus waits until instance id reports custom status want.
func awaitCustomStatus(ctx context.Context, t *testing.T, c *durable.Client, id, want string) {
	t.Helper()
	var v uint64
	for {
		s, err := c.WaitForStatusChange(ctx, id, v)
		if err != nil {
			t.Fatalf("wait for status %q of %s: %v", want, id, err)
		}
		if s.CustomStatus != nil && *s.CustomStatus == want {
			return
		}
		if s.State.IsTerminal() {
			t.Fatalf("%s finished (%v) before reporting %q", id, s.State, want)
		}
		v = s.CustomStatusVersion
	}
}

// TestServeWithoutTable: with no table in the environment the worker says
// how to get one instead of starting.
func TestServeWithoutTable(t *testing.T) {
	t.Setenv("DURADYN_TABLE", "")
	err := serve(t.Context())
	if err == nil || !strings.Contains(err.Error(), "duradyn dev") {
		t.Errorf("serve = %v, want an error pointing at duradyn dev", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("serve = %v: it must fail before doing anything", err)
	}
}
