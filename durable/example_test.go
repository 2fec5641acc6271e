package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// runExample starts a runtime for defs on an in-memory provider, runs
// start, and stops the runtime.
func runExample(defs []durable.Definition, start func(ctx context.Context, c *durable.Client) error) {
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := durable.NewRuntime(memprovider.New(), reg, func(o *durable.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.LongPollTimeout = 100 * time.Millisecond
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Shutdown(context.Background())
	if err := start(ctx, rt.Client()); err != nil {
		fmt.Println("error:", err)
	}
}

// A hello-world orchestration calls one activity and returns its result.
func Example() {
	greet := durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello := durable.NewOrchestration("HelloWorld", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	runExample([]durable.Definition{greet, hello}, func(ctx context.Context, c *durable.Client) error {
		if err := hello.Start(ctx, c, "hello-1", "world"); err != nil {
			return err
		}
		out, err := durable.WaitForOutput[string](ctx, c, "hello-1")
		fmt.Println(out)
		return err
	})
	// Output: Hello, world!
}

// Fan out one activity per item, then fan in with AwaitAll.
func ExampleAwaitAll() {
	square := durable.NewActivity("Square", func(ctx context.Context, n int) (int, error) { return n * n, nil })
	sum := durable.NewOrchestration("SumOfSquares", func(ctx *durable.OrchestrationContext, ns []int) (int, error) {
		futures := make([]durable.Future[int], len(ns))
		for i, n := range ns {
			futures[i] = square.Call(ctx, n)
		}
		squares, err := durable.AwaitAll(ctx, futures...)
		total := 0
		for _, s := range squares {
			total += s
		}
		return total, err
	})
	runExample([]durable.Definition{square, sum}, func(ctx context.Context, c *durable.Client) error {
		if err := sum.Start(ctx, c, "sum-1", []int{1, 2, 3, 4}); err != nil {
			return err
		}
		out, err := durable.WaitForOutput[int](ctx, c, "sum-1")
		fmt.Println(out)
		return err
	})
	// Output: 30
}

// Race an external event against a timer: whichever resolves first wins and
// the other is cancelled.
func ExampleRace() {
	approval := durable.NewOrchestration("Approval", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		approved := durable.WaitForEvent[bool](ctx, "Approved")
		deadline := ctx.CreateTimer(24 * time.Hour)
		ctx.SetCustomStatus("awaiting approval")
		if durable.Race(ctx, approved, deadline) == 1 {
			return "expired", nil
		}
		ok, err := approved.Get(ctx)
		if err != nil || !ok {
			return "rejected", err
		}
		return "approved", nil
	})
	runExample([]durable.Definition{approval}, func(ctx context.Context, c *durable.Client) error {
		if err := approval.Start(ctx, c, "approval-1", struct{}{}); err != nil {
			return err
		}
		// An event raised before the orchestration waits for it is dropped:
		// the orchestration says it waits through its custom status, which
		// is committed with the wait.
		if _, err := c.WaitForStatusChange(ctx, "approval-1", 0); err != nil {
			return err
		}
		if err := c.RaiseEvent(ctx, "approval-1", "Approved", true); err != nil {
			return err
		}
		out, err := durable.WaitForOutput[string](ctx, c, "approval-1")
		fmt.Println(out)
		return err
	})
	// Output: approved
}

// A retry policy retries a failing activity; each attempt and each wait is
// recorded, so the retries survive a crash.
func ExampleWithRetry() {
	attempts := 0
	charge := durable.NewActivity("Charge", func(ctx context.Context, amount int) (string, error) {
		attempts++
		if attempts < 3 {
			return "", errors.New("payment service unavailable")
		}
		return fmt.Sprintf("charged %d", amount), nil
	})
	pay := durable.NewOrchestration("Pay", func(ctx *durable.OrchestrationContext, amount int) (string, error) {
		policy := durable.RetryPolicy{
			MaxAttempts: 5,
			Backoff:     durable.Backoff{Kind: durable.BackoffExponential, Base: 10 * time.Millisecond},
		}
		return charge.Call(ctx, amount, durable.WithRetry(policy)).Get(ctx)
	})
	runExample([]durable.Definition{charge, pay}, func(ctx context.Context, c *durable.Client) error {
		if err := pay.Start(ctx, c, "pay-1", 42); err != nil {
			return err
		}
		out, err := durable.WaitForOutput[string](ctx, c, "pay-1")
		fmt.Println(out, "after", attempts, "attempts")
		return err
	})
	// Output: charged 42 after 3 attempts
}

// A function invoked now and then (on AWS Lambda, say) runs a new runtime
// each time until the work in hand is done. Here the work is one
// orchestration started before the runtime.
func ExampleRuntime_RunUntilIdle() {
	greet := durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello := durable.NewOrchestration("HelloWorld", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	reg, err := durable.NewRegistry(greet, hello)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := memprovider.New() // dynamo.New(...) in a function, closed before it returns
	c := durable.NewClient(p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the invocation's deadline
	defer cancel()
	if err := hello.Start(ctx, c, "hello-idle", "world"); err != nil {
		fmt.Println(err)
		return
	}

	// The invocation: a new runtime, until it has been idle for a second.
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := rt.RunUntilIdle(ctx, time.Second); err != nil {
		fmt.Println(err)
		return
	}
	st, err := c.Status(ctx, "hello-idle")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.State, st.Output)
	// Output: Completed "Hello, world!"
}
