package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// env is a runtime on a fresh memprovider, shut down when the test ends.
type env struct {
	t   *testing.T
	p   *memprovider.Provider
	rt  *durable.Runtime
	c   *durable.Client
	reg *durable.Registry
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError + 1}))
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func newEnv(t *testing.T, defs []durable.Definition, optFns ...func(*durable.Options)) *env {
	t.Helper()
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	p := memprovider.New()
	fns := append([]func(*durable.Options){func(o *durable.Options) {
		o.LongPollTimeout = 200 * time.Millisecond
		o.MinPollInterval = 5 * time.Millisecond
		o.Logger = quietLogger()
		o.UnregisteredBackoff = durable.UnregisteredBackoff{Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}
	}}, optFns...)
	rt, err := durable.NewRuntime(p, reg, fns...)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &env{t: t, p: p, rt: rt, c: rt.Client(), reg: reg}
}

func (e *env) start(name, id string, in any, opts ...durable.Option) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.c.StartOrchestration(ctx, id, name, in, opts...); err != nil {
		e.t.Fatalf("start %s: %v", id, err)
	}
}

func (e *env) wait(id string) *durable.Status {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := e.c.WaitForCompletion(ctx, id)
	if err != nil {
		e.t.Fatalf("wait %s: %v", id, err)
	}
	return st
}

func (e *env) history(id string) []provider.Event {
	e.t.Helper()
	h, err := e.p.Read(context.Background(), id)
	if err != nil {
		e.t.Fatalf("read %s: %v", id, err)
	}
	return h
}

func (e *env) completed(id string) string {
	e.t.Helper()
	st := e.wait(id)
	if st.State != durable.StateCompleted {
		e.t.Fatalf("%s: state %v, failure %v; want Completed", id, st.State, st.Failure)
	}
	return st.Output
}

func (e *env) failed(id string) provider.ErrorDetails {
	e.t.Helper()
	st := e.wait(id)
	if st.State != durable.StateFailed {
		e.t.Fatalf("%s: state %v output %q; want Failed", id, st.State, st.Output)
	}
	return st.Failure
}

func eventTypes(h []provider.Event) []string {
	out := make([]string, len(h))
	for i, ev := range h {
		out[i] = ev.Kind.EventType()
	}
	return out
}

var greet = durable.NewActivity("Greet", func(_ context.Context, name string) (string, error) {
	return "Hello, " + name + "!", nil
})

func TestHelloWorld(t *testing.T) {
	hello := durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	e := newEnv(t, []durable.Definition{greet, hello})
	e.start("Hello", "i1", "Rust")
	if got := e.completed("i1"); got != `"Hello, Rust!"` {
		t.Fatalf("output %s", got)
	}
	want := []string{"OrchestrationStarted", "ActivityScheduled", "ActivityCompleted", "OrchestrationCompleted"}
	if got := eventTypes(e.history("i1")); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("history %v, want %v", got, want)
	}
	for i, ev := range e.history("i1") {
		if ev.EventID != uint64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.EventID)
		}
	}
}

func TestFanOutFanIn(t *testing.T) {
	double := durable.NewActivity("Double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })
	fan := durable.NewOrchestration("Fan", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		var fs []durable.Future[int]
		for i := range n {
			fs = append(fs, double.Call(ctx, i))
		}
		vs, err := durable.AwaitAll(ctx, fs...)
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, err
	})
	e := newEnv(t, []durable.Definition{double, fan})
	e.start("Fan", "fan", 10)
	if got := e.completed("fan"); got != "90" {
		t.Fatalf("output %s, want 90", got)
	}
}

func TestTimerRacesExternalEvent(t *testing.T) {
	race := durable.NewOrchestration("Race", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		ev := durable.WaitForEvent[string](ctx, "Approve")
		timer := ctx.CreateTimer(time.Hour)
		if durable.Race(ctx, ev, timer) == 1 {
			return "timeout", nil
		}
		return ev.Get(ctx)
	})
	e := newEnv(t, []durable.Definition{race})
	e.start("Race", "r1", struct{}{})
	if err := e.c.WaitForSubscription(context.Background(), "r1", "Approve"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.RaiseEvent(context.Background(), "r1", "Approve", "yes"); err != nil {
		t.Fatal(err)
	}
	if got := e.completed("r1"); got != `"yes"` {
		t.Fatalf("output %s", got)
	}
}

// awaitEvent waits until instance id's history holds an event of type
// typ.
func (e *env) awaitEvent(id, typ string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		h, _ := e.p.Read(ctx, id)
		for _, ev := range h {
			if ev.Kind.EventType() == typ {
				return
			}
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s: no %s in %v", id, typ, eventTypes(h))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestSubOrchestrationAndContinueAsNew(t *testing.T) {
	child := durable.NewOrchestration("Child", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		return n * 10, nil
	})
	counter := durable.NewOrchestration("Counter", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		v, err := child.CallSub(ctx, n).Get(ctx)
		if err != nil {
			return 0, err
		}
		if n < 3 {
			return 0, ctx.ContinueAsNew(n + 1)
		}
		return v, nil
	})
	e := newEnv(t, []durable.Definition{child, counter})
	e.start("Counter", "c1", 1)
	if got := e.completed("c1"); got != "30" {
		t.Fatalf("output %s, want 30", got)
	}
	st := e.wait("c1")
	if st.ExecutionID != 3 {
		t.Fatalf("execution %d, want 3", st.ExecutionID)
	}
}

func TestActivityRetryPolicy(t *testing.T) {
	var calls atomic.Int32
	flaky := durable.NewActivity("Flaky", func(context.Context, struct{}) (string, error) {
		if calls.Add(1) < 3 {
			return "", errors.New("transient")
		}
		return "ok", nil
	})
	orch := durable.NewOrchestration("Retry", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return flaky.Call(ctx, struct{}{}, durable.WithRetry(durable.RetryPolicy{MaxAttempts: 3, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: 10 * time.Millisecond}})).Get(ctx)
	})
	e := newEnv(t, []durable.Definition{flaky, orch})
	e.start("Retry", "r", struct{}{})
	if got := e.completed("r"); got != `"ok"` {
		t.Fatalf("output %s", got)
	}
	var scheduled, timers int
	for _, ev := range e.history("r") {
		switch ev.Kind.(type) {
		case provider.ActivityScheduled:
			scheduled++
		case provider.TimerCreated:
			timers++
		}
	}
	if scheduled != 3 || timers != 2 {
		t.Fatalf("%d attempts and %d backoff timers, want 3 and 2", scheduled, timers)
	}
}

func TestActivityFailureReachesOrchestration(t *testing.T) {
	bad := durable.NewActivity("Bad", func(context.Context, struct{}) (string, error) { return "", errors.New("boom") })
	orch := durable.NewOrchestration("UsesBad", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		_, err := bad.Call(ctx, struct{}{}).Get(ctx)
		var te *durable.TaskError
		if !errors.As(err, &te) {
			return "", fmt.Errorf("want a TaskError, got %v", err)
		}
		return "caught: " + te.Error(), nil
	})
	e := newEnv(t, []durable.Definition{bad, orch})
	e.start("UsesBad", "b", struct{}{})
	if got := e.completed("b"); got != `"caught: boom"` {
		t.Fatalf("output %s", got)
	}
}

func TestOrchestrationPanicFailsWithPanicked(t *testing.T) {
	orch := durable.NewOrchestration("Panics", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		panic("kaboom")
	})
	fine := durable.NewOrchestration("Fine", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return "fine", nil
	})
	e := newEnv(t, []durable.Definition{orch, fine})
	e.start("Panics", "p", struct{}{})
	e.start("Fine", "f", struct{}{})
	d := e.failed("p")
	app, ok := d.(provider.ApplicationDetails)
	if !ok || app.Kind.Code != provider.AppPanicked || app.Message != "kaboom" {
		t.Fatalf("failure %#v, want Panicked kaboom", d)
	}
	e.completed("f")
}

func TestCancelInstanceCascadesToChild(t *testing.T) {
	child := durable.NewOrchestration("Waiter", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return durable.WaitForEvent[string](ctx, "never").Get(ctx)
	})
	parent := durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return child.CallSub(ctx, struct{}{}, durable.WithInstanceID("kid")).Get(ctx)
	})
	e := newEnv(t, []durable.Definition{child, parent})
	e.start("Parent", "mom", struct{}{})
	e.awaitEvent("kid", "ExternalSubscribed")
	if err := e.c.CancelInstance(context.Background(), "mom", "stop"); err != nil {
		t.Fatal(err)
	}
	d := e.failed("mom")
	if app, ok := d.(provider.ApplicationDetails); !ok || app.Kind.Code != provider.AppCancelled || app.Kind.Reason != "stop" {
		t.Fatalf("parent failure %#v", d)
	}
	d = e.failed("kid")
	if app, ok := d.(provider.ApplicationDetails); !ok || app.Kind.Code != provider.AppCancelled || app.Kind.Reason != "parent canceled" {
		t.Fatalf("child failure %#v", d)
	}
}
