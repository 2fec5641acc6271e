package runtimetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

var externalEventTests = []Test{
	{"persistent_event_basic_delivery", persistentEventBasicDelivery},
	{"persistent_event_arrives_before_subscription", persistentEventArrivesBeforeSubscription},
	{"persistent_event_fifo_ordering", persistentEventFIFOOrdering},
	{"persistent_event_survives_select_cancellation_same_batch", persistentEventSurvivesSelectCancellationSameBatch},
	{"persistent_event_survives_select_cancellation_late_extra_discarded", persistentEventSurvivesSelectCancellationLateExtraDiscarded},
	{"persistent_and_positional_are_independent", persistentAndPositionalAreIndependent},
	{"persistent_cancelled_subscription_emits_breadcrumb", persistentCancelledSubscriptionEmitsBreadcrumb},
	{"persistent_outstanding_subscription_cancelled_on_completion", persistentOutstandingSubscriptionCancelledOnCompletion},
	{"persistent_multiple_cancelled_subscriptions_only_active_receives", persistentMultipleCancelledSubscriptionsOnlyActiveReceives},
	{"complex_multi_turn_persistent_and_positional_with_activities", complexMultiTurnPersistentAndPositional},
	{"select_then_join_persistent_and_positional", selectThenJoinPersistentAndPositional},
	{"raise_event_typed_round_trip", raiseEventTypedRoundTrip},
	{"enqueue_event_typed_round_trip", enqueueEventTypedRoundTrip},
	{"multi_queue_isolation_and_independent_fifo", multiQueueIsolationAndIndependentFIFO},
	{"multi_queue_staggered_delivery", multiQueueStaggeredDelivery},
	{"events_enqueued_before_start_orchestration_are_dropped", eventsEnqueuedBeforeStartOrchestrationAreDropped},
}

// eeEnqueue enqueues a plain-string message.
func eeEnqueue(h *H, id, queue, data string) {
	h.Helper()
	if err := h.Client.EnqueueEvent(h.Ctx(), id, queue, durable.Raw(data)); err != nil {
		h.Fatal(err)
	}
}

// eeRaise raises a plain-string event.
func eeRaise(h *H, id, name, data string) {
	h.Helper()
	if err := h.Client.RaiseEvent(h.Ctx(), id, name, durable.Raw(data)); err != nil {
		h.Fatal(err)
	}
}

// eeDequeue dequeues a plain-string message.
func eeDequeue(ctx *durable.OrchestrationContext, queue string) (string, error) {
	v, err := durable.Dequeue[durable.Raw](ctx, queue).Get(ctx)
	return string(v), err
}

// eeQueueSubscribed counts QueueSubscribed events for name.
func eeQueueSubscribed(events []provider.Event, name string) int {
	return cxCount(events, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.QueueSubscribed)
		return ok && k.Name == name
	})
}

// eeQueueDelivered counts QueueEventDelivered events for name.
func eeQueueDelivered(events []provider.Event, name string) int {
	return cxCount(events, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.QueueEventDelivered)
		return ok && k.Name == name
	})
}

// eeQueueCancelled counts QueueSubscriptionCancelled events, of reason
// when it is not "".
func eeQueueCancelled(events []provider.Event, reason string) int {
	return cxCount(events, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.QueueSubscriptionCancelled)
		return ok && (reason == "" || k.Reason == reason)
	})
}

// eePositionalCancelled counts ExternalSubscribedCancelled(dropped_future).
func eePositionalCancelled(events []provider.Event) int {
	return cxCount(events, func(ev provider.Event) bool {
		k, ok := ev.Kind.(provider.ExternalSubscribedCancelled)
		return ok && k.Reason == "dropped_future"
	})
}

func eeExpect(h *H, id, want string) {
	h.Helper()
	if out := h.Completed(id); out != want {
		h.Fatalf("%s output %q; want %q", id, out, want)
	}
}

func persistentEventBasicDelivery(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		data, err := eeDequeue(ctx, "Signal")
		return "got:" + data, err
	}))
	h.Start("TestOrch", "inst-pers-basic", durable.Raw(""))
	cxAwaitSubs(h, "inst-pers-basic", "Signal", 1)
	eeEnqueue(h, "inst-pers-basic", "Signal", "hello")
	eeExpect(h, "inst-pers-basic", "got:hello")
}

func persistentEventArrivesBeforeSubscription(h *H) {
	// duroxide enqueues right after the start, racing a 200 ms timer;
	// enqueueing before any runtime runs makes the message certainly early.
	h.Start("TestOrch", "inst-pers-before", durable.Raw(""))
	eeEnqueue(h, "inst-pers-before", "Signal", "early_bird")
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(200 * time.Millisecond); err != nil {
			return "", err
		}
		data, err := eeDequeue(ctx, "Signal")
		return "got:" + data, err
	}))
	eeExpect(h, "inst-pers-before", "got:early_bird")
	hist := h.History("inst-pers-before")
	var delivered, subscribed uint64
	for _, ev := range hist {
		switch ev.Kind.(type) {
		case provider.QueueEventDelivered:
			delivered = ev.EventID
		case provider.QueueSubscribed:
			subscribed = ev.EventID
		}
	}
	if delivered == 0 || subscribed == 0 || delivered > subscribed {
		h.Fatalf("want the message recorded before the subscription: %v", EventTypes(hist))
	}
}

func persistentEventFIFOOrdering(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d1, err := eeDequeue(ctx, "Data")
		if err != nil {
			return "", err
		}
		d2, err := eeDequeue(ctx, "Data")
		return d1 + "," + d2, err
	}))
	h.Start("TestOrch", "inst-pers-fifo", durable.Raw(""))
	cxAwaitSubs(h, "inst-pers-fifo", "Data", 1)
	eeEnqueue(h, "inst-pers-fifo", "Data", "first")
	cxAwaitSubs(h, "inst-pers-fifo", "Data", 2)
	eeEnqueue(h, "inst-pers-fifo", "Data", "second")
	eeExpect(h, "inst-pers-fifo", "first,second")
}

// eeSurvivorOrch loses a dequeue to a timer, then dequeues again.
func eeSurvivorOrch() durable.Definition {
	return durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		wait1 := durable.Dequeue[durable.Raw](ctx, "Signal")
		timeout1 := ctx.CreateTimer(50 * time.Millisecond)
		if durable.Race(ctx, wait1, timeout1) == 0 {
			return "unexpected_phase1", nil
		}
		data, err := eeDequeue(ctx, "Signal")
		return "got:" + data, err
	})
}

func persistentEventSurvivesSelectCancellationSameBatch(h *H) {
	// Phase A: run until both subscriptions exist, then stop the runtime.
	rt := h.Serve(eeSurvivorOrch())
	h.Start("TestOrch", "inst-pers-cancel-same", durable.Raw(""))
	cxWaitHistory(h, "inst-pers-cancel-same", "two QueueSubscribed", func(events []provider.Event) bool {
		return eeQueueSubscribed(events, "Signal") >= 2
	})
	if err := rt.Shutdown(h.Ctx()); err != nil {
		h.Fatal(err)
	}
	// Phase B: both messages wait in the queue while nothing runs.
	eeEnqueue(h, "inst-pers-cancel-same", "Signal", "survived")
	eeEnqueue(h, "inst-pers-cancel-same", "Signal", "extra")
	// Phase C: a new runtime takes both in one batch.
	h.Serve(eeSurvivorOrch())
	eeExpect(h, "inst-pers-cancel-same", "got:survived")
	hist := h.History("inst-pers-cancel-same")
	if eeQueueCancelled(hist, "dropped_future") == 0 {
		h.Fatal("missing QueueSubscriptionCancelled(dropped_future) for the first wait")
	}
	if n := eeQueueDelivered(hist, "Signal"); n != 2 {
		h.Fatalf("%d QueueEventDelivered; want both messages of the batch in history", n)
	}
	if n := eeQueueSubscribed(hist, "Signal"); n != 2 {
		h.Fatalf("%d queue subscriptions; want 2", n)
	}
	if n := eeQueueCancelled(hist, ""); n != 1 {
		h.Fatalf("%d cancelled queue subscriptions; want 1", n)
	}
}

func persistentEventSurvivesSelectCancellationLateExtraDiscarded(h *H) {
	h.Serve(eeSurvivorOrch())
	h.Start("TestOrch", "inst-pers-cancel-late", durable.Raw(""))
	cxWaitHistory(h, "inst-pers-cancel-late", "two QueueSubscribed", func(events []provider.Event) bool {
		return eeQueueSubscribed(events, "Signal") >= 2
	})
	eeEnqueue(h, "inst-pers-cancel-late", "Signal", "survived")
	eeExpect(h, "inst-pers-cancel-late", "got:survived")
	// The orchestration is terminal: "extra" is drained without a trace.
	eeEnqueue(h, "inst-pers-cancel-late", "Signal", "extra")
	h.AwaitConsumed("inst-pers-cancel-late", "the extra signal", 1, func(m provider.WorkItem) bool {
		q, ok := m.(provider.QueueMessageItem)
		return ok && q.Data == "extra"
	})
	hist := h.History("inst-pers-cancel-late")
	if eeQueueCancelled(hist, "dropped_future") == 0 {
		h.Fatal("missing QueueSubscriptionCancelled(dropped_future) for the first wait")
	}
	if n := eeQueueDelivered(hist, "Signal"); n != 1 {
		h.Fatalf("%d QueueEventDelivered; want only \"survived\"", n)
	}
	if n := eeQueueSubscribed(hist, "Signal"); n != 2 {
		h.Fatalf("%d queue subscriptions; want 2", n)
	}
	if n := eeQueueCancelled(hist, ""); n != 1 {
		h.Fatalf("%d cancelled queue subscriptions; want 1", n)
	}
	h.CheckHistory("inst-pers-cancel-late")
}

func persistentAndPositionalAreIndependent(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		positional := durable.WaitForEvent[durable.Raw](ctx, "Signal")
		persistent := durable.Dequeue[durable.Raw](ctx, "Signal")
		vs, err := durable.AwaitAll(ctx, positional, persistent)
		return fmt.Sprintf("pos:%s,pers:%s", vs[0], vs[1]), err
	}))
	h.Start("TestOrch", "inst-pers-indep", durable.Raw(""))
	cxAwaitSubs(h, "inst-pers-indep", "Signal", 2)
	eeRaise(h, "inst-pers-indep", "Signal", "positional_data")
	eeEnqueue(h, "inst-pers-indep", "Signal", "persistent_data")
	eeExpect(h, "inst-pers-indep", "pos:positional_data,pers:persistent_data")
}

func persistentCancelledSubscriptionEmitsBreadcrumb(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		wait := durable.Dequeue[durable.Raw](ctx, "Signal")
		timeout := ctx.CreateTimer(50 * time.Millisecond)
		if durable.Race(ctx, wait, timeout) == 0 {
			return "unexpected", nil
		}
		return "timer_won", nil
	}))
	h.Start("TestOrch", "inst-pers-breadcrumb", durable.Raw(""))
	eeExpect(h, "inst-pers-breadcrumb", "timer_won")
	if eeQueueCancelled(h.History("inst-pers-breadcrumb"), "dropped_future") == 0 {
		h.Fatal("missing QueueSubscriptionCancelled(dropped_future) breadcrumb")
	}
}

func persistentOutstandingSubscriptionCancelledOnCompletion(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_ = durable.Dequeue[durable.Raw](ctx, "NeverResolved") // never awaited
		if err := ctx.Sleep(50 * time.Millisecond); err != nil {
			return "", err
		}
		return "done_early", nil
	}))
	h.Start("TestOrch", "inst-pers-terminal", durable.Raw(""))
	eeExpect(h, "inst-pers-terminal", "done_early")
	hist := h.History("inst-pers-terminal")
	if eeQueueSubscribed(hist, "NeverResolved") == 0 {
		h.Fatal("missing QueueSubscribed event")
	}
	if eeQueueCancelled(hist, "dropped_future")+eeQueueCancelled(hist, "orchestration_terminal") == 0 {
		h.Fatalf("missing QueueSubscriptionCancelled breadcrumb for the outstanding subscription: %v", EventTypes(hist))
	}
}

func persistentMultipleCancelledSubscriptionsOnlyActiveReceives(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 1; i <= 2; i++ {
			wait := durable.Dequeue[durable.Raw](ctx, "Signal")
			timeout := ctx.CreateTimer(30 * time.Millisecond)
			if durable.Race(ctx, wait, timeout) == 0 {
				return fmt.Sprintf("unexpected%d", i), nil
			}
		}
		data, err := eeDequeue(ctx, "Signal")
		return "got:" + data, err
	}))
	h.Start("TestOrch", "inst-pers-multi-cancel", durable.Raw(""))
	cxWaitHistory(h, "inst-pers-multi-cancel", "three QueueSubscribed", func(events []provider.Event) bool {
		return eeQueueSubscribed(events, "Signal") >= 3
	})
	eeEnqueue(h, "inst-pers-multi-cancel", "Signal", "winner")
	eeExpect(h, "inst-pers-multi-cancel", "got:winner")
	if n := eeQueueCancelled(h.History("inst-pers-multi-cancel"), "dropped_future"); n != 2 {
		h.Fatalf("%d dropped_future breadcrumbs; want 2", n)
	}
}

func complexMultiTurnPersistentAndPositional(h *H) {
	h.Serve(
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return "echo:" + in, nil }),
		durable.OrchestrationFunc("ComplexOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var results []string
			echo := func(in string) error {
				v, err := durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(in)).Get(ctx)
				results = append(results, string(v))
				return err
			}
			// Turn 1: positional wait right at the start.
			pos1, err := durable.WaitForEvent[durable.Raw](ctx, "PosFirst").Get(ctx)
			if err != nil {
				return "", err
			}
			results = append(results, "pos1:"+string(pos1))
			// Turn 2: activity, then queue wait.
			if err := echo("step2"); err != nil {
				return "", err
			}
			pers1, err := eeDequeue(ctx, "PersA")
			if err != nil {
				return "", err
			}
			results = append(results, "pers1:"+pers1)
			// Turn 3: activity, positional wait lost to a timer, queue wait.
			if err := echo("step3"); err != nil {
				return "", err
			}
			doomed := durable.WaitForEvent[durable.Raw](ctx, "PosDoomed")
			timer := ctx.CreateTimer(50 * time.Millisecond)
			if durable.Race(ctx, doomed, timer) == 0 {
				d, _ := doomed.Get(ctx)
				results = append(results, "pos_doomed_unexpected:"+string(d))
			} else {
				results = append(results, "pos_cancelled")
			}
			pers2, err := eeDequeue(ctx, "PersB")
			if err != nil {
				return "", err
			}
			results = append(results, "pers2:"+pers2)
			// Turn 4: activity, then queue wait at the very end.
			if err := echo("step4"); err != nil {
				return "", err
			}
			pers3, err := eeDequeue(ctx, "PersC")
			if err != nil {
				return "", err
			}
			results = append(results, "pers3:"+pers3)
			return strings.Join(results, ","), nil
		}),
	)
	id := "inst-complex-multi"
	h.Start("ComplexOrch", id, durable.Raw(""))
	cxAwaitSubs(h, id, "PosFirst", 1)
	eeRaise(h, id, "PosFirst", "alpha")
	cxAwaitSubs(h, id, "PersA", 1)
	eeEnqueue(h, id, "PersA", "beta")
	cxAwaitSubs(h, id, "PersB", 1)
	eeEnqueue(h, id, "PersB", "gamma")
	cxAwaitSubs(h, id, "PersC", 1)
	eeEnqueue(h, id, "PersC", "delta")
	eeExpect(h, id, "pos1:alpha,echo:step2,pers1:beta,echo:step3,pos_cancelled,pers2:gamma,echo:step4,pers3:delta")
	hist := h.History(id)
	if eePositionalCancelled(hist) == 0 {
		h.Fatal("missing positional ExternalSubscribedCancelled(dropped_future) breadcrumb")
	}
	if n := eeQueueCancelled(hist, ""); n != 0 {
		h.Fatalf("%d queue subscriptions cancelled; want 0", n)
	}
}

func selectThenJoinPersistentAndPositional(h *H) {
	h.Serve(durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var results []string
		posRace := durable.WaitForEvent[durable.Raw](ctx, "RacePos")
		persRace := durable.Dequeue[durable.Raw](ctx, "RacePers")
		if durable.Race(ctx, posRace, persRace) == 0 {
			d, _ := posRace.Get(ctx)
			results = append(results, "select_pos:"+string(d))
		} else {
			d, _ := persRace.Get(ctx)
			results = append(results, "select_pers:"+string(d))
		}
		posJoin := durable.WaitForEvent[durable.Raw](ctx, "JoinPos")
		persJoin := durable.Dequeue[durable.Raw](ctx, "JoinPers")
		vs, err := durable.AwaitAll(ctx, posJoin, persJoin)
		if err != nil {
			return "", err
		}
		results = append(results, "join_pos:"+string(vs[0]), "join_pers:"+string(vs[1]))
		return strings.Join(results, ","), nil
	}))
	id := "inst-sel-join"
	h.Start("TestOrch", id, durable.Raw(""))
	cxAwaitSubs(h, id, "RacePers", 1)
	eeEnqueue(h, id, "RacePers", "fast")
	cxAwaitSubs(h, id, "JoinPos", 1)
	eeRaise(h, id, "JoinPos", "left")
	eeEnqueue(h, id, "JoinPers", "right")
	eeExpect(h, id, "select_pers:fast,join_pos:left,join_pers:right")
	hist := h.History(id)
	if eePositionalCancelled(hist) == 0 {
		h.Fatal("positional RacePos should have a dropped_future cancellation breadcrumb")
	}
	if eeQueueCancelled(hist, "") != 0 {
		h.Fatal("no queue subscription should be cancelled")
	}
}

func raiseEventTypedRoundTrip(h *H) {
	type payload struct {
		ID  uint32 `json:"id"`
		Msg string `json:"msg"`
	}
	h.Serve(durable.OrchestrationFunc("TypedWait", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		p, err := durable.WaitForEvent[payload](ctx, "Signal").Get(ctx)
		return fmt.Sprintf("id=%d,msg=%s", p.ID, p.Msg), err
	}))
	h.Start("TypedWait", "inst-typed-wait", durable.Raw(""))
	cxAwaitSubs(h, "inst-typed-wait", "Signal", 1)
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-typed-wait", "Signal", payload{42, "hello"}); err != nil {
		h.Fatal(err)
	}
	eeExpect(h, "inst-typed-wait", "id=42,msg=hello")
}

func enqueueEventTypedRoundTrip(h *H) {
	type command struct {
		Action string `json:"action"`
		Value  int64  `json:"value"`
	}
	h.Serve(durable.OrchestrationFunc("TypedQueue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		c, err := durable.Dequeue[command](ctx, "commands").Get(ctx)
		return fmt.Sprintf("%s:%d", c.Action, c.Value), err
	}))
	h.Start("TypedQueue", "inst-typed-queue", durable.Raw(""))
	cxAwaitSubs(h, "inst-typed-queue", "commands", 1)
	if err := h.Client.EnqueueEvent(h.Ctx(), "inst-typed-queue", "commands", command{"increment", 99}); err != nil {
		h.Fatal(err)
	}
	eeExpect(h, "inst-typed-queue", "increment:99")
}

func multiQueueIsolationAndIndependentFIFO(h *H) {
	h.Serve(durable.OrchestrationFunc("MultiQueue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var vs []string
		for _, q := range []string{"orders", "orders", "payments", "payments", "notifications"} {
			v, err := eeDequeue(ctx, q)
			if err != nil {
				return "", err
			}
			vs = append(vs, v)
		}
		return fmt.Sprintf("%s,%s|%s,%s|%s", vs[0], vs[1], vs[2], vs[3], vs[4]), nil
	}))
	id := "inst-multi-q"
	// Start first: messages for an instance that does not exist are dropped.
	h.Start("MultiQueue", id, durable.Raw(""))
	eeEnqueue(h, id, "payments", "pay_first")
	eeEnqueue(h, id, "orders", "order_first")
	eeEnqueue(h, id, "notifications", "alert_1")
	eeEnqueue(h, id, "orders", "order_second")
	eeEnqueue(h, id, "payments", "pay_second")
	eeExpect(h, id, "order_first,order_second|pay_first,pay_second|alert_1")
}

func multiQueueStaggeredDelivery(h *H) {
	h.Serve(
		durable.ActivityFunc("Noop", func(context.Context, string) (string, error) { return "ok", nil }),
		durable.OrchestrationFunc("StaggeredQ", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			cmd1, err := eeDequeue(ctx, "commands")
			if err != nil {
				return "", err
			}
			if _, err := durable.CallActivity[durable.Raw](ctx, "Noop", durable.Raw("x")).Get(ctx); err != nil {
				return "", err
			}
			stat1, err := eeDequeue(ctx, "status")
			if err != nil {
				return "", err
			}
			cmd2, err := eeDequeue(ctx, "commands")
			if err != nil {
				return "", err
			}
			stat2, err := eeDequeue(ctx, "status")
			return fmt.Sprintf("cmd:%s,%s|stat:%s,%s", cmd1, cmd2, stat1, stat2), err
		}),
	)
	id := "inst-staggered-q"
	h.Start("StaggeredQ", id, durable.Raw(""))
	eeEnqueue(h, id, "commands", "c1")
	eeEnqueue(h, id, "commands", "c2")
	eeEnqueue(h, id, "status", "s1")
	// s2 arrives after the second "status" subscription exists.
	cxAwaitSubs(h, id, "status", 2)
	eeEnqueue(h, id, "status", "s2")
	eeExpect(h, id, "cmd:c1,c2|stat:s1,s2")
}

func eventsEnqueuedBeforeStartOrchestrationAreDropped(h *H) {
	h.Serve(durable.OrchestrationFunc("OrphanTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		event := durable.Dequeue[durable.Raw](ctx, "pre-start-q")
		timeout := ctx.CreateTimer(200 * time.Millisecond)
		if durable.Race(ctx, event, timeout) == 0 {
			d, _ := event.Get(ctx)
			return "unexpected:" + string(d), nil
		}
		return "timeout_as_expected", nil
	}))
	eeEnqueue(h, "inst-orphan", "pre-start-q", "should-be-dropped")
	// The orphan message is dropped by the dispatcher's fetch (the
	// provider's: the runtime is not handed it).
	cxAwaitOrchestratorQueueEmpty(h)
	h.Start("OrphanTest", "inst-orphan", durable.Raw(""))
	eeExpect(h, "inst-orphan", "timeout_as_expected")
}
