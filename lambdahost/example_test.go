package lambdahost_test

import (
	"context"
	"log"
	"log/slog"
	"os"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/lambdahost"
)

// The main function of a Lambda function (its bootstrap, on the
// provided.al2023 runtime): the registry it serves, and Start, which builds
// the host from the environment the Terraform module sets (DURADYN_TABLE,
// DURADYN_ORCHESTRATOR_QUEUE_URL, DURADYN_WORKER_QUEUE_URL) and serves the
// invocations of both queues' event source mappings and of the sweep
// schedule through aws-lambda-go's lambda.Start.
func Example() {
	greet := durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello := durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	reg, err := durable.NewRegistry(greet, hello)
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil)) // CloudWatch Logs
	if err := lambdahost.Start(reg, func(o *lambdahost.Options) { o.Logger = logger }); err != nil {
		log.Fatal(err) // Start returns only when the host cannot be built
	}
}
