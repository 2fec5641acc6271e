package dynamo

import (
	"slices"
	"strings"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// A claim addressed by its signal (docs/design.md §8, "Direct claims").
//
// A signalled worker fetch normally queries its shard's ready index first,
// so that the oldest eligible row of the shard goes first: the worker
// queue's FIFO. When the turn that scheduled an activity knew that no
// older activity of its instance could be queued (every activity its
// history had scheduled was answered or cancelled, by that history or by
// the turn itself) and the activity has no session and no tag, the
// signal carries the row's ready key as written (queues.Signal.Claim).
// A fetch that receives it claims the row at once with the conditional
// UpdateItem of every claim, conditioned on that ready key: one request
// instead of a Query and the claim. A row that changed meanwhile (another
// fetch claimed it) fails the condition, and the fetch goes on as
// without the claim.
//
// Only the turn's first activity is addressed so: the turn's other
// activities of the instance are younger and share its shard, and the
// shard's index finds them in order. A sequential chain, one activity per
// turn, is addressed at every step.

// outstandingActivities returns the ids of the activities history shows
// scheduled and not answered: no completion, failure or cancellation
// refers to them.
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

// noEarlierActivities reports whether, once commit is in, no activity of
// the turn's instance that an earlier turn scheduled can still be queued:
// the fetch decoded the history of commit's execution, and every activity
// outstanding in it is answered by commit's events or cancelled by
// commit. False whenever that is not known (the turn was fetched by
// another process, or a continue-as-new starts another execution).
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

// claimAddressed tries the rows that sigs address for a claim (Claim set),
// oldest first, with tryRow: those this fetch may take (untagged rows
// must match tags; stale reports rows this process holds) and that are
// eligible now. done reports a claim won, and claimed is the signal that
// addressed it; handled are the signals whose rows need no other look:
// another fetch of this process was claiming the row, or a claim found it
// changed (taken; a row handed back is signalled again).
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
		// A ready key as readySK writes it, eligible now; anything else
		// (a malformed or foreign signal) is left to the shard's index.
		at, ok := readyAt(sig.Claim)
		if !ok || len(sig.Claim) <= 21 || sig.Claim[20] != '#' || at > now || p.hints.isParked(workRowKeyOf(sig.Instance, sig.Work), now) {
			continue
		}
		addressed = append(addressed, sig)
	}
	slices.SortFunc(addressed, func(a, b queues.Signal) int { return strings.Compare(a.Claim, b.Claim) })
	for _, sig := range addressed {
		if stale(sig) {
			continue // another fetch of this process took it meanwhile
		}
		// The row's keys only: what tryRows names it by (so that one fetch
		// of this process at a time tries it, by whichever path); the
		// claim returns the rest.
		pk := keys.WorkerPK(sig.Instance)
		r := readyRow{pk: pk, sk: sig.Work, readySK: sig.Claim, shard: sig.Shard, row: key(pk, sig.Work)}
		if _, done, err := tryRow(r); done || err != nil {
			return done, sig, handled, err
		}
		handled = append(handled, sig)
	}
	return false, claimed, handled, nil
}
