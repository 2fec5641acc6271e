package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Activities handed to a waiting worker fetch (docs/design.md §8,
// "Handed activities").
//
// The turn that schedules the activity a direct claim could take
// (directclaim.go: the turn's first activity, untagged, without a session,
// with no older activity of its instance queued) does not write it
// unclaimed when a worker fetch of the same process waits for work: it
// writes it already claimed for that fetch, with the fetch's lock timeout,
// in the turn's own transaction, and hands the locked activity to the
// fetch once the transaction has committed. The claim's UpdateItem is gone:
// a chained step makes four requests instead of five, and three write
// units fewer (the row is written once, its index entry once, instead of a
// put and then an update that moves the index key).
//
// A fetch can be reserved only while it is blocked waiting for signals.
// If it wakes meanwhile (another signal, its timeout), it waits for the
// turn's outcome before it goes on: the transaction takes milliseconds.
// If it leaves before the outcome (its context ended), a committed row is
// handed back at once (an abandon that does not count the attempt), as
// lockWork does with a claim whose caller is gone. A turn whose
// transaction fails releases the fetch, which goes on waiting. A turn
// whose outcome stays unknown, and is committed later by a retried ack,
// hands its row back the same way. The row is locked like any claimed row
// (token, lease, ready key at the lease's end), so a process that dies
// holding it leaves it to the next fetch once the lease ends, as after any
// claim, and the other processes' sweeps watch that lease (leasewatch.go).

// handoffs keeps the worker fetches of this process that wait and could
// take a handed activity.
type handoffs struct {
	mu sync.Mutex
	// open are the fetches blocked in a wait, oldest first.
	open []*handoff
}

// A handoff is one worker fetch's offer to take a handed activity while it
// waits.
type handoff struct {
	lockTimeout time.Duration
	// wake ends the fetch's wait; set while the fetch waits.
	wake context.CancelFunc
	// reserved is set by the turn that writes a row for this fetch, until
	// it delivers or releases it; outcome is closed then.
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

// closed ends h's wait: h can no longer be reserved. If a turn reserved it,
// closed waits for that turn's outcome, or until ctx ends (h is then gone,
// and the turn hands its row back). It returns the activity handed to h,
// if any.
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

// reserve takes the longest-waiting open fetch for one activity, or nil
// when none waits.
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

// release ends h's reservation without an activity: the fetch goes on
// waiting (it is open again when it still waits).
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
}

// handActivity writes the turn's claimable activity (plan.claimable) as
// claimed for a waiting fetch of this process, when one waits: the row gets
// the claim's token, lease, attempt and ready key, and its signal is
// dropped (nobody else needs to look for it). It returns nil when there is
// nothing to hand or nobody to hand it to.
func (p *Provider) handActivity(plan *turnPlan, now int64) *handedRow {
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
	sk := keys.WorkerSK(w.ExecutionID, w.ID)
	token := newWorkToken(workToken{instance: w.Instance, executionID: w.ExecutionID, activityID: w.ID, seq: seq})
	until := now + durMs(to.lockTimeout)
	claimed := make(item, len(row)+2)
	for k, v := range row {
		claimed[k] = v
	}
	claimed[attrToken] = s(token)
	claimed[attrLockUntil] = n(until)
	claimed[attrAttempts] = n(1)
	claimed[attrReadySK] = s(readySK(until, seq))
	grown := itemsize.ItemSize(claimed) - itemsize.ItemSize(row)
	if itemsize.ItemSize(claimed) > MaxItemBytes || plan.size+grown > maxTransactBytes {
		p.handoffs.release(to)
		return nil
	}
	plan.size += grown
	plan.actions[c.action].put = claimed
	plan.signals = append(plan.signals[:c.signal:c.signal], plan.signals[c.signal+1:]...)
	plan.claimable = nil
	return &handedRow{to: to, token: token, until: until, rowSK: sk, seq: seq, item: w}
}

// settleHanded ends what a turn's ack handed: committed reports whether
// the transaction that went out committed, and sent is the row it carried
// (nil, or the row of an earlier ack of the same turn whose outcome was
// unknown; hand is this ack's). A committed row goes to its fetch, or back
// to the queue when its fetch is gone or was released by an earlier ack; a
// reservation this ack did not use is released.
func (p *Provider) settleHanded(ctx context.Context, hand, sent *handedRow, committed bool) {
	if hand != nil && (!committed || sent != hand) {
		p.handoffs.release(hand.to)
	}
	if !committed || sent == nil {
		return
	}
	if sent == hand && p.nowMs() < sent.until {
		p.leases.set(sent.token, sent.until)
		p.hints.heldWork(workRowKeyOf(sent.item.Instance, sent.rowSK), sent.seq, sent.until)
		// The lease counts from the ack's clock read, before the
		// transaction: the fetch reports that end, not one counted from
		// its own return, which would promise the runtime more than it has.
		handed := &provider.LockedWorkItem{Item: sent.item, LockToken: sent.token, AttemptCount: 1, LeaseExpiry: time.UnixMilli(sent.until)}
		if p.handoffs.deliver(sent.to, handed) {
			return
		}
		p.leases.drop(sent.token)
		p.hints.releasedWork(workRowKeyOf(sent.item.Instance, sent.rowSK))
	} else if sent == hand {
		p.handoffs.release(hand.to)
	}
	// Nobody here takes it: visible again now, the attempt not counted
	// (it was never delivered); the abandon signals it.
	if err := p.AbandonWorkItem(context.WithoutCancel(ctx), sent.token, 0, true); err != nil {
		p.o.Logger.Warn("dynamo: handing back an activity written for a fetch that is gone failed; its lease ends it", "instance", sent.item.Instance, "activity", sent.item.ID, "error", err)
	}
}

// waitSignals waits for signals as signals.Wait does; a fetch with an
// offer (h non-nil) can be reserved meanwhile, and handed reports that a
// turn handed it an activity (h.got), with the signals that arrived too.
// A watched lease that brings the next sweep of schedule forward ends the
// wait too (sweepSchedule.watch), with what arrived meanwhile, so that the
// fetch waits again for the new due time.
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

// waitErr is the error of a wait under wctx, derived from the fetch's ctx:
// only a delivery or the sweep schedule ends the wait early (the one
// leaves an item, the other a sweep due), so the wait's own cancellation
// is never reported as the fetch's.
func waitErr(ctx, wctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil
	}
	return err
}
