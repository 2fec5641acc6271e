package replay

import "github.com/duradyn/duradyn/provider"

// prepCompletions turns the batch's completions into history events, in
// batch order: completions of other executions and duplicates are dropped,
// completions without a matching schedule set the turn's abort error, and
// system failures of activities and children abort the turn after their
// event is recorded.
func (e *engine) prepCompletions() {
	for _, m := range e.completions {
		if !e.forThisExecution(m) || e.duplicate(m) {
			continue
		}
		if d := e.checkSchedule(m); d != nil {
			if e.abort == nil {
				e.abort = d
			}
			continue
		}
		switch m := m.(type) {
		case provider.ActivityCompletedItem:
			e.appendEvent(ptr(m.ID), provider.ActivityCompleted{Result: m.Result})
		case provider.ActivityFailedItem:
			e.appendEvent(ptr(m.ID), provider.ActivityFailed{Details: m.Details})
			e.abortOnSystemFailure(m.Details)
		case provider.TimerFiredItem:
			e.appendEvent(ptr(m.ID), provider.TimerFired{FireAtMs: m.FireAtMs})
		case provider.ExternalRaisedItem:
			e.appendEvent(nil, provider.ExternalEvent{Name: m.Name, Data: m.Data})
		case provider.QueueMessageItem:
			e.appendEvent(nil, provider.QueueEventDelivered{Name: m.Name, Data: m.Data})
		case provider.SubOrchCompletedItem:
			e.appendEvent(ptr(m.ParentID), provider.SubOrchestrationCompleted{Result: m.Result})
		case provider.SubOrchFailedItem:
			e.appendEvent(ptr(m.ParentID), provider.SubOrchestrationFailed{Details: m.Details})
			e.abortOnSystemFailure(m.Details)
		case provider.CancelInstanceItem:
			if !e.endedOrCancelled() {
				e.appendEvent(nil, provider.OrchestrationCancelRequested{Reason: m.Reason})
			}
		}
	}
}

func (e *engine) forThisExecution(m provider.WorkItem) bool {
	switch m := m.(type) {
	case provider.ActivityCompletedItem:
		return m.ExecutionID == e.executionID
	case provider.ActivityFailedItem:
		return m.ExecutionID == e.executionID
	case provider.TimerFiredItem:
		return m.ExecutionID == e.executionID
	case provider.SubOrchCompletedItem:
		return m.ParentExecutionID == e.executionID
	case provider.SubOrchFailedItem:
		return m.ParentExecutionID == e.executionID
	}
	return true
}

// completionOf returns the schedule id a completion refers to and the kind
// of schedule it completes; ok is false for arrivals and cancellations.
func completionOf(m provider.WorkItem) (id uint64, kind Kind, ok bool) {
	switch m := m.(type) {
	case provider.ActivityCompletedItem:
		return m.ID, KindActivity, true
	case provider.ActivityFailedItem:
		return m.ID, KindActivity, true
	case provider.TimerFiredItem:
		return m.ID, KindTimer, true
	case provider.SubOrchCompletedItem:
		return m.ParentID, KindSubOrchestration, true
	case provider.SubOrchFailedItem:
		return m.ParentID, KindSubOrchestration, true
	}
	return 0, 0, false
}

// completes reports whether ev completes a schedule of kind.
func completes(ev provider.Event, kind Kind) bool {
	switch ev.Kind.(type) {
	case provider.ActivityCompleted, provider.ActivityFailed:
		return kind == KindActivity
	case provider.TimerFired:
		return kind == KindTimer
	case provider.SubOrchestrationCompleted, provider.SubOrchestrationFailed:
		return kind == KindSubOrchestration
	}
	return false
}

// duplicate reports a completion already in history or in this turn's
// delta. Unlike duroxide 0.1.29, a failed activity is deduplicated against
// history too.
func (e *engine) duplicate(m provider.WorkItem) bool {
	id, kind, ok := completionOf(m)
	if !ok {
		return false
	}
	for _, evs := range [][]provider.Event{e.baseline, e.delta} {
		for _, ev := range evs {
			if ev.SourceEventID != nil && *ev.SourceEventID == id && completes(ev, kind) {
				return true
			}
		}
	}
	return false
}

// scheduleKind returns the kind of the schedule event id, or 0.
func (e *engine) scheduleKind(id uint64) Kind {
	for _, evs := range [][]provider.Event{e.baseline, e.delta} {
		for _, ev := range evs {
			if ev.EventID != id {
				continue
			}
			switch ev.Kind.(type) {
			case provider.ActivityScheduled:
				return KindActivity
			case provider.TimerCreated:
				return KindTimer
			case provider.SubOrchestrationScheduled:
				return KindSubOrchestration
			}
		}
	}
	return 0
}

var wireKindNames = map[Kind]string{KindActivity: "activity", KindTimer: "timer", KindSubOrchestration: "suborchestration"}

func (e *engine) checkSchedule(m provider.WorkItem) provider.ErrorDetails {
	id, want, ok := completionOf(m)
	if !ok {
		return nil
	}
	got := e.scheduleKind(id)
	switch {
	case got == want:
		return nil
	case got != 0:
		return nondeterminism("completion kind mismatch for id=%d, expected '%s', got '%s'", id, wireKindNames[got], wireKindNames[want])
	case want == KindTimer:
		return nondeterminism("no matching schedule for timer id=%d", id)
	case want == KindSubOrchestration:
		return nondeterminism("no matching schedule for sub-orchestration id=%d", id)
	default:
		return nondeterminism("no matching schedule for completion id=%d", id)
	}
}

func (e *engine) abortOnSystemFailure(d provider.ErrorDetails) {
	switch d.(type) {
	case provider.ConfigurationDetails, provider.InfrastructureDetails, provider.PoisonDetails:
		if e.abort == nil {
			e.abort = d
		}
	}
}

// endedOrCancelled reports whether the execution already completed, failed
// or has a cancellation request.
func (e *engine) endedOrCancelled() bool {
	for _, ev := range e.baseline {
		switch ev.Kind.(type) {
		case provider.OrchestrationCompleted, provider.OrchestrationFailed, provider.OrchestrationCancelRequested:
			return true
		}
	}
	for _, ev := range e.delta {
		if _, ok := ev.Kind.(provider.OrchestrationCancelRequested); ok {
			return true
		}
	}
	return false
}
