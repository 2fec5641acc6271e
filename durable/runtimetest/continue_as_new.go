package runtimetest

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

var continueAsNewTests = []Test{
	{Name: "continue_as_new_multiexec", Run: func(h *H) {
		const id = "inst-can-1"
		h.Serve(counterOrch("Counter"))
		h.Start("Counter", id, durable.Raw("0"))
		if out := h.Completed(id); out != "done:2" {
			h.Fatalf("output %q", out)
		}
		checkExecutions(h, id, 3)
		// Read returns the latest execution's history.
		if cur, latest := h.History(id), executionHistory(h, id, 3); !reflect.DeepEqual(cur, latest) {
			h.Fatalf("current history %v differs from execution 3's %v", EventTypes(cur), EventTypes(latest))
		}
		for exec, in := range []string{"0", "1", "2"} {
			hist := executionHistory(h, id, uint64(exec+1))
			started := ofKind[provider.OrchestrationStarted](hist)
			if len(started) != 1 || started[0].Kind.(provider.OrchestrationStarted).Input != in {
				h.Errorf("execution %d: started %+v, want input %q", exec+1, started, in)
			}
			can := ofKind[provider.OrchestrationContinuedAsNew](hist)
			completed := ofKind[provider.OrchestrationCompleted](hist)
			if exec < 2 {
				if len(can) != 1 || can[0].Kind.(provider.OrchestrationContinuedAsNew).Input != strconv.Itoa(exec+1) || len(completed) != 0 {
					h.Errorf("execution %d: %v, want continued as new with input %d", exec+1, EventTypes(hist), exec+1)
				}
			} else if len(completed) != 1 || completed[0].Kind.(provider.OrchestrationCompleted).Output != "done:2" {
				h.Errorf("execution 3: %v, want completed with done:2", EventTypes(hist))
			}
		}
	}},
	{Name: "continue_as_new_event_routes_to_latest", Run: func(h *H) {
		const id = "inst-can-evt"
		h.Serve(evtCANOrch("EvtCAN"))
		h.Start("EvtCAN", id, durable.Raw("start"))
		h.AwaitSubscription(id, "Go") // in the second execution: the first waits for nothing
		if err := h.Client.RaiseEvent(h.Ctx(), id, "Go", durable.Raw("ok")); err != nil {
			h.Fatal(err)
		}
		if out := h.Completed(id); out != "ok" {
			h.Fatalf("output %q", out)
		}
		e1, e2 := executionHistory(h, id, 1), executionHistory(h, id, 2)
		if Count(e1, "OrchestrationContinuedAsNew") != 1 || Count(e1, "ExternalEvent") != 0 {
			h.Errorf("execution 1 %v: want continued as new, no event", EventTypes(e1))
		}
		if Count(e2, "ExternalSubscribed") != 1 || Count(e2, "ExternalEvent") != 1 {
			h.Errorf("execution 2 %v: want the subscription and the event", EventTypes(e2))
		}
		if cur := h.History(id); !reflect.DeepEqual(cur, e2) {
			h.Fatalf("current history %v differs from execution 2's", EventTypes(cur))
		}
	}},
	{Name: "continue_as_new_event_drop_then_process", Run: func(h *H) {
		// duroxide's test raises "early" 50 ms after the start, hoping to land
		// between the continue-as-new and the new execution's subscription.
		// Here that window is held open: the first runtime has only version
		// 1.0.0 and the first execution continues as 2.0.0, so the new
		// execution's start stays queued (unregistered). Once that runtime
		// stops, the test locks the instance itself, raises "early" and
		// releases the lock: a runtime with 2.0.0 then gets both messages in
		// one batch, and records "early" before the subscription exists.
		const id = "inst-can-evt-drop"
		v1 := evtCANOrch("EvtDropThenProcess", durable.Version("1.0.0"))
		v2 := evtCANOrch("EvtDropThenProcess", durable.Version("2.0.0"))
		rt := h.Runtime(h.Registry(v1))
		h.Start("EvtDropThenProcess", id, durable.Raw("start"), durable.Version("1.0.0"))
		h.AwaitEvent(id, "OrchestrationContinuedAsNew")
		shutdownRuntime(h, rt)
		// The runtime abandoned the start with a backoff, and a provider
		// that does not long-poll answers at once: fetch until it shows.
		var item *provider.OrchestrationItem
		h.WaitFor("the queued continue-as-new", func() bool {
			var err error
			item, err = h.Direct().FetchOrchestrationItem(h.Ctx(), 30*time.Second, time.Second, nil)
			if err != nil {
				h.Fatalf("fetch the queued continue-as-new: %v", err)
			}
			return item != nil
		})
		if item.Instance != id || len(item.Messages) != 1 {
			h.Fatalf("fetch the queued continue-as-new: %+v", item)
		}
		if _, ok := item.Messages[0].(provider.ContinueAsNewItem); !ok {
			h.Fatalf("queued %T, want the continue-as-new", item.Messages[0])
		}
		if err := h.Client.RaiseEvent(h.Ctx(), id, "Go", durable.Raw("early")); err != nil {
			h.Fatal(err)
		}
		if err := h.Direct().AbandonOrchestrationItem(h.Ctx(), item.LockToken, 0, true); err != nil {
			h.Fatal(err)
		}
		h.Runtime(h.Registry(v1, v2))
		h.AwaitSubscription(id, "Go") // in the second execution, after "early" was dropped
		if err := h.Client.RaiseEvent(h.Ctx(), id, "Go", durable.Raw("late")); err != nil {
			h.Fatal(err)
		}
		if out := h.Completed(id); out != "late" {
			h.Fatalf("output %q, want late", out)
		}
		e2 := executionHistory(h, id, 2)
		subs := ofKind[provider.ExternalSubscribed](e2)
		events := ofKind[provider.ExternalEvent](e2)
		if len(subs) != 1 || len(events) != 2 || events[0].Kind.(provider.ExternalEvent).Data != "early" ||
			events[0].EventID > subs[0].EventID || events[1].Kind.(provider.ExternalEvent).Data != "late" {
			h.Errorf("execution 2 %v: want early recorded before the subscription, then late", EventTypes(e2))
		}
		if e1 := executionHistory(h, id, 1); Count(e1, "ExternalEvent") != 0 {
			h.Errorf("execution 1 %v has an event", EventTypes(e1))
		}
	}},
	{Name: "event_drop_then_retry_after_subscribe", Run: func(h *H) {
		// duroxide's test raises "Data" 20 ms after the start, during the
		// orchestration's first timer. Here it is raised before any runtime
		// runs, so it is recorded in the first turn, before the subscription.
		const id = "inst-drop-retry"
		h.Start("EvtDropRetry", id, durable.Raw("x"))
		if err := h.Client.RaiseEvent(h.Ctx(), id, "Data", durable.Raw("early")); err != nil {
			h.Fatal(err)
		}
		h.Serve(lateSubscriberOrch("EvtDropRetry", "Data", 100*time.Millisecond, 100*time.Millisecond))
		if out := h.Completed(id); out != "early-event-dropped" {
			h.Fatalf("output %q, want early-event-dropped", out)
		}
		// The early event is in history (audit trail) but was not delivered.
		if n := Count(h.History(id), "ExternalEvent"); n != 1 {
			h.Fatalf("%d ExternalEvent, want the early one recorded", n)
		}
	}},
	{Name: "old_execution_completions_are_ignored", Run: func(h *H) {
		injectStaleCompletion(h, "inst-exec-test", 0, 999, "old_execution_result")
	}},
	{Name: "future_execution_completions_are_ignored", Run: func(h *H) {
		injectStaleCompletion(h, "inst-future", 999, 1, "future_completion")
	}},
	{Name: "continue_as_new_without_await", Run: func(h *H) {
		// duroxide records continue_as_new's action before its future is
		// awaited; in Go ContinueAsNew records it at the call and the
		// orchestration returns the error it gives.
		const id = "inst-can-no-await"
		h.Serve(counterOrch("CANNoAwait"))
		h.Start("CANNoAwait", id, durable.Raw("0"))
		if out := h.Completed(id); out != "done:2" {
			h.Fatalf("output %q", out)
		}
		checkExecutions(h, id, 3)
	}},
}

// counterOrch continues as new with n+1 until n is 2, then completes with
// "done:2".
func counterOrch(name string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 2 {
			ctx.Logger().Info(fmt.Sprintf("counter exec n=%d -> continue as new", n))
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		ctx.Logger().Info(fmt.Sprintf("counter exec n=%d -> complete", n))
		return fmt.Sprintf("done:%d", n), nil
	})
}

// evtCANOrch continues as new on input "start"; on "wait" it returns the
// first "Go" event. A version set on the definition is also the version
// the first execution continues as, bumped to 2.0.0 from 1.0.0.
func evtCANOrch(name string, opts ...durable.Option) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		switch in {
		case "start":
			var canOpts []durable.Option
			if ctx.Version() == "1.0.0" && len(opts) > 0 {
				canOpts = append(canOpts, durable.Version("2.0.0"))
			}
			return "", ctx.ContinueAsNew(durable.Raw("wait"), canOpts...)
		case "wait":
			v, err := durable.WaitForEvent[durable.Raw](ctx, "Go").Get(ctx)
			return string(v), err
		}
		return in, nil
	}, opts...)
}

// lateSubscriberOrch sleeps for delay, then waits up to timeout for event
// and returns its data, or "early-event-dropped".
func lateSubscriberOrch(name, event string, delay, timeout time.Duration) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(delay); err != nil {
			return "", err
		}
		wait := durable.WaitForEvent[durable.Raw](ctx, event)
		timer := ctx.CreateTimer(timeout)
		if durable.Race(ctx, wait, timer) == 0 {
			v, err := wait.Get(ctx)
			return string(v), err
		}
		return "early-event-dropped", nil
	})
}

// injectStaleCompletion enqueues an activity completion for another
// execution of a waiting instance and checks it is dropped.
func injectStaleCompletion(h *H, id string, execution, activityID uint64, result string) {
	h.Helper()
	h.Serve(durable.OrchestrationFunc("ExecutionIdTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.WaitForEvent[durable.Raw](ctx, "continue_signal").Get(ctx); err != nil {
			return "", err
		}
		return "orchestration_complete", nil
	}))
	h.Start("ExecutionIdTest", id, durable.Raw(""))
	h.AwaitSubscription(id, "continue_signal")
	err := h.Direct().EnqueueForOrchestrator(h.Ctx(), provider.ActivityCompletedItem{Instance: id, ExecutionID: execution, ID: activityID, Result: result}, 0)
	if err != nil {
		h.Fatal(err)
	}
	// duroxide's test sleeps, then reads history; here the event raised after
	// the completion is processed with or after it, and ends the instance.
	if err := h.Client.RaiseEvent(h.Ctx(), id, "continue_signal", durable.Raw("go")); err != nil {
		h.Fatal(err)
	}
	if out := h.Completed(id); out != "orchestration_complete" {
		h.Fatalf("output %q", out)
	}
	if n := Count(h.History(id), "ActivityCompleted"); n != 0 {
		h.Fatalf("history %v: the completion for execution %d was not ignored", EventTypes(h.History(id)), execution)
	}
}

// executionHistory reads one execution's history.
func executionHistory(h *H, id string, execution uint64) []provider.Event {
	h.Helper()
	hist, err := h.Direct().ReadWithExecution(h.Ctx(), id, execution)
	if err != nil {
		h.Fatalf("read %s execution %d: %v", id, execution, err)
	}
	return hist
}

// checkExecutions checks that id has executions 1..n, through the
// management API when the provider has one, else by reading each.
func checkExecutions(h *H, id string, n uint64) {
	h.Helper()
	execs, err := h.Client.ListExecutions(h.Ctx(), id)
	if errors.Is(err, durable.ErrManagementNotAvailable) {
		for e := uint64(1); e <= n; e++ {
			if len(executionHistory(h, id, e)) == 0 {
				h.Fatalf("execution %d has no history", e)
			}
		}
		return
	}
	if err != nil {
		h.Fatal(err)
	}
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !reflect.DeepEqual(execs, want) {
		h.Fatalf("executions %v, want %v", execs, want)
	}
}
