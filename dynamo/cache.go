package dynamo

import (
	"sync"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// maxCachedTurns and maxCachedTurnBytes bound the turn cache, unacked
// entries included (a KV store alone may hold about 10 MB); the oldest go
// first, and their acks then read the lock row first (two requests).
const (
	maxCachedTurns     = 4096
	maxCachedTurnBytes = 64 << 20
)

// turnState is what a fetch of this process knows about the turn it locked.
type turnState struct {
	// mu serialises acks of the turn in this process; done is set once one
	// committed, so a concurrent duplicate fails as a second ack must.
	mu   sync.Mutex
	done bool
	// leaseMu guards until, which renewals change while an ack may run.
	leaseMu sync.Mutex
	token   string
	st      *instanceState
	// ver is the lock row's version after the fetch.
	ver uint64
	// until is the lease's end (epoch ms) as this process last set it.
	until int64
	// lease is the lease the fetch asked for; 0 when another process
	// fetched the turn. kept reports a turn taken under a lock this
	// process kept (kept.go), whose lock row lists no batch.
	lease time.Duration
	kept  bool
	// batch holds the sort keys of the locked messages.
	batch []string
	// attempts is the lock row's attempt map after the fetch; undelivered,
	// the one before, is restored by releasing a batch never handed out.
	attempts, undelivered map[string]uint32

	// tx is the turn's ack transaction, which a retry resends (resend.go).
	tx *pendingTx
	// txHanded is the activity tx claims for a waiting fetch (handoff.go).
	txHanded *handedRow
	// txSignals are the signals for the rows tx writes: a retry plans
	// anew, with new enqueue keys, but resends tx.
	txSignals []queues.Signal
	// txKept is the lock tx keeps for this process, if any.
	txKept *keptLock

	// outstanding holds the activities of outstandingExec the fetched
	// history shows unanswered (directclaim.go); nil if none was decoded.
	outstanding     map[uint64]bool
	outstandingExec uint64
	// histEnd is where the fetched history ends; nil if none was decoded.
	histEnd *historyEnd
	// histIDs are that history's event ids.
	histIDs eventIDs
	// stored is the event count of an execution the turn ends, counted at
	// the ack when histEnd does not tell (countEndingHistory).
	stored *historyEnd
	// unrecorded counts the events of terminal executions that turns acked
	// without an orchestration name left without a record.
	unrecorded uint64
}

// leaseEnd is the lease's end as this process last set it (epoch ms).
func (t *turnState) leaseEnd() int64 {
	t.leaseMu.Lock()
	defer t.leaseMu.Unlock()
	return t.until
}

// setLeaseEnd records a renewed lease's end.
func (t *turnState) setLeaseEnd(untilMs int64) {
	t.leaseMu.Lock()
	defer t.leaseMu.Unlock()
	t.until = untilMs
}

// turnCache maps lock tokens to turn states.
type turnCache struct {
	mu    sync.Mutex
	m     map[string]*turnState
	order []string
	// sizes holds each turn's stateBytes; bytes is their sum.
	sizes map[string]int
	bytes int
	// acked holds the last maxCachedTurns tokens this process acked: an
	// ack of one again is a second ack (AckOrchestrationItem).
	acked      map[string]struct{}
	ackedOrder []string
}

func newTurnCache() turnCache {
	return turnCache{m: map[string]*turnState{}, sizes: map[string]int{}, acked: map[string]struct{}{}}
}

// ackedTurn drops token's turn and remembers this process acked it.
func (c *turnCache) ackedTurn(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(token)
	if len(c.ackedOrder) >= maxCachedTurns {
		delete(c.acked, c.ackedOrder[0])
		c.ackedOrder = c.ackedOrder[1:]
	}
	c.acked[token] = struct{}{}
	c.ackedOrder = append(c.ackedOrder, token)
}

// wasAcked reports whether this process returned the ack of token's turn.
func (c *turnCache) wasAcked(token string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.acked[token]
	return ok
}

func (c *turnCache) put(t *turnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[t.token]; !ok {
		c.order = append(c.order, t.token)
	}
	c.removeLocked(t.token)
	c.m[t.token] = t
	c.sizes[t.token] = stateBytes(t.st)
	c.bytes += c.sizes[t.token]
	// The newest entry stays, whatever its size: its ack is coming.
	for (len(c.m) > maxCachedTurns || c.bytes > maxCachedTurnBytes) && len(c.m) > 1 && len(c.order) > 0 {
		c.removeLocked(c.order[0])
		c.order = c.order[1:]
	}
	if len(c.order) > 2*maxCachedTurns {
		kept := c.order[:0]
		for _, tok := range c.order {
			if _, ok := c.m[tok]; ok {
				kept = append(kept, tok)
			}
		}
		c.order = kept
	}
}

func (c *turnCache) get(token string) *turnState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[token]
}

func (c *turnCache) drop(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(token)
}

// removeLocked forgets token's turn (order is compacted later); c.mu held.
func (c *turnCache) removeLocked(token string) {
	delete(c.m, token)
	c.bytes -= c.sizes[token]
	delete(c.sizes, token)
}

// stateBytes approximates the memory of the data a cached state holds.
func stateBytes(st *instanceState) int {
	if st == nil {
		return 0
	}
	n := 0
	for _, m := range st.msgs {
		n += len(m.data) + len(m.sk)
	}
	for k, e := range st.kvStore {
		n += len(k) + len(e.Value)
	}
	for k, e := range st.kvDelta.Entries {
		n += len(k)
		if e != nil {
			n += len(e.Value)
		}
	}
	if st.meta != nil && st.meta.cstat != nil {
		n += len(*st.meta.cstat)
	}
	return n
}

// workLeases holds this process's activity lease ends, to bound renewals.
type workLeases struct {
	mu sync.Mutex
	m  map[string]int64
}

func (l *workLeases) set(token string, untilMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) > 4*maxCachedTurns {
		l.m = map[string]int64{} // a bound; renewals of forgotten leases retry less long
	}
	l.m[token] = untilMs
}

func (l *workLeases) get(token string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[token]
}

func (l *workLeases) drop(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, token)
}

// hints remembers briefly what others hold, so sweeps skip it without a
// request. A hint only causes a skip until its expiry, never an action.
type hints struct {
	mu       sync.Mutex
	locked   map[string]int64 // instance → lock expiry (ms)
	sessions map[string]sessionHint
	parked   map[string]parkHint // instance or worker row → park (park.go)
	// trying holds what a fetch of this process is trying to lock: other
	// fetches pass over it rather than race (docs/design.md §8). The value
	// is the latest signal passed over meanwhile (passedOver).
	trying map[string]*queues.Signal
	// held maps rows this process claimed or acked, and messages its acks
	// consumed, to when signals naming them stop being stale (heldWork).
	held map[string]heldRow
	// contended maps worker shards where a claim was lost to another
	// process to when that stops counting (ms; contention.go).
	contended map[int]int64
	// lagging maps worker shards (by fetch filter) whose index showed a
	// shard signal nothing to when it first did (indexlag.go).
	lagging map[string]lagHint
}

type sessionHint struct {
	owner string
	until int64
}

func newHints() hints {
	return hints{locked: map[string]int64{}, sessions: map[string]sessionHint{}, parked: map[string]parkHint{}, trying: map[string]*queues.Signal{}, held: map[string]heldRow{}, contended: map[int]int64{}, lagging: map[string]lagHint{}}
}

// maxLockHintMs caps trust in a lock seen elsewhere: it may end early.
const maxLockHintMs = 1000

// lockedUntil records, at nowMs, that instance is locked until untilMs.
func (h *hints) lockedUntil(instance string, nowMs, untilMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locked[instance] = min(untilMs, nowMs+maxLockHintMs)
	if len(h.locked) > maxCachedTurns {
		clear(h.locked)
	}
}

// beginTry marks k as tried by this fetch; false if another fetch is.
func (h *hints) beginTry(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.trying[k]; ok {
		return false
	}
	h.trying[k] = nil
	return true
}

// passedOver keeps the latest (zero VisibleAt counts as latest) signal for
// k passed over during another fetch's try, whose read may predate it.
func (h *hints) passedOver(k string, sig queues.Signal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept, ok := h.trying[k]
	if !ok {
		return
	}
	if kept == nil || (!kept.VisibleAt.IsZero() && (sig.VisibleAt.IsZero() || sig.VisibleAt.After(kept.VisibleAt))) {
		h.trying[k] = &sig
	}
}

// endTry ends beginTry's mark and returns the signal passed over during
// the try, if any, to hand back to the fetches (lockwait.go).
func (h *hints) endTry(k string) *queues.Signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	sig := h.trying[k]
	delete(h.trying, k)
	return sig
}

// unlocked forgets instance's lock.
func (h *hints) unlocked(instance string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locked, instance)
}

// isLocked reports whether instance is known to be locked at nowMs.
func (h *hints) isLocked(instance string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.locked[instance] > nowMs
}

// ackedWorkMs is how long after an ack a signal naming the row is stale:
// one sent before the ack may still arrive. A row enqueued again meanwhile
// is told apart by its sequence number where the index or signal gives it;
// a signal naming only the row is dropped, leaving the row to a sweep.
const ackedWorkMs = 10_000

// heldRow is hints.held's entry: until when (ms), and the enqueue's
// sequence number ("": any, for rows whose key holds it).
type heldRow struct {
	until int64
	seq   string
}

// heldWork records that this process holds queue row k, enqueued with seq,
// until untilMs, or after its ack that the row is gone: signals and index
// entries naming it are then stale (docs/design.md §8). An abandon calls
// releasedWork before it signals the row again.
func (h *hints) heldWork(k, seq string, untilMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) >= maxCachedTurns {
		clear(h.held)
	}
	h.held[k] = heldRow{until: untilMs, seq: seq}
}

// releasedWork forgets worker row k: it is eligible again.
func (h *hints) releasedWork(k string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, k)
}

// holdsWork reports whether a signal naming queue row k is stale at nowMs.
func (h *hints) holdsWork(k string, nowMs int64) bool {
	_, ok := h.heldAt(k, nowMs)
	return ok
}

// holdsRow reports whether an index entry of row k enqueued with seq is
// stale at nowMs: the enqueue this process holds, just acked or found gone.
func (h *hints) holdsRow(k, seq string, nowMs int64) bool {
	held, ok := h.heldAt(k, nowMs)
	return ok && (held.seq == "" || held.seq == seq)
}

// heldAt returns held's live entry for k at nowMs, forgetting a past one.
func (h *hints) heldAt(k string, nowMs int64) (heldRow, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.held[k]
	if ok && held.until <= nowMs {
		delete(h.held, k)
		return heldRow{}, false
	}
	return held, ok
}

// liveAt reports whether m holds k ending after nowMs, forgetting past ones.
func liveAt[K comparable](m map[K]int64, k K, nowMs int64) bool {
	until, ok := m[k]
	if ok && until <= nowMs {
		delete(m, k)
		return false
	}
	return ok
}

// sessionOwned records that owner holds session until untilMs.
func (h *hints) sessionOwned(session, owner string, untilMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[session] = sessionHint{owner: owner, until: untilMs}
	if len(h.sessions) > maxCachedTurns {
		clear(h.sessions)
	}
}

// sessionBlocked reports whether someone but owner holds session at nowMs.
func (h *hints) sessionBlocked(session, owner string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[session]
	return ok && s.until > nowMs && s.owner != owner
}
