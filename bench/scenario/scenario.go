package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duradyn/duradyn/bench/report"
)

// ErrUnknownScenario is returned by Select for a name it does not know.
var ErrUnknownScenario = errors.New("scenario: unknown scenario")

// Sizes are the parameters of every scenario.
type Sizes struct {
	// HelloInstances is HelloCities5's number of instances, and
	// HelloCities5Payload1KB's.
	HelloInstances int
	// HelloRuntimes is the runtimes HelloCities5 runs them on, on each
	// duradyn system: one of default options unless set.
	HelloRuntimes Runtimes
	// LoadInstances is HelloCities5Load's number of instances: more than
	// one process keeps signals for.
	LoadInstances int
	// PayloadBytes is the activity payload of the scenarios selected as
	// "HelloCities5Payload1KB" and "Chain1000Payload1KB".
	PayloadBytes int
	// ChainSteps is the length of the chains of the scenarios selected as
	// "Chain1000" and "Chain1000Payload1KB".
	ChainSteps int
	// FanOutSmall and FanOutLarge are the activities of the scenarios
	// selected as "FanOut1000" and "FanOut10000".
	FanOutSmall, FanOutLarge int
	// IdleBeforeStart is how long StartAfterIdle idles.
	IdleBeforeStart time.Duration
	// Idle is how long Idle measures.
	Idle time.Duration
	// HistoryEvents and HistoryReads size History (selected as
	// "History10000").
	HistoryEvents, HistoryReads int
	// FetchCost sizes FetchCost.
	FetchCost FetchCostConfig
	// Ceiling is how long EndpointCeiling measures, alone and in each of
	// EndpointShare's rounds.
	Ceiling time.Duration
	// ShareRounds is how many rounds EndpointShare runs, each of
	// HelloInstances instances.
	ShareRounds int
	// Serverless sizes ServerlessCost.
	Serverless ServerlessConfig
	// Shards sizes Shards (selected as "Shards16").
	Shards ShardsConfig
	// Recovery sizes Recovery.
	Recovery RecoveryConfig
}

// ErrBadSize is wrapped by Sizes.Validate's error.
var ErrBadSize = errors.New("scenario: bad size")

// Validate reports, wrapping ErrBadSize, the first size that no scenario
// can run: a count below one, a negative payload or duration.
func (s Sizes) Validate() error {
	for _, c := range []struct {
		name string
		n    int
	}{
		{"HelloInstances", s.HelloInstances}, {"LoadInstances", s.LoadInstances}, {"ChainSteps", s.ChainSteps},
		{"FanOutSmall", s.FanOutSmall}, {"FanOutLarge", s.FanOutLarge},
		{"HistoryEvents", s.HistoryEvents}, {"HistoryReads", s.HistoryReads},
		{"FetchCost.RoundTrips", s.FetchCost.RoundTrips},
		{"Serverless.Instances", s.Serverless.Instances}, {"Serverless.ChainSteps", s.Serverless.ChainSteps},
		{"ShareRounds", s.ShareRounds},
	} {
		if c.n < 1 {
			return fmt.Errorf("%w: %s is %d, want at least 1", ErrBadSize, c.name, c.n)
		}
	}
	if s.HelloRuntimes.Count < 0 || s.HelloRuntimes.Slots < 0 {
		return fmt.Errorf("%w: HelloRuntimes is %+v, want counts of 0 or more", ErrBadSize, s.HelloRuntimes)
	}
	if err := s.Shards.validate(); err != nil {
		return err
	}
	if s.PayloadBytes < 0 {
		return fmt.Errorf("%w: PayloadBytes is %d, want 0 or more", ErrBadSize, s.PayloadBytes)
	}
	for _, c := range []struct {
		name string
		d    time.Duration
	}{{"IdleBeforeStart", s.IdleBeforeStart}, {"Idle", s.Idle}, {"FetchCost.SeedBudget", s.FetchCost.SeedBudget}, {"Ceiling", s.Ceiling}} {
		if c.d < 0 {
			return fmt.Errorf("%w: %s is %v, want 0 or more", ErrBadSize, c.name, c.d)
		}
	}
	return nil
}

// DefaultSizes are the full benchmark's sizes.
func DefaultSizes() Sizes {
	return Sizes{
		HelloInstances:  100,
		LoadInstances:   300,
		PayloadBytes:    1024,
		ChainSteps:      1000,
		FanOutSmall:     1000,
		FanOutLarge:     10000,
		IdleBeforeStart: 60 * time.Second,
		Idle:            5 * time.Minute,
		HistoryEvents:   10000,
		HistoryReads:    5,
		FetchCost:       FetchCostConfig{Sizes: []int{10, 100000}, RoundTrips: 5, SeedBudget: 50 * time.Minute},
		Ceiling:         20 * time.Second,
		ShareRounds:     5,
		Serverless:      ServerlessConfig{Instances: 100, ChainSteps: 1000},
		Shards:          ShardsConfig{Shards: 16, ChainSteps: 1000, Instances: 4000, FanOut: 10000},
		Recovery:        RecoveryConfig{Rounds: 8, LongActivity: 2 * time.Minute},
	}
}

// ShortSizes are the sizes of a quick run (the smoke test, -short): a few
// iterations of each scenario.
func ShortSizes() Sizes {
	return Sizes{
		HelloInstances:  3,
		LoadInstances:   4,
		PayloadBytes:    1024,
		ChainSteps:      20,
		FanOutSmall:     10,
		FanOutLarge:     30,
		IdleBeforeStart: 2 * time.Second,
		Idle:            5 * time.Second,
		HistoryEvents:   40,
		HistoryReads:    2,
		FetchCost:       FetchCostConfig{Sizes: []int{2, 20}, RoundTrips: 2, SeedBudget: time.Minute},
		Ceiling:         time.Second,
		ShareRounds:     2,
		Serverless:      ServerlessConfig{Instances: 3, ChainSteps: 20},
		Shards:          ShardsConfig{Shards: 4, ChainSteps: 20, Instances: 40, FanOut: 30},
		Recovery:        RecoveryConfig{Rounds: 1, LongActivity: 10 * time.Second},
	}
}

// Scenario is one scenario, runnable on an Env.
type Scenario struct {
	// Name selects the scenario ("HelloCities5", "FanOut1000", ...): the
	// name of its full-size variant, whatever the sizes.
	Name string
	// Run runs it on every system of env and returns one result per system
	// (and per peer and size where it has them), with an error wrapping
	// ErrScenario for each duradyn system that failed; results of failed
	// systems say what failed in their Notes.
	Run func(ctx context.Context, env *Env) ([]report.Result, error)
}

// All returns every scenario, in the order a full run takes them.
func All(s Sizes) []Scenario {
	return []Scenario{
		{HelloCities5Name, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return HelloCities5(ctx, env, s.HelloInstances, s.HelloRuntimes)
		}},
		{EndpointCeilingName, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return EndpointCeiling(ctx, env, s.Ceiling)
		}},
		{EndpointShareName, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return EndpointShare(ctx, env, ShareConfig{Rounds: s.ShareRounds, Instances: s.HelloInstances, Ceiling: s.Ceiling})
		}},
		{HelloCities5LoadName, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return HelloCities5Load(ctx, env, s.LoadInstances)
		}},
		{"HelloCities5Payload1KB", func(ctx context.Context, env *Env) ([]report.Result, error) {
			return HelloCities5Payload(ctx, env, s.HelloInstances, s.PayloadBytes)
		}},
		{"Chain1000", func(ctx context.Context, env *Env) ([]report.Result, error) { return Chain(ctx, env, s.ChainSteps) }},
		{"Chain1000Payload1KB", func(ctx context.Context, env *Env) ([]report.Result, error) {
			return ChainPayload(ctx, env, s.ChainSteps, s.PayloadBytes)
		}},
		{"Chain1000PayloadRandom1KB", func(ctx context.Context, env *Env) ([]report.Result, error) {
			return ChainPayloadRandom(ctx, env, s.ChainSteps, s.PayloadBytes)
		}},
		{"FanOut1000", func(ctx context.Context, env *Env) ([]report.Result, error) { return FanOut(ctx, env, s.FanOutSmall) }},
		{"FanOut10000", func(ctx context.Context, env *Env) ([]report.Result, error) { return FanOut(ctx, env, s.FanOutLarge) }},
		{"Shards16", func(ctx context.Context, env *Env) ([]report.Result, error) { return Shards(ctx, env, s.Shards) }},
		{StartAfterIdleName, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return StartAfterIdle(ctx, env, s.IdleBeforeStart)
		}},
		{IdleName, func(ctx context.Context, env *Env) ([]report.Result, error) { return Idle(ctx, env, s.Idle) }},
		{RecoveryName, func(ctx context.Context, env *Env) ([]report.Result, error) { return Recovery(ctx, env, s.Recovery) }},
		{"History10000", func(ctx context.Context, env *Env) ([]report.Result, error) {
			return History(ctx, env, s.HistoryEvents, s.HistoryReads)
		}},
		{FetchCostName, func(ctx context.Context, env *Env) ([]report.Result, error) { return FetchCost(ctx, env, s.FetchCost) }},
		{ServerlessCostName, func(ctx context.Context, env *Env) ([]report.Result, error) {
			return ServerlessCost(ctx, env, s.Serverless)
		}},
	}
}

// Select returns the scenarios of all named in names (a comma-separated
// list; empty selects all), in all's order.
func Select(all []Scenario, names string) ([]Scenario, error) {
	if strings.TrimSpace(names) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var out []Scenario
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
			delete(want, s.Name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("%w: %q", ErrUnknownScenario, n)
	}
	return out, nil
}
