package provider

import "context"

// InstanceStatus is what a client asks first about an instance: the status
// of its current execution, how it ended, and its custom status.
type InstanceStatus struct {
	// InstanceID is the instance id.
	InstanceID string
	// ExecutionID is the current execution's id.
	ExecutionID uint64
	// Status is the current execution's stored status ([StatusRunning],
	// [StatusCompleted], [StatusFailed], [StatusContinuedAsNew]), or
	// [StatusPending] for an instance whose start is queued and that has
	// no record yet (ExecutionID 0).
	Status string
	// Output is the output of a [StatusCompleted] execution.
	Output *string
	// Failure is the details of a [StatusFailed] execution, as its
	// OrchestrationFailed event holds them.
	Failure ErrorDetails
	// CustomStatus is the instance's custom status; nil when none is set.
	CustomStatus *string
	// CustomStatusVersion counts the turns that set or cleared it.
	CustomStatusVersion uint64
}

// StatusReader is implemented by stores that read an instance's status
// without its history, at a cost that does not grow with the history. It
// is optional: clients derive the status from the history without it.
type StatusReader interface {
	// InstanceStatus returns the instance's status. An unknown instance,
	// and one whose start is not queued either, fails with [ErrNotFound].
	InstanceStatus(ctx context.Context, instance string) (*InstanceStatus, error)
}

// FailureOf returns the details of the last OrchestrationFailed event of
// history, or nil when it has none.
func FailureOf(history []Event) ErrorDetails {
	for i := len(history) - 1; i >= 0; i-- {
		if f, ok := history[i].Kind.(OrchestrationFailed); ok {
			return f.Details
		}
	}
	return nil
}
