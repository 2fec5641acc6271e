package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/provider"
)

// The orchestrations the tests run: every state and shape the pages show.
var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	work = durable.NewActivity("Work", func(ctx context.Context, n int) (int, error) { return n * n, nil })
	// flaky fails the first call for each input, so a retry policy
	// retries it once.
	flaky = durable.NewActivity("Flaky", func(ctx context.Context, key string) (string, error) {
		if _, failed := flakySeen.LoadOrStore(key, true); !failed {
			return "", errors.New("service unavailable (first attempt)")
		}
		return "ok " + key, nil
	})
	flakySeen sync.Map

	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	fanOut = durable.NewOrchestration("FanOut", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		ctx.SetCustomStatus(fmt.Sprintf(`{"phase":"fan-out","items":%d}`, n))
		ctx.KV().Set("items", fmt.Sprint(n))
		retried, err := flaky.Call(ctx, ctx.InstanceID(), durable.WithRetry(durable.RetryPolicy{
			MaxAttempts: 3, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: 20 * time.Millisecond},
		})).Get(ctx)
		if err != nil {
			return 0, err
		}
		ctx.KV().Set("flaky", retried)
		futures := make([]durable.Future[int], n)
		for i := range futures {
			futures[i] = work.Call(ctx, i+1)
		}
		squares, err := durable.AwaitAll(ctx, futures...)
		total := 0
		for _, s := range squares {
			total += s
		}
		ctx.SetCustomStatus(`{"phase":"done"}`)
		return total, err
	})
	child = durable.NewOrchestration("Child", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
	parent = durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, names []string) ([]string, error) {
		futures := make([]durable.Future[string], len(names))
		for i, n := range names {
			futures[i] = child.CallSub(ctx, n)
		}
		return durable.AwaitAll(ctx, futures...)
	})
	approval = durable.NewOrchestration("Approval", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		ctx.SetCustomStatus("awaiting approval")
		by, err := durable.WaitForEvent[string](ctx, "approve").Get(ctx)
		if err != nil {
			return "", err
		}
		return order + " approved by " + by, nil
	})
	failing = durable.NewOrchestration("Failing", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		return "", fmt.Errorf("card declined for %s", order)
	})
	// trivial completes on its first turn: it seeds large tables.
	trivial = durable.NewOrchestration("Trivial", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return "done", nil
	})
	sleeper = durable.NewOrchestration("Sleeper", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		ctx.SetCustomStatus("sleeping")
		return "woke", ctx.Sleep(time.Hour)
	})
)

// definitions are the test orchestrations and activities.
func definitions() []durable.Definition {
	return []durable.Definition{greet, work, flaky, hello, fanOut, child, parent, approval, failing, sleeper, trivial}
}

// startRuntime runs a runtime of the test orchestrations on p until t
// ends, with optFns applied last, and returns its client.
func startRuntime(t testing.TB, p provider.Provider, optFns ...func(*durable.Options)) *durable.Client {
	t.Helper()
	reg, err := durable.NewRegistry(definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, append([]func(*durable.Options){func(o *durable.Options) {
		o.Logger = testlog.New(t)
		o.LongPollTimeout = time.Second
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt.Client()
}

// xssID is an instance id made to break out of every context a page puts
// it in.
const xssID = `x"'><script>alert(1)</script><img src=x onerror=alert(2)>&amp;`

// scene is the instances the tests start: one of each state.
type scene struct {
	hello, fan, parent, approval, failed, sleeper, xss, long string
}

// startScene starts the scene's instances with ids prefixed by prefix and
// waits until each is in the state it is started for: hello, fan, parent,
// xss, long and failed ended; approval and sleeper waiting.
func startScene(ctx context.Context, t testing.TB, c *durable.Client, prefix string) scene {
	t.Helper()
	s := scene{
		hello: prefix + "hello", fan: prefix + "fanout", parent: prefix + "parent", approval: prefix + "approval",
		failed: prefix + "failed", sleeper: prefix + "sleeper", xss: prefix + xssID,
		long: prefix + strings.Repeat("long-id-", 200),
	}
	must(t, hello.Start(ctx, c, s.hello, "world"))
	must(t, fanOut.Start(ctx, c, s.fan, 12))
	must(t, parent.Start(ctx, c, s.parent, []string{"Oslo", "Lima", "Kyiv"}))
	must(t, approval.Start(ctx, c, s.approval, "order-17"))
	must(t, failing.Start(ctx, c, s.failed, "order-18"))
	must(t, sleeper.Start(ctx, c, s.sleeper, struct{}{}))
	// A raw input is stored as given: its markup is not JSON-escaped.
	must(t, c.StartOrchestration(ctx, s.xss, hello.Name(), durable.Raw(`"</pre><script>alert('payload')</script>"`)))
	must(t, hello.Start(ctx, c, s.long, strings.Repeat("very long payload ", 5000)))
	for _, id := range []string{s.hello, s.fan, s.parent, s.failed, s.xss, s.long} {
		if _, err := c.WaitForCompletion(ctx, id); err != nil {
			t.Fatalf("wait for %s: %v", id, err)
		}
	}
	for _, id := range []string{s.approval, s.sleeper} {
		if _, err := c.WaitForStatusChange(ctx, id, 0); err != nil {
			t.Fatalf("wait for %s to wait: %v", id, err)
		}
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newConsole returns a console over c.
func newConsole(t testing.TB, c *durable.Client, opts ...func(*Options)) *Console {
	t.Helper()
	con, err := New(c, append([]func(*Options){func(o *Options) { o.Logger = testlog.New(t) }}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return con
}

// get fetches path from h as a browser on loopback would, and returns
// the response with its body read.
func get(t testing.TB, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	return do(t, h, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil))
}

// do serves req with h.
func do(t testing.TB, h http.Handler, req *http.Request) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	return res, rec.Body.String()
}
