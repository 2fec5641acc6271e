package replay

import (
	"errors"
	"fmt"
	"maps"

	"github.com/duradyn/duradyn/durable/internal/coro"
	"github.com/duradyn/duradyn/provider"
)

// result is how user code ended the run, before finalisation.
type result struct {
	outcome Outcome
	output  string
	failure provider.ErrorDetails
	reason  string // cancellation reason
	can     *Action
}

// errTurnFailed carries the details that fail the turn from deep inside the
// replay loop, and the mismatched call when that is the reason.
type errTurnFailed struct {
	details  provider.ErrorDetails
	mismatch *Mismatch
}

func (e *errTurnFailed) Error() string { return e.details.DisplayMessage() }

// execute runs the orchestration over history plus delta and decides the
// turn's outcome.
func (e *engine) execute() (*Turn, error) {
	e.turn = &Turn{Name: e.name, Version: e.version}
	if e.name == "" {
		return e.drained(), nil
	}
	if e.abort != nil {
		return e.turn, e.terminate(result{outcome: Failed, failure: e.abort})
	}
	working := append(append([]provider.Event(nil), e.baseline...), e.delta...)
	if len(working) == 0 {
		return e.turn, e.terminate(result{outcome: Failed, failure: nondeterminism("corrupted history: empty")})
	}
	started, ok := working[0].Kind.(provider.OrchestrationStarted)
	if !ok {
		return e.turn, e.terminate(result{outcome: Failed, failure: nondeterminism("corrupted history: first event must be OrchestrationStarted")})
	}
	sched := coro.New(e.in.YieldTimeout)
	c := &Context{
		e:        e,
		sched:    sched,
		status:   started.InitialCustomStatus,
		kv:       maps.Clone(e.item.KVSnapshot),
		kvSetBy:  map[string]*Action{},
		external: map[string][]*Future{},
		queues:   map[string][]*Future{},
		children: map[string]*[]*Future{},
		nowMs:    working[0].TimestampMs,
	}
	if c.kv == nil {
		c.kv = map[string]provider.KVEntry{}
	}
	e.ctx = c
	sched.Go("main", func() {
		e.output, e.err = e.handler(c, e.input)
		e.returned = true
	})
	return e.runCode(working, e.persisted)
}

// runCode runs the code over working, whose first replayed events are
// history already recorded, and decides the turn's outcome. The code's
// coroutines are unwound when the turn ends, unless the turn is kept for
// the execution's next one (Input.Keep).
func (e *engine) runCode(working []provider.Event, replayed int) (*Turn, error) {
	c := e.ctx
	sched := c.sched
	kept := false
	turn := e.turn
	defer func() {
		if !kept {
			sched.Close()
		}
		turn.Sites = c.sites
	}()
	r, runErr := e.replay(working, replayed)
	if runErr != nil {
		var failed *errTurnFailed
		var panicked *coro.PanicError
		switch {
		case errors.As(runErr, &failed):
			e.turn.Mismatch = failed.mismatch
			return e.turn, e.terminate(result{outcome: Failed, failure: failed.details})
		case errors.As(runErr, &panicked):
			e.turn.Panic = panicked
			return e.turn, e.terminate(result{outcome: Failed, failure: provider.ApplicationDetails{
				Kind: provider.AppErrorKind{Code: provider.AppPanicked}, Message: panicMessage(panicked.Value),
			}})
		default:
			return nil, runErr
		}
	}
	if r != nil {
		return e.turn, e.terminate(*r)
	}
	if e.returned {
		if e.err != nil {
			return e.turn, e.terminate(result{outcome: Failed, failure: provider.ApplicationDetails{
				Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: e.err.Error(),
			}})
		}
		return e.turn, e.terminate(result{outcome: Completed, output: e.output})
	}
	if err := e.proceed(); err != nil {
		return e.turn, err
	}
	if e.in.Keep && turn.Outcome == Continue {
		if h := e.hold(); h != nil {
			turn.Held, kept = h, true
		}
	}
	return turn, nil
}

func panicMessage(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return "orchestration panicked"
}

// replay applies the working events, running the code between them (the
// first replayed of them are history recorded before this turn, which the
// code replays), then records the actions beyond history and runs the code
// until it blocks. It returns a cancellation or continue-as-new result, or
// nil.
func (e *engine) replay(working []provider.Event, replayed int) (*result, error) {
	c := e.ctx
	c.replaying = replayed > 0
	for i, ev := range working {
		if i >= replayed {
			c.replaying = false
		}
		if err := c.sched.Run(); err != nil {
			return nil, err
		}
		if e.returned {
			// Actions emitted before the code returned are matched against
			// the events history already has for them (see bindRest).
			// Queued messages recorded after the code returned still
			// arrived (duroxide's collect_unmatched_queue_messages counts
			// every arrival in history): a pending subscription takes one,
			// without waking code, else it is carried forward.
			for _, rest := range working[i+e.bindRest(working[i:]):] {
				k, ok := rest.Kind.(provider.QueueEventDelivered)
				if !ok {
					continue
				}
				if subs := c.queues[k.Name]; len(subs) > 0 {
					c.queues[k.Name] = subs[1:]
					continue
				}
				c.arrivals = append(c.arrivals, provider.CarryForwardEvent{Name: k.Name, Data: k.Data})
			}
			break
		}
		if err := e.apply(ev); err != nil {
			return nil, err
		}
		c.nowMs = ev.TimestampMs
	}
	c.replaying = false
	if err := c.sched.Run(); err != nil {
		return nil, err
	}
	c.live = true
	c.flush()
	if err := c.sched.Run(); err != nil {
		return nil, err
	}
	if reason, ok := e.cancelRequested(); ok {
		return &result{outcome: Failed, reason: reason}, nil
	}
	if c.can != nil {
		return &result{outcome: ContinuedAsNew, can: c.can}, nil
	}
	if err := e.reconcileCancellations(); err != nil {
		return nil, err
	}
	return nil, nil
}

// bindRest matches the actions the code emitted before it returned against
// the rest of history, without running code, so that actions history
// already records are not recorded again and their cancellations are
// recognised. It stops at the first event that does not fit (code that
// returns earlier than history shows is not, by itself, nondeterministic)
// and returns how many events it applied.
func (e *engine) bindRest(rest []provider.Event) int {
	for n, ev := range rest {
		if _, start := ev.Kind.(provider.OrchestrationStarted); start {
			continue // the code has run: its state is not reset
		}
		if len(e.ctx.fifo) == 0 || e.apply(ev) != nil {
			return n
		}
	}
	return len(rest)
}

func (e *engine) cancelRequested() (string, bool) {
	for _, evs := range [][]provider.Event{e.baseline, e.delta} {
		for _, ev := range evs {
			if k, ok := ev.Kind.(provider.OrchestrationCancelRequested); ok {
				return k.Reason, true
			}
		}
	}
	return "", false
}

// apply applies one history event to the running code's state.
func (e *engine) apply(ev provider.Event) error {
	c := e.ctx
	switch k := ev.Kind.(type) {
	case provider.OrchestrationStarted:
		if k.InitialCustomStatus != nil {
			c.status = k.InitialCustomStatus
		}
	case provider.CustomStatusUpdated, provider.KeyValueSet, provider.KeyValueCleared, provider.KeyValuesCleared:
		return e.matchSideEffect(ev)
	case provider.ActivityScheduled, provider.TimerCreated, provider.ExternalSubscribed,
		provider.QueueSubscribed, provider.SubOrchestrationScheduled, provider.OrchestrationChained:
		return e.matchSchedule(ev)
	case provider.ActivityCompleted:
		return e.complete(ev, KindActivity, k.Result, nil)
	case provider.ActivityFailed:
		return e.complete(ev, KindActivity, "", k.Details)
	case provider.TimerFired:
		return e.complete(ev, KindTimer, "", nil)
	case provider.SubOrchestrationCompleted:
		return e.complete(ev, KindSubOrchestration, k.Result, nil)
	case provider.SubOrchestrationFailed:
		return e.complete(ev, KindSubOrchestration, "", k.Details)
	case provider.ExternalSubscribedCancelled, provider.QueueSubscriptionCancelled:
		if ev.SourceEventID != nil {
			if f := e.open[*ev.SourceEventID]; f != nil {
				c.unsubscribe(f)
			}
		}
	case provider.ExternalEvent:
		c.deliverExternal(k.Name, k.Data)
	case provider.QueueEventDelivered:
		c.arriveQueued(k.Name, k.Data)
	}
	return nil
}

// matchSideEffect checks a custom status or KV event against the next
// emitted action, if there is one.
func (e *engine) matchSideEffect(ev provider.Event) error {
	c := e.ctx
	if len(c.fifo) == 0 {
		return nil
	}
	a := c.fifo[0]
	c.fifo = c.fifo[1:]
	if matches(a, ev.Kind) {
		return nil
	}
	what := map[string]string{
		"CustomStatusUpdated": "custom status", "KeyValueSet": "kv set",
		"KeyValueCleared": "kv clear", "KeyValuesCleared": "kv clear_all",
	}[ev.Kind.EventType()]
	return &errTurnFailed{nondeterminism("%s mismatch: action=%s vs event=%s", what, describeAction(a), describeEvent(ev.Kind)), c.mismatch(a, ev)}
}

// matchSchedule binds a schedule event to the next emitted action.
func (e *engine) matchSchedule(ev provider.Event) error {
	c := e.ctx
	if len(c.fifo) == 0 {
		if _, ok := ev.Kind.(provider.OrchestrationChained); ok {
			return &errTurnFailed{nondeterminism("history OrchestrationChained but no emitted action"), c.mismatch(nil, ev)}
		}
		return &errTurnFailed{nondeterminism("history schedule but no emitted action"), c.mismatch(nil, ev)}
	}
	a := c.fifo[0]
	c.fifo = c.fifo[1:]
	if !matches(a, ev.Kind) {
		return &errTurnFailed{nondeterminism("schedule mismatch: action=%s vs event=%s", describeAction(a), describeEvent(ev.Kind)), c.mismatch(a, ev)}
	}
	instance := ""
	if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
		instance = e.childInstance(k.Instance)
	}
	e.kinds[ev.EventID] = a.Kind
	c.bind(a, ev.EventID, instance)
	return nil
}

// complete resolves the future of the schedule a completion refers to.
func (e *engine) complete(ev provider.Event, kind Kind, res string, failure provider.ErrorDetails) error {
	if ev.SourceEventID == nil {
		return nil
	}
	id := *ev.SourceEventID
	f, open := e.open[id]
	if !open || f == nil {
		return &errTurnFailed{details: nondeterminism("completion without open schedule")}
	}
	if e.kinds[id] != kind && kind == KindActivity {
		return &errTurnFailed{details: nondeterminism("completion kind mismatch: expected activity")}
	}
	delete(e.open, id)
	f.resolve(res, failure)
	return nil
}

// matches is duroxide's action_matches_event_kind.
func matches(a *Action, kind provider.EventKind) bool {
	switch k := kind.(type) {
	case provider.ActivityScheduled:
		return a.Kind == KindActivity && a.Name == k.Name && a.Input == k.Input && eqPtr(a.SessionID, k.SessionID) && eqPtr(a.Tag, k.Tag)
	case provider.TimerCreated:
		return a.Kind == KindTimer
	case provider.ExternalSubscribed:
		return a.Kind == KindExternal && a.Name == k.Name
	case provider.QueueSubscribed:
		return a.Kind == KindQueue && a.Name == k.Name
	case provider.SubOrchestrationScheduled:
		return a.Kind == KindSubOrchestration && a.Name == k.Name && a.Input == k.Input
	case provider.OrchestrationChained:
		return a.Kind == KindChained && a.Name == k.Name && a.Instance == k.Instance && a.Input == k.Input
	case provider.CustomStatusUpdated:
		return a.Kind == KindCustomStatus
	case provider.KeyValueSet:
		return a.Kind == KindKVSet && a.Key == k.Key && a.Value == k.Value
	case provider.KeyValueCleared:
		return a.Kind == KindKVClear && a.Key == k.Key
	case provider.KeyValuesCleared:
		return a.Kind == KindKVClearAll
	}
	return false
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func describeEvent(kind provider.EventKind) string {
	switch k := kind.(type) {
	case provider.ActivityScheduled:
		return fmt.Sprintf("ActivityScheduled { name: %q, input: %q, session_id: %s, tag: %s }", k.Name, k.Input, optString(k.SessionID), optString(k.Tag))
	case provider.TimerCreated:
		return fmt.Sprintf("TimerCreated { fire_at_ms: %d }", k.FireAtMs)
	case provider.ExternalSubscribed:
		return fmt.Sprintf("ExternalSubscribed { name: %q }", k.Name)
	case provider.QueueSubscribed:
		return fmt.Sprintf("QueueSubscribed { name: %q }", k.Name)
	case provider.SubOrchestrationScheduled:
		return fmt.Sprintf("SubOrchestrationScheduled { name: %q, instance: %q, input: %q }", k.Name, k.Instance, k.Input)
	case provider.OrchestrationChained:
		return fmt.Sprintf("OrchestrationChained { name: %q, instance: %q, input: %q }", k.Name, k.Instance, k.Input)
	case provider.CustomStatusUpdated:
		return fmt.Sprintf("CustomStatusUpdated { status: %s }", optString(k.Status))
	case provider.KeyValueSet:
		return fmt.Sprintf("KeyValueSet { key: %q, value: %q }", k.Key, k.Value)
	case provider.KeyValueCleared:
		return fmt.Sprintf("KeyValueCleared { key: %q }", k.Key)
	}
	return kind.EventType()
}

// childInstance is build_child_instance_id: automatic ids are relative to
// the parent.
func (e *engine) childInstance(stored string) string {
	if len(stored) >= len(SubOrchestrationPrefix) && stored[:len(SubOrchestrationPrefix)] == SubOrchestrationPrefix {
		return e.item.Instance + "::" + stored
	}
	return stored
}

// record turns an action emitted beyond history into a new event.
func (e *engine) record(a *Action) {
	var kind provider.EventKind
	switch a.Kind {
	case KindActivity:
		kind = provider.ActivityScheduled{Name: a.Name, Input: a.Input, SessionID: a.SessionID, Tag: a.Tag}
	case KindTimer:
		kind = provider.TimerCreated{FireAtMs: a.FireAtMs}
	case KindExternal:
		kind = provider.ExternalSubscribed{Name: a.Name}
	case KindQueue:
		kind = provider.QueueSubscribed{Name: a.Name}
	case KindSubOrchestration:
		stored := a.Instance
		if stored == "" {
			if e.executionID > provider.InitialExecutionID {
				stored = fmt.Sprintf("%s%d.%d", SubOrchestrationPrefix, e.executionID, e.nextID)
			} else {
				stored = fmt.Sprintf("%s%d", SubOrchestrationPrefix, e.nextID)
			}
		}
		kind = provider.SubOrchestrationScheduled{Name: a.Name, Instance: stored, Input: a.Input}
	case KindChained:
		kind = provider.OrchestrationChained{Name: a.Name, Instance: a.Instance, Input: a.Input}
	case KindCustomStatus:
		kind = provider.CustomStatusUpdated{Status: a.Status}
	case KindKVSet:
		e.ctx.stampRecordedSet(a)
		kind = provider.KeyValueSet{Key: a.Key, Value: a.Value, LastUpdatedAtMs: a.AtMs}
	case KindKVClear:
		kind = provider.KeyValueCleared{Key: a.Key}
	case KindKVClearAll:
		kind = provider.KeyValuesCleared{}
	default:
		return
	}
	ev := e.appendEvent(nil, kind)
	if e.byEvent == nil {
		e.byEvent = map[uint64]*Action{}
	}
	e.byEvent[ev.EventID] = a
	switch k := kind.(type) {
	case provider.ActivityScheduled, provider.TimerCreated, provider.ExternalSubscribed, provider.QueueSubscribed:
		e.kinds[ev.EventID] = a.Kind
		e.ctx.bind(a, ev.EventID, "")
	case provider.SubOrchestrationScheduled:
		e.kinds[ev.EventID] = a.Kind
		e.ctx.bind(a, ev.EventID, e.childInstance(k.Instance))
	}
}
