// Command demo runs an order workflow on duradyn's durable runtime, on
// DynamoDB and SQS, and prints what happens: `make run`.
//
// It takes DynamoDB and SQS from package localstack (the endpoints named
// in the environment, else LocalStack with Docker, else the embedded
// emulators, installed on first use), creates a table and two wake-up
// queues, and runs two runtimes on them, node-a and node-b, each with its
// own provider, as two processes would. Three ProcessOrder instances run:
//
//   - ValidateOrder, then one ReserveItem per line at once (fan-out,
//     fan-in), then ChargePayment with a retry policy (the gateway times
//     out on the first attempt), then the sub-orchestration ShipOrder
//     (CreateLabel, a durable four-second timer for the carrier pickup,
//     NotifyCustomer), then a race between the DeliveryConfirmed event and
//     a 20 s timer. Each stage sets the custom status and the KV key
//     order_state; the client raises DeliveryConfirmed when it sees
//     "awaiting-delivery".
//   - order-2's card is declined: the reservations are released (fan-out
//     of ReleaseItem) and the order fails.
//   - order-3 is cancelled by the client while ShipOrder waits for pickup;
//     the cancellation reaches ShipOrder.
//
// When the first order starts shipping, node-a shuts down gracefully and
// node-b finishes the work. The demo ends with a summary: each order's outcome,
// order-1's history, and the DynamoDB requests of each node and of the
// client. It exits 1 if any order ended otherwise.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/duradyn/duradyn/localstack"
)

func main() {
	os.Exit(demoMain())
}

func demoMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	con := newConsole(os.Stdout)

	start := time.Now()
	con.say("demo", "", "looking for DynamoDB and SQS (environment, LocalStack, or embedded emulators)")
	em, err := localstack.Start(ctx, func(o *localstack.Options) {
		o.Logger = con.logger("emul")
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	con.say("emul", "", "DynamoDB at %s, SQS at %s (%s), ready after %v",
		em.DynamoDBURL, em.SQSURL, em.Source, time.Since(start).Round(time.Millisecond))

	_, err = run(ctx, con, em.Endpoints)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if serr := em.Stop(sctx); serr != nil {
		fmt.Fprintf(os.Stderr, "demo: stopping the emulators: %v\n", serr)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	con.say("demo", "", "done in %v", time.Since(start).Round(100*time.Millisecond))
	return 0
}
