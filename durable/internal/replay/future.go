package replay

import (
	"errors"

	"github.com/duradyn/duradyn/provider"
)

// ErrCancelled is the error of a future that was cancelled before it
// resolved.
var ErrCancelled = errors.New("cancelled")

// Kind is the kind of scheduled work an action records.
type Kind int

// The kinds of actions. The first six are schedules: they record an event
// that later completions refer to by its id.
const (
	KindActivity Kind = iota + 1
	KindTimer
	KindExternal
	KindQueue
	KindSubOrchestration
	KindChained
	KindCustomStatus
	KindKVSet
	KindKVClear
	KindKVClearAll
	KindContinueAsNew
	// KindBranch is a future resolved by a coroutine of the orchestration
	// itself (durable.Go); it records nothing.
	KindBranch
)

var kindNames = map[Kind]string{
	KindActivity: "activity", KindTimer: "timer", KindExternal: "external wait",
	KindQueue: "persistent wait", KindSubOrchestration: "sub-orchestration",
	KindChained: "detached orchestration", KindCustomStatus: "custom status",
	KindKVSet: "kv set", KindKVClear: "kv clear", KindKVClearAll: "kv clear all",
	KindContinueAsNew: "continue-as-new", KindBranch: "branch",
}

func (k Kind) String() string { return kindNames[k] }

// Future is the untyped result of an action: a wire result string or error
// details, set once by the engine when the completion is applied.
type Future struct {
	kind     Kind
	eventID  uint64 // the schedule's event id; 0 until bound
	instance string // a sub-orchestration's full instance id, once bound

	done      bool
	cancelled bool
	result    string
	failure   provider.ErrorDetails
	value     any   // a branch's value
	err       error // a branch's error

	onCancel func() // a branch's children
}

// Kind returns the future's kind.
func (f *Future) Kind() Kind { return f.kind }

// Done reports whether the future has resolved or was cancelled.
func (f *Future) Done() bool { return f.done }

// Cancelled reports whether the future was cancelled before it resolved.
func (f *Future) Cancelled() bool { return f.cancelled }

// EventID returns the id of the schedule event the future is bound to, or 0.
func (f *Future) EventID() uint64 { return f.eventID }

// Result returns the wire result and, for failed activities and
// sub-orchestrations, the failure's details. A cancelled future returns
// [ErrCancelled].
func (f *Future) Result() (string, provider.ErrorDetails, error) {
	if f.cancelled {
		return "", nil, ErrCancelled
	}
	return f.result, f.failure, nil
}

// Value returns a branch future's value and error.
func (f *Future) Value() (any, error) {
	if f.cancelled {
		return nil, ErrCancelled
	}
	return f.value, f.err
}

func (f *Future) resolve(result string, failure provider.ErrorDetails) {
	if f.done {
		return
	}
	f.done, f.result, f.failure = true, result, failure
}

// Action is one call of orchestration code that the engine turns into a
// history event (or matches against one while replaying).
type Action struct {
	Kind      Kind
	Name      string
	Input     string
	Instance  string  // sub-orchestrations (empty: automatic id) and detached starts
	Version   *string // sub-orchestrations, detached starts, continue-as-new
	SessionID *string
	Tag       *string
	FireAtMs  uint64
	Status    *string
	Key       string
	Value     string
	// AtMs is a KV set's update time, which [Context.Emit] fills in.
	AtMs uint64

	future *Future
	seq    int // its index among the actions the run emitted
}

// Resolved returns a future that is already done with value and err.
func Resolved(value any, err error) *Future {
	return &Future{kind: KindBranch, done: true, value: value, err: err}
}
