package dynamo

import (
	"slices"
	"strings"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Direct claims (docs/design.md §8): a signal addresses its row
// (queues.Signal.Claim), claimed with one UpdateItem conditioned on its ready
// key instead of a Query and a claim, only for a turn's first activity
// without session or tag and when no older activity of the instance can be
// queued, so that FIFO order holds.

// outstandingActivities returns the ids of the activities history shows
// scheduled and not yet completed, failed or cancelled.
func outstandingActivities(history []provider.Event) map[uint64]bool {
	out := map[uint64]bool{}
	for _, e := range history {
		switch e.Kind.(type) {
		case provider.ActivityScheduled:
			out[e.EventID] = true
		case provider.ActivityCompleted, provider.ActivityFailed, provider.ActivityCancelRequested:
			if e.SourceEventID != nil {
				delete(out, *e.SourceEventID)
			}
		}
	}
	return out
}

// noEarlierActivities reports whether, once commit is in, no activity an
// earlier turn of the instance scheduled can still be queued: each one
// outstanding in the fetched history is answered or cancelled by commit.
// False when unknown (fetched by another process, a continue-as-new).
func (t *turnState) noEarlierActivities(commit provider.TurnCommit) bool {
	if t.outstanding == nil || t.outstandingExec != commit.ExecutionID {
		return false
	}
	left := len(t.outstanding)
	answered := map[uint64]bool{}
	answer := func(id uint64) {
		if t.outstanding[id] && !answered[id] {
			answered[id] = true
			left--
		}
	}
	for _, e := range commit.HistoryDelta {
		switch e.Kind.(type) {
		case provider.ActivityCompleted, provider.ActivityFailed, provider.ActivityCancelRequested:
			if e.SourceEventID != nil {
				answer(*e.SourceEventID)
			}
		}
	}
	for _, c := range commit.CancelledActivities {
		if c.Instance == t.st.id && c.ExecutionID == commit.ExecutionID {
			answer(c.ActivityID)
		}
	}
	return left == 0
}

// claimAddressed tries the eligible rows sigs address, oldest first, with
// tryRow; done reports a claim won by claimed. handled signals need no
// other look: another fetch of this process was claiming the row, or a
// claim found it changed (taken; a row handed back is signalled again).
func (p *Provider) claimAddressed(sigs []queues.Signal, tags provider.TagFilter, stale func(queues.Signal) bool,
	tryRow func(readyRow) (tried, done bool, err error)) (done bool, claimed queues.Signal, handled []queues.Signal, err error) {
	if !tags.Matches(nil) {
		return false, claimed, nil, nil
	}
	var addressed []queues.Signal
	now := p.nowMs()
	for _, sig := range sigs {
		if sig.Claim == "" || sig.Instance == "" || sig.Work == "" || sig.Shard >= p.o.Shards || stale(sig) {
			continue
		}
		// A malformed or not yet eligible key is left to the shard's index;
		// a waiting slot is eligible at once, whatever its kept entry says.
		at, ok := readyAt(sig.Claim)
		waiting := sig.Work == keys.SlotSK && isWaitingClaim(sig.Claim)
		if !ok || len(sig.Claim) <= 21 || (sig.Claim[20] != '#' || at > now) && !waiting || p.hints.isParked(workRowKeyOf(sig.Instance, sig.Work), now) {
			continue
		}
		addressed = append(addressed, sig)
	}
	slices.SortFunc(addressed, func(a, b queues.Signal) int { return strings.Compare(a.Claim, b.Claim) })
	for _, sig := range addressed {
		if stale(sig) {
			continue // another fetch of this process took it meanwhile
		}
		// Keys only, as tryRow names rows (one fetch at a time per row,
		// by any path); the claim returns the rest.
		pk := workRowPK(sig.Instance, sig.Work)
		r := readyRow{pk: pk, sk: sig.Work, readySK: sig.Claim, shard: sig.Shard, row: key(pk, sig.Work)}
		if _, done, err := tryRow(r); done || err != nil {
			return done, sig, handled, err
		}
		handled = append(handled, sig)
	}
	return false, claimed, handled, nil
}
