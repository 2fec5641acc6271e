package memprovider

import (
	"context"

	"github.com/duradyn/duradyn/provider"
)

// InstanceStatus returns the instance's status from its record, its
// failure details from its current execution's OrchestrationFailed event.
func (p *Provider) InstanceStatus(ctx context.Context, instance string) (*provider.InstanceStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.row(instance)
	if inst == nil {
		if info := p.pendingInfo(instance); info != nil {
			return &provider.InstanceStatus{InstanceID: instance, Status: provider.StatusPending}, nil
		}
		return nil, provider.InstanceNotFound(provider.OpInstanceStatus, instance)
	}
	st := &provider.InstanceStatus{
		InstanceID: instance, ExecutionID: inst.currentExecution, Status: provider.StatusUnknown,
		CustomStatus: cloneString(inst.customStatus), CustomStatusVersion: inst.customStatusVersion,
	}
	e := inst.currentRecord()
	if e == nil {
		return st, nil
	}
	st.Status = e.status
	switch e.status {
	case provider.StatusCompleted:
		st.Output = cloneString(e.output)
	case provider.StatusFailed:
		events, err := decodeEvents(provider.OpInstanceStatus, instance, inst.currentExecution, inst.history[inst.currentExecution])
		if err != nil {
			return nil, err
		}
		st.Failure = provider.FailureOf(events)
	}
	return st, nil
}
