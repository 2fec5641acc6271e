package replay

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/durable/internal/coro"
	"github.com/duradyn/duradyn/provider"
)

// Context is the deterministic state of one run of an orchestration: the
// actions its code emitted, the futures they return, subscriptions, custom
// status and KV. Orchestration code reaches it through durable's
// OrchestrationContext; every method is called from a coroutine of the
// turn, one at a time.
type Context struct {
	e     *engine
	sched *coro.Scheduler

	fifo    []*Action // emitted, not yet matched or recorded
	live    bool      // history is exhausted: actions are recorded as emitted
	emitted int       // actions emitted into fifo so far
	sites   []*Site   // their call sites, with Input.Callers

	replaying bool
	nowMs     uint64 // timestamp of the last applied event

	status  *string
	kv      map[string]provider.KVEntry
	kvSetBy map[string]*Action // the set each key of kv holds, of this run

	external map[string][]*Future // pending positional subscriptions by name
	queues   map[string][]*Future // pending persistent subscriptions by name
	arrivals []provider.CarryForwardEvent

	cancelled []*Future
	can       *Action
	branches  int
	children  map[string]*[]*Future // futures each branch created, by coroutine name
}

// Instance returns the instance id.
func (c *Context) Instance() string { return c.e.item.Instance }

// ExecutionID returns the execution id.
func (c *Context) ExecutionID() uint64 { return c.e.executionID }

// Name returns the orchestration name.
func (c *Context) Name() string { return c.e.name }

// Version returns the orchestration version this execution runs.
func (c *Context) Version() string { return c.e.version }

// Env returns the value the turn's caller passed in [Input.Env].
func (c *Context) Env() any { return c.e.in.Env }

// IsReplaying reports whether the code is re-executing recorded history.
func (c *Context) IsReplaying() bool { return c.replaying }

// Now returns the timestamp of the last history event applied before the
// code now running: the same on every replay.
func (c *Context) Now() time.Time { return time.UnixMilli(int64(c.nowMs)).UTC() }

// TurnTime returns the wall-clock time of the turn being computed; it is
// used for values that are recorded but not matched (timer fire times).
func (c *Context) TurnTime() time.Time { return c.e.in.Now }

// Emit records an action and returns its future. While history remains the
// action waits to be matched against the next schedule event; once history
// is exhausted it is recorded at once.
func (c *Context) Emit(a Action) *Future {
	f := &Future{kind: a.Kind}
	a.future = f
	c.track(f)
	switch a.Kind {
	case KindCustomStatus:
		c.status = a.Status
		f.done = true
	case KindKVSet:
		a.AtMs = c.setTimeMs()
		c.kv[a.Key] = provider.KVEntry{Value: a.Value, LastUpdatedAtMs: a.AtMs}
		c.kvSetBy[a.Key] = &a
		f.done = true
	case KindKVClear:
		delete(c.kv, a.Key)
		delete(c.kvSetBy, a.Key)
		f.done = true
	case KindKVClearAll:
		clear(c.kv)
		clear(c.kvSetBy)
		f.done = true
	case KindChained:
		f.done = true
	case KindContinueAsNew:
		f.done = true
		if c.can == nil {
			ac := a
			c.can = &ac
		}
		return f
	}
	a.seq = c.emitted
	c.emitted++
	if c.e.in.Callers {
		for len(c.sites) < a.seq {
			c.sites = append(c.sites, nil) // emitted without Callers
		}
		c.sites = append(c.sites, callerSite())
	}
	c.fifo = append(c.fifo, &a)
	if c.live {
		c.flush()
	}
	return f
}

// setTimeMs is when a KV set the code makes now happens. Running live, it
// is the turn's time. Replaying, it is the time of the turn that first made
// the set, which every event that turn added carries, so the timestamp of
// the event applied last: a key keeps the time it was set, whichever turn
// replays the set, and code reading it back sees what the first run saw. A
// set that history turns out not to hold is recorded with the turn's time
// (see stampRecordedSet).
func (c *Context) setTimeMs() uint64 {
	if c.replaying {
		return c.nowMs
	}
	return c.e.nowMs
}

// stampRecordedSet gives a KV set recorded this turn the turn's time, in
// the key's state too while that set is what the key holds.
func (c *Context) stampRecordedSet(a *Action) {
	a.AtMs = c.e.nowMs
	if c.kvSetBy[a.Key] == a {
		c.kv[a.Key] = provider.KVEntry{Value: a.Value, LastUpdatedAtMs: a.AtMs}
	}
}

// Await blocks the calling coroutine until f is done.
func (c *Context) Await(f *Future) {
	c.sched.Block(f.Done)
}

// AwaitAny blocks until one of fs is done.
func (c *Context) AwaitAny(fs []*Future) {
	c.sched.Block(func() bool { return slices.ContainsFunc(fs, (*Future).Done) })
}

// Go starts a branch: a coroutine that runs fn after the coroutines already
// running block. The returned future resolves with fn's value and error.
// Cancelling it cancels the futures fn created that are still pending; the
// branch itself stops at its next await.
func (c *Context) Go(fn func() (any, error)) *Future {
	f := &Future{kind: KindBranch}
	c.branches++
	c.track(f)
	name := "branch-" + strconv.Itoa(c.branches)
	children := &[]*Future{}
	c.children[name] = children
	c.sched.Go(name, func() {
		v, err := fn()
		if !f.done {
			f.done, f.value, f.err = true, v, err
		}
	})
	f.onCancel = func() {
		for _, ch := range *children {
			c.Cancel(ch)
		}
	}
	return f
}

// Cancel cancels f if it has not resolved: an activity is cancelled on its
// worker, a sub-orchestration is sent a cancellation, a subscription stops
// receiving; a timer records nothing. A branch cancels what it created.
func (c *Context) Cancel(f *Future) {
	if f == nil || f.done {
		return
	}
	f.done, f.cancelled = true, true
	switch f.kind {
	case KindActivity, KindSubOrchestration, KindExternal, KindQueue:
		c.cancelled = append(c.cancelled, f)
		if f.eventID != 0 {
			c.unsubscribe(f)
		}
	case KindBranch:
		f.onCancel()
	}
}

// CustomStatus returns the current custom status.
func (c *Context) CustomStatus() (string, bool) {
	if c.status == nil {
		return "", false
	}
	return *c.status, true
}

// KV returns the orchestration's KV state. The caller must not change it.
func (c *Context) KV() map[string]provider.KVEntry { return c.kv }

// track records f as created by the running branch, if any.
func (c *Context) track(f *Future) {
	if children := c.children[c.sched.Current()]; children != nil {
		*children = append(*children, f)
	}
}

// flush records every action still in the FIFO as a new event.
func (c *Context) flush() {
	for len(c.fifo) > 0 {
		a := c.fifo[0]
		c.fifo = c.fifo[1:]
		c.e.record(a)
	}
}

// bind ties a matched or newly recorded schedule to its event id.
func (c *Context) bind(a *Action, eventID uint64, instance string) {
	f := a.future
	f.eventID, f.instance = eventID, instance
	c.e.open[eventID] = f
	if f.cancelled {
		return
	}
	switch a.Kind {
	case KindExternal:
		c.external[a.Name] = append(c.external[a.Name], f)
	case KindQueue:
		c.queues[a.Name] = append(c.queues[a.Name], f)
		c.deliverQueued(a.Name)
	}
}

func (c *Context) unsubscribe(f *Future) {
	for name, subs := range c.external {
		c.external[name] = slices.DeleteFunc(subs, func(s *Future) bool { return s == f })
	}
	for name, subs := range c.queues {
		c.queues[name] = slices.DeleteFunc(subs, func(s *Future) bool { return s == f })
	}
}

// deliverExternal hands a positional event to the oldest pending
// subscription of its name; with none, the event is dropped.
func (c *Context) deliverExternal(name, data string) {
	subs := c.external[name]
	if len(subs) == 0 {
		return
	}
	c.external[name] = subs[1:]
	subs[0].resolve(data, nil)
}

// arriveQueued buffers a persistent event and hands buffered events to
// pending subscriptions, oldest first.
func (c *Context) arriveQueued(name, data string) {
	c.arrivals = append(c.arrivals, provider.CarryForwardEvent{Name: name, Data: data})
	c.deliverQueued(name)
}

func (c *Context) deliverQueued(name string) {
	for len(c.queues[name]) > 0 {
		i := slices.IndexFunc(c.arrivals, func(a provider.CarryForwardEvent) bool { return a.Name == name })
		if i < 0 {
			return
		}
		data := c.arrivals[i].Data
		c.arrivals = slices.Delete(c.arrivals, i, i+1)
		sub := c.queues[name][0]
		c.queues[name] = c.queues[name][1:]
		sub.resolve(data, nil)
	}
}

func describeAction(a *Action) string {
	switch a.Kind {
	case KindActivity:
		return fmt.Sprintf("CallActivity { name: %q, input: %q, session_id: %s, tag: %s }", a.Name, a.Input, optString(a.SessionID), optString(a.Tag))
	case KindTimer:
		return fmt.Sprintf("CreateTimer { fire_at_ms: %d }", a.FireAtMs)
	case KindExternal:
		return fmt.Sprintf("WaitExternal { name: %q }", a.Name)
	case KindQueue:
		return fmt.Sprintf("DequeueEvent { name: %q }", a.Name)
	case KindSubOrchestration:
		return fmt.Sprintf("StartSubOrchestration { name: %q, instance: %q, input: %q }", a.Name, a.Instance, a.Input)
	case KindChained:
		return fmt.Sprintf("StartOrchestrationDetached { name: %q, instance: %q, input: %q }", a.Name, a.Instance, a.Input)
	case KindCustomStatus:
		return fmt.Sprintf("UpdateCustomStatus { status: %s }", optString(a.Status))
	case KindKVSet:
		return fmt.Sprintf("SetKeyValue { key: %q, value: %q }", a.Key, a.Value)
	case KindKVClear:
		return fmt.Sprintf("ClearKeyValue { key: %q }", a.Key)
	case KindKVClearAll:
		return "ClearKeyValues"
	}
	return a.Kind.String()
}

func optString(s *string) string {
	if s == nil {
		return "None"
	}
	return fmt.Sprintf("Some(%q)", *s)
}
