package durabletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// ErrBlocked reports that the system went idle with nothing scheduled while
// an awaited instance was still running: it waits for an event, a queue
// message or a cancellation that nobody sends.
var ErrBlocked = errors.New("durabletest: idle with no timer pending")

// DefaultStartTime is the simulated clock's initial time unless
// [WithStartTime] sets another.
var DefaultStartTime = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Option configures an [Env].
type Option func(*config)

type config struct {
	start       time.Time
	timeout     time.Duration
	runtimeOpts []func(*durable.Options)
	noReplay    bool
	logger      *slog.Logger
}

// WithStartTime sets the simulated clock's initial time.
func WithStartTime(t time.Time) Option { return func(c *config) { c.start = t } }

// WithTimeout bounds, in real time, how long [Env.Wait] waits; default 1
// minute.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRuntimeOptions adjusts the runtime's options (concurrency, worker
// tags, ...). Now is always the simulated clock.
func WithRuntimeOptions(fn func(*durable.Options)) Option {
	return func(c *config) { c.runtimeOpts = append(c.runtimeOpts, fn) }
}

// WithLogger sends the runtime's and the orchestrations' logs to l; default
// discarded.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithoutReplayCheck turns off the replay checks: the runtime's replay
// of every turn (durable.Options.VerifyReplay) and the replay of every
// history at the end of the test. Use it for a test of code that is meant
// to be nondeterministic.
func WithoutReplayCheck() Option { return func(c *config) { c.noReplay = true } }

// Env runs orchestrations for a unit test: a real [durable.Runtime] on an
// in-memory provider, with a simulated clock that skips to the next timer
// whenever nothing else can happen, so that a 24-hour timer fires at once.
//
// Nothing runs between the calls of the test: instances started and events
// raised wait until [Env.Run], [Env.Wait] or [Env.RunUntilIdle] runs the
// system. Only these move the clock. Activities take no simulated time, and
// while one runs the clock stands still: mocks and activities used with an
// Env must return on their own.
//
// Nondeterministic code fails the test as soon as it shows. The runtime
// keeps each execution's code between its turns, so a turn does not replay
// the history, as a turn after a restart would; it runs with
// durable.Options.VerifyReplay 1 instead, which computes every turn a
// second time from history and fails the instance as nondeterministic at
// the first difference, and the Env reports that failure with t.Errorf:
// the orchestration, its version, the first call that differs and the
// source line of each run's call. When the test ends, the runtime is shut
// down and every other instance's history is checked with [Replay] against
// the runtime's registry (the test's registry plus mocks); a mismatch
// fails the test too. [WithoutReplayCheck] turns both checks off;
// [WithRuntimeOptions] may set VerifyReplay lower.
type Env struct {
	t     testing.TB
	reg   *durable.Registry
	cfg   config
	clock *clock
	p     *idleProvider
	c     *durable.Client

	mu        sync.Mutex
	mocks     []durable.Definition
	rt        *durable.Runtime
	runReg    *durable.Registry
	started   []string
	callbacks []callback
	closed    bool
	// nondeterministic holds the instances reported as nondeterministic
	// during the test, whose histories the end of the test does not
	// replay again.
	nondeterministic map[string]bool
}

type callback struct {
	at time.Time
	fn func()
}

// New returns an Env for orchestrations and activities of reg. Its runtime
// starts at the first run, with the mocks registered by then.
func New(t testing.TB, reg *durable.Registry, opts ...Option) *Env {
	t.Helper()
	if reg == nil {
		t.Fatal("durabletest.New: nil registry")
	}
	cfg := config{start: DefaultStartTime, timeout: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	var ro durable.Options
	for _, fn := range cfg.runtimeOpts {
		fn(&ro)
	}
	slots := max(ro.OrchestrationConcurrency, 0) + max(ro.WorkerConcurrency, 0)
	if ro.OrchestrationConcurrency == 0 {
		slots += 2 // the runtime's defaults
	}
	if ro.WorkerConcurrency == 0 {
		slots += 2
	}
	c := &clock{}
	c.set(cfg.start)
	p := newIdleProvider(c, slots)
	e := &Env{t: t, reg: reg, cfg: cfg, clock: c, p: p, c: durable.NewClient(p)}
	t.Cleanup(e.close)
	return e
}

// MockActivity makes the runtime run fn for activity name, replacing the
// registry's activity of that name or adding one. Mocks must be set before
// the first run.
func (e *Env) MockActivity(name string, fn func(ctx context.Context, input string) (string, error)) {
	e.t.Helper()
	// Typed, not ActivityFunc: the orchestrations may call the activity
	// it replaces with typed calls, whose wire payloads fn takes.
	e.addMock(durable.NewActivity(name, func(ctx context.Context, in durable.Raw) (durable.Raw, error) {
		out, err := fn(ctx, string(in))
		return durable.Raw(out), err
	}))
}

// Mock makes the runtime run fn instead of activity; see
// [Env.MockActivity].
func Mock[In, Out any](e *Env, activity durable.Activity[In, Out], fn func(In) (Out, error)) {
	e.t.Helper()
	e.addMock(durable.NewActivity(activity.Name(), func(_ context.Context, in In) (Out, error) { return fn(in) }))
}

func (e *Env) addMock(d durable.Definition) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rt != nil {
		e.t.Fatal("durabletest: mocks must be set before the first run")
	}
	e.mocks = append(e.mocks, d)
}

// runtime starts the runtime on first use.
func (e *Env) runtime() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("durabletest: the test has ended")
	}
	if e.rt != nil {
		return nil
	}
	// Later mocks of one name replace earlier ones.
	var defs []durable.Definition
	for i, d := range e.mocks {
		last := true
		for _, later := range e.mocks[i+1:] {
			if defName(later) == defName(d) {
				last = false
			}
		}
		if last {
			defs = append(defs, d)
		}
	}
	reg, err := e.reg.Overlay(defs...)
	if err != nil {
		return fmt.Errorf("durabletest: mocks: %w", err)
	}
	var optFns []func(*durable.Options)
	if !e.cfg.noReplay {
		optFns = append(optFns, func(o *durable.Options) { o.VerifyReplay = 1 })
	}
	optFns = append(optFns, e.cfg.runtimeOpts...)
	rt, err := durable.NewRuntime(e.p, reg, append(optFns, func(o *durable.Options) {
		o.Now = e.clock.Now
		o.Logger = e.cfg.logger
		if !e.cfg.noReplay {
			o.Observer = nondeterminismReporter{e: e, next: o.Observer}
		}
	})...)
	if err != nil {
		return fmt.Errorf("durabletest: runtime: %w", err)
	}
	if err := rt.Start(context.Background()); err != nil {
		return fmt.Errorf("durabletest: runtime: %w", err)
	}
	e.rt, e.runReg = rt, reg
	return nil
}

// defName returns a definition's name: activities carry it in Name().
func defName(d durable.Definition) string {
	if n, ok := d.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%p", d)
}

// Registry returns the registry the runtime runs: the test's plus the
// mocks. Nil before the first run.
func (e *Env) Registry() *durable.Registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runReg
}

// Client returns a client over the Env's provider.
func (e *Env) Client() *durable.Client { return e.c }

// Provider returns the Env's provider.
func (e *Env) Provider() provider.Provider { return e.p }

// Now returns the simulated time.
func (e *Env) Now() time.Time { return e.clock.Now() }

// Start starts instance id of orchestration name with input in. Options:
// [durable.Version].
func (e *Env) Start(name, id string, in any, opts ...durable.Option) {
	e.t.Helper()
	if err := e.c.StartOrchestration(context.Background(), id, name, in, opts...); err != nil {
		e.t.Fatalf("durabletest: start %s %s: %v", name, id, err)
	}
	e.mu.Lock()
	e.started = append(e.started, id)
	e.mu.Unlock()
}

// RaiseEvent sends event name with data to instance id. It is delivered to
// a subscription that exists when the instance processes it; an earlier
// event is dropped (duroxide's rule), so raise events after a run leaves
// the instance waiting, or from [Env.AfterFunc].
func (e *Env) RaiseEvent(id, name string, data any) {
	e.t.Helper()
	if err := e.c.RaiseEvent(context.Background(), id, name, data); err != nil {
		e.t.Fatalf("durabletest: raise %s on %s: %v", name, id, err)
	}
}

// Enqueue puts data on queue of instance id; it waits there for a dequeue.
func (e *Env) Enqueue(id, queue string, data any) {
	e.t.Helper()
	if err := e.c.EnqueueEvent(context.Background(), id, queue, data); err != nil {
		e.t.Fatalf("durabletest: enqueue on %s/%s: %v", id, queue, err)
	}
}

// Cancel requests the cancellation of instance id.
func (e *Env) Cancel(id, reason string) {
	e.t.Helper()
	if err := e.c.CancelInstance(context.Background(), id, reason); err != nil {
		e.t.Fatalf("durabletest: cancel %s: %v", id, err)
	}
}

// AfterFunc runs fn on the test's goroutine when the simulated clock
// reaches Now()+d during a run, once everything due before has happened:
// the way to raise an event at a given point of simulated time.
func (e *Env) AfterFunc(d time.Duration, fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.callbacks = append(e.callbacks, callback{at: e.clock.Now().Add(d), fn: fn})
}

// Status returns instance id's status.
func (e *Env) Status(id string) *durable.Status {
	e.t.Helper()
	s, err := e.c.Status(context.Background(), id)
	if err != nil {
		e.t.Fatalf("durabletest: status %s: %v", id, err)
	}
	return s
}

// History returns every execution's history of instance id, oldest first:
// the events [Replay] and [WriteHistory] take.
func (e *Env) History(id string) []provider.Event {
	e.t.Helper()
	h, err := history(context.Background(), e.c, id)
	if err != nil {
		e.t.Fatalf("durabletest: history %s: %v", id, err)
	}
	return h
}

func history(ctx context.Context, c *durable.Client, id string) ([]provider.Event, error) {
	execs, err := c.ListExecutions(ctx, id)
	if err != nil {
		if errors.Is(err, provider.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var out []provider.Event
	for _, x := range execs {
		h, err := c.History(ctx, id, x)
		if err != nil {
			return nil, err
		}
		out = append(out, h...)
	}
	return out, nil
}

// HistoryJSON returns instance id's history as duroxide JSON lines.
func (e *Env) HistoryJSON(id string) string {
	e.t.Helper()
	var b bytes.Buffer
	if err := WriteHistory(&b, e.History(id)); err != nil {
		e.t.Fatal(err)
	}
	return b.String()
}

// Wait runs the system until instance id is terminal and returns its
// status. It fails the test if the instance blocks (see [ErrBlocked]) or
// the real-time timeout of [WithTimeout] passes.
func (e *Env) Wait(id string) *durable.Status {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.timeout)
	defer cancel()
	if err := e.run(ctx, true, []string{id}); err != nil {
		e.t.Fatalf("durabletest: waiting for %s: %v", id, err)
	}
	return e.Status(id)
}

// Run runs the system until every instance started with [Env.Start] is
// terminal. It returns an error wrapping [ErrBlocked] if the system goes
// idle with nothing scheduled before, or ctx's error.
func (e *Env) Run(ctx context.Context) error {
	e.mu.Lock()
	ids := slices.Clone(e.started)
	e.mu.Unlock()
	return e.run(ctx, true, ids)
}

// RunUntilIdle runs the system, without moving the clock, until nothing
// more can happen now: every instance has processed what it was sent and
// waits for a timer, an event or a message.
func (e *Env) RunUntilIdle(ctx context.Context) error {
	return e.run(ctx, false, nil)
}

// run is the driver: it opens the fetch gate, waits for idleness, then
// checks the goal, runs due callbacks or skips the clock to the next due
// time, until the goal is met.
func (e *Env) run(ctx context.Context, skip bool, ids []string) error {
	if err := e.runtime(); err != nil {
		return err
	}
	e.p.setRunning(true)
	defer e.p.setRunning(false)
	for {
		if err := e.awaitIdle(ctx); err != nil {
			return err
		}
		if !skip {
			return nil
		}
		waiting, err := e.running(ctx, ids)
		if err != nil {
			return err
		}
		if len(waiting) == 0 {
			return nil
		}
		next, ok := e.p.nextDue()
		cb, hasCB := e.nextCallback()
		if hasCB && (!ok || !cb.at.After(next)) {
			e.takeCallback(cb)
			e.p.advance(cb.at)
			cb.fn()
			continue
		}
		if !ok {
			return fmt.Errorf("%w: %v not finished at %s", ErrBlocked, waiting, e.clock.Now().Format(time.RFC3339Nano))
		}
		e.p.advance(next)
	}
}

// awaitIdle blocks until the system is idle.
func (e *Env) awaitIdle(ctx context.Context) error {
	for {
		e.p.mu.Lock()
		idle := e.p.isIdleLocked()
		e.p.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-e.p.idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// running returns the ids that are not terminal.
func (e *Env) running(ctx context.Context, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		s, err := e.c.Status(ctx, id)
		if err != nil {
			return nil, err
		}
		if !s.State.IsTerminal() {
			out = append(out, id)
		}
	}
	return out, nil
}

func (e *Env) nextCallback() (callback, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.callbacks) == 0 {
		return callback{}, false
	}
	return slices.MinFunc(e.callbacks, func(a, b callback) int { return a.at.Compare(b.at) }), true
}

func (e *Env) takeCallback(cb callback) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, c := range e.callbacks {
		if c.at.Equal(cb.at) {
			e.callbacks = slices.Delete(e.callbacks, i, i+1)
			return
		}
	}
}

// close shuts the runtime down and replays every history.
func (e *Env) close() {
	e.t.Helper()
	e.mu.Lock()
	rt, reg := e.rt, e.runReg
	e.closed = true
	e.mu.Unlock()
	if rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		e.t.Errorf("durabletest: runtime shutdown: %v", err)
	}
	if e.cfg.noReplay {
		return
	}
	ids, err := e.c.ListInstances(ctx)
	if err != nil {
		e.t.Errorf("durabletest: listing instances: %v", err)
		return
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.mu.Lock()
		reported := e.nondeterministic[id]
		e.mu.Unlock()
		if reported {
			continue
		}
		h, err := history(ctx, e.c, id)
		if err != nil {
			e.t.Errorf("durabletest: history %s: %v", id, err)
			continue
		}
		if err := Replay(reg, h); err != nil {
			var b bytes.Buffer
			_ = WriteHistory(&b, h)
			e.t.Errorf("durabletest: %v\nhistory:\n%s", err, b.String())
		}
	}
}

// nondeterminismReporter fails the test for every turn that fails its
// instance as nondeterministic, then tells next, the observer the test's
// runtime options set, if any.
type nondeterminismReporter struct {
	e    *Env
	next durable.Observer
}

func (r nondeterminismReporter) TurnCommitted(ev durable.TurnEvent) {
	if errors.Is(ev.Err, durable.ErrNondeterminism) {
		r.e.mu.Lock()
		if r.e.nondeterministic == nil {
			r.e.nondeterministic = map[string]bool{}
		}
		r.e.nondeterministic[ev.Instance] = true
		r.e.mu.Unlock()
		r.e.t.Errorf("durabletest: instance %s of %s version %s is nondeterministic: %v", ev.Instance, ev.Orchestration, ev.Version, ev.Err)
	}
	if r.next != nil {
		r.next.TurnCommitted(ev)
	}
}

func (r nondeterminismReporter) ActivityStarted(ev durable.ActivityEvent) {
	if r.next != nil {
		r.next.ActivityStarted(ev)
	}
}

func (r nondeterminismReporter) ActivityFinished(ev durable.ActivityEvent) {
	if r.next != nil {
		r.next.ActivityFinished(ev)
	}
}
