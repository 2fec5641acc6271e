package memprovider

import (
	"cmp"
	"context"
	"slices"

	"github.com/duradyn/duradyn/provider"
)

// rows returns the instances that exist (have an instance record), oldest
// first. Callers hold p.mu.
func (p *Provider) rows() []*instance {
	var out []*instance
	for _, inst := range p.instances {
		if inst.hasRow {
			out = append(out, inst)
		}
	}
	slices.SortFunc(out, func(a, b *instance) int { return cmp.Compare(a.createdSeq, b.createdSeq) })
	return out
}

// row returns the instance record of id if the instance exists. Callers
// hold p.mu.
func (p *Provider) row(id string) *instance {
	if inst := p.instances[id]; inst != nil && inst.hasRow {
		return inst
	}
	return nil
}

// currentStatus is the status of inst's current execution, or "" when it
// has no execution record.
func currentStatus(inst *instance) string {
	if e := inst.currentRecord(); e != nil {
		return e.status
	}
	return ""
}

// listed is one instance as the listings see it.
type listed struct {
	id     string
	seq    uint64
	status string
}

// listing returns the instances that exist and the pending ones (a queued
// start and no instance record), oldest first. Callers hold p.mu.
func (p *Provider) listing() []listed {
	var out []listed
	for _, inst := range p.rows() {
		out = append(out, listed{id: inst.id, seq: inst.createdSeq, status: currentStatus(inst)})
	}
	seen := map[string]bool{}
	for _, m := range p.orchQ {
		if m.kind == provider.KindStartOrchestration && p.row(m.instance) == nil && !seen[m.instance] {
			seen[m.instance] = true
			out = append(out, listed{id: m.instance, seq: m.seq, status: provider.StatusPending})
		}
	}
	slices.SortFunc(out, func(a, b listed) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// ListInstances returns every instance id, pending ones included, newest
// first.
func (p *Provider) ListInstances(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.listing()
	out := make([]string, 0, len(all))
	for _, l := range slices.Backward(all) {
		out = append(out, l.id)
	}
	return out, nil
}

// ListInstancesByStatus returns the instances whose current execution has
// status, newest first; [provider.StatusPending] lists the pending ones.
func (p *Provider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []string{}
	for _, l := range slices.Backward(p.listing()) {
		if l.status == status && status != "" {
			out = append(out, l.id)
		}
	}
	return out, nil
}

// pendingInfo describes instance from its oldest queued start when it has
// no instance record; nil when it has none. Callers hold p.mu.
func (p *Provider) pendingInfo(instance string) *provider.InstanceInfo {
	for _, m := range p.orchQ {
		if m.instance != instance || m.kind != provider.KindStartOrchestration {
			continue
		}
		w, err := provider.UnmarshalWorkItem(m.data)
		if start, ok := w.(provider.StartOrchestrationItem); ok && err == nil {
			return provider.PendingInstanceInfo(start, uint64(max(m.enqueuedAtMs, 0)))
		}
	}
	return nil
}

// ListExecutions returns the instance's execution ids in ascending order;
// empty for unknown instances.
func (p *Provider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []uint64{}
	if inst := p.instances[instance]; inst != nil {
		for id := range inst.executions {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ReadHistoryWithExecutionID returns one execution's events, as
// [Provider.ReadWithExecution].
func (p *Provider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readLocked(provider.OpReadHistoryWithExecutionID, p.instances[instance], instance, executionID)
}

// ReadHistory returns the latest execution's events, as [Provider.Read].
func (p *Provider) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	return p.readLocked(provider.OpReadHistory, inst, instance, inst.latestExecution())
}

// LatestExecutionID returns the highest execution id; 1 for unknown
// instances.
func (p *Provider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.instances[instance].latestExecution(), nil
}

// InstanceInfo describes an instance and its current execution (status
// "Unknown" when that execution has no record), or a pending instance
// from its queued start ([provider.StatusPending]). Unknown instances fail
// with [provider.ErrNotFound].
func (p *Provider) InstanceInfo(ctx context.Context, instance string) (*provider.InstanceInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.row(instance)
	if inst == nil {
		if info := p.pendingInfo(instance); info != nil {
			return info, nil
		}
		return nil, provider.InstanceNotFound(provider.OpInstanceInfo, instance)
	}
	info := &provider.InstanceInfo{
		InstanceID:           inst.id,
		OrchestrationName:    inst.name,
		OrchestrationVersion: cmp.Or(inst.version, provider.UnknownVersion),
		CurrentExecutionID:   inst.currentExecution,
		Status:               provider.StatusUnknown,
		CreatedAt:            uint64(inst.createdAtMs),
		UpdatedAt:            uint64(inst.updatedAtMs),
		ParentInstanceID:     inst.parent,
	}
	if e := inst.currentRecord(); e != nil {
		info.Status = e.status
		info.Output = cloneString(e.output)
	}
	return info, nil
}

// ExecutionInfo describes one execution. Unknown executions fail with
// [provider.ErrNotFound].
func (p *Provider) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*provider.ExecutionInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var e *execution
	inst := p.instances[instance]
	if inst != nil {
		e = inst.executions[executionID]
	}
	if e == nil {
		return nil, provider.ExecutionNotFound(provider.OpExecutionInfo, instance, executionID)
	}
	info := &provider.ExecutionInfo{
		ExecutionID: executionID,
		Status:      e.status,
		Output:      cloneString(e.output),
		StartedAt:   uint64(e.startedAtMs),
		EventCount:  len(inst.history[executionID]),
	}
	if e.completedAtMs != nil {
		c := uint64(*e.completedAtMs)
		info.CompletedAt = &c
	}
	return info, nil
}

// SystemMetrics counts instances (by the status of their current
// execution, and the canceled ones among the failed), executions, history
// events and queued starts, all exactly.
func (p *Provider) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m provider.SystemMetrics
	for _, inst := range p.instances {
		m.TotalExecutions += uint64(len(inst.executions))
		for _, h := range inst.history {
			m.TotalEvents += uint64(len(h))
		}
		if !inst.hasRow {
			continue
		}
		m.CountInstance(currentStatus(inst))
		if canceled(inst) {
			m.CanceledInstances++
		}
	}
	for _, msg := range p.orchQ {
		if msg.kind == provider.KindStartOrchestration {
			m.PendingInstances++
		}
	}
	return m, nil
}

// canceled reports whether inst's current execution failed by
// cancellation, as its last OrchestrationFailed event says
// (provider.FailedByCancellation). Events that do not decode are passed
// over: a corrupt history fails its readers, not the metrics. Callers
// hold p.mu.
func canceled(inst *instance) bool {
	if currentStatus(inst) != provider.StatusFailed {
		return false
	}
	stored := inst.history[inst.currentExecution]
	for i := len(stored) - 1; i >= 0; i-- {
		events, err := decodeEvents(provider.OpSystemMetrics, inst.id, inst.currentExecution, stored[i:i+1])
		if err != nil {
			continue
		}
		if _, ok := events[0].Kind.(provider.OrchestrationFailed); ok {
			return provider.FailedByCancellation(events)
		}
	}
	return false
}

// QueueDepths counts the messages of each queue that no live lock holds.
// TimerQueue is always 0: timers are delayed orchestrator messages.
func (p *Provider) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	var d provider.QueueDepths
	for _, m := range p.orchQ {
		if l := p.liveLock(m.instance, now); l == nil || l.token != m.lockToken {
			d.OrchestratorQueue++
		}
	}
	for _, m := range p.workQ {
		if m.lockToken == "" || m.lockedUntilMs <= now {
			d.WorkerQueue++
		}
	}
	return d, nil
}

// ListChildren returns the direct children of an instance, oldest first;
// empty for unknown instances.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.children(instance), nil
}

// children returns the ids of the direct children of id, oldest first.
// Callers hold p.mu.
func (p *Provider) children(id string) []string {
	out := []string{}
	for _, inst := range p.rows() {
		if inst.parent == id && id != "" {
			out = append(out, inst.id)
		}
	}
	return out
}

// ParentID returns the instance's parent, or "" for a root. Unknown
// instances fail with [provider.ErrNotFound].
func (p *Provider) ParentID(ctx context.Context, instance string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.row(instance)
	if inst == nil {
		return "", provider.InstanceNotFound(provider.OpParentID, instance)
	}
	return inst.parent, nil
}

// DeleteInstancesAtomic deletes every listed instance with all its data
// (history, executions, queued messages of both queues, locks, KV, custom
// status), all or nothing. Sessions are kept. Without force an instance
// whose current execution is running fails the call with
// [provider.ErrStillRunning]; an instance not listed whose parent is listed
// fails it with [provider.ErrTreeChanged]. InstancesDeleted counts the
// listed instances that existed.
func (p *Provider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deleteLocked(provider.OpDeleteInstancesAtomic, ids, force)
}

// deleteLocked implements [Provider.DeleteInstancesAtomic]. Callers hold
// p.mu.
func (p *Provider) deleteLocked(op string, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	var res provider.DeleteInstanceResult
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	if len(set) == 0 {
		return res, nil
	}
	if !force {
		for _, id := range ids {
			if inst := p.row(id); inst != nil && currentStatus(inst) == provider.StatusRunning {
				return res, provider.StillRunning(op, id)
			}
		}
	}
	for _, inst := range p.rows() {
		if !set[inst.id] && inst.parent != "" && set[inst.parent] {
			return res, provider.TreeChanged(op, inst.parent, inst.id)
		}
	}
	for id := range set {
		inst := p.instances[id]
		if inst == nil {
			continue
		}
		if inst.hasRow {
			res.InstancesDeleted++
		}
		res.ExecutionsDeleted += uint64(len(inst.executions))
		for _, h := range inst.history {
			res.EventsDeleted += uint64(len(h))
		}
		delete(p.instances, id)
	}
	n := len(p.orchQ)
	p.orchQ = slices.DeleteFunc(p.orchQ, func(m *orchMessage) bool { return set[m.instance] })
	res.QueueMessagesDeleted = uint64(n-len(p.orchQ)) + uint64(p.deleteWork(func(m *workMessage) bool { return set[m.instance] }))
	for id := range set {
		if l := p.orchLocks[id]; l != nil {
			delete(p.orchTokens, l.token)
			delete(p.orchLocks, id)
		}
	}
	return res, nil
}

// tree returns root and all its descendants. Callers hold p.mu.
func (p *Provider) tree(root string) []string {
	all := []string{root}
	for i := 0; i < len(all); i++ {
		for _, c := range p.children(all[i]) {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	return all
}

// selectInstances returns the existing instances that filter selects, oldest
// first; keep further restricts the candidates. Callers hold p.mu.
func (p *Provider) selectInstances(filter provider.InstanceFilter, keep func(*instance) bool) []*instance {
	if filter.InstanceIDs != nil && len(filter.InstanceIDs) == 0 {
		return nil
	}
	var out []*instance
	for _, inst := range p.rows() {
		if len(out) >= filter.EffectiveLimit() {
			break
		}
		var completedAtMs *int64
		if e := inst.currentRecord(); e != nil {
			completedAtMs = e.completedAtMs
		}
		if !filter.Selects(inst.id, completedAtMs) {
			continue
		}
		if keep != nil && !keep(inst) {
			continue
		}
		out = append(out, inst)
	}
	return out
}

// DeleteInstanceBulk deletes the root instances whose current execution is
// terminal and that filter selects, each with its whole tree (forced).
// Running instances and sub-orchestrations are skipped. InstancesDeleted
// counts every instance of every tree.
func (p *Provider) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	roots := p.selectInstances(filter, func(inst *instance) bool {
		return inst.parent == "" && provider.IsTerminalStatus(currentStatus(inst))
	})
	var total provider.DeleteInstanceResult
	for _, root := range roots {
		tree := p.tree(root.id)
		res, err := p.deleteLocked(provider.OpDeleteInstanceBulk, tree, true)
		if err != nil {
			return total, err
		}
		res.InstancesDeleted = uint64(len(tree))
		total = total.Add(res)
	}
	return total, nil
}

// PruneExecutions deletes the history and records of the instance's old
// executions: never the current one or a running one, keeping the
// options.KeepLast highest ids and, when options.CompletedBefore is set,
// only those that completed before it. KV data is not touched. Unknown
// instances fail with [provider.ErrNotFound].
func (p *Provider) PruneExecutions(ctx context.Context, instance string, options provider.PruneOptions) (provider.PruneResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.row(instance)
	if inst == nil {
		return provider.PruneResult{}, provider.InstanceNotFound(provider.OpPruneExecutions, instance)
	}
	return pruneLocked(inst, options), nil
}

// pruneLocked prunes one existing instance. Callers hold p.mu.
func pruneLocked(inst *instance, options provider.PruneOptions) provider.PruneResult {
	res := provider.PruneResult{InstancesProcessed: 1}
	execs := make([]provider.ExecutionSummary, 0, len(inst.executions))
	for id, e := range inst.executions {
		execs = append(execs, provider.ExecutionSummary{ID: id, Status: e.status, CompletedAtMs: e.completedAtMs})
	}
	for _, id := range provider.ExecutionsToPrune(execs, inst.currentExecution, options) {
		res.ExecutionsDeleted++
		res.EventsDeleted += uint64(len(inst.history[id]))
		delete(inst.executions, id)
		delete(inst.history, id)
	}
	return res
}

// PruneExecutionsBulk prunes every instance that filter selects, running
// ones included, and sums the results.
func (p *Provider) PruneExecutionsBulk(ctx context.Context, filter provider.InstanceFilter, options provider.PruneOptions) (provider.PruneResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var total provider.PruneResult
	for _, inst := range p.selectInstances(filter, nil) {
		total = total.Add(pruneLocked(inst, options))
	}
	return total, nil
}
