package dynamo

import (
	"time"

	"github.com/duradyn/duradyn/queues"
)

// Shard signals name no row, and the index may not show a signal's rows
// yet (docs/design.md §8). A fetch queries a signalled shard once and never
// waits on it, which would hold up other work; a shard that showed nothing
// lags for indexLagBudget, and the process's fetches get relook signals for
// it. The first fetch whose look is due makes it; a relook reaching a fetch
// with another filter, or after the budget, is dropped. So a stale signal
// costs one budget's Queries, and a lagging index one budget of latency.
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

// relookOnly reports whether sigs hold only relooks for shard.
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

// lagHint is when a shard's lag began and when its next look is due.
type lagHint struct {
	since, next time.Time
}

// lagged records that shard k (a fetch filter's shard) showed nothing at
// now to its signals (relook: only a relook), and returns when the next
// look is due: indexLagRetry, then twice the lag so far, within the budget.
// again is false when the budget is spent, the lag is unknown to a relook,
// or a look is already due.
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

// lagLookDue reports whether a relook of shard k is due at now and no fetch
// has made it yet.
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
