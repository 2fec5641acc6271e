// Package memprovider is the in-memory reference implementation of the
// duroxide storage-provider contract ([provider.Provider], [provider.Admin]
// and [provider.Describer]).
//
// It serves three purposes: it is the executable reference for the
// contract (the conformance suite in package providertest runs against it,
// and every behaviour follows the SQLite provider bundled with duroxide),
// it is the fast backend for tests of the runtime, and it is what users
// pick for unit tests of their own orchestrations.
//
// State lives only in memory: nothing is persisted, and everything is lost
// when the [Provider] is garbage collected. Create one provider per test
// for isolation; providers share nothing with each other.
//
// # Storage model
//
// History events are stored as the JSON bytes [encoding/json] produces when
// they are appended, and decoded by the first read that needs them; later
// reads return the decoded events again, without a copy of what they
// reference, so callers must not modify a returned history. A stored event
// that no longer decodes makes [Provider.Read] fail with an error wrapping
// [provider.ErrCorruptData], and makes [Provider.FetchOrchestrationItem]
// return the item with HistoryError set (lock held, attempt counts
// incremented). Acks only append, so a turn can still be committed onto
// corrupted history. Queue payloads are stored in their JSON wire form too,
// so what a fetch returns never aliases what a caller enqueued.
//
// # Concurrency
//
// A Provider is safe for concurrent use by any number of goroutines. Every
// method runs under one mutex, so each call, and each ack in particular, is
// atomic: it applies completely or not at all, and no other call observes
// it half done. Only the two fetches block; the other methods return at
// once and do not consult their context.
//
// # Long polling
//
// [Provider.FetchOrchestrationItem] and [Provider.FetchWorkItem] long-poll:
// when no work is eligible they wait up to pollTimeout (real time) for some.
// They wake at once when another call changes state in a way that may have
// made work available (an enqueue, an ack, an abandon, a released lock), and
// also when the earliest future visibility time or lock expiry that could
// make work eligible arrives. A pollTimeout of 0 returns at once. If ctx is
// done before work turns up the fetch returns a nil item and a permanent
// [*provider.Error] wrapping ctx.Err(). Waiting starts no goroutine.
//
// # Where it differs from the SQLite provider
//
// Where SQLite's behaviour is an accident of its queries rather than part of
// the contract, this provider does the more useful thing:
//
//   - A fetch that meets an instance it cannot process yet (messages but no
//     start, and not only QueueMessage items) leaves those messages queued
//     untouched and looks at the next instance, instead of returning no
//     work; likewise after dropping orphan QueueMessage items. Such an
//     instance therefore never starves the rest of the queue.
//   - A fetch never loses a race for a lock it chose, so "no item" always
//     means no eligible work.
//   - DeleteInstancesAtomic counts in InstancesDeleted only listed instances
//     that exist (SQLite counts every listed id).
//   - CreatedAt and UpdatedAt of [provider.InstanceInfo] are real epoch
//     milliseconds (SQLite reports 0).
//
// # Time
//
// Visibility times and leases are kept in epoch milliseconds and compared at
// that precision, read from [Options.Now] (time.Now by default). Tests can
// inject a clock to expire leases without sleeping; long-poll waits still
// use real time.
package memprovider
