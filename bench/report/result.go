// Package report holds the figures of one benchmark run and writes them
// out: a markdown table per scenario and a chart (SVG) per scenario.
package report

import "time"

// Result is what one system measured in one scenario.
type Result struct {
	// Scenario names the scenario (HelloCities5, FanOut1000, ...).
	Scenario string
	// System names what ran it: "duradyn/memprovider",
	// "duradyn/dynamodb-local+sqs", "go-workflows/sqlite-file", ...
	System string
	// Activities is how many activities completed.
	Activities int
	// Elapsed is the wall time of the measured part.
	Elapsed time.Duration
	// Latencies are per-unit latencies (an instance start to completion,
	// a start after idle to completion, a history load); may be empty.
	Latencies []time.Duration
	// DynamoDB requests by operation name (GetItem, Query, ...); nil for
	// systems without DynamoDB.
	DynamoDB map[string]int
	// WRU and RRU are write and read request units computed by DynamoDB's
	// on-demand billing rules (package billing).
	WRU, RRU float64
	// WRUByItem is WRU by the kind of item written, index writes under the
	// kind followed by " in " and the index (billing.Usage.WRUByItem); nil
	// when not measured.
	WRUByItem map[string]float64
	// SQS requests by operation name (SendMessage, ReceiveMessage, ...).
	SQS map[string]int
	// Dollars is what the measured part would cost on AWS, at list prices
	// (package billing); zero when not measured.
	Dollars float64
	// ProvisionedDollars is what the measured part would cost on a table
	// in provisioned-capacity mode under auto scaling at its default
	// target utilization (package billing); zero when not measured.
	ProvisionedDollars float64
	// PeerCommands counts backend commands of a peer (Redis commands);
	// zero when not measured.
	PeerCommands int
	// CPU is the processor time, user and system, this process used in the
	// measured part (ProcessCPU): the runtime, the client driving the
	// workload and a store that runs in the process (memprovider,
	// go-workflows' SQLite), not an emulator or server in a process of
	// its own (DynamoDB Local, the SQS emulator, Redis). Zero when not
	// measured.
	CPU time.Duration
	// Notes says what a reader needs to interpret the row (fault-free,
	// proxy delay, what was skipped and why).
	Notes string
	// Extra holds scenario-specific figures (for example
	// "requests/minute" for the idle scenario), printed as extra columns.
	Extra map[string]float64
}
