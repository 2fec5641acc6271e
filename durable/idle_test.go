package durable_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// idleRuntime returns a new runtime for defs on p, as one invocation of a
// function would make.
func idleRuntime(t *testing.T, p provider.Provider, defs []durable.Definition, optFns ...func(*durable.Options)) *durable.Runtime {
	t.Helper()
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	rt, err := durable.NewRuntime(p, reg, append([]func(*durable.Options){func(o *durable.Options) {
		o.LongPollTimeout = 200 * time.Millisecond
		o.MinPollInterval = 5 * time.Millisecond
		o.Logger = quietLogger()
	}}, optFns...)...)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	return rt
}

// states returns the state of each instance.
func states(t *testing.T, c *durable.Client, ids []string) map[string]durable.State {
	t.Helper()
	out := map[string]durable.State{}
	for _, id := range ids {
		st, err := c.Status(t.Context(), id)
		if err != nil {
			t.Fatalf("status %s: %v", id, err)
		}
		out[id] = st.State
	}
	return out
}

// TestRunUntilIdleProcessesTheWorkThenReturns: instances started before
// RunUntilIdle, each a chain of three activities that take 400 ms each,
// all complete before it returns, though the work lasts several times the
// idle time of 1 s (a running activity is not idleness); a second run with
// nothing to do returns too.
func TestRunUntilIdleProcessesTheWorkThenReturns(t *testing.T) {
	step := durable.NewActivity("Step", func(ctx context.Context, n int) (int, error) {
		select { // the activity's work
		case <-time.After(400 * time.Millisecond):
			return n + 1, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	})
	chain := durable.NewOrchestration("Chain", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		for range 3 {
			var err error
			if n, err = step.Call(ctx, n).Get(ctx); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	defs := []durable.Definition{step, chain}
	p := memprovider.New()
	c := durable.NewClient(p)
	var ids []string
	for i := range 5 {
		id := fmt.Sprint("chain-", i)
		if err := chain.Start(t.Context(), c, id, i); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := idleRuntime(t, p, defs).RunUntilIdle(ctx, time.Second); err != nil {
		t.Fatalf("RunUntilIdle: %v", err)
	}
	for id, state := range states(t, c, ids) {
		if state != durable.StateCompleted {
			t.Fatalf("%s is %v after RunUntilIdle returned, want completed", id, state)
		}
	}
	for i, id := range ids {
		if got, err := durable.WaitForOutput[int](ctx, c, id); err != nil || got != i+3 {
			t.Errorf("%s returned %d, %v; want %d", id, got, err, i+3)
		}
	}
	if err := idleRuntime(t, p, defs).RunUntilIdle(ctx, 300*time.Millisecond); err != nil {
		t.Fatalf("RunUntilIdle with nothing to do: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("RunUntilIdle ran until the test's deadline")
	}
}

// TestRunUntilIdleStopsBeforeTheDeadline: an activity that does not end by
// itself is cancelled with ErrShutdown when the runtime stops
// ShutdownTimeout before ctx's deadline; it is abandoned without counting
// an attempt, and the next run completes it.
func TestRunUntilIdleStopsBeforeTheDeadline(t *testing.T) {
	var blocking atomic.Bool
	blocking.Store(true)
	var causes atomic.Value
	wait := durable.NewActivity("Wait", func(ctx context.Context, _ struct{}) (string, error) {
		if !blocking.Load() {
			return "done", nil
		}
		<-ctx.Done()
		causes.Store(context.Cause(ctx))
		return "", context.Cause(ctx)
	})
	orch := durable.NewOrchestration("Waits", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return wait.Call(ctx, struct{}{}, durable.WithRetry(durable.RetryPolicy{MaxAttempts: 1})).Get(ctx)
	})
	defs := []durable.Definition{wait, orch}
	p := memprovider.New()
	c := durable.NewClient(p)
	if err := orch.Start(t.Context(), c, "waits", struct{}{}); err != nil {
		t.Fatal(err)
	}
	const shutdown = time.Second
	short := func(o *durable.Options) { o.ShutdownTimeout = shutdown }
	ctx, cancel := context.WithTimeout(t.Context(), shutdown+time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := idleRuntime(t, p, defs, short).RunUntilIdle(ctx, time.Hour); err != nil {
		t.Fatalf("RunUntilIdle: %v", err)
	}
	if ctx.Err() != nil || time.Now().After(deadline) {
		t.Fatal("RunUntilIdle returned after ctx's deadline")
	}
	if cause, _ := causes.Load().(error); !errors.Is(cause, durable.ErrShutdown) {
		t.Fatalf("the running activity's cause %v, want ErrShutdown", cause)
	}
	if got := states(t, c, []string{"waits"})["waits"]; got != durable.StateRunning {
		t.Fatalf("instance %v after the stop, want still running", got)
	}
	blocking.Store(false)
	next, cancelNext := context.WithTimeout(t.Context(), time.Minute)
	defer cancelNext()
	if err := idleRuntime(t, p, defs).RunUntilIdle(next, 300*time.Millisecond); err != nil {
		t.Fatalf("second RunUntilIdle: %v", err)
	}
	if got, err := durable.WaitForOutput[string](next, c, "waits"); err != nil || got != "done" {
		t.Fatalf("after the second run: %q, %v; want done (the abandoned attempt not counted against MaxAttempts 1)", got, err)
	}
}

// TestRunUntilIdleRefusesBadInput: a non-positive idle time and a
// deadline closer than ShutdownTimeout are refused before the runtime
// starts, so it can still be run.
func TestRunUntilIdleRefusesBadInput(t *testing.T) {
	p := memprovider.New()
	rt := idleRuntime(t, p, nil)
	if err := rt.RunUntilIdle(t.Context(), 0); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("idle 0: %v, want ErrInvalidInput", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // ShutdownTimeout is 10 s
	defer cancel()
	if err := rt.RunUntilIdle(ctx, time.Second); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("deadline within ShutdownTimeout: %v, want ErrInvalidInput", err)
	}
	if err := rt.RunUntilIdle(t.Context(), 50*time.Millisecond); err != nil {
		t.Errorf("RunUntilIdle after refusals: %v, want it to run", err)
	}
}

// TestRunUntilIdleReturnsWhenCtxIsCancelled: cancelling ctx stops the
// runtime at once, idle or not: the running activity is cancelled with
// ErrShutdown and RunUntilIdle returns nil.
func TestRunUntilIdleReturnsWhenCtxIsCancelled(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan error, 1)
	hold := durable.NewActivity("Hold", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return "", context.Cause(ctx)
	})
	orch := durable.NewOrchestration("Holds", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return hold.Call(ctx, struct{}{}).Get(ctx)
	})
	p := memprovider.New()
	if err := orch.Start(t.Context(), durable.NewClient(p), "holds", struct{}{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- idleRuntime(t, p, []durable.Definition{hold, orch}).RunUntilIdle(ctx, time.Hour) }()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the activity did not start")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunUntilIdle after cancel: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunUntilIdle did not return after ctx was cancelled")
	}
	if got := <-cause; !errors.Is(got, durable.ErrShutdown) {
		t.Fatalf("the activity's cause %v, want ErrShutdown", got)
	}
}
