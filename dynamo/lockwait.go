package dynamo

import (
	"sync"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// Signals for locked instances (docs/design.md §8). A signal that reaches a
// fetch while its instance's turn is locked announces a message no fetch
// can take before that turn ends, and no later signal may come for it. It
// is kept, in this process, until the turn ends, rather than dropped and
// left to the next sweep:
//
//   - a turn this process holds: the signal is set aside without a request
//     (the process knows the lock) and handed to the process's fetches
//     when the turn's ack commits, if it announced a message the turn did
//     not take, or if that fetch left visible messages behind (the batch
//     cap). A signal for what the fetch took (the copy every waiter of the
//     process receives) is dropped. A signal names its message's row
//     (Signal.Work), which the turn's batch lists or not; one that names
//     none (an in-process signal for the instance, or a sender's that did
//     not) counts as newer when its time is not before the read: a
//     message's time is stamped before its write commits, so a message
//     stamped before the read may have committed after it, and only its
//     row tells;
//   - a turn another process holds: the signal is handed to the process's
//     fetches again when the lease read ends (one timer per instance), as
//     that process cannot know of it.
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
	// readMs is when the fetch read the instance's messages (its clock);
	// untilMs is the lease's end, as locked or renewed (past it, signals
	// are tried as for any instance).
	readMs, untilMs int64
	// taken holds the sort keys of the messages the turn took.
	taken map[string]bool
	// again is set when the instance has, or may have, visible messages
	// the turn did not take.
	again bool
}

// maxCompletionWindow caps the completion window a commit asks for
// (provider.TurnCommit.CompletionWindow), so that no hint holds an
// instance's turns back for long.
const maxCompletionWindow = time.Second

// maxLockWaits bounds the instances kept in each map; past it, what a
// dropped entry would have re-delivered is left to sweeps.
const maxLockWaits = 10_000

// locked records a turn this process locked, which took the messages of
// sort keys batch. capped reports that the fetch left visible messages
// behind.
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

// heldSignal reports whether sig names an instance whose turn this process
// holds at nowMs, in which case the signal must not be tried now: it is
// kept for the turn's end when it may announce a message the turn did not
// see (written after the read, or of unknown time).
func (w *lockWaits) heldSignal(sig queues.Signal, nowMs int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.own[sig.Instance]
	if t == nil || t.untilMs <= nowMs {
		return false
	}
	switch {
	case sig.Work != "":
		t.again = t.again || !t.taken[sig.Work]
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

// gather holds the process's fetches back from instance, whose turn this
// process just committed, until d has passed (the commit's
// provider.TurnCommit.CompletionWindow): signals for it are set aside as
// for a turn the process holds, and sweeps pass over it. Then deliver runs
// if a signal was set aside meanwhile, or again is set (the turn's ack
// found the instance may have messages left), so that the instance's next
// turn takes what arrived in the window together.
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
	// No fetch read the instance for the window: every signal set aside
	// may announce a message (readMs 0, nothing taken).
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

// heldElsewhere arranges for deliver to run after d (the rest of another
// process's lease on instance), unless a delivery for instance is already
// arranged.
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
