package bench_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/peer/goworkflows"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/bench/scenario"
	"github.com/duradyn/duradyn/localstack"
)

// The smoke test runs every scenario at tiny sizes (scenario.ShortSizes)
// on every system, against the shared emulator, and checks that each
// completes with plausible counts. It asserts no timings, so the scenarios
// run in parallel; TestShardsSpreadIndexWritesEvenly runs alone before
// them, since how many activities are handed to a waiting fetch depends
// on the machine's load.

func TestMain(m *testing.M) {
	// The bench module has its own go.mod, so localstack would look for
	// its emulator cache beside it: point it at the library's instead.
	if os.Getenv("DURADYN_CACHE_DIR") == "" {
		if dir := scenario.LibraryCacheDir(); dir != "" {
			os.Setenv("DURADYN_CACHE_DIR", dir)
		}
	}
	os.Exit(localstack.Main(m))
}

var sizes = scenario.ShortSizes()

// newEnv returns an Env on the shared emulator with every system and,
// when withPeers, every go-workflows backend (Redis if installed).
func newEnv(t *testing.T, withPeers bool) *scenario.Env {
	t.Helper()
	env := &scenario.Env{
		Endpoints: localstack.ForTest(t),
		Logf:      t.Logf,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if withPeers {
		env.Peers = goworkflows.Backends()
		env.PeerDir = t.TempDir()
		addr, stop, err := goworkflows.StartRedis(t.Context(), t.TempDir())
		if err != nil {
			env.RedisErr = err
		} else {
			env.RedisAddr = addr
			t.Cleanup(func() {
				if err := stop(); err != nil {
					t.Errorf("stop Redis: %v", err)
				}
			})
		}
	}
	return env
}

// bySystem indexes results by system, failing on a duplicate.
func bySystem(t *testing.T, results []report.Result) map[string]report.Result {
	t.Helper()
	out := map[string]report.Result{}
	for _, r := range results {
		if _, dup := out[r.System]; dup {
			t.Errorf("two results for %s", r.System)
		}
		out[r.System] = r
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkDuradyn checks the result of every duradyn system: the scenario's
// name, the activities, requests counted exactly for DynamoDB systems, and
// for those, with timesApart, times taken from an unmetered run
// ([checkTimes]).
func checkDuradyn(t *testing.T, results map[string]report.Result, scenarioName string, activities int, wantRequests, timesApart bool) {
	t.Helper()
	for _, s := range scenario.Systems() {
		r, ok := results[s.Name]
		if !ok {
			t.Errorf("%s: no result", s.Name)
			continue
		}
		if r.Scenario != scenarioName {
			t.Errorf("%s: scenario %q, want %q", s.Name, r.Scenario, scenarioName)
		}
		if strings.Contains(r.Notes, "FAILED") {
			t.Errorf("%s: %s", s.Name, r.Notes)
		}
		if r.Activities != activities {
			t.Errorf("%s: %d activities, want %d", s.Name, r.Activities, activities)
		}
		if !s.DynamoDB {
			if total(r.DynamoDB) != 0 || total(r.SQS) != 0 {
				t.Errorf("%s: requests counted on memprovider: %v %v", s.Name, r.DynamoDB, r.SQS)
			}
			continue
		}
		if wantRequests && (total(r.DynamoDB) == 0 || r.WRU+r.RRU == 0) {
			t.Errorf("%s: no DynamoDB requests or request units counted: %v, WRU %v, RRU %v", s.Name, r.DynamoDB, r.WRU, r.RRU)
		}
		checkTimes(t, r, timesApart)
	}
}

// checkTimes checks where a DynamoDB system's result took its times from:
// with apart, from a second, unmetered run, which the notes say and whose
// metered run's throughput is the extra column; otherwise from the one
// metered run, with no such column.
func checkTimes(t *testing.T, r report.Result, apart bool) {
	t.Helper()
	rate, ok := r.Extra[scenario.ExtraMeteredRate]
	switch {
	case apart && (!ok || rate <= 0 || !strings.Contains(r.Notes, "without the meter")):
		t.Errorf("%s: %s = %v (present %v), notes %q: want the times of an unmetered run, and the metered run's throughput", r.System, scenario.ExtraMeteredRate, rate, ok, r.Notes)
	case !apart && ok:
		t.Errorf("%s: %s = %v, want the times of the one metered run", r.System, scenario.ExtraMeteredRate, rate)
	}
}

// checkPeers checks that every peer backend has a result: run, or saying
// why not (Redis not installed).
func checkPeers(t *testing.T, env *scenario.Env, results map[string]report.Result, activities int) {
	t.Helper()
	for _, backend := range env.Peers {
		system := scenario.PeerSystem(backend)
		r, ok := results[system]
		switch {
		case !ok:
			t.Errorf("%s: no result", system)
		case backend == "redis" && env.RedisAddr == "":
			if !errors.Is(env.RedisErr, goworkflows.ErrNoRedis) {
				t.Errorf("Redis did not start: %v", env.RedisErr)
			}
			if !strings.Contains(r.Notes, "Redis was not installed") {
				t.Errorf("%s: notes %q do not say Redis was not installed", system, r.Notes)
			}
		case strings.Contains(r.Notes, "FAILED"):
			t.Errorf("%s: %s", system, r.Notes)
		case r.Activities != activities:
			t.Errorf("%s: %d activities, want %d", system, r.Activities, activities)
		}
	}
}

func TestHelloCities5(t *testing.T) {
	t.Parallel()
	env := newEnv(t, true)
	results, err := scenario.HelloCities5(t.Context(), env, sizes.HelloInstances, sizes.HelloRuntimes)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.HelloCities5Name, 5*sizes.HelloInstances, true, true)
	checkPeers(t, env, rs, 5*sizes.HelloInstances)
	for _, s := range scenario.Systems() {
		if n := len(rs[s.Name].Latencies); n != sizes.HelloInstances {
			t.Errorf("%s: %d latencies, want one per instance (%d)", s.Name, n, sizes.HelloInstances)
		}
		if cpu := rs[s.Name].CPU; cpu <= 0 {
			t.Errorf("%s: CPU %v, want the process's time in the measured part", s.Name, cpu)
		}
	}
}

func TestHelloCities5Load(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.HelloCities5Load(t.Context(), env, sizes.LoadInstances)
	if err != nil {
		t.Fatal(err)
	}
	variants := scenario.LoadVariants()
	if len(results) != len(variants) {
		t.Fatalf("%d results, want one per variant (%d)", len(results), len(variants))
	}
	for i, rt := range variants {
		r := results[i]
		if want := scenario.DynamoDBSQS + " (" + rt.Label() + ")"; r.System != want {
			t.Errorf("result %d: system %q, want %q", i, r.System, want)
		}
		if r.Scenario != scenario.HelloCities5LoadName || strings.Contains(r.Notes, "FAILED") {
			t.Errorf("%s: scenario %q, notes %q", r.System, r.Scenario, r.Notes)
		}
		if r.Activities != 5*sizes.LoadInstances || len(r.Latencies) != sizes.LoadInstances {
			t.Errorf("%s: %d activities and %d latencies, want %d and %d", r.System, r.Activities, len(r.Latencies), 5*sizes.LoadInstances, sizes.LoadInstances)
		}
		if total(r.DynamoDB) == 0 || r.WRU == 0 {
			t.Errorf("%s: no DynamoDB requests or write units counted: %v, WRU %v", r.System, r.DynamoDB, r.WRU)
		}
		if got := r.Extra[scenario.ExtraRuntimes]; got != float64(max(rt.Count, 1)) {
			t.Errorf("%s: %v runtimes recorded", r.System, got)
		}
		checkTimes(t, r, true)
	}
}

func TestFanOut(t *testing.T) {
	t.Parallel()
	env := newEnv(t, true)
	results, err := scenario.FanOut(t.Context(), env, sizes.FanOutSmall)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.FanOutName(sizes.FanOutSmall), sizes.FanOutSmall, true, true)
	checkPeers(t, env, rs, sizes.FanOutSmall)
	two := scenario.DynamoDBSQS + " (" + scenario.Runtimes{Count: 2}.Label() + ")"
	if r, ok := rs[two]; !ok || r.Activities != sizes.FanOutSmall || strings.Contains(r.Notes, "FAILED") || total(r.DynamoDB) == 0 {
		t.Errorf("%s: %+v, want %d activities with DynamoDB requests counted", two, r, sizes.FanOutSmall)
	}
	checkTimes(t, rs[two], true)
	for _, name := range append(systemNames(), two) {
		// Started, scheduled, then a scheduled and a completed event per
		// activity, and the completion.
		if got, want := rs[name].Extra["events"], float64(2+2*sizes.FanOutSmall); got != want {
			t.Errorf("%s: history of %v events, want %v", name, got, want)
		}
	}
}

// systemNames are the names of scenario.Systems.
func systemNames() []string {
	var names []string
	for _, s := range scenario.Systems() {
		names = append(names, s.Name)
	}
	return names
}

func TestStartAfterIdle(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.StartAfterIdle(t.Context(), env, sizes.IdleBeforeStart)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.StartAfterIdleName, 1, true, false)
	for _, s := range scenario.Systems() {
		r := rs[s.Name]
		if !s.DynamoDB {
			continue
		}
		// The floor of a one-activity round trip: the start and its
		// wake-up, the first turn's lock, a commit per turn, the activity's
		// ack (its claim made by the turn that handed it, the second turn's
		// lock kept by the first).
		if n := r.Extra[scenario.ExtraMinimalRequests]; n < 6 {
			t.Errorf("%s: %v minimal requests, want at least 6", s.Name, n)
		}
		took := r.Extra[scenario.ExtraMinimalTime]
		if ratio := r.Extra[scenario.ExtraRoundTripRatio]; took <= 0 || math.Abs(ratio-float64(r.Elapsed.Milliseconds())/took) > 0.01*ratio+1/took {
			t.Errorf("%s: round trip %v, minimal requests' time %v ms, ratio %v", s.Name, r.Elapsed, took, ratio)
		}
	}
}

func TestIdle(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.Idle(t.Context(), env, sizes.Idle)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	// Long-polling systems may make no request in a few seconds: only the
	// short-polling one must have swept the table.
	checkDuradyn(t, rs, scenario.IdleName, 0, false, false)
	if total(rs[scenario.DynamoDBShortPoll].DynamoDB) == 0 {
		t.Errorf("%s: no DynamoDB request while short polling", scenario.DynamoDBShortPoll)
	}
	for _, s := range scenario.Systems() {
		r := rs[s.Name]
		for _, k := range []string{scenario.ExtraDynamoDBPerMinute, scenario.ExtraSQSPerMinute, scenario.ExtraIdleMonth} {
			if _, ok := r.Extra[k]; !ok {
				t.Errorf("%s: no %q", s.Name, k)
			}
		}
		if got, want := r.Extra[scenario.ExtraDynamoDBPerMinute], float64(total(r.DynamoDB))/r.Elapsed.Minutes(); got != want {
			t.Errorf("%s: %v DynamoDB requests per minute, want %v", s.Name, got, want)
		}
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.History(t.Context(), env, sizes.HistoryEvents, sizes.HistoryReads)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.HistoryName(sizes.HistoryEvents), 0, true, false)
	for _, s := range scenario.Systems() {
		r := rs[s.Name]
		if got := r.Extra["events"]; got != float64(sizes.HistoryEvents) {
			t.Errorf("%s: %v events, want %d", s.Name, got, sizes.HistoryEvents)
		}
		if len(r.Latencies) != sizes.HistoryReads {
			t.Errorf("%s: %d reads measured, want %d", s.Name, len(r.Latencies), sizes.HistoryReads)
		}
		if s.DynamoDB && r.DynamoDB["Query"] < sizes.HistoryReads {
			t.Errorf("%s: %d Queries for %d reads", s.Name, r.DynamoDB["Query"], sizes.HistoryReads)
		}
		if s.DynamoDB && total(r.SQS) != 0 {
			t.Errorf("%s: SQS requests while reading: %v", s.Name, r.SQS)
		}
	}
}

func TestFetchCost(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	env.Systems = []scenario.System{mustSystem(t, scenario.DynamoDBSQS)}
	c := sizes.FetchCost
	all, err := scenario.FetchCost(t.Context(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	results, pages := scenario.SplitConsoleResults(all)
	checkConsoleResults(t, pages, c)
	if len(results) != len(c.Sizes) {
		t.Fatalf("%d results, want one per size (%d)", len(results), len(c.Sizes))
	}
	for i, r := range results {
		if r.Scenario != scenario.FetchCostName || r.System != scenario.DynamoDBSQS {
			t.Errorf("result %d is %s on %s", i, r.Scenario, r.System)
		}
		if got := r.Extra[scenario.ExtraTerminalInstances]; got < float64(c.Sizes[i]) {
			t.Errorf("result %d: %v terminal instances, want at least %d", i, got, c.Sizes[i])
		}
		if r.Activities != c.RoundTrips || len(r.Latencies) != c.RoundTrips {
			t.Errorf("result %d: %d activities and %d latencies, want %d", i, r.Activities, len(r.Latencies), c.RoundTrips)
		}
		if r.Extra[scenario.ExtraRequestsPerTurn] <= 0 || r.Extra[scenario.ExtraRRUPerTurn] <= 0 {
			t.Errorf("result %d: per-turn figures %v", i, r.Extra)
		}
		// QueueDepths: one Scan of the ready index. SystemMetrics: one
		// Query of the counter cells: not one per instance, nor per shard.
		if got := r.Extra[scenario.ExtraQueueDepthsRequests]; got != 1 {
			t.Errorf("result %d: QueueDepths made %v requests, want 1", i, got)
		}
		if got, want := r.Extra[scenario.ExtraSystemMetricsRequests], 1.0; got != want {
			t.Errorf("result %d: SystemMetrics made %v requests with %v terminal instances, want %v", i, got, r.Extra[scenario.ExtraTerminalInstances], want)
		}
	}
}

func TestFetchCostMeasuresWhatItSeededWhenTheBudgetRunsOut(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	env.Systems = []scenario.System{mustSystem(t, scenario.DynamoDBSQS)}
	// The budget runs out before the first chunk, or at worst after it.
	asked := 1001
	results, err := scenario.FetchCost(t.Context(), env, scenario.FetchCostConfig{Sizes: []int{asked}, RoundTrips: 1, SeedBudget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	results, _ = scenario.SplitConsoleResults(results)
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
	if got := r.Extra[scenario.ExtraTerminalInstances]; got >= float64(asked) {
		t.Errorf("%v terminal instances with a budget of 1ns, want fewer than the %d asked for", got, asked)
	}
	if want := fmt.Sprintf("%d terminal instances asked for", asked); !strings.Contains(r.Notes, want) || !strings.Contains(r.Notes, "budget of 1ns ran out") {
		t.Errorf("notes %q do not say that seeding stopped short of %d when its budget ran out", r.Notes, asked)
	}
	if r.Activities != 1 || r.Extra[scenario.ExtraRequestsPerTurn] <= 0 {
		t.Errorf("%d activities, %v requests a turn: the size was not measured", r.Activities, r.Extra[scenario.ExtraRequestsPerTurn])
	}
}

func mustSystem(t *testing.T, name string) scenario.System {
	t.Helper()
	s, err := scenario.SystemByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHelloCities5Payload(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.HelloCities5Payload(t.Context(), env, sizes.HelloInstances, sizes.PayloadBytes)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.HelloCities5PayloadName(sizes.PayloadBytes), 5*sizes.HelloInstances, true, true)
	for _, s := range scenario.Systems() {
		r := rs[s.Name]
		if !s.DynamoDB {
			continue
		}
		// Each activity's input is written at least twice (its scheduled
		// event and its activity row) and its output twice (its completion
		// message and its completed event), each a write unit per KB.
		if perActivity, floor := r.WRU/float64(r.Activities), 4*float64(sizes.PayloadBytes)/1024; perActivity < floor {
			t.Errorf("%s: %.1f WRU per activity with %d-byte payloads, want at least %.0f", s.Name, perActivity, sizes.PayloadBytes, floor)
		}
	}
	// Beside DynamoDBSQS, the same with payloads stored uncompressed: each
	// KB of hex digits is written about half a KB smaller compressed, in
	// the six or more writes of each activity's input and output.
	compressed, plain := rs[scenario.DynamoDBSQS], rs[scenario.DynamoDBSQSUncompressed]
	if plain.Activities != 5*sizes.HelloInstances || strings.Contains(plain.Notes, "FAILED") {
		t.Fatalf("%s: %d activities (%s), want %d", scenario.DynamoDBSQSUncompressed, plain.Activities, plain.Notes, 5*sizes.HelloInstances)
	}
	perCompressed, perPlain := compressed.WRU/float64(compressed.Activities), plain.WRU/float64(plain.Activities)
	t.Logf("WRU per activity: %.1f compressed, %.1f uncompressed", perCompressed, perPlain)
	if saved, want := perPlain-perCompressed, 3*float64(sizes.PayloadBytes)/1024; saved < want {
		t.Errorf("compressed payloads take %.1f WRU per activity, uncompressed %.1f: %.1f saved, want at least %.0f", perCompressed, perPlain, saved, want)
	}
}

func TestChain(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.Chain(t.Context(), env, sizes.ChainSteps)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	checkDuradyn(t, rs, scenario.ChainName(sizes.ChainSteps), sizes.ChainSteps, true, true)
	for _, s := range scenario.Systems() {
		r := rs[s.Name]
		if got, want := r.Extra["events"], float64(2+2*sizes.ChainSteps); got != want {
			t.Errorf("%s: history of %v events, want %v", s.Name, got, want)
		}
		if !s.DynamoDB {
			continue
		}
		// A step is at least the turn's read of its messages and its
		// commit, and the activity's ack (the turn's lock is kept from the
		// turn before, the activity handed claimed).
		for _, k := range []string{scenario.ExtraRequestsFirst, scenario.ExtraRequestsLast} {
			if n, ok := r.Extra[k]; !ok || n < 3 {
				t.Errorf("%s: %s = %v (present %v), want at least 3", s.Name, k, n, ok)
			}
		}
		for _, k := range []string{scenario.ExtraRRUFirst, scenario.ExtraRRULast, scenario.ExtraWRUFirst, scenario.ExtraWRULast} {
			if _, ok := r.Extra[k]; !ok {
				t.Errorf("%s: no %s", s.Name, k)
			}
		}
	}
}

func TestChainPayload(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.ChainPayload(t.Context(), env, sizes.ChainSteps, sizes.PayloadBytes)
	if err != nil {
		t.Fatal(err)
	}
	compressed, plain := checkChainPayload(t, results, scenario.ChainPayloadName(sizes.ChainSteps, sizes.PayloadBytes))
	if saved, want := plain-compressed, 3*float64(sizes.PayloadBytes)/1024; saved < want {
		t.Errorf("compressed payloads take %.1f WRU per step, uncompressed %.1f: %.1f saved, want at least %.0f", compressed, plain, saved, want)
	}
}

// checkChainPayload checks the results of a chain with payloads, scenario
// name, on DynamoDBSQS and its uncompressed variant, and returns the WRU
// per step of each in the last tenth (the steady state: no start, no end).
func checkChainPayload(t *testing.T, results []report.Result, name string) (compressed, plain float64) {
	t.Helper()
	rs := bySystem(t, results)
	if len(rs) != 2 {
		t.Errorf("results on %d systems, want %s and %s only", len(rs), scenario.DynamoDBSQS, scenario.DynamoDBSQSUncompressed)
	}
	perStep := map[string]float64{}
	for _, system := range []string{scenario.DynamoDBSQS, scenario.DynamoDBSQSUncompressed} {
		r, ok := rs[system]
		switch {
		case !ok:
			t.Fatalf("%s: no result", system)
		case r.Scenario != name:
			t.Errorf("%s: scenario %q, want %q", system, r.Scenario, name)
		case strings.Contains(r.Notes, "FAILED") || r.Activities != sizes.ChainSteps:
			t.Fatalf("%s: %d activities (%s), want %d", system, r.Activities, r.Notes, sizes.ChainSteps)
		}
		if got, want := r.Extra["events"], float64(2+2*sizes.ChainSteps); got != want {
			t.Errorf("%s: history of %v events, want %v", system, got, want)
		}
		checkTimes(t, r, true)
		if r.Dollars <= 0 || r.SQS == nil {
			t.Errorf("%s: $%v, SQS requests %v: want a price with SQS counted", system, r.Dollars, r.SQS)
		}
		for _, k := range []string{scenario.ExtraRequestsFirst, scenario.ExtraRequestsLast} {
			if n, ok := r.Extra[k]; !ok || n < 3 {
				t.Errorf("%s: %s = %v (present %v), want at least 3", system, k, n, ok)
			}
		}
		perStep[system] = r.Extra[scenario.ExtraWRULast]
		// As in TestHelloCities5Payload: each KB of input and of output is
		// written at least twice.
		if floor := 4 * float64(sizes.PayloadBytes) / 1024; perStep[system] < floor {
			t.Errorf("%s: %.1f WRU per step with %d-byte payloads, want at least %.0f", system, perStep[system], sizes.PayloadBytes, floor)
		}
	}
	compressed, plain = perStep[scenario.DynamoDBSQS], perStep[scenario.DynamoDBSQSUncompressed]
	t.Logf("WRU per step in the last tenth: %.1f compressed, %.1f uncompressed", compressed, plain)
	return compressed, plain
}

func TestEndpointCeiling(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.EndpointCeiling(t.Context(), env, sizes.Ceiling)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
	if r.Scenario != scenario.EndpointCeilingName {
		t.Errorf("scenario %q, want %q", r.Scenario, scenario.EndpointCeilingName)
	}
	// Every client makes at least one step, and each step's four requests
	// succeeded: its conditions (the lock's version, a new history row)
	// held, so the steps chained as a turn and an activity do.
	if r.Activities < 8 || len(r.Latencies) != r.Activities {
		t.Errorf("%d steps, %d latencies; want at least 8 steps, one latency each", r.Activities, len(r.Latencies))
	}
	if got := r.Extra[scenario.ExtraRequestsPerStep]; got != 4 {
		t.Errorf("%v requests a step, want 4", got)
	}
}

// TestEndpointShare: each round has the endpoint's result, the runtime's
// and every peer's, named by round; the runtime's row holds its share of
// the rate the endpoint allows at its requests an activity, and its CPU
// over the least of the in-process peers'; the last row holds the rounds'
// medians.
func TestEndpointShare(t *testing.T) {
	t.Parallel()
	env := newEnv(t, true)
	results, err := scenario.EndpointShare(t.Context(), env, scenario.ShareConfig{Rounds: sizes.ShareRounds, Instances: sizes.HelloInstances, Ceiling: sizes.Ceiling})
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	var shares, ratios []float64
	for round := 1; round <= sizes.ShareRounds; round++ {
		label := fmt.Sprintf(", round %d", round)
		hello, ok := rs[scenario.DynamoDBSQS+label]
		if !ok || hello.Activities != 5*sizes.HelloInstances {
			t.Fatalf("round %d: runtime's result %+v (present %v); want %d activities", round, hello, ok, 5*sizes.HelloInstances)
		}
		checkTimes(t, hello, true)
		ceiling := rs["dynamodb endpoint alone"+label]
		if ceiling.Activities < 8 {
			t.Errorf("round %d: the endpoint made %d steps; want one per client at least", round, ceiling.Activities)
		}
		for _, backend := range env.Peers {
			p, ok := rs[scenario.PeerSystem(backend)+label]
			if inProcess := backend != "redis"; ok != inProcess || (inProcess && p.Activities != 5*sizes.HelloInstances) {
				t.Errorf("round %d: %s: %+v (present %v); want a result of every peer whose store runs in the process, and none of Redis", round, backend, p, ok)
			}
		}
		requests := float64(hello.DynamoDBRequests()) / float64(hello.Activities)
		allowed := ceiling.ActivitiesPerSecond() * 4 / requests
		want := 100 * hello.ActivitiesPerSecond() / allowed
		if got := hello.Extra[scenario.ExtraShare]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("round %d: share %v%%, want %v%% (%.1f activities/s against %.1f allowed)", round, got, want, hello.ActivitiesPerSecond(), allowed)
		}
		least := hello.Extra[scenario.ExtraPeerCPU]
		if least <= 0 || hello.Extra[scenario.ExtraCPURatio] <= 0 {
			t.Errorf("round %d: peers' least CPU %v ms, ratio %v; want both measured", round, least, hello.Extra[scenario.ExtraCPURatio])
		}
		shares, ratios = append(shares, want), append(ratios, hello.Extra[scenario.ExtraCPURatio])
	}
	last := results[len(results)-1]
	if last.System != fmt.Sprintf("median of %d rounds", sizes.ShareRounds) {
		t.Fatalf("last row %q, want the medians", last.System)
	}
	slices.Sort(shares)
	slices.Sort(ratios)
	mid := func(vs []float64) float64 { return (vs[(len(vs)-1)/2] + vs[len(vs)/2]) / 2 }
	if got, want := last.Extra[scenario.ExtraShare], mid(shares); math.Abs(got-want) > 1e-9*want {
		t.Errorf("median share %v, want %v of %v", got, want, shares)
	}
	if got, want := last.Extra[scenario.ExtraCPURatio], mid(ratios); math.Abs(got-want) > 1e-9*want {
		t.Errorf("median CPU ratio %v, want %v of %v", got, want, ratios)
	}
}
