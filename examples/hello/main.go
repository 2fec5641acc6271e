// Command hello is a sample worker. It serves the Hello orchestration,
// whose activity Greet returns "Hello, <input>!", and the demo's order
// workflow (package orders: ProcessOrder and ShipOrder), on the table and
// wake-up queues the environment names: the variables "duradyn dev"
// prints, or those of a deployment (dynamo.NewFromEnv). It takes no flags
// and runs until interrupted.
//
//	eval "$(duradyn dev --detach)"
//	go run ./examples/hello &
//	duradyn start Hello hello-1 --input '"world"' --wait
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/examples/orders"
)

var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx); err != nil {
		log.Fatalf("hello: %v", err)
	}
}

// serve runs the worker until ctx ends.
func serve(ctx context.Context) error {
	if os.Getenv("DURADYN_TABLE") == "" {
		return errors.New(`DURADYN_TABLE is not set: run eval "$(duradyn dev --print-env)" (or set the variables of your deployment) first`)
	}
	reg, err := durable.NewRegistry(append(orders.NewShop().Activities("hello"), greet, hello, orders.ProcessOrder, orders.ShipOrder)...)
	if err != nil {
		return err
	}
	p, err := dynamo.NewFromEnv(ctx)
	if err != nil {
		return err
	}
	defer p.Close()
	rt, err := durable.NewRuntime(p, reg)
	if err != nil {
		return err
	}
	log.Printf("hello: serving Hello and ProcessOrder on table %s; Ctrl-C stops", os.Getenv("DURADYN_TABLE"))
	return rt.Run(ctx)
}
