package replay

import (
	"bytes"

	"github.com/duradyn/duradyn/provider"
)

// Held is an execution's code kept between two of its turns: the
// coroutines blocked where the last turn left them and the engine's state
// of the execution. Resuming it gives the next turn what a replay of the
// whole history would, without running the code over that history again.
//
// A Held is used at most once: [Resume] consumes it, and an owner that
// does not resume it must [Held.Close] it.
type Held struct {
	e *engine
	// The history the next turn must bring: its length, its first and last
	// events, and the events the held turn added (its end), in wire form.
	length      int
	first, last []byte
	added       [][]byte
}

// hold keeps the engine for the execution's next turn. It keeps only what
// identifies the history, not the history itself, which the provider
// hands again with the next turn.
func (e *engine) hold() *Held {
	h := &Held{e: e, length: len(e.baseline) + len(e.delta)}
	if h.length == 0 {
		return nil
	}
	all := func(i int) provider.Event {
		if i < len(e.baseline) {
			return e.baseline[i]
		}
		return e.delta[i-len(e.baseline)]
	}
	h.first = wire(all(0))
	h.last = wire(all(h.length - 1))
	for _, ev := range e.delta {
		h.added = append(h.added, wire(ev))
	}
	if h.first == nil || h.last == nil || len(h.added) != len(e.delta) {
		return nil
	}
	// The code's deferred calls may still read the execution's identity
	// when a Close unwinds it.
	e.item = &provider.OrchestrationItem{
		Instance: e.item.Instance, OrchestrationName: e.item.OrchestrationName,
		ExecutionID: e.item.ExecutionID, Version: e.item.Version,
	}
	e.in.Item = e.item
	e.baseline, e.delta, e.byEvent = nil, nil, nil
	e.turn, e.start, e.completions, e.abort = nil, nil, nil, nil
	return h
}

// wire is ev's wire form, or nil if it has none.
func wire(ev provider.Event) []byte {
	b, err := ev.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// Close unwinds the held code's coroutines (their deferred calls run). It
// is idempotent; a nil Held is closed.
func (h *Held) Close() {
	if h == nil || h.e == nil {
		return
	}
	h.e.ctx.sched.Close()
	h.e = nil
}

// fits reports whether in is the next turn of the held execution: the same
// execution, its history exactly what the held turn committed (nothing
// appended since, nothing replaced), and no start, continue-as-new or
// abort, which a fresh run handles.
func (h *Held) fits(in Input) bool {
	item := in.Item
	if in.Abort != nil || item == nil || item.ExecutionID != h.e.executionID || len(item.History) != h.length {
		return false
	}
	for _, m := range item.Messages {
		switch m.(type) {
		case provider.StartOrchestrationItem, provider.ContinueAsNewItem:
			return false
		}
	}
	if !bytes.Equal(wire(item.History[0]), h.first) || !bytes.Equal(wire(item.History[h.length-1]), h.last) {
		return false
	}
	tail := item.History[h.length-len(h.added):]
	for i, b := range h.added {
		if !bytes.Equal(wire(tail[i]), b) {
			return false
		}
	}
	return true
}

// Resume computes the execution's next turn from held, as [Run] would from
// in, running the code only over the turn's new events. When in is not
// the next turn of held's execution (another process ran a turn since,
// say), held is closed and the turn computed by Run. Either way held is
// consumed. The caller must only resume a held turn whose commit landed.
func Resume(held *Held, in Input) (*Turn, error) {
	if held == nil || held.e == nil {
		return Run(in)
	}
	if !held.fits(in) {
		held.Close()
		return Run(in)
	}
	e := held.e
	held.e = nil
	return e.resume(in)
}

// resume starts the engine's next turn from the state the last one left:
// the history it holds is the one the last turn committed, the code is
// blocked where that turn left it.
func (e *engine) resume(in Input) (*Turn, error) {
	e.in, e.item = in, in.Item
	e.nowMs = uint64(in.Now.UnixMilli())
	e.classify()
	e.baseline = e.item.History
	e.persisted = len(e.baseline)
	e.nextID = e.baseline[len(e.baseline)-1].EventID + 1
	e.prepCompletions()
	e.turn = &Turn{Name: e.name, Version: e.version, Resumed: true}
	c := e.ctx
	if e.abort != nil {
		// As a run would: the code does not run.
		c.sched.Close()
		e.ctx = nil
		return e.turn, e.terminate(result{outcome: Failed, failure: e.abort})
	}
	// As a replay of the history would leave it: every recorded event
	// applied, the code blocked, nothing emitted beyond history.
	c.live, c.replaying = false, false
	c.nowMs = e.baseline[len(e.baseline)-1].TimestampMs
	return e.runCode(e.delta, 0)
}
