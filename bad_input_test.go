package duradyn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/runtimetest"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// badInputEnv is one test's DynamoDB provider (fresh table and queues),
// a client, and the runtimes the test starts, shut down when it ends.
type badInputEnv struct {
	t       *testing.T
	p       *dynamo.Provider
	c       *durable.Client
	fetched *startsFetched // the runtimes' provider: p, watched
	started int
}

func newBadInputEnv(t *testing.T) *badInputEnv {
	t.Helper()
	t.Parallel()
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true})
	return &badInputEnv{t: t, p: p, c: durable.NewClient(p), fetched: &startsFetched{Provider: p}}
}

// startsFetched is the provider the tests' runtimes use: it records the
// inputs of the starts that fetches handed a runtime, per instance. A
// turn handed over is the runtime's: a graceful shutdown lets it finish,
// where a fetch still under way when the shutdown begins gives its lock
// back.
type startsFetched struct {
	*dynamo.Provider
	mu     sync.Mutex
	inputs map[string][]string
}

func (w *startsFetched) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := w.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, m := range item.Messages {
			if start, ok := m.(provider.StartOrchestrationItem); ok {
				if w.inputs == nil {
					w.inputs = map[string][]string{}
				}
				w.inputs[item.Instance] = append(w.inputs[item.Instance], start.Input)
			}
		}
	}
	return item, err
}

// handed reports whether a fetch handed a runtime a turn of instance that
// carries a start with input.
func (w *startsFetched) handed(instance, input string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.inputs[instance], input)
}

// runtime starts a runtime serving defs with the suite's defaults and
// leases suited to a shared emulator, then optFns.
func (e *badInputEnv) runtime(defs []durable.Definition, optFns ...func(*durable.Options)) *durable.Runtime {
	e.t.Helper()
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.started++
	id := fmt.Sprintf("rt%d", e.started)
	fns := append([]func(*durable.Options){runtimetest.Defaults, func(o *durable.Options) {
		o.RuntimeID = id
		o.OrchestratorLockTimeout = 10 * time.Second
		o.OrchestratorLockRenewalBuffer = 3 * time.Second
	}}, optFns...)
	rt, err := durable.NewRuntime(e.fetched, reg, fns...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			e.t.Errorf("runtime %s: Shutdown: %v", id, err)
		}
	})
	return rt
}

func (e *badInputEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *badInputEnv) start(name, id string, in any) {
	e.t.Helper()
	if err := e.c.StartOrchestration(e.ctx(), id, name, in); err != nil {
		e.t.Fatalf("start %s: %v", id, err)
	}
}

// wait waits for id to end and checks its history's invariants.
func (e *badInputEnv) wait(id string) *durable.Status {
	e.t.Helper()
	st, err := e.c.WaitForCompletion(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("wait %s: %v", id, err)
	}
	if err := runtimetest.CheckInvariants(e.history(id)); err != nil {
		e.t.Errorf("%s: %v", id, err)
	}
	return st
}

func (e *badInputEnv) completed(id string) string {
	e.t.Helper()
	st := e.wait(id)
	if st.State != durable.StateCompleted {
		e.t.Fatalf("%s: %v (%v), want Completed", id, st.State, st.Failure)
	}
	return st.Output
}

func (e *badInputEnv) failed(id string) provider.ErrorDetails {
	e.t.Helper()
	st := e.wait(id)
	if st.State != durable.StateFailed {
		e.t.Fatalf("%s: %v with output %.200q, want Failed", id, st.State, st.Output)
	}
	return st.Failure
}

func (e *badInputEnv) history(id string) []provider.Event {
	e.t.Helper()
	h, err := e.p.Read(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("read %s: %v", id, err)
	}
	return h
}

// badInputHealthyDefs is a plain orchestration and its activity: the instance the
// tests run beside the bad one, to show the runtime keeps serving.
func badInputHealthyDefs() []durable.Definition {
	return []durable.Definition{
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return "echo:" + in, nil }),
		durable.OrchestrationFunc("Healthy", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			v, err := durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(in)).Get(ctx)
			return string(v), err
		}),
	}
}

func (e *badInputEnv) expectHealthy(id string) {
	e.t.Helper()
	if out := e.completed(id); out != "echo:"+id {
		e.t.Errorf("%s: output %q, want echo:%s", id, out, id)
	}
}

// oversized returns n bytes of text: over DynamoDB's 400 KB item limit for n
// of 500 KB.
func oversized(n int) string { return strings.Repeat("x", n) }

func TestBadInput(t *testing.T) {
	t.Parallel()
	// An activity whose result does not fit a DynamoDB item fails with
	// "result too large"; the orchestration gets a *durable.TaskError it
	// can handle or return.
	t.Run("activity_result_too_large", func(t *testing.T) {
		e := newBadInputEnv(t)
		e.runtime(append(badInputHealthyDefs(),
			durable.ActivityFunc("Huge", func(context.Context, string) (string, error) { return oversized(500 << 10), nil }),
			durable.OrchestrationFunc("BigResult", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				v, err := durable.CallActivity[durable.Raw](ctx, "Huge", durable.Raw("")).Get(ctx)
				var te *durable.TaskError
				switch {
				case err == nil:
					return fmt.Sprintf("got %d bytes", len(v)), nil
				case !errors.As(err, &te):
					return "", fmt.Errorf("error %T %v, want a TaskError", err, err)
				case in == "handle":
					return "recovered: " + te.Error(), nil
				}
				return "", err
			}),
		))
		e.start("BigResult", "big-handle", durable.Raw("handle"))
		e.start("BigResult", "big-propagate", durable.Raw("propagate"))
		e.start("Healthy", "healthy", durable.Raw("healthy"))
		out := e.completed("big-handle")
		if !strings.HasPrefix(out, "recovered: ") || !strings.Contains(out, "result too large") {
			t.Errorf("big-handle output %q, want the handled result-too-large error", out)
		}
		failure := e.failed("big-propagate")
		if !strings.Contains(failure.DisplayMessage(), "result too large") {
			t.Errorf("big-propagate failure %q, want result too large", failure.DisplayMessage())
		}
		for _, id := range []string{"big-handle", "big-propagate"} {
			var details provider.ErrorDetails
			for _, ev := range e.history(id) {
				if f, ok := ev.Kind.(provider.ActivityFailed); ok {
					details = f.Details
				}
			}
			if d, ok := details.(provider.ApplicationDetails); !ok || d.Kind.Code != provider.AppActivityFailed || !strings.Contains(d.Message, "result too large") {
				t.Errorf("%s: ActivityFailed details %#v, want an application failure naming the result too large", id, details)
			}
		}
		e.expectHealthy("healthy")
	})

	// A turn whose event does not fit a DynamoDB item fails the
	// orchestration with infrastructure details at once (the ack is
	// refused as invalid input, not retried); the activity never runs.
	t.Run("event_too_large", func(t *testing.T) {
		e := newBadInputEnv(t)
		var ran atomic.Int32
		child := durable.OrchestrationFunc("BigOutput", func(*durable.OrchestrationContext, string) (string, error) {
			return oversized(500 << 10), nil
		})
		e.runtime(append(badInputHealthyDefs(),
			durable.ActivityFunc("Sink", func(context.Context, string) (string, error) { ran.Add(1); return "", nil }),
			durable.OrchestrationFunc("BigInput", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				_, err := durable.CallActivity[durable.Raw](ctx, "Sink", durable.Raw(oversized(500<<10))).Get(ctx)
				return "unreachable", err
			}),
			child,
			durable.OrchestrationFunc("BigChildParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				_, err := durable.CallSubOrchestration[durable.Raw](ctx, "BigOutput", durable.Raw("")).Get(ctx)
				if err != nil {
					return "child failed: " + err.Error(), nil
				}
				return "child completed", nil
			}),
			durable.OrchestrationFunc("BigStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				ctx.SetCustomStatus(oversized(300 << 10))
				return "unreachable", nil
			}),
		))
		e.start("BigInput", "big-input", durable.Raw(""))
		e.start("BigOutput", "big-output", durable.Raw(""))
		e.start("BigChildParent", "big-parent", durable.Raw(""))
		e.start("BigStatus", "big-status", durable.Raw(""))
		e.start("Healthy", "healthy", durable.Raw("healthy"))
		for _, id := range []string{"big-input", "big-output"} {
			failure := e.failed(id)
			d, ok := failure.(provider.InfrastructureDetails)
			if !ok || !strings.Contains(d.Message, "must fit one DynamoDB item") {
				t.Errorf("%s: failure %#v, want infrastructure details naming the item limit", id, failure)
			}
			if types := runtimetest.EventTypes(e.history(id)); len(types) != 2 || types[0] != "OrchestrationStarted" || types[1] != "OrchestrationFailed" {
				t.Errorf("%s: history %v, want only the start and the failure", id, types)
			}
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("the activity with the oversized input ran %d times", n)
		}
		// duradyn notifies the parent of a child whose commit is refused
		// (duroxide sends nothing and the parent waits forever). As in
		// duroxide, a child's infrastructure failure aborts the parent's
		// turn before its code runs: the parent fails with the child's
		// details instead of seeing a TaskError.
		failure := e.failed("big-parent")
		if d, ok := failure.(provider.InfrastructureDetails); !ok || !strings.Contains(d.Message, "big-parent::sub::") || !strings.Contains(d.Message, "must fit one DynamoDB item") {
			t.Errorf("big-parent: failure %#v, want the child's infrastructure failure", failure)
		}
		if n := runtimetest.Count(e.history("big-parent"), "SubOrchestrationFailed"); n != 1 {
			t.Errorf("big-parent: history %v, want the child's failure recorded", runtimetest.EventTypes(e.history("big-parent")))
		}
		// A custom status over 256 KiB hits the runtime's own limit before
		// the item limit: an application failure that names it.
		failure = e.failed("big-status")
		if d, ok := failure.(provider.ApplicationDetails); !ok || !strings.Contains(strings.ToLower(d.Message), "custom status") {
			t.Errorf("big-status: failure %#v, want the custom status limit", failure)
		}
		e.expectHealthy("healthy")
	})

	// A panic in an activity fails the activity, one in orchestration code
	// fails the orchestration as Panicked; the runtime keeps serving.
	t.Run("panics", func(t *testing.T) {
		e := newBadInputEnv(t)
		e.runtime(append(badInputHealthyDefs(),
			durable.ActivityFunc("Panicky", func(context.Context, string) (string, error) { panic("activity boom") }),
			durable.OrchestrationFunc("CallsPanicky", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				_, err := durable.CallActivity[durable.Raw](ctx, "Panicky", durable.Raw("")).Get(ctx)
				return "unreachable", err
			}),
			durable.OrchestrationFunc("PanicsItself", func(*durable.OrchestrationContext, string) (string, error) {
				panic("orchestration boom")
			}),
		))
		e.start("CallsPanicky", "activity-panic", durable.Raw(""))
		e.start("PanicsItself", "orchestration-panic", durable.Raw(""))
		failure := e.failed("activity-panic")
		if !strings.Contains(failure.DisplayMessage(), "activity boom") {
			t.Errorf("activity-panic failure %q, want the panic's value", failure.DisplayMessage())
		}
		var actFailure provider.ErrorDetails
		for _, ev := range e.history("activity-panic") {
			if f, ok := ev.Kind.(provider.ActivityFailed); ok {
				actFailure = f.Details
			}
		}
		if d, ok := actFailure.(provider.ApplicationDetails); !ok || d.Kind.Code != provider.AppActivityFailed || !strings.Contains(d.Message, "panicked") {
			t.Errorf("ActivityFailed details %#v, want an activity failure naming the panic", actFailure)
		}
		failure = e.failed("orchestration-panic")
		if d, ok := failure.(provider.ApplicationDetails); !ok || d.Kind.Code != provider.AppPanicked || !strings.Contains(d.Message, "orchestration boom") {
			t.Errorf("orchestration-panic failure %#v, want Panicked with the panic's value", failure)
		}
		// Started after both failures, on the same runtime.
		e.start("Healthy", "healthy", durable.Raw("healthy"))
		e.expectHealthy("healthy")
	})

	// duroxide's client has no duplicate check and neither has duradyn's:
	// a second start of a running or finished instance is accepted, and
	// the runtime ignores it. One execution runs, with the first input.
	t.Run("duplicate_start", func(t *testing.T) {
		e := newBadInputEnv(t)
		defs := []durable.Definition{
			durable.OrchestrationFunc("Dup", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				v, err := durable.WaitForEvent[durable.Raw](ctx, "go").Get(ctx)
				return in + "+" + string(v), err
			}),
		}
		// Both starts queued before any runtime runs: one batch.
		e.start("Dup", "dup-batched", durable.Raw("first"))
		e.start("Dup", "dup-batched", durable.Raw("second"))
		rt := e.runtime(defs)
		// The second start arrives while the instance runs.
		e.start("Dup", "dup-running", durable.Raw("first"))
		for _, id := range []string{"dup-batched", "dup-running"} {
			e.awaitSubscription(id, "go")
		}
		e.start("Dup", "dup-running", durable.Raw("second"))
		for _, id := range []string{"dup-batched", "dup-running"} {
			if err := e.c.RaiseEvent(e.ctx(), id, "go", durable.Raw("ok")); err != nil {
				t.Fatal(err)
			}
			if out := e.completed(id); out != "first+ok" {
				t.Errorf("%s: output %q, want first+ok", id, out)
			}
		}
		// A start of a finished instance changes nothing either. Once a
		// fetch has handed the runtime its turn, a graceful shutdown lets
		// that turn finish: an empty queue afterwards means it was
		// processed. (An empty queue before says less: a fetch's lock
		// hides the message before the fetch returns, and a fetch under
		// way when the shutdown begins gives the lock back.)
		e.start("Dup", "dup-running", durable.Raw("third"))
		e.waitFor("the third start handed to the runtime", func() bool { return e.fetched.handed("dup-running", "third") })
		if err := rt.Shutdown(e.ctx()); err != nil {
			t.Fatal(err)
		}
		e.awaitOrchestratorQueue(0)
		for _, id := range []string{"dup-batched", "dup-running"} {
			h := e.history(id)
			if n := runtimetest.Count(h, "OrchestrationStarted"); n != 1 || h[0].Kind.(provider.OrchestrationStarted).Input != "first" {
				t.Errorf("%s: history %v, want one start with the first input", id, runtimetest.EventTypes(h))
			}
			execs, err := e.c.ListExecutions(e.ctx(), id)
			if err != nil || len(execs) != 1 {
				t.Errorf("%s: executions %v (%v), want one", id, execs, err)
			}
			if st, err := e.c.Status(e.ctx(), id); err != nil || st.State != durable.StateCompleted || st.Output != "first+ok" {
				t.Errorf("%s: status %+v (%v), want completed with first+ok", id, st, err)
			}
		}
	})

	// An orchestration no runtime has is retried with backoff (no history
	// is written) until a runtime with its definition starts. The runtime
	// without it stops first, as in a deploy that replaces it: while both
	// run, each visibility of the instance goes to whichever wins the
	// race for it, and every attempt the old one takes counts towards
	// MaxAttempts (the contract's abandon of an unregistered turn), so
	// the instance may be poisoned before the new one gets it (it was, at
	// 11 attempts, in one full run of the suite).
	t.Run("unregistered_then_registered", func(t *testing.T) {
		e := newBadInputEnv(t)
		logs := &badInputLogCounter{msg: "orchestration not registered; retrying later"}
		old := e.runtime(badInputHealthyDefs(), func(o *durable.Options) {
			o.Logger = slog.New(logs)
			// Slow enough that MaxAttempts is far away while the test
			// waits for the first attempts.
			o.UnregisteredBackoff = durable.UnregisteredBackoff{Base: 100 * time.Millisecond, Max: time.Second}
		})
		e.start("Later", "later", durable.Raw("in"))
		e.start("Healthy", "healthy", durable.Raw("healthy"))
		e.expectHealthy("healthy")
		e.waitFor("two unregistered attempts", func() bool { return logs.count() >= 2 })
		if h := e.history("later"); len(h) != 0 {
			t.Fatalf("unregistered instance has history %v", runtimetest.EventTypes(h))
		}
		if st, err := e.c.Status(e.ctx(), "later"); err != nil || st.State == durable.StateCompleted || st.State == durable.StateFailed {
			t.Fatalf("unregistered instance: %+v (%v), want not yet run", st, err)
		}
		if err := old.Shutdown(e.ctx()); err != nil {
			t.Fatal(err)
		}
		e.runtime([]durable.Definition{
			durable.OrchestrationFunc("Later", func(_ *durable.OrchestrationContext, in string) (string, error) { return "ran:" + in, nil }),
		})
		if out := e.completed("later"); out != "ran:in" {
			t.Errorf("later: output %q, want ran:in", out)
		}
	})
}

// awaitSubscription waits until id waits for the event name.
func (e *badInputEnv) awaitSubscription(id, name string) {
	e.t.Helper()
	if err := e.c.WaitForSubscription(e.ctx(), id, name); err != nil {
		e.t.Fatalf("waiting for %s to wait for %s: %v", id, name, err)
	}
}

// awaitOrchestratorQueue waits until the orchestrator queue holds n
// unlocked messages.
func (e *badInputEnv) awaitOrchestratorQueue(n int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d unlocked orchestrator messages", n), func() bool {
		d, err := e.c.QueueDepths(e.ctx())
		if err != nil {
			e.t.Fatal(err)
		}
		return d.OrchestratorQueue == n
	})
}

// waitFor polls cond every 20 ms until it holds.
func (e *badInputEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	ctx := e.ctx()
	for !cond() {
		select {
		case <-ctx.Done():
			e.t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// badInputLogCounter counts log records with one message.
type badInputLogCounter struct {
	msg string
	mu  sync.Mutex
	n   int
}

func (h *badInputLogCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *badInputLogCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *badInputLogCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *badInputLogCounter) WithGroup(string) slog.Handler      { return h }
func (h *badInputLogCounter) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}
