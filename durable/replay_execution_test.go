package durable

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// ---- src/runtime/execution.rs (unit tests) ----
//
// duroxide's unit tests call two functions of the turn over hand-written
// event lists: collect_unmatched_queue_messages (the queued messages a
// continue-as-new carries forward) and get_outstanding_schedule_ids (the
// schedules a terminal turn cancels). duradyn computes both inside the
// engine's terminal turn, so each test replays its event list as the
// persisted history of an execution and checks the turn:
//   - collect_*: the code mirrors the history's schedules and continues as
//     new; the ContinueAsNew item's carry_forward_events are the result.
//   - outstanding_*: the code mirrors the history's schedules and the turn
//     delivers a cancellation; the breadcrumbs before OrchestrationFailed
//     (subscriptions "orchestration_terminal", activities
//     "orchestration_terminal_failed"), the worker cancellations and the
//     CancelInstance items to children are the result.
// Every history starts with OrchestrationStarted (event 1), so duroxide's
// event ids are shifted by one; a breadcrumb's source follows its schedule.

// xeStarted is the execution's start event.
const xeStarted = `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"in","parent_instance":null,"parent_id":null}`

// Event lines, after duroxide's test fixtures.

func xeSub(id uint64, name string) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"ExternalSubscribedPersistent","name":%q}`, id, name)
}

func xeArrival(id uint64, name, data string) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"ExternalEventPersistent","name":%q,"data":%q}`, id, name, data)
}

func xeCancel(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"ExternalSubscribedPersistentCancelled","reason":"dropped_future"}`, id, source)
}

func xeActivityScheduled(id uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"ActivityScheduled","name":"task","input":"{}"}`, id)
}

func xePositionalSub(id uint64, name string) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"ExternalSubscribed","name":%q}`, id, name)
}

func xePositionalEvent(id uint64, name, data string) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"ExternalEvent","name":%q,"data":%q}`, id, name, data)
}

func xePositionalCancelled(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"ExternalSubscribedCancelled","reason":"dropped_future"}`, id, source)
}

func xeActivityCompleted(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"ActivityCompleted","result":"ok"}`, id, source)
}

func xeActivityCancelRequested(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"ActivityCancelRequested","reason":"dropped_future"}`, id, source)
}

func xeSubOrchScheduled(id uint64, child string) string {
	return fmt.Sprintf(`{"event_id":%d,"type":"SubOrchestrationScheduled","name":"child","instance":%q,"input":"{}"}`, id, child)
}

func xeSubOrchCompleted(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"SubOrchestrationCompleted","result":"done"}`, id, source)
}

func xeSubOrchCancelRequested(id, source uint64) string {
	return fmt.Sprintf(`{"event_id":%d,"source_event_id":%d,"type":"SubOrchestrationCancelRequested","reason":"dropped_future"}`, id, source)
}

// xeHistory joins event lines after the start event.
func xeHistory(lines ...string) string {
	return strings.Join(append([]string{xeStarted}, lines...), "\n")
}

// xeArrivals returns n arrivals on queue X, data-0 to data-(n-1), from
// event id first.
func xeArrivals(first uint64, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = xeArrival(first+uint64(i), "X", fmt.Sprintf("data-%d", i))
	}
	return out
}

// xeEmit issues the schedules a history records, in order, without
// awaiting them. A step is "activity", "queue NAME", "event NAME" or
// "child INSTANCE", followed by " cancel" when the history cancels it.
func xeEmit(ctx *OrchestrationContext, steps []string) {
	for _, step := range steps {
		f := strings.Fields(step)
		var a Awaitable
		switch f[0] {
		case "activity":
			a = CallActivity[Raw](ctx, "task", Raw("{}"))
		case "queue":
			a = Dequeue[Raw](ctx, f[1])
		case "event":
			a = WaitForEvent[Raw](ctx, f[1])
		case "child":
			a = CallSubOrchestration[Raw](ctx, "child", Raw("{}"), WithInstanceID(f[1]))
		default:
			panic("unknown step " + step)
		}
		if len(f) > 1 && f[len(f)-1] == "cancel" {
			a.Cancel()
		}
	}
}

// xeContinueAsNew issues steps, then continues as new.
func xeContinueAsNew(steps ...string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		xeEmit(ctx, steps)
		return "", ctx.ContinueAsNew(Raw("next"))
	}
}

// xeReturn issues steps, then returns.
func xeReturn(steps ...string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		xeEmit(ctx, steps)
		return "done", nil
	}
}

// xeCarried checks a continue-as-new turn: it carries forward exactly want
// ("name=data").
func xeCarried(want ...string) func(*testing.T, *replay.Turn) {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		if turn.Outcome != replay.ContinuedAsNew {
			t.Fatalf("outcome %v (%s), want continued as new", turn.Outcome, failureMessage(turn))
		}
		var can *provider.ContinueAsNewItem
		for _, it := range turn.Commit.OrchestratorItems {
			if c, ok := it.(provider.ContinueAsNewItem); ok {
				can = &c
			}
		}
		if can == nil || can.Orchestration != testOrch || can.Input != "next" {
			t.Fatalf("orchestrator items %+v, want a ContinueAsNew of %s with input next", turn.Commit.OrchestratorItems, testOrch)
		}
		got := make([]string, len(can.CarryForwardEvents))
		for i, cf := range can.CarryForwardEvents {
			got[i] = cf.Name + "=" + cf.Data
		}
		if !slices.Equal(got, want) {
			t.Fatalf("carry forward %v, want %v", got, want)
		}
	}
}

// xeOutstanding are the schedules a terminal turn finds outstanding, by
// schedule event id (children by instance).
type xeOutstanding struct {
	activities, positional, queue []uint64
	children                      []string
}

// xeCancelMsg cancels the instance.
const xeCancelMsg = `{"CancelInstance":{"instance":"test-instance","reason":"stop"}}`

// xeTerminal checks a cancelled turn over a history whose last event id is
// last (0: no history, the turn starts the instance): the delta is the
// start event when there was no history, the cancellation request, one breadcrumb per
// outstanding subscription and activity, and the failure; each outstanding
// activity is cancelled on its worker and each outstanding child is sent a
// cancellation.
func xeTerminal(last uint64, want xeOutstanding) func(*testing.T, *replay.Turn) {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		if turn.Outcome != replay.Failed || failureMessage(turn) != "canceled: stop" {
			t.Fatalf("outcome %v (%q), want cancelled", turn.Outcome, failureMessage(turn))
		}
		var wantDelta []string
		if last == 0 {
			last++
			wantDelta = append(wantDelta, "1 OrchestrationStarted")
		}
		id := last + 1
		wantDelta = append(wantDelta, fmt.Sprintf("%d OrchestrationCancelRequested", id))
		crumb := func(typ string, src uint64, reason string) {
			id++
			wantDelta = append(wantDelta, fmt.Sprintf("%d %s<-%d %s", id, typ, src, reason))
		}
		for _, src := range want.positional {
			crumb("ExternalSubscribedCancelled", src, "orchestration_terminal")
		}
		for _, src := range want.queue {
			crumb("ExternalSubscribedPersistentCancelled", src, "orchestration_terminal")
		}
		for _, src := range want.activities {
			crumb("ActivityCancelRequested", src, "orchestration_terminal_failed")
		}
		wantDelta = append(wantDelta, fmt.Sprintf("%d OrchestrationFailed", id+1))
		if got := xeDescribe(turn); !slices.Equal(got, wantDelta) {
			t.Fatalf("delta\n got %v\nwant %v", got, wantDelta)
		}
		var cancelled []uint64
		for _, a := range turn.Commit.CancelledActivities {
			if a.Instance != testInstance || a.ExecutionID != 1 {
				t.Fatalf("cancelled activity %+v", a)
			}
			cancelled = append(cancelled, a.ActivityID)
		}
		if !slices.Equal(cancelled, want.activities) {
			t.Fatalf("cancelled activities %v, want %v", cancelled, want.activities)
		}
		var children []string
		for _, it := range turn.Commit.OrchestratorItems {
			c, ok := it.(provider.CancelInstanceItem)
			if !ok || c.Reason != replay.ReasonParentCancelled {
				t.Fatalf("orchestrator item %+v", it)
			}
			children = append(children, c.Instance)
		}
		if !slices.Equal(children, want.children) {
			t.Fatalf("cancelled children %v, want %v", children, want.children)
		}
		if len(turn.Commit.WorkerItems) != 0 {
			t.Fatalf("worker items %+v", turn.Commit.WorkerItems)
		}
	}
}

// xeDescribe lists a turn's delta as "id Type[<-source reason]".
func xeDescribe(turn *replay.Turn) []string {
	out := make([]string, len(turn.Commit.HistoryDelta))
	for i, ev := range turn.Commit.HistoryDelta {
		s := fmt.Sprintf("%d %s", ev.EventID, ev.Kind.EventType())
		if ev.SourceEventID != nil {
			s += fmt.Sprintf("<-%d", *ev.SourceEventID)
		}
		switch k := ev.Kind.(type) {
		case provider.ActivityCancelRequested:
			s += " " + k.Reason
		case provider.ExternalSubscribedCancelled:
			s += " " + k.Reason
		case provider.QueueSubscriptionCancelled:
			s += " " + k.Reason
		case provider.SubOrchestrationCancelRequested:
			s += " " + k.Reason
		}
		out[i] = s
	}
	return out
}

type xeCase struct {
	name    string
	history string // empty: the turn starts the instance
	msgs    string
	orch    rxOrch
	check   func(*testing.T, *replay.Turn)
}

// xeStart starts the instance.
const xeStart = `{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"in","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`

var xeCases = []xeCase{
	// ---- collect_unmatched_queue_messages ----
	{
		// A start turn that continues as new at once carries nothing.
		name:  "no_events_returns_empty",
		msgs:  xeStart,
		orch:  xeContinueAsNew(),
		check: xeCarried(),
	},
	{
		name:    "arrivals_only_all_unmatched",
		history: xeHistory(xeArrival(2, "X", "a"), xeArrival(3, "X", "b"), xeArrival(4, "Y", "c")),
		orch:    xeContinueAsNew(),
		check:   xeCarried("X=a", "X=b", "Y=c"),
	},
	{
		// X: the subscription takes x1, x2 is left; Y: y1 is taken.
		name: "subs_consume_arrivals_per_name",
		history: xeHistory(xeSub(2, "X"), xeSub(3, "Y"),
			xeArrival(4, "X", "x1"), xeArrival(5, "X", "x2"), xeArrival(6, "Y", "y1")),
		orch:  xeContinueAsNew("queue X", "queue Y"),
		check: xeCarried("X=x2"),
	},
	{
		// The active subscription takes a; the cancelled one takes nothing.
		name: "cancelled_sub_does_not_consume",
		history: xeHistory(xeSub(2, "X"), xeSub(3, "X"), xeCancel(4, 3),
			xeArrival(5, "X", "a"), xeArrival(6, "X", "b")),
		orch:  xeContinueAsNew("queue X", "queue X cancel"),
		check: xeCarried("X=b"),
	},
	{
		// A subscription for Y does not take an arrival for X.
		name:    "per_name_isolation",
		history: xeHistory(xeSub(2, "Y"), xeArrival(3, "X", "x-data"), xeArrival(4, "Y", "y-data")),
		orch:    xeContinueAsNew("queue Y"),
		check:   xeCarried("X=x-data"),
	},
	{
		name: "fifo_order_preserved_across_names",
		history: xeHistory(xeArrival(2, "B", "b1"), xeArrival(3, "A", "a1"),
			xeArrival(4, "B", "b2"), xeArrival(5, "A", "a2")),
		orch:  xeContinueAsNew(),
		check: xeCarried("B=b1", "A=a1", "B=b2", "A=a2"),
	},
	{
		// The subscription for A takes a1; the rest keep history order.
		name: "fifo_order_with_partial_consumption",
		history: xeHistory(xeSub(2, "A"), xeArrival(3, "B", "b1"), xeArrival(4, "A", "a1"),
			xeArrival(5, "A", "a2"), xeArrival(6, "B", "b2")),
		orch:  xeContinueAsNew("queue A"),
		check: xeCarried("B=b1", "A=a2", "B=b2"),
	},
	{
		name: "unrelated_events_are_ignored",
		history: xeHistory(xeActivityScheduled(2), xeSub(3, "X"), xeActivityScheduled(4),
			xeArrival(5, "X", "x1"), xeArrival(6, "X", "x2"), xeActivityScheduled(7)),
		orch:  xeContinueAsNew("activity", "queue X", "activity", "activity"),
		check: xeCarried("X=x2"),
	},
	{
		name:    "more_subs_than_arrivals_returns_empty",
		history: xeHistory(xeSub(2, "X"), xeSub(3, "X"), xeSub(4, "X"), xeArrival(5, "X", "only-one")),
		orch:    xeContinueAsNew("queue X", "queue X", "queue X"),
		check:   xeCarried(),
	},
	{
		// A's subscription takes a-data; B's is cancelled, so b-data is left.
		name: "cancelled_sub_with_multiple_names",
		history: xeHistory(xeSub(2, "A"), xeSub(3, "B"), xeCancel(4, 3),
			xeArrival(5, "A", "a-data"), xeArrival(6, "B", "b-data")),
		orch:  xeContinueAsNew("queue A", "queue B cancel"),
		check: xeCarried("B=b-data"),
	},
	{
		// 25 arrivals, under the cap: all are carried, in order.
		name:    "collect_returns_all_unmatched_without_cap",
		history: xeHistory(xeArrivals(2, 25)...),
		orch:    xeContinueAsNew(),
		check:   xeCarried(xeCarriedData(25)...),
	},
	{
		// duradyn keeps duroxide 0.1.29's cap of 100 (earlier duroxide had
		// 20), and like its code keeps the first 100 in history order.
		name:    "max_carry_forward_constant_is_20",
		history: xeHistory(xeArrivals(2, replay.MaxCarryForwardEvents+1)...),
		orch:    xeContinueAsNew(),
		check: func(t *testing.T, turn *replay.Turn) {
			if replay.MaxCarryForwardEvents != 100 {
				t.Fatalf("MaxCarryForwardEvents = %d, want 100", replay.MaxCarryForwardEvents)
			}
			xeCarried(xeCarriedData(100)...)(t, turn)
		},
	},
	{
		name:    "empty_history_no_subs_no_arrivals",
		history: xeHistory(xeActivityScheduled(2), xeActivityScheduled(3)),
		orch:    xeContinueAsNew("activity", "activity"),
		check:   xeCarried(),
	},
	{
		// A cancellation of a schedule that does not exist changes nothing.
		name:    "cancel_without_matching_sub_is_harmless",
		history: xeHistory(xeCancel(2, 999), xeArrival(3, "X", "data")),
		orch:    xeContinueAsNew(),
		check:   xeCarried("X=data"),
	},

	// ---- get_outstanding_schedule_ids ----
	{
		// A start turn cancelled at once has nothing outstanding.
		name:  "outstanding_empty_history",
		msgs:  xeStart + "\n" + xeCancelMsg,
		orch:  xeReturn(),
		check: xeTerminal(0, xeOutstanding{}),
	},
	{
		name: "outstanding_all_resolved",
		history: xeHistory(
			xeActivityScheduled(2), xeActivityCompleted(3, 2),
			xePositionalSub(4, "ev"), xePositionalEvent(5, "ev", "data"),
			xeSub(6, "X"), xeArrival(7, "X", "x-data"),
			xeSubOrchScheduled(8, "child-1"), xeSubOrchCompleted(9, 8)),
		msgs:  xeCancelMsg,
		orch:  xeReturn("activity", "event ev", "queue X", "child child-1"),
		check: xeTerminal(9, xeOutstanding{}),
	},
	{
		name: "outstanding_all_cancelled",
		history: xeHistory(
			xeActivityScheduled(2), xeActivityCancelRequested(3, 2),
			xePositionalSub(4, "ev"), xePositionalCancelled(5, 4),
			xeSub(6, "X"), xeCancel(7, 6),
			xeSubOrchScheduled(8, "child-1"), xeSubOrchCancelRequested(9, 8)),
		msgs:  xeCancelMsg,
		orch:  xeReturn("activity cancel", "event ev cancel", "queue X cancel", "child child-1 cancel"),
		check: xeTerminal(9, xeOutstanding{}),
	},
	{
		// Resolved: activity 2, event 5, queue 8, child 11. Outstanding:
		// activity 4, event 7, queue 10, child 13 ("c2").
		name: "outstanding_mixed_resolved_and_outstanding",
		history: xeHistory(
			xeActivityScheduled(2), xeActivityCompleted(3, 2),
			xeActivityScheduled(4),
			xePositionalSub(5, "ev"), xePositionalEvent(6, "ev", "d"),
			xePositionalSub(7, "ev2"),
			xeSub(8, "X"), xeArrival(9, "X", "x-data"),
			xeSub(10, "Y"),
			xeSubOrchScheduled(11, "c1"), xeSubOrchCompleted(12, 11),
			xeSubOrchScheduled(13, "c2")),
		msgs: xeCancelMsg,
		orch: xeReturn("activity", "activity", "event ev", "event ev2", "queue X", "queue Y", "child c1", "child c2"),
		check: xeTerminal(13, xeOutstanding{
			activities: []uint64{4}, positional: []uint64{7}, queue: []uint64{10}, children: []string{"c2"},
		}),
	},
	{
		// Two subscriptions, one arrival: the first takes it.
		name:    "outstanding_persistent_fifo_partial",
		history: xeHistory(xeSub(2, "X"), xeSub(3, "X"), xeArrival(4, "X", "data")),
		msgs:    xeCancelMsg,
		orch:    xeReturn("queue X", "queue X"),
		check:   xeTerminal(4, xeOutstanding{queue: []uint64{3}}),
	},
	{
		// The cancelled subscription does not take the arrival; the active
		// one does. (duroxide's fixture numbers the cancellation before the
		// second subscription; here ids follow history order.)
		name:    "outstanding_persistent_cancelled_sub_not_counted_as_consumer",
		history: xeHistory(xeSub(2, "X"), xeCancel(3, 2), xeSub(4, "X"), xeArrival(5, "X", "data")),
		msgs:    xeCancelMsg,
		orch:    xeReturn("queue X cancel", "queue X"),
		check:   xeTerminal(5, xeOutstanding{}),
	},
	{
		name: "outstanding_persistent_more_arrivals_than_subs",
		history: xeHistory(xeSub(2, "X"),
			xeArrival(3, "X", "a"), xeArrival(4, "X", "b"), xeArrival(5, "X", "c")),
		msgs:  xeCancelMsg,
		orch:  xeReturn("queue X"),
		check: xeTerminal(5, xeOutstanding{}),
	},
}

// xeCarriedData is "X=data-0" to "X=data-(n-1)".
func xeCarriedData(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("X=data-%d", i)
	}
	return out
}

func TestReplayExecution(t *testing.T) {
	for _, c := range xeCases {
		t.Run(c.name, func(t *testing.T) {
			var history []provider.Event
			if c.history != "" {
				history = historyJSON(t, c.history)
			}
			c.check(t, replayTurn(t, c.orch, history, messagesJSONL(t, c.msgs)))
		})
	}
}

func TestReplayExecutionRowCount(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range xeCases {
		if seen[c.name] {
			t.Errorf("duplicate row %s", c.name)
		}
		seen[c.name] = true
	}
	if len(xeCases) != 21 {
		t.Fatalf("%d rows, want execution.rs's 21 unit tests", len(xeCases))
	}
}
