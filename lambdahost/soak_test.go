package lambdahost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/lambdasim"
	"github.com/duradyn/duradyn/lambdahost"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// soakLog records when each activity ran, per activity (instance and
// schedule id), and what each instance did when.
type soakLog struct {
	mu   sync.Mutex
	runs map[string][]time.Time // "<instance>/<activity id>" → its runs
	// progress holds, per instance, the times its activities ran.
	progress map[string][]time.Time
}

func (l *soakLog) ran(ctx context.Context) {
	info, ok := durable.ActivityInfoFrom(ctx)
	if !ok {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	key := info.Instance + "/" + strconv.FormatUint(info.ID, 10)
	l.runs[key] = append(l.runs[key], now)
	l.progress[info.Instance] = append(l.progress[info.Instance], now)
}

// soakRegistry defines the soak's orchestrations: Chain (5 activities in
// a row), FanOut (20 at once), Timer (a 2 s durable timer, then an
// activity), Event (an activity, then an external event) and Parent (3
// sub-orchestrations Pair of 2 activities each). Step(n) returns 2n.
func soakRegistry(t *testing.T, log *soakLog) *durable.Registry {
	t.Helper()
	step := durable.NewActivity("Step", func(ctx context.Context, n int) (int, error) {
		log.ran(ctx)
		return 2 * n, nil
	})
	chain := durable.NewOrchestration("Chain", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		sum := 0
		for i := range 5 {
			v, err := step.Call(ctx, n+i).Get(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	fanOut := durable.NewOrchestration("FanOut", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		fs := make([]durable.Future[int], 20)
		for i := range fs {
			fs[i] = step.Call(ctx, n+i)
		}
		vs, err := durable.AwaitAll(ctx, fs...)
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, err
	})
	timer := durable.NewOrchestration("Timer", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		if err := ctx.Sleep(2 * time.Second); err != nil {
			return 0, err
		}
		return step.Call(ctx, n).Get(ctx)
	})
	event := durable.NewOrchestration("Event", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		v, err := step.Call(ctx, n).Get(ctx)
		if err != nil {
			return 0, err
		}
		ctx.SetCustomStatus("waiting")
		d, err := durable.WaitForEvent[int](ctx, "Go").Get(ctx)
		return v + d, err
	})
	pair := durable.NewOrchestration("Pair", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		a, err := step.Call(ctx, n).Get(ctx)
		if err != nil {
			return 0, err
		}
		b, err := step.Call(ctx, n+1).Get(ctx)
		return a + b, err
	})
	parent := durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		fs := make([]durable.Future[int], 3)
		for i := range fs {
			fs[i] = pair.CallSub(ctx, n+10*i)
		}
		vs, err := durable.AwaitAll(ctx, fs...)
		sum := 0
		for _, v := range vs {
			sum += v
		}
		return sum, err
	})
	reg, err := durable.NewRegistry(step, chain, fanOut, timer, event, pair, parent)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// soakInstance is one instance the soak starts and what it must return.
type soakInstance struct {
	id, name string
	in, want int
}

// soakPlan is the soak's 200 instances: 60 chains, 20 fan-outs of 20, 40
// timers, 40 waiting for an external event (raised with the value 7) and
// 40 parents of 3 sub-orchestrations each.
func soakPlan() []soakInstance {
	twice := func(ns ...int) int {
		sum := 0
		for _, n := range ns {
			sum += 2 * n
		}
		return sum
	}
	span := func(from, count int) []int {
		ns := make([]int, count)
		for i := range ns {
			ns[i] = from + i
		}
		return ns
	}
	var plan []soakInstance
	add := func(name string, count int, want func(n int) int) {
		for i := range count {
			n := 100*len(plan) + i
			plan = append(plan, soakInstance{id: fmt.Sprintf("%s-%d", name, i), name: name, in: n, want: want(n)})
		}
	}
	add("Chain", 60, func(n int) int { return twice(span(n, 5)...) })
	add("FanOut", 20, func(n int) int { return twice(span(n, 20)...) })
	add("Timer", 40, func(n int) int { return twice(n) })
	add("Event", 40, func(n int) int { return twice(n) + 7 })
	add("Parent", 40, func(n int) int { return twice(n, n+1, n+10, n+11, n+20, n+21) })
	return plan
}

// TestSoak runs the 200 instances of soakPlan through the simulated
// function (event source mappings on both queues, a sweep every 5 s),
// with invocation deadlines of 10 s, while a quarter of the invocations
// are killed between 10 and 400 ms after they start, as a crashed or
// reclaimed sandbox ends (its requests in flight abandoned, its batch
// returned to the queue). Every instance completes with the right output,
// none is left behind, and at least 10 % of the invocations were killed.
// It reports the activities run more than once and the longest time from a
// kill to the next progress of an instance the killed batch named.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the soak runs 200 instances through a few hundred Lambda invocations, a quarter of them killed (a few minutes)")
	}
	t.Parallel()
	log := &soakLog{runs: map[string][]time.Time{}, progress: map[string][]time.Time{}}
	rng := rand.New(rand.NewPCG(1, 2))
	var rngMu sync.Mutex
	s := newStack(t, stackConfig{
		reg:         soakRegistry(t, log),
		timeout:     10 * time.Second,
		maxEnvs:     8,
		concurrency: 4,
		sweepEvery:  5 * time.Second,
		chaos: func(lambdasim.Invocation) (time.Duration, bool) {
			rngMu.Lock()
			defer rngMu.Unlock()
			return 10*time.Millisecond + time.Duration(rng.Int64N(int64(390*time.Millisecond))), rng.Float64() < 0.25
		},
		host: func(o *lambdahost.Options) {
			o.SweepAge = 5 * time.Second
			o.Runtime = func(ro *durable.Options) { ro.WorkerLockTimeout = 10 * time.Second }
		},
	})
	began := time.Now()
	stop := s.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	plan := soakPlan()
	for _, in := range plan {
		if err := s.client.StartOrchestration(ctx, in.id, in.name, in.in); err != nil {
			t.Fatal(err)
		}
	}
	completed := awaitSoak(ctx, t, s, plan)
	took := time.Since(began)
	stop()
	checkSoakOutputs(ctx, t, s, plan)
	reportSoak(t, s, log, completed, took)
}

// awaitSoak raises the events of the Event instances once they wait, and
// returns when every instance of plan has completed, with when each was
// first seen completed. It fails the test when ctx ends first.
func awaitSoak(ctx context.Context, t *testing.T, s *stack, plan []soakInstance) map[string]time.Time {
	t.Helper()
	admin, ok := provider.AdminOf(s.env.NewProvider(t, dynamotest.Config{}))
	if !ok {
		t.Fatal("the provider has no admin interface")
	}
	completed := map[string]time.Time{}
	raised := map[string]bool{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		ids, err := admin.ListInstancesByStatus(ctx, provider.StatusCompleted)
		if err != nil && ctx.Err() == nil {
			t.Logf("list completed instances: %v", err)
		}
		for _, id := range ids {
			if _, ok := completed[id]; !ok {
				completed[id] = time.Now()
			}
		}
		left := 0
		for _, in := range plan {
			if _, ok := completed[in.id]; ok {
				continue
			}
			left++
			if in.name == "Event" && !raised[in.id] {
				raised[in.id] = raiseWhenWaiting(ctx, t, s.client, in.id)
			}
		}
		if left == 0 {
			return completed
		}
		select {
		case <-ctx.Done():
			var stuck []string
			for _, in := range plan {
				if _, ok := completed[in.id]; !ok {
					stuck = append(stuck, in.id)
				}
			}
			t.Fatalf("%d instances not completed: %v", len(stuck), stuck)
		case <-tick.C:
		}
	}
}

// raiseWhenWaiting raises Go (7) for id if it waits for it, and reports
// whether it did.
func raiseWhenWaiting(ctx context.Context, t *testing.T, c *durable.Client, id string) bool {
	st, err := c.Status(ctx, id)
	if err != nil || st.CustomStatus == nil || *st.CustomStatus != "waiting" {
		return false
	}
	if err := c.RaiseEvent(ctx, id, "Go", 7); err != nil {
		t.Logf("raise Go for %s: %v", id, err)
		return false
	}
	return true
}

// checkSoakOutputs checks every instance's output.
func checkSoakOutputs(ctx context.Context, t *testing.T, s *stack, plan []soakInstance) {
	t.Helper()
	wrong := 0
	for _, in := range plan {
		st, err := s.client.Status(ctx, in.id)
		if err != nil {
			t.Errorf("%s: %v", in.id, err)
			wrong++
			continue
		}
		out, err := durable.Output[int](st)
		if err != nil || out != in.want {
			t.Errorf("%s returned %d, %v; want %d", in.id, out, err, in.want)
			wrong++
		}
	}
	t.Logf("%d instances, %d wrong outputs", len(plan), wrong)
}

// reportSoak logs the invocations, kills, duplicates and recoveries, and
// fails the test when fewer than 10 % of the invocations were killed.
func reportSoak(t *testing.T, s *stack, log *soakLog, completed map[string]time.Time, took time.Duration) {
	t.Helper()
	recs := s.fn.Records()
	outcomes := map[lambdasim.Outcome]int{}
	cold := 0
	for _, r := range recs {
		outcomes[r.Outcome]++
		if r.ColdStart {
			cold++
		}
	}
	var durations []time.Duration
	for _, r := range recs {
		if r.Outcome == lambdasim.Succeeded {
			durations = append(durations, r.End.Sub(r.Start))
		}
	}
	slices.Sort(durations)
	if n := len(durations); n > 0 {
		t.Logf("invocations that returned took: median %v, 90th percentile %v, longest %v",
			durations[n/2].Round(time.Millisecond), durations[n*9/10].Round(time.Millisecond), durations[n-1].Round(time.Millisecond))
	}
	killed := outcomes[lambdasim.Killed] + outcomes[lambdasim.TimedOut]
	t.Logf("%d invocations in %v (%d cold starts): %v", len(recs), took.Round(time.Second), cold, outcomes)
	if len(recs) == 0 || float64(killed) < 0.10*float64(len(recs)) {
		t.Errorf("%d of %d invocations killed, want at least 10 %%", killed, len(recs))
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	activities, duplicates := 0, 0
	for _, runs := range log.runs {
		activities++
		duplicates += len(runs) - 1
	}
	t.Logf("%d activities, %d run more than once (%d extra runs, %.2f %%)", activities, countOver(log.runs, 1), duplicates, 100*float64(duplicates)/float64(max(activities, 1)))
	recoveries, instance := recoveries(recs, log.progress, completed)
	if n := len(recoveries); n > 0 {
		t.Logf("recovery from a kill to the next progress of an instance its batch named: median %v, 90th percentile %v, longest %v (instance %s), over %d",
			recoveries[n/2].Round(time.Millisecond), recoveries[n*9/10].Round(time.Millisecond), recoveries[n-1].Round(time.Millisecond), instance, n)
	}
	st := s.stats()
	t.Logf("hosts: %+v; orchestrator mapping: %+v; worker mapping: %+v; sweeps: %+v", st, s.esm[0].Stats(), s.esm[1].Stats(), s.sweeps.Stats())
}

func countOver(runs map[string][]time.Time, n int) int {
	c := 0
	for _, r := range runs {
		if len(r) > n {
			c++
		}
	}
	return c
}

// recoveries returns, sorted, the times from each killed batch's kill to
// the next progress (an activity run, or completion) of each instance one
// of its signals named, and the instance of the longest.
func recoveries(recs []lambdasim.InvocationRecord, progress map[string][]time.Time, completed map[string]time.Time) ([]time.Duration, string) {
	var all []time.Duration
	var longest time.Duration
	var which string
	for _, r := range recs {
		if r.Outcome != lambdasim.Killed && r.Outcome != lambdasim.TimedOut {
			continue
		}
		for _, id := range instancesOf(r.Payload) {
			done, ok := completed[id]
			if ok && done.Before(r.End) {
				continue
			}
			next := done
			for _, at := range progress[id] {
				if at.After(r.End) && (next.IsZero() || at.Before(next)) {
					next = at
				}
			}
			if next.IsZero() {
				continue
			}
			d := next.Sub(r.End)
			all = append(all, d)
			if d > longest {
				longest, which = d, id
			}
		}
	}
	slices.Sort(all)
	return all, which
}

// instancesOf lists the instances the signals of an SQS batch name.
func instancesOf(payload []byte) []string {
	var ev events.SQSEvent
	if json.Unmarshal(payload, &ev) != nil {
		return nil
	}
	var ids []string
	for _, r := range ev.Records {
		if sig, err := queues.ParseSignal(r.Body); err == nil && sig.Instance != "" {
			ids = append(ids, sig.Instance)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
