package locks

import (
	"context"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// Release notices across processes. A notice is a [queues.Signal] of kind
// [queues.Lock]: Instance is the key, Shard its listing shard, Work the
// fencing token of the holder that was removed, in decimal. A blocked
// Acquire tries again only on a notice whose token is at least that of the
// holder its last try saw, so late, duplicated and reordered notices cost
// no request.

// listenWait is the timeout of each [queues.Signals.Wait] of a listener.
// The listener is stopped as soon as no Acquire waits any more, so this
// only bounds how long one long poll lasts.
const listenWait = 20 * time.Second

// sendTimeout bounds the sending of a release notice, and the sending on of
// notices nobody here waits for. A release whose caller gave up still
// sends its notice.
const sendTimeout = 5 * time.Second

// notice wakes the blocked Acquire calls of key after the holder whose
// token is fence was removed: those of this locker at once, and, with
// [DynamoOptions.Signals], those of other lockers of this process and of
// other processes through it. A notice that cannot be sent is logged: the
// waiters elsewhere then wake when the lease they saw ends.
func (d *Dynamo) notice(ctx context.Context, key string, fence int64) {
	d.waiters.notify(key, fence)
	if d.o.Signals == nil {
		return
	}
	sig := queues.Signal{Kind: queues.Lock, Shard: shardOf(key, d.o.shards), Instance: key, Work: strconv.FormatInt(fence, 10)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
	defer cancel()
	if err := d.o.Signals.Notify(ctx, sig); err != nil {
		d.o.Logger.Warn("locks: release notice not sent", "key", key, "error", err)
	}
}

// startListenerLocked starts the goroutine that receives release notices
// for this locker's blocked Acquire calls, when the first one begins to
// wait. d.waiters.mu is held.
func (d *Dynamo) startListenerLocked() {
	if d.o.Signals == nil || d.closed {
		return
	}
	ctx, stop := context.WithCancel(d.closeCtx)
	d.listenStop = stop
	d.wg.Add(1)
	go d.listen(ctx)
}

// stopListenerLocked stops the listener when the last blocked Acquire
// call stops waiting. d.waiters.mu is held.
func (d *Dynamo) stopListenerLocked() {
	if d.listenStop != nil {
		d.listenStop()
		d.listenStop = nil
	}
}

// listen waits for release notices until ctx ends: it wakes the waiters of
// each notice's key, and hands the notices of keys nobody here waits for
// on to other processes ([queues.Signals.Decline]).
func (d *Dynamo) listen(ctx context.Context) {
	defer d.wg.Done()
	for {
		sigs, err := d.o.Signals.Wait(ctx, queues.Lock, listenWait)
		d.dispatch(sigs)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The signals were closed: waiters wake when the leases
			// they saw end.
			d.o.Logger.Warn("locks: no more release notices from other processes; waiters wake when the leases they saw end", "error", err)
			return
		}
	}
}

// dispatch wakes the waiters of each notice in sigs and declines the
// notices no waiter of this locker needs.
func (d *Dynamo) dispatch(sigs []queues.Signal) {
	var decline []queues.Signal
	for _, sig := range sigs {
		fence, err := strconv.ParseInt(sig.Work, 10, 64)
		if err != nil {
			d.o.Logger.Warn("locks: release notice with an unreadable fence dropped", "key", sig.Instance, "fence", sig.Work, "error", err)
			continue
		}
		if d.waiters.notify(sig.Instance, fence) == 0 {
			decline = append(decline, sig)
		}
	}
	if len(decline) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(d.closeCtx, sendTimeout)
	defer cancel()
	if err := d.o.Signals.Decline(ctx, decline...); err != nil && d.closeCtx.Err() == nil {
		d.o.Logger.Warn("locks: release notices not sent on", "notices", len(decline), "error", err)
	}
}
