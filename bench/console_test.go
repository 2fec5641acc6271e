package bench_test

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/bench/scenario"
	"github.com/duradyn/duradyn/dynamo"
)

// consoleReadLabels are the console reads FetchCost measures at each size.
var consoleReadLabels = []string{"first page", "status=Completed", "status=Failed", "prefix=seed-00000", "counts"}

// checkConsoleResults checks FetchCost's console results: every read at
// every size, loaded scenario.ConsoleLoads times, each load within the
// requests a list page or the counts make whatever the table holds, and
// the items a list page read counted.
func checkConsoleResults(t *testing.T, pages []report.Result, c scenario.FetchCostConfig) {
	t.Helper()
	if want := len(c.Sizes) * len(consoleReadLabels); len(pages) != want {
		t.Fatalf("%d console results, want %d (%d reads at %d sizes)", len(pages), want, len(consoleReadLabels), len(c.Sizes))
	}
	shards := float64(dynamo.DefaultShards)
	for i, r := range pages {
		label := consoleReadLabels[i%len(consoleReadLabels)]
		if r.Scenario != scenario.FetchCostName || r.System != scenario.DynamoDBSQS+scenario.ConsoleSystemSuffix+label {
			t.Errorf("console result %d is %s on %q, want %q", i, r.Scenario, r.System, label)
			continue
		}
		if len(r.Latencies) != scenario.ConsoleLoads || r.Extra[scenario.ExtraConsoleLoads] != scenario.ConsoleLoads {
			t.Errorf("%s: %d latencies, %v loads; want %d", r.System, len(r.Latencies), r.Extra[scenario.ExtraConsoleLoads], scenario.ConsoleLoads)
		}
		requests, items := r.Extra[scenario.ExtraConsoleRequestsPerLoad], r.Extra[scenario.ExtraConsoleItemsPerLoad]
		if label == "counts" {
			// SystemMetrics: the counter cells, and at most a Query per
			// shard for the instances that have not ended (none).
			if requests < 1 || requests > 1+shards {
				t.Errorf("%s: %v requests a load, want 1 to %v", r.System, requests, 1+shards)
			}
			continue
		}
		// A list page: a few rounds of Queries of the instances index (two
		// per shard each at most), a GetItem per instance shown (50 at
		// most), and the counts; not one request per instance.
		if most := 4*2*shards + 50 + 1 + shards; requests <= 0 || requests > most {
			t.Errorf("%s: %v requests a load, want 1 to %v", r.System, requests, most)
		}
		if r.Extra[scenario.ExtraConsoleRRUPerLoad] <= 0 {
			t.Errorf("%s: %v RRU a load", r.System, r.Extra[scenario.ExtraConsoleRRUPerLoad])
		}
		// Every index entry and record read at most once, and some read.
		if most := 2 * (r.Extra[scenario.ExtraTerminalInstances] + float64(c.RoundTrips) + 1); items <= 0 || items > most {
			t.Errorf("%s: %v items read a load, want 1 to %v", r.System, items, most)
		}
		if !strings.Contains(r.Notes, "web console: GET /instances") {
			t.Errorf("%s: notes %q do not say which page was loaded", r.System, r.Notes)
		}
	}
}
