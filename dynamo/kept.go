package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// Kept locks (docs/design.md §6). A turn that hands its one activity to a
// waiting fetch of this process will see that activity's completion come
// back here, so its ack keeps the instance locked for this process, with a
// new token and a fresh lease, instead of releasing it. The next turn's
// fetch reads the lock row as it always does; when the row is still as the
// ack left it and enough of the lease is left, it takes the turn under that
// lease without writing the row.

// keptLock is a lock an ack of this process kept. Its token identifies it:
// the row's version moves on with every renewal of the turn that kept it,
// so the version the ack wrote is not known here.
type keptLock struct {
	token string
	until int64 // the lease's end, epoch ms
	// attempts is the attempt map the ack wrote.
	attempts map[string]uint32
}

// keptLocks holds this process's kept locks by instance.
type keptLocks struct {
	mu sync.Mutex
	m  map[string]keptLock
}

// keptLocksPruneAt is the size past which put drops expired entries.
const keptLocksPruneAt = 256

// put records instance's kept lock.
func (k *keptLocks) put(instance string, l keptLock, nowMs int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]keptLock{}
	}
	if len(k.m) >= keptLocksPruneAt {
		for id, e := range k.m {
			if e.until <= nowMs {
				delete(k.m, id)
			}
		}
	}
	k.m[instance] = l
}

// heldIn reports whether lock, as read, is still l as its ack left it:
// its token, unique to that ack, and no large turn pending.
func (l keptLock) heldIn(lock lockRow) bool {
	return lock.exists && lock.token == l.token && lock.turn == ""
}

// mine reports whether lock, as read, is a lock this process kept.
func (k *keptLocks) mine(instance string, lock lockRow) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[instance]
	return ok && e.heldIn(lock)
}

// take removes and returns instance's kept lock if lock, as read, is it.
// An entry the row no longer matches is dropped.
func (k *keptLocks) take(instance string, lock lockRow) (keptLock, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[instance]
	if !ok {
		return keptLock{}, false
	}
	delete(k.m, instance)
	if !e.heldIn(lock) {
		return keptLock{}, false
	}
	return e, true
}

// takeToken removes and returns instance's kept lock if it is token's.
func (k *keptLocks) takeToken(instance, token string) (keptLock, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[instance]
	if !ok || e.token != token {
		return keptLock{}, false
	}
	delete(k.m, instance)
	return e, true
}

// live reports whether this process keeps instance's lock, by its own
// record, with the lease not over at nowMs.
func (k *keptLocks) live(instance string, nowMs int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[instance]
	return ok && e.until > nowMs
}

// drain removes and returns every kept lock.
func (k *keptLocks) drain() map[string]keptLock {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.m
	k.m = nil
	return m
}

// keepLock is the lock a turn's ack keeps, or nil. Only a turn that hands
// its activity to a fetch of this process (hand) and leaves no other work
// outstanding that it knows of keeps its lock: the next message for the
// instance is then that activity's completion, which comes back here. A
// fan-out's completions come from anywhere, and would wait for the lease
// wherever they land. The lease is as long as the turn's fetch asked for,
// from nowMs; a turn another process fetched keeps nothing.
func keepLock(turn *turnState, hand *handedRow, attempts map[string]uint32, nowMs int64) *keptLock {
	if hand == nil || !hand.sole || turn.lease <= 0 {
		return nil
	}
	// The version the release writes unless the turn was renewed.
	ver := turn.ver + 1
	return &keptLock{token: newOrchToken(orchToken{instance: turn.st.id, ver: ver}), until: nowMs + durMs(turn.lease), attempts: attempts}
}

// ReleaseKeptLocks gives up the instance locks this process kept after its
// acks (docs/design.md §6, kept locks) and still holds, so that other
// processes need not wait for their leases: one UpdateItem each. A host
// whose process is frozen between invocations, as on Lambda, calls it once
// its runtime has stopped; [Provider.Close] calls it too. Failures are
// only logged: the leases end anyway.
func (p *Provider) ReleaseKeptLocks(ctx context.Context) {
	now := p.nowMs()
	for id, l := range p.kept.drain() {
		if l.until > now {
			p.releaseLock(ctx, id, l.token, l.attempts)
		}
	}
}

// releaseKept gives up instance's kept lock if it is still token's.
func (p *Provider) releaseKept(ctx context.Context, instance, token string) {
	if l, ok := p.kept.takeToken(instance, token); ok {
		p.releaseLock(context.WithoutCancel(ctx), instance, l.token, l.attempts)
	}
}

// keptReleaseBudget bounds Close's release of the kept locks.
const keptReleaseBudget = 2 * time.Second

// keepKeptSignals keeps in this process (queues.Signals.Keep) the
// orchestrator signals, visible now, of instances whose lock it keeps, and
// returns the others. No other process can take such an instance before
// the kept lease ends, and this one takes it at its next fetch: sent to
// SQS, the signal would only send another process to read the instance and
// find it held, or its message already taken (docs/design.md §6, kept
// locks). One that no fetch uses is sent on as any signal kept in the
// process is. Without an orchestrator queue nothing is sent anyway.
func (p *Provider) keepKeptSignals(signals []queues.Signal) []queues.Signal {
	if !p.hasQueue(queues.Orchestrator) {
		return signals // nothing would be sent
	}
	now := p.nowMs()
	rest := signals[:0:0]
	var local []queues.Signal
	for _, sig := range signals {
		if sig.Kind == queues.Orchestrator && sig.Instance != "" && !sig.VisibleAt.After(timeMs(now)) && p.kept.live(sig.Instance, now) {
			local = append(local, sig)
		} else {
			rest = append(rest, sig)
		}
	}
	p.signals.Keep(local...)
	return rest
}
