package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Activities handed to a waiting worker fetch (docs/design.md §8, "Handed
// activities"): a turn writes the activity a direct claim could take
// already claimed for a fetch of this process that waits, in the turn's
// own transaction, and hands it over once that commits, saving the claim's
// UpdateItem. The row is locked like any claimed row, so if the process
// dies, the lease ends it and the other processes' sweeps watch it.

// handoffs keeps the waiting worker fetches of this process.
type handoffs struct {
	mu sync.Mutex
	// open are the fetches blocked in a wait, oldest first.
	open []*handoff
}

// A handoff is one waiting worker fetch's offer to take a handed activity.
type handoff struct {
	lockTimeout time.Duration
	// wake ends the fetch's wait; set while the fetch waits.
	wake context.CancelFunc
	// reserved is set while a turn writes a row for this fetch; outcome is
	// closed when the turn delivers or releases it.
	reserved bool
	outcome  chan struct{}
	// item is what the turn delivered (nil when it released the fetch);
	// gone is set when the fetch left before the outcome.
	item *provider.LockedWorkItem
	gone bool
	// got is the activity handed to the fetch, for the fetch to return.
	got *provider.LockedWorkItem
}

// newHandoff returns the offer of a fetch with lockTimeout.
func newHandoff(lockTimeout time.Duration) *handoff {
	return &handoff{lockTimeout: lockTimeout}
}

// opened makes h reservable while its fetch waits; wake ends that wait.
func (hs *handoffs) opened(h *handoff, wake context.CancelFunc) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.wake = wake
	hs.open = append(hs.open, h)
}

// closed ends h's wait and returns the activity handed to it, if any. A
// reserved h waits for the turn's outcome or for ctx to end; then h is
// gone, and the turn hands its row back.
func (hs *handoffs) closed(ctx context.Context, h *handoff) *provider.LockedWorkItem {
	hs.mu.Lock()
	hs.remove(h)
	h.wake = nil
	outcome := h.outcome
	if outcome == nil {
		hs.mu.Unlock()
		return nil
	}
	hs.mu.Unlock()
	select {
	case <-outcome:
	case <-ctx.Done():
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h.reserved {
		h.gone = true
		return nil
	}
	item := h.item
	h.item, h.outcome = nil, nil
	return item
}

// remove drops h from the open fetches. hs.mu is held.
func (hs *handoffs) remove(h *handoff) {
	for i, o := range hs.open {
		if o == h {
			hs.open = append(hs.open[:i], hs.open[i+1:]...)
			return
		}
	}
}

// reserve takes the longest-waiting open fetch, or nil when none waits.
func (hs *handoffs) reserve() *handoff {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.open) == 0 {
		return nil
	}
	h := hs.open[0]
	hs.open = hs.open[1:]
	h.reserved = true
	h.outcome = make(chan struct{})
	return h
}

// release ends h's reservation empty; a fetch still waiting is open again.
func (hs *handoffs) release(h *handoff) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.reserved = false
	close(h.outcome)
	if h.wake != nil && !h.gone {
		hs.open = append(hs.open, h)
	}
}

// deliver hands item to h's fetch and wakes it; false when the fetch is
// gone (the caller hands the row back).
func (hs *handoffs) deliver(h *handoff, item *provider.LockedWorkItem) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.reserved = false
	close(h.outcome)
	if h.gone {
		return false
	}
	h.item = item
	if h.wake != nil {
		h.wake()
	}
	return true
}

// handedRow is a worker row a turn writes claimed for a waiting fetch.
type handedRow struct {
	to    *handoff
	token string
	until int64
	rowSK string
	seq   string // the row's enqueue (attrSeq)
	item  provider.ActivityExecuteItem
	sole  bool // claimableActivity.sole
}

// handActivity writes the turn's claimable activity claimed for a waiting
// fetch, if one waits, and drops its signal: nobody else need look for
// it. Its row is the instance's slot if the turn put it there
// (slotActivity), else its worker row. It returns nil when there is
// nothing to hand or nobody to take it.
func (p *Provider) handActivity(plan *turnPlan, turn *turnState, now int64) *handedRow {
	c := plan.claimable
	if c == nil {
		return nil
	}
	to := p.handoffs.reserve()
	if to == nil {
		return nil
	}
	w := c.item
	row := plan.actions[c.action].put
	var d decoder
	seq := d.str(row, attrSeq)
	if d.err != nil {
		p.handoffs.release(to)
		return nil
	}
	until := now + durMs(to.lockTimeout)
	tok := workToken{instance: w.Instance, executionID: w.ExecutionID, activityID: w.ID, seq: seq}
	entry := slotEntry{until: until, sk: readySK(until, seq)}
	if isSlotRow(row) {
		entry = handedEntry(turn.st.slot, row, until, to.lockTimeout)
		tok = workToken{instance: w.Instance, seq: readySeq(entry.sk), slot: true}
	}
	token := newWorkToken(tok)
	claimed := claimedRow(row, token, entry)
	grown := itemsize.ItemSize(claimed) - itemsize.ItemSize(row)
	if itemsize.ItemSize(claimed) > MaxItemBytes || plan.size+grown > maxTransactBytes {
		p.handoffs.release(to)
		return nil
	}
	plan.size += grown
	plan.actions[c.action].put = claimed
	plan.signals = append(plan.signals[:c.signal:c.signal], plan.signals[c.signal+1:]...)
	plan.claimable = nil
	return &handedRow{to: to, token: token, until: until, rowSK: tokWork(tok), seq: tok.seq, item: w, sole: c.sole}
}

// claimedRow is worker row row claimed with token, its stored lease and
// ready key those of entry (and, for a slot, its visible time).
func claimedRow(row item, token string, entry slotEntry) item {
	claimed := make(item, len(row)+2)
	for k, v := range row {
		claimed[k] = v
	}
	delete(claimed, attrSlotWaits)
	claimed[attrToken] = s(token)
	claimed[attrLockUntil] = n(entry.until)
	claimed[attrAttempts] = n(1)
	claimed[attrReadySK] = s(entry.sk)
	if entry.visible != 0 {
		claimed[attrVisible] = n(entry.visible)
	}
	return claimed
}

// settleHanded ends what a turn's ack handed (hand); sent is the row the
// committed transaction carried, this ack's or an earlier one's of unknown
// outcome. A committed row goes to its fetch (delivered), else back to the
// queue; a reservation this ack did not use is released.
func (p *Provider) settleHanded(ctx context.Context, hand, sent *handedRow, committed bool) (delivered bool) {
	if hand != nil && (!committed || sent != hand) {
		p.handoffs.release(hand.to)
	}
	if !committed || sent == nil {
		return false
	}
	if sent == hand && p.nowMs() < sent.until {
		p.leases.set(sent.token, sent.until)
		p.hints.heldWork(workRowKeyOf(sent.item.Instance, sent.rowSK), sent.seq, sent.until)
		// The lease counts from the ack's clock read: report that end, never
		// more (TestHandedActivityReportsItsLease).
		handed := &provider.LockedWorkItem{Item: sent.item, LockToken: sent.token, AttemptCount: 1, LeaseExpiry: time.UnixMilli(sent.until)}
		if p.handoffs.deliver(sent.to, handed) {
			return true
		}
		p.leases.drop(sent.token)
		p.hints.releasedWork(workRowKeyOf(sent.item.Instance, sent.rowSK))
	} else if sent == hand {
		p.handoffs.release(hand.to)
	}
	// Handed back now, the attempt not counted; the abandon signals it.
	if err := p.AbandonWorkItem(context.WithoutCancel(ctx), sent.token, 0, true); err != nil {
		p.o.Logger.Warn("dynamo: handing back an activity written for a fetch that is gone failed; its lease ends it", "instance", sent.item.Instance, "activity", sent.item.ID, "error", err)
	}
	return false
}

// waitSignals waits as signals.Wait does. Meanwhile a turn may reserve h
// (non-nil) and hand it an activity (handed; h.got), and a watched lease
// that brings schedule's next sweep forward ends the wait, so the fetch
// waits again for the new due time.
func (p *Provider) waitSignals(ctx context.Context, kind queues.Kind, wait time.Duration, h *handoff, schedule *sweepSchedule) (sigs []queues.Signal, handed bool, err error) {
	wctx, wake := context.WithCancel(ctx)
	defer wake()
	defer schedule.waiting(wake)()
	if h == nil {
		sigs, err = p.signals.Wait(wctx, kind, wait)
		return sigs, false, waitErr(ctx, wctx, err)
	}
	p.handoffs.opened(h, wake)
	sigs, err = p.signals.Wait(wctx, kind, wait)
	if item := p.handoffs.closed(ctx, h); item != nil {
		h.got = item
		return sigs, true, nil
	}
	return sigs, false, waitErr(ctx, wctx, err)
}

// waitErr is the fetch's error for a wait under wctx: a delivery or the
// sweep schedule ending the wait early is no error of the fetch.
func waitErr(ctx, wctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil
	}
	return err
}
