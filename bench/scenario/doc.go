// Package scenario runs duradyn's end-to-end benchmark scenarios on each
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
// The meter reads item images (unmetered) before and after writes, to bill
// updates by the larger of the old and new item; those reads load the
// endpoint and sit on the writes' path, so DynamoDB systems run slower
// under the meter than without it (HelloCities5 with 300 instances on
// DynamoDB Local with SQS, three runs each way, interleaved: 61 to 70
// activities a second metered, 83 to 93 unmetered). So the scenarios that
// report throughput and latencies (HelloCities5 and its variants, the
// chains, the fan-outs) run each DynamoDB system twice: metered, for the
// requests, capacity and cost, then again on a fresh table without the
// meter, for the times; the metered run's throughput is kept in a column
// of its own (TestTimedScenarioRunsAgainWithoutTheMeter counts what
// reaches the endpoint: none of the meter's reads in the second run).
// StartAfterIdle, whose figure is a ratio of the round trip
// to the time of its requests, which only the meter measures, the history
// load, whose reads the meter adds no request to, and the scenarios that
// report costs only, run once, metered.
//
// [report.Result]: github.com/duradyn/duradyn/bench/report.Result
// [billing.Meter]: github.com/duradyn/duradyn/bench/billing.Meter
package scenario
