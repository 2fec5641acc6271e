package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/durable"
)

// Extra columns of the Chain scenario: DynamoDB requests, read units and
// write units per step (an activity and the turn its completion starts),
// over the first and the last tenth of the chain.
const (
	ExtraRequestsFirst = "step requests, first tenth"
	ExtraRequestsLast  = "step requests, last tenth"
	ExtraRRUFirst      = "step RRU, first tenth"
	ExtraRRULast       = "step RRU, last tenth"
	ExtraWRUFirst      = "step WRU, first tenth"
	ExtraWRULast       = "step WRU, last tenth"
)

// ChainName is the name of the Chain scenario of n steps.
func ChainName(n int) string { return fmt.Sprintf("Chain%d", n) }

// Chain runs, on every system with a runtime of default options, one
// orchestration that calls n activities one after the other: n+1 turns,
// the last replaying a history of about 2n events. It reports, beside the
// totals, the requests and read units of a step in the first and in the
// last tenth of the chain: with the history cache, a turn reads no history
// and a step costs the same at either end.
func Chain(ctx context.Context, env *Env, n int) ([]report.Result, error) {
	// A step is a few sequential requests: about 40 ms on DynamoDB Local,
	// 100 ms behind the proxy or with short polling.
	timeout := 5*time.Minute + time.Duration(n)*300*time.Millisecond
	return onEverySystem(ctx, env, ChainName(n), timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		return chainOn(ctx, d, n, "", func(ctx context.Context, id string) error { return chain.Start(ctx, d.Client, id, n) })
	})
}

// ChainPayloadName is the name of the ChainPayload scenario of n steps
// with payloads of bytes.
func ChainPayloadName(n, bytes int) string { return ChainName(n) + payloadSuffix(bytes) }

// ChainPayload is Chain with payloads: each activity's input carries bytes
// of filler and its output returns it, so both are about bytes long. It
// measures a chain's steady state with payloads, which HelloCities5Payload
// mixes with its instances' starts and ends. It runs on DynamoDBSQS and
// then on DynamoDBSQSUncompressed, when env's systems include DynamoDBSQS:
// what a step with payloads costs, and what compressing them saves.
func ChainPayload(ctx context.Context, env *Env, n, bytes int) ([]report.Result, error) {
	note := fmt.Sprintf("activity inputs and outputs of %d pseudo-random hex digits and a step number", bytes)
	return chainPayloadOn(ctx, env, ChainPayloadName(n, bytes), chainPad{Steps: n, Bytes: bytes}, note)
}

// chainPayloadOn runs the chain of pad on DynamoDBSQS and on
// DynamoDBSQSUncompressed as scenario name.
func chainPayloadOn(ctx context.Context, env *Env, name string, pad chainPad, note string) ([]report.Result, error) {
	timeout := 5*time.Minute + time.Duration(pad.Steps)*300*time.Millisecond
	var systems []System
	for _, s := range env.systems() {
		if s.Name == DynamoDBSQS {
			systems = append(systems, s, uncompressedSystem())
		}
	}
	return onSystems(ctx, env, systems, name, timeout, timesUnmetered, func(ctx context.Context, d *Deployment) (report.Result, error) {
		return chainOn(ctx, d, pad.Steps, note, func(ctx context.Context, id string) error {
			return chainPadded.Start(ctx, d.Client, id, pad)
		})
	})
}

// chainOn runs on d one instance that start starts with n steps, and
// returns its result with notes added.
func chainOn(ctx context.Context, d *Deployment, n int, notes string, start func(ctx context.Context, id string) error) (report.Result, error) {
	r := report.Result{Notes: joinNotes("runtime with default options (2 orchestration and 2 worker slots); one instance, activities one after the other; a step is an activity and the turn its completion starts", notes)}
	if _, err := d.StartRuntime(ctx); err != nil {
		return r, err
	}
	const id = "chain"
	// The usage as each of the instance's turns is acked: turns[0] at the
	// first turn's ack (which schedules the first activity), turns[k] at
	// the ack of the turn the k-th activity's completion started. Read
	// before the ack, since the ack may hand the next activity to a
	// waiting worker, whose requests are the next step's; kept once the
	// ack committed.
	var mu sync.Mutex
	var turns []billing.Usage
	d.OnTurn(func(instance string) func() {
		if instance != id {
			return func() {}
		}
		u := d.Usage()
		return func() {
			mu.Lock()
			turns = append(turns, u)
			mu.Unlock()
		}
	})
	err := measureInstance(ctx, d, &r, id, func(ctx context.Context) error { return start(ctx, id) })
	if err != nil {
		return r, err
	}
	got, err := durable.WaitForOutput[int](ctx, d.Observer, id)
	if err != nil {
		return r, err
	}
	if got != n {
		return r, fmt.Errorf("%w: %d of %d steps returned their input", ErrWrongOutput, got, n)
	}
	r.Activities = got

	mu.Lock()
	defer mu.Unlock()
	if len(turns) != n+1 {
		return r, fmt.Errorf("scenario: %d turns of %s observed, want %d", len(turns), id, n+1)
	}
	if d.Meter != nil {
		tenth := max(1, n/10)
		first := turns[tenth].Sub(turns[0])
		last := turns[n].Sub(turns[n-tenth])
		setExtra(&r, ExtraRequestsFirst, float64(first.DynamoDBRequests())/float64(tenth))
		setExtra(&r, ExtraRequestsLast, float64(last.DynamoDBRequests())/float64(tenth))
		setExtra(&r, ExtraRRUFirst, first.RRU/float64(tenth))
		setExtra(&r, ExtraRRULast, last.RRU/float64(tenth))
		setExtra(&r, ExtraWRUFirst, first.WRU/float64(tenth))
		setExtra(&r, ExtraWRULast, last.WRU/float64(tenth))
	}
	return r, setEvents(ctx, d, &r, id)
}
