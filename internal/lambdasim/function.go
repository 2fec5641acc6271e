package lambdasim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Environment is one execution environment of a simulated function: the
// initialised code (a handler in this process, or a bootstrap process
// behind a fake Runtime API), which serves one invocation at a time.
type Environment interface {
	// Invoke runs the handler on payload with ctx, whose deadline is the
	// invocation's, and returns its JSON response, or the function error
	// it reported.
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
	// Kill ends the environment as Lambda ends a sandbox that timed out
	// or crashed: nothing of it reaches AWS any more, whatever it was
	// doing. Invoke, if running, may return afterwards.
	Kill()
	// Close retires an environment that is not running an invocation, as
	// at the end of a test.
	Close() error
}

// Errors of [Function.Invoke].
var (
	// ErrKilled: the invocation was ended by the function's Chaos before
	// it returned, as by a crashed or frozen-and-reclaimed sandbox.
	ErrKilled = errors.New("lambdasim: invocation killed")
	// ErrTimedOut: the handler had not returned by the deadline; the
	// environment was killed, as Lambda does.
	ErrTimedOut = errors.New("lambdasim: invocation timed out")
	// ErrFunction wraps the error a handler reported.
	ErrFunction = errors.New("lambdasim: function error")
)

// Invocation is what [Function.Chaos] learns of an invocation.
type Invocation struct {
	// Seq numbers the function's invocations from 1.
	Seq int64
	// Payload is the event.
	Payload []byte
	// Deadline is the invocation's deadline.
	Deadline time.Time
	// ColdStart is set when the invocation starts a new environment.
	ColdStart bool
}

// Outcome is how an invocation ended.
type Outcome string

// Outcomes of an invocation.
const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed" // the handler reported an error
	Killed    Outcome = "killed"
	TimedOut  Outcome = "timed out"
)

// InvocationRecord is one invocation as the function saw it.
type InvocationRecord struct {
	Invocation
	Start, End time.Time
	Outcome    Outcome
}

// Function is a simulated Lambda function: a pool of execution
// environments made by New (a cold start), each serving one invocation at
// a time, at most MaxEnvironments at once (the reserved concurrency;
// further invocations wait for one). Each invocation gets a context whose
// deadline is Timeout away; a handler that has not returned by then is
// killed with its environment. Chaos may kill invocations mid-flight. A
// Function is safe for concurrent use; [Function.Close] retires it.
type Function struct {
	// New makes an environment: the function's initialisation.
	New func(ctx context.Context) (Environment, error)
	// Timeout is the function's timeout. Required.
	Timeout time.Duration
	// MaxEnvironments bounds the environments, and so the invocations
	// running at once. 0: unbounded.
	MaxEnvironments int
	// Chaos, when set, decides for each invocation whether it is killed,
	// and how long after its start.
	Chaos func(Invocation) (after time.Duration, kill bool)
	// Logger receives a line per invocation that did not succeed: a
	// warning for a function error, information for a kill or a timeout.
	// Default: discarded.
	Logger *slog.Logger

	mu      sync.Mutex
	idle    []Environment
	envs    int
	freed   chan struct{} // closed and replaced when an environment frees up
	seq     int64
	records []InvocationRecord
	running sync.WaitGroup // handlers, including those of killed environments
	closed  bool
}

// Invoke runs one invocation of payload in an idle environment, or a new
// one, and returns the handler's response. It fails with an error wrapping
// [ErrKilled], [ErrTimedOut] or [ErrFunction], or with ctx's error when ctx
// ends while it waits for an environment (an invocation under way when ctx
// ends goes on to its own end).
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if f.Timeout <= 0 {
		return nil, fmt.Errorf("lambdasim: Function.Timeout %v must be positive", f.Timeout)
	}
	env, cold, err := f.acquire(ctx)
	if err != nil {
		return nil, err
	}
	inv := Invocation{Seq: f.nextSeq(), Payload: payload, Deadline: time.Now().Add(f.Timeout), ColdStart: cold}
	rec := InvocationRecord{Invocation: inv, Start: time.Now()}
	out, outcome, err := f.run(env, inv)
	rec.End, rec.Outcome = time.Now(), outcome
	f.mu.Lock()
	f.records = append(f.records, rec)
	f.mu.Unlock()
	if outcome == Killed || outcome == TimedOut {
		f.discard()
	} else {
		f.release(env)
	}
	if err != nil && f.Logger != nil {
		level := slog.LevelInfo // killed or timed out: what the test asked for, or expects
		if outcome == Failed {
			level = slog.LevelWarn
		}
		f.Logger.Log(context.Background(), level, "lambdasim: invocation did not succeed", "seq", inv.Seq, "outcome", string(outcome), "error", err)
	}
	return out, err
}

// run runs inv in env, killing env when Chaos or the deadline says so.
func (f *Function) run(env Environment, inv Invocation) ([]byte, Outcome, error) {
	ictx, cancel := context.WithDeadline(context.Background(), inv.Deadline)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	// A killed environment is retired once its handler has returned,
	// by whichever of the two comes second.
	var (
		mu             sync.Mutex
		dead, returned bool
	)
	f.running.Add(1)
	go func() {
		defer f.running.Done()
		out, err := env.Invoke(ictx, inv.Payload)
		done <- result{out, err}
		mu.Lock()
		returned = true
		retire := dead
		mu.Unlock()
		if retire {
			_ = env.Close()
		}
	}()
	killEnv := func() {
		env.Kill()
		cancel()
		mu.Lock()
		dead = true
		retire := returned
		mu.Unlock()
		if retire {
			f.running.Add(1)
			go func() {
				defer f.running.Done()
				_ = env.Close()
			}()
		}
	}
	var kill <-chan time.Time
	if f.Chaos != nil {
		if after, ok := f.Chaos(inv); ok {
			t := time.NewTimer(after)
			defer t.Stop()
			kill = t.C
		}
	}
	// Lambda's timer runs on its own clock; a little slack keeps a
	// handler that returns at its deadline from being taken for a hung one.
	timeout := time.NewTimer(time.Until(inv.Deadline) + 50*time.Millisecond)
	defer timeout.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, Failed, fmt.Errorf("%w: %w", ErrFunction, r.err)
		}
		return r.out, Succeeded, nil
	case <-kill:
		killEnv()
		return nil, Killed, ErrKilled
	case <-timeout.C:
		killEnv()
		return nil, TimedOut, ErrTimedOut
	}
}

func (f *Function) nextSeq() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	return f.seq
}

// acquire takes an idle environment, or makes one while fewer than
// MaxEnvironments exist, or waits for one to free up.
func (f *Function) acquire(ctx context.Context) (Environment, bool, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, false, errors.New("lambdasim: function closed")
		}
		if n := len(f.idle); n > 0 {
			env := f.idle[n-1]
			f.idle = f.idle[:n-1]
			f.mu.Unlock()
			return env, false, nil
		}
		if f.MaxEnvironments <= 0 || f.envs < f.MaxEnvironments {
			f.envs++
			f.mu.Unlock()
			env, err := f.New(ctx)
			if err != nil {
				f.discard()
				return nil, false, fmt.Errorf("lambdasim: init: %w", err)
			}
			return env, true, nil
		}
		if f.freed == nil {
			f.freed = make(chan struct{})
		}
		freed := f.freed
		f.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// release returns env to the pool; discard forgets a dead one.
func (f *Function) release(env Environment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idle = append(f.idle, env)
	f.wakeLocked()
}

func (f *Function) discard() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.envs--
	f.wakeLocked()
}

func (f *Function) wakeLocked() {
	if f.freed != nil {
		close(f.freed)
		f.freed = nil
	}
}

// Records returns the invocations that have ended, in the order they
// ended.
func (f *Function) Records() []InvocationRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]InvocationRecord(nil), f.records...)
}

// Close waits for every handler to return (those of killed environments
// included), then closes the idle environments. Invocations must have
// ended.
func (f *Function) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.running.Wait()
	f.mu.Lock()
	idle := f.idle
	f.idle = nil
	f.mu.Unlock()
	var errs []error
	for _, env := range idle {
		errs = append(errs, env.Close())
	}
	return errors.Join(errs...)
}

// HandlerEnvironment is an [Environment] running a handler in this
// process, as lambda.Start would call it: the payload decoded as JSON,
// the response encoded.
type HandlerEnvironment struct {
	// Handler is the function's handler.
	Handler func(ctx context.Context, payload json.RawMessage) (any, error)
	// OnKill ends the environment's I/O (a [Cutoff.Cut]); OnClose retires
	// it. Either may be nil.
	OnKill  func()
	OnClose func() error
}

// Invoke calls the handler and encodes its response.
func (e *HandlerEnvironment) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := e.Handler(ctx, payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// Kill calls OnKill.
func (e *HandlerEnvironment) Kill() {
	if e.OnKill != nil {
		e.OnKill()
	}
}

// Close calls OnClose.
func (e *HandlerEnvironment) Close() error {
	if e.OnClose != nil {
		return e.OnClose()
	}
	return nil
}
