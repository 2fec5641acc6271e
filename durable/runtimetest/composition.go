package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// Composition: racing, joining and mapping futures, concurrent branches
// (duroxide's async blocks are durable.Go branches), and orchestrations
// running side by side.
var compositionTests = slices.Concat(cmpFuturesTests, cmpAsyncBlockTests, cmpTypedComposabilityTests, cmpRacesTests, cmpConcurrencyTests)

var cmpFuturesTests = []Test{
	{"select2_two_externals_first_delivery_wins", cmpSelect2TwoExternalsFirstDeliveryWins},
	{"select3_mixed_branch_order_winner", cmpSelect3MixedBranchOrderWinner},
	{"join_returns_schedule_order", cmpJoinReturnsScheduleOrder},
	{"test_select2_loser_event_consumed_during_replay", cmpSelect2LoserEventConsumedDuringReplay},
	{"test_select2_schedule_after_winner_returns", cmpSelect2ScheduleAfterWinnerReturns},
	{"simplified_futures_unawaited_completion_does_not_block", cmpUnawaitedCompletionDoesNotBlock},
}

var cmpTypedComposabilityTests = []Test{
	{"typed_activity_join_fan_out", cmpTypedActivityJoinFanOut},
	{"typed_activity_join2_heterogeneous", cmpTypedActivityJoin2Heterogeneous},
	{"typed_activity_select2_timeout", cmpTypedActivitySelect2Timeout},
	{"durable_future_map_transforms_result", cmpDurableFutureMapTransformsResult},
	{"typed_map_then_join", cmpTypedMapThenJoin},
	{"map_preserves_cancellation_on_drop", cmpMapPreservesCancellationOnDrop},
	{"typed_error_propagation_through_join", cmpTypedErrorPropagationThroughJoin},
}

var cmpRacesTests = []Test{
	{"wait_external_completes_fs", cmpWaitExternalCompletes},
	{"race_external_vs_timer_ordering_fs", cmpRaceExternalVsTimerOrdering},
	{"race_event_vs_timer_event_wins_fs", cmpRaceEventVsTimerEventWins},
}

var cmpConcurrencyTests = []Test{
	{"concurrent_orchestrations_different_activities_fs", cmpConcurrentOrchestrationsDifferentActivities},
	{"concurrent_orchestrations_same_activities_fs", cmpConcurrentOrchestrationsSameActivities},
	{"single_orchestration_with_join_test", cmpSingleOrchestrationWithJoin},
}

// cmpLongTimer is the timer of a race it must lose: long enough that only
// the other branches can win, and never waited for.
const cmpLongTimer = time.Minute

// cmpSubscribed waits until id's history holds a wait for each of names.
func (h *H) cmpSubscribed(id string, names ...string) {
	h.Helper()
	h.WaitFor(fmt.Sprintf("%s waiting for %v", id, names), func() bool {
		seen := map[string]bool{}
		for _, ev := range h.history(id) {
			if s, ok := ev.Kind.(provider.ExternalSubscribed); ok {
				seen[s.Name] = true
			}
		}
		for _, n := range names {
			if !seen[n] {
				return false
			}
		}
		return true
	})
}

// cmpEventIndex returns the index in events of the ExternalEvent name, or
// -1.
func cmpEventIndex(events []provider.Event, name string) int {
	return slices.IndexFunc(events, func(ev provider.Event) bool {
		e, ok := ev.Kind.(provider.ExternalEvent)
		return ok && e.Name == name
	})
}

// cmpRaiseWhileStopped stops rt, raises B then A to id straight through the
// provider so both arrive in one batch, and starts a new runtime for defs.
func (h *H) cmpRaiseWhileStopped(rt *durable.Runtime, id string, defs ...durable.Definition) {
	h.Helper()
	if err := rt.Shutdown(h.Ctx()); err != nil {
		h.Fatal(err)
	}
	for _, it := range []provider.ExternalRaisedItem{{Instance: id, Name: "B", Data: "vb"}, {Instance: id, Name: "A", Data: "va"}} {
		if err := h.Direct().EnqueueForOrchestrator(h.Ctx(), it, 0); err != nil {
			h.Fatal(err)
		}
	}
	h.Serve(defs...)
}

// cmpCheckBFirst checks that B was delivered before A and won.
func (h *H) cmpCheckBFirst(id string) {
	h.Helper()
	out := h.Completed(id)
	hist := h.History(id)
	b, a := cmpEventIndex(hist, "B"), cmpEventIndex(hist, "A")
	if b < 0 {
		h.Fatalf("no ExternalEvent B in %v", EventTypes(hist))
	}
	if a >= 0 && b > a {
		h.Fatalf("B (%d) after A (%d) in history", b, a)
	}
	if out != "B:vb" {
		h.Fatalf("output %q, want B:vb: the first delivered (history order) wins", out)
	}
}

func cmpSelect2TwoExternalsFirstDeliveryWins(h *H) {
	orch := durable.OrchestrationFunc("ABSelect2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, b := smpWait(ctx, "A"), smpWait(ctx, "B")
		if durable.Race(ctx, a, b) == 0 {
			v, err := a.Get(ctx)
			return "A:" + v, err
		}
		v, err := b.Get(ctx)
		return "B:" + v, err
	})
	rt := h.Serve(orch)
	h.Start("ABSelect2", "inst-ab2", durable.Raw(""))
	h.cmpSubscribed("inst-ab2", "A", "B")
	h.cmpRaiseWhileStopped(rt, "inst-ab2", orch)
	h.cmpCheckBFirst("inst-ab2")
}

func cmpSelect3MixedBranchOrderWinner(h *H) {
	orch := durable.OrchestrationFunc("ATBSelect", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := smpWait(ctx, "A")
		t := ctx.CreateTimer(cmpLongTimer) // duroxide: 500 ms, and a runtime stopped at once so it cannot fire
		b := smpWait(ctx, "B")
		switch durable.Race(ctx, a, t, b) {
		case 0:
			v, err := a.Get(ctx)
			return "A:" + v, err
		case 1:
			return "T", nil
		default:
			v, err := b.Get(ctx)
			return "B:" + v, err
		}
	})
	rt := h.Serve(orch)
	h.Start("ATBSelect", "inst-atb", durable.Raw(""))
	h.cmpSubscribed("inst-atb", "A", "B")
	h.cmpRaiseWhileStopped(rt, "inst-atb", orch)
	h.cmpCheckBFirst("inst-atb")
}

func cmpJoinReturnsScheduleOrder(h *H) {
	h.Serve(
		durable.NewActivity("Delay", func(ctx context.Context, in [2]any) (durable.Raw, error) {
			name, _ := in[0].(string)
			ms, _ := in[1].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return durable.Raw(name), nil
		}),
		durable.OrchestrationFunc("JoinAB", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// A takes longer than B, yet the join returns [A, B]: schedule order.
			a := smpAct(ctx, "Delay", `["A",50]`)
			b := smpAct(ctx, "Delay", `["B",5]`)
			outs, err := durable.AwaitAll(ctx, a, b)
			return strings.Join(outs, ","), err
		}),
	)
	h.Start("JoinAB", "inst-join", durable.Raw(""))
	h.smpWant(h.Completed("inst-join"), "A,B")
}

func cmpSelect2LoserEventConsumedDuringReplay(h *H) {
	// duroxide: 500 ms. The timer must lose to an activity round trip,
	// which on a loaded machine sharing one emulator among parallel tests
	// took over 2 s; the test waits for the timer below, so it stays short
	// enough to wait for.
	const loser = 10 * time.Second
	var attempts atomic.Int32
	h.Serve(
		durable.ActivityFunc("FastFailActivity", func(context.Context, string) (string, error) {
			return "", fmt.Errorf("fast failure on attempt %d", attempts.Add(1))
		}),
		durable.OrchestrationFunc("SelectLoserOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// Race an activity (fails fast) against a timer; the timer loses.
			timer1 := ctx.CreateTimer(loser)
			activity1 := smpAct(ctx, "FastFailActivity", "")
			if durable.Race(ctx, activity1, timer1) != 0 {
				return "", errors.New("timer won unexpectedly")
			}
			_, first := activity1.Get(ctx)
			if first == nil {
				return "unexpected success", nil
			}
			// Scheduling after the race must replay: the loser timer's
			// TimerCreated is matched by the race, not by this activity.
			_, second := smpAct(ctx, "FastFailActivity", "").Get(ctx)
			return fmt.Sprintf("first: %v, second: %v", first, second), nil
		}),
	)
	const id = "select-loser-1"
	h.Start("SelectLoserOrch", id, durable.Raw(""))
	if out := h.Completed(id); !strings.Contains(out, "first:") {
		h.Fatalf("output %q, want first: ...", out)
	}
	if n := attempts.Load(); n != 2 {
		h.Fatalf("activity ran %d times, want 2", n)
	}
	// Let the loser timer fire on the completed instance: the runtime must
	// consume it without disturbing the history.
	hist := h.History(id)
	_, at, ok := smpFirst[provider.TimerCreated](hist)
	if !ok {
		h.Fatalf("no TimerCreated in %v", EventTypes(hist))
	}
	timerID := hist[at].EventID
	h.AwaitConsumed(id, "the loser timer's firing", 1, func(m provider.WorkItem) bool {
		f, ok := m.(provider.TimerFiredItem)
		return ok && f.ID == timerID
	})
	hist = h.History(id)
	if n := Count(hist, "TimerCreated"); n != 1 {
		h.Fatalf("%d TimerCreated, want 1 (the loser timer)", n)
	}
	if n := Count(hist, "TimerFired"); n > 1 {
		h.Fatalf("%d TimerFired, want at most 1", n)
	}
	if Count(hist, "OrchestrationCompleted") != 1 {
		h.Fatalf("not completed: %v", EventTypes(hist))
	}
	h.CheckHistory(id)
}

func cmpSelect2ScheduleAfterWinnerReturns(h *H) {
	h.Serve(
		durable.ActivityFunc("Instant", func(context.Context, string) (string, error) { return "done", nil }),
		durable.OrchestrationFunc("MinimalOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			timer := ctx.CreateTimer(cmpLongTimer) // duroxide: 1 s
			activity := smpAct(ctx, "Instant", "")
			if durable.Race(ctx, activity, timer) != 0 {
				return "", errors.New("timer won unexpectedly")
			}
			return smpAct(ctx, "Instant", "").Get(ctx)
		}),
	)
	h.Start("MinimalOrch", "minimal-1", durable.Raw(""))
	h.smpWant(h.Completed("minimal-1"), "done")
}

func cmpUnawaitedCompletionDoesNotBlock(h *H) {
	var aRuns, bRuns atomic.Int32
	reg := h.Registry(
		durable.ActivityFunc("ActivityA", func(_ context.Context, in string) (string, error) {
			aRuns.Add(1)
			time.Sleep(5 * time.Millisecond)
			return "A:" + in, nil
		}),
		durable.ActivityFunc("ActivityB", func(_ context.Context, in string) (string, error) {
			bRuns.Add(1)
			time.Sleep(50 * time.Millisecond) // duroxide: 200 ms
			return "B:" + in, nil
		}),
		durable.OrchestrationFunc("UnawaitedFirst", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			a := smpAct(ctx, "ActivityA", "first") // not awaited yet
			b, err := smpAct(ctx, "ActivityB", "second").Get(ctx)
			if err != nil {
				return "", err
			}
			av, err := a.Get(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("B=%s,A=%s", b, av), nil
		}),
	)
	h.Runtime(reg, func(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = 1, 2 })
	const id = "unawaited-first-1"
	h.Start("UnawaitedFirst", id, durable.Raw(""))
	out := h.Completed(id)
	if !strings.Contains(out, "B=B:second") || !strings.Contains(out, "A=A:first") {
		h.Fatalf("output %q, want both results", out)
	}
	if a, b := aRuns.Load(), bRuns.Load(); a != 1 || b != 1 {
		h.Fatalf("A ran %d times, B %d; want once each", a, b)
	}
	var aID, bID uint64
	for _, ev := range h.History(id) {
		if s, ok := ev.Kind.(provider.ActivityScheduled); ok {
			switch s.Name {
			case "ActivityA":
				aID = ev.EventID
			case "ActivityB":
				bID = ev.EventID
			}
		}
	}
	if aID == 0 || bID == 0 || aID >= bID {
		h.Fatalf("A scheduled at %d, B at %d; want A first", aID, bID)
	}
}

// Typed composability.

type cmpMulReq struct {
	A int `json:"a"`
	B int `json:"b"`
}

type cmpMulRes struct {
	Product int `json:"product"`
}

// cmpMathActivities are the typed activities of the typed-composability
// tests.
func cmpMathActivities() []durable.Definition {
	return []durable.Definition{
		smpAdd,
		durable.NewActivity("Mul", func(_ context.Context, r cmpMulReq) (cmpMulRes, error) {
			return cmpMulRes{Product: r.A * r.B}, nil
		}),
		durable.NewActivity("SlowAdd", func(ctx context.Context, r smpAddReq) (smpAddRes, error) {
			select {
			case <-time.After(50 * time.Millisecond): // duroxide: 200 ms
			case <-ctx.Done():
				return smpAddRes{}, ctx.Err()
			}
			return smpAddRes{Sum: r.A + r.B}, nil
		}),
		durable.NewActivity("FailDiv", func(_ context.Context, r cmpMulReq) (cmpMulRes, error) {
			if r.B == 0 {
				return cmpMulRes{}, errors.New("division by zero")
			}
			return cmpMulRes{Product: r.A / r.B}, nil
		}),
	}
}

func cmpAdd(ctx *durable.OrchestrationContext, a, b int) durable.Future[smpAddRes] {
	return durable.CallActivity[smpAddRes](ctx, "Add", smpAddReq{A: a, B: b})
}

func cmpTypedActivityJoinFanOut(h *H) {
	h.Serve(append(cmpMathActivities(), durable.OrchestrationFunc("TypedJoin", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		results, err := durable.AwaitAll(ctx, cmpAdd(ctx, 1, 2), cmpAdd(ctx, 10, 20), cmpAdd(ctx, 100, 200))
		if err != nil {
			return "", err
		}
		total := 0
		for _, r := range results {
			total += r.Sum
		}
		return strconv.Itoa(total), nil
	}))...)
	h.Start("TypedJoin", "tj-1", durable.Raw(""))
	h.smpWant(h.Completed("tj-1"), "333")
}

func cmpTypedActivityJoin2Heterogeneous(h *H) {
	h.Serve(append(cmpMathActivities(), durable.OrchestrationFunc("TypedJoin2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		add := cmpAdd(ctx, 5, 3)
		mul := durable.CallActivity[cmpMulRes](ctx, "Mul", cmpMulReq{A: 5, B: 3})
		durable.WaitAll(ctx, add, mul)
		sum, err := add.Get(ctx)
		if err != nil {
			return "", err
		}
		product, err := mul.Get(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sum=%d,product=%d", sum.Sum, product.Product), nil
	}))...)
	h.Start("TypedJoin2", "tj2-1", durable.Raw(""))
	h.smpWant(h.Completed("tj2-1"), "sum=8,product=15")
}

func cmpTypedActivitySelect2Timeout(h *H) {
	h.Serve(append(cmpMathActivities(), durable.OrchestrationFunc("TypedSelect2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		slow := durable.CallActivity[smpAddRes](ctx, "SlowAdd", smpAddReq{A: 1, B: 2})
		timeout := ctx.CreateTimer(10 * time.Millisecond)
		if durable.Race(ctx, slow, timeout) == 0 {
			r, err := slow.Get(ctx)
			return fmt.Sprintf("completed:%d", r.Sum), err
		}
		return "timeout", nil
	}))...)
	h.Start("TypedSelect2", "ts2-1", durable.Raw(""))
	// Either outcome is valid, depending on timing.
	if out := h.Completed("ts2-1"); out != "timeout" && out != "completed:3" {
		h.Fatalf("output %q, want timeout or completed:3", out)
	}
}

func cmpDurableFutureMapTransformsResult(h *H) {
	h.Serve(
		durable.ActivityFunc("Double", func(_ context.Context, in string) (string, error) {
			n, err := strconv.Atoi(in)
			return strconv.Itoa(2 * n), err
		}),
		durable.OrchestrationFunc("MapCombo", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return durable.Map(smpAct(ctx, "Double", "21"), func(s string) (string, error) {
				n, err := strconv.Atoi(s)
				return strconv.Itoa(n + 1), err
			}).Get(ctx)
		}),
	)
	h.Start("MapCombo", "mc-1", durable.Raw(""))
	h.smpWant(h.Completed("mc-1"), "43")
}

func cmpTypedMapThenJoin(h *H) {
	h.Serve(append(cmpMathActivities(), durable.OrchestrationFunc("TypedMapJoin", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		sum := func(r smpAddRes) (int, error) { return r.Sum, nil }
		results, err := durable.AwaitAll(ctx, durable.Map(cmpAdd(ctx, 1, 2), sum), durable.Map(cmpAdd(ctx, 10, 20), sum))
		if err != nil {
			return "", err
		}
		return strconv.Itoa(results[0] + results[1]), nil
	}))...)
	h.Start("TypedMapJoin", "tmj-1", durable.Raw(""))
	h.smpWant(h.Completed("tmj-1"), "33")
}

func cmpMapPreservesCancellationOnDrop(h *H) {
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	reg := h.Registry(
		durable.ActivityFunc("SlowWork", func(ctx context.Context, _ string) (string, error) {
			// Non-blocking sends: a redelivery (at least once) must not hang.
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			select {
			case cancelled <- context.Cause(ctx):
			default:
			}
			return "", context.Cause(ctx)
		}),
		durable.OrchestrationFunc("MapCancel", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			mapped := durable.Map(smpAct(ctx, "SlowWork", ""), func(s string) (string, error) { return "mapped:" + s, nil })
			drop := smpWait(ctx, "Drop")
			if durable.Race(ctx, mapped, drop) == 0 {
				r, err := mapped.Get(ctx)
				return "work:" + r, err
			}
			return "cancelled", nil
		}),
	)
	// duroxide races the mapped activity against a 50 ms timer. Here the
	// other branch is an event raised once the activity runs: with a timer,
	// a worker slower than the timer (a throttled or lagging fetch) finds
	// the activity already cancelled and never runs it, and the test would
	// see no cancellation to check.
	// A worker learns of a cancellation when it renews the activity's lock:
	// a short lock makes that quick.
	h.Runtime(reg, func(o *durable.Options) { o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second })
	h.Start("MapCancel", "mcan-1", durable.Raw(""))
	select {
	case <-started:
	case <-h.Ctx().Done():
		h.Fatal("the activity never started")
	}
	if err := h.Client.RaiseEvent(h.Ctx(), "mcan-1", "Drop", durable.Raw("")); err != nil {
		h.Fatal(err)
	}
	h.smpWant(h.Completed("mcan-1"), "cancelled")
	// The mapped future's loss cancelled the activity underneath.
	req, _, ok := smpFirst[provider.ActivityCancelRequested](h.History("mcan-1"))
	if !ok || req.Reason != "dropped_future" {
		h.Fatalf("history %v: want ActivityCancelRequested(dropped_future)", EventTypes(h.History("mcan-1")))
	}
	select {
	case cause := <-cancelled:
		if !errors.Is(cause, durable.ErrActivityCancelled) {
			h.Fatalf("activity context cancelled by %v, want ErrActivityCancelled", cause)
		}
	case <-h.Ctx().Done():
		h.Fatal("the running activity was never cancelled")
	}
}

func cmpTypedErrorPropagationThroughJoin(h *H) {
	h.Serve(append(cmpMathActivities(), durable.OrchestrationFunc("TypedErrJoin", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ok := durable.CallActivity[cmpMulRes](ctx, "FailDiv", cmpMulReq{A: 10, B: 2})
		bad := durable.CallActivity[cmpMulRes](ctx, "FailDiv", cmpMulReq{A: 10, B: 0})
		durable.WaitAll(ctx, ok, bad)
		first, err := ok.Get(ctx)
		if err != nil {
			return "", err
		}
		_, secondErr := bad.Get(ctx)
		if secondErr == nil {
			return "", errors.New("division by zero succeeded")
		}
		return fmt.Sprintf("ok=%d,err=%v", first.Product, secondErr), nil
	}))...)
	h.Start("TypedErrJoin", "tej-1", durable.Raw(""))
	h.smpWant(h.Completed("tej-1"), "ok=5,err=division by zero")
}

// Races between events and timers.

func cmpWaitExternalCompletes(h *H) {
	h.Serve(durable.OrchestrationFunc("WaitExternal", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		data, err := smpWait(ctx, "Only").Get(ctx)
		return "only=" + data, err
	}))
	const id = "inst-wait-1"
	h.Start("WaitExternal", id, durable.Raw(""))
	h.AwaitSubscription(id, "Only")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Only", durable.Raw("payload")); err != nil {
		h.Fatal(err)
	}
	h.smpWant(h.Completed(id), "only=payload")
	hist, err := h.Client.History(h.Ctx(), id, 1)
	if err != nil {
		h.Fatal(err)
	}
	want := []string{"OrchestrationStarted", "ExternalSubscribed", "ExternalEvent", "OrchestrationCompleted"}
	if got := EventTypes(hist); !slices.Equal(got, want) {
		h.Fatalf("history %v, want %v", got, want)
	}
}

func cmpRaceExternalVsTimerOrdering(h *H) {
	h.Serve(durable.OrchestrationFunc("RaceOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		t := ctx.CreateTimer(10 * time.Millisecond)
		e := smpWait(ctx, "Race")
		if durable.Race(ctx, t, e) == 0 {
			return "timer", nil
		}
		return "external", nil
	}))
	const id = "inst-race-order-1"
	h.Start("RaceOrchestration", id, durable.Raw(""))
	// The event is raised once the timer has fired (duroxide waits 20 ms
	// after the subscription).
	h.AwaitEvent(id, "ExternalSubscribed")
	h.AwaitEvent(id, "TimerFired")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Race", durable.Raw("ok")); err != nil {
		h.Fatal(err)
	}
	h.smpWant(h.Completed(id), "timer")
	hist, err := h.Client.History(h.Ctx(), id, 1)
	if err != nil {
		h.Fatal(err)
	}
	_, it, _ := smpFirst[provider.TimerFired](hist)
	if ie := cmpEventIndex(hist, "Race"); ie >= 0 && ie < it {
		h.Fatalf("external (%d) before timer (%d): %v", ie, it, EventTypes(hist))
	}
}

func cmpRaceEventVsTimerEventWins(h *H) {
	h.Serve(durable.OrchestrationFunc("RaceEventVsTimer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ev := smpWait(ctx, "Race")
		t := ctx.CreateTimer(cmpLongTimer) // duroxide: 100 ms
		if durable.Race(ctx, ev, t) == 0 {
			return ev.Get(ctx)
		}
		return "timer", nil
	}))
	const id = "inst-race-order-2"
	h.Start("RaceEventVsTimer", id, durable.Raw(""))
	h.AwaitSubscription(id, "Race")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Race", durable.Raw("ok")); err != nil {
		h.Fatal(err)
	}
	h.smpWant(h.Completed(id), "ok")
	hist, err := h.Client.History(h.Ctx(), id, 1)
	if err != nil {
		h.Fatal(err)
	}
	ie := cmpEventIndex(hist, "Race")
	if ie < 0 {
		h.Fatalf("no ExternalEvent in %v", EventTypes(hist))
	}
	if _, it, ok := smpFirst[provider.TimerFired](hist); ok && it < ie {
		h.Fatalf("timer (%d) before external (%d): %v", it, ie, EventTypes(hist))
	}
}

// Orchestrations running side by side.

// cmpJoinActivityEventTimer joins an activity, an external event and a
// timer, as duroxide's concurrency tests do, and returns the activity's
// result and the event's payload.
func cmpJoinActivityEventTimer(ctx *durable.OrchestrationContext, activity, in string) (string, string, error) {
	a := smpAct(ctx, activity, in)
	e := smpWait(ctx, "Go")
	t := ctx.CreateTimer(time.Millisecond)
	durable.WaitAll(ctx, a, e, t)
	av, err := a.Get(ctx)
	if err != nil {
		return "", "", err
	}
	ev, err := e.Get(ctx)
	return av, ev, err
}

// cmpRaiseGo raises "Go" with data to id once it waits for it.
func (h *H) cmpRaiseGo(id, data string) {
	h.Helper()
	h.AwaitSubscription(id, "Go")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Go", durable.Raw(data)); err != nil {
		h.Fatal(err)
	}
}

// cmpCheckJoinHistory checks id's first execution: the activity scheduled
// as event scheduleID completed with result, the event data delivered, a
// timer fired.
func (h *H) cmpCheckJoinHistory(id string, scheduleID uint64, result, data string) {
	h.Helper()
	hist, err := h.Client.History(h.Ctx(), id, 1)
	if err != nil {
		h.Fatal(err)
	}
	var completed, delivered bool
	for _, ev := range hist {
		switch k := ev.Kind.(type) {
		case provider.ActivityCompleted:
			completed = completed || (ev.SourceEventID != nil && *ev.SourceEventID == scheduleID && k.Result == result)
		case provider.ExternalEvent:
			delivered = delivered || k.Data == data
		}
	}
	if !completed || !delivered || Count(hist, "TimerFired") == 0 {
		h.Fatalf("%s: want ActivityCompleted(%d)=%q, ExternalEvent %q and TimerFired in %v", id, scheduleID, result, data, EventTypes(hist))
	}
}

func cmpProc() durable.Definition {
	return durable.ActivityFunc("Proc", func(_ context.Context, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		return strconv.Itoa(n + 1), nil
	})
}

func cmpProcOrchestration1() durable.Definition {
	return durable.OrchestrationFunc("ProcOrchestration1", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, e, err := cmpJoinActivityEventTimer(ctx, "Proc", "10")
		return fmt.Sprintf("o1:a=%s;evt=%s", a, e), err
	})
}

func cmpConcurrentOrchestrationsDifferentActivities(h *H) {
	h.Serve(
		smpUpper,
		durable.ActivityFunc("Add", func(_ context.Context, in string) (string, error) {
			a, b, _ := strings.Cut(in, ",")
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return strconv.Itoa(x + y), nil
		}),
		durable.OrchestrationFunc("AddOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			a, e, err := cmpJoinActivityEventTimer(ctx, "Add", "2,3")
			return fmt.Sprintf("o1:sum=%s;evt=%s", a, e), err
		}),
		durable.OrchestrationFunc("UpperOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			a, e, err := cmpJoinActivityEventTimer(ctx, "Upper", "hi")
			return fmt.Sprintf("o2:up=%s;evt=%s", a, e), err
		}),
	)
	h.Start("AddOrchestration", "inst-multi-1", durable.Raw(""))
	h.Start("UpperOrchestration", "inst-multi-2", durable.Raw(""))
	h.cmpRaiseGo("inst-multi-1", "E1")
	h.cmpRaiseGo("inst-multi-2", "E2")
	h.smpWant(h.Completed("inst-multi-1"), "o1:sum=5;evt=E1")
	h.smpWant(h.Completed("inst-multi-2"), "o2:up=HI;evt=E2")
	h.cmpCheckJoinHistory("inst-multi-1", 2, "5", "E1")
	h.cmpCheckJoinHistory("inst-multi-2", 2, "HI", "E2")
}

func cmpConcurrentOrchestrationsSameActivities(h *H) {
	h.Serve(
		cmpProc(),
		cmpProcOrchestration1(),
		durable.OrchestrationFunc("ProcOrchestration2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if _, err := ctx.NewGUID().Get(ctx); err != nil {
				return "", err
			}
			a, e, err := cmpJoinActivityEventTimer(ctx, "Proc", "20")
			return fmt.Sprintf("o2:a=%s;evt=%s", a, e), err
		}),
	)
	h.Start("ProcOrchestration1", "inst-same-acts-1", durable.Raw(""))
	h.Start("ProcOrchestration2", "inst-same-acts-2", durable.Raw(""))
	h.cmpRaiseGo("inst-same-acts-1", "P1")
	h.cmpRaiseGo("inst-same-acts-2", "P2")
	h.smpWant(h.Completed("inst-same-acts-1"), "o1:a=11;evt=P1")
	h.smpWant(h.Completed("inst-same-acts-2"), "o2:a=21;evt=P2")
	h.cmpCheckJoinHistory("inst-same-acts-1", 2, "11", "P1")
	// new_guid is an activity (events 2 and 3): Proc is scheduled as event 4.
	h.cmpCheckJoinHistory("inst-same-acts-2", 4, "21", "P2")
}

func cmpSingleOrchestrationWithJoin(h *H) {
	h.Serve(cmpProc(), cmpProcOrchestration1())
	h.Start("ProcOrchestration1", "inst-single", durable.Raw(""))
	h.cmpRaiseGo("inst-single", "P1")
	h.smpWant(h.Completed("inst-single"), "o1:a=11;evt=P1")
}
