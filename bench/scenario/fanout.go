package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/bench/peer/goworkflows"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// FanOutName is the name of the FanOut scenario of n activities.
func FanOutName(n int) string { return fmt.Sprintf("FanOut%d", n) }

// FanOut runs, on every system with a runtime of default options, one
// orchestration that schedules n activities in one turn and awaits them
// all, and checks that every result is present and right. The provider
// hands a turn at most 45 completions (docs/design.md §8), so the fan-in
// takes about n/45 turns. On DynamoDBSQS it also runs with two runtimes on
// one table (the system named "duradyn/dynamodb-local+sqs (2 runtimes,
// 2+2 slots)"), whose workers' completions wake the turns of their own
// process, so that turns move between the processes and each reads what
// the other added to the history. Then it runs go-workflows' FanOut on
// env.Peers, with the same time limit.
func FanOut(ctx context.Context, env *Env, n int) ([]report.Result, error) {
	name := FanOutName(n)
	// 10,000 activities took 8.5 minutes on DynamoDB Local with SQS on a
	// 2-core machine running other work (20 a second); the proxy's 8 ms a
	// request and a busier machine need room.
	timeout := 5*time.Minute + time.Duration(n)*100*time.Millisecond
	results, err := onEverySystem(ctx, env, name, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		return fanOutOn(ctx, d, n, Runtimes{})
	})
	if system, ok := env.system(DynamoDBSQS); ok {
		two := Runtimes{Count: 2}
		r, twoErr := onSystem(ctx, env, system, name, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
			return fanOutOn(ctx, d, n, two)
		})
		r.System = fmt.Sprintf("%s (%s)", system.Name, two.Label())
		results = append(results, r)
		err = errors.Join(err, twoErr)
	}
	peers := runPeers(ctx, env, name, func(ctx context.Context, c goworkflows.Config) (report.Result, error) {
		c.FanOut, c.Timeout = n, timeout
		return goworkflows.FanOut(ctx, c)
	})
	return append(results, peers...), err
}

func fanOutOn(ctx context.Context, d *Deployment, n int, rt Runtimes) (report.Result, error) {
	r := report.Result{Notes: rt.String() + "; all activities scheduled in one turn"}
	if err := rt.start(ctx, d); err != nil {
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
