package scenario

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/console"
	"github.com/duradyn/duradyn/provider"
)

// Extra keys of FetchCost's console rows: what one load of a console read
// cost, on average over ConsoleLoads loads.
const (
	ExtraConsoleLoads           = "console loads"
	ExtraConsoleRequestsPerLoad = "console requests/load"
	ExtraConsoleRRUPerLoad      = "console RRU/load"
	// ExtraConsoleItemsPerLoad is the items a list page read: the entries
	// of the instances index its Queries examined and the instance
	// records it read (a GetItem each); the counts' reads are not in it.
	ExtraConsoleItemsPerLoad = "console items read/load"
)

// ConsoleLoads is how many times FetchCost loads each console read at each
// size, one load at a time, after one unmeasured load.
const ConsoleLoads = 20

// ConsoleSystemSuffix ends the System of FetchCost's console rows, after
// the system's name and before the read's label.
const ConsoleSystemSuffix = " console: "

// consoleSeedPrefix selects, by id prefix, the oldest seeded instances
// (at most 100 of them): a filter whose matches lie far from the newest
// page, which the page's examined budget bounds.
const consoleSeedPrefix = "seed-00000"

// consoleRead is one console read FetchCost measures: a page, or the
// counts per status alone (path "").
type consoleRead struct {
	label, path, note string
}

// consoleReads are the console reads FetchCost measures at each size.
var consoleReads = []consoleRead{
	{"first page", "/instances", "GET /instances: the newest 50 instances"},
	{"status=Completed", "/instances?status=Completed", "GET /instances?status=Completed: the newest 50 completed instances (every instance here)"},
	{"status=Failed", "/instances?status=Failed", "GET /instances?status=Failed: no instance matches, so the page reads up to its examined bound (20 times the page size) and links to the next"},
	{"prefix=" + consoleSeedPrefix, "/instances?prefix=" + consoleSeedPrefix, "GET /instances?prefix=" + consoleSeedPrefix + ": the oldest seeded instances, at most 100, beyond the examined bound on a large table"},
	{"counts", "", "the counts per status alone (SystemMetrics), which a list page reads when those it holds are older than CountsMaxAge (10 s)"},
}

// examinedRe reads the listing entries a list page says it read.
var examinedRe = regexp.MustCompile(`; (\d+) listing entries read`)

// consoleCost measures the web console over d's metered client at terminal
// terminal instances, with no runtime running: each of consoleReads loaded
// ConsoleLoads times, one result each. A list page reads the counts per
// status on every load (CountsMaxAge 1 ns), as one does every 10 s: the
// slower case. It fails when a read issues a Scan.
func consoleCost(ctx context.Context, d *Deployment, terminal int) ([]report.Result, error) {
	con, err := console.New(d.Client, func(o *console.Options) { o.CountsMaxAge = time.Nanosecond })
	if err != nil {
		return nil, err
	}
	admin, ok := provider.AdminOf(d.Provider)
	if !ok {
		return nil, fmt.Errorf("%s: the provider offers no management reads", FetchCostName)
	}
	var results []report.Result
	for _, read := range consoleReads {
		load := func() (billing.Usage, int, time.Duration, error) {
			if read.path == "" {
				return measureRead(d, func() (int, error) { _, err := admin.SystemMetrics(ctx); return 0, err })
			}
			return measureRead(d, func() (int, error) { return loadPage(ctx, con, read.path) })
		}
		r, err := consoleLoads(load, read.path != "")
		if err != nil {
			return nil, fmt.Errorf("console %s: %w", read.label, err)
		}
		r.Scenario, r.System = FetchCostName, d.System.Name+ConsoleSystemSuffix+read.label
		setExtra(&r, ExtraTerminalInstances, float64(terminal))
		r.Notes = joinNotes(d.System.Notes, fmt.Sprintf("%d terminal instances", terminal), "web console: "+read.note,
			fmt.Sprintf("%d loads one at a time after an unmeasured one; a list page reads its counts on every load; latency from request to response, served in the process", ConsoleLoads),
			d.meterNote())
		results = append(results, r)
	}
	return results, nil
}

// consoleLoads runs load once unmeasured, then ConsoleLoads times, and
// returns their latencies and per-load figures; items reports whether the
// load counts the items it read.
func consoleLoads(load func() (billing.Usage, int, time.Duration, error), items bool) (report.Result, error) {
	var r report.Result
	if _, _, _, err := load(); err != nil {
		return r, err
	}
	var total billing.Usage
	examined := 0
	for range ConsoleLoads {
		u, n, elapsed, err := load()
		if err != nil {
			return r, err
		}
		if scans := u.DynamoDB["Scan"]; scans != 0 {
			return r, fmt.Errorf("a load issued %d Scans", scans)
		}
		r.Latencies = append(r.Latencies, elapsed)
		total.RRU += u.RRU
		total.DynamoDB = addOps(total.DynamoDB, u.DynamoDB)
		examined += n
	}
	loads := float64(ConsoleLoads)
	setExtra(&r, ExtraConsoleLoads, loads)
	setExtra(&r, ExtraConsoleRequestsPerLoad, float64(total.DynamoDBRequests())/loads)
	setExtra(&r, ExtraConsoleRRUPerLoad, total.RRU/loads)
	if items {
		setExtra(&r, ExtraConsoleItemsPerLoad, float64(examined+total.DynamoDB["GetItem"])/loads)
	}
	return r, nil
}

// measureRead runs read once and returns what the meter counted meanwhile,
// the listing entries read says it examined, and its latency.
func measureRead(d *Deployment, read func() (int, error)) (billing.Usage, int, time.Duration, error) {
	before, began := d.Usage(), time.Now()
	examined, err := read()
	elapsed := time.Since(began)
	return d.Usage().Sub(before), examined, elapsed, err
}

// loadPage serves path from con as a browser on loopback would, and
// returns the listing entries the page says it read.
func loadPage(ctx context.Context, con *console.Console, path string) (int, error) {
	rec := httptest.NewRecorder()
	con.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1"+path, nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %.300s", path, rec.Code, body)
	}
	if strings.Contains(body, "counts unavailable") {
		return 0, fmt.Errorf("GET %s: the page shows no counts per status", path)
	}
	m := examinedRe.FindStringSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("GET %s: the page does not say how many listing entries it read", path)
	}
	return strconv.Atoi(m[1])
}

// addOps adds the counts of b to a, which it returns.
func addOps(a, b map[string]int) map[string]int {
	if a == nil {
		a = map[string]int{}
	}
	for op, n := range b {
		a[op] += n
	}
	return a
}

// SplitConsoleResults splits FetchCost's results into those of the round
// trips (one per size) and those of the console's reads, each in order.
func SplitConsoleResults(results []report.Result) (roundTrips, console []report.Result) {
	for _, r := range results {
		if strings.Contains(r.System, ConsoleSystemSuffix) {
			console = append(console, r)
		} else {
			roundTrips = append(roundTrips, r)
		}
	}
	return roundTrips, console
}
