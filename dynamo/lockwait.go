package dynamo

import (
	"sync"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// lockWaits keeps the signals of instances whose turn is locked until it
// ends (docs/design.md §8, "Guarantees"): no fetch can take their message
// before, and no later signal may come. Own turns' signals are set aside
// without a request and handed on at the ack if the turn did not take the
// message; another process's are handed on when the lease read ends.
type lockWaits struct {
	mu     sync.Mutex
	own    map[string]*ownTurn
	timers map[string]*time.Timer
	// windows holds the timers that end completion windows (gather).
	windows map[string]*time.Timer
	closed  bool
}

// ownTurn is a turn this process holds.
type ownTurn struct {
	token string
	// readMs is when the fetch read the messages (its clock); untilMs is the
	// lease's end (past it, signals are tried as for any instance).
	readMs, untilMs int64
	// taken holds the messages the turn took (takenKey).
	taken map[string]bool
	// again is set when the instance may have messages the turn did not take.
	again bool
}

// maxCompletionWindow caps a commit's CompletionWindow, so that no hint
// holds an instance's turns back for long.
const maxCompletionWindow = time.Second

// maxLockWaits bounds the instances kept in each map; past it, what a
// dropped entry would have re-delivered is left to sweeps.
const maxLockWaits = 10_000

// locked records a turn this process locked, which took the messages of
// sort keys batch; capped: the fetch left visible messages behind.
func (w *lockWaits) locked(instance, token string, readMs, untilMs int64, capped bool, batch []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.own == nil {
		w.own = map[string]*ownTurn{}
	}
	if len(w.own) >= maxLockWaits {
		for id, t := range w.own {
			if t.untilMs <= readMs {
				delete(w.own, id)
			}
		}
		if len(w.own) >= maxLockWaits {
			return
		}
	}
	taken := make(map[string]bool, len(batch))
	for _, sk := range batch {
		taken[sk] = true
	}
	w.own[instance] = &ownTurn{token: token, readMs: readMs, untilMs: untilMs, again: capped, taken: taken}
}

// heldSignal reports whether sig is for a live turn this process holds,
// and so waits for its end. It announces more when it names a row the turn
// did not take or, naming none, is not older than the read: a message
// stamped before the read may commit after it.
func (w *lockWaits) heldSignal(sig queues.Signal, nowMs int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.own[sig.Instance]
	if t == nil || t.untilMs <= nowMs {
		return false
	}
	switch {
	case sig.Work != "":
		t.again = t.again || !t.taken[takenKey(sig.Work, readySeq(sig.Claim))]
	case sig.VisibleAt.IsZero() || sig.VisibleAt.UnixMilli() >= t.readMs:
		t.again = true
	}
	return true
}

// renewed records a renewal of the turn token holds.
func (w *lockWaits) renewed(instance, token string, untilMs int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.own[instance]; t != nil && t.token == token {
		t.untilMs = untilMs
	}
}

// ownLocked reports whether this process holds a live turn of instance.
func (w *lockWaits) ownLocked(instance string, nowMs int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.own[instance]
	return t != nil && t.untilMs > nowMs
}

// released forgets the turn token held and reports whether the process's
// fetches should look at the instance again.
func (w *lockWaits) released(instance, token string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.own[instance]
	if t == nil || t.token != token {
		return false
	}
	delete(w.own, instance)
	return t.again
}

// gather holds this process's fetches back from instance for the
// completion window d after its turn: signals are set aside as for a held
// turn and sweeps pass over it; then deliver runs if a signal came or again
// is set, so that the next turn takes the window's completions together.
func (w *lockWaits) gather(instance string, nowMs int64, d time.Duration, again bool, deliver func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.own) >= maxLockWaits || len(w.windows) >= maxLockWaits {
		if again {
			go deliver()
		}
		return
	}
	if w.own == nil {
		w.own = map[string]*ownTurn{}
	}
	if w.windows == nil {
		w.windows = map[string]*time.Timer{}
	}
	if old := w.windows[instance]; old != nil {
		old.Stop()
	}
	// No fetch read the instance: any signal may announce a message.
	t := &ownTurn{untilMs: nowMs + durMs(d), again: again}
	w.own[instance] = t
	var timer *time.Timer
	timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		if w.windows[instance] == timer {
			delete(w.windows, instance)
		}
		mine := w.own[instance] == t
		if mine {
			delete(w.own, instance)
		}
		closed := w.closed
		w.mu.Unlock()
		if mine && !closed && t.again {
			deliver()
		}
	})
	w.windows[instance] = timer
}

// heldElsewhere runs deliver after d (the rest of another process's lease
// on instance), unless a delivery for instance is already arranged.
func (w *lockWaits) heldElsewhere(instance string, d time.Duration, deliver func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.timers[instance] != nil {
		return
	}
	if w.timers == nil {
		w.timers = map[string]*time.Timer{}
	}
	if len(w.timers) >= maxLockWaits {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		w.mu.Lock()
		mine := w.timers[instance] == t
		if mine {
			delete(w.timers, instance)
		}
		closed := w.closed
		w.mu.Unlock()
		if mine && !closed {
			deliver()
		}
	})
	w.timers[instance] = t
}

// close stops the timers.
func (w *lockWaits) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, timers := range []map[string]*time.Timer{w.timers, w.windows} {
		for id, t := range timers {
			t.Stop()
			delete(timers, id)
		}
	}
}
