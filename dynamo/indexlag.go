package dynamo

import (
	"time"

	"github.com/duradyn/duradyn/queues"
)

// Signals that name no row. A turn that schedules several activities sends
// one signal for their shard, naming none of them; every waiting fetch of
// the process receives it, and the one that reaches the shard first hands
// the backlog on row by row (nextRows). The others' copies go stale: the
// shard's index shows them nothing. On AWS the index may also not show yet
// the rows a signal announces (it is eventually consistent, a second or so
// under load), and then only a later look finds them.
//
// A fetch queries every signalled shard once, and never looks at one
// again itself: waiting there would hold up the others' work, and leave
// the fetch deaf to new signals (two worker slots behind stale signals
// left a runtime idle beside its work). A shard whose index showed nothing
// to a signal naming no row lags from then for indexLagBudget: the
// process's fetches get a relook signal for it indexLagRetry later, then
// after twice the time since the lag began, until the budget is spent (at
// most 4 more Queries, at 0.1, 0.3, 0.9 and 1.5 s). A relook reaches every waiting fetch, and only the
// first whose look is due makes it; one received by a fetch with another
// filter, or after the budget, is dropped. So a stale signal costs the
// Queries of one budget, and an index that lags costs a budget of latency
// at most.
const (
	indexLagRetry  = 100 * time.Millisecond
	indexLagBudget = 1500 * time.Millisecond
)

// relookWork is the Work of a relook signal: no row key has this form.
const relookWork = "\x00relook"

// relookSignal is the signal for another look at worker shard shard.
func relookSignal(shard int) queues.Signal {
	return queues.Signal{Kind: queues.Worker, Shard: shard, Work: relookWork}
}

// isRelook reports whether sig asks for another look at its shard.
func isRelook(sig queues.Signal) bool { return sig.Work == relookWork && sig.Instance == "" }

// relookOnly reports whether the only signals of sigs for shard are
// relooks.
func relookOnly(sigs []queues.Signal, shard int) bool {
	relook := false
	for _, sig := range sigs {
		if sig.Shard != shard {
			continue
		}
		if !isRelook(sig) {
			return false
		}
		relook = true
	}
	return relook
}

// lagHint is a lagging shard's: when its index first showed nothing, and
// when the next look is due.
type lagHint struct {
	since, next time.Time
}

// lagged records that shard k (a fetch filter's shard: worker.go) showed
// nothing at now to its signals, relook telling whether they were only a
// relook, and returns when the next look is due, again false when none is:
// the budget is spent, a relook of a lag that ended or is unknown, or a look
// already due later.
func (h *hints) lagged(k string, now time.Time, relook bool) (wait time.Duration, again bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lag, ok := h.lagging[k]
	if ok && !now.Before(lag.since.Add(indexLagBudget)) {
		delete(h.lagging, k)
		ok = false
	}
	switch {
	case !ok && relook:
		return 0, false
	case !ok:
		if len(h.lagging) >= maxCachedTurns {
			clear(h.lagging)
		}
		lag = lagHint{since: now}
	case !relook && lag.next.After(now):
		return 0, false // a look is due already
	}
	wait = min(max(indexLagRetry, 2*now.Sub(lag.since)), lag.since.Add(indexLagBudget).Sub(now))
	lag.next = now.Add(wait)
	h.lagging[k] = lag
	return wait, true
}

// lagLookDue reports whether a relook of shard k is due at now: its lag is
// known, and no fetch has looked since the look fell due (lagged ends the
// lag after the look that spends its budget).
func (h *hints) lagLookDue(k string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	lag, ok := h.lagging[k]
	return ok && !now.Before(lag.next)
}

// lagEnded records that shard k's index showed rows.
func (h *hints) lagEnded(k string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.lagging, k)
}
