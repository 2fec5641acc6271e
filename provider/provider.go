package provider

import (
	"context"
	"time"
)

// Provider is durable storage for orchestrations: per-execution event
// histories plus two peek-lock queues. See the package documentation for the
// rules every implementation follows.
//
// Methods that find nothing return a nil result and a nil error. Every error
// is an [*Error] (possibly wrapping a sentinel such as [ErrInvalidLockToken]);
// a method that returns an error holds no lock on the caller's behalf.
// A fetch that is waiting for work when ctx ends returns an error wrapping
// ctx.Err(). Implementations are safe for concurrent use.
type Provider interface {
	// FetchOrchestrationItem locks one instance that has visible messages
	// and is not locked, and returns its batch and current history. The
	// lock lasts lockTimeout, counted from when it was won. A non-nil filter
	// is applied before locking and before any history is decoded.
	// pollTimeout is how long a provider that long-polls may wait for work;
	// a short-polling provider returns at once. Returns nil, nil when no
	// instance is eligible.
	FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *CapabilityFilter) (*OrchestrationItem, error)

	// AckOrchestrationItem commits a turn atomically and releases the lock:
	// all of commit is applied, together with deleting the messages locked
	// at fetch, or nothing is. It fails with [ErrInvalidLockToken] when the
	// lock is no longer held (and then changes nothing). A permanent error
	// means nothing was written and the lock is still held; a retryable one
	// may hide a commit whose response was lost: retry with the same token
	// and commit (see "Ambiguous outcomes" in the package documentation).
	AckOrchestrationItem(ctx context.Context, lockToken string, commit TurnCommit) error

	// AbandonOrchestrationItem releases the lock without committing. A
	// non-zero delay hides the instance's currently visible messages for
	// that long; ignoreAttempt undoes the fetch's attempt increment (floor
	// 0). An unknown token is an error.
	AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error

	// RenewOrchestrationItemLock extends a live lock to now+extendFor. An
	// unknown, expired or released lock is an error.
	RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error

	// Read returns the latest execution's history in event-id order; an
	// unknown instance has an empty history. A stored event that cannot be
	// decoded is an error wrapping [ErrCorruptData].
	Read(ctx context.Context, instance string) ([]Event, error)

	// ReadWithExecution returns one execution's history, as [Provider.Read].
	ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]Event, error)

	// AppendWithExecution stores events in an execution's history, for
	// tests and tools. Event id 0 and ids already stored are rejected.
	AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []Event) error

	// EnqueueForWorker puts an activity on the worker queue, visible now.
	EnqueueForWorker(ctx context.Context, item ActivityExecuteItem) error

	// FetchWorkItem locks the oldest visible activity that passes tags and
	// the session rules and returns it. With session nil only activities
	// without a session qualify; otherwise also those of sessions the owner
	// holds or nobody holds (claimed on fetch). A [TagNone] filter returns
	// nil at once. Returns nil, nil when nothing qualifies.
	FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *SessionFetchConfig, tags TagFilter) (*LockedWorkItem, error)

	// AckWorkItem deletes a locked activity and, when completion is
	// non-nil, enqueues it (an [ActivityCompletedItem] or
	// [ActivityFailedItem]) on the orchestrator queue, atomically. A nil
	// completion drops the result. Fails with [ErrInvalidLockToken] when the
	// item is gone or its lock expired. A retryable error may hide an ack
	// that was applied: retry with the same token and completion.
	AckWorkItem(ctx context.Context, lockToken string, completion WorkItem) error

	// RenewWorkItemLock extends a live activity lock to now+extendFor.
	// Failure is how a worker learns its activity was cancelled.
	RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error

	// AbandonWorkItem unlocks an activity, visible again after delay.
	// ignoreAttempt undoes the fetch's attempt increment (floor 0).
	AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error

	// RenewSessionLock extends to now+extendFor the live sessions owned by
	// any of ownerIDs that saw activity within idleTimeout, and returns how
	// many it extended.
	RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error)

	// CleanupOrphanedSessions deletes expired sessions that no queued
	// activity references and returns how many it deleted.
	CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error)

	// EnqueueForOrchestrator puts a message on its target instance's queue,
	// visible after delay. It never creates the instance. An
	// [ActivityExecuteItem] is rejected with [ErrInvalidInput].
	EnqueueForOrchestrator(ctx context.Context, item WorkItem, delay time.Duration) error

	// CustomStatus returns the instance's custom status if its version is
	// above lastSeenVersion, otherwise nil (also for unknown instances).
	CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*CustomStatus, error)

	// KVValue returns one key of the instance's KV store as clients see it
	// (the current execution's writes included). ok is false when the key
	// or the instance does not exist.
	KVValue(ctx context.Context, instance, key string) (value string, ok bool, err error)

	// KVValues returns every live key of the instance's KV store as
	// clients see it; empty for unknown instances.
	KVValues(ctx context.Context, instance string) (map[string]string, error)

	// InstanceStats describes the instance's current execution; nil for
	// unknown instances.
	InstanceStats(ctx context.Context, instance string) (*SystemStats, error)
}

// Describer is implemented by providers that report a name and version for
// logs. See [NameOf] and [VersionOf].
type Describer interface {
	Name() string
	Version() string
}

// NameOf returns p's name, or "unknown" if p does not implement [Describer].
func NameOf(p Provider) string {
	if d, ok := p.(Describer); ok {
		return d.Name()
	}
	return "unknown"
}

// VersionOf returns p's version, or "0.0.0" if p does not implement
// [Describer].
func VersionOf(p Provider) string {
	if d, ok := p.(Describer); ok {
		return d.Version()
	}
	return "0.0.0"
}

// Admin is the management capability: listing, inspection, deletion and
// pruning. A provider offers it by implementing it too; find it with
// [AdminOf]. [GetInstanceTree] and [DeleteInstance] build on it.
type Admin interface {
	// ListInstances returns every instance id, newest first where the
	// store can tell, pending ones ([StatusPending]) included.
	ListInstances(ctx context.Context) ([]string, error)
	// ListInstancesByStatus returns the instances whose current execution
	// has status; [StatusPending] lists the pending ones.
	ListInstancesByStatus(ctx context.Context, status string) ([]string, error)
	// ListExecutions returns the instance's execution ids in ascending
	// order; empty for unknown instances.
	ListExecutions(ctx context.Context, instance string) ([]uint64, error)
	// ReadHistoryWithExecutionID returns one execution's events.
	ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]Event, error)
	// ReadHistory returns the latest execution's events.
	ReadHistory(ctx context.Context, instance string) ([]Event, error)
	// LatestExecutionID returns the highest execution id; 1 for unknown
	// instances.
	LatestExecutionID(ctx context.Context, instance string) (uint64, error)
	// InstanceInfo describes an instance and its current execution, or a
	// pending instance from its queued start ([PendingInstanceInfo]).
	// Unknown instances fail with [ErrNotFound].
	InstanceInfo(ctx context.Context, instance string) (*InstanceInfo, error)
	// ExecutionInfo describes one execution. Unknown executions fail with
	// [ErrNotFound].
	ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*ExecutionInfo, error)
	// SystemMetrics counts instances, executions and events.
	SystemMetrics(ctx context.Context) (SystemMetrics, error)
	// QueueDepths counts unlocked messages on each queue.
	QueueDepths(ctx context.Context) (QueueDepths, error)
	// ListChildren returns the direct children of an instance, any order.
	ListChildren(ctx context.Context, instance string) ([]string, error)
	// ParentID returns the instance's parent, or "" for a root. Unknown
	// instances fail with [ErrNotFound].
	ParentID(ctx context.Context, instance string) (string, error)
	// DeleteInstancesAtomic deletes every listed instance and all its data
	// (history, executions, queue rows, locks, KV), all or nothing. Without
	// force a running instance fails it with [ErrStillRunning]; a child of a
	// listed instance that is not listed fails it with [ErrTreeChanged].
	DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (DeleteInstanceResult, error)
	// DeleteInstanceBulk deletes terminal root instances that match filter,
	// each with its whole tree. Running instances are skipped. A call that
	// fails part-way returns, with its error, what it deleted before the
	// failure: a caller that retries adds the results up and lowers the
	// filter's Limit by the instances already deleted.
	DeleteInstanceBulk(ctx context.Context, filter InstanceFilter) (DeleteInstanceResult, error)
	// PruneExecutions deletes old executions of an instance, never the
	// current or a running one. KV data is not touched. Unknown instances
	// fail with [ErrNotFound].
	PruneExecutions(ctx context.Context, instance string, options PruneOptions) (PruneResult, error)
	// PruneExecutionsBulk prunes every instance that matches filter,
	// running ones included, and sums the results.
	PruneExecutionsBulk(ctx context.Context, filter InstanceFilter, options PruneOptions) (PruneResult, error)
}

// AdminOf returns p's management capability, if it has one.
func AdminOf(p Provider) (Admin, bool) {
	a, ok := p.(Admin)
	return a, ok
}
