package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/bench/peer/goworkflows"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/bench/scenario"
	"github.com/duradyn/duradyn/internal/linelog"
	"github.com/duradyn/duradyn/localstack"
)

// warmUpInstances is the size of the unrecorded HelloCities5 run that
// warms the emulator up before the first measurement: DynamoDB Local's
// JVM compiles its hot paths over the first thousand or so activities.
// After a warm-up of 20 instances, the first system measured ran
// HelloCities5 about 30 % slower than the same system measured again
// right after it.
const warmUpInstances = 300

// config is what the flags say.
type config struct {
	out       string
	short     bool
	scenarios string
	systems   string
	peers     string
	// cpuProfile is the file a CPU profile of the scenarios (not of the
	// start-up and warm-up) is written to; "" writes none.
	cpuProfile string
	// merge writes into the results already in out, replacing or adding
	// the run's scenarios only (report.Merge).
	merge bool
	sizes scenario.Sizes
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benche2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.out, "out", "results", "directory the results are written to")
	fs.BoolVar(&c.short, "short", false, "tiny sizes (a few iterations of each scenario); size flags given explicitly still apply")
	fs.StringVar(&c.scenarios, "scenarios", "", "comma-separated scenarios to run (HelloCities5, EndpointCeiling, EndpointShare, HelloCities5Load, HelloCities5Payload1KB, Chain1000, Chain1000Payload1KB, FanOut1000, FanOut10000, StartAfterIdle, Idle, History10000, FetchCost, ServerlessCost); empty runs all")
	fs.StringVar(&c.systems, "systems", "", "comma-separated duradyn systems to run on; empty runs all, \"none\" none (only the peers)")
	fs.StringVar(&c.peers, "peers", strings.Join(goworkflows.Backends(), ","), "comma-separated go-workflows backends to run beside duradyn; empty runs none")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark's process while the scenarios run (go tool pprof reads it)")
	fs.BoolVar(&c.merge, "merge", false, "write into the results already in -out: replace or add the sections and files of the scenarios run, keep the others (to run one scenario again, or a new one)")
	def := scenario.DefaultSizes()
	var sf sizeFlags
	sf.register(fs, def)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.sizes = def
	if c.short {
		c.sizes = scenario.ShortSizes()
	}
	if err := sf.apply(fs, &c.sizes); err != nil {
		return c, err
	}
	return c, c.sizes.Validate()
}

// sizeFlags are the flags that set scenario sizes.
type sizeFlags struct {
	hello, load, helloRuntimes, helloSlots, payload, chainSteps, fanSmall, fanLarge *int
	histEvents, histReads, fetchTrips, serverlessInstances, serverlessSteps         *int
	shareRounds                                                                     *int
	idleBefore, idle, ceiling, fetchBudget                                          *time.Duration
	fetchSizes                                                                      *string
}

// register defines the size flags on fs, with def's sizes as defaults.
func (f *sizeFlags) register(fs *flag.FlagSet, def scenario.Sizes) {
	f.hello = fs.Int("hello-instances", def.HelloInstances, "HelloCities5: instances")
	f.load = fs.Int("load-instances", def.LoadInstances, "HelloCities5Load: instances")
	f.helloRuntimes = fs.Int("hello-runtimes", 1, "HelloCities5: runtimes on each duradyn system, each with its own provider")
	f.helloSlots = fs.Int("hello-slots", 0, "HelloCities5: orchestration and worker slots of each duradyn runtime (0: the runtime's defaults, 2 and 2)")
	f.payload = fs.Int("payload-bytes", def.PayloadBytes, "HelloCities5Payload1KB and Chain1000Payload1KB: bytes of filler in each activity's input and output")
	f.chainSteps = fs.Int("chain-steps", def.ChainSteps, "Chain1000 and Chain1000Payload1KB: activities in the chain")
	f.fanSmall = fs.Int("fanout-small", def.FanOutSmall, "FanOut1000: activities")
	f.fanLarge = fs.Int("fanout-large", def.FanOutLarge, "FanOut10000: activities")
	f.idleBefore = fs.Duration("idle-before-start", def.IdleBeforeStart, "StartAfterIdle: idle time before the start")
	f.idle = fs.Duration("idle", def.Idle, "Idle: time measured")
	f.histEvents = fs.Int("history-events", def.HistoryEvents, "History10000: events in the history")
	f.histReads = fs.Int("history-reads", def.HistoryReads, "History10000: reads measured")
	f.fetchSizes = fs.String("fetchcost-sizes", joinInts(def.FetchCost.Sizes), "FetchCost: comma-separated numbers of terminal instances")
	f.fetchTrips = fs.Int("fetchcost-roundtrips", def.FetchCost.RoundTrips, "FetchCost: round trips measured at each size")
	f.ceiling = fs.Duration("ceiling", def.Ceiling, "EndpointCeiling: time measured, alone and in each round of EndpointShare")
	f.shareRounds = fs.Int("share-rounds", def.ShareRounds, "EndpointShare: rounds of EndpointCeiling, HelloCities5 and the peers' HelloCities5")
	f.serverlessInstances = fs.Int("serverless-instances", def.Serverless.Instances, "ServerlessCost: HelloCities5 instances through the Lambda host")
	f.serverlessSteps = fs.Int("serverless-chain-steps", def.Serverless.ChainSteps, "ServerlessCost: activities in the chain through the Lambda host")
	f.fetchBudget = fs.Duration("fetchcost-budget", def.FetchCost.SeedBudget, "FetchCost: the most time seeding may take (a size it does not reach is measured with what was seeded)")
}

// apply sets in sizes the size flags given explicitly, which override the
// defaults of either size set.
func (f *sizeFlags) apply(fs *flag.FlagSet, sizes *scenario.Sizes) error {
	var err error
	set := map[string]func(){
		"hello-instances":        func() { sizes.HelloInstances = *f.hello },
		"load-instances":         func() { sizes.LoadInstances = *f.load },
		"hello-runtimes":         func() { sizes.HelloRuntimes.Count = *f.helloRuntimes },
		"hello-slots":            func() { sizes.HelloRuntimes.Slots = *f.helloSlots },
		"payload-bytes":          func() { sizes.PayloadBytes = *f.payload },
		"chain-steps":            func() { sizes.ChainSteps = *f.chainSteps },
		"fanout-small":           func() { sizes.FanOutSmall = *f.fanSmall },
		"fanout-large":           func() { sizes.FanOutLarge = *f.fanLarge },
		"idle-before-start":      func() { sizes.IdleBeforeStart = *f.idleBefore },
		"idle":                   func() { sizes.Idle = *f.idle },
		"history-events":         func() { sizes.HistoryEvents = *f.histEvents },
		"history-reads":          func() { sizes.HistoryReads = *f.histReads },
		"fetchcost-sizes":        func() { sizes.FetchCost.Sizes, err = parseInts(*f.fetchSizes) },
		"fetchcost-roundtrips":   func() { sizes.FetchCost.RoundTrips = *f.fetchTrips },
		"ceiling":                func() { sizes.Ceiling = *f.ceiling },
		"share-rounds":           func() { sizes.ShareRounds = *f.shareRounds },
		"fetchcost-budget":       func() { sizes.FetchCost.SeedBudget = *f.fetchBudget },
		"serverless-instances":   func() { sizes.Serverless.Instances = *f.serverlessInstances },
		"serverless-chain-steps": func() { sizes.Serverless.ChainSteps = *f.serverlessSteps },
	}
	fs.Visit(func(fl *flag.Flag) {
		if fn, ok := set[fl.Name]; ok {
			fn()
		}
	})
	return err
}

func run(ctx context.Context, args []string) int {
	c, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return exitf("%v", err)
	}
	selected, err := scenario.Select(scenario.All(c.sizes), c.scenarios)
	if err != nil {
		return exitf("%v", err)
	}
	systems, err := selectSystems(c.systems)
	if err != nil {
		return exitf("%v", err)
	}
	p := &progress{w: os.Stdout}
	began := time.Now()
	startLoad := loadAverage()

	em, stopEndpoints, err := startEndpoints(ctx, p)
	if err != nil {
		return exitf("endpoints: %v", err)
	}
	defer stopEndpoints()

	env := &scenario.Env{Endpoints: em.Endpoints, Systems: systems, Peers: splitList(c.peers), Logf: p.logf}
	peerDir, err := os.MkdirTemp("", "benche2e-peers-")
	if err != nil {
		return exitf("%v", err)
	}
	defer os.RemoveAll(peerDir)
	env.PeerDir = peerDir
	if slices.Contains(env.Peers, "redis") && needsPeers(selected) {
		stopRedis := startRedis(ctx, env, p)
		defer stopRedis()
	}

	results, failures, err := runScenarios(ctx, c, env, selected, p)
	if err != nil {
		return exitf("%v", err)
	}

	header := runHeader(em.Endpoints, c, began, startLoad)
	write := report.WriteWithHeader
	if c.merge {
		write = report.Merge
	}
	if err := write(c.out, header, results); err != nil {
		failures = append(failures, fmt.Errorf("write results: %w", err))
	} else {
		p.logf("results written to %s (%d rows) after %v", c.out, len(results), time.Since(began).Round(time.Second))
	}
	if len(failures) > 0 {
		for _, err := range failures {
			fmt.Fprintf(os.Stderr, "benche2e: %v\n", err)
		}
		return 1
	}
	return 0
}

// startEndpoints starts the DynamoDB and SQS emulators every system and
// peer runs against, and returns them with the function that stops them
// (which logs rather than returns its error: it runs deferred, at exit).
func startEndpoints(ctx context.Context, p *progress) (*localstack.Emulator, func(), error) {
	opts := func(o *localstack.Options) {
		o.Logger = linelog.New(func(line string) { p.logf("%s", line) }, slog.LevelInfo)
		o.SQSEmulator = sqsEmulator()
		if os.Getenv("DURADYN_CACHE_DIR") == "" {
			o.CacheDir = scenario.LibraryCacheDir()
		}
	}
	p.logf("starting DynamoDB and SQS")
	em, err := localstack.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := em.Stop(sctx); err != nil {
			p.logf("stopping the emulators: %v", err)
		}
	}
	p.logf("DynamoDB at %s, SQS at %s (%s)", em.DynamoDBURL, em.SQSURL, em.Source)
	return em, stop, nil
}

// startRedis starts the Redis the go-workflows redis peer needs, in
// env.PeerDir, and records its address in env, or the error that stopped
// it (the redis peer then records it as why it did not run; a missing Redis
// fails nothing else). It returns the function that stops Redis, which does
// nothing when Redis did not start.
func startRedis(ctx context.Context, env *scenario.Env, p *progress) func() {
	addr, stopRedis, err := goworkflows.StartRedis(ctx, env.PeerDir)
	if err != nil {
		env.RedisErr = err
		p.logf("Redis: %v", err)
		return func() {}
	}
	env.RedisAddr = addr
	p.logf("Redis at %s", addr)
	return func() {
		if err := stopRedis(); err != nil {
			p.logf("stopping Redis: %v", err)
		}
	}
}

// runScenarios warms the emulator up, then runs the selected scenarios in
// order (under the CPU profile, when one is asked for) and returns their
// results and failures. A scenario's failure does not stop the others; the
// error is only for a CPU profile that cannot be started.
func runScenarios(ctx context.Context, c config, env *scenario.Env, selected []scenario.Scenario, p *progress) ([]report.Result, []error, error) {
	var results []report.Result
	var failures []error
	p.logf("warming the emulator up (%d instances, not recorded)", warmUpInstances)
	if err := scenario.WarmUp(ctx, env, warmUpInstances); err != nil {
		failures = append(failures, fmt.Errorf("warm-up: %w", err))
	}
	stopProfile := func() {}
	if c.cpuProfile != "" {
		var err error
		if stopProfile, err = startCPUProfile(c.cpuProfile); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range selected {
		if ctx.Err() != nil {
			failures = append(failures, fmt.Errorf("%s: not run: %w", s.Name, context.Cause(ctx)))
			continue
		}
		p.logf("=== %s", s.Name)
		rs, err := s.Run(ctx, env)
		results = append(results, rs...)
		if err != nil {
			failures = append(failures, err)
		}
	}
	stopProfile()
	return results, failures, nil
}

// needsPeers reports whether a selected scenario runs peers.
func needsPeers(selected []scenario.Scenario) bool {
	for _, s := range selected {
		if s.Name == scenario.HelloCities5Name || strings.HasPrefix(s.Name, "FanOut") {
			return true
		}
	}
	return false
}

// noSystems is the -systems value that runs no duradyn system, only the
// peers.
const noSystems = "none"

func selectSystems(names string) ([]scenario.System, error) {
	list := splitList(names)
	if len(list) == 0 {
		return scenario.Systems(), nil
	}
	if len(list) == 1 && list[0] == noSystems {
		return []scenario.System{}, nil
	}
	var out []scenario.System
	for _, n := range list {
		s, err := scenario.SystemByName(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// runHeader is the text above the results: when, on what, and how to read
// the request units.
func runHeader(ep localstack.Endpoints, c config, began time.Time, startLoad string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run on %s UTC, %s, %s/%s, %d CPUs%s.", began.UTC().Format("2006-01-02 15:04"), goVersion(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel())
	if startLoad != "" {
		fmt.Fprintf(&b, " Load average (1, 5, 15 min) at the start: %s; at the end: %s (the machine may be shared: timings are of this machine at that load).", startLoad, loadAverage())
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Command: `go run ./cmd/benche2e %s`.\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "DynamoDB and SQS are emulators (%s: DynamoDB Local and %s) on the same machine, not AWS: "+
		"latencies and throughput are the emulators' and the proxy's; the request counts are what the clients sent; "+
		"WRU and RRU are computed from those requests by DynamoDB's on-demand billing rules (item sizes read back from the table), "+
		"not measured on AWS, and dollars are at us-east-1 list prices: on demand, and, in the column so named, "+
		"on a table in provisioned-capacity mode whose capacity auto scaling keeps 70%% consumed (a steady workload; "+
		"the capacity an idle table keeps and the throttling of a burst above it are not priced). Before the first scenario, %d HelloCities5 instances ran unrecorded "+
		"on one DynamoDB system to warm DynamoDB Local's JVM up.\n", ep.Source, sqsEmulator(), warmUpInstances)
	return b.String()
}

// goVersion is the output of `go version`, or the version this binary was
// built with.
func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}

// sqsEmulator is the embedded SQS emulator the run starts (when the
// environment names no endpoint): DURADYN_SQS_EMULATOR if set, else
// fauxqs, where the tests prefer moto. moto's long polls check their queue
// every 10 ms and take half a core of the machine the benchmark measures
// while they wait; SQS on AWS costs the process's host nothing.
func sqsEmulator() string {
	if e := os.Getenv(localstack.EnvSQSEmulator); e != "" {
		return e
	}
	return localstack.SQSEmulatorFauxqs
}

// loadAverage is the system's load averages over 1, 5 and 15 minutes, or
// "" where the system does not say.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

// cpuModel is ", " and the CPU's model name where the system says it.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return " (" + strings.TrimSpace(v) + ")"
		}
	}
	return ""
}

// progress prints timestamped lines; safe for concurrent use.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// startCPUProfile starts a CPU profile written to path, and returns what
// stops it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
