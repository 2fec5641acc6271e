package durable

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// The replay-engine tables ported from duroxide's tests/replay_engine: each
// row runs one turn of an orchestration over a persisted history and the
// turn's messages, both written as duroxide JSON lines, and checks the
// whole turn: outcome, output or failure, the history delta (event ids,
// source ids and contents) and the work it sends.
//
// duroxide's engine returns the delta before the runtime appends terminal
// breadcrumbs and the terminal event (execution.rs); duradyn's turn
// includes them, so the expected deltas end with the terminal event.

// reCase is one replay-engine test.
type reCase struct {
	name    string
	orch    func(ctx *OrchestrationContext, input string) (string, error)
	history string // persisted history, JSON lines
	msgs    string // messages of the turn, JSON lines
	want    reWant
	// check, when set, asserts what want cannot express.
	check func(t *testing.T, turn *replay.Turn)
	// run, when set, replaces the single turn (tests spanning turns).
	run func(t *testing.T)
}

// reWant is what a turn must produce. Every field is checked: an empty
// list means none.
type reWant struct {
	outcome replay.Outcome
	output  string // Completed
	kind    string // Failed: the failure's kind (reFailureKind)
	failure string // Failed: the display message
	delta   []string
	worker  []provider.ActivityExecuteItem
	orch    []provider.WorkItem
	// cancelled lists the activity ids cancelled on their workers.
	cancelled []uint64
}

func runReplayCases(t *testing.T, cases []reCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate row %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			if c.run != nil {
				c.run(t)
				return
			}
			turn := replayTurn(t, c.orch, historyJSON(t, c.history), messagesJSONL(t, c.msgs))
			reCheck(t, turn, c.want)
			if c.check != nil {
				c.check(t, turn)
			}
		})
	}
}

// reCheck compares a turn with want.
func reCheck(t *testing.T, turn *replay.Turn, want reWant) {
	t.Helper()
	outcomes := map[replay.Outcome]string{replay.Continue: "Continue", replay.Completed: "Completed",
		replay.Failed: "Failed", replay.ContinuedAsNew: "ContinuedAsNew", replay.Drained: "Drained"}
	if turn.Outcome != want.outcome {
		t.Errorf("outcome %s (failure %q), want %s", outcomes[turn.Outcome], failureMessage(turn), outcomes[want.outcome])
	}
	if turn.Output != want.output {
		t.Errorf("output %q, want %q", reShort(turn.Output), reShort(want.output))
	}
	if got := reFailureKind(turn.Failure); got != want.kind {
		t.Errorf("failure kind %q, want %q", got, want.kind)
	}
	if got := failureMessage(turn); got != want.failure {
		t.Errorf("failure\n got %q\nwant %q", got, want.failure)
	}
	if got := reDelta(turn); !slicesEqual(got, want.delta) {
		t.Errorf("delta\n got %s\nwant %s", reShort(strings.Join(got, "\n     ")), reShort(strings.Join(want.delta, "\n     ")))
	}
	if !reSameItems(turn.Commit.WorkerItems, want.worker) {
		t.Errorf("worker items\n got %+v\nwant %+v", turn.Commit.WorkerItems, want.worker)
	}
	if !reSameItems(turn.Commit.OrchestratorItems, want.orch) {
		t.Errorf("orchestrator items\n got %s\nwant %s", reItemsJSON(turn.Commit.OrchestratorItems), reItemsJSON(want.orch))
	}
	var cancelled []uint64
	for _, c := range turn.Commit.CancelledActivities {
		if c.Instance != testInstance || c.ExecutionID != turn.Commit.ExecutionID {
			t.Errorf("cancelled activity of another execution: %+v", c)
		}
		cancelled = append(cancelled, c.ActivityID)
	}
	if !slicesEqual(cancelled, want.cancelled) {
		t.Errorf("cancelled activities %v, want %v", cancelled, want.cancelled)
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func reSameItems[T any](got, want []T) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

func reItemsJSON(items []provider.WorkItem) string {
	var out []string
	for _, it := range items {
		b, err := provider.MarshalWorkItem(it)
		if err != nil {
			out = append(out, fmt.Sprintf("%#v", it))
			continue
		}
		out = append(out, string(b))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func reShort(s string) string {
	if len(s) > 2000 {
		return s[:2000] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// reFailureKind names the variant of failure details: "Application/<kind>",
// "Configuration/<kind>", "Infrastructure" or "Poison"; "" for none.
func reFailureKind(d provider.ErrorDetails) string {
	switch d := d.(type) {
	case nil:
		return ""
	case provider.ApplicationDetails:
		return "Application/" + string(d.Kind.Code)
	case provider.ConfigurationDetails:
		return "Configuration/" + string(d.Kind)
	case provider.InfrastructureDetails:
		return "Infrastructure"
	case provider.PoisonDetails:
		return "Poison"
	}
	return fmt.Sprintf("%T", d)
}

// reDelta describes the turn's delta, one event a line:
// "<event_id>:<type>[<<source_event_id>](<fields>)".
func reDelta(turn *replay.Turn) []string {
	var out []string
	for _, ev := range turn.Commit.HistoryDelta {
		out = append(out, reEvent(ev))
	}
	return out
}

func reEvent(ev provider.Event) string {
	s := fmt.Sprintf("%d:%s", ev.EventID, ev.Kind.EventType())
	if ev.SourceEventID != nil {
		s += fmt.Sprintf("<%d", *ev.SourceEventID)
	}
	var args []string
	opt := func(label string, v *string) {
		if v != nil {
			args = append(args, label+"="+*v)
		}
	}
	switch k := ev.Kind.(type) {
	case provider.OrchestrationStarted:
		args = append(args, k.Name, k.Version, k.Input)
	case provider.ActivityScheduled:
		args = append(args, k.Name, k.Input)
		opt("session", k.SessionID)
		opt("tag", k.Tag)
	case provider.TimerCreated:
		args = append(args, fmt.Sprint(k.FireAtMs))
	case provider.TimerFired:
		args = append(args, fmt.Sprint(k.FireAtMs))
	case provider.ExternalSubscribed:
		args = append(args, k.Name)
	case provider.ExternalEvent:
		args = append(args, k.Name, k.Data)
	case provider.QueueSubscribed:
		args = append(args, k.Name)
	case provider.QueueEventDelivered:
		args = append(args, k.Name, k.Data)
	case provider.SubOrchestrationScheduled:
		args = append(args, k.Name, k.Instance, k.Input)
	case provider.OrchestrationChained:
		args = append(args, k.Name, k.Instance, k.Input)
	case provider.ActivityCompleted:
		args = append(args, k.Result)
	case provider.SubOrchestrationCompleted:
		args = append(args, k.Result)
	case provider.ActivityFailed:
		args = append(args, k.Details.DisplayMessage())
	case provider.SubOrchestrationFailed:
		args = append(args, k.Details.DisplayMessage())
	case provider.ActivityCancelRequested:
		args = append(args, k.Reason)
	case provider.SubOrchestrationCancelRequested:
		args = append(args, k.Reason)
	case provider.ExternalSubscribedCancelled:
		args = append(args, k.Reason)
	case provider.QueueSubscriptionCancelled:
		args = append(args, k.Reason)
	case provider.OrchestrationCancelRequested:
		args = append(args, k.Reason)
	case provider.OrchestrationCompleted:
		args = append(args, k.Output)
	case provider.OrchestrationFailed:
		args = append(args, k.Details.DisplayMessage())
	case provider.OrchestrationContinuedAsNew:
		args = append(args, k.Input)
	}
	if len(args) > 0 {
		s += "(" + strings.Join(args, ",") + ")"
	}
	return s
}

// reAppend returns history followed by the turn's delta, as JSON lines:
// what the provider persists before the next turn.
func reAppend(t *testing.T, history string, turn *replay.Turn, more ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(history)
	for _, ev := range turn.Commit.HistoryDelta {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %+v: %v", ev, err)
		}
		b.WriteString("\n")
		b.Write(line)
	}
	for _, m := range more {
		b.WriteString("\n" + m)
	}
	return b.String()
}

// Fixtures: the started event of helpers.rs and a few frequent items.
const (
	reStarted = `{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"test-input","parent_instance":null,"parent_id":null}`
	reStart   = `{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"test-input","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`
)

// reFireAt is the fire time of a timer of d created by a replayed turn.
func reFireAt(d time.Duration) uint64 { return uint64(testTurnTime.Add(d).UnixMilli()) }

func reStr(s string) *string { return &s }

// reExec is the work item of activity id.
func reExec(id uint64, name, input string) provider.ActivityExecuteItem {
	return provider.ActivityExecuteItem{Instance: testInstance, ExecutionID: 1, ID: id, Name: name, Input: input}
}

// reTimer is the TimerFired item of timer id.
func reTimer(id uint64, d time.Duration) provider.WorkItem {
	return provider.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: id, FireAtMs: reFireAt(d)}
}

// reChild is the start item of the sub-orchestration scheduled by event id
// of the parent's first execution.
func reChild(id uint64, instance, name, input string) provider.WorkItem {
	parentID := id
	return provider.StartOrchestrationItem{Instance: instance, Orchestration: name, Input: input,
		ParentInstance: reStr(testInstance), ParentID: &parentID, ExecutionID: provider.InitialExecutionID,
		ParentExecutionID: 1}
}

// Orchestrations of helpers.rs. Payloads are plain strings (Raw), as in
// duroxide's untyped API.

func reImmediate(out string, err error) func(*OrchestrationContext, string) (string, error) {
	return func(*OrchestrationContext, string) (string, error) { return out, err }
}

func reSingleActivity(name, input string, opts ...Option) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallActivity[Raw](ctx, name, Raw(input), opts...).Get(ctx)
		return string(r), err
	}
}

func reSingleTimer(d time.Duration, out string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(d); err != nil {
			return "", err
		}
		return out, nil
	}
}

func reWaitExternal(name string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		data, err := WaitForEvent[Raw](ctx, name).Get(ctx)
		return string(data), err
	}
}

func reSubOrch(name, input string, opts ...Option) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallSubOrchestration[Raw](ctx, name, Raw(input), opts...).Get(ctx)
		return string(r), err
	}
}

func reTwoActivities(n1, i1, n2, i2 string) func(*OrchestrationContext, string) (string, error) {
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

// reJoinActivities schedules every (name, input) pair, waits for all and
// returns their results joined by commas, or the first failure.
func reJoinActivities(pairs ...string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		var fs []Future[Raw]
		var all []Awaitable
		for i := 0; i < len(pairs); i += 2 {
			f := CallActivity[Raw](ctx, pairs[i], Raw(pairs[i+1]))
			fs = append(fs, f)
			all = append(all, f)
		}
		WaitAll(ctx, all...)
		var out []string
		for _, f := range fs {
			r, err := f.Get(ctx)
			if err != nil {
				return "", err
			}
			out = append(out, string(r))
		}
		return strings.Join(out, ","), nil
	}
}

// reScheduleAndCancel schedules every (name, input) activity and cancels
// it: duroxide's MultiScheduleNoAwaitHandler drops the futures explicitly.
func reScheduleAndCancel(pairs ...string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		for i := 0; i < len(pairs); i += 2 {
			CallActivity[Raw](ctx, pairs[i], Raw(pairs[i+1])).Cancel()
		}
		return "done", nil
	}
}

// Handlers local to action_to_event.rs.

func reDetached(name, instance, input string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.StartOrchestration(name, instance, Raw(input)); err != nil {
			return "", err
		}
		return "scheduled", nil
	}
}

func reDetachedThenActivity(name, instance, input, activity, activityInput string) func(*OrchestrationContext, string) (string, error) {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if err := ctx.StartOrchestration(name, instance, Raw(input)); err != nil {
			return "", err
		}
		r, err := CallActivity[Raw](ctx, activity, Raw(activityInput)).Get(ctx)
		return string(r), err
	}
}

func TestReplayActionToEvent(t *testing.T) {
	runReplayCases(t, replayActionToEventCases())
}

func replayActionToEventCases() []reCase {
	return []reCase{
		{
			name:    "schedule_activity_creates_activity_scheduled_event",
			orch:    reSingleActivity("MyActivity", "my-input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(MyActivity,my-input)"},
				worker:  []provider.ActivityExecuteItem{reExec(2, "MyActivity", "my-input")},
			},
		},
		{
			name:    "schedule_activity_on_session_creates_activity_scheduled_event_with_session_id",
			orch:    reSingleActivity("MyActivity", "my-input", OnSession("sess-1")),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(MyActivity,my-input,session=sess-1)"},
				worker: []provider.ActivityExecuteItem{{Instance: testInstance, ExecutionID: 1, ID: 2,
					Name: "MyActivity", Input: "my-input", SessionID: reStr("sess-1")}},
			},
		},
		{
			name: "schedule_activity_on_session_session_id_mismatch_causes_nondeterminism",
			orch: reSingleActivity("MyActivity", "my-input", OnSession("sess-1")),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"MyActivity","input":"my-input","session_id":null,"tag":null}`,
			want: reWant{
				outcome: replay.Failed,
				kind:    "Configuration/Nondeterminism",
				failure: `nondeterministic: schedule mismatch: action=CallActivity { name: "MyActivity", input: "my-input", session_id: Some("sess-1"), tag: None } vs event=ActivityScheduled { name: "MyActivity", input: "my-input", session_id: None, tag: None }`,
				delta: []string{
					"3:ActivityCancelRequested<2(orchestration_terminal_failed)",
					`4:OrchestrationFailed(nondeterministic: schedule mismatch: action=CallActivity { name: "MyActivity", input: "my-input", session_id: Some("sess-1"), tag: None } vs event=ActivityScheduled { name: "MyActivity", input: "my-input", session_id: None, tag: None })`,
				},
				cancelled: []uint64{2},
			},
		},
		{
			name:    "schedule_timer_creates_timer_created_event",
			orch:    reSingleTimer(10*time.Second, "timer_done"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				// fire_at_ms is the turn's wall clock plus the delay.
				delta: []string{fmt.Sprintf("2:TimerCreated(%d)", reFireAt(10*time.Second))},
				orch:  []provider.WorkItem{reTimer(2, 10*time.Second)},
			},
		},
		{
			name:    "schedule_wait_creates_external_subscribed_event",
			orch:    reWaitExternal("MyEvent"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ExternalSubscribed(MyEvent)"},
			},
		},
		{
			// duroxide drops the unawaited future; Go cancels it explicitly,
			// which records the breadcrumb and cancels the child. A terminal
			// turn does not start the child.
			name: "schedule_sub_orchestration_creates_sub_orchestration_scheduled_event",
			orch: func(ctx *OrchestrationContext, _ string) (string, error) {
				CallSubOrchestration[Raw](ctx, "ChildOrch", Raw("child-input")).Cancel()
				return "scheduled", nil
			},
			history: reStarted,
			want: reWant{
				outcome: replay.Completed,
				output:  "scheduled",
				delta: []string{
					"2:SubOrchestrationScheduled(ChildOrch,sub::2,child-input)",
					"3:SubOrchestrationCancelRequested<2(dropped_future)",
					"4:OrchestrationCompleted(scheduled)",
				},
				orch: []provider.WorkItem{provider.CancelInstanceItem{Instance: testInstance + "::sub::2", Reason: replay.ReasonChildDropped}},
			},
		},
		{
			name:    "schedule_orchestration_creates_orchestration_chained_event",
			orch:    reDetached("DetachedChild", "child-instance", "child-input"),
			history: reStarted,
			want: reWant{
				outcome: replay.Completed,
				output:  "scheduled",
				delta: []string{
					"2:OrchestrationChained(DetachedChild,child-instance,child-input)",
					"3:OrchestrationCompleted(scheduled)",
				},
				// A detached start is sent even by a terminal turn.
				orch: []provider.WorkItem{provider.StartOrchestrationItem{Instance: "child-instance",
					Orchestration: "DetachedChild", Input: "child-input", ExecutionID: 1}},
			},
		},
		{
			// Explicit drops in duroxide: explicit Cancel here.
			name:    "multiple_action_types_create_corresponding_events",
			orch:    reScheduleAndCancel("Task1", "input1", "Task2", "input2"),
			history: reStarted,
			want: reWant{
				outcome: replay.Completed,
				output:  "done",
				delta: []string{
					"2:ActivityScheduled(Task1,input1)",
					"3:ActivityScheduled(Task2,input2)",
					"4:ActivityCancelRequested<2(dropped_future)",
					"5:ActivityCancelRequested<3(dropped_future)",
					"6:OrchestrationCompleted(done)",
				},
				cancelled: []uint64{2, 3},
			},
		},
		{
			name: "detached_orchestration_then_activity_replays_correctly",
			run: func(t *testing.T) {
				orch := reDetachedThenActivity("DetachedChild", "child-1", "child-input", "MyActivity", "activity-input")
				// Fresh execution: the detached start is recorded before the
				// activity.
				turn := replayTurn(t, orch, historyJSON(t, reStarted), nil)
				reCheck(t, turn, reWant{
					outcome: replay.Continue,
					delta: []string{
						"2:OrchestrationChained(DetachedChild,child-1,child-input)",
						"3:ActivityScheduled(MyActivity,activity-input)",
					},
					worker: []provider.ActivityExecuteItem{reExec(3, "MyActivity", "activity-input")},
					orch: []provider.WorkItem{provider.StartOrchestrationItem{Instance: "child-1",
						Orchestration: "DetachedChild", Input: "child-input", ExecutionID: 1}},
				})
				// Replay with the activity's completion: both schedules
				// match, and the detached start is not sent again.
				history := reAppend(t, reStarted, turn)
				turn = replayTurn(t, orch, historyJSON(t, history), messagesJSONL(t,
					`{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":3,"result":"activity-result"}}`))
				reCheck(t, turn, reWant{
					outcome: replay.Completed,
					output:  "activity-result",
					delta:   []string{"4:ActivityCompleted<3(activity-result)", "5:OrchestrationCompleted(activity-result)"},
				})
			},
		},
		{
			name:    "with_tag_sets_tag_on_emitted_event",
			orch:    reSingleActivity("GpuWork", "data", WithTag("gpu")),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(GpuWork,data,tag=gpu)"},
				worker: []provider.ActivityExecuteItem{{Instance: testInstance, ExecutionID: 1, ID: 2,
					Name: "GpuWork", Input: "data", Tag: reStr("gpu")}},
			},
		},
		{
			name:    "no_with_tag_leaves_none",
			orch:    reSingleActivity("PlainWork", "data"),
			history: reStarted,
			want: reWant{
				outcome: replay.Continue,
				delta:   []string{"2:ActivityScheduled(PlainWork,data)"},
				worker:  []provider.ActivityExecuteItem{reExec(2, "PlainWork", "data")},
			},
			check: func(t *testing.T, turn *replay.Turn) {
				if k := turn.Commit.HistoryDelta[0].Kind.(provider.ActivityScheduled); k.Tag != nil {
					t.Fatalf("tag %q, want none", *k.Tag)
				}
			},
		},
		{
			name: "tag_mismatch_on_replay_causes_nondeterminism",
			orch: reSingleActivity("GpuWork", "data", WithTag("gpu")),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"GpuWork","input":"data","session_id":null,"tag":null}`,
			want: reNondeterministicActivity(`schedule mismatch: action=CallActivity { name: "GpuWork", input: "data", session_id: None, tag: Some("gpu") } vs event=ActivityScheduled { name: "GpuWork", input: "data", session_id: None, tag: None }`),
		},
		{
			name: "tag_value_change_on_replay_causes_nondeterminism",
			orch: reSingleActivity("Render", "data", WithTag("cpu")),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Render","input":"data","session_id":null,"tag":"gpu"}`,
			want: reNondeterministicActivity(`schedule mismatch: action=CallActivity { name: "Render", input: "data", session_id: None, tag: Some("cpu") } vs event=ActivityScheduled { name: "Render", input: "data", session_id: None, tag: Some("gpu") }`),
		},
		{
			name: "tag_removal_on_replay_causes_nondeterminism",
			orch: reSingleActivity("Render", "data"),
			history: reStarted + `
{"event_id":2,"type":"ActivityScheduled","name":"Render","input":"data","session_id":null,"tag":"gpu"}`,
			want: reNondeterministicActivity(`schedule mismatch: action=CallActivity { name: "Render", input: "data", session_id: None, tag: None } vs event=ActivityScheduled { name: "Render", input: "data", session_id: None, tag: Some("gpu") }`),
		},
	}
}

// reNondeterministicActivity is the turn that fails with msg while the
// activity scheduled as event 2 is in flight: it is cancelled and the
// execution fails.
func reNondeterministicActivity(msg string) reWant {
	return reWant{
		outcome:   replay.Failed,
		kind:      "Configuration/Nondeterminism",
		failure:   "nondeterministic: " + msg,
		delta:     []string{"3:ActivityCancelRequested<2(orchestration_terminal_failed)", "4:OrchestrationFailed(nondeterministic: " + msg + ")"},
		cancelled: []uint64{2},
	}
}
