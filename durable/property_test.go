package durable_test

// Property tests ported from duroxide's proptest properties as Go fuzz
// tests. Each property runs a random orchestration shape: a byte string
// decoded into a program of operations (activities, failing activities,
// timers, external events, queue messages, sub-orchestrations, races,
// deterministic Go branches, continue-as-new, failure) that one
// interpreting orchestration runs on the real runtime over memprovider
// with a simulated clock (durabletest.Env). Every property also checks
// that each history replays (durabletest.Replay) and that a second run of
// the same shape gives the same result. `go test` runs the seed corpus;
// `go test -fuzz FuzzPropXxx` explores further.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
	"github.com/duradyn/duradyn/provider"
)

// Operations of a shape program: op = b % shapeOps, arg = b / shapeOps.
const (
	opActivity  = iota // an awaited activity; arg%5 == 4: it fails and the error is handled
	opTimer            // a timer of arg+1 seconds
	opEvent            // subscribe to an event, raise it from an activity, receive it
	opQueue            // an activity enqueues a queue message, then dequeue it
	opSub              // a sub-orchestration running one activity; arg odd: it fails
	opRace             // arg even: activity vs 1 h timer (the activity wins); odd: event nobody raises vs timer
	opBranches         // 2 + arg%2 Go branches, each an activity then a 1 s timer, joined
	opEnd              // arg%4 == 3: the orchestration fails; otherwise continue as new with the rest
	shapeOps           // number of operations
	maxShapeLen = 10   // longer programs are truncated, so each run stays short
)

// shapeInput is the interpreting orchestration's input.
type shapeInput struct {
	In  string `json:"in"`
	Acc string `json:"acc"`
	Ops []byte `json:"ops"`
}

// propName turns a fuzzed string into a valid orchestration name
// ([A-Za-z][A-Za-z0-9]{0,20}, as duroxide's strategy generates).
func propName(s string) string {
	var b strings.Builder
	b.WriteByte('P')
	for _, r := range s {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) && b.Len() < 21 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// propInput turns a fuzzed string into a short valid UTF-8 input.
func propInput(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 16 {
		s = strings.ToValidUTF8(s[:16], "")
	}
	return s
}

// propRegistry registers the interpreter under name and its activities.
func propRegistry(t *testing.T, name string) *durable.Registry {
	t.Helper()
	var shape durable.Orchestration[shapeInput, string]
	shape = durable.NewOrchestration(name, func(ctx *durable.OrchestrationContext, in shapeInput) (string, error) {
		return runShape(ctx, shape, in)
	})
	reg, err := durable.NewRegistry(
		shape,
		durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return "echo-" + in, nil }),
		durable.ActivityFunc("Flaky", func(_ context.Context, in string) (string, error) { return "", errors.New("flaky-" + in) }),
		durable.ActivityFunc("Raise", func(ctx context.Context, in string) (string, error) {
			info, _ := durable.ActivityInfoFrom(ctx)
			return "raised", durable.ClientFrom(ctx).RaiseEvent(ctx, info.Instance, "ev", durable.Raw(in))
		}),
		durable.ActivityFunc("Send", func(ctx context.Context, in string) (string, error) {
			info, _ := durable.ActivityInfoFrom(ctx)
			return "sent", durable.ClientFrom(ctx).EnqueueEvent(ctx, info.Instance, "q", durable.Raw(in))
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// runShape interprets in.Ops, appending each step's result to in.Acc.
func runShape(ctx *durable.OrchestrationContext, self durable.Orchestration[shapeInput, string], in shapeInput) (string, error) {
	acc := in.Acc
	add := func(s string) { acc += "|" + s }
	raw := func(f durable.Future[durable.Raw]) (string, error) {
		v, err := f.Get(ctx)
		return string(v), err
	}
	for i, b := range in.Ops {
		op, arg := int(b)%shapeOps, int(b)/shapeOps
		tag := fmt.Sprintf("%d.%d", ctx.ExecutionID(), i)
		switch op {
		case opActivity:
			if arg%5 == 4 {
				_, err := raw(durable.CallActivity[durable.Raw](ctx, "Flaky", durable.Raw(tag)))
				var te *durable.TaskError
				if !errors.As(err, &te) {
					return "", fmt.Errorf("flaky activity: %v, want a TaskError", err)
				}
				add("err:" + te.Error())
				continue
			}
			v, err := raw(durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(tag)))
			if err != nil {
				return "", err
			}
			add(v)
		case opTimer:
			if err := ctx.Sleep(time.Duration(arg+1) * time.Second); err != nil {
				return "", err
			}
			add("slept")
		case opEvent:
			ev := durable.WaitForEvent[durable.Raw](ctx, "ev")
			if _, err := raw(durable.CallActivity[durable.Raw](ctx, "Raise", durable.Raw(tag))); err != nil {
				return "", err
			}
			v, err := raw(ev)
			if err != nil {
				return "", err
			}
			add("ev:" + v)
		case opQueue:
			if _, err := raw(durable.CallActivity[durable.Raw](ctx, "Send", durable.Raw(tag))); err != nil {
				return "", err
			}
			v, err := raw(durable.Dequeue[durable.Raw](ctx, "q"))
			if err != nil {
				return "", err
			}
			add("q:" + v)
		case opSub:
			child := shapeInput{In: tag, Ops: []byte{opActivity + shapeOps}}
			if arg%2 == 1 {
				child.Ops = []byte{opEnd + 3*shapeOps}
			}
			v, err := self.CallSub(ctx, child).Get(ctx)
			if err != nil {
				var te *durable.TaskError
				if !errors.As(err, &te) {
					return "", fmt.Errorf("sub-orchestration: %v, want a TaskError", err)
				}
				add("suberr:" + te.Error())
				continue
			}
			add("sub:" + v)
		case opRace:
			if arg%2 == 0 {
				act := durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(tag))
				timer := ctx.CreateTimer(time.Hour)
				if w := durable.Race(ctx, act, timer); w != 0 {
					return "", fmt.Errorf("race: the timer won against an activity")
				}
				v, err := raw(act)
				if err != nil {
					return "", err
				}
				add("won:" + v)
				continue
			}
			timer := ctx.CreateTimer(time.Duration(arg+1) * time.Second)
			ev := durable.WaitForEvent[durable.Raw](ctx, "never")
			add(fmt.Sprintf("race:%d", durable.Race(ctx, ev, timer)))
		case opBranches:
			branches := make([]durable.Future[string], 2+arg%2)
			for k := range branches {
				branches[k] = durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
					v, err := durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(fmt.Sprintf("%s.b%d", tag, k))).Get(ctx)
					if err != nil {
						return "", err
					}
					return string(v), ctx.Sleep(time.Second)
				})
			}
			vs, err := durable.AwaitAll(ctx, branches...)
			if err != nil {
				return "", err
			}
			add("go:" + strings.Join(vs, ","))
		case opEnd:
			if arg%4 == 3 {
				return "", fmt.Errorf("shape failed at %s after %s", tag, acc)
			}
			add("can")
			return "", ctx.ContinueAsNew(shapeInput{In: in.In, Acc: acc, Ops: in.Ops[i+1:]})
		}
	}
	return in.In + acc, nil
}

// execExpect is what one execution of a program records.
type execExpect struct {
	events     int    // history length
	activities int    // ActivityScheduled events, each completed once
	terminal   string // terminal event type
}

// expectShape derives from the program what each execution of the
// instance and of each child records.
func expectShape(ops []byte) (parent []execExpect, children []execExpect) {
	cur := execExpect{events: 1} // OrchestrationStarted
	for i, b := range ops {
		op, arg := int(b)%shapeOps, int(b)/shapeOps
		switch op {
		case opActivity:
			cur.events += 2
			cur.activities++
		case opTimer:
			cur.events += 2
		case opEvent, opQueue: // subscription, schedule, completion, arrival
			cur.events += 4
			cur.activities++
		case opSub:
			cur.events += 2
			if arg%2 == 1 {
				children = append(children, execExpect{events: 2, terminal: "OrchestrationFailed"})
			} else {
				children = append(children, execExpect{events: 4, activities: 1, terminal: "OrchestrationCompleted"})
			}
		case opRace:
			if arg%2 == 0 { // schedule, timer, completion; nothing recorded for the losing timer
				cur.events += 3
				cur.activities++
			} else { // subscription, timer, fired, subscription cancelled
				cur.events += 4
			}
		case opBranches:
			n := 2 + arg%2
			cur.events += 4 * n
			cur.activities += n
		case opEnd:
			cur.events++
			if arg%4 == 3 {
				cur.terminal = "OrchestrationFailed"
				return append(parent, cur), children
			}
			cur.terminal = "OrchestrationContinuedAsNew"
			parent = append(parent, cur)
			if i == len(ops)-1 {
				// The last execution runs an empty program.
				return append(parent, execExpect{events: 2, terminal: "OrchestrationCompleted"}), children
			}
			cur = execExpect{events: 1}
		}
	}
	cur.events++
	cur.terminal = "OrchestrationCompleted"
	return append(parent, cur), children
}

// shapeRun is the outcome of running one shape.
type shapeRun struct {
	status   *durable.Status
	instance string
	// executions holds each instance's executions' histories, by instance.
	executions map[string][][]provider.Event
}

// runShapeOnce runs ops as instance "test-<name>" on a fresh Env and
// checks that every history replays against the registry.
func runShapeOnce(t *testing.T, name, input string, ops []byte) shapeRun {
	t.Helper()
	reg := propRegistry(t, name)
	env := durabletest.New(t, reg, durabletest.WithTimeout(30*time.Second))
	id := "test-" + name
	env.Start(name, id, shapeInput{In: input, Ops: ops})
	st := env.Wait(id)
	ctx := context.Background()
	ids, err := env.Client().ListInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run := shapeRun{status: st, instance: id, executions: map[string][][]provider.Event{}}
	for _, inst := range ids {
		events := env.History(inst)
		if err := durabletest.Replay(reg, events); err != nil {
			t.Errorf("%s does not replay: %v", inst, err)
		}
		execs, err := env.Client().ListExecutions(ctx, inst)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range execs {
			h, err := env.Client().History(ctx, inst, x)
			if err != nil {
				t.Fatal(err)
			}
			run.executions[inst] = append(run.executions[inst], h)
		}
	}
	return run
}

// checkShape runs ops twice and checks what every property shares: the
// outcome the program dictates, and the same outcome and the same events
// (per execution, in any order) in both runs. It returns the first run.
func checkShape(t *testing.T, rawName, rawInput string, ops []byte) (shapeRun, []execExpect, []execExpect) {
	t.Helper()
	if len(ops) > maxShapeLen {
		ops = ops[:maxShapeLen]
	}
	name, input := propName(rawName), propInput(rawInput)
	first := runShapeOnce(t, name, input, ops)
	second := runShapeOnce(t, name, input, ops)
	parent, children := expectShape(ops)
	last := parent[len(parent)-1]
	switch st := first.status; {
	case last.terminal == "OrchestrationFailed" && st.State != durable.StateFailed,
		last.terminal == "OrchestrationCompleted" && st.State != durable.StateCompleted:
		t.Fatalf("ops %v: state %v (output %q, failure %v), want %s", ops, st.State, st.Output, st.Failure, last.terminal)
	case st.State == durable.StateCompleted:
		if out, err := durable.Output[string](st); err != nil || !strings.HasPrefix(out, input) {
			t.Errorf("ops %v: output %q (%v) does not start with the input %q", ops, st.Output, err, input)
		}
	}
	if a, b := first.status, second.status; a.State != b.State || a.Output != b.Output || propFailureText(a) != propFailureText(b) {
		t.Errorf("ops %v: runs differ: %v %q %q / %v %q %q", ops, a.State, a.Output, propFailureText(a), b.State, b.Output, propFailureText(b))
	}
	if !maps.EqualFunc(first.executions, second.executions, func(x, y [][]provider.Event) bool {
		return slices.EqualFunc(x, y, func(a, b []provider.Event) bool { return slices.Equal(propSortedTypes(a), propSortedTypes(b)) })
	}) {
		t.Errorf("ops %v: the two runs recorded different events:\n%v\n%v", ops, propTypesOf(first.executions), propTypesOf(second.executions))
	}
	if got := len(first.executions[first.instance]); got != len(parent) {
		t.Errorf("ops %v: %d executions, want %d", ops, got, len(parent))
	}
	if got := len(first.executions) - 1; got != len(children) {
		t.Errorf("ops %v: %d sub-orchestrations, want %d", ops, got, len(children))
	}
	return first, parent, children
}

func propFailureText(s *durable.Status) string {
	if s.Failure == nil {
		return ""
	}
	return s.Failure.DisplayMessage()
}

func propSortedTypes(events []provider.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Kind.EventType()
	}
	slices.Sort(out)
	return out
}

func propTypesOf(execs map[string][][]provider.Event) map[string][][]string {
	out := map[string][][]string{}
	for inst, xs := range execs {
		for _, x := range xs {
			types := make([]string, len(x))
			for i, ev := range x {
				types[i] = ev.Kind.EventType()
			}
			out[inst] = append(out[inst], types)
		}
	}
	return out
}

// forEachExecution calls fn for every execution of every instance of run,
// with what the program says it records.
func forEachExecution(t *testing.T, run shapeRun, parent, children []execExpect, fn func(inst string, h []provider.Event, want execExpect)) {
	t.Helper()
	// Children run one-step programs that complete or fail: each child is
	// paired with an expectation of its outcome, and the outcomes are
	// counted against the program's.
	wantChildren := map[string]execExpect{}
	wantOutcomes, gotOutcomes := map[string]int{}, map[string]int{}
	for _, c := range children {
		wantChildren[c.terminal] = c
		wantOutcomes[c.terminal]++
	}
	for _, inst := range slices.Sorted(maps.Keys(run.executions)) {
		for x, h := range run.executions[inst] {
			switch {
			case inst == run.instance && x < len(parent):
				fn(inst, h, parent[x])
			case inst != run.instance && x == 0 && len(h) > 0:
				outcome := h[len(h)-1].Kind.EventType()
				gotOutcomes[outcome]++
				if want, ok := wantChildren[outcome]; ok {
					fn(inst, h, want)
				}
			default:
				t.Errorf("%s execution %d: not expected", inst, x+1)
			}
		}
	}
	if !maps.Equal(wantOutcomes, gotOutcomes) {
		t.Errorf("sub-orchestration outcomes %v, want %v", gotOutcomes, wantOutcomes)
	}
}

// propShapeSeeds are the seed corpus shared by the properties: orchestration
// name, input, program.
var propShapeSeeds = []struct {
	name, input string
	ops         []byte
}{
	{"TestOrch", "abc", []byte{opActivity}},
	{"Empty", "", nil},
	{"a1", "xyz123", []byte{opActivity, opActivity + 4*shapeOps, opTimer, opEvent, opQueue}},
	{"Subs", "in", []byte{opSub, opSub + shapeOps, opRace, opRace + shapeOps}},
	{"Branches", "b", []byte{opBranches, opBranches + shapeOps, opActivity}},
	{"CAN", "loop", []byte{opActivity, opEnd, opTimer, opQueue, opEnd, opEvent}},
	{"Fails", "f", []byte{opTimer, opSub + shapeOps, opEnd + 3*shapeOps, opActivity}},
	{"CANLast", "z", []byte{opRace + 2*shapeOps, opEnd}},
	{"Mixed", "m", []byte{0x2a, 0x95, 0x13, 0xfe, 0x07, 0x60, 0x3c}},
}

func propAddSeeds(f *testing.F) {
	for _, s := range propShapeSeeds {
		f.Add(s.name, s.input, s.ops)
	}
}

// FuzzPropEventIdsMonotonic: event ids are strictly increasing and
// contiguous from 1 in every execution.
func FuzzPropEventIdsMonotonic(f *testing.F) {
	propAddSeeds(f)
	f.Fuzz(func(t *testing.T, name, input string, ops []byte) {
		run, parent, children := checkShape(t, name, input, ops)
		forEachExecution(t, run, parent, children, func(inst string, h []provider.Event, _ execExpect) {
			var prev uint64
			for i, ev := range h {
				if ev.EventID <= prev {
					t.Errorf("%s: event ids not monotonic: %d after %d", inst, ev.EventID, prev)
				}
				if ev.EventID != uint64(i+1) {
					t.Errorf("%s: event %d has id %d: ids not contiguous", inst, i, ev.EventID)
				}
				prev = ev.EventID
			}
		})
	})
}

// FuzzPropSingleTerminalState: every execution has exactly one terminal
// event, and it is the last event (duradyn writes terminal cancellations
// before it; duroxide may write activity ones after).
func FuzzPropSingleTerminalState(f *testing.F) {
	propAddSeeds(f)
	f.Fuzz(func(t *testing.T, name, input string, ops []byte) {
		run, parent, children := checkShape(t, name, input, ops)
		forEachExecution(t, run, parent, children, func(inst string, h []provider.Event, want execExpect) {
			terminals := 0
			for _, ev := range h {
				if ev.IsTerminal() {
					terminals++
				}
			}
			if terminals != 1 {
				t.Errorf("%s: %d terminal events, want 1", inst, terminals)
			}
			if len(h) == 0 || !h[len(h)-1].IsTerminal() {
				t.Errorf("%s: the last event is not terminal", inst)
			} else if got := h[len(h)-1].Kind.EventType(); got != want.terminal {
				t.Errorf("%s: ends with %s, want %s", inst, got, want.terminal)
			}
		})
	})
}

// FuzzPropActivityLifecycle: every scheduled activity has exactly one
// completion (ActivityCompleted or ActivityFailed), and the program's
// activities are all scheduled.
func FuzzPropActivityLifecycle(f *testing.F) {
	propAddSeeds(f)
	f.Fuzz(func(t *testing.T, name, input string, ops []byte) {
		run, parent, children := checkShape(t, name, input, ops)
		forEachExecution(t, run, parent, children, func(inst string, h []provider.Event, want execExpect) {
			scheduled := map[uint64]bool{}
			completions := map[uint64]int{}
			for _, ev := range h {
				switch ev.Kind.(type) {
				case provider.ActivityScheduled:
					scheduled[ev.EventID] = true
				case provider.ActivityCompleted, provider.ActivityFailed:
					if ev.SourceEventID == nil {
						t.Errorf("%s: completion %d without a source", inst, ev.EventID)
						continue
					}
					completions[*ev.SourceEventID]++
				}
			}
			for id := range scheduled {
				if completions[id] != 1 {
					t.Errorf("%s: activity %d completed %d times", inst, id, completions[id])
				}
			}
			for id := range completions {
				if !scheduled[id] {
					t.Errorf("%s: completion for %d, which is not a schedule", inst, id)
				}
			}
			if len(scheduled) != want.activities {
				t.Errorf("%s: %d activities scheduled, want %d", inst, len(scheduled), want.activities)
			}
		})
	})
}

// FuzzPropHistoryEventCountBounds: each history holds between the events
// its program must record (OrchestrationStarted, two per activity, ...,
// the terminal event) and at most 10 more; shapes here are deterministic,
// so the count is exact.
func FuzzPropHistoryEventCountBounds(f *testing.F) {
	propAddSeeds(f)
	f.Fuzz(func(t *testing.T, name, input string, ops []byte) {
		run, parent, children := checkShape(t, name, input, ops)
		forEachExecution(t, run, parent, children, func(inst string, h []provider.Event, want execExpect) {
			if len(h) < want.events || len(h) > want.events+10 {
				t.Errorf("%s: %d events %v, want between %d and %d", inst, len(h), propSortedTypes(h), want.events, want.events+10)
			} else if len(h) != want.events {
				t.Errorf("%s: %d events %v, want exactly %d", inst, len(h), propSortedTypes(h), want.events)
			}
		})
	})
}
