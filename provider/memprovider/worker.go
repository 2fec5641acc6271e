package memprovider

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// EnqueueForWorker puts an activity on the worker queue, visible now, with
// its identity, session and tag recorded. An item without an instance fails
// with [provider.ErrInvalidInput].
func (p *Provider) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	if err := provider.ValidateWorkerItem(provider.OpEnqueueForWorker, item); err != nil {
		return err
	}
	data, err := json.Marshal(item)
	if err != nil {
		return provider.Permanent(provider.OpEnqueueForWorker, provider.ErrInvalidInput, "encode ActivityExecute work item: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushWork(item, data, p.nowMs())
	p.notify()
	return nil
}

// pushWork appends an encoded activity to the worker queue. Callers hold
// p.mu.
func (p *Provider) pushWork(item provider.ActivityExecuteItem, data []byte, visibleAtMs int64) {
	p.workQ = append(p.workQ, &workMessage{
		seq:         p.nextSeq(),
		instance:    item.Instance,
		executionID: item.ExecutionID,
		activityID:  item.ID,
		sessionID:   cloneString(item.SessionID),
		tag:         cloneString(item.Tag),
		data:        data,
		visibleAtMs: visibleAtMs,
	})
}

// deleteWork removes the worker messages del selects, with their locks,
// and returns how many it removed. Callers hold p.mu.
func (p *Provider) deleteWork(del func(*workMessage) bool) int {
	n := len(p.workQ)
	p.workQ = slices.DeleteFunc(p.workQ, func(m *workMessage) bool {
		if !del(m) {
			return false
		}
		if m.lockToken != "" {
			delete(p.workTokens, m.lockToken)
		}
		return true
	})
	return n - len(p.workQ)
}

// FetchWorkItem locks the oldest visible, unlocked activity that passes
// tags and the session rules, and returns it. Without session only
// activities without a session qualify; with one, also those of sessions
// session.OwnerID holds or nobody holds (which it then claims for
// session.LockTimeout). A [provider.TagNone] filter returns nil at once.
// It long-polls up to pollTimeout (see the package documentation); nil,
// nil means no work.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	if tags.Mode() == provider.TagNone {
		return nil, nil
	}
	var item *provider.LockedWorkItem
	err := p.longPoll(ctx, provider.OpFetchWorkItem, pollTimeout, func(nowMs int64) (bool, int64, error) {
		var wake int64
		var err error
		item, wake, err = p.tryFetchWork(nowMs, lockTimeout, session, tags)
		return item != nil, wake, err
	})
	return item, err
}

// tryFetchWork is one non-blocking worker fetch attempt; it also returns
// the earliest future time at which a skipped activity may become
// eligible. Callers hold p.mu.
func (p *Provider) tryFetchWork(nowMs int64, lockTimeout time.Duration, cfg *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, int64, error) {
	var wake int64
	for _, m := range p.workQ {
		if !tags.Matches(m.tag) {
			continue
		}
		if m.visibleAtMs > nowMs {
			wake = earliest(wake, m.visibleAtMs)
			continue
		}
		if m.lockToken != "" && m.lockedUntilMs > nowMs {
			wake = earliest(wake, m.lockedUntilMs)
			continue
		}
		if m.sessionID != nil {
			if cfg == nil {
				continue
			}
			if s := p.sessions[*m.sessionID]; s != nil && s.lockedUntilMs > nowMs && s.owner != cfg.OwnerID {
				wake = earliest(wake, s.lockedUntilMs)
				continue
			}
		}
		w, err := provider.UnmarshalWorkItem(m.data)
		if err != nil {
			return nil, 0, provider.Corrupt(provider.OpFetchWorkItem, err, "failed to decode queued activity of instance %q: %v", m.instance, err)
		}
		act, ok := w.(provider.ActivityExecuteItem)
		if !ok {
			return nil, 0, provider.Permanent(provider.OpFetchWorkItem, provider.ErrCorruptData, "worker queue holds a %s work item", w.Kind())
		}
		// Win the lock; leases count from a clock read after winning it.
		token := newToken()
		if m.lockToken != "" {
			delete(p.workTokens, m.lockToken)
		}
		m.lockToken = token
		m.attempts++
		p.workTokens[token] = m
		now := p.nowMs()
		m.lockedUntilMs = now + durMs(lockTimeout)
		if m.sessionID != nil {
			p.sessions[*m.sessionID] = &session{
				owner:            cfg.OwnerID,
				lockedUntilMs:    now + durMs(cfg.LockTimeout),
				lastActivityAtMs: now,
			}
		}
		return &provider.LockedWorkItem{Item: act, LockToken: token, AttemptCount: m.attempts, LeaseExpiry: time.UnixMilli(m.lockedUntilMs)}, 0, nil
	}
	return nil, wake, nil
}

// liveWork returns the activity locked by token if the lock is held at
// nowMs. Callers hold p.mu.
func (p *Provider) liveWork(token string, nowMs int64) *workMessage {
	if m := p.workTokens[token]; m != nil && m.lockedUntilMs > nowMs {
		return m
	}
	return nil
}

// touchSession records activity on the activity's session while that
// session's lease is live. Callers hold p.mu.
func (p *Provider) touchSession(m *workMessage, nowMs int64) {
	if m.sessionID == nil {
		return
	}
	if s := p.sessions[*m.sessionID]; s != nil && s.lockedUntilMs > nowMs {
		s.lastActivityAtMs = nowMs
	}
}

// AckWorkItem deletes a locked activity and, when completion is non-nil,
// enqueues it on the orchestrator queue (visible now), atomically; it also
// records activity on the activity's live session. A completion other than
// [provider.ActivityCompletedItem] or [provider.ActivityFailedItem] fails
// with [provider.ErrInvalidInput]; an activity that is gone (cancelled,
// deleted, acked) or whose lock expired fails with
// [provider.ErrInvalidLockToken]. A failed ack changes nothing.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	if err := provider.ValidateCompletion(provider.OpAckWorkItem, completion); err != nil {
		return err
	}
	var data []byte
	if completion != nil {
		var err error
		if data, err = provider.MarshalWorkItem(completion); err != nil {
			return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput, "encode %s completion: %v", completion.Kind(), err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	m := p.liveWork(lockToken, now)
	if m == nil {
		return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidLockToken,
			"Invalid lock token: activity was cancelled or its lock expired")
	}
	p.deleteWork(func(w *workMessage) bool { return w == m })
	p.touchSession(m, now)
	if completion != nil {
		p.pushOrch(completion, data, now)
	}
	p.notify()
	return nil
}

// RenewWorkItemLock extends a live activity lock to now+extendFor and
// records activity on its live session. An activity that is gone or whose
// lock expired fails with [provider.ErrInvalidLockToken]; that is how a
// worker learns its activity was cancelled.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	m := p.liveWork(lockToken, now)
	if m == nil {
		return provider.Permanent(provider.OpRenewWorkItemLock, provider.ErrInvalidLockToken,
			"Invalid lock token: activity was cancelled or its lock expired")
	}
	m.lockedUntilMs = now + durMs(extendFor)
	p.touchSession(m, now)
	return nil
}

// AbandonWorkItem unlocks an activity, visible again after delay (0 =
// now); ignoreAttempt undoes the fetch's attempt increment (floor 0). A
// token that locks no activity fails with [provider.ErrInvalidLockToken].
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.workTokens[lockToken]
	if m == nil {
		return provider.Permanent(provider.OpAbandonWorkItem, provider.ErrInvalidLockToken, "Invalid lock token or already acked")
	}
	delete(p.workTokens, lockToken)
	m.lockToken, m.lockedUntilMs = "", 0
	m.visibleAtMs = p.nowMs() + durMs(delay)
	if ignoreAttempt && m.attempts > 0 {
		m.attempts--
	}
	p.notify()
	return nil
}

// RenewSessionLock extends to now+extendFor every session owned by one of
// ownerIDs whose lease is live and that saw activity within idleTimeout,
// and returns how many it extended. Idle sessions are left to expire.
func (p *Provider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	if len(ownerIDs) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	idleCutoff := now - durMs(idleTimeout)
	n := 0
	for _, s := range p.sessions {
		if s.lockedUntilMs > now && s.lastActivityAtMs > idleCutoff && slices.Contains(ownerIDs, s.owner) {
			s.lockedUntilMs = now + durMs(extendFor)
			n++
		}
	}
	return n, nil
}

// CleanupOrphanedSessions deletes sessions whose lease has expired and that
// no queued activity references, and returns how many it deleted.
// idleTimeout is not used (expiry already implies idleness).
func (p *Provider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	referenced := map[string]bool{}
	for _, m := range p.workQ {
		if m.sessionID != nil {
			referenced[*m.sessionID] = true
		}
	}
	n := 0
	for id, s := range p.sessions {
		if s.lockedUntilMs < now && !referenced[id] {
			delete(p.sessions, id)
			n++
		}
	}
	return n, nil
}
