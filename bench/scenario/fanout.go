package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/dynoxide/dynoxide/bench/peer/goworkflows"
	"github.com/dynoxide/dynoxide/bench/report"
	"github.com/dynoxide/dynoxide/durable"
)

// FanOutName is the name of the FanOut scenario of n activities.
func FanOutName(n int) string { return fmt.Sprintf("FanOut%d", n) }

// FanOut runs, on every system with a runtime of default options, one
// orchestration that schedules n activities in one turn and awaits them
// all, and checks that every result is present and right. The provider
// hands a turn at most 45 completions (docs/design.md §8), so the fan-in
// takes about n/45 turns, each replaying the whole history. Then it runs
// go-workflows' FanOut on env.Peers, with the same time limit.
func FanOut(ctx context.Context, env *Env, n int) ([]report.Result, error) {
	name := FanOutName(n)
	// 10,000 activities took 8.5 minutes on DynamoDB Local with SQS on a
	// 2-core machine running other work (20 a second); the proxy's 8 ms a
	// request and a busier machine need room.
	timeout := 5*time.Minute + time.Duration(n)*100*time.Millisecond
	results, err := onEverySystem(ctx, env, name, timeout, func(ctx context.Context, d *Deployment) (report.Result, error) {
		return fanOutOn(ctx, d, n)
	})
	peers := runPeers(ctx, env, name, func(ctx context.Context, c goworkflows.Config) (report.Result, error) {
		c.FanOut, c.Timeout = n, timeout
		return goworkflows.FanOut(ctx, c)
	})
	return append(results, peers...), err
}

func fanOutOn(ctx context.Context, d *Deployment, n int) (report.Result, error) {
	r := report.Result{Notes: "runtime with default options (2 orchestration and 2 worker slots); all activities scheduled in one turn"}
	if _, err := d.StartRuntime(ctx); err != nil {
		return r, err
	}
	const id = "fan-out"
	err := measureInstance(ctx, d, &r, id, func(ctx context.Context) error { return fanOut.Start(ctx, d.Client, id, n) })
	if err != nil {
		return r, err
	}
	st, err := d.Observer.Status(ctx, id)
	if err != nil {
		return r, err
	}
	if st.State != durable.StateCompleted {
		return r, fmt.Errorf("%s ended %s: %s", id, st.State, failure(st))
	}
	checked, err := durable.Output[int](st)
	if err != nil {
		return r, err
	}
	if checked != n {
		return r, fmt.Errorf("%w: %d of %d results present", ErrWrongOutput, checked, n)
	}
	r.Activities = checked
	return r, setEvents(ctx, d, &r, id)
}
