// Package dynamo is the DynamoDB + SQS implementation of
// [github.com/duradyn/duradyn/provider.Provider] and
// [github.com/duradyn/duradyn/provider.Admin].
//
// All state lives in one DynamoDB table (package tables). An instance's
// rows share one partition, so a turn loads with consistent Queries of it
// and commits with one TransactWriteItems fenced by the instance lock.
// Work is found through the sharded "ready" index and checked against the
// table before it is locked. docs/design.md describes every item, the
// request budget of every operation, and turns too large for a transaction.
//
// # Waiting for work
//
// SQS standard queues carry wake-up signals only (package queues). A fetch
// tries pending signals, sweeps the ready index once (a Scan while it is
// small, else a Query per shard), then waits for signals until its
// pollTimeout without DynamoDB requests, so a lost signal delays work by at
// most one pollTimeout. With [Options.ShortPoll] a fetch returns after its
// sweep.
//
// # Errors
//
// Every error is a [*provider.Error]: throttling, conflicts and network
// failures are retryable; invalid tokens, duplicate or oversized events,
// ids too long for a key and corrupt data are permanent, matched with
// errors.Is against package provider's sentinels.
package dynamo
