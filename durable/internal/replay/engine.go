// Package replay computes one turn of an orchestration: from the recorded
// history of its execution and the messages delivered with it, it runs the
// orchestration code from the start, matches what the code does against
// what history says it did, and returns what the turn adds (history events,
// work for workers and orchestrators, cancellations, the execution's
// status). It does no I/O; the histories it writes are duroxide 0.1.29's.
package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/durable/internal/coro"
	"github.com/duradyn/duradyn/provider"
)

// Version is the replay model this engine implements, written into every
// event it creates.
const Version = "0.1.29"

// SubOrchestrationPrefix starts the instance ids of sub-orchestrations
// whose caller named none.
const SubOrchestrationPrefix = "sub::"

// Handler runs orchestration code for one run of a turn. It returns the
// orchestration's output, or an error that fails it.
type Handler func(c *Context, input string) (string, error)

// Resolver finds the handler for an orchestration name and, when given, an
// exact version; with a nil version it applies the registry's policy. It
// returns the version it resolved, or an error wrapping
// [ErrUnregistered].
type Resolver func(name string, version *string) (Handler, string, error)

// ErrUnregistered reports an orchestration this process cannot run.
var ErrUnregistered = errors.New("orchestration not registered")

// Input is everything one turn depends on.
type Input struct {
	// Item is the locked orchestration item.
	Item *provider.OrchestrationItem
	// Now is the wall-clock time of the turn, used for new events'
	// timestamps, timer fire times and KV timestamps.
	Now time.Time
	// Resolve finds the orchestration's handler.
	Resolve Resolver
	// Abort, when set, fails the execution with these details without
	// running any code (poison, or a commit the provider refused); the
	// handler need not be registered.
	Abort provider.ErrorDetails
	// Env is handed to orchestration code through [Context.Env].
	Env any
	// YieldTimeout bounds how long orchestration code may run without
	// awaiting; zero means no bound.
	YieldTimeout time.Duration
	// Keep asks for the code of a turn that leaves the execution waiting
	// to be kept where it blocked, in [Turn.Held], so that the execution's
	// next turn can resume it instead of replaying its history.
	Keep bool
	// Callers asks for the call site of every action the code emits to be
	// recorded (in [Turn.Sites], and in [Turn.Mismatch] for one that does
	// not match history), at the cost of a stack walk per action. Held
	// code keeps its sites from turn to turn.
	Callers bool
}

// Outcome is how a turn leaves the execution.
type Outcome int

// Turn outcomes.
const (
	// Continue: the execution waits for more completions.
	Continue Outcome = iota
	// Completed: the orchestration returned its output.
	Completed
	// Failed: the orchestration failed, was cancelled or was found
	// nondeterministic.
	Failed
	// ContinuedAsNew: the execution ended and a new one starts.
	ContinuedAsNew
	// Drained: the execution had already ended; the messages are dropped.
	Drained
)

// Turn is what a turn adds.
type Turn struct {
	// Commit is the turn's atomic commit, without the notification of a
	// parent (see Parent).
	Commit provider.TurnCommit
	// Outcome is how the execution stands after the turn.
	Outcome Outcome
	// Output is the output of a completed orchestration.
	Output string
	// Failure is the details of a failed one.
	Failure provider.ErrorDetails
	// Parent is set when a sub-orchestration reached a terminal state: the
	// caller adds its notification with [Turn.NotifyParent] once it knows
	// the parent's execution id.
	Parent *ParentLink
	// Panic is the orchestration's panic, if it panicked.
	Panic *coro.PanicError
	// Name and Version are the orchestration this turn ran.
	Name, Version string
	// Held is the code of the execution where this turn left it, set when
	// [Input.Keep] was and the execution waits (Continue). Its owner hands
	// it to [Resume] for the execution's next turn, once this turn's
	// commit landed, or closes it.
	Held *Held
	// Resumed reports a turn that [Resume] computed from held code, without
	// running the code over the history.
	Resumed bool
	// Awaiting is how many activities and sub-orchestrations the execution
	// waits for after a turn whose outcome is Continue: scheduled, not
	// completed, not cancelled.
	Awaiting int
	// Sites are the call sites of the actions the code emitted in this
	// execution, in emission order (which is the order of their events in
	// history), when [Input.Callers] is set; nil entries are unknown. For
	// a turn that resumed held code they go back to the execution's first
	// turn on this process.
	Sites []*Site
	// Mismatch is set when the turn failed because the code's calls do
	// not match history: which call, and what history holds there.
	Mismatch *Mismatch
}

// ParentLink names the schedule event of a parent orchestration that a
// sub-orchestration's result completes.
type ParentLink struct {
	Instance string
	EventID  uint64
	// ExecutionID is the parent's execution that scheduled the child, as
	// its start recorded it; 0 when the start did not record it, and the
	// caller must look the execution up.
	ExecutionID uint64
}

// NotifyParent adds the SubOrchCompleted or SubOrchFailed item for the
// parent's execution parentExecutionID.
func (t *Turn) NotifyParent(parentExecutionID uint64) {
	if t.Parent == nil {
		return
	}
	var item provider.WorkItem
	if t.Outcome == Completed {
		item = provider.SubOrchCompletedItem{ParentInstance: t.Parent.Instance, ParentExecutionID: parentExecutionID, ParentID: t.Parent.EventID, Result: t.Output}
	} else {
		item = provider.SubOrchFailedItem{ParentInstance: t.Parent.Instance, ParentExecutionID: parentExecutionID, ParentID: t.Parent.EventID, Details: t.Failure}
	}
	t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, item)
}

// Run computes one turn. It returns an error wrapping [ErrUnregistered]
// when the orchestration has no handler here, or [coro.ErrStuck] when its
// code did not yield in time; the item should then be abandoned.
func Run(in Input) (*Turn, error) {
	e := newEngine(in)
	return e.run(in)
}

type engine struct {
	in          Input
	item        *provider.OrchestrationItem
	executionID uint64
	name        string
	version     string
	handler     Handler
	input       string
	parent      *ParentLink
	nowMs       uint64

	baseline  []provider.Event
	persisted int
	delta     []provider.Event
	nextID    uint64

	start       provider.WorkItem
	completions []provider.WorkItem
	abort       provider.ErrorDetails

	open    map[uint64]*Future
	kinds   map[uint64]Kind
	byEvent map[uint64]*Action
	ctx     *Context
	turn    *Turn

	// How the main coroutine, the orchestration's code, returned.
	output   string
	err      error
	returned bool
}

func newEngine(in Input) *engine {
	return &engine{
		in:    in,
		item:  in.Item,
		nowMs: uint64(in.Now.UnixMilli()),
		open:  map[uint64]*Future{},
		kinds: map[uint64]Kind{},
	}
}

func (e *engine) run(in Input) (*Turn, error) {
	e.classify()
	e.baseline = e.item.History
	e.executionID = e.item.ExecutionID
	if terminal(e.baseline) && !e.isContinueAsNew() {
		return e.drained(), nil
	}
	if e.isContinueAsNew() {
		e.baseline = nil
		e.executionID++
	}
	if err := e.resolveStart(); err != nil {
		if in.Abort == nil {
			return nil, err
		}
		if e.version == "" {
			e.version = "0.0.0" // never resolved: poisoned before it ran
		}
	}
	e.persisted = len(e.baseline)
	e.nextID = provider.InitialEventID
	if n := len(e.baseline); n > 0 {
		e.nextID = e.baseline[n-1].EventID + 1
	}
	if len(e.baseline) == 0 {
		e.appendStart()
	}
	e.prepCompletions()
	if in.Abort != nil {
		e.abort = in.Abort
	}
	return e.execute()
}

// classify splits the messages into the start item (the first
// StartOrchestration or ContinueAsNew) and completions; a ContinueAsNew's
// carried-forward events go first.
func (e *engine) classify() {
	for _, m := range e.item.Messages {
		switch m := m.(type) {
		case provider.StartOrchestrationItem, provider.ContinueAsNewItem:
			if e.start == nil {
				e.start = m
			}
		case provider.ActivityExecuteItem:
		default:
			e.completions = append(e.completions, m)
		}
	}
	if can, ok := e.start.(provider.ContinueAsNewItem); ok && len(can.CarryForwardEvents) > 0 {
		carried := make([]provider.WorkItem, 0, len(can.CarryForwardEvents)+len(e.completions))
		for _, cf := range can.CarryForwardEvents {
			carried = append(carried, provider.QueueMessageItem{Instance: e.item.Instance, Name: cf.Name, Data: cf.Data})
		}
		e.completions = append(carried, e.completions...)
	}
}

func (e *engine) isContinueAsNew() bool {
	_, ok := e.start.(provider.ContinueAsNewItem)
	return ok && (len(e.item.History) == 0 || continuedAsNew(e.item.History))
}

func terminal(history []provider.Event) bool {
	for _, ev := range history {
		if ev.IsTerminal() {
			return true
		}
	}
	return false
}

func continuedAsNew(history []provider.Event) bool {
	for _, ev := range history {
		if _, ok := ev.Kind.(provider.OrchestrationContinuedAsNew); ok {
			return true
		}
	}
	return false
}

func (e *engine) drained() *Turn {
	return &Turn{Outcome: Drained, Commit: provider.TurnCommit{ExecutionID: e.item.ExecutionID}}
}

// resolveStart finds the orchestration's name, version, input and parent,
// from history or from the start item, and resolves its handler.
func (e *engine) resolveStart() error {
	var requested *string
	if len(e.baseline) > 0 {
		started, ok := e.baseline[0].Kind.(provider.OrchestrationStarted)
		if !ok {
			e.name = e.item.OrchestrationName
			return nil // the corruption guard fails the turn
		}
		e.name, e.input, requested = started.Name, started.Input, &started.Version
		if started.ParentInstance != nil && started.ParentID != nil {
			e.parent = &ParentLink{Instance: *started.ParentInstance, EventID: *started.ParentID, ExecutionID: started.ParentExecutionID}
		}
	} else {
		switch s := e.start.(type) {
		case provider.StartOrchestrationItem:
			e.name, e.input, requested = s.Orchestration, s.Input, s.Version
			if s.ParentInstance != nil && s.ParentID != nil {
				e.parent = &ParentLink{Instance: *s.ParentInstance, EventID: *s.ParentID, ExecutionID: s.ParentExecutionID}
			}
		case provider.ContinueAsNewItem:
			e.name, e.input, requested = s.Orchestration, s.Input, s.Version
		default:
			return nil // completions for an instance that never started
		}
	}
	if requested != nil {
		e.version = *requested
	}
	h, v, err := e.in.Resolve(e.name, requested)
	if err != nil {
		return err
	}
	e.version, e.handler = v, h
	return nil
}

func (e *engine) appendStart() {
	if e.name == "" {
		return
	}
	started := provider.OrchestrationStarted{Name: e.name, Version: e.version, Input: e.input}
	switch s := e.start.(type) {
	case provider.StartOrchestrationItem:
		started.ParentInstance, started.ParentID = s.ParentInstance, s.ParentID
		started.ParentExecutionID = s.ParentExecutionID
	case provider.ContinueAsNewItem:
		if len(s.CarryForwardEvents) > 0 {
			started.CarryForwardEvents = s.CarryForwardEvents
		}
		started.InitialCustomStatus = s.InitialCustomStatus
	}
	e.appendEvent(nil, started)
}

// appendEvent adds a new event to the delta with the next id.
func (e *engine) appendEvent(source *uint64, kind provider.EventKind) provider.Event {
	ev := provider.Event{
		EventID:         e.nextID,
		SourceEventID:   source,
		InstanceID:      e.item.Instance,
		ExecutionID:     e.executionID,
		TimestampMs:     e.nowMs,
		DuroxideVersion: Version,
		Kind:            kind,
	}
	e.nextID++
	e.delta = append(e.delta, ev)
	return ev
}

func ptr[T any](v T) *T { return &v }

func nondeterminism(format string, args ...any) provider.ErrorDetails {
	msg := fmt.Sprintf(format, args...)
	return provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Message: &msg}
}
