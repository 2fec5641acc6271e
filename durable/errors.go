package durable

import (
	"errors"
	"fmt"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

var (
	// ErrCancelled is returned by Get on a future that was cancelled
	// (explicitly, or by losing a Race) before it resolved.
	ErrCancelled = replay.ErrCancelled

	// ErrActivityCancelled is the cause of an activity context cancelled
	// because the activity's lock was lost: the orchestration cancelled it,
	// ended, or another worker took it over.
	ErrActivityCancelled = errors.New("durable: activity cancelled")

	// ErrShutdown is the cause of an activity context cancelled because the
	// runtime is shutting down; the activity is retried elsewhere without
	// counting an attempt.
	ErrShutdown = errors.New("durable: runtime shutting down")

	// ErrNondeterminism reports orchestration code that made different
	// decisions than its recorded history.
	ErrNondeterminism = errors.New("durable: nondeterministic orchestration")

	// ErrManagementNotAvailable reports a management call on a provider
	// without [provider.Admin].
	ErrManagementNotAvailable = errors.New("durable: management not available on this provider")

	// ErrInvalidDefinition reports a registration the registry refuses.
	ErrInvalidDefinition = errors.New("durable: invalid definition")
)

// TaskError is the failure of an activity or sub-orchestration, as the
// orchestration that awaited it sees it.
type TaskError struct {
	// Kind is "activity" or "sub-orchestration".
	Kind string
	// Name is the activity or orchestration name.
	Name string
	// Details are the failure's details as recorded in history.
	Details provider.ErrorDetails
}

// Error returns the failure's display message, the text duroxide delivers.
func (e *TaskError) Error() string { return e.Details.DisplayMessage() }

// Is reports ErrNondeterminism for configuration failures.
func (e *TaskError) Is(target error) bool {
	_, config := e.Details.(provider.ConfigurationDetails)
	return target == ErrNondeterminism && config
}

// ContinueAsNewError is returned by [OrchestrationContext.ContinueAsNew];
// the orchestration returns it to end the execution and start a new one.
type ContinueAsNewError struct {
	// Input is the new execution's input.
	Input string
}

func (e *ContinueAsNewError) Error() string {
	return fmt.Sprintf("continue as new with input %s", truncate(e.Input, 64))
}

// FailureError is the failure of an orchestration instance, returned by
// the client's typed waits.
type FailureError struct {
	// Instance is the failed instance.
	Instance string
	// Details are the recorded failure details.
	Details provider.ErrorDetails
}

func (e *FailureError) Error() string {
	return fmt.Sprintf("orchestration %s failed: %s", e.Instance, e.Details.DisplayMessage())
}

// Is reports ErrNondeterminism for configuration failures.
func (e *FailureError) Is(target error) bool {
	_, config := e.Details.(provider.ConfigurationDetails)
	return target == ErrNondeterminism && config
}
