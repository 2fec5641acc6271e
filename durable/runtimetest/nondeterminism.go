package runtimetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

var nondeterminismTests = []Test{
	{Name: "code_swap_triggers_nondeterminism", Run: ndCodeSwapTriggersNondeterminism},
	{Name: "completion_kind_mismatch_triggers_nondeterminism", Run: func(h *H) {
		const id = "inst-mismatch"
		h.Serve(durable.OrchestrationFunc("KindMismatchTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// duroxide's timer lasts 1 s; a long one cannot fire before the
			// injected completion on a loaded machine.
			if err := ctx.Sleep(time.Hour); err != nil {
				return "", err
			}
			return "timer_completed", nil
		}))
		h.Start("KindMismatchTest", id, durable.Raw(""))
		timer := h.AwaitEvent(id, "TimerCreated")
		// An ActivityCompleted for the timer's id: the wrong completion kind.
		ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: timer.EventID, Result: "wrong_kind_result"})
		ndExpectNondeterminism(h, id, "kind mismatch", "timer", "activity")
	}},
	{Name: "unexpected_completion_id_triggers_nondeterminism", Run: func(h *H) {
		const id = "inst-unexpected"
		h.Serve(ndWaitOrch("UnexpectedIdTest", "test_event", "external_completed"))
		h.Start("UnexpectedIdTest", id, durable.Raw(""))
		h.AwaitEvent(id, "ExternalSubscribed")
		ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: 999, Result: "unexpected_result"})
		ndExpectNondeterminism(h, id, "no matching schedule", "999")
	}},
	{Name: "unexpected_timer_completion_triggers_nondeterminism", Run: func(h *H) {
		const id = "inst-timer"
		h.Serve(ndWaitOrch("TimerTest", "test", "done"))
		h.Start("TimerTest", id, durable.Raw(""))
		h.AwaitEvent(id, "ExternalSubscribed")
		ndInject(h, provider.TimerFiredItem{Instance: id, ExecutionID: 1, ID: 123, FireAtMs: 0})
		ndExpectNondeterminism(h, id, "timer", "123")
	}},
	{Name: "continue_as_new_with_unconsumed_completion_triggers_nondeterminism", Run: func(h *H) {
		const id = "inst-can-nondet"
		h.Serve(
			ndBlockingActivity("MyActivity"),
			durable.OrchestrationFunc("CanNondeterminism", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				if in != "0" {
					return "final:iteration_" + in, nil
				}
				// The activity is scheduled and never awaited.
				durable.CallActivity[durable.Raw](ctx, "MyActivity", durable.Raw("test_input"))
				if _, err := durable.WaitForEvent[durable.Raw](ctx, "proceed_signal").Get(ctx); err != nil {
					return "", err
				}
				return "", ctx.ContinueAsNew(durable.Raw("1"))
			}),
		)
		h.Start("CanNondeterminism", id, durable.Raw("0"))
		h.WaitFor("the proceed_signal subscription", func() bool {
			for _, ev := range h.history(id) {
				if s, ok := ev.Kind.(provider.ExternalSubscribed); ok && s.Name == "proceed_signal" {
					return true
				}
			}
			return false
		})
		// The completion is queued before the signal, so it is processed
		// no later than the signal (duroxide sleeps 100 ms in between). Its
		// id 1 is the OrchestrationStarted event, not a schedule.
		ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: 1, Result: "activity_completed"})
		if err := h.Client.RaiseEvent(h.Ctx(), id, "proceed_signal", durable.Raw("go")); err != nil {
			h.Fatal(err)
		}
		ndExpectNondeterminism(h, id)
		if n := Count(h.History(id), "OrchestrationContinuedAsNew"); n != 0 {
			h.Errorf("history %v: continued as new despite the unmatched completion", EventTypes(h.History(id)))
		}
	}},
	{Name: "execution_id_filtering_prevents_cross_execution_completions", Run: func(h *H) {
		// duroxide's test is a placeholder pointing at its continue-as-new
		// tests. Its intent, checked here: after a continue-as-new, a
		// completion addressed to the previous execution's pending activity
		// is filtered out rather than causing nondeterminism.
		const id = "inst-exec-filter"
		h.Serve(
			ndBlockingActivity("Pending"),
			durable.OrchestrationFunc("ExecFilterTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				if in == "0" {
					durable.CallActivity[durable.Raw](ctx, "Pending", durable.Raw("x"))
					return "", ctx.ContinueAsNew(durable.Raw("1"))
				}
				v, err := durable.WaitForEvent[durable.Raw](ctx, "go").Get(ctx)
				return "done:" + string(v), err
			}),
		)
		h.Start("ExecFilterTest", id, durable.Raw("0"))
		h.WaitFor("the second execution's subscription", func() bool {
			hist := h.history(id)
			return len(hist) > 0 && hist[0].ExecutionID == 2 && Count(hist, "ExternalSubscribed") == 1
		})
		var scheduled uint64
		for _, ev := range executionHistory(h, id, 1) {
			if _, ok := ev.Kind.(provider.ActivityScheduled); ok {
				scheduled = ev.EventID
			}
		}
		if scheduled == 0 {
			h.Fatalf("execution 1 %v: no ActivityScheduled", EventTypes(executionHistory(h, id, 1)))
		}
		// The previous execution's activity completes now, addressed to
		// execution 1; in execution 2 the same id is a schedule too.
		ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: scheduled, Result: "stale"})
		if err := h.Client.RaiseEvent(h.Ctx(), id, "go", durable.Raw("ok")); err != nil {
			h.Fatal(err)
		}
		if out := h.Completed(id); out != "done:ok" {
			h.Fatalf("output %q, want done:ok", out)
		}
		for exec := uint64(1); exec <= 2; exec++ {
			if hist := executionHistory(h, id, exec); Count(hist, "ActivityCompleted") != 0 {
				h.Errorf("execution %d %v: the cross-execution completion was applied", exec, EventTypes(hist))
			}
		}
	}},
	{Name: "execution_id_filtering_without_continue_as_new_triggers_nondeterminism", Run: func(h *H) {
		// Despite its name, duroxide's test asserts that a completion for an
		// execution that does not exist is filtered out and the instance
		// completes normally. duroxide enqueues it right after the start
		// while the runtime runs; here it is queued before the runtime
		// starts, so it is in the first turn's batch with the start.
		const id = "inst-exec-id-no-can"
		h.Start("ExecIdNoCanTest", id, durable.Raw(""))
		ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 999, ID: 1, Result: "different execution result"})
		h.Serve(
			durable.ActivityFunc("TestActivity", func(context.Context, string) (string, error) { return "activity result", nil }),
			durable.OrchestrationFunc("ExecIdNoCanTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				ctx.Logger().Info("scheduling activity")
				v, err := durable.CallActivity[durable.Raw](ctx, "TestActivity", durable.Raw("input")).Get(ctx)
				ctx.Logger().Info("got result, completing")
				return string(v), err
			}),
		)
		if out := h.Completed(id); out != "activity result" {
			h.Fatalf("output %q, want the activity's result", out)
		}
		hist := h.History(id)
		if n := Count(hist, "ActivityCompleted"); n != 1 {
			h.Fatalf("history %v: %d ActivityCompleted, want only the real one", EventTypes(hist), n)
		}
		for _, ev := range hist {
			if c, ok := ev.Kind.(provider.ActivityCompleted); ok && c.Result != "activity result" {
				h.Errorf("recorded completion %q, want the activity's", c.Result)
			}
		}
	}},
	{Name: "duplicate_external_events_are_handled_gracefully", Run: func(h *H) {
		const id = "inst-duplicate-external"
		h.Serve(durable.OrchestrationFunc("DuplicateExternalTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.Logger().Info("waiting for external event")
			v, err := durable.WaitForEvent[durable.Raw](ctx, "test_signal").Get(ctx)
			return string(v), err
		}))
		h.Start("DuplicateExternalTest", id, durable.Raw(""))
		h.AwaitSubscription(id, "test_signal")
		for range 2 {
			if err := h.Client.RaiseEvent(h.Ctx(), id, "test_signal", durable.Raw("first")); err != nil {
				h.Fatal(err)
			}
		}
		if out := h.Completed(id); out != "first" {
			h.Fatalf("output %q, want first", out)
		}
	}},
}

// ndCodeSwapTriggersNondeterminism runs code A until its activity is
// scheduled, stops that runtime, and starts one with code B under the same
// name and version: the instance fails with nondeterminism at its next turn
// while a new instance on B's runtime runs B and completes.
func ndCodeSwapTriggersNondeterminism(h *H) {
	const id = "inst-swap"
	activities := []durable.Definition{
		ndBlockingActivity("A1"),
		durable.ActivityFunc("B1", func(_ context.Context, in string) (string, error) {
			return fmt.Sprintf("B1:{%s}", in), nil
		}),
	}
	swap := func(activity, in string) durable.Definition {
		return durable.OrchestrationFunc("SwapTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v, err := durable.CallActivity[durable.Raw](ctx, activity, durable.Raw(in)).Get(ctx)
			return string(v), err
		})
	}
	rtA := h.Runtime(h.Registry(append(activities, swap("A1", "foo"))...))
	h.Start("SwapTest", id, durable.Raw(""))
	var a1 uint64
	h.WaitFor("A1's schedule", func() bool {
		for _, ev := range h.history(id) {
			if s, ok := ev.Kind.(provider.ActivityScheduled); ok && s.Name == "A1" {
				a1 = ev.EventID
				return true
			}
		}
		return false
	})
	shutdownRuntime(h, rtA)
	h.Runtime(h.Registry(append(activities, swap("B1", "bar"))...))
	// A valid completion for A1's schedule wakes the instance (A1 itself
	// never completes); the replay then meets A1's schedule where code B
	// emits B1.
	ndInject(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: a1, Result: "poke"})
	msg := ndExpectNondeterminism(h, id)
	if !strings.Contains(msg, "A1") || !strings.Contains(msg, "B1") {
		h.Errorf("message %q does not name both activities", msg)
	}
	// The runtime keeps serving: a new instance runs code B to completion.
	h.Start("SwapTest", "inst-swap-2", durable.Raw(""))
	if out := h.Completed("inst-swap-2"); out != "B1:{bar}" {
		h.Fatalf("second instance output %q, want B1:{bar}", out)
	}
}

// ndWaitOrch returns an orchestration that waits for event and returns out.
func ndWaitOrch(name, event, out string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.WaitForEvent[durable.Raw](ctx, event).Get(ctx); err != nil {
			return "", err
		}
		return out, nil
	})
}

// ndBlockingActivity returns an activity that never completes on its own:
// it returns when its context is cancelled (cancellation or shutdown).
func ndBlockingActivity(name string) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
}

// ndInject puts item on the orchestrator queue, visible now.
func ndInject(h *H, item provider.WorkItem) {
	h.Helper()
	if err := h.Direct().EnqueueForOrchestrator(h.Ctx(), item, 0); err != nil {
		h.Fatalf("enqueue %s: %v", item.Kind(), err)
	}
}

// ndExpectNondeterminism waits for id to fail with a nondeterminism error
// whose message holds each of parts, and returns the message.
func ndExpectNondeterminism(h *H, id string, parts ...string) string {
	h.Helper()
	failure := h.Failed(id)
	d, ok := failure.(provider.ConfigurationDetails)
	if !ok || d.Kind != provider.ConfigNondeterminism || d.Message == nil {
		h.Fatalf("%s failed with %#v, want a nondeterminism error", id, failure)
	}
	if dm := failure.DisplayMessage(); !strings.HasPrefix(dm, "nondeterministic: ") {
		h.Errorf("display message %q, want nondeterministic: ...", dm)
	}
	for _, p := range parts {
		if !strings.Contains(*d.Message, p) {
			h.Errorf("message %q does not contain %q", *d.Message, p)
		}
	}
	return *d.Message
}
