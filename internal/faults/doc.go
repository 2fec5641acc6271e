// Package faults injects failures into the DynamoDB and SQS clients of
// tests that run against real (emulated) services: the provider's tests,
// the runtime's, chaos tests and benchmarks.
//
// # What it injects
//
// An [Injector] holds [Rule] values; each picks requests (by operation
// name, by a predicate on the input, with a probability and a maximum
// count) and a [Fault] they meet:
//
//   - [Throttle] and [ServerError]: the request is not sent and fails with
//     the SDK's own error types, as after its last retry;
//   - [TransactionCanceled]: a TransactWriteItems fails with cancellation
//     reasons of the transaction's length;
//   - [TimeoutBefore]: the request is not sent and fails with a network
//     timeout; [LostResponse]: it is applied, and then fails the same way;
//     [Resend]: it is applied, and sent again as the SDK's retryer does
//     after a lost response;
//   - [Delay], [Hold] and [HoldResponse]: the request, or its response,
//     waits for a time or for a [Gate], for slow networks and for
//     deterministic interleavings;
//   - [Duplicate]: messages received from SQS are delivered again.
//
// Besides rules, [Injector.SetRealConflicts] fails writes that overlap in
// time on one item as DynamoDB does, and [Injector.SetIndexLag] makes
// global secondary indexes lag behind the table. A [Clock] skews or fakes
// time for providers and for the injector. [Injector.Stats] counts
// requests and faults per operation.
//
// # Where it sits
//
// The wrappers ([Injector.DynamoDB], [Injector.SQS]) sit at the level of
// the interfaces the provider and the signals take ([DynamoDB] and [SQS]
// are those interfaces), above the SDK's client and therefore
// above its retryer. Every injected fault reaches the caller as if the SDK
// had given up: retryable errors carry the SDK's
// [github.com/aws/aws-sdk-go-v2/aws/retry.MaxAttemptsError], and every
// error is a [github.com/aws/smithy-go.OperationError] with the service
// and operation names the SDK uses, so that code matching errors with
// errors.As sees what it would see in production. Below the retryer, a
// fault would mostly be retried away and tests would exercise the SDK
// rather than the code under test. Injected API errors carry the request
// ID "injected-by-faults" and say so in their messages.
//
// # Below the retryer
//
// To test what the SDK's retries themselves do, a [Transport] injects
// faults one level lower, as the http.RoundTripper of an SDK client's HTTP
// client ([Transport.HTTPClient] as the client's Options.HTTPClient). Its
// [NetRule] values meet every attempt the SDK makes, and the retryer meets
// their faults as it meets real network and server failures: a lost
// response ([LoseResponse], [ResetResponse], or [ServerStatus] after
// sending) is retried, so a write lands twice and a conditioned one fails
// its condition on its own earlier attempt; stalled or slow requests and
// responses ([StallRequest], [StallResponse], [DelayRequest],
// [SlowResponse]) wait for the caller's context. [Transport.Sent] counts
// the attempts that reached the service.
//
// # Sharing an injector
//
// Give every client of a test the same injector: wrap each process's (or
// provider's) own SDK clients with it, through the provider's options
// (Client: in.DynamoDB(dynamodb.NewFromConfig(cfg)), SQSClient:
// in.SQS(sqs.NewFromConfig(cfg))), as the package example shows.
//
// Rules and their counts then apply across providers, real conflicts are
// found between them, duplicates of a queue's messages may go to either,
// and the stats add up. [Injector.SetEnabled] turns everything off around
// set-up and final checks. The seed makes the injector's random choices
// reproducible for a sequential test; concurrent requests draw in no fixed
// order.
//
// # Index lag
//
// DynamoDB updates global secondary indexes asynchronously, so a query of
// an index may miss recent writes, show old values or show deleted rows.
// Emulators update indexes at once. With [Injector.SetIndexLag], each query
// of a lagging index reads the whole index partition it names for real,
// keeps that as a snapshot dated by the injector's clock, and answers from
// the newest snapshot at least the drawn lag old. The model only knows the
// past through these snapshots: a change made between two queries of a
// partition appears at the time of the later query, and the first query of
// a partition sees the present. A view can therefore be older than the
// drawn lag, by up to the time between two queries of its partition. Each
// lagged query costs a read of the whole partition, all of whose pages go
// through the wrapped client (and its meters). Other indexes and the table
// itself are never lagged; neither are reads by key.
//
// The query is then evaluated locally. The evaluator implements the
// expression syntax the provider uses, with #name and :value placeholders
// or plain attribute names: comparisons = <> < <= > >= (strings and
// binaries byte-wise, numbers exactly by value; booleans and nulls for
// equality), BETWEEN … AND …, begins_with, attribute_exists,
// attribute_not_exists, AND, OR, NOT and parentheses, with DynamoDB's
// precedence and its rules for absent attributes and mismatched types
// (false, except <> which is true). Projections name top-level attributes.
// Nested paths (a.b, a[0]), IN, contains, size and attribute_type,
// comparisons of maps, lists and sets, and the legacy parameters
// (KeyConditions, QueryFilter, AttributesToGet) are not supported: such a
// query fails with an error naming the expression that matches
// [ErrUnsupported], never with an approximate answer. Placeholders that
// are undefined or unused fail as DynamoDB fails them; reserved words used
// as plain names are not rejected.
package faults
