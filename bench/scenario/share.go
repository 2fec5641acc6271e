package scenario

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/duradyn/duradyn/bench/peer/goworkflows"
	"github.com/duradyn/duradyn/bench/report"
)

// EndpointShareName is the name of the EndpointShare scenario.
const EndpointShareName = "EndpointShare"

// ShareConfig sizes the EndpointShare scenario.
type ShareConfig struct {
	// Rounds is how many times EndpointCeiling, HelloCities5 and the
	// peers' HelloCities5 run, one after the other.
	Rounds int
	// Instances is each round's HelloCities5 size.
	Instances int
	// Ceiling is how long each round's EndpointCeiling measures.
	Ceiling time.Duration
}

// validate reports, wrapping ErrBadSize, a size the scenario cannot run.
func (c ShareConfig) validate() error {
	if c.Rounds < 1 || c.Instances < 1 || c.Ceiling <= 0 {
		return fmt.Errorf("%w: EndpointShare %+v: want a round or more, an instance or more and a ceiling of some time", ErrBadSize, c)
	}
	return nil
}

// Extra figures of the EndpointShare scenario, on each round's duradyn row
// and, as medians, on the summary row.
const (
	// ExtraCeilingRate is the round's EndpointCeiling in steps a second.
	ExtraCeilingRate = "endpoint steps/s"
	// ExtraAllowedRate is the rate of activities the endpoint allows at
	// HelloCities5's requests an activity: ceiling × 4 ÷ requests.
	ExtraAllowedRate = "allowed activities/s"
	// ExtraShare is HelloCities5's rate as a percentage of the allowed one.
	ExtraShare = "% of allowed"
	// ExtraPeerCPU is the least CPU per activity of the round's go-workflows
	// backends whose store runs in the benchmark's process.
	ExtraPeerCPU = "go-workflows CPU ms/activity, least"
	// ExtraCPURatio is duradyn's CPU per activity over ExtraPeerCPU.
	ExtraCPURatio = "CPU ÷ go-workflows"
)

// EndpointShare runs, c.Rounds times, EndpointCeiling, HelloCities5 on
// DynamoDBSQS and HelloCities5 on each peer, alternating which of the
// endpoint and the runtime goes first, so that a change of the machine's
// speed during the run weighs on both alike. It reports each round's
// HelloCities5 share of the rate the endpoint allows (EndpointCeiling × 4
// ÷ requests per activity) and its CPU per activity over the least of the
// peers', of those whose store runs in the process (not Redis, whose
// server's CPU would not be counted), then the medians: one pair of runs moves by half between
// two hours of the same machine, so one pair decides nothing. It runs
// nothing without DynamoDBSQS.
func EndpointShare(ctx context.Context, env *Env, c ShareConfig) ([]report.Result, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	system, ok := env.system(DynamoDBSQS)
	if !ok {
		env.logf("%s: not run: it runs on %s only, which is not selected", EndpointShareName, DynamoDBSQS)
		return nil, nil
	}
	peers := *env
	peers.Peers = inProcessPeers(env.Peers)
	var results, rounds []report.Result
	for i := range c.Rounds {
		round, rest, err := shareRound(ctx, env, &peers, system, c, i)
		results = append(results, rest...)
		if err != nil {
			return append(results, round), err
		}
		rounds = append(rounds, round)
		results = append(results, round)
	}
	return append(results, medianRow(rounds)), nil
}

// shareRound runs round i (from 0): the duradyn result with the round's
// figures, and the other results (the ceiling's and those of peersEnv's
// peers).
func shareRound(ctx context.Context, env, peersEnv *Env, system System, c ShareConfig, i int) (report.Result, []report.Result, error) {
	label := fmt.Sprintf(", round %d", i+1)
	var ceiling, hello report.Result
	var err error
	runCeiling := func() {
		if err != nil {
			return
		}
		var rs []report.Result
		rs, err = EndpointCeiling(ctx, env, c.Ceiling)
		ceiling = rs[0]
	}
	runHello := func() {
		if err != nil {
			return
		}
		timeout := 5*time.Minute + time.Duration(c.Instances)*100*time.Millisecond
		hello, err = onSystem(ctx, env, system, EndpointShareName, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
			return helloCities5On(ctx, d, c.Instances, Runtimes{})
		})
	}
	if i%2 == 0 {
		runCeiling()
		runHello()
	} else {
		runHello()
		runCeiling()
	}
	hello.Scenario, hello.System = EndpointShareName, system.Name+label
	ceiling.Scenario, ceiling.System = EndpointShareName, ceiling.System+label
	if err != nil {
		return hello, []report.Result{ceiling}, err
	}
	peers := runPeers(ctx, peersEnv, EndpointShareName, func(ctx context.Context, pc goworkflows.Config) (report.Result, error) {
		pc.Instances = c.Instances
		return goworkflows.HelloCities5(ctx, pc)
	})
	for j := range peers {
		peers[j].System += label
	}
	shareFigures(&hello, ceiling, peers)
	return hello, append([]report.Result{ceiling}, peers...), nil
}

// shareFigures sets hello's Extra figures from the round's ceiling and
// peers.
func shareFigures(hello *report.Result, ceiling report.Result, peers []report.Result) {
	requests := hello.PerActivity(float64(hello.DynamoDBRequests()))
	steps := ceiling.ActivitiesPerSecond()
	setExtra(hello, ExtraCeilingRate, steps)
	if requests > 0 {
		allowed := steps * float64(len(stepRequests)) / requests
		setExtra(hello, ExtraAllowedRate, allowed)
		setExtra(hello, ExtraShare, 100*hello.ActivitiesPerSecond()/allowed)
	}
	if least, ok := leastPeerCPU(peers); ok && hello.Activities > 0 {
		mine := hello.CPU.Seconds() * 1000 / float64(hello.Activities)
		setExtra(hello, ExtraPeerCPU, least)
		setExtra(hello, ExtraCPURatio, mine/least)
	}
}

// leastPeerCPU is the least CPU per activity, in ms, of the peers that
// measured it.
func leastPeerCPU(peers []report.Result) (float64, bool) {
	least, ok := 0.0, false
	for _, p := range peers {
		if p.CPU <= 0 || p.Activities == 0 {
			continue
		}
		if ms := p.CPU.Seconds() * 1000 / float64(p.Activities); !ok || ms < least {
			least, ok = ms, true
		}
	}
	return least, ok
}

// inProcessPeers are the backends of peers whose store runs in the
// benchmark's process, so that its CPU is counted: all but Redis.
func inProcessPeers(backends []string) []string {
	return slices.DeleteFunc(slices.Clone(backends), func(b string) bool { return b == "redis" })
}

// medianRow sums rounds up: each Extra figure's median over the rounds.
func medianRow(rounds []report.Result) report.Result {
	r := report.Result{Scenario: EndpointShareName, System: fmt.Sprintf("median of %d rounds", len(rounds)),
		Notes: "each figure the median of the rounds' (the middle one of an odd count, the mean of the two middle ones of an even count)"}
	for _, k := range []string{ExtraCeilingRate, ExtraAllowedRate, ExtraShare, ExtraPeerCPU, ExtraCPURatio} {
		var vs []float64
		for _, round := range rounds {
			if v, ok := round.Extra[k]; ok {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			setExtra(&r, k, median(vs))
		}
	}
	return r
}

// median returns the median of vs (not empty).
func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}
