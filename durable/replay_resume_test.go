package durable

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// Resuming an execution's held code must give every turn exactly what a
// replay of its history gives. These tests drive orchestrations turn by
// turn without a provider, answering each turn's work in later turns, a few
// answers a turn, once replaying every turn and once resuming held code,
// and compare the commits.

// driven is what driving an orchestration turn by turn produced.
type driven struct {
	commits  []provider.TurnCommit
	outcomes []replay.Outcome
	outputs  []string
	awaiting []int // Turn.Awaiting of each turn
	windows  []time.Duration
	resumed  int // turns that resumed held code
}

// driveTurns runs orch from its start until it ends or waits for nothing
// the driver answers. Each turn takes at most perTurn answers: activity
// results (an activity named "fail" fails), fired timers, sub-orchestration
// results, and an event or queue message for each subscription. With keep,
// each turn that leaves the execution waiting is held and the next one
// resumes it.
func driveTurns(t *testing.T, orch rxOrch, input string, perTurn int, keep bool) driven {
	t.Helper()
	reg, err := NewRegistry(OrchestrationFunc(testOrch, orch, Version(testVersion)))
	if err != nil {
		t.Fatal(err)
	}
	var (
		out       driven
		history   []provider.Event
		execID    = provider.InitialExecutionID
		msgs      = []provider.WorkItem{provider.StartOrchestrationItem{Instance: testInstance, Orchestration: testOrch, Input: input, Version: ptrTo(testVersion), ExecutionID: provider.InitialExecutionID}}
		answers   []provider.WorkItem
		held      *replay.Held
		turnClock = testTurnTime
	)
	defer func() { held.Close() }()
	for n := 0; len(msgs) > 0; n++ {
		if n > 200 {
			t.Fatal("more than 200 turns")
		}
		turnClock = turnClock.Add(time.Minute)
		item := &provider.OrchestrationItem{
			Instance: testInstance, OrchestrationName: testOrch, ExecutionID: execID, Version: testVersion,
			History: append([]provider.Event(nil), history...), Messages: msgs, LockToken: "token", AttemptCount: 1,
		}
		in := replay.Input{Item: item, Now: turnClock, Resolve: reg.resolve, YieldTimeout: 10 * time.Second, Keep: keep}
		turn, err := replay.Resume(held, in)
		held = nil
		if err != nil {
			t.Fatalf("turn %d: %v", n+1, err)
		}
		if turn.Resumed {
			out.resumed++
		}
		held = turn.Held
		out.commits = append(out.commits, turn.Commit)
		out.outcomes = append(out.outcomes, turn.Outcome)
		out.outputs = append(out.outputs, turn.Output)
		out.awaiting = append(out.awaiting, turn.Awaiting)
		out.windows = append(out.windows, completionWindow(turn, 100*time.Millisecond))
		if turn.Commit.ExecutionID != execID { // a continue-as-new's first turn
			history, answers, execID = nil, nil, turn.Commit.ExecutionID
		}
		history = append(history, turn.Commit.HistoryDelta...)
		msgs = nil
		switch turn.Outcome {
		case replay.Completed, replay.Failed, replay.Drained:
			return out
		case replay.ContinuedAsNew:
			for _, m := range turn.Commit.OrchestratorItems {
				if can, ok := m.(provider.ContinueAsNewItem); ok {
					msgs = append(msgs, can)
				}
			}
			continue
		}
		answers = append(answers, answersTo(execID, turn.Commit)...)
		k := min(perTurn, len(answers))
		msgs, answers = answers[:k:k], answers[k:]
	}
	return out
}

// answersTo is what the driver sends back for a turn's commit.
func answersTo(execID uint64, c provider.TurnCommit) []provider.WorkItem {
	var out []provider.WorkItem
	for _, a := range c.WorkerItems {
		if a.Name == "fail" {
			out = append(out, provider.ActivityFailedItem{Instance: testInstance, ExecutionID: execID, ID: a.ID, Details: provider.ApplicationDetails{
				Kind: provider.AppErrorKind{Code: provider.AppActivityFailed}, Message: "failed " + a.Input,
			}})
			continue
		}
		out = append(out, provider.ActivityCompletedItem{Instance: testInstance, ExecutionID: execID, ID: a.ID, Result: a.Name + "(" + a.Input + ")"})
	}
	for _, m := range c.OrchestratorItems {
		switch m := m.(type) {
		case provider.TimerFiredItem:
			out = append(out, m)
		case provider.StartOrchestrationItem:
			if m.ParentInstance != nil && m.ParentID != nil {
				out = append(out, provider.SubOrchCompletedItem{ParentInstance: testInstance, ParentExecutionID: execID, ParentID: *m.ParentID, Result: "child(" + m.Input + ")"})
			}
		}
	}
	for _, ev := range c.HistoryDelta {
		switch k := ev.Kind.(type) {
		case provider.ExternalSubscribed:
			if k.Name != "never" {
				out = append(out, provider.ExternalRaisedItem{Instance: testInstance, Name: k.Name, Data: "event-" + strconv.FormatUint(ev.EventID, 10)})
			}
		case provider.QueueSubscribed:
			out = append(out, provider.QueueMessageItem{Instance: testInstance, Name: k.Name, Data: "queued-" + strconv.FormatUint(ev.EventID, 10)})
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// resumeCases are orchestrations that reach every kind of state the engine
// keeps between turns.
var resumeCases = []struct {
	name  string
	input string
	orch  rxOrch
}{
	{"sequence with KV and status", "go", func(ctx *OrchestrationContext, in string) (string, error) {
		acc := in
		for i := range 5 {
			r, err := CallActivity[Raw](ctx, "step", Raw(acc)).Get(ctx)
			if err != nil {
				return "", err
			}
			acc = string(r)
			ctx.KV().Set("k"+strconv.Itoa(i), acc)
			ctx.SetCustomStatus(fmt.Sprintf("step %d", i))
			if i == 3 {
				ctx.KV().PruneUpdatedBefore(ctx.Now().Add(-90 * time.Second))
			}
		}
		return acc + " " + strings.Join(ctx.KV().Keys(), ","), nil
	}},
	{"fan-out", "", func(ctx *OrchestrationContext, _ string) (string, error) {
		var fs []Future[Raw]
		for i := range 6 {
			fs = append(fs, CallActivity[Raw](ctx, "part", Raw(strconv.Itoa(i))))
		}
		rs, err := AwaitAll(ctx, fs...)
		if err != nil {
			return "", err
		}
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = string(r)
		}
		return strings.Join(parts, "+"), nil
	}},
	{"races and cancellations", "", func(ctx *OrchestrationContext, _ string) (string, error) {
		var won []int
		for i := range 3 {
			act := CallActivity[Raw](ctx, "slow", Raw(strconv.Itoa(i)))
			timer := ctx.CreateTimer(time.Hour)
			won = append(won, Race(ctx, act, timer))
		}
		never := WaitForEvent[string](ctx, "never")
		if Race(ctx, never, ctx.CreateTimer(time.Second)) != 1 {
			return "", errors.New("an event nobody raises won")
		}
		r, err := CallActivity[Raw](ctx, "after", Raw("x")).Get(ctx)
		return fmt.Sprint(won, r), err
	}},
	{"branches", "", func(ctx *OrchestrationContext, _ string) (string, error) {
		var fs []Future[string]
		for i := range 3 {
			fs = append(fs, Go(ctx, func(ctx *OrchestrationContext) (string, error) {
				r, err := CallActivity[Raw](ctx, "branch", Raw(strconv.Itoa(i))).Get(ctx)
				if err != nil {
					return "", err
				}
				if err := ctx.Sleep(time.Second); err != nil {
					return "", err
				}
				return string(r), nil
			}))
		}
		rs, err := AwaitAll(ctx, fs...)
		return strings.Join(rs, ","), err
	}},
	{"events, queues and a child", "", func(ctx *OrchestrationContext, _ string) (string, error) {
		var got []string
		for range 2 {
			e, err := WaitForEvent[Raw](ctx, "ping").Get(ctx)
			if err != nil {
				return "", err
			}
			q, err := Dequeue[Raw](ctx, "inbox").Get(ctx)
			if err != nil {
				return "", err
			}
			got = append(got, string(e), string(q))
		}
		c, err := CallSubOrchestration[Raw](ctx, "Child", Raw("c")).Get(ctx)
		return strings.Join(got, ",") + string(c), err
	}},
	{"failures handled, then failing", "", func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := CallActivity[Raw](ctx, "fail", Raw("1")).Get(ctx); err == nil {
			return "", errors.New("the activity did not fail")
		}
		r, err := CallActivity[Raw](ctx, "ok", Raw("2")).Get(ctx)
		if err != nil {
			return "", err
		}
		_, err = CallActivity[Raw](ctx, "fail", r).Get(ctx)
		return "", err
	}},
	{"continue as new", "0", func(ctx *OrchestrationContext, in string) (string, error) {
		n, err := strconv.Atoi(in)
		if err != nil {
			return "", err
		}
		for range 2 {
			if _, err := CallActivity[Raw](ctx, "tick", Raw(in)).Get(ctx); err != nil {
				return "", err
			}
		}
		if n < 2 {
			return "", ctx.ContinueAsNew(Raw(strconv.Itoa(n + 1)))
		}
		return "done " + in, nil
	}},
}

func TestResumedTurnsEqualReplayedTurns(t *testing.T) {
	for _, c := range resumeCases {
		for _, perTurn := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("%s/%d answers a turn", c.name, perTurn), func(t *testing.T) {
				replayed := driveTurns(t, c.orch, c.input, perTurn, false)
				resumed := driveTurns(t, c.orch, c.input, perTurn, true)
				if replayed.resumed != 0 {
					t.Fatalf("%d turns resumed without Keep", replayed.resumed)
				}
				if len(replayed.commits) < 3 {
					t.Fatalf("only %d turns: the case does not exercise resuming", len(replayed.commits))
				}
				// Every turn after the first of each execution resumes.
				if want := len(resumed.commits) - countStarts(resumed.outcomes); resumed.resumed != want {
					t.Errorf("%d of %d turns resumed, want %d", resumed.resumed, len(resumed.commits), want)
				}
				if !reflect.DeepEqual(replayed.outcomes, resumed.outcomes) || !reflect.DeepEqual(replayed.outputs, resumed.outputs) {
					t.Fatalf("outcomes %v %q replayed, %v %q resumed", replayed.outcomes, replayed.outputs, resumed.outcomes, resumed.outputs)
				}
				last := replayed.outcomes[len(replayed.outcomes)-1]
				if last != replay.Completed && last != replay.Failed {
					t.Fatalf("the orchestration did not end: %v", last)
				}
				for i := range replayed.commits {
					if !reflect.DeepEqual(replayed.commits[i], resumed.commits[i]) {
						t.Fatalf("turn %d differs:\nreplayed %+v\nresumed  %+v", i+1, replayed.commits[i], resumed.commits[i])
					}
				}
			})
		}
	}
}

// countStarts counts the turns that start an execution: the first, and
// each after a continue-as-new.
func countStarts(outcomes []replay.Outcome) int {
	n := 1
	for _, o := range outcomes[:len(outcomes)-1] {
		if o == replay.ContinuedAsNew {
			n++
		}
	}
	return n
}

// A held turn resumes only the history it committed: when another runtime
// ran a turn since, or the instance was deleted and started again with a
// history as long, the turn replays instead and is what a replay gives.
func TestHeldCodeFallsBackToReplay(t *testing.T) {
	orch := resumeCases[0].orch // sequence with KV and status
	reg, err := NewRegistry(OrchestrationFunc(testOrch, orch, Version(testVersion)))
	if err != nil {
		t.Fatal(err)
	}
	start := provider.StartOrchestrationItem{Instance: testInstance, Orchestration: testOrch, Input: "go", Version: ptrTo(testVersion), ExecutionID: provider.InitialExecutionID}
	turnAt := func(n int, history []provider.Event, msgs []provider.WorkItem, keep bool) replay.Input {
		return replay.Input{Item: &provider.OrchestrationItem{
			Instance: testInstance, OrchestrationName: testOrch, ExecutionID: 1, Version: testVersion,
			History: history, Messages: msgs, LockToken: "token", AttemptCount: 1,
		}, Now: testTurnTime.Add(time.Duration(n) * time.Minute), Resolve: reg.resolve, YieldTimeout: 10 * time.Second, Keep: keep}
	}
	run := func(in replay.Input) *replay.Turn {
		t.Helper()
		turn, err := replay.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	first := run(turnAt(1, nil, []provider.WorkItem{start}, true))
	if first.Held == nil {
		t.Fatal("a waiting turn with Keep holds no code")
	}
	history := slices.Clone(first.Commit.HistoryDelta)

	t.Run("another runtime's turn in between", func(t *testing.T) {
		// Another runtime's turn 2, then this runtime's turn 3 with the
		// code held since turn 1.
		second := run(turnAt(2, history, answersTo(1, first.Commit), false))
		later := append(slices.Clone(history), second.Commit.HistoryDelta...)
		in := turnAt(3, later, answersTo(1, second.Commit), true)
		held := first.Held
		first.Held = nil
		got, err := replay.Resume(held, in)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Held.Close()
		in.Keep = false
		want := run(in)
		if got.Resumed {
			t.Fatal("resumed code held before another runtime's turn")
		}
		if !reflect.DeepEqual(got.Commit, want.Commit) {
			t.Fatalf("turn after the fallback %+v; want %+v", got.Commit, want.Commit)
		}
	})

	t.Run("a new instance with a history as long", func(t *testing.T) {
		again := run(turnAt(5, nil, []provider.WorkItem{start}, true))
		if len(again.Commit.HistoryDelta) != len(history) {
			t.Fatalf("the restarted instance's first turn has %d events, want %d", len(again.Commit.HistoryDelta), len(history))
		}
		// The code held from the restarted instance's first turn, given
		// the old instance's history of the same length.
		in := turnAt(6, history, answersTo(1, first.Commit), true)
		got, err := replay.Resume(again.Held, in)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Held.Close()
		if got.Resumed {
			t.Fatal("resumed code held for another history of the same length")
		}
	})
}
