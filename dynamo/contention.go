package dynamo

// contendedWindowMs and contendedSpread spread competing claims
// (docs/design.md §8, "Competing workers"). Fetches try a shard's oldest
// row first, which keeps a lone process in exact FIFO order but makes k
// processes on one shard lose about k/2 claims per activity. For
// contendedWindowMs after a claim lost to another process, a fetch of that
// shard first tries a row drawn among the activities without a session in
// its contendedSpread oldest eligible rows, then the rest oldest first; a
// session's activities are never drawn, so they keep their order.
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

// claimLost records that the claim of r failed its condition: lost to
// another process, unless this process holds or acked the row.
func (p *Provider) claimLost(r readyRow) {
	now := p.nowMs()
	if p.hints.holdsWork(queueRowKey(r.row), now) {
		return
	}
	p.hints.contend(r.shard, now)
}

// spreadClaims orders one shard's rows, oldest first, for a fetch's
// claims; while the shard is contended, a drawn row goes first.
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

// claimFoundGone records that the claim of r found its row gone: for
// ackedWorkMs, fetches and sweeps reading a lagging index pass over it
// (hints.holdsRow) rather than fail a write on it again.
func (p *Provider) claimFoundGone(r readyRow) {
	p.hints.heldWork(queueRowKey(r.row), readySeq(r.readySK), p.nowMs()+ackedWorkMs)
}
