package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

var cancellationTests = []Test{
	{"cancel_parent_down_propagates_to_child", cancelParentDownPropagatesToChild},
	{"cancel_after_completion_is_noop", cancelAfterCompletionIsNoop},
	{"cancel_child_directly_signals_parent", cancelChildDirectlySignalsParent},
	{"cancel_continue_as_new_second_exec", cancelContinueAsNewSecondExec},
	{"orchestration_completes_before_activity_finishes", orchestrationCompletesBeforeActivityFinishes},
	{"orchestration_fails_before_activity_finishes", orchestrationFailsBeforeActivityFinishes},
	{"cancel_parent_with_multiple_children", cancelParentWithMultipleChildren},
	{"activity_receives_cancellation_signal", activityReceivesCancellationSignal},
	{"select2_loser_activity_receives_cancellation_signal", select2LoserActivityReceivesCancellationSignal},
	{"activity_result_dropped_when_orchestration_cancelled", activityResultDroppedWhenOrchestrationCancelled},
	{"activity_skipped_when_orchestration_terminal_at_fetch", activitySkippedWhenOrchestrationTerminalAtFetch},
	{"activity_aborted_after_cancellation_grace", activityAbortedAfterCancellationGrace},
	{"cancel_nonexistent_instance_is_noop", cancelNonexistentInstanceIsNoop},
	{"multiple_cancel_calls_are_idempotent", multipleCancelCallsAreIdempotent},
	{"cancel_before_orchestration_starts", cancelBeforeOrchestrationStarts},
	{"explicit_drop_activity_triggers_cancellation", explicitDropActivityTriggersCancellation},
	{"activity_out_of_scope_triggers_cancellation", activityOutOfScopeTriggersCancellation},
	{"select2_loser_sub_orchestration_cancelled", select2LoserSubOrchestrationCancelled},
	{"select2_loser_sub_orchestration_explicit_id_cancelled", select2LoserSubOrchestrationExplicitIDCancelled},
	{"explicit_drop_sub_orchestration_cancelled", explicitDropSubOrchestrationCancelled},
	{"user_cancel_instance_and_dropped_future_both_enqueue_cancelinstance_for_child", userCancelAndDroppedFutureBothCancelChild},
	{"sub_orchestration_out_of_scope_cancelled", subOrchestrationOutOfScopeCancelled},
	{"positional_arrival_before_sub_outstanding", positionalArrivalBeforeSubOutstanding},
	{"cancelled_subscription_does_not_steal_future_event", cancelledSubscriptionDoesNotStealFutureEvent},
	{"positional_matching_fifo_without_cancellation", positionalMatchingFIFOWithoutCancellation},
	{"duplicate_external_events_not_deduplicated", duplicateExternalEventsNotDeduplicated},
}

// ---- shared by the Cancellation, ExternalEvents, CustomStatus and KV
// categories (prefixed cx to keep the package's namespace tidy).

// cxCancelled returns the reason of an application cancellation.
func cxCancelled(d provider.ErrorDetails) (string, bool) {
	app, ok := d.(provider.ApplicationDetails)
	if !ok || app.Kind.Code != provider.AppCancelled {
		return "", false
	}
	return app.Kind.Reason, true
}

// cxIsCancelledFailure reports whether ev is OrchestrationFailed with an
// application cancellation of reason (any reason when reason is "").
func cxIsCancelledFailure(ev provider.Event, reason string) bool {
	f, ok := ev.Kind.(provider.OrchestrationFailed)
	if !ok {
		return false
	}
	r, ok := cxCancelled(f.Details)
	return ok && (reason == "" || r == reason)
}

// cxAny reports whether some event satisfies pred.
func cxAny(events []provider.Event, pred func(provider.Event) bool) bool {
	for _, ev := range events {
		if pred(ev) {
			return true
		}
	}
	return false
}

// cxCount counts the events that satisfy pred.
func cxCount(events []provider.Event, pred func(provider.Event) bool) int {
	n := 0
	for _, ev := range events {
		if pred(ev) {
			n++
		}
	}
	return n
}

// cxWaitHistory waits until id's current history satisfies cond and
// returns it.
func cxWaitHistory(h *H, id, what string, cond func([]provider.Event) bool) []provider.Event {
	h.Helper()
	var events []provider.Event
	h.WaitFor(what+" in "+id+"'s history", func() bool {
		events = h.history(id)
		return cond(events)
	})
	return events
}

// cxSubscriptions counts the positional or queue subscriptions to name.
func cxSubscriptions(events []provider.Event, name string) int {
	return cxCount(events, func(ev provider.Event) bool {
		switch k := ev.Kind.(type) {
		case provider.ExternalSubscribed:
			return k.Name == name
		case provider.QueueSubscribed:
			return k.Name == name
		}
		return false
	})
}

// cxAwaitSubs waits until id has at least n subscriptions (positional or
// queue) to name: the point from which a raised event is delivered.
func cxAwaitSubs(h *H, id, name string, n int) {
	h.Helper()
	cxWaitHistory(h, id, fmt.Sprintf("%d subscriptions to %q", n, name), func(events []provider.Event) bool {
		return cxSubscriptions(events, name) >= n
	})
}

// cxAwaitOrchestratorQueueEmpty waits until no unlocked orchestrator
// message is queued (needs the provider's management interface; without it
// it returns at once).
func cxAwaitOrchestratorQueueEmpty(h *H) {
	h.Helper()
	if _, ok := provider.AdminOf(h.P); !ok {
		return
	}
	// A lagging depth can read zero before it shows the message just
	// written: only a zero read once the lag bound has passed counts,
	// counted from a read begun after the write (a source may serve a
	// view as old as its previous read, as the fault injector's index-lag
	// model does, until a read after the write has dated a newer one).
	if d := h.f.Convergence; d > 0 {
		h.WaitFor("a queue-depth read after the write", func() bool {
			_, err := h.Client.QueueDepths(context.Background())
			return err == nil
		})
		select {
		case <-time.After(d):
		case <-h.Ctx().Done():
		}
	}
	h.WaitFor("an empty orchestrator queue", func() bool {
		d, err := h.Client.QueueDepths(context.Background())
		return err == nil && d.OrchestratorQueue == 0
	})
}

// cxRecv waits for ch to deliver or close.
func cxRecv[T any](h *H, ch <-chan T, what string) T {
	h.Helper()
	select {
	case v := <-ch:
		return v
	case <-h.Ctx().Done():
		h.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// cxSignal is a channel closed once.
type cxSignal struct {
	once sync.Once
	ch   chan struct{}
}

func newCxSignal() *cxSignal { return &cxSignal{ch: make(chan struct{})} }

func (s *cxSignal) fire()       { s.once.Do(func() { close(s.ch) }) }
func (s *cxSignal) fired() bool { return cxClosed(s.ch) }
func (s *cxSignal) wait(h *H, what string) {
	h.Helper()
	cxRecv(h, s.ch, what)
}

func cxClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// cxCancellableActivity is an activity that reports its start and then
// blocks until its context is cancelled; it reports a cancellation whose
// cause is durable.ErrActivityCancelled (lock lost or stolen).
func cxCancellableActivity(name string, started, cancelled *cxSignal) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, _ string) (string, error) {
		started.fire()
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), durable.ErrActivityCancelled) {
				cancelled.fire()
			}
			return "cancelled", nil
		case <-time.After(30 * time.Second):
			return "timeout", nil
		}
	})
}

// cxWaitForever blocks the orchestration on an event nobody raises.
func cxWaitForever(ctx *durable.OrchestrationContext, name string) {
	_, _ = durable.WaitForEvent[durable.Raw](ctx, name).Get(ctx)
}

// cxChildOf returns the full instance id of id's first sub-orchestration.
func cxChildOf(h *H, id string) string {
	h.Helper()
	for _, ev := range h.History(id) {
		if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
			if strings.HasPrefix(k.Instance, "sub::") {
				return id + "::" + k.Instance
			}
			return k.Instance
		}
	}
	h.Fatalf("%s scheduled no sub-orchestration: %v", id, EventTypes(h.History(id)))
	return ""
}

// cxExpectCancelled waits for id to fail with an application cancellation
// and returns its reason.
func cxExpectCancelled(h *H, id string) string {
	h.Helper()
	d := h.Failed(id)
	r, ok := cxCancelled(d)
	if !ok {
		h.Fatalf("%s failed with %q; want a cancellation", id, d.DisplayMessage())
	}
	return r
}

// cxFastCancel are options for tests that watch activity cancellation: a
// short worker lock so a lost lock is noticed within about a second.
func cxFastCancel(grace time.Duration) func(*durable.Options) {
	return func(o *durable.Options) {
		o.WorkerLockTimeout = 2 * time.Second
		o.WorkerLockRenewalBuffer = 500 * time.Millisecond
		o.ActivityCancellationGracePeriod = grace
	}
}

// ---- tests

func cancelParentDownPropagatesToChild(h *H) {
	h.Serve(
		durable.OrchestrationFunc("Child", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			cxWaitForever(ctx, "Go")
			return "done", nil
		}),
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = durable.CallSubOrchestration[durable.Raw](ctx, "Child", durable.Raw("seed")).Get(ctx)
			return "parent_done", nil
		}),
	)
	h.Start("Parent", "inst-cancel-1", durable.Raw(""))
	// The child exists and waits: cancel the parent now.
	h.AwaitEvent("inst-cancel-1::sub::2", "ExternalSubscribed")
	if err := h.Client.CancelInstance(h.Ctx(), "inst-cancel-1", "by_test"); err != nil {
		h.Fatal(err)
	}
	if r := cxExpectCancelled(h, "inst-cancel-1"); r != "by_test" {
		h.Fatalf("parent cancelled with %q; want by_test", r)
	}
	if Count(h.History("inst-cancel-1"), "OrchestrationCancelRequested") == 0 {
		h.Fatal("missing cancel requested event for parent")
	}
	ids, err := h.Client.ListInstances(h.Ctx())
	if err != nil {
		h.Fatal(err)
	}
	var children []string
	for _, id := range ids {
		if strings.HasPrefix(id, "inst-cancel-1::") {
			children = append(children, id)
		}
	}
	if len(children) == 0 {
		h.Fatal("expected a child instance")
	}
	for _, child := range children {
		cxWaitHistory(h, child, "cancel requested and failure \"parent canceled\"", func(events []provider.Event) bool {
			return Count(events, "OrchestrationCancelRequested") > 0 &&
				cxAny(events, func(ev provider.Event) bool { return cxIsCancelledFailure(ev, "parent canceled") })
		})
	}
}

func cancelAfterCompletionIsNoop(h *H) {
	h.Serve(durable.OrchestrationFunc("Quick", func(*durable.OrchestrationContext, string) (string, error) {
		return "ok", nil
	}))
	h.Start("Quick", "inst-cancel-noop", durable.Raw(""))
	if out := h.Completed("inst-cancel-noop"); out != "ok" {
		h.Fatalf("output %q", out)
	}
	if err := h.Client.CancelInstance(h.Ctx(), "inst-cancel-noop", "late"); err != nil {
		h.Fatal(err)
	}
	// The late cancel is consumed without effect.
	h.AwaitConsumed("inst-cancel-noop", "the late cancel", 1, isKind[provider.CancelInstanceItem])
	hist := h.History("inst-cancel-noop")
	if !cxAny(hist, func(ev provider.Event) bool {
		c, ok := ev.Kind.(provider.OrchestrationCompleted)
		return ok && c.Output == "ok"
	}) {
		h.Fatalf("no OrchestrationCompleted(ok): %v", EventTypes(hist))
	}
	if Count(hist, "OrchestrationCancelRequested") != 0 {
		h.Fatalf("cancel recorded after completion: %v", EventTypes(hist))
	}
	h.CheckHistory("inst-cancel-noop")
}

func cancelChildDirectlySignalsParent(h *H) {
	h.Serve(
		durable.OrchestrationFunc("ChildD", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// Waits forever until cancelled.
			cxWaitForever(ctx, "never")
			return "", errors.New("unreachable")
		}),
		durable.OrchestrationFunc("ParentD", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v, err := durable.CallSubOrchestration[durable.Raw](ctx, "ChildD", durable.Raw("x")).Get(ctx)
			if err != nil {
				return "child_err:" + err.Error(), nil
			}
			return "ok:" + string(v), nil
		}),
	)
	h.Start("ParentD", "inst-chdirect", durable.Raw(""))
	child := "inst-chdirect::sub::2" // event_id 2 (OrchestrationStarted is 1)
	h.AwaitEvent(child, "ExternalSubscribed")
	if err := h.Client.CancelInstance(h.Ctx(), child, "by_test_child"); err != nil {
		h.Fatal(err)
	}
	out := h.Completed("inst-chdirect")
	if !strings.HasPrefix(out, "child_err:canceled: by_test_child") {
		h.Fatalf("unexpected parent out: %s", out)
	}
	if !cxAny(h.History("inst-chdirect"), func(ev provider.Event) bool {
		f, ok := ev.Kind.(provider.SubOrchestrationFailed)
		if !ok || ev.SourceEventID == nil || *ev.SourceEventID != 2 {
			return false
		}
		r, ok := cxCancelled(f.Details)
		return ok && r == "by_test_child"
	}) {
		h.Fatalf("no SubOrchestrationFailed(source 2, Cancelled by_test_child): %v", EventTypes(h.History("inst-chdirect")))
	}
}

func cancelContinueAsNewSecondExec(h *H) {
	h.Serve(durable.OrchestrationFunc("CanCancel", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		switch in {
		case "start":
			return "", ctx.ContinueAsNew(durable.Raw("wait"))
		case "wait":
			cxWaitForever(ctx, "Go")
			return "done", nil
		}
		return in, nil
	}))
	h.Start("CanCancel", "inst-can-can", durable.Raw("start"))
	// The second execution parks on its wait.
	h.AwaitEvent("inst-can-can", "ExternalSubscribed")
	if err := h.Client.CancelInstance(h.Ctx(), "inst-can-can", "by_test_can"); err != nil {
		h.Fatal(err)
	}
	if r := cxExpectCancelled(h, "inst-can-can"); r != "by_test_can" {
		h.Fatalf("cancelled with %q; want by_test_can", r)
	}
	hist := h.History("inst-can-can")
	if hist[0].ExecutionID != 2 {
		h.Fatalf("cancelled execution %d; want 2", hist[0].ExecutionID)
	}
	if Count(hist, "OrchestrationCancelRequested") == 0 {
		h.Fatalf("no OrchestrationCancelRequested: %v", EventTypes(hist))
	}
}

// orchestrationEndsBeforeActivity runs an orchestration that schedules a
// slow activity, drops it (Rust: drop(future); Go: Cancel) and ends.
func orchestrationEndsBeforeActivity(h *H, name, id string, fail bool) []provider.Event {
	release := newCxSignal()
	h.Serve(
		durable.ActivityFunc("slow", func(ctx context.Context, _ string) (string, error) {
			select {
			case <-release.ch:
			case <-ctx.Done():
			}
			return "ok", nil
		}),
		durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			durable.CallActivity[durable.Raw](ctx, "slow", durable.Raw("")).Cancel()
			if fail {
				return "", errors.New("boom")
			}
			return "done", nil
		}),
	)
	h.Start(name, id, durable.Raw(""))
	st := h.Wait(id)
	// Let the activity (if it was fetched at all) finish; the terminal
	// history must not change.
	release.fire()
	h.AwaitActivitiesSettled(id)
	hist := h.History(id)
	if Count(hist, "ActivityCompleted") != 0 {
		h.Fatalf("activity completion recorded after the orchestration ended: %v", EventTypes(hist))
	}
	h.CheckHistory(id)
	if fail && st.State != durable.StateFailed || !fail && st.State != durable.StateCompleted {
		h.Fatalf("state %v", st.State)
	}
	return hist
}

func orchestrationCompletesBeforeActivityFinishes(h *H) {
	hist := orchestrationEndsBeforeActivity(h, "QuickDone", "inst-orch-done-first", false)
	if !cxAny(hist, func(ev provider.Event) bool {
		c, ok := ev.Kind.(provider.OrchestrationCompleted)
		return ok && c.Output == "done"
	}) {
		h.Fatalf("no OrchestrationCompleted(done): %v", EventTypes(hist))
	}
}

func orchestrationFailsBeforeActivityFinishes(h *H) {
	hist := orchestrationEndsBeforeActivity(h, "QuickFail", "inst-orch-fail-first", true)
	if !cxAny(hist, func(ev provider.Event) bool {
		f, ok := ev.Kind.(provider.OrchestrationFailed)
		if !ok {
			return false
		}
		app, ok := f.Details.(provider.ApplicationDetails)
		return ok && app.Kind.Code == provider.AppOrchestrationFailed && app.Message == "boom"
	}) {
		h.Fatalf("no OrchestrationFailed(OrchestrationFailed, boom): %v", EventTypes(hist))
	}
}

func cancelParentWithMultipleChildren(h *H) {
	h.Serve(
		durable.OrchestrationFunc("MultiChild", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			cxWaitForever(ctx, "Go")
			return "done", nil
		}),
		durable.OrchestrationFunc("MultiParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var fs []durable.Future[durable.Raw]
			for i := range 5 {
				fs = append(fs, durable.CallSubOrchestration[durable.Raw](ctx, "MultiChild", durable.Raw(fmt.Sprintf("input-%d", i))))
			}
			for _, f := range fs {
				if _, err := f.Get(ctx); err == nil || !strings.Contains(err.Error(), "canceled") {
					return "", errors.New("expected cancellation")
				}
			}
			return "parent_done", nil
		}),
	)
	h.Start("MultiParent", "inst-cancel-multi", durable.Raw(""))
	// Every child waits before the parent is cancelled.
	for i := range 5 {
		h.AwaitEvent(fmt.Sprintf("inst-cancel-multi::sub::%d", i+2), "ExternalSubscribed")
	}
	if err := h.Client.CancelInstance(h.Ctx(), "inst-cancel-multi", "multi_test"); err != nil {
		h.Fatal(err)
	}
	if r := cxExpectCancelled(h, "inst-cancel-multi"); r != "multi_test" {
		h.Fatalf("parent cancelled with %q; want multi_test", r)
	}
	if Count(h.History("inst-cancel-multi"), "OrchestrationCancelRequested") == 0 {
		h.Fatal("missing cancel requested event for parent")
	}
	ids, err := h.Client.ListInstances(h.Ctx())
	if err != nil {
		h.Fatal(err)
	}
	var children []string
	for _, id := range ids {
		if strings.HasPrefix(id, "inst-cancel-multi::") {
			children = append(children, id)
		}
	}
	if len(children) != 5 {
		h.Fatalf("expected 5 child instances, found %d (%v)", len(children), children)
	}
	for _, child := range children {
		cxWaitHistory(h, child, "cancel requested and failure \"parent canceled\"", func(events []provider.Event) bool {
			return Count(events, "OrchestrationCancelRequested") > 0 &&
				cxAny(events, func(ev provider.Event) bool { return cxIsCancelledFailure(ev, "parent canceled") })
		})
	}
}

func activityReceivesCancellationSignal(h *H) {
	started, cancelled := newCxSignal(), newCxSignal()
	h.Runtime(h.Registry(
		cxCancellableActivity("LongActivity", started, cancelled),
		durable.OrchestrationFunc("LongActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = durable.CallActivity[durable.Raw](ctx, "LongActivity", durable.Raw("input")).Get(ctx)
			return "done", nil
		}),
	), cxFastCancel(5*time.Second))
	h.Start("LongActivityOrch", "inst-activity-cancel", durable.Raw(""))
	started.wait(h, "the activity to start")
	if err := h.Client.CancelInstance(h.Ctx(), "inst-activity-cancel", "test_cancellation"); err != nil {
		h.Fatal(err)
	}
	cancelled.wait(h, "the activity to see its cancellation")
	if r := cxExpectCancelled(h, "inst-activity-cancel"); r != "test_cancellation" {
		h.Fatalf("cancelled with %q", r)
	}
}

func select2LoserActivityReceivesCancellationSignal(h *H) {
	started, cancelled := newCxSignal(), newCxSignal()
	h.Runtime(h.Registry(
		cxCancellableActivity("LongActivity", started, cancelled),
		durable.OrchestrationFunc("SelectLoserCancelOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			activity := durable.CallActivity[durable.Raw](ctx, "LongActivity", durable.Raw("input"))
			// duroxide races a 1 s timer; a wait raised by the test once the
			// activity runs makes the race's outcome independent of load.
			stop := durable.WaitForEvent[durable.Raw](ctx, "Stop")
			if durable.Race(ctx, activity, stop) != 1 {
				panic("activity should not win")
			}
			// Keep going to prove the orchestration is not terminal.
			if err := ctx.Sleep(50 * time.Millisecond); err != nil {
				return "", err
			}
			return "done", nil
		}),
	), func(o *durable.Options) {
		o.OrchestrationConcurrency, o.WorkerConcurrency = 1, 1
	}, cxFastCancel(2*time.Second))
	h.Start("SelectLoserCancelOrch", "inst-select2-loser-cancel", durable.Raw(""))
	started.wait(h, "the activity to start")
	h.AwaitSubscription("inst-select2-loser-cancel", "Stop")
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-select2-loser-cancel", "Stop", durable.Raw("")); err != nil {
		h.Fatal(err)
	}
	cancelled.wait(h, "the select2 loser activity to see its cancellation")
	if out := h.Completed("inst-select2-loser-cancel"); out != "done" {
		h.Fatalf("output %q", out)
	}
	hist := h.History("inst-select2-loser-cancel")
	var scheduled uint64
	for _, ev := range hist {
		if k, ok := ev.Kind.(provider.ActivityScheduled); ok && k.Name == "LongActivity" {
			scheduled = ev.EventID
		}
	}
	if scheduled == 0 {
		h.Fatal("LongActivity not scheduled")
	}
	if !cxAny(hist, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.ActivityCancelRequested)
		return ok && k.Reason == "dropped_future" && ev.SourceEventID != nil && *ev.SourceEventID == scheduled
	}) {
		h.Fatalf("no ActivityCancelRequested(source %d, dropped_future): %v", scheduled, EventTypes(hist))
	}
}

func activityResultDroppedWhenOrchestrationCancelled(h *H) {
	var completed atomic.Int32
	started, release := newCxSignal(), newCxSignal()
	h.Runtime(h.Registry(
		// Ignores its cancellation: completes once the test releases it.
		durable.ActivityFunc("SlowActivity", func(context.Context, string) (string, error) {
			started.fire()
			<-release.ch
			completed.Add(1)
			return "completed", nil
		}),
		durable.OrchestrationFunc("SlowActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = durable.CallActivity[durable.Raw](ctx, "SlowActivity", durable.Raw("input")).Get(ctx)
			return "done", nil
		}),
	), cxFastCancel(10*time.Second))
	h.Cleanup(release.fire) // before the runtime's shutdown
	h.Start("SlowActivityOrch", "inst-drop-result", durable.Raw(""))
	started.wait(h, "the activity to start")
	if err := h.Client.CancelInstance(h.Ctx(), "inst-drop-result", "cancel_during_activity"); err != nil {
		h.Fatal(err)
	}
	cxExpectCancelled(h, "inst-drop-result")
	release.fire()
	h.WaitFor("the activity to complete", func() bool { return completed.Load() > 0 })
	h.AwaitActivitiesSettled("inst-drop-result")
	hist := h.History("inst-drop-result")
	if Count(hist, "ActivityCompleted") != 0 {
		h.Fatalf("result of the cancelled orchestration's activity recorded: %v", EventTypes(hist))
	}
	h.CheckHistory("inst-drop-result")
}

func activitySkippedWhenOrchestrationTerminalAtFetch(h *H) {
	var ran1, ran2 atomic.Bool
	orch := durable.OrchestrationFunc("O", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_ = durable.CallActivity[durable.Raw](ctx, "A", durable.Raw("input")) // never awaited
		cxWaitForever(ctx, "Go")
		return "ok", nil
	})
	activity := func(ran *atomic.Bool) durable.Definition {
		return durable.ActivityFunc("A", func(context.Context, string) (string, error) {
			ran.Store(true)
			return "done", nil
		})
	}
	// Phase 1: orchestrator only. duroxide sets worker_concurrency 0; a
	// worker filter that accepts no activity is duradyn's equivalent.
	rt1 := h.Runtime(h.Registry(orch, activity(&ran1)), func(o *durable.Options) { o.WorkerTags = provider.NoTags() })
	h.Start("O", "inst-skip", durable.Raw(""))
	h.AwaitEvent("inst-skip", "ExternalSubscribed")
	if err := h.Client.CancelInstance(h.Ctx(), "inst-skip", "cancel"); err != nil {
		h.Fatal(err)
	}
	cxExpectCancelled(h, "inst-skip")
	if err := rt1.Shutdown(h.Ctx()); err != nil {
		h.Fatal(err)
	}
	if ran1.Load() {
		h.Fatal("activity ran without workers")
	}
	// Phase 2: workers. The activity of the terminal orchestration must not
	// run: the terminal turn removed it from the worker queue. A probe
	// activity completing on the same runtime proves its workers poll.
	probe := durable.ActivityFunc("Probe", func(context.Context, string) (string, error) { return "", nil })
	probeOrch := durable.OrchestrationFunc("ProbeOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := durable.CallActivity[durable.Raw](ctx, "Probe", durable.Raw("")).Get(ctx)
		return "probed", err
	})
	h.Runtime(h.Registry(orch, activity(&ran2), probe, probeOrch), cxFastCancel(time.Second))
	h.Start("ProbeOrch", "inst-skip-probe", durable.Raw(""))
	h.Completed("inst-skip-probe")
	if _, ok := provider.AdminOf(h.P); ok {
		// The terminal turn deleted the activity in phase 1. A depth that
		// lags its writes may show a deleted row for up to Convergence,
		// not longer (the probe can finish well within that): only a read
		// begun that long after a read that returned (which dates the
		// lagging source's view, as the fault injector's model does) and
		// still showing the row fails.
		var deadline time.Time
		for {
			began := time.Now()
			d, err := h.Client.QueueDepths(h.Ctx())
			if err != nil {
				h.Fatal(err)
			}
			if d.WorkerQueue == 0 {
				break
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(h.f.Convergence)
			} else if began.After(deadline) {
				h.Fatalf("worker queue holds %d items %v after the convergence bound; want the skipped activity gone", d.WorkerQueue, h.f.Convergence)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if ran2.Load() {
		h.Fatal("activity ran although its orchestration was terminal at fetch")
	}
	if Count(h.History("inst-skip"), "ActivityCompleted") != 0 {
		h.Fatal("activity completion recorded for a skipped activity")
	}
}

func activityAbortedAfterCancellationGrace(h *H) {
	var attempts atomic.Int32
	release := newCxSignal()
	h.Runtime(h.Registry(
		// Ignores cancellation and runs "long" (until the test ends).
		durable.ActivityFunc("Stubborn", func(context.Context, string) (string, error) {
			attempts.Add(1)
			<-release.ch
			return "done", nil
		}),
		durable.ActivityFunc("Fast", func(context.Context, string) (string, error) { return "fast", nil }),
		durable.OrchestrationFunc("StubbornOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, _ = durable.CallActivity[durable.Raw](ctx, "Stubborn", durable.Raw("input")).Get(ctx)
			return "ok", nil
		}),
		durable.OrchestrationFunc("FastOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v, err := durable.CallActivity[durable.Raw](ctx, "Fast", durable.Raw("")).Get(ctx)
			return string(v), err
		}),
	), func(o *durable.Options) { o.WorkerConcurrency = 1 }, cxFastCancel(500*time.Millisecond))
	h.Cleanup(release.fire) // before the runtime's shutdown
	h.Start("StubbornOrch", "inst-grace", durable.Raw(""))
	h.WaitFor("the activity to start", func() bool { return attempts.Load() == 1 })
	if err := h.Client.CancelInstance(h.Ctx(), "inst-grace", "cancel_now"); err != nil {
		h.Fatal(err)
	}
	cxExpectCancelled(h, "inst-grace")
	// duroxide checks elapsed time < the activity's 5 s; here the only worker
	// slot must be given up after the grace period while the stubborn
	// activity still runs: another activity then completes.
	h.Start("FastOrch", "inst-grace-next", durable.Raw(""))
	if out := h.Completed("inst-grace-next"); out != "fast" {
		h.Fatalf("output %q", out)
	}
	if release.fired() {
		h.Fatal("stubborn activity released early")
	}
	if n := attempts.Load(); n != 1 {
		h.Fatalf("activity ran %d times; want once", n)
	}
	if Count(h.History("inst-grace"), "ActivityCompleted") != 0 {
		h.Fatal("activity completion recorded after cancellation")
	}
}

func cancelNonexistentInstanceIsNoop(h *H) {
	h.Serve(durable.OrchestrationFunc("Dummy", func(*durable.OrchestrationContext, string) (string, error) {
		return "ok", nil
	}))
	if err := h.Client.CancelInstance(h.Ctx(), "does-not-exist", "test"); err != nil {
		h.Fatalf("cancelling a non-existent instance: %v", err)
	}
	// The runtime keeps serving other instances, and the cancel creates
	// nothing.
	h.Start("Dummy", "inst-dummy", durable.Raw(""))
	h.Completed("inst-dummy")
	st, err := h.Client.Status(h.Ctx(), "does-not-exist")
	if err != nil {
		h.Fatal(err)
	}
	if st.State != durable.StateNotFound {
		h.Fatalf("does-not-exist is %v", st.State)
	}
}

func multipleCancelCallsAreIdempotent(h *H) {
	h.Serve(durable.OrchestrationFunc("Waiter", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		cxWaitForever(ctx, "Go")
		return "done", nil
	}))
	h.Start("Waiter", "inst-multi-cancel", durable.Raw(""))
	h.AwaitEvent("inst-multi-cancel", "ExternalSubscribed")
	for i := range 5 {
		if err := h.Client.CancelInstance(h.Ctx(), "inst-multi-cancel", fmt.Sprintf("cancel-%d", i)); err != nil {
			h.Fatalf("cancel call %d: %v", i, err)
		}
	}
	cxExpectCancelled(h, "inst-multi-cancel")
	hist := h.History("inst-multi-cancel")
	if n := Count(hist, "OrchestrationCancelRequested"); n != 1 {
		h.Fatalf("%d CancelRequested events; want 1", n)
	}
	for _, ev := range hist {
		if k, ok := ev.Kind.(provider.OrchestrationCancelRequested); ok && k.Reason != "cancel-0" {
			h.Fatalf("cancel reason %q; want the first, cancel-0", k.Reason)
		}
	}
}

func cancelBeforeOrchestrationStarts(h *H) {
	// Enqueue the start and then the cancel before any runtime runs.
	h.Start("Early", "inst-early-cancel", durable.Raw("input"), durable.Version("1.0.0"))
	if err := h.Client.CancelInstance(h.Ctx(), "inst-early-cancel", "early_cancel"); err != nil {
		h.Fatal(err)
	}
	h.Serve(durable.OrchestrationFunc("Early", func(*durable.OrchestrationContext, string) (string, error) {
		return "done", nil
	}))
	if r := cxExpectCancelled(h, "inst-early-cancel"); r != "early_cancel" {
		h.Fatalf("cancelled with %q; want early_cancel", r)
	}
	if Count(h.History("inst-early-cancel"), "OrchestrationCompleted") != 0 {
		h.Fatal("orchestration completed although the cancel was enqueued after its start")
	}
}

// dropActivityTest schedules an activity, lets it start, then drops its
// future; the activity must see the cancellation and the orchestration go on.
func dropActivityTest(h *H, name, id, output string, orch func(*durable.OrchestrationContext) error) {
	started, cancelled := newCxSignal(), newCxSignal()
	h.Runtime(h.Registry(
		cxCancellableActivity("CancellableActivity", started, cancelled),
		durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if err := orch(ctx); err != nil {
				return "", err
			}
			return output, nil
		}),
	), func(o *durable.Options) {
		o.OrchestrationConcurrency, o.WorkerConcurrency = 1, 1
	}, cxFastCancel(2*time.Second))
	h.Start(name, id, durable.Raw(""))
	started.wait(h, "the activity to start")
	h.AwaitSubscription(id, "Drop")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Drop", durable.Raw("")); err != nil {
		h.Fatal(err)
	}
	cancelled.wait(h, "the dropped activity to see its cancellation")
	if out := h.Completed(id); out != output {
		h.Fatalf("output %q; want %q", out, output)
	}
}

func explicitDropActivityTriggersCancellation(h *H) {
	dropActivityTest(h, "ExplicitDropActivity", "inst-explicit-drop-activity", "completed_after_drop", func(ctx *durable.OrchestrationContext) error {
		f := durable.CallActivity[durable.Raw](ctx, "CancellableActivity", durable.Raw("input"))
		// duroxide waits on a 500 ms timer so the worker fetches the activity
		// first; the test's "Drop" event, raised once it runs, is that wait.
		if _, err := durable.WaitForEvent[durable.Raw](ctx, "Drop").Get(ctx); err != nil {
			return err
		}
		f.Cancel() // Rust: drop(activity_future)
		return ctx.Sleep(50 * time.Millisecond)
	})
}

func activityOutOfScopeTriggersCancellation(h *H) {
	dropActivityTest(h, "OutOfScopeActivity", "inst-out-of-scope-activity", "completed_without_await", func(ctx *durable.OrchestrationContext) error {
		{
			unused := durable.CallActivity[durable.Raw](ctx, "CancellableActivity", durable.Raw("input"))
			if _, err := durable.WaitForEvent[durable.Raw](ctx, "Drop").Get(ctx); err != nil {
				return err
			}
			// Rust: the future goes out of scope here; Go has no destructor.
			unused.Cancel()
		}
		return ctx.Sleep(50 * time.Millisecond)
	})
}

// subCancelTest runs parent, which schedules the never-ending child
// "SlowChild" and drops or loses it; the child must end cancelled.
func subCancelTest(h *H, parentName, id, output string, parent func(*durable.OrchestrationContext) (string, error)) string {
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("SlowChild", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			cxWaitForever(ctx, "NeverComes")
			return "child_completed", nil
		}),
		durable.OrchestrationFunc(parentName, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return parent(ctx)
		}),
	), func(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = 2, 1 })
	h.Start(parentName, id, durable.Raw(""))
	if out := h.Completed(id); out != output {
		h.Fatalf("parent output %q; want %q", out, output)
	}
	child := cxChildOf(h, id)
	cxExpectCancelled(h, child)
	return child
}

func select2LoserSubOrchestrationCancelled(h *H) {
	subCancelTest(h, "SelectSubOrchParent", "inst-select2-suborg-cancel", "timer_won", func(ctx *durable.OrchestrationContext) (string, error) {
		sub := durable.CallSubOrchestration[durable.Raw](ctx, "SlowChild", durable.Raw("input"))
		timer := ctx.CreateTimer(100 * time.Millisecond)
		if durable.Race(ctx, sub, timer) == 0 {
			v, err := sub.Get(ctx)
			return "sub_won:" + string(v), err
		}
		return "timer_won", nil
	})
}

func select2LoserSubOrchestrationExplicitIDCancelled(h *H) {
	child := subCancelTest(h, "SelectExplicitIdParent", "inst-select2-explicit-id", "timer_won", func(ctx *durable.OrchestrationContext) (string, error) {
		sub := durable.CallSubOrchestration[durable.Raw](ctx, "SlowChild", durable.Raw("input"), durable.WithInstanceID("my-explicit-child-id"))
		timer := ctx.CreateTimer(100 * time.Millisecond)
		if durable.Race(ctx, sub, timer) == 0 {
			v, err := sub.Get(ctx)
			return "sub_won:" + string(v), err
		}
		return "timer_won", nil
	})
	// An explicit instance id is used verbatim, without the parent prefix.
	if child != "my-explicit-child-id" {
		h.Fatalf("child instance %q; want my-explicit-child-id", child)
	}
}

func explicitDropSubOrchestrationCancelled(h *H) {
	subCancelTest(h, "DropSubOrchParent", "inst-drop-suborg", "parent_completed_after_drop", func(ctx *durable.OrchestrationContext) (string, error) {
		sub := durable.CallSubOrchestration[durable.Raw](ctx, "SlowChild", durable.Raw("input"))
		sub.Cancel() // Rust: drop(sub_orch)
		if err := ctx.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return "parent_completed_after_drop", nil
	})
}

func subOrchestrationOutOfScopeCancelled(h *H) {
	subCancelTest(h, "OutOfScopeSubOrchParent", "inst-scope-suborg", "parent_completed_without_await", func(ctx *durable.OrchestrationContext) (string, error) {
		{
			unused := durable.CallSubOrchestration[durable.Raw](ctx, "SlowChild", durable.Raw("input"))
			unused.Cancel() // Rust: goes out of scope at the end of the block
		}
		if err := ctx.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return "parent_completed_without_await", nil
	})
}

// recordingProvider records CancelInstance items enqueued by clients and by
// turns, and holds back the instance "combo-child" until allowed, so that
// both cancellations reach it in one batch.
type recordingProvider struct {
	provider.Provider

	mu          sync.Mutex
	records     []cxCancelRecord
	allowChild  atomic.Bool
	childCancel [][]string
}

type cxCancelRecord struct {
	instance, reason string
	fromAck          bool
}

func (p *recordingProvider) record(item provider.WorkItem, fromAck bool) {
	if c, ok := item.(provider.CancelInstanceItem); ok {
		p.mu.Lock()
		p.records = append(p.records, cxCancelRecord{c.Instance, c.Reason, fromAck})
		p.mu.Unlock()
	}
}

func (p *recordingProvider) has(instance, reason string, fromAck bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.records {
		if r == (cxCancelRecord{instance, reason, fromAck}) {
			return true
		}
	}
	return false
}

func (p *recordingProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	// Whether the child may run is decided before the fetch reads: a fetch
	// already under way when the test allows the child may have read its
	// messages before the client's cancel was committed.
	allowed := p.allowChild.Load()
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil || item.Instance != "combo-child" {
		return item, err
	}
	if !allowed {
		if err := p.Provider.AbandonOrchestrationItem(ctx, item.LockToken, 25*time.Millisecond, true); err != nil {
			return nil, err
		}
		return nil, nil
	}
	var reasons []string
	for _, m := range item.Messages {
		if c, ok := m.(provider.CancelInstanceItem); ok {
			reasons = append(reasons, c.Reason)
		}
	}
	p.mu.Lock()
	p.childCancel = append(p.childCancel, reasons)
	p.mu.Unlock()
	return item, nil
}

// The recorder records what was committed: a message is recorded once the
// call that enqueues it has succeeded, so that a test waiting for it to be
// recorded does not run ahead of its write.

func (p *recordingProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	if err := p.Provider.AckOrchestrationItem(ctx, lockToken, commit); err != nil {
		return err
	}
	for _, item := range commit.OrchestratorItems {
		p.record(item, true)
	}
	return nil
}

func (p *recordingProvider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	if err := p.Provider.EnqueueForOrchestrator(ctx, item, delay); err != nil {
		return err
	}
	p.record(item, false)
	return nil
}

func userCancelAndDroppedFutureBothCancelChild(h *H) {
	rec := &recordingProvider{Provider: h.P}
	// The runtime and client go through the recorder (without the
	// management interface: the test reads state through its own provider).
	h.P, h.Client = rec, durable.NewClient(rec)
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("ComboChild", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			cxWaitForever(ctx, "NeverComes")
			return "child_completed", nil
		}),
		durable.OrchestrationFunc("ComboParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			durable.CallSubOrchestration[durable.Raw](ctx, "ComboChild", durable.Raw("input"), durable.WithInstanceID("combo-child")).Cancel()
			if err := ctx.Sleep(50 * time.Millisecond); err != nil {
				return "", err
			}
			return "parent_done", nil
		}),
	), func(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = 2, 1 })
	h.Start("ComboParent", "inst-combo-cancel", durable.Raw(""))
	if err := h.Client.CancelInstance(h.Ctx(), "combo-child", "user_cancel"); err != nil {
		h.Fatal(err)
	}
	h.WaitFor("both CancelInstance enqueues", func() bool {
		return rec.has("combo-child", "user_cancel", false) &&
			rec.has("combo-child", "parent dropped sub-orchestration future", true)
	})
	rec.allowChild.Store(true)
	if out := h.Completed("inst-combo-cancel"); out != "parent_done" {
		h.Fatalf("parent output %q", out)
	}
	cxExpectCancelled(h, "combo-child")
	rec.mu.Lock()
	batches := rec.childCancel
	rec.mu.Unlock()
	if len(batches) == 0 {
		h.Fatal("child never fetched")
	}
	first := strings.Join(batches[0], "|")
	if !strings.Contains(first, "user_cancel") || !strings.Contains(first, "parent dropped sub-orchestration future") {
		h.Fatalf("first child batch cancel reasons %v; want both", batches[0])
	}
	hist := h.History("inst-combo-cancel")
	var scheduled uint64
	for _, ev := range hist {
		if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok && k.Instance == "combo-child" {
			scheduled = ev.EventID
		}
	}
	if scheduled == 0 {
		h.Fatal("sub-orchestration not scheduled")
	}
	if !cxAny(hist, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.SubOrchestrationCancelRequested)
		return ok && k.Reason == "dropped_future" && ev.SourceEventID != nil && *ev.SourceEventID == scheduled
	}) {
		h.Fatalf("no SubOrchestrationCancelRequested(dropped_future, source %d): %v", scheduled, EventTypes(hist))
	}
}

func positionalArrivalBeforeSubOutstanding(h *H) {
	h.Start("TestOrch", "inst-pos-arr", durable.Raw(""))
	// duroxide raises right after the start, racing a 100 ms timer; raising
	// before any runtime runs makes the event certainly early.
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-pos-arr", "MyEvent", durable.Raw("data")); err != nil {
		h.Fatal(err)
	}
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(100 * time.Millisecond); err != nil {
			return "", err
		}
		wait := durable.WaitForEvent[durable.Raw](ctx, "MyEvent")
		timeout := ctx.CreateTimer(500 * time.Millisecond)
		if durable.Race(ctx, wait, timeout) == 0 {
			return "event-received", nil
		}
		return "timeout", nil
	}))
	if out := h.Completed("inst-pos-arr"); out != "timeout" {
		h.Fatalf("output %q; want timeout", out)
	}
	if !cxAny(h.History("inst-pos-arr"), func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.ExternalSubscribedCancelled)
		return ok && k.Reason == "dropped_future"
	}) {
		h.Fatal("missing dropped_future cancellation breadcrumb for positional subscription")
	}
}

func cancelledSubscriptionDoesNotStealFutureEvent(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		wait1 := durable.WaitForEvent[durable.Raw](ctx, "Signal")
		timeout1 := ctx.CreateTimer(50 * time.Millisecond)
		if durable.Race(ctx, wait1, timeout1) == 0 {
			return "unexpected_phase1", nil
		}
		data, err := durable.WaitForEvent[durable.Raw](ctx, "Signal").Get(ctx)
		return "got:" + string(data), err
	}))
	h.Start("TestOrch", "inst-no-steal", durable.Raw(""))
	// Phase 1 settled: the second subscription exists.
	cxAwaitSubs(h, "inst-no-steal", "Signal", 2)
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-no-steal", "Signal", durable.Raw("hello")); err != nil {
		h.Fatal(err)
	}
	if out := h.Completed("inst-no-steal"); out != "got:hello" {
		h.Fatalf("output %q; want got:hello", out)
	}
	if !cxAny(h.History("inst-no-steal"), func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.ExternalSubscribedCancelled)
		return ok && k.Reason == "dropped_future"
	}) {
		h.Fatal("missing dropped_future cancellation breadcrumb")
	}
}

// twoSequentialWaits raises first and second to two sequential waits.
func twoSequentialWaits(h *H, id, name, first, second string) string {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d1, err := durable.WaitForEvent[durable.Raw](ctx, name).Get(ctx)
		if err != nil {
			return "", err
		}
		d2, err := durable.WaitForEvent[durable.Raw](ctx, name).Get(ctx)
		return string(d1) + "," + string(d2), err
	}))
	h.Start("TestOrch", id, durable.Raw(""))
	cxAwaitSubs(h, id, name, 1)
	if err := h.Client.RaiseEvent(h.Ctx(), id, name, durable.Raw(first)); err != nil {
		h.Fatal(err)
	}
	cxAwaitSubs(h, id, name, 2)
	if err := h.Client.RaiseEvent(h.Ctx(), id, name, durable.Raw(second)); err != nil {
		h.Fatal(err)
	}
	return h.Completed(id)
}

func positionalMatchingFIFOWithoutCancellation(h *H) {
	if out := twoSequentialWaits(h, "inst-fifo", "Data", "first", "second"); out != "first,second" {
		h.Fatalf("FIFO ordering broken: %q", out)
	}
}

func duplicateExternalEventsNotDeduplicated(h *H) {
	if out := twoSequentialWaits(h, "inst-nodup", "Dup", "same_payload", "same_payload"); out != "same_payload,same_payload" {
		h.Fatalf("duplicate events were deduplicated: %q", out)
	}
}
