package replay

import (
	"fmt"
	"slices"

	"github.com/duradyn/duradyn/provider"
)

// Reasons recorded on cancellation breadcrumbs.
const (
	ReasonDroppedFuture = "dropped_future"
	ReasonTerminal      = "orchestration_terminal"
	// ReasonChildDropped is the reason sent to a sub-orchestration whose
	// future the parent cancelled.
	ReasonChildDropped = "parent dropped sub-orchestration future"
	// ReasonParentCancelled is the reason sent to the children of a
	// cancelled orchestration.
	ReasonParentCancelled = "parent canceled"
)

// Limits checked on every turn (duroxide 0.1.29's).
const (
	MaxCustomStatusBytes   = 256 * 1024
	MaxTagBytes            = 256
	MaxKVValueBytes        = 64 * 1024
	MaxKVKeys              = 150
	MaxCarryForwardEvents  = 100
	sortedBreadcrumbsKinds = 4
)

var breadcrumbKinds = [sortedBreadcrumbsKinds]Kind{KindActivity, KindSubOrchestration, KindExternal, KindQueue}

var kindWords = map[Kind]string{
	KindActivity: "activities", KindSubOrchestration: "sub-orchestrations",
	KindExternal: "external waits", KindQueue: "persistent waits",
}

// cancelBreadcrumb returns the schedule a cancellation breadcrumb refers to
// and its kind.
func cancelBreadcrumb(ev provider.Event) (Kind, string, bool) {
	if ev.SourceEventID == nil {
		return 0, "", false
	}
	switch k := ev.Kind.(type) {
	case provider.ActivityCancelRequested:
		return KindActivity, k.Reason, true
	case provider.SubOrchestrationCancelRequested:
		return KindSubOrchestration, k.Reason, true
	case provider.ExternalSubscribedCancelled:
		return KindExternal, k.Reason, true
	case provider.QueueSubscriptionCancelled:
		return KindQueue, k.Reason, true
	}
	return 0, "", false
}

// reconcileCancellations checks that the code still cancels what history
// says it cancelled, and records a breadcrumb for each new cancellation.
// It reads history in one pass, allocating only for cancellations: it
// runs every turn, over the whole history.
func (e *engine) reconcileCancellations() error {
	byKind := map[Kind][]uint64{}
	cancelled := map[uint64]bool{} // ids of cancelled schedules, until found in persisted history
	for _, f := range e.ctx.cancelled {
		if f.eventID != 0 {
			byKind[f.kind] = append(byKind[f.kind], f.eventID)
			cancelled[f.eventID] = false
		}
	}
	persisted := e.baseline[:min(e.persisted, len(e.baseline))]
	recorded := map[Kind][]uint64{} // dropped-future breadcrumbs in persisted history
	already := map[Kind]map[uint64]bool{}
	for i, evs := range [][]provider.Event{e.baseline, e.delta} {
		for j, ev := range evs {
			if i == 0 && j < len(persisted) {
				if _, ok := cancelled[ev.EventID]; ok {
					cancelled[ev.EventID] = true
				}
			}
			k, reason, ok := cancelBreadcrumb(ev)
			if !ok {
				continue
			}
			if already[k] == nil {
				already[k] = map[uint64]bool{}
			}
			already[k][*ev.SourceEventID] = true
			if i == 0 && j < len(persisted) && reason == ReasonDroppedFuture {
				recorded[k] = append(recorded[k], *ev.SourceEventID)
			}
		}
	}
	for _, kind := range breadcrumbKinds {
		var now []uint64
		for _, id := range byKind[kind] {
			if cancelled[id] { // scheduled before this turn
				now = append(now, id)
			}
		}
		for _, id := range recorded[kind] {
			if !slices.Contains(now, id) {
				slices.Sort(recorded[kind])
				slices.Sort(now)
				return &errTurnFailed{details: nondeterminism("cancellation mismatch (%s): baseline_dropped_future_cancel_requests=%v ctx_cancelled_in_replayed_segment=%v", kindWords[kind], recorded[kind], now)}
			}
		}
	}
	for _, kind := range breadcrumbKinds {
		ids := byKind[kind]
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			if already[kind][id] {
				continue
			}
			e.cancelSchedule(kind, id, ReasonDroppedFuture)
		}
	}
	return nil
}

// cancelSchedule appends a cancellation breadcrumb and its side effect.
func (e *engine) cancelSchedule(kind Kind, id uint64, reason string) {
	src := ptr(id)
	switch kind {
	case KindActivity:
		e.appendEvent(src, provider.ActivityCancelRequested{Reason: reason})
		e.turn.Commit.CancelledActivities = append(e.turn.Commit.CancelledActivities,
			provider.ScheduledActivityIdentifier{Instance: e.item.Instance, ExecutionID: e.executionID, ActivityID: id})
	case KindSubOrchestration:
		e.appendEvent(src, provider.SubOrchestrationCancelRequested{Reason: reason})
		if child := e.childOf(id); child != "" {
			e.turn.Commit.OrchestratorItems = append(e.turn.Commit.OrchestratorItems, provider.CancelInstanceItem{Instance: child, Reason: ReasonChildDropped})
		}
	case KindExternal:
		e.appendEvent(src, provider.ExternalSubscribedCancelled{Reason: reason})
	case KindQueue:
		e.appendEvent(src, provider.QueueSubscriptionCancelled{Reason: reason})
	}
}

// childOf returns the instance id of the sub-orchestration scheduled by
// event id.
func (e *engine) childOf(id uint64) string {
	for _, evs := range [][]provider.Event{e.baseline, e.delta} {
		for _, ev := range evs {
			if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok && ev.EventID == id {
				return e.childInstance(k.Instance)
			}
		}
	}
	return ""
}

// proceed finishes a turn after which the execution waits: new schedules
// become work.
func (e *engine) proceed() error {
	if msg := e.limitViolation(); msg != "" {
		return e.failForLimit(msg)
	}
	t := e.turn
	t.Outcome = Continue
	for id, f := range e.open {
		if k := e.kinds[id]; f != nil && !f.cancelled && (k == KindActivity || k == KindSubOrchestration) {
			t.Awaiting++
		}
	}
	e.dispatchNew(false)
	e.setMetadata(provider.StatusRunning, nil)
	t.Commit.ExecutionID = e.executionID
	t.Commit.HistoryDelta = e.delta
	return nil
}

// dispatchNew turns the schedule events recorded this turn into work
// items; a terminal turn dispatches only detached starts.
func (e *engine) dispatchNew(terminal bool) {
	t := e.turn
	for _, ev := range e.delta {
		a := e.byEvent[ev.EventID]
		if a == nil {
			continue
		}
		switch k := ev.Kind.(type) {
		case provider.ActivityScheduled:
			if !terminal {
				t.Commit.WorkerItems = append(t.Commit.WorkerItems, provider.ActivityExecuteItem{
					Instance: e.item.Instance, ExecutionID: e.executionID, ID: ev.EventID,
					Name: k.Name, Input: k.Input, SessionID: k.SessionID, Tag: k.Tag,
				})
			}
		case provider.TimerCreated:
			if !terminal {
				t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, provider.TimerFiredItem{
					Instance: e.item.Instance, ExecutionID: e.executionID, ID: ev.EventID, FireAtMs: k.FireAtMs,
				})
			}
		case provider.SubOrchestrationScheduled:
			if !terminal {
				t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, provider.StartOrchestrationItem{
					Instance: e.childInstance(k.Instance), Orchestration: k.Name, Input: k.Input, Version: a.Version,
					ParentInstance: ptr(e.item.Instance), ParentID: ptr(ev.EventID), ExecutionID: provider.InitialExecutionID,
					ParentExecutionID: e.executionID,
				})
			}
		case provider.OrchestrationChained:
			t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, provider.StartOrchestrationItem{
				Instance: k.Instance, Orchestration: k.Name, Input: k.Input, Version: a.Version,
				ExecutionID: provider.InitialExecutionID,
			})
		}
	}
}

// setMetadata fills the commit's metadata: the status, and the
// orchestration's identity on the first turn of an execution.
func (e *engine) setMetadata(status string, output *string) {
	m := &e.turn.Commit.Metadata
	if status != provider.StatusRunning {
		m.Status, m.Output = status, output
	}
	for _, ev := range e.delta {
		started, ok := ev.Kind.(provider.OrchestrationStarted)
		if !ok {
			continue
		}
		m.OrchestrationName, m.OrchestrationVersion = started.Name, started.Version
		if started.ParentInstance != nil {
			m.ParentInstanceID = *started.ParentInstance
		}
		if v, err := provider.ParseSemVer(Version); err == nil {
			m.PinnedDuroxideVersion = &v
		}
	}
}

// terminate ends the execution with r: terminal breadcrumbs, the terminal
// event last, and the items a terminal turn sends.
func (e *engine) terminate(r result) error {
	if r.outcome != ContinuedAsNew && r.reason == "" {
		if msg := e.limitViolation(); msg != "" {
			return e.failForLimit(msg)
		}
	}
	t := e.turn
	t.Outcome = r.outcome
	e.dispatchNew(true)
	if r.reason != "" {
		r.failure = provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: r.reason}}
		for _, child := range e.outstandingChildren() {
			t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, provider.CancelInstanceItem{Instance: child, Reason: ReasonParentCancelled})
		}
	}
	e.terminalBreadcrumbs(r.outcome)
	var status, output string
	switch r.outcome {
	case Completed:
		e.appendEvent(nil, provider.OrchestrationCompleted{Output: r.output})
		status, output, t.Output = provider.StatusCompleted, r.output, r.output
	case Failed:
		e.appendEvent(nil, provider.OrchestrationFailed{Details: r.failure})
		status, output, t.Failure = provider.StatusFailed, r.failure.DisplayMessage(), r.failure
	case ContinuedAsNew:
		e.appendEvent(nil, provider.OrchestrationContinuedAsNew{Input: r.can.Input})
		status, output = provider.StatusContinuedAsNew, r.can.Input
		t.Commit.OrchestratorItems = append(t.Commit.OrchestratorItems, provider.ContinueAsNewItem{
			Instance: e.item.Instance, Orchestration: e.name, Input: r.can.Input, Version: r.can.Version,
			CarryForwardEvents: e.carryForward(), InitialCustomStatus: e.currentStatus(),
		})
	}
	if r.outcome != ContinuedAsNew {
		t.Parent = e.parent
	}
	e.setMetadata(status, &output)
	t.Commit.ExecutionID = e.executionID
	t.Commit.HistoryDelta = e.delta
	return nil
}

func (e *engine) currentStatus() *string {
	if e.ctx == nil {
		return nil
	}
	return e.ctx.status
}

// carryForward returns the queued events no subscription consumed, the
// first MaxCarryForwardEvents of them.
func (e *engine) carryForward() []provider.CarryForwardEvent {
	if e.ctx == nil || len(e.ctx.arrivals) == 0 {
		return nil
	}
	out := slices.Clone(e.ctx.arrivals)
	if len(out) > MaxCarryForwardEvents {
		out = out[:MaxCarryForwardEvents]
	}
	return out
}

// scheduleState summarises every schedule of the execution so far.
type scheduleState struct {
	kind      Kind
	completed bool // a subscription: history resolves it (see schedules)
	cancelled bool // any cancellation breadcrumb
}

// schedules returns the ids of the execution's schedules, in order, and
// their states. Subscriptions are resolved from history alone, whether or
// not the code ran far enough to see their events (duroxide's
// get_outstanding_schedule_ids): a positional subscription by the first
// later arrival of its name not taken by an earlier one, until it is
// cancelled; persistent subscriptions, in creation order and skipping
// cancelled ones, by the arrivals of their name in FIFO order.
func (e *engine) schedules() (ids []uint64, states map[uint64]*scheduleState) {
	states = map[uint64]*scheduleState{}
	waiting := map[string][]uint64{} // positional subscriptions awaiting an arrival
	var queued []uint64              // persistent subscriptions, in creation order
	queueNames := map[uint64]string{}
	arrivals := map[string]int{}
	for _, evs := range [][]provider.Event{e.baseline, e.delta} {
		for _, ev := range evs {
			switch k := ev.Kind.(type) {
			case provider.ActivityScheduled:
				states[ev.EventID] = &scheduleState{kind: KindActivity}
			case provider.SubOrchestrationScheduled:
				states[ev.EventID] = &scheduleState{kind: KindSubOrchestration}
			case provider.ExternalSubscribed:
				states[ev.EventID] = &scheduleState{kind: KindExternal}
				waiting[k.Name] = append(waiting[k.Name], ev.EventID)
			case provider.QueueSubscribed:
				states[ev.EventID] = &scheduleState{kind: KindQueue}
				queued = append(queued, ev.EventID)
				queueNames[ev.EventID] = k.Name
			case provider.ExternalEvent:
				if w := waiting[k.Name]; len(w) > 0 {
					states[w[0]].completed = true
					waiting[k.Name] = w[1:]
				}
				continue
			case provider.QueueEventDelivered:
				arrivals[k.Name]++
				continue
			default:
				if ev.SourceEventID == nil {
					continue
				}
				s := states[*ev.SourceEventID]
				if s == nil {
					continue
				}
				if _, _, ok := cancelBreadcrumb(ev); ok {
					s.cancelled = true
					if s.kind == KindExternal {
						for name, w := range waiting {
							waiting[name] = slices.DeleteFunc(w, func(id uint64) bool { return id == *ev.SourceEventID })
						}
					}
				} else if completes(ev, s.kind) {
					s.completed = true
				}
				continue
			}
			ids = append(ids, ev.EventID)
		}
	}
	for _, id := range queued {
		if s, name := states[id], queueNames[id]; !s.cancelled && arrivals[name] > 0 {
			arrivals[name]--
			s.completed = true
		}
	}
	return ids, states
}

func (e *engine) outstandingChildren() []string {
	ids, states := e.schedules()
	var out []string
	for _, id := range ids {
		if s := states[id]; s.kind == KindSubOrchestration && !s.completed && !s.cancelled {
			out = append(out, e.childOf(id))
		}
	}
	return out
}

// terminalBreadcrumbs cancels the subscriptions still waiting and the
// activities still in flight.
func (e *engine) terminalBreadcrumbs(outcome Outcome) {
	ids, states := e.schedules()
	for _, kind := range []Kind{KindExternal, KindQueue} {
		for _, id := range ids {
			s := states[id]
			if s.kind != kind || s.cancelled || s.completed {
				continue
			}
			e.cancelSchedule(kind, id, ReasonTerminal)
		}
	}
	reason := map[Outcome]string{
		Completed: "orchestration_terminal_completed", Failed: "orchestration_terminal_failed",
		ContinuedAsNew: "orchestration_terminal_continued_as_new",
	}[outcome]
	for _, id := range ids {
		if s := states[id]; s.kind == KindActivity && !s.completed && !s.cancelled {
			e.cancelSchedule(KindActivity, id, reason)
		}
	}
}

// limitViolation checks the turn's delta against the runtime's limits.
func (e *engine) limitViolation() string {
	var lastStatus *string
	for _, ev := range e.delta {
		switch k := ev.Kind.(type) {
		case provider.CustomStatusUpdated:
			lastStatus = k.Status
		case provider.ActivityScheduled:
			if k.Tag != nil && len(*k.Tag) > MaxTagBytes {
				return fmt.Sprintf("Activity '%s' tag size (%d bytes) exceeds limit (%d bytes)", k.Name, len(*k.Tag), MaxTagBytes)
			}
		case provider.KeyValueSet:
			if len(k.Value) > MaxKVValueBytes {
				return fmt.Sprintf("KV value for key '%s' (%d bytes) exceeds limit (%d bytes)", k.Key, len(k.Value), MaxKVValueBytes)
			}
		}
	}
	if lastStatus != nil && len(*lastStatus) > MaxCustomStatusBytes {
		return fmt.Sprintf("Custom status size (%d bytes) exceeds limit (%d bytes)", len(*lastStatus), MaxCustomStatusBytes)
	}
	if e.ctx != nil && len(e.ctx.kv) > MaxKVKeys {
		return fmt.Sprintf("KV key count (%d) exceeds limit (%d)", len(e.ctx.kv), MaxKVKeys)
	}
	return ""
}

// failForLimit fails the execution: the delta keeps the start event and the
// completions, drops what the code added, and ends with the failure.
func (e *engine) failForLimit(msg string) error {
	keep := 0
	for i, ev := range e.delta {
		if _, ok := e.byEvent[ev.EventID]; ok {
			break
		}
		keep = i + 1
	}
	e.delta = e.delta[:keep]
	if keep > 0 {
		e.nextID = e.delta[keep-1].EventID + 1
	} else if n := len(e.baseline); n > 0 {
		e.nextID = e.baseline[n-1].EventID + 1
	}
	e.byEvent = nil
	e.turn.Commit = provider.TurnCommit{}
	e.ctx = nil
	return e.terminate(result{outcome: Failed, failure: provider.ApplicationDetails{
		Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: msg,
	}})
}
