// Package provider defines the storage contract of durable orchestrations:
// the [Provider] interface, its optional [Admin] (management) and
// [Describer] interfaces, the types they exchange, and the errors they
// return. It is the Go form of duroxide's storage-provider contract, and
// reads and writes duroxide's JSON, so one history means the same in both.
//
// # Model
//
// A provider stores an append-only history of [Event]s per execution of an
// instance, and two peek-lock queues:
//
//   - the orchestrator queue holds every message that can start an
//     orchestration turn ([StartOrchestrationItem], completions, timers,
//     external events, cancellations, ...), keyed by the message's target
//     instance;
//   - the worker queue holds activities ([ActivityExecuteItem]).
//
// A turn locks one instance with all its visible messages
// ([Provider.FetchOrchestrationItem]) and commits with one atomic
// [Provider.AckOrchestrationItem]: history append, metadata, new work items
// and timers, cancelled activities, consumed messages and the lock release
// are applied together or not at all. An activity is locked by one worker
// ([Provider.FetchWorkItem]) and acknowledged with its completion, again
// atomically ([Provider.AckWorkItem]). Timers are orchestrator messages with
// delayed visibility; there is no timer queue. Delivery is at least once;
// the runtime discards duplicate completions.
//
// Providers store what they are given. They interpret events only where the
// contract says so: CustomStatusUpdated and the KeyValue events are
// materialized at ack ([CustomStatusChange], [KVDelta]), the target
// instance and visibility come from the work item ([WorkItem.TargetInstance],
// [TurnVisibleAt]), and a first turn takes its orchestration name from the
// queued start message ([StartFromMessages]). Execution pruning selects
// with [ExecutionsToPrune], and bulk operations with
// [InstanceFilter.Selects].
//
// # Calling order
//
// An orchestration dispatcher calls FetchOrchestrationItem, renews with
// RenewOrchestrationItemLock while the turn runs, then calls
// AckOrchestrationItem, or AbandonOrchestrationItem to give the turn back.
// A worker calls FetchWorkItem, renews with RenewWorkItemLock (a failed
// renewal means the activity was cancelled), then AckWorkItem or
// AbandonWorkItem. A session manager calls RenewSessionLock and
// CleanupOrphanedSessions periodically. Clients enqueue with
// EnqueueForOrchestrator and read with Read, CustomStatus, KVValue,
// KVValues and InstanceStats.
//
// # Results and errors
//
// "Nothing" is a nil result with a nil error: no work to fetch, no status
// change, an unknown instance where the contract returns empty (Read,
// CustomStatus, KVValue, InstanceStats, ListExecutions, ListChildren).
// Every error is an [*Error] carrying the operation and whether a retry may
// succeed ([IsRetryable]); its cause is one of the sentinels when the
// outcome is one a caller reacts to:
//
//   - [ErrInvalidLockToken]: ack, abandon or renew with a lock that is gone.
//     The message contains "Invalid lock token".
//   - [ErrNotFound]: InstanceInfo, ExecutionInfo, ParentID, PruneExecutions
//     and DeleteInstance on unknown instances. The message contains
//     "not found".
//   - [ErrStillRunning], [ErrSubOrchestration], [ErrTreeChanged]: refused
//     deletes.
//   - [ErrDuplicateEvent]: an event id the execution already holds.
//   - [ErrInvalidInput]: input the contract forbids; nothing was written.
//   - [ErrCorruptData]: stored data that does not decode ([Corrupt]). Read
//     returns it; FetchOrchestrationItem instead returns the item, still
//     locked, with [OrchestrationItem.HistoryError] set.
//
// A method that returns an error holds no lock for the caller. A
// permanent error from an ack means nothing of it was written.
//
// # Ambiguous outcomes
//
// A retryable error does not always mean that nothing happened: a request
// can be carried out by the store and its response lost (a timeout, a
// dropped connection, a 5xx sent after the commit). An ack that fails
// retryably may therefore have committed, and so may an enqueue. The
// caller must not assume either outcome; it retries the same call with the
// same arguments (for an ack, the same lock token and the same commit)
// until it gets a definite answer, and providers make that retry safe: a
// retried ack of a turn that was committed succeeds without applying it
// twice; a retried worker ack and abandon likewise. (A provider may bound
// how long and from where it recognises a retry: the DynamoDB provider
// recognises every retry from the same process within ten minutes, and a
// retried turn ack from any process until the instance's next turn of the
// same size; a worker ack retried by a process that did not make the first
// attempt may report [ErrInvalidLockToken] for a commit that happened,
// which a caller handles as a lost lock.) This is the rule database/sql/driver states for
// ErrBadConn, seen from the other side: a retryable error is a promise that
// the same call may be made again, not that the first one had no effect.
// An ack retried with a different commit for the same token is a
// different turn and may fail with [ErrInvalidLockToken] or
// [ErrDuplicateEvent]. An ack made after one for the same token has
// returned success is a second ack, not a retry, and may fail with
// [ErrInvalidLockToken] even with the same commit (the DynamoDB provider
// fails it when both go through one process: two concurrent acks of one
// turn then have one winner, as the suite's ConcurrentAckPrevention
// asks, even when the first one's response was lost).
//
// # Optional interfaces
//
// [Admin] adds listing, inspection, deletion and pruning; [AdminOf] finds
// it, and [GetInstanceTree] and [DeleteInstance] work over any Admin.
// [Describer] adds a name and version for logs; [NameOf] and [VersionOf]
// fall back to "unknown" and "0.0.0". Wrappers must forward the optional
// interfaces of the provider they wrap.
//
// # Names
//
// Methods are duroxide's, in Go form, without Get prefixes:
// get_custom_status is CustomStatus, get_kv_value is KVValue,
// get_kv_all_values is KVValues, get_instance_stats is InstanceStats,
// get_instance_info is InstanceInfo, get_parent_id is ParentID. The ack of
// an orchestration turn takes a [TurnCommit]. [Error.Op] keeps duroxide's
// snake_case operation names (the Op constants, such as
// [OpAckOrchestrationItem]) so that logs read the same across
// implementations.
//
// # Conformance
//
// Package providertest runs duroxide's whole validation suite (and
// duradyn's own checks) against any implementation; package memprovider is
// the in-memory reference implementation.
package provider
