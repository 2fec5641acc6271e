package dynamo

// Competing workers. Every fetch of a shard reads the shard's index oldest
// first and tries the oldest row first, which keeps a lone process's
// worker queue in exact FIFO order. When several processes fetch from one
// shard at once (a fan-out's activities all land in their instance's
// shard), each of them tries the same oldest row: one wins, and each other
// pays a conditional write that fails (1 WRU and a round trip) before it
// takes the next row, where the losers meet again. With k processes that
// is about k/2 lost claims per activity.
//
// A claim lost on a row this process neither holds nor acked a moment ago
// (hints.holdsWork; a row it took itself may still show in a lagging
// index) was lost to another process. For contendedWindowMs after such a
// loss, a fetch that reads the shard's index first tries a row drawn at
// random among the activities without a session in its contendedSpread
// oldest eligible rows, then the rest oldest first. Processes that compete
// then mostly try different rows. A row passed over stays among the oldest
// that every fetch can draw or falls back on, so none waits long behind
// younger ones. When no claim is lost for a window, fetches of the shard
// go back to the oldest row first.
//
// Activities of a session keep their order: none is drawn, and each is
// tried after the older rows of its session, as before.
const (
	contendedWindowMs = 1000
	contendedSpread   = 16
)

// contend records at nowMs that a claim in worker shard was lost to
// another process.
func (h *hints) contend(shard int, nowMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.contended[shard] = nowMs + contendedWindowMs
}

// isContended reports whether a claim in worker shard was lost to another
// process within contendedWindowMs before nowMs.
func (h *hints) isContended(shard int, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return liveAt(h.contended, shard, nowMs)
}

// claimLost records that the claim of r failed its condition: another
// process took or changed the row, unless this process holds it or acked
// it.
func (p *Provider) claimLost(r readyRow) {
	now := p.nowMs()
	if p.hints.holdsWork(queueRowKey(r.row), now) {
		return
	}
	p.hints.contend(r.shard, now)
}

// spreadClaims orders the rows of one shard's index, oldest first, for a
// fetch's claims. While the shard is contended, a row without a session
// drawn among the oldest contendedSpread goes first.
func (p *Provider) spreadClaims(rows []readyRow, shard int) []readyRow {
	if len(rows) < 2 || !p.hints.isContended(shard, p.nowMs()) {
		return rows
	}
	var free []int // the rows that may be drawn
	for i, r := range rows[:min(len(rows), contendedSpread)] {
		if _, ok := r.row[attrSession]; !ok {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return rows
	}
	first := free[p.spread(len(free))]
	if first == 0 {
		return rows
	}
	ordered := make([]readyRow, 0, len(rows))
	ordered = append(ordered, rows[first])
	ordered = append(ordered, rows[:first]...)
	return append(ordered, rows[first+1:]...)
}

// claimFoundGone records that the claim of r found its row gone (acked or
// deleted since the index showed it): for ackedWorkMs, as after an ack of
// this process, the fetches and sweeps that read a lagging index pass over
// it (hints.holdsRow) instead of claiming it again, a failed write each.
func (p *Provider) claimFoundGone(r readyRow) {
	p.hints.heldWork(queueRowKey(r.row), readySeq(r.readySK), p.nowMs()+ackedWorkMs)
}
