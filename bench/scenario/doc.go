// Package scenario runs dynoxide's end-to-end benchmark scenarios on each
// system under test (the runtime on memprovider, and on the DynamoDB
// provider with and without SQS wake-up queues and behind a latency proxy)
// and, where a peer exists, on go-workflows' backends, and returns one
// [report.Result] per system.
//
// Every scenario takes its sizes as parameters ([Sizes]), so that the same
// code runs at full size in cmd/benche2e and tiny in the smoke test. Each
// system gets a fresh table (and queues) per scenario; DynamoDB and SQS
// requests are counted, and priced, by a [billing.Meter] on the clients the
// providers use, which also times each request. Completion times are taken
// in-process, when the runtime's terminal turn commits, so that measuring
// adds no polling requests. What only prepares a table (FetchCost's
// terminal instances) runs on a provider of its own, unmetered and without
// queues ([Deployment.StartSeedingRuntime]).
//
// The meter reads item images (unmetered) before writes, to bill updates by
// the larger of the old and new item; those reads sit on the writes' path,
// so DynamoDB systems run somewhat slower under the meter than without it
// (HelloCities5 on DynamoDB Local: 12-15 % fewer activities a second).
//
// [report.Result]: github.com/dynoxide/dynoxide/bench/report.Result
// [billing.Meter]: github.com/dynoxide/dynoxide/bench/billing.Meter
package scenario
