// Package dynamo is the DynamoDB + SQS implementation of
// [github.com/duradyn/duradyn/provider.Provider] and
// [github.com/duradyn/duradyn/provider.Admin].
//
// All state lives in one DynamoDB table shaped by package tables: each
// instance's metadata, lock, executions, queued messages, KV entries and
// history share one partition, so a turn loads with consistent Queries of
// one partition and commits with one TransactWriteItems, conditioned on the
// instance lock (the fencing check). Work is discovered through the sparse,
// sharded "ready" index and verified against the table before it is
// locked. docs/design.md describes every item, the request sequence and
// budget of every operation, and the protocol for turns too large for one
// transaction.
//
// # Waiting for work
//
// SQS standard queues carry wake-up signals only (package queues): after a
// commit the provider signals the dispatchers of every process; dispatchers
// in the same process are woken in memory. A fetch first tries the signals
// already pending, then sweeps the ready index once (one Scan while the
// index holds at most a few hundred rows, else one Query per shard, in
// parallel), then waits for signals until its pollTimeout and looks at
// the table again for each one. While it waits it makes no DynamoDB
// request. A lost signal therefore delays work by at most one pollTimeout:
// the next fetch's sweep finds it. With [Options.ShortPoll] a fetch returns
// right after its sweep.
//
// # Errors
//
// Every error is a [*provider.Error]: throttling, conflicts and network
// failures are retryable; invalid tokens, duplicate events, oversized
// events, ids too long for a key and corrupt stored data are permanent and
// matched with errors.Is against the sentinels of package provider.
package dynamo
