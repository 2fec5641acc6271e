// Package lambdarun runs a Lambda function's handler in this process as
// AWS Lambda runs it behind SQS event source mappings, and records each
// invocation's duration, so that a benchmark can bill the function as
// Lambda does.
//
// A [Function] is a pool of execution environments made on demand (a cold
// start runs [Function.Init], whose time is billed with that environment's
// first invocation), each serving one invocation at a time with a context
// whose deadline is [Function.Timeout] away. A [Mapping] is an SQS event
// source mapping with ReportBatchItemFailures: its pollers long-poll a
// queue, invoke the function with each batch as a real [events.SQSEvent]
// encoded in JSON, as lambda.Start hands it to a handler, delete the
// messages the [events.SQSEventResponse] does not list as failed, and
// leave the others to come back. A failed invocation deletes nothing.
//
// It is the benchmark's own, smaller counterpart of the simulator the
// library's tests use (which kills invocations, runs bootstrap binaries
// and cuts environments' I/O): it measures, and injects no fault.
package lambdarun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Handler is a function's handler as aws-lambda-go's lambda.Start calls
// it: the event as JSON, a response to encode as JSON.
type Handler func(ctx context.Context, payload json.RawMessage) (any, error)

// Environment is an initialised execution environment.
type Environment struct {
	// Handler serves the environment's invocations, one at a time.
	Handler Handler
	// Close retires the environment; nil for nothing to do.
	Close func() error
}

// Errors of [Function.Invoke].
var (
	// ErrFunction wraps the error a handler returned.
	ErrFunction = errors.New("lambdarun: function error")
	// ErrTimedOut: the handler returned after its deadline; Lambda would
	// have ended it there, and billed the whole timeout.
	ErrTimedOut = errors.New("lambdarun: invocation timed out")
)

// Invocation is one invocation as the function saw it.
type Invocation struct {
	// Source names what invoked the function (a mapping's queue name).
	Source string
	// Start is when the invocation began, its cold start included.
	Start time.Time
	// Init is how long the environment's initialisation took, for the
	// invocation that made it (a cold start); 0 otherwise.
	Init time.Duration
	// Duration is how long the handler ran.
	Duration time.Duration
	// Records and Failed count the batch's messages and those its
	// response listed as failed; set by a [Mapping].
	Records, Failed int
	// Err is why the invocation failed (wrapping [ErrFunction] or
	// [ErrTimedOut]); nil when it succeeded.
	Err error
}

// Ran is the time Lambda bills the invocation for, before rounding: the
// initialisation, if any, and the handler's time, at most the timeout.
func (i Invocation) Ran(timeout time.Duration) time.Duration {
	return i.Init + min(i.Duration, timeout)
}

// Function is a function's execution environments. Set Init and Timeout
// before the first invocation; a Function is safe for concurrent use.
type Function struct {
	// Init initialises an environment: the function's code outside its
	// handler, run at a cold start.
	Init func(ctx context.Context) (Environment, error)
	// Timeout is the function's timeout: the deadline of each invocation's
	// context is this far from the start of its handler.
	Timeout time.Duration

	mu          sync.Mutex
	idle        []*Environment
	all         []*Environment
	inits       int
	invocations []Invocation
	busy        int
}

// Invoke runs one invocation of payload in an idle environment, or in a
// new one, and returns the handler's response encoded as JSON and what
// the invocation measured, which the caller keeps with [Function.Record].
// source names the invoker. It fails with an error wrapping [ErrFunction]
// or [ErrTimedOut], or with Init's error.
func (f *Function) Invoke(ctx context.Context, source string, payload []byte) ([]byte, Invocation, error) {
	if f.Timeout <= 0 || f.Init == nil {
		return nil, Invocation{}, fmt.Errorf("lambdarun: Function needs Init and a positive Timeout (%v)", f.Timeout)
	}
	inv := Invocation{Source: source, Start: time.Now()}
	f.setBusy(1)
	defer f.setBusy(-1)
	env, err := f.acquire(ctx, &inv)
	if err != nil {
		return nil, inv, err
	}
	defer f.release(env)
	began := time.Now()
	ictx, cancel := context.WithDeadline(ctx, began.Add(f.Timeout))
	res, err := env.Handler(ictx, payload)
	cancel()
	inv.Duration = time.Since(began)
	var out []byte
	switch {
	case inv.Duration > f.Timeout:
		err = fmt.Errorf("%w after %v", ErrTimedOut, f.Timeout)
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrFunction, err)
	default:
		if out, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("%w: response: %w", ErrFunction, err)
		}
	}
	inv.Err = err
	return out, inv, err
}

// acquire returns an idle environment, or initialises one and records its
// initialisation in inv.
func (f *Function) acquire(ctx context.Context, inv *Invocation) (*Environment, error) {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		env := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return env, nil
	}
	f.mu.Unlock()
	began := time.Now()
	env, err := f.Init(ctx)
	inv.Init = time.Since(began)
	if err != nil {
		inv.Err = fmt.Errorf("lambdarun: init: %w", err)
		return nil, inv.Err
	}
	f.mu.Lock()
	f.all = append(f.all, &env)
	f.inits++
	f.mu.Unlock()
	return &env, nil
}

// release returns env to the pool.
func (f *Function) release(env *Environment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idle = append(f.idle, env)
}

// Record keeps inv among the function's invocations; a [Mapping] calls it
// once it has filled in the batch's counts.
func (f *Function) Record(inv Invocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invocations = append(f.invocations, inv)
}

func (f *Function) setBusy(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy += d
}

// Busy returns the number of invocations under way.
func (f *Function) Busy() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy
}

// Invocations returns the invocations recorded so far, in the order they
// were recorded.
func (f *Function) Invocations() []Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Invocation(nil), f.invocations...)
}

// Environments returns how many environments were initialised: the cold
// starts.
func (f *Function) Environments() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inits
}

// Close retires every environment. Invocations must have ended.
func (f *Function) Close() error {
	f.mu.Lock()
	all := f.all
	f.all, f.idle = nil, nil
	f.mu.Unlock()
	var errs []error
	for _, env := range all {
		if env.Close != nil {
			errs = append(errs, env.Close())
		}
	}
	return errors.Join(errs...)
}
