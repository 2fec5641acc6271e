package provider

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors name the contract outcomes a caller may need to react to.
// Providers wrap them in an [*Error] (which carries the operation and the
// retry classification); match them with [errors.Is].
var (
	// ErrInvalidLockToken reports a lock token that no longer names a held
	// lock: unknown, expired, already acknowledged or abandoned, or whose
	// item was deleted (activity cancellation, instance deletion). Returned
	// by the ack, abandon and renew methods of both queues. Always permanent:
	// retrying with the same token cannot succeed.
	ErrInvalidLockToken = errors.New("invalid lock token")

	// ErrNotFound reports an unknown instance or execution where the
	// contract requires an error rather than an empty result (instance and
	// execution info, parent lookup, prune, delete). Permanent.
	ErrNotFound = errors.New("not found")

	// ErrStillRunning reports a non-forced delete of an instance whose
	// current execution is still running. Permanent.
	ErrStillRunning = errors.New("instance is still running")

	// ErrSubOrchestration reports a delete request that names a
	// sub-orchestration; delete its root instead. Permanent.
	ErrSubOrchestration = errors.New("cannot delete a sub-orchestration")

	// ErrTreeChanged reports an atomic delete that found a child instance
	// created after the caller read the instance tree. Permanent for that
	// call; read the tree again and retry.
	ErrTreeChanged = errors.New("instance tree changed")

	// ErrDuplicateEvent reports an append of an event id that the execution
	// already holds. History is append-only: nothing was written. Permanent.
	ErrDuplicateEvent = errors.New("duplicate event id")

	// ErrInvalidInput reports a request the contract forbids: an event id of
	// 0, a work item of the wrong kind for its queue, a completion that is
	// not a completion, an invalid tag filter, an item too large to store.
	// Nothing was written. Permanent.
	ErrInvalidInput = errors.New("invalid input")

	// ErrCorruptData reports stored data that cannot be decoded (history
	// written by a newer version, or damaged rows). Permanent.
	ErrCorruptData = errors.New("corrupt stored data")

	// ErrUnknownKind reports JSON whose work-item, event or error-details
	// kind this version does not know. It is wrapped by the decode errors of
	// this package, and by [ErrCorruptData] when it comes from storage.
	ErrUnknownKind = errors.New("unknown kind")
)

// Error is the error every provider method returns: the contract operation
// that failed, a human-readable message and whether a retry may succeed.
// Err, when set, is the cause (often one of the sentinel errors above, or an
// SDK error) and is reachable through [errors.Is] and [errors.As].
//
// Retryable errors are transient (throttling, timeouts, lost races a retry
// can win); the runtime retries them with backoff. Permanent errors mean the
// same call will fail again (invalid tokens, invalid input, corruption).
type Error struct {
	// Op is the contract operation, in the contract's snake_case spelling
	// (for example "ack_orchestration_item"), so logs read the same in every
	// implementation of the contract.
	Op string
	// Message describes what went wrong.
	Message string
	// Retryable reports whether the same call may succeed later.
	Retryable bool
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the error as "op: message", as duroxide does.
func (e *Error) Error() string {
	return e.Op + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Permanent returns a non-retryable [*Error] for op whose cause is kind (which
// may be nil) and whose message is formatted from format and args.
func Permanent(op string, kind error, format string, args ...any) *Error {
	return &Error{Op: op, Message: fmt.Sprintf(format, args...), Retryable: false, Err: kind}
}

// Retryable returns a retryable [*Error] for op whose cause is cause (which
// may be nil) and whose message is formatted from format and args.
func Retryable(op string, cause error, format string, args ...any) *Error {
	return &Error{Op: op, Message: fmt.Sprintf(format, args...), Retryable: true, Err: cause}
}

// Corrupt returns a non-retryable [*Error] for op reporting stored data that
// cannot be decoded: its Err wraps both [ErrCorruptData] and cause (which may
// be nil), so that [errors.Is] finds either. The message is formatted from
// format and args.
func Corrupt(op string, cause error, format string, args ...any) *Error {
	e := Permanent(op, nil, format, args...)
	e.Err = fmt.Errorf("%w: %w", ErrCorruptData, cause)
	return e
}

// InstanceNotFound returns the [ErrNotFound] error of op for an instance
// that does not exist.
func InstanceNotFound(op, instance string) *Error {
	return Permanent(op, ErrNotFound, "Instance %s not found", instance)
}

// ExecutionNotFound returns the [ErrNotFound] error of op for an execution
// that does not exist.
func ExecutionNotFound(op, instance string, executionID uint64) *Error {
	return Permanent(op, ErrNotFound, "Execution %d not found for instance %s", executionID, instance)
}

// StillRunning returns the [ErrStillRunning] error of op for a non-forced
// delete of instance, whose current execution is running.
func StillRunning(op, instance string) *Error {
	return Permanent(op, ErrStillRunning, "Instance %s is still running. Use force=true to delete anyway, or cancel first.", instance)
}

// TreeChanged returns the [ErrTreeChanged] error of op for a delete that
// lists instance but not child, its child created after the caller read
// the tree.
func TreeChanged(op, instance, child string) *Error {
	return Permanent(op, ErrTreeChanged,
		"Cannot delete: instance %s has child %s that was created after tree traversal. Re-fetch the tree and retry.", instance, child)
}

// IsRetryable reports whether err is worth retrying. An [*Error] in the
// chain decides. Context cancellation and deadline errors are not retryable
// (the caller gave up). Any other non-nil error is treated as retryable, the
// conservative choice for errors a provider failed to classify. A nil error
// is not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Retryable
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}

// ToInfrastructureDetails converts a provider error into the
// [InfrastructureDetails] the runtime records when a provider failure ends an
// orchestration.
func ToInfrastructureDetails(err error) InfrastructureDetails {
	var pe *Error
	if errors.As(err, &pe) {
		return InfrastructureDetails{Operation: pe.Op, Message: pe.Message, Retryable: pe.Retryable}
	}
	return InfrastructureDetails{Operation: "unknown", Message: err.Error(), Retryable: IsRetryable(err)}
}
