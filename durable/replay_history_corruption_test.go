package durable

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// Ports of duroxide's replay-engine tests run as tables of rxCase: one turn
// of an orchestration over a history and the messages delivered with it,
// both written as duroxide JSON lines. Duroxide's engine leaves the
// terminal event to its caller; duradyn's turn ends with it, so the
// expected deltas below end with the terminal event.

// rxOrch is the orchestration code of a case.
type rxOrch = func(ctx *OrchestrationContext, input string) (string, error)

// rxCase is one ported test.
type rxCase struct {
	name    string
	history string                      // duroxide JSON lines
	msgs    string                      // work items, duroxide JSON lines
	kv      map[string]provider.KVEntry // KV snapshot of earlier executions
	orch    rxOrch
	check   func(t *testing.T, turn *replay.Turn)
}

// rxRun runs each case as a subtest named after its duroxide test.
func rxRun(t *testing.T, cases []rxCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			var opts []func(*replay.Input)
			if c.kv != nil {
				opts = append(opts, func(in *replay.Input) { in.Item.KVSnapshot = c.kv })
			}
			turn := replayTurn(t, c.orch, historyJSON(t, c.history), messagesJSONL(t, c.msgs), opts...)
			c.check(t, turn)
		})
	}
}

// rxStarted is duroxide's started_event(1).
const rxStarted = `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`

// ---- orchestration code (duroxide's mock handlers) ----

func rxImmediate(out string) rxOrch {
	return func(*OrchestrationContext, string) (string, error) { return out, nil }
}

func rxImmediateErr(msg string) rxOrch {
	return func(*OrchestrationContext, string) (string, error) { return "", errors.New(msg) }
}

func rxActivity(name, input string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallActivity[Raw](ctx, name, Raw(input)).Get(ctx)
		return string(r), err
	}
}

func rxTimer(d time.Duration) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(d); err != nil {
			return "", err
		}
		return "timer_done", nil
	}
}

func rxWait(name string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := WaitForEvent[Raw](ctx, name).Get(ctx)
		return string(r), err
	}
}

func rxSub(name, input string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallSubOrchestration[Raw](ctx, name, Raw(input)).Get(ctx)
		return string(r), err
	}
}

func rxTwoActivities(n1, i1, n2, i2 string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r1, err := CallActivity[Raw](ctx, n1, Raw(i1)).Get(ctx)
		if err != nil {
			return "", err
		}
		r2, err := CallActivity[Raw](ctx, n2, Raw(i2)).Get(ctx)
		if err != nil {
			return "", err
		}
		return string(r1) + "," + string(r2), nil
	}
}

func rxTwoTimers(d1, d2 time.Duration) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(d1); err != nil {
			return "", err
		}
		if err := ctx.Sleep(d2); err != nil {
			return "", err
		}
		return "done", nil
	}
}

func rxSubThenActivity(sub, subIn, act, actIn string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r1, err := CallSubOrchestration[Raw](ctx, sub, Raw(subIn)).Get(ctx)
		if err != nil {
			return "", err
		}
		r2, err := CallActivity[Raw](ctx, act, Raw(actIn)).Get(ctx)
		if err != nil {
			return "", err
		}
		return string(r1) + "," + string(r2), nil
	}
}

func rxDetachedThenActivity(orch, instance, orchIn, act, actIn string) rxOrch {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.StartOrchestration(orch, instance, Raw(orchIn)); err != nil {
			return "", err
		}
		r, err := CallActivity[Raw](ctx, act, Raw(actIn)).Get(ctx)
		return string(r), err
	}
}

// ---- checks ----

type rxCheck = func(t *testing.T, turn *replay.Turn)

func rxAll(checks ...rxCheck) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		for _, c := range checks {
			c(t, turn)
		}
	}
}

var rxOutcomeNames = map[replay.Outcome]string{
	replay.Continue: "Continue", replay.Completed: "Completed", replay.Failed: "Failed",
	replay.ContinuedAsNew: "ContinuedAsNew", replay.Drained: "Drained",
}

func rxOutcome(t *testing.T, turn *replay.Turn, want replay.Outcome) {
	t.Helper()
	if turn.Outcome != want {
		t.Fatalf("outcome %s (failure %q), want %s; delta %v", rxOutcomeNames[turn.Outcome], failureMessage(turn), rxOutcomeNames[want], rxDescribeDelta(turn))
	}
}

// rxCompleted: the orchestration completed with out.
func rxCompleted(out string) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		rxOutcome(t, turn, replay.Completed)
		if turn.Output != out {
			t.Fatalf("output %q, want %q", turn.Output, out)
		}
		if n := len(turn.Commit.HistoryDelta); n == 0 || turn.Commit.HistoryDelta[n-1].Kind.EventType() != "OrchestrationCompleted" {
			t.Fatalf("delta does not end with OrchestrationCompleted: %v", rxDescribeDelta(turn))
		}
	}
}

// rxContinue: the execution waits for more.
func rxContinue() rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		rxOutcome(t, turn, replay.Continue)
	}
}

// rxNondeterminism: the turn failed with a nondeterminism error whose
// message starts with prefix (duroxide's wording) and contains each of
// parts (pieces of the Debug-formatted tail, whose layout differs).
func rxNondeterminism(prefix string, parts ...string) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		rxOutcome(t, turn, replay.Failed)
		d, ok := turn.Failure.(provider.ConfigurationDetails)
		if !ok || d.Kind != provider.ConfigNondeterminism {
			t.Fatalf("failure %#v, want nondeterminism", turn.Failure)
		}
		if msg := failureMessage(turn); !strings.HasPrefix(msg, "nondeterministic: "+prefix) {
			t.Fatalf("failure message %q, want prefix %q", msg, "nondeterministic: "+prefix)
		}
		for _, part := range parts {
			if msg := failureMessage(turn); !strings.Contains(msg, part) {
				t.Fatalf("failure message %q does not contain %q", msg, part)
			}
		}
		if n := len(turn.Commit.HistoryDelta); n == 0 || turn.Commit.HistoryDelta[n-1].Kind.EventType() != "OrchestrationFailed" {
			t.Fatalf("delta does not end with OrchestrationFailed: %v", rxDescribeDelta(turn))
		}
	}
}

// rxDrained: the execution had ended; nothing runs and nothing is written
// (duroxide's engine answers TurnResult::Continue with an empty delta).
func rxDrained() rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		rxOutcome(t, turn, replay.Drained)
		c := turn.Commit
		if len(c.HistoryDelta)+len(c.WorkerItems)+len(c.OrchestratorItems)+len(c.CancelledActivities) != 0 {
			t.Fatalf("drained turn wrote %+v", c)
		}
	}
}

// rxDelta: the delta, each event as "Type id", "Type id<-source", and for
// cancellation breadcrumbs " reason".
func rxDelta(want ...string) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		if got := rxDescribeDelta(turn); !slices.Equal(got, want) {
			t.Fatalf("delta\n got %q\nwant %q", got, want)
		}
	}
}

func rxDescribeDelta(turn *replay.Turn) []string {
	out := make([]string, 0, len(turn.Commit.HistoryDelta))
	for _, ev := range turn.Commit.HistoryDelta {
		s := fmt.Sprintf("%s %d", ev.Kind.EventType(), ev.EventID)
		if ev.SourceEventID != nil {
			s += fmt.Sprintf("<-%d", *ev.SourceEventID)
		}
		switch k := ev.Kind.(type) {
		case provider.ActivityCancelRequested:
			s += " " + k.Reason
		case provider.SubOrchestrationCancelRequested:
			s += " " + k.Reason
		case provider.ExternalSubscribedCancelled:
			s += " " + k.Reason
		case provider.QueueSubscriptionCancelled:
			s += " " + k.Reason
		}
		out = append(out, s)
	}
	return out
}

// rxCancelledActivities: the activities the turn cancels on the worker
// queue (duroxide's cancelled_activity_ids side channel).
func rxCancelledActivities(ids ...uint64) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		var got []uint64
		for _, a := range turn.Commit.CancelledActivities {
			if a.Instance != testInstance || a.ExecutionID != 1 {
				t.Fatalf("cancelled activity %+v", a)
			}
			got = append(got, a.ActivityID)
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("cancelled activities %v, want %v", got, ids)
		}
	}
}

// rxCancelledChildren: the CancelInstance items the turn sends to children
// (duroxide's cancelled_sub_orchestration_ids side channel, which holds the
// stored "sub::N" id; the item targets the full "parent::sub::N").
func rxCancelledChildren(instances ...string) rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		var got []string
		for _, it := range turn.Commit.OrchestratorItems {
			if c, ok := it.(provider.CancelInstanceItem); ok {
				if c.Reason != replay.ReasonChildDropped {
					t.Fatalf("child cancel reason %q", c.Reason)
				}
				got = append(got, c.Instance)
			}
		}
		if !slices.Equal(got, instances) {
			t.Fatalf("cancelled children %v, want %v", got, instances)
		}
	}
}

// rxNoWork: the turn dispatches nothing.
func rxNoWork() rxCheck {
	return func(t *testing.T, turn *replay.Turn) {
		t.Helper()
		c := turn.Commit
		if len(c.WorkerItems)+len(c.OrchestratorItems) != 0 {
			t.Fatalf("unexpected work: workers %+v orchestrators %+v", c.WorkerItems, c.OrchestratorItems)
		}
	}
}

// ---- history_corruption.rs ----

var (
	rxLongName   = strings.Repeat("x", 10000)
	rxLongInput  = strings.Repeat("y", 10000)
	rxLongResult = strings.Repeat("z", 10000)
)

var rxHistoryCorruptionCases = []rxCase{
	// 8.1 Structural corruption.
	{
		// duradyn's engine writes OrchestrationStarted itself from the start
		// item, so a turn can never see an empty history with code to run:
		// with neither history nor a start item the batch is drained without
		// running any code (duroxide's dispatcher drops it the same way).
		name:  "empty_history",
		orch:  rxImmediate("done"),
		check: rxDrained(),
	},
	{
		name:    "missing_started_event",
		history: `{"event_id":1,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		orch:    rxImmediate("done"),
		check: rxAll(rxNondeterminism("corrupted history: first event must be OrchestrationStarted"),
			// The in-flight activity is cancelled by the terminal rules.
			rxDelta("ActivityCancelRequested 2<-1 orchestration_terminal_failed", "OrchestrationFailed 3")),
	},
	{
		name: "started_not_first",
		history: `{"event_id":1,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":2,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`,
		orch:  rxImmediate("done"),
		check: rxNondeterminism("corrupted history: first event must be OrchestrationStarted"),
	},
	{
		name:    "event_id_zero",
		history: `{"event_id":0,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`,
		orch:    rxImmediate("done"),
		check:   rxAll(rxCompleted("done"), rxDelta("OrchestrationCompleted 1")),
	},
	{
		name: "event_id_gap",
		history: rxStarted + `
{"event_id":100,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":200,"source_event_id":100,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxCompleted("result"), rxDelta("OrchestrationCompleted 201")),
	},
	{
		// Like duroxide, the next id follows the last event's (not the
		// largest) id.
		name: "non_monotonic_event_ids",
		history: rxStarted + `
{"event_id":5,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":5,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxCompleted("result"), rxDelta("OrchestrationCompleted 4")),
	},

	// 8.2 Completion linkage corruption.
	{
		name: "completion_source_not_found",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		msgs: `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":99,"result":"result"}}`,
		orch: rxActivity("Task", "input"),
		check: rxAll(rxNondeterminism("no matching schedule for completion id=99"),
			rxDelta("ActivityCancelRequested 3<-2 orchestration_terminal_failed", "OrchestrationFailed 4"), rxCancelledActivities(2)),
	},
	{
		name: "completion_source_wrong_type",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"result"}}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("completion kind mismatch for id=2, expected 'timer', got 'activity'"),
	},
	{
		// The duplicate is filtered: the delta holds no completion.
		name: "multiple_completions_same_source_in_history",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"first-result"}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"second-result"}}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxCompleted("first-result"), rxDelta("OrchestrationCompleted 4")),
	},
	{
		name: "completion_for_different_execution",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":999,"id":2,"result":"result"}}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxContinue(), rxDelta(), rxNoWork()),
	},

	// 8.3 Terminal event corruption: any terminal event makes the turn a
	// no-op.
	{
		name: "terminal_completed",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationCompleted","output":"done"}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},
	{
		name: "terminal_failed",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationFailed","details":{"Application":{"kind":"OrchestrationFailed","message":"error","retryable":false}}}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},
	{
		name: "terminal_continued_as_new",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationContinuedAsNew","input":"new input"}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},
	{
		name: "multiple_terminal_events",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationCompleted","output":"first"}
{"event_id":3,"type":"OrchestrationFailed","details":{"Application":{"kind":"OrchestrationFailed","message":"second","retryable":false}}}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},
	{
		name: "events_after_terminal",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationCompleted","output":"done"}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},
	{
		name: "cancel_after_completed",
		history: rxStarted + `
{"event_id":2,"type":"OrchestrationCompleted","output":"done"}
{"event_id":3,"type":"OrchestrationCancelRequested","reason":"too late"}`,
		orch:  rxImmediate("new result"),
		check: rxDrained(),
	},

	// 8.4 Execution id validation.
	{
		name: "completion_wrong_execution",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		msgs:  `{"ActivityCompleted":{"instance":"test-instance","execution_id":999,"id":2,"result":"result"}}`,
		orch:  rxActivity("Task", "input"),
		check: rxAll(rxContinue(), rxDelta(), rxNoWork()),
	},

	// 8.5 Field values.
	{
		name: "empty_activity_name",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"","input":"input"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"result"}`,
		orch:  rxActivity("", "input"),
		check: rxCompleted("result"),
	},
	{
		name: "unicode_in_names",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Grüß Gott 🎉","input":"日本語入力"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"emoji result 👍"}`,
		orch:  rxActivity("Grüß Gott 🎉", "日本語入力"),
		check: rxCompleted("emoji result 👍"),
	},
	{
		name: "very_long_strings",
		history: rxStarted + fmt.Sprintf(`
{"event_id":2,"type":"ActivityScheduled","name":"%s","input":"%s"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"%s"}`, rxLongName, rxLongInput, rxLongResult),
		orch:  rxActivity(rxLongName, rxLongInput),
		check: rxCompleted(rxLongResult),
	},
	{
		name: "special_characters",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Name\nWith\tSpecial","input":"Input\r\nCRLF"}
{"event_id":3,"source_event_id":2,"type":"ActivityCompleted","result":"Result\u0000WithNull"}`,
		orch:  rxActivity("Name\nWith\tSpecial", "Input\r\nCRLF"),
		check: rxCompleted("Result\x00WithNull"),
	},

	// 8.6 Event order corruption.
	{
		name: "timer_fired_before_created",
		history: rxStarted + `
{"event_id":2,"source_event_id":3,"type":"TimerFired","fire_at_ms":1000}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("completion without open schedule"),
	},
	{
		name: "activity_completed_before_scheduled",
		history: rxStarted + `
{"event_id":2,"source_event_id":3,"type":"ActivityCompleted","result":"result"}
{"event_id":3,"type":"ActivityScheduled","name":"Task","input":"input"}`,
		orch:  rxActivity("Task", "input"),
		check: rxNondeterminism("completion without open schedule"),
	},

	// 8.7 Orphaned events.
	{
		name:    "orphan_completion_no_schedule",
		history: rxStarted,
		msgs:    `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":99,"result":"orphan"}}`,
		orch:    rxImmediate("done"),
		check:   rxNondeterminism("no matching schedule for completion id=99"),
	},
	{
		name:    "orphan_timer_fired",
		history: rxStarted,
		msgs:    `{"TimerFired":{"instance":"test-instance","execution_id":1,"id":99,"fire_at_ms":1000}}`,
		orch:    rxImmediate("done"),
		check:   rxNondeterminism("no matching schedule for timer id=99"),
	},
	{
		// Materialized unconditionally; the replay loop does not deliver it.
		name:    "orphan_external_event",
		history: rxStarted,
		msgs:    `{"ExternalRaised":{"instance":"test-instance","name":"UnknownEvent","data":"data"}}`,
		orch:    rxImmediate("done"),
		check:   rxAll(rxCompleted("done"), rxDelta("ExternalEvent 2", "OrchestrationCompleted 3")),
	},
	{
		name:    "orphan_sub_orch_completed",
		history: rxStarted,
		msgs:    `{"SubOrchCompleted":{"parent_instance":"test-instance","parent_execution_id":1,"parent_id":99,"result":"result"}}`,
		orch:    rxImmediate("done"),
		check:   rxNondeterminism("no matching schedule for sub-orchestration id=99"),
	},

	// 8.8 Duplicate schedule events.
	{
		name: "duplicate_activity_schedule_in_history",
		history: rxStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"A","input":"input"}
{"event_id":3,"type":"ActivityScheduled","name":"A","input":"input"}`,
		orch:  rxActivity("A", "input"),
		check: rxNondeterminism("history schedule but no emitted action"),
	},
	{
		name: "duplicate_timer_schedule_in_history",
		history: rxStarted + `
{"event_id":2,"type":"TimerCreated","fire_at_ms":1000}
{"event_id":3,"type":"TimerCreated","fire_at_ms":1000}`,
		orch:  rxTimer(60 * time.Second),
		check: rxNondeterminism("history schedule but no emitted action"),
	},
	{
		name: "duplicate_external_subscription_in_history",
		history: rxStarted + `
{"event_id":2,"type":"ExternalSubscribed","name":"E"}
{"event_id":3,"type":"ExternalSubscribed","name":"E"}`,
		orch:  rxWait("E"),
		check: rxNondeterminism("history schedule but no emitted action"),
	},
}

func TestReplayHistoryCorruption(t *testing.T) { rxRun(t, rxHistoryCorruptionCases) }
