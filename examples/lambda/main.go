// Command lambda is the bootstrap of a Lambda function that serves the
// Hello orchestration (whose activity Greet returns "Hello, <input>!") and
// the demo's order workflow (package orders: ProcessOrder and ShipOrder).
// The function's environment names the table and the wake-up queues
// (DURADYN_TABLE, DURADYN_ORCHESTRATOR_QUEUE_URL, DURADYN_WORKER_QUEUE_URL),
// as the Terraform module terraform/modules/lambda-worker sets them; its
// invocations come from the event source mappings of both queues and from
// the sweep schedule. Build it with
//
//	make lambda-zip   # build/lambda/bootstrap.zip: linux/arm64, provided.al2023
//
// and deploy it with the root module in this directory (docs/lambda.md).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/examples/orders"
	"github.com/duradyn/duradyn/lambdahost"
)

var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
)

// registry is what the function serves.
func registry() (*durable.Registry, error) {
	return durable.NewRegistry(append(orders.NewShop().Activities("lambda"), greet, hello, orders.ProcessOrder, orders.ShipOrder)...)
}

func main() {
	// One JSON line per record on standard output: CloudWatch Logs.
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	reg, err := registry()
	if err == nil {
		err = lambdahost.Start(reg, func(o *lambdahost.Options) { o.Logger = logger })
	}
	// Start returns only when the host could not be built: Lambda reports
	// the exit as an initialisation error.
	logger.Error("lambda: cannot start", "error", err)
	os.Exit(1)
}
