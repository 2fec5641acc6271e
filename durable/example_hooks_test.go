package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// Raise an event only once the orchestration waits for it: raised
// earlier, it could arrive before the wait is recorded and be dropped.
func ExampleClient_WaitForSubscription() {
	approve := durable.NewOrchestration("Approve", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		ok, err := durable.WaitForEvent[bool](ctx, "Approval").Get(ctx)
		return fmt.Sprintf("%s approved: %v", order, ok), err
	})
	runExample([]durable.Definition{approve}, func(ctx context.Context, c *durable.Client) error {
		if err := approve.Start(ctx, c, "order-7", "order-7"); err != nil {
			return err
		}
		if err := c.WaitForSubscription(ctx, "order-7", "Approval"); err != nil {
			return err
		}
		if err := c.RaiseEvent(ctx, "order-7", "Approval", true); err != nil {
			return err
		}
		out, err := durable.WaitForOutput[string](ctx, c, "order-7")
		fmt.Println(out)
		return err
	})
	// Output: order-7 approved: true
}

// Log every committed turn and every activity run, without OpenTelemetry.
func ExampleObserverFuncs() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	observer := durable.ObserverFuncs{
		OnTurnCommitted: func(e durable.TurnEvent) {
			log.Info("turn", "instance", e.Instance, "execution", e.ExecutionID, "attempt", e.Attempt, "outcome", e.Outcome)
		},
		OnActivityFinished: func(e durable.ActivityEvent) {
			a := e.Activity
			log.Info("activity", "instance", a.Instance, "name", a.Name, "attempt", a.Attempt, "worker", a.WorkerID, "outcome", e.Outcome, "took", e.Duration)
		},
	}
	reg, _ := durable.NewRegistry()
	rt, err := durable.NewRuntime(memprovider.New(), reg, func(o *durable.Options) { o.Observer = observer })
	fmt.Println(rt != nil, err)
	// Output: true <nil>
}

// Replay a tenth of the turns from history and compare, to catch
// nondeterministic code that the runtime's kept code would hide.
func ExampleOptions_verifyReplay() {
	visit := durable.NewActivity("Visit", func(_ context.Context, k string) (string, error) { return k, nil })
	tour := durable.NewOrchestration("Tour", func(ctx *durable.OrchestrationContext, stops map[string]bool) (int, error) {
		n := 0
		for k := range stops { //durablevet:ignore the nondeterminism the check finds
			if _, err := visit.Call(ctx, k).Get(ctx); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
	reg, _ := durable.NewRegistry(visit, tour)
	rt, _ := durable.NewRuntime(memprovider.New(), reg, func(o *durable.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.VerifyReplay = 1 // every turn, as durabletest does; 0.1 in production checks a tenth
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = rt.Start(ctx)
	defer rt.Shutdown(context.Background())
	stops := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"} {
		stops[k] = true
	}
	_ = tour.Start(ctx, rt.Client(), "tour-1", stops)
	_, err := durable.WaitForOutput[int](ctx, rt.Client(), "tour-1")
	fmt.Println(errors.Is(err, durable.ErrNondeterminism))
	// Output: true
}
