package provider

import (
	"context"
	"slices"
	"strings"
	"time"
)

// InstanceInfo describes an instance and its current execution.
type InstanceInfo struct {
	// InstanceID is the instance id.
	InstanceID string
	// OrchestrationName is the stored orchestration name.
	OrchestrationName    string
	OrchestrationVersion string // UnknownVersion when none is stored
	// CurrentExecutionID is the id of the current (latest) execution.
	CurrentExecutionID uint64
	// Status is the current execution's status, or [StatusUnknown] if it
	// has no execution record.
	Status string
	// Output is the current execution's output; nil when none is recorded.
	Output *string
	// CreatedAt and UpdatedAt are epoch milliseconds; 0 when the store does
	// not track them.
	CreatedAt        uint64
	UpdatedAt        uint64 // epoch milliseconds; see CreatedAt
	ParentInstanceID string // "" for a root instance
}

// StatusUnknown is the [InstanceInfo.Status] of an instance whose current
// execution has no record.
const StatusUnknown = "Unknown"

// StatusPending is the [InstanceInfo.Status] of an instance that was
// started (its [StartOrchestrationItem] is queued) and whose first turn no
// runtime has taken yet: it has no instance record. [Admin.InstanceInfo]
// describes it from the queued start, and [Admin.ListInstances] and
// [Admin.ListInstancesByStatus] list it, so that an instance is visible
// from the moment it is started. A start sent to an instance that has a
// record does not make it pending.
const StatusPending = "Pending"

// StatusCanceled is how tools display a Failed instance whose failure is a
// cancellation ([CanceledOutput]). It is never stored: the stored status
// stays [StatusFailed], duroxide's form.
const StatusCanceled = "Canceled"

// PendingInstanceInfo describes a pending instance ([StatusPending]) from
// its queued start, enqueued at enqueuedAtMs (epoch milliseconds).
func PendingInstanceInfo(start StartOrchestrationItem, enqueuedAtMs uint64) *InstanceInfo {
	info := &InstanceInfo{
		InstanceID:           start.Instance,
		OrchestrationName:    start.Orchestration,
		OrchestrationVersion: UnknownVersion,
		Status:               StatusPending,
		CreatedAt:            enqueuedAtMs,
		UpdatedAt:            enqueuedAtMs,
	}
	if start.Version != nil {
		info.OrchestrationVersion = *start.Version
	}
	if start.ParentInstance != nil {
		info.ParentInstanceID = *start.ParentInstance
	}
	return info
}

// CanceledOutput reports whether output, the stored output of a Failed
// execution, is a cancellation's ([ApplicationDetails.DisplayMessage] of
// an [AppCancelled] failure).
func CanceledOutput(output *string) bool {
	return output != nil && strings.HasPrefix(*output, canceledPrefix)
}

// canceledPrefix starts the display message of a cancellation.
const canceledPrefix = "canceled: "

// DisplayStatus is status as tools show it: [StatusCanceled] for a Failed
// execution whose output is a cancellation's, status otherwise.
func DisplayStatus(status string, output *string) string {
	if status == StatusFailed && CanceledOutput(output) {
		return StatusCanceled
	}
	return status
}

// ExecutionInfo describes one execution.
type ExecutionInfo struct {
	// ExecutionID is the execution id.
	ExecutionID uint64
	// Status is the execution's status, such as [StatusRunning].
	Status string
	// Output is the result, failure message or continue-as-new input; nil
	// when none is recorded.
	Output *string
	// StartedAt is epoch milliseconds; CompletedAt is nil while running.
	StartedAt   uint64
	CompletedAt *uint64 // epoch milliseconds; nil while running
	// EventCount is the number of events in the execution's history.
	EventCount int
}

// SystemMetrics counts what a store holds. Instance counts are by the status
// of each instance's current execution; instances whose start is queued
// and has not run yet (status [StatusPending]) are not counted.
type SystemMetrics struct {
	// TotalInstances counts all instances.
	TotalInstances uint64
	// TotalExecutions counts all executions of all instances.
	TotalExecutions uint64
	// RunningInstances counts instances whose current execution is Running.
	RunningInstances uint64
	// CompletedInstances counts instances whose current execution is
	// Completed.
	CompletedInstances uint64
	// FailedInstances counts instances whose current execution is Failed.
	FailedInstances uint64
	// CanceledInstances counts the instances among FailedInstances whose
	// current execution failed by cancellation (its OrchestrationFailed
	// event's details are [ApplicationDetails] of kind [AppCancelled]).
	CanceledInstances uint64
	// PendingInstances counts the queued starts no turn has taken yet:
	// the instances created and not yet run ([StatusPending]), and a start
	// sent again to an instance, until a turn takes it. Not part of
	// TotalInstances, which counts instances that have run.
	PendingInstances uint64
	// TotalEvents counts history events over all executions. A store that
	// keeps the figure in counters may count a running execution's events
	// as of an earlier point of it, and the rest once the execution ends
	// (the DynamoDB provider counts those of its first turn): exact when
	// no execution is running, a lower bound otherwise.
	TotalEvents uint64
}

// FailedByCancellation reports whether the last OrchestrationFailed event
// of history records a cancellation: details of kind [AppCancelled]. It
// is how [SystemMetrics.CanceledInstances] tells a canceled instance.
func FailedByCancellation(history []Event) bool {
	for i := len(history) - 1; i >= 0; i-- {
		f, ok := history[i].Kind.(OrchestrationFailed)
		if !ok {
			continue
		}
		switch d := f.Details.(type) {
		case ApplicationDetails:
			return d.Kind.Code == AppCancelled
		case *ApplicationDetails:
			return d != nil && d.Kind.Code == AppCancelled
		}
		return false
	}
	return false
}

// QueueDepths counts unlocked messages per queue. TimerQueue is always 0:
// timers are delayed orchestrator messages.
type QueueDepths struct {
	OrchestratorQueue int // unlocked orchestrator-queue messages
	WorkerQueue       int // unlocked worker-queue messages
	TimerQueue        int // always 0
}

// DefaultBulkLimit is how many instances a bulk operation selects when
// [InstanceFilter.Limit] is 0.
const DefaultBulkLimit = 1000

// InstanceFilter selects instances for bulk operations. Criteria are ANDed.
type InstanceFilter struct {
	// InstanceIDs, when non-nil, is an allowlist (an empty non-nil list
	// selects nothing).
	InstanceIDs []string
	// CompletedBefore, when non-zero, keeps instances whose current
	// execution completed strictly before it.
	CompletedBefore time.Time
	// Limit caps how many instances are selected; 0 means
	// [DefaultBulkLimit].
	Limit int
}

// EffectiveLimit returns Limit, or [DefaultBulkLimit] when it is 0.
func (f InstanceFilter) EffectiveLimit() int {
	if f.Limit <= 0 {
		return DefaultBulkLimit
	}
	return f.Limit
}

// Selects reports whether f's criteria other than Limit admit the instance
// id whose current execution completed at completedAtMs (epoch
// milliseconds; nil while it runs or when it has no record). Bulk
// operations take the instances it selects, up to [InstanceFilter.EffectiveLimit].
func (f InstanceFilter) Selects(id string, completedAtMs *int64) bool {
	if f.InstanceIDs != nil && !slices.Contains(f.InstanceIDs, id) {
		return false
	}
	if !f.CompletedBefore.IsZero() && (completedAtMs == nil || *completedAtMs >= f.CompletedBefore.UnixMilli()) {
		return false
	}
	return true
}

// PruneOptions selects executions to prune. Criteria are ANDed; the current
// execution and running executions are always kept.
type PruneOptions struct {
	// KeepLast keeps the KeepLast highest execution ids; 0 and 1 both keep
	// only the current execution.
	KeepLast uint32
	// CompletedBefore, when non-zero, prunes only executions that completed
	// strictly before it.
	CompletedBefore time.Time
}

// DeleteInstanceResult counts what a delete removed.
type DeleteInstanceResult struct {
	InstancesDeleted     uint64 // instances removed
	ExecutionsDeleted    uint64 // executions removed
	EventsDeleted        uint64 // history events removed
	QueueMessagesDeleted uint64 // orchestrator- and worker-queue messages removed
}

// Add returns the sum of r and s.
func (r DeleteInstanceResult) Add(s DeleteInstanceResult) DeleteInstanceResult {
	return DeleteInstanceResult{
		r.InstancesDeleted + s.InstancesDeleted,
		r.ExecutionsDeleted + s.ExecutionsDeleted,
		r.EventsDeleted + s.EventsDeleted,
		r.QueueMessagesDeleted + s.QueueMessagesDeleted,
	}
}

// PruneResult counts what a prune removed.
type PruneResult struct {
	// InstancesProcessed counts the instances examined; a single-instance
	// prune reports 1 even when it deletes nothing.
	InstancesProcessed uint64
	ExecutionsDeleted  uint64 // executions removed
	EventsDeleted      uint64 // history events removed
}

// Add returns the sum of r and s.
func (r PruneResult) Add(s PruneResult) PruneResult {
	return PruneResult{r.InstancesProcessed + s.InstancesProcessed, r.ExecutionsDeleted + s.ExecutionsDeleted, r.EventsDeleted + s.EventsDeleted}
}

// InstanceTree is an instance and all its descendants.
type InstanceTree struct {
	// RootID is the id of the tree's root instance.
	RootID string
	// AllIDs holds the root and every descendant, in no particular order.
	AllIDs []string
}

// IsRootOnly reports whether the tree has no descendants.
func (t InstanceTree) IsRootOnly() bool { return len(t.AllIDs) == 1 }

// Size returns the number of instances in the tree.
func (t InstanceTree) Size() int { return len(t.AllIDs) }

// GetInstanceTree walks [Admin.ListChildren] from root and returns the root
// and all its descendants.
func GetInstanceTree(ctx context.Context, admin Admin, root string) (InstanceTree, error) {
	tree := InstanceTree{RootID: root}
	pending := []string{root}
	seen := map[string]bool{}
	for len(pending) > 0 {
		id := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		tree.AllIDs = append(tree.AllIDs, id)
		children, err := admin.ListChildren(ctx, id)
		if err != nil {
			return InstanceTree{}, err
		}
		pending = append(pending, children...)
	}
	return tree, nil
}

// DeleteInstance deletes a root instance together with all its descendants,
// atomically. Naming a sub-orchestration fails with [ErrSubOrchestration]
// (delete its root instead), an unknown instance with [ErrNotFound], and,
// without force, a running instance in the tree with [ErrStillRunning].
func DeleteInstance(ctx context.Context, admin Admin, instance string, force bool) (DeleteInstanceResult, error) {
	parent, err := admin.ParentID(ctx, instance)
	if err != nil {
		return DeleteInstanceResult{}, err
	}
	if parent != "" {
		return DeleteInstanceResult{}, Permanent(OpDeleteInstance, ErrSubOrchestration,
			"Cannot delete sub-orchestration %s directly. Delete root instance instead.", instance)
	}
	tree, err := GetInstanceTree(ctx, admin, instance)
	if err != nil {
		return DeleteInstanceResult{}, err
	}
	return admin.DeleteInstancesAtomic(ctx, tree.AllIDs, force)
}
