package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// HistoryName is the name of the History scenario of events events.
func HistoryName(events int) string { return fmt.Sprintf("History%d", events) }

// eventNever is the event awaitNever waits for and nobody raises.
const eventNever = "never"

// awaitNever subscribes to an event nobody raises: after its first turn
// its history holds OrchestrationStarted and ExternalSubscribed, and the
// runtime never touches it again.
var awaitNever = durable.NewOrchestration("AwaitNever", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
	return durable.WaitForEvent[string](ctx, eventNever).Get(ctx)
})

// historyPoll is how often the observer looks for awaitNever's first turn.
const historyPoll = 20 * time.Millisecond

// History makes, on every system, an instance whose history has events
// events and measures the provider's Read of it, reads times, with the
// requests of all the reads. The instance is real: a runtime of default
// options runs its first turn (OrchestrationStarted, then ExternalSubscribed
// for an event nobody raises), and is stopped; the rest of the history is
// stored with the provider's AppendWithExecution (the contract's operation
// for tools and tests) as pairs of ActivityScheduled and ActivityCompleted
// events shaped as the Hello activity's, so that it takes seconds, not the
// thousands of turns a fan-in of that size replays. events is rounded up
// to an even number of at least 4.
func History(ctx context.Context, env *Env, events, reads int) ([]report.Result, error) {
	pairs := max(1, (events-1)/2)
	events = 2 + 2*pairs
	name := HistoryName(events)
	timeout := 5*time.Minute + time.Duration(events)*10*time.Millisecond
	return onEverySystem(ctx, env, name, timeout, timesMetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		r := report.Result{Notes: fmt.Sprintf("a running instance's history: its first turn run by the runtime, then %d activity events stored with AppendWithExecution; the runtime stopped before %d reads", 2*pairs, reads)}
		const id = "history"
		if err := makeHistory(ctx, d, id, pairs); err != nil {
			return r, err
		}
		before := d.Usage()
		began := time.Now()
		for range reads {
			t := time.Now()
			h, err := d.Provider.Read(ctx, id)
			if err != nil {
				return r, err
			}
			r.Latencies = append(r.Latencies, time.Since(t))
			if len(h) != events {
				return r, fmt.Errorf("%w: read %d events of %d", ErrWrongOutput, len(h), events)
			}
		}
		r.Elapsed = time.Since(began)
		u := d.Usage().Sub(before)
		setUsage(&r, u)
		setExtra(&r, "events", float64(events))
		setExtra(&r, "reads", float64(reads))
		if d.System.DynamoDB {
			setExtra(&r, "ddb req/read", float64(u.DynamoDBRequests())/float64(reads))
			setExtra(&r, "RRU/read", u.RRU/float64(reads))
		}
		return r, nil
	})
}

// makeHistory starts instance id of awaitNever, waits for its first turn,
// stops the runtime and appends pairs activity pairs to its history.
func makeHistory(ctx context.Context, d *Deployment, id string, pairs int) error {
	if _, err := d.StartRuntime(ctx); err != nil {
		return err
	}
	if err := awaitNever.Start(ctx, d.Client, id, struct{}{}); err != nil {
		return err
	}
	var first []provider.Event
	for len(first) < 2 {
		if err := sleepCtx(ctx, historyPoll); err != nil {
			return fmt.Errorf("waiting for the first turn of %s: %w", id, err)
		}
		h, err := d.Observer.History(ctx, id, 0)
		if err != nil {
			return err
		}
		first = h
	}
	if err := d.StopRuntimes(ctx); err != nil {
		return err
	}
	if _, ok := first[1].Kind.(provider.ExternalSubscribed); !ok || len(first) != 2 {
		return fmt.Errorf("%w: %s's first turn wrote %d events, the second %T", ErrWrongOutput, id, len(first), first[1].Kind)
	}
	started := first[0]
	next := uint64(len(first) + 1)
	const batch = 1000
	for done := 0; done < pairs; {
		n := min(batch, pairs-done)
		evs := make([]provider.Event, 0, 2*n)
		for i := range n {
			in := strconv.Itoa(done + i)
			input, _ := json.Marshal(in)
			result, _ := json.Marshal(greeting(in))
			scheduled := next
			evs = append(evs,
				provider.Event{EventID: scheduled, InstanceID: id, ExecutionID: started.ExecutionID, TimestampMs: started.TimestampMs,
					DuroxideVersion: started.DuroxideVersion, Kind: provider.ActivityScheduled{Name: helloActivity.Name(), Input: string(input)}},
				provider.Event{EventID: scheduled + 1, SourceEventID: &scheduled, InstanceID: id, ExecutionID: started.ExecutionID, TimestampMs: started.TimestampMs,
					DuroxideVersion: started.DuroxideVersion, Kind: provider.ActivityCompleted{Result: string(result)}})
			next += 2
		}
		if err := d.Provider.AppendWithExecution(ctx, id, started.ExecutionID, evs); err != nil {
			return fmt.Errorf("append to %s: %w", id, err)
		}
		done += n
	}
	return nil
}
