package crashsoak

import (
	"context"
	"sync"
	"sync/atomic"
)

// Hold is how much work of each kind a victim holds: it blocks that many
// activities while they run, turns while their orchestration code runs,
// and handed activities before they start, until it is killed. Work past
// the counts runs as in any other process.
type Hold struct {
	Activities, Turns, Handed int
}

// holder is a victim's state: what it still holds back, and where it says
// so (events).
type holder struct {
	hold   Hold
	events *events
	// Counts of work held so far, by kind.
	acts, turns, handed atomic.Int32
	// held holds the goroutines that hold work until the process dies.
	held chan struct{}
	// turnsSeen keeps a turn replayed after a kept one from blocking twice.
	mu        sync.Mutex
	turnsSeen map[string]bool
}

// theHolder is this process's holder, set once before its runtime starts
// when the process is a victim; nil in the others.
var theHolder atomic.Pointer[holder]

// current returns this process's holder, nil unless it is a victim.
func current() *holder {
	//durablevet:ignore a victim's process-wide role, set before its runtime starts; holding a turn is what this code is for
	return theHolder.Load()
}

func newHolder(h Hold, ev *events) *holder {
	return &holder{hold: h, events: ev, held: make(chan struct{}), turnsSeen: map[string]bool{}}
}

// holdActivity blocks a running activity (ctx its context) while the count
// allows; its lease is renewed meanwhile, as for any running activity.
func (h *holder) holdActivity(ctx context.Context) {
	if !take(&h.acts, h.hold.Activities) {
		return
	}
	h.events.held(ctx, KindActivity)
	h.block(ctx)
	// Still alive: the runtime cancelled the activity, its lease lost
	// (renewals unanswered too long on a loaded machine).
	h.events.dropped(ctx, KindActivity)
}

// holdTurn blocks the orchestration code of instance's first turn while the
// count allows: the turn stays under way, its lease renewed.
func (h *holder) holdTurn(instance string) {
	h.mu.Lock()
	seen := h.turnsSeen[instance]
	h.turnsSeen[instance] = true
	h.mu.Unlock()
	if seen || !take(&h.turns, h.hold.Turns) {
		return
	}
	h.events.heldTurn(instance)
	h.block(context.Background())
}

// holdHanded reports whether a handed activity is held back unstarted.
func (h *holder) holdHanded() bool { return take(&h.handed, h.hold.Handed) }

// block waits until the process dies (or ctx ends).
func (h *holder) block(ctx context.Context) {
	//durablevet:ignore a victim holds its turn until it is killed: the turn never completes on it
	select {
	case <-h.held:
	case <-ctx.Done():
	}
}

// take counts one more held item of a kind whose count is limit, and
// reports whether it may be held.
func take(n *atomic.Int32, limit int) bool {
	for {
		v := n.Load()
		if int(v) >= limit {
			return false
		}
		if n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}
