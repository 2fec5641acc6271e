package memprovider

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// EnqueueForOrchestrator puts item on its target instance's queue, visible
// after delay (0 = now). A [provider.TimerFiredItem] enqueued here uses
// delay, not its FireAtMs. The instance is not created. Invalid items (nil,
// [provider.ActivityExecuteItem], no target) fail with
// [provider.ErrInvalidInput].
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	if err := provider.ValidateOrchestratorItem(provider.OpEnqueueForOrchestrator, item); err != nil {
		return err
	}
	data, err := provider.MarshalWorkItem(item)
	if err != nil {
		return provider.Permanent(provider.OpEnqueueForOrchestrator, provider.ErrInvalidInput, "encode %s work item: %v", item.Kind(), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushOrch(item, data, p.nowMs()+durMs(delay))
	p.notify()
	return nil
}

// pushOrch appends an encoded message to the orchestrator queue. Callers
// hold p.mu.
func (p *Provider) pushOrch(item provider.WorkItem, data []byte, visibleAtMs int64) {
	p.orchQ = append(p.orchQ, &orchMessage{
		seq:          p.nextSeq(),
		instance:     item.TargetInstance(),
		kind:         item.Kind(),
		data:         data,
		visibleAtMs:  visibleAtMs,
		enqueuedAtMs: p.nowMs(),
	})
}

// liveLock returns instance's lock if it is held at nowMs.
func (p *Provider) liveLock(instance string, nowMs int64) *instanceLock {
	if l := p.orchLocks[instance]; l != nil && l.lockedUntilMs > nowMs {
		return l
	}
	return nil
}

// FetchOrchestrationItem locks the instance with the oldest visible message
// that is unlocked and admitted by filter, tags all its visible messages
// with the new lock, increments their attempt counts and returns them with
// the current execution's history. It long-polls up to pollTimeout (see the
// package documentation); nil, nil means no work.
//
// An instance that does not exist yet takes its name and version from a
// queued start or continue-as-new message. One whose batch holds only
// QueueMessage items is an orphan: those messages are dropped. One whose
// batch holds other messages but no start is left untouched (its start may
// still arrive) and skipped, so it does not hold up other instances.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	var item *provider.OrchestrationItem
	err := p.longPoll(ctx, provider.OpFetchOrchestrationItem, pollTimeout, func(nowMs int64) (bool, int64, error) {
		var wake int64
		var err error
		item, wake, err = p.tryFetchOrch(nowMs, lockTimeout, filter)
		return item != nil, wake, err
	})
	return item, err
}

// tryFetchOrch is one non-blocking fetch attempt. It also returns the
// earliest future time at which a skipped message may become eligible.
// Callers hold p.mu.
func (p *Provider) tryFetchOrch(nowMs int64, lockTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, int64, error) {
	if filter != nil && len(filter.SupportedVersions) == 0 {
		return nil, 0, nil // supports nothing
	}
	var wake int64
	tried := map[string]bool{}
	for i := 0; i < len(p.orchQ); i++ {
		m := p.orchQ[i]
		if m.visibleAtMs > nowMs {
			wake = earliest(wake, m.visibleAtMs)
			continue
		}
		if tried[m.instance] {
			continue
		}
		tried[m.instance] = true
		if l := p.liveLock(m.instance, nowMs); l != nil {
			wake = earliest(wake, l.lockedUntilMs)
			continue
		}
		inst := p.instances[m.instance]
		if filter != nil && !filter.Admits(pinnedVersion(inst)) {
			continue
		}
		item, dropped, err := p.lockInstance(m.instance, inst, nowMs, lockTimeout)
		if err != nil || item != nil {
			return item, 0, err
		}
		if dropped {
			i = -1 // the queue changed; rescan (tried skips what was seen)
		}
	}
	return nil, wake, nil
}

// pinnedVersion is the pinned runtime version of inst's current execution;
// nil when unpinned or when there is no instance or execution.
func pinnedVersion(inst *instance) *provider.SemVer {
	if inst == nil || !inst.hasRow {
		return nil
	}
	if e := inst.currentRecord(); e != nil {
		return e.pinned
	}
	return nil
}

// lockInstance tries to turn the visible messages of one unlocked instance
// into a locked item. It returns nil when the instance cannot be processed
// yet (dropped reports that orphan queue messages were deleted). Callers
// hold p.mu.
func (p *Provider) lockInstance(id string, inst *instance, nowMs int64, lockTimeout time.Duration) (item *provider.OrchestrationItem, dropped bool, err error) {
	var batch []*orchMessage
	var msgs []provider.WorkItem
	for _, m := range p.orchQ {
		if m.instance != id || m.visibleAtMs > nowMs {
			continue
		}
		w, err := provider.UnmarshalWorkItem(m.data)
		if err != nil {
			return nil, false, provider.Corrupt(provider.OpFetchOrchestrationItem, err, "failed to decode queued %s message for instance %q: %v", m.kind, id, err)
		}
		batch = append(batch, m)
		msgs = append(msgs, w)
	}
	if len(batch) == 0 {
		return nil, false, nil
	}

	item = &provider.OrchestrationItem{Instance: id, Messages: msgs}
	var history []storedEvent
	switch {
	case inst != nil && inst.hasRow:
		item.OrchestrationName = inst.name
		item.Version = inst.version
		item.ExecutionID = inst.currentExecution
		history = inst.history[inst.currentExecution]
	default:
		if name, version, execID, ok := startedFromHistory(inst); ok {
			item.OrchestrationName, item.Version, item.ExecutionID = name, version, execID
			history = inst.history[execID]
			break
		}
		if name, version, ok := provider.StartFromMessages(msgs); ok {
			item.OrchestrationName, item.Version, item.ExecutionID = name, version, provider.InitialExecutionID
			break
		}
		if provider.OnlyQueueMessages(msgs) {
			p.orchQ = slices.DeleteFunc(p.orchQ, func(m *orchMessage) bool { return slices.Contains(batch, m) })
			return nil, true, nil
		}
		return nil, false, nil // may be racing its start: leave in place
	}
	if item.Version == "" {
		item.Version = provider.UnknownVersion
	}

	// Win the lock; the lease counts from a clock read after winning it.
	token := newToken()
	if old := p.orchLocks[id]; old != nil {
		delete(p.orchTokens, old.token)
	}
	lock := &instanceLock{instance: id, token: token}
	p.orchLocks[id] = lock
	p.orchTokens[token] = lock
	for _, m := range batch {
		m.lockToken = token
		m.attempts++
		item.AttemptCount = max(item.AttemptCount, m.attempts)
	}
	item.LockToken = token

	events, err := decodeEvents(provider.OpFetchOrchestrationItem, id, item.ExecutionID, history)
	if err != nil {
		item.HistoryError = err
		item.History = []provider.Event{}
		item.KVSnapshot = map[string]provider.KVEntry{}
	} else {
		item.History = events
		item.KVSnapshot = map[string]provider.KVEntry{}
		if inst != nil {
			item.KVSnapshot = maps.Clone(inst.kvStore)
		}
	}
	lock.lockedUntilMs = p.nowMs() + durMs(lockTimeout)
	item.LeaseExpiry = time.UnixMilli(lock.lockedUntilMs)
	return item, false, nil
}

// startedFromHistory finds the OrchestrationStarted of the latest execution
// of an instance that has history but no instance record.
func startedFromHistory(inst *instance) (name, version string, executionID uint64, ok bool) {
	if inst == nil {
		return "", "", 0, false
	}
	executionID = inst.latestExecution()
	events, err := decodeEvents(provider.OpFetchOrchestrationItem, inst.id, executionID, inst.history[executionID])
	if err != nil {
		return "", "", 0, false
	}
	name, version, ok = provider.StartedIn(events)
	return name, version, executionID, ok
}

// AckOrchestrationItem commits a turn: it validates everything first, then
// applies, as one atomic unit, the steps of the contract in order (instance
// record, execution record, pinned version, current execution, history,
// status, custom status, KV, worker items, cancelled activities,
// orchestrator items, consumed messages, lock release). A failed ack
// changes nothing and leaves the lock in place. An unknown, released or
// expired lock fails with [provider.ErrInvalidLockToken].
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	if err := provider.ValidateTurn(provider.OpAckOrchestrationItem, commit); err != nil {
		return err
	}
	workerData, orchData, err := encodeItems(commit)
	if err != nil {
		return err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	lock := p.orchTokens[lockToken]
	if lock == nil {
		return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidLockToken, "Invalid lock token")
	}
	if lock.lockedUntilMs <= now {
		return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidLockToken, "Invalid lock token: instance lock expired")
	}
	id := lock.instance
	events, err := encodeEvents(provider.OpAckOrchestrationItem, p.instances[id], commit.ExecutionID, commit.HistoryDelta)
	if err != nil {
		return err
	}

	// Everything is valid: apply.
	p.orchQ = slices.DeleteFunc(p.orchQ, func(m *orchMessage) bool { return m.lockToken == lockToken })
	inst := p.instanceRecord(id, true)
	p.recordTurn(inst, commit, now)
	inst.appendEvents(commit.ExecutionID, events)
	applyTurnState(inst, commit)
	p.queueTurnItems(commit, workerData, orchData, now)
	delete(p.orchLocks, id)
	delete(p.orchTokens, lockToken)
	p.notify()
	return nil
}

// encodeItems encodes the turn's worker and orchestrator items before
// anything is applied, so that one that cannot be stored fails the ack.
func encodeItems(commit provider.TurnCommit) (workerData, orchData [][]byte, err error) {
	workerData = make([][]byte, len(commit.WorkerItems))
	for i, w := range commit.WorkerItems {
		if workerData[i], err = json.Marshal(w); err != nil {
			return nil, nil, provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput, "encode worker item %d: %v", i, err)
		}
	}
	orchData = make([][]byte, len(commit.OrchestratorItems))
	for i, w := range commit.OrchestratorItems {
		if orchData[i], err = provider.MarshalWorkItem(w); err != nil {
			return nil, nil, provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput, "encode orchestrator item %d: %v", i, err)
		}
	}
	return workerData, orchData, nil
}

// recordTurn applies the turn's instance record (created by the first
// turn that names the orchestration), its execution record, pinned
// version and current execution. Callers hold p.mu.
func (p *Provider) recordTurn(inst *instance, commit provider.TurnCommit, now int64) {
	meta := commit.Metadata
	if meta.OrchestrationName != "" && meta.OrchestrationVersion != "" {
		if !inst.hasRow {
			inst.hasRow = true
			inst.currentExecution = commit.ExecutionID
			inst.parent = meta.ParentInstanceID
			inst.createdSeq = p.nextSeq()
			inst.createdAtMs = now
		}
		inst.name, inst.version = meta.OrchestrationName, meta.OrchestrationVersion
	}
	exec := inst.executions[commit.ExecutionID]
	if exec == nil {
		exec = &execution{status: provider.StatusRunning, startedAtMs: now}
		inst.executions[commit.ExecutionID] = exec
	}
	if meta.PinnedDuroxideVersion != nil {
		v := *meta.PinnedDuroxideVersion
		exec.pinned = &v
	}
	if inst.hasRow {
		inst.currentExecution = max(inst.currentExecution, commit.ExecutionID)
		inst.updatedAtMs = now
	}
	if meta.Status != "" {
		exec.status = meta.Status
		exec.output = cloneString(meta.Output)
		completed := now
		exec.completedAtMs = &completed
	}
}

// applyTurnState applies the turn's custom status and KV writes; a
// terminal status merges the execution's KV writes into the store.
func applyTurnState(inst *instance, commit provider.TurnCommit) {
	if status, changed := provider.CustomStatusChange(commit.HistoryDelta); changed && inst.hasRow {
		inst.customStatus = cloneString(status)
		inst.customStatusVersion++
	}
	inst.kvDelta.Apply(commit.HistoryDelta)
	if provider.IsTerminalStatus(commit.Metadata.Status) {
		inst.kvStore = provider.MergeKV(inst.kvStore, inst.kvDelta)
		inst.kvDelta = provider.KVDelta{}
	}
}

// queueTurnItems queues the turn's worker items, drops the activities it
// cancelled and queues its orchestrator items. Callers hold p.mu.
func (p *Provider) queueTurnItems(commit provider.TurnCommit, workerData, orchData [][]byte, now int64) {
	for i, w := range commit.WorkerItems {
		p.pushWork(w, workerData[i], now)
	}
	if len(commit.CancelledActivities) > 0 {
		p.deleteWork(func(m *workMessage) bool {
			return slices.Contains(commit.CancelledActivities, provider.ScheduledActivityIdentifier{
				Instance: m.instance, ExecutionID: m.executionID, ActivityID: m.activityID,
			})
		})
	}
	for i, w := range commit.OrchestratorItems {
		p.pushOrch(w, orchData[i], provider.TurnVisibleAt(w, time.UnixMilli(now)).UnixMilli())
	}
}

// AbandonOrchestrationItem releases the lock without committing. A non-zero
// delay hides the instance's currently visible messages for that long;
// ignoreAttempt decrements the attempt count of all the instance's messages
// (floor 0). A token that names no lock fails with
// [provider.ErrInvalidLockToken].
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	lock := p.orchTokens[lockToken]
	if lock == nil {
		return provider.Permanent(provider.OpAbandonOrchestrationItem, provider.ErrInvalidLockToken, "Invalid lock token")
	}
	delete(p.orchLocks, lock.instance)
	delete(p.orchTokens, lockToken)
	now := p.nowMs()
	for _, m := range p.orchQ {
		if m.instance != lock.instance {
			continue
		}
		if m.lockToken == lockToken {
			m.lockToken = ""
		}
		if ignoreAttempt && m.attempts > 0 {
			m.attempts--
		}
		if delay > 0 && m.visibleAtMs <= now {
			m.visibleAtMs = now + durMs(delay)
		}
	}
	p.notify()
	return nil
}

// RenewOrchestrationItemLock extends a live lock to now+extendFor. An
// unknown, released or expired lock fails with
// [provider.ErrInvalidLockToken].
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	lock := p.orchTokens[lockToken]
	if lock == nil || lock.lockedUntilMs <= now {
		return provider.Permanent(provider.OpRenewOrchestrationItemLock, provider.ErrInvalidLockToken, "Invalid lock token: invalid, expired, or already acked")
	}
	lock.lockedUntilMs = now + durMs(extendFor)
	return nil
}

// Read returns the latest execution's history; empty for unknown
// instances. An undecodable stored event fails with an error wrapping
// [provider.ErrCorruptData].
func (p *Provider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	return p.readLocked(provider.OpRead, inst, instance, inst.latestExecution())
}

// ReadWithExecution returns one execution's history, as [Provider.Read].
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readLocked(provider.OpReadWithExecution, p.instances[instance], instance, executionID)
}

// readLocked decodes one execution's history. Callers hold p.mu.
func (p *Provider) readLocked(op string, inst *instance, id string, executionID uint64) ([]provider.Event, error) {
	if inst == nil {
		return []provider.Event{}, nil
	}
	return decodeEvents(op, id, executionID, inst.history[executionID])
}

// AppendWithExecution stores events in an execution's history as given
// (for tests and tools; it creates no instance or execution record).
// Execution id 0, event id 0, an id twice in events (all
// [provider.ErrInvalidInput]) and an id already stored
// ([provider.ErrDuplicateEvent]) are rejected, and then nothing is stored.
func (p *Provider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	if executionID == 0 {
		return provider.Permanent(provider.OpAppendWithExecution, provider.ErrInvalidInput, "execution_id must be greater than 0")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	stored, err := encodeEvents(provider.OpAppendWithExecution, p.instances[instance], executionID, events)
	if err != nil {
		return err
	}
	if len(stored) > 0 {
		p.instanceRecord(instance, true).appendEvents(executionID, stored)
	}
	return nil
}

// cloneString returns a copy of s.
func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}
