package dynamo

import (
	"sync"

	"github.com/duradyn/duradyn/queues"
)

// maxCachedTurns and maxCachedTurnBytes bound the turn cache, in turns and
// in the bytes of the data their states hold (messages, KV, custom
// status); beyond either the oldest entries go (their acks then read the
// lock row first: two requests instead of one). Entries stay until acked
// or pushed out, also those of locks that ended without an ack, so the
// bytes matter: an instance's KV store alone may hold about 10 MB.
const (
	maxCachedTurns     = 4096
	maxCachedTurnBytes = 64 << 20
)

// turnState is what a fetch of this process knows about the turn it
// locked.
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
	// batch holds the sort keys of the locked messages.
	batch []string
	// attempts is the lock row's attempt map after the fetch, and
	// undelivered the map as it was before (what a release of a batch
	// that was never handed out restores).
	attempts, undelivered map[string]uint32

	// tx is the ack transaction of this turn (resend.go): a retried ack
	// of the same commit resends what the last one sent.
	tx *pendingTx
	// txHanded is the activity tx's input writes claimed for a waiting
	// fetch (handoff.go), nil when none.
	txHanded *handedRow

	// outstanding holds the ids of the activities of execution
	// outstandingExec that the history this process fetched shows
	// scheduled and not yet answered (directclaim.go); nil when the fetch
	// did not decode a history.
	outstanding     map[uint64]bool
	outstandingExec uint64
	// histEnd is where the history this process fetched ends (nil when
	// the fetch did not decode one).
	histEnd *historyEnd
	// histIDs are the ids of the events of that history (nil when the
	// fetch did not decode one).
	histIDs eventIDs
	// stored is the number of events the history of an execution the turn
	// ends holds, counted at the ack when histEnd does not tell
	// (countEndingHistory).
	stored *historyEnd
	// unrecorded is the number of events of the executions with a
	// terminal status that turns acked without an orchestration name left
	// without an instance record (countEndingHistory).
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
	// sizes holds each cached turn's data size (stateBytes), bytes their
	// sum.
	sizes map[string]int
	bytes int
	// acked holds the tokens of the last maxCachedTurns turns this process
	// acked, in ackedOrder: a later ack of one of them through this
	// process is a second ack (see AckOrchestrationItem).
	acked      map[string]struct{}
	ackedOrder []string
}

func newTurnCache() turnCache {
	return turnCache{m: map[string]*turnState{}, sizes: map[string]int{}, acked: map[string]struct{}{}}
}

// ackedTurn drops token's turn, whose ack this process returned, and
// remembers that it did.
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

// removeLocked forgets token's turn (its place in order stays, to be
// compacted later). c.mu is held.
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

// workLeases remembers the lease ends of the activity locks this process
// holds, so that renewals know how long they may retry.
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

// hints remembers, for a short while, instances whose lock another
// dispatcher holds and sessions another owner holds, so that sweeps do not
// spend a request on each of them every time. A hint only ever causes a
// skip until its expiry; it is never a reason to act.
type hints struct {
	mu       sync.Mutex
	locked   map[string]int64 // instance → lock expiry (ms)
	sessions map[string]sessionHint
	parked   map[string]parkHint // instance or worker row → park (park.go)
	// trying holds the instances and worker rows a fetch of this process is
	// trying to lock right now: other fetches of the process pass over
	// them instead of racing it (their writes would fail, and on AWS
	// conflict with the winner's ack). The value holds the latest signal
	// for it passed over meanwhile (passedOver), which the try's end hands
	// back.
	trying map[string]*queues.Signal
	// held maps the worker rows this process claimed to when a signal
	// naming them stops being stale (ms): the end of the lease, or a
	// while after the ack deleted the row; and the orchestrator messages
	// its acks consumed, to a while after. See heldWork.
	held map[string]heldRow
	// contended maps worker shards where a claim was lost to another
	// process to when that stops counting (ms; contention.go).
	contended map[int]int64
	// lagging maps the worker shards (by fetch filter) whose ready index
	// showed nothing to a signal naming no row, to when it first did
	// (indexlag.go).
	lagging map[string]lagHint
}

type sessionHint struct {
	owner string
	until int64
}

func newHints() hints {
	return hints{locked: map[string]int64{}, sessions: map[string]sessionHint{}, parked: map[string]parkHint{}, trying: map[string]*queues.Signal{}, held: map[string]heldRow{}, contended: map[int]int64{}, lagging: map[string]lagHint{}}
}

// maxLockHintMs caps how long a lock seen in another process is trusted:
// its holder may release it early, and until a signal or this cap, sweeps
// of this process pass over the instance.
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

// beginTry marks k as being tried by a fetch of this process; false means
// another fetch is trying it. endTry ends the mark.
func (h *hints) beginTry(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.trying[k]; ok {
		return false
	}
	h.trying[k] = nil
	return true
}

// passedOver records that sig, a signal for k, was passed over because
// another fetch was trying k (beginTry returned false): that try may have
// read k before the signal's work was written. Of several, the latest is
// kept (a zero VisibleAt, of unknown time, counting as the latest).
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

// endTry ends the mark of beginTry and returns the signal passed over
// during the try, if any, for the caller to hand back to the process's
// fetches. Kept for the end of the turn the try locked, it brings the
// instance back only if it may announce a message written after the
// try's read (lockwait.go).
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

// ackedWorkMs is how long after this process acked an activity a signal
// naming its row is known to be stale: the row is gone, and a signal sent
// before the ack (to every waiter of the process, and on SQS) can still be
// on its way. A row enqueued again under the same identity within it is
// told apart by its sequence number: by fetches and sweeps reading the
// index, and by the fetch its signal reaches when the signal names the
// enqueue (a claim). A signal that names only the row is dropped, and the
// row waits for another signal of its shard or for a sweep.
const ackedWorkMs = 10_000

// heldRow is what hints.held records of a queue row: until when (ms), and
// the sequence number of the enqueue it concerns ("": any, for rows whose
// key holds it, as an orchestrator message's does).
type heldRow struct {
	until int64
	seq   string
}

// heldWork records that this process holds queue row k, enqueued with seq,
// until untilMs (a claim or a renewal), or, after its ack, that the row is
// gone. A signal naming the row announces work this process already has:
// waiters drop it instead of querying the row's shard and reading the row
// (a signal goes to every waiter of the process, and to one process over
// SQS); a lagging index showing the row shows nothing to take (holdsRow).
// An abandon forgets the row (releasedWork) before it signals the row
// again.
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

// holdsWork reports whether a signal naming queue row k is stale at nowMs:
// this process holds the row's lease, or acked it a moment ago.
func (h *hints) holdsWork(k string, nowMs int64) bool {
	_, ok := h.heldAt(k, nowMs)
	return ok
}

// holdsRow reports whether an index entry showing queue row k enqueued
// with seq is stale at nowMs: it is the enqueue this process holds or has
// just acked, or found gone.
func (h *hints) holdsRow(k, seq string, nowMs int64) bool {
	held, ok := h.heldAt(k, nowMs)
	return ok && (held.seq == "" || held.seq == seq)
}

// heldAt returns what held records of k at nowMs, forgetting it once its
// end has passed.
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

// liveAt reports whether m holds k with an end (ms) after nowMs, and
// forgets k once its end has passed.
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

// sessionBlocked reports whether session is known to be held by someone
// other than owner at nowMs.
func (h *hints) sessionBlocked(session, owner string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[session]
	return ok && s.until > nowMs && s.owner != owner
}
