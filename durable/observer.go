package durable

import (
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// Observer is told of a runtime's orchestration turns and activity runs
// ([Options.Observer]): a hook for tests and simple logging that needs no
// OpenTelemetry SDK. The runtime calls it on the goroutine that processes
// the turn or the activity, so its methods must be safe for concurrent use,
// return quickly and not panic. [ObserverFuncs] implements it with
// functions.
type Observer interface {
	// TurnCommitted is called once the provider has committed an
	// orchestration turn.
	TurnCommitted(TurnEvent)
	// ActivityStarted is called just before an activity's code runs.
	ActivityStarted(ActivityEvent)
	// ActivityFinished is called after the code of an activity that
	// ActivityStarted announced has returned (or was given up on) and its
	// outcome has been acknowledged or handed back to the provider. As the
	// acknowledgement may already have woken the orchestration, finishes
	// of different activities may be reported in any order.
	ActivityFinished(ActivityEvent)
}

// TurnEvent describes a committed orchestration turn.
type TurnEvent struct {
	// Instance and ExecutionID name the execution the turn ran: for a
	// turn that starts an execution after a continue-as-new, the new one.
	Instance    string
	ExecutionID uint64
	// Orchestration and Version are the orchestration's name and the
	// version the execution runs; empty for a turn that ran no code
	// (drained, or a history that did not decode).
	Orchestration, Version string
	// Attempt counts the deliveries of the turn's messages, from 1.
	Attempt uint32
	// RuntimeID names the runtime that ran the turn ([Options.RuntimeID]).
	RuntimeID string
	// Outcome is how the turn left the execution: "continue", "completed",
	// "failed", "continued_as_new" or "drained" (the execution had ended;
	// the messages were dropped).
	Outcome string
	// Resumed reports a turn that resumed the execution's kept code
	// instead of replaying its history ([Options.ExecutionCacheSize]).
	Resumed bool
	// Err is, for outcome "failed", a *[FailureError] with the recorded
	// failure; it wraps [ErrNondeterminism] for nondeterminism.
	Err error
}

// ActivityEvent describes one run of an activity.
type ActivityEvent struct {
	// Activity is the run's instance, execution, activity name and id,
	// attempt and worker id, as the activity's code sees them through
	// [ActivityInfoFrom].
	Activity ActivityInfo
	// Outcome is set for ActivityFinished: "completed", "failed" (Err is
	// the activity's error), "cancelled" (its lock was lost: the
	// orchestration cancelled it, ended, or another worker took it over)
	// or "abandoned" (the runtime shut down; another runtime runs it).
	Outcome string
	// Err is the error of a failed activity.
	Err error
	// Duration is how long the code ran; set for ActivityFinished.
	Duration time.Duration
}

// ObserverFuncs is an [Observer] made of functions; nil ones are skipped.
type ObserverFuncs struct {
	OnTurnCommitted    func(TurnEvent)
	OnActivityStarted  func(ActivityEvent)
	OnActivityFinished func(ActivityEvent)
}

// TurnCommitted calls OnTurnCommitted.
func (o ObserverFuncs) TurnCommitted(e TurnEvent) {
	if o.OnTurnCommitted != nil {
		o.OnTurnCommitted(e)
	}
}

// ActivityStarted calls OnActivityStarted.
func (o ObserverFuncs) ActivityStarted(e ActivityEvent) {
	if o.OnActivityStarted != nil {
		o.OnActivityStarted(e)
	}
}

// ActivityFinished calls OnActivityFinished.
func (o ObserverFuncs) ActivityFinished(e ActivityEvent) {
	if o.OnActivityFinished != nil {
		o.OnActivityFinished(e)
	}
}

// observeTurn tells the observer, if any, of a committed turn.
func (r *Runtime) observeTurn(item *provider.OrchestrationItem, t *replay.Turn) {
	if r.opts.Observer == nil {
		return
	}
	ev := TurnEvent{
		Instance: item.Instance, ExecutionID: item.ExecutionID, Orchestration: t.Name, Version: t.Version,
		Attempt: item.AttemptCount, RuntimeID: r.opts.RuntimeID, Outcome: outcomeName(t.Outcome), Resumed: t.Resumed,
	}
	if t.Commit.ExecutionID != 0 {
		ev.ExecutionID = t.Commit.ExecutionID
	}
	if t.Outcome == replay.Failed && t.Failure != nil {
		ev.Err = &FailureError{Instance: item.Instance, Details: t.Failure}
	}
	r.opts.Observer.TurnCommitted(ev)
}

// observeCorruptHistory tells the observer, if any, of the failure
// committed for a history that did not decode.
func (r *Runtime) observeCorruptHistory(item *provider.OrchestrationItem, details provider.ErrorDetails) {
	if r.opts.Observer == nil {
		return
	}
	r.opts.Observer.TurnCommitted(TurnEvent{
		Instance: item.Instance, ExecutionID: item.ExecutionID, Attempt: item.AttemptCount, RuntimeID: r.opts.RuntimeID,
		Outcome: outcomeFailed, Err: &FailureError{Instance: item.Instance, Details: details},
	})
}

// activityStarted tells the observer, if any, that info's code starts;
// the function it returns tells it how the run ended.
func (r *Runtime) activityStarted(info ActivityInfo) (finished func(outcome string, err error)) {
	if r.opts.Observer == nil {
		return func(string, error) {}
	}
	r.opts.Observer.ActivityStarted(ActivityEvent{Activity: info})
	began := time.Now()
	return func(outcome string, err error) {
		ev := ActivityEvent{Activity: info, Outcome: outcome, Duration: time.Since(began)}
		if outcome == outcomeFailed {
			ev.Err = err
		}
		r.opts.Observer.ActivityFinished(ev)
	}
}
