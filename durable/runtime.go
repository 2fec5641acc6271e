package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// ReplayVersion is the duroxide replay model this runtime implements,
// written into every event and pinned at each execution's start.
const ReplayVersion = replay.Version

// UnregisteredBackoff bounds the waits before retries of work that cannot
// run yet: an orchestration or activity no registry of this runtime holds.
type UnregisteredBackoff struct {
	// Base is the first wait; default 1 s.
	Base time.Duration
	// Max caps the wait; default 60 s.
	Max time.Duration
}

// Delay returns the wait before the attempt-th retry of an unregistered
// orchestration or activity: Base·2^min(attempt−1, 6), at most Max.
func (b UnregisteredBackoff) Delay(attempt uint32) time.Duration {
	n := min(max(attempt, 1)-1, 6)
	return min(b.Base<<n, b.Max)
}

// Options configure a [Runtime]. Zero fields take the defaults given,
// which are duroxide 0.1.29's except where said.
type Options struct {
	// OrchestrationConcurrency is the number of orchestration turns run at
	// once; default 2.
	OrchestrationConcurrency int
	// WorkerConcurrency is the number of activities run at once; default 2.
	WorkerConcurrency int
	// LongPollTimeout is how long a fetch waits for work; default 30 s.
	LongPollTimeout time.Duration
	// MinPollInterval is the least time between two empty fetches of one
	// slot; default 100 ms.
	MinPollInterval time.Duration
	// OrchestratorLockTimeout is an orchestration turn's lease; default 5 s.
	OrchestratorLockTimeout time.Duration
	// OrchestratorLockRenewalBuffer is how long before the lease ends a
	// long turn renews it; default 2 s.
	OrchestratorLockRenewalBuffer time.Duration
	// WorkerLockTimeout is an activity's lease; default 6 s (duroxide's is
	// 30 s). It bounds how long an activity held by a process that died
	// (kill -9, a lost host) waits before another process takes it over,
	// an activity handed to a slot that never started it included; a
	// running activity renews it every half lease (docs/runtime.md §3,
	// "Crash recovery", gives the costs).
	WorkerLockTimeout time.Duration
	// WorkerLockRenewalBuffer is how long before the lease ends a running
	// activity renews it; default 5 s. Leases under 15 s, the default
	// included, are renewed at half their length instead
	// (OrchestratorLockRenewalBuffer likewise: the default 5 s
	// orchestration lease is renewed with 2.5 s left, the default 6 s
	// activity lease with 3 s left).
	WorkerLockRenewalBuffer time.Duration
	// LeaseSafetyMargin is how long before a lease's end the work under it
	// stops when no renewal was confirmed: an activity's context is
	// cancelled with [ErrLeaseExpired], a turn is dropped uncommitted.
	// Another process may take the work over once the lease has ended by
	// its own clock, so the margin is the clock skew between processes
	// that leases tolerate; the provider's own measure of this clock
	// running behind the store's (dynamo.Provider.ClockSkew) is added to
	// it. It is capped at half the time between a renewal and the lease's
	// end. Default 1 s.
	LeaseSafetyMargin time.Duration
	// MaxAttempts is how many deliveries of one message are tried before it
	// is poison and fails its orchestration; default 10.
	MaxAttempts uint32
	// ActivityCancellationGracePeriod is how long a cancelled activity may
	// take to return before its result is discarded; default 10 s.
	ActivityCancellationGracePeriod time.Duration
	// UnregisteredBackoff spaces the retries of work this runtime has no
	// code for.
	UnregisteredBackoff UnregisteredBackoff
	// SupportedReplayVersions are the pinned replay versions this runtime
	// runs; default [0.0.0, ReplayVersion].
	SupportedReplayVersions []provider.SemverRange
	// SessionLockTimeout is a session's lease; default 30 s. The runtime
	// renews the sessions of its owners that fetched or acked a session
	// activity within SessionIdleTimeout plus this lease (docs/runtime.md
	// §3): others hold no session a renewal would extend.
	SessionLockTimeout time.Duration
	// SessionLockRenewalBuffer is how long before the lease ends sessions
	// are renewed; default 5 s.
	SessionLockRenewalBuffer time.Duration
	// SessionIdleTimeout releases a session with no activity for this
	// long; default 300 s. It must exceed the worker lock renewal interval.
	SessionIdleTimeout time.Duration
	// SessionCleanupInterval is how often orphaned sessions are removed
	// while there are sessions about; while clean-ups find none and the
	// runtime does no session work, the interval doubles up to 12 times
	// this (docs/runtime.md §3). Default 300 s.
	SessionCleanupInterval time.Duration
	// MaxSessionsPerRuntime caps the sessions this runtime owns at once;
	// default 10.
	MaxSessionsPerRuntime int
	// WorkerNodeID, when set, owns this runtime's sessions under one stable
	// id (so a restarted process keeps them); default: one id per slot.
	WorkerNodeID string
	// WorkerTags selects the tagged activities this runtime serves; default
	// only untagged ones.
	WorkerTags provider.TagFilter
	// Logger receives the runtime's logs and orchestrations' logs; default
	// slog.Default().
	Logger *slog.Logger
	// Now is the runtime's clock; default time.Now. Leases are timed on
	// it against the expiries the provider reports, so it must be the
	// provider's clock too.
	Now func() time.Time
	// RuntimeID names this runtime in logs and owner ids; default random.
	RuntimeID string
	// ShutdownTimeout bounds the graceful shutdown of Run and
	// RunUntilIdle; default 10 s.
	ShutdownTimeout time.Duration
	// TurnTimeout bounds how long orchestration code may run without
	// awaiting; default 60 s.
	TurnTimeout time.Duration
	// ExecutionCacheSize is how many executions' code the runtime keeps
	// between their turns, blocked where the last turn left it, so that an
	// execution's next turn on this runtime runs only the code its new
	// events wake instead of replaying the whole history; default 1024,
	// negative keeps none. A turn resumes kept code only when the history
	// it brings is exactly the one its last turn here committed (another
	// runtime's turn in between replays). An execution's kept code is its
	// parked goroutines and the engine's state of it (a few words per
	// schedule); it is unwound (its deferred calls run) when it is
	// evicted, least recently used first, and at Shutdown.
	ExecutionCacheSize int
	// FanInWindow caps how long a turn asks the provider to hold back the
	// execution's next turn so that it takes several completions at once
	// (provider.TurnCommit.CompletionWindow): a turn that schedules
	// nothing new and leaves the execution waiting for two or more
	// activities and sub-orchestrations asks for 1 ms per one awaited, up
	// to this; default 100 ms, negative asks for none. A fan-in of
	// thousands then takes its completions in batches instead of a turn
	// for every one or two, each turn costing a fetch and a commit; the
	// window shrinks as the completions arrive, so the last turn waits a
	// few milliseconds at most. A turn that schedules work (one more
	// activity per completion, say) asks for no window.
	FanInWindow time.Duration
	// TracerProvider, when set, receives a span per orchestration turn, per
	// activity delivery and per provider call the runtime makes, all of one
	// instance in one trace (docs/runtime.md, "Observability"). Default
	// nil: no spans, and no tracing code runs.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, receives the runtime's metrics: turns,
	// activities, failures, poison, lock losses, fetch latency and queue
	// wait. Default nil: no metrics, and no metering code runs.
	MeterProvider metric.MeterProvider
	// VerifyReplay is the share of turns, from 0 to 1, that the runtime
	// computes a second time from history, as a runtime without the
	// execution's kept code (ExecutionCacheSize) would, and compares with
	// the turn as run. A difference means the orchestration's code is not
	// deterministic, which kept code otherwise hides until a restart or an
	// eviction: the turn then fails the execution as nondeterministic
	// ([ErrNondeterminism]) with a message that names the orchestration,
	// its version, the first call that differs and the source line of
	// each run's call. Default 0: no check. A checked turn costs a replay
	// of the execution's history, and every call the code makes costs a
	// stack walk to record its line (docs/runtime.md, "Replay checks").
	// durabletest runs with 1.
	VerifyReplay float64
	// Observer, when set, is told of every committed orchestration turn
	// and every activity run, for tests and simple logging without
	// OpenTelemetry. Default nil.
	Observer Observer
}

// DefaultWorkerLockTimeout is the default of Options.WorkerLockTimeout: an
// activity held by a process that died is taken over within about this
// long, where duroxide's default waits 30 s.
const DefaultWorkerLockTimeout = 6 * time.Second

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.OrchestrationConcurrency == 0 {
		o.OrchestrationConcurrency = 2
	}
	if o.WorkerConcurrency == 0 {
		o.WorkerConcurrency = 2
	}
	def(&o.LongPollTimeout, 30*time.Second)
	def(&o.MinPollInterval, 100*time.Millisecond)
	def(&o.OrchestratorLockTimeout, 5*time.Second)
	def(&o.OrchestratorLockRenewalBuffer, 2*time.Second)
	def(&o.WorkerLockTimeout, DefaultWorkerLockTimeout)
	def(&o.WorkerLockRenewalBuffer, 5*time.Second)
	def(&o.LeaseSafetyMargin, time.Second)
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 10
	}
	def(&o.ActivityCancellationGracePeriod, 10*time.Second)
	def(&o.UnregisteredBackoff.Base, time.Second)
	def(&o.UnregisteredBackoff.Max, 60*time.Second)
	if len(o.SupportedReplayVersions) == 0 {
		v, _ := provider.ParseSemVer(ReplayVersion)
		o.SupportedReplayVersions = []provider.SemverRange{{Max: v}}
	}
	def(&o.SessionLockTimeout, 30*time.Second)
	def(&o.SessionLockRenewalBuffer, 5*time.Second)
	def(&o.SessionIdleTimeout, 300*time.Second)
	def(&o.SessionCleanupInterval, 300*time.Second)
	if o.MaxSessionsPerRuntime == 0 {
		o.MaxSessionsPerRuntime = 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RuntimeID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.RuntimeID = hex.EncodeToString(b[:])
	}
	def(&o.ShutdownTimeout, 10*time.Second)
	def(&o.TurnTimeout, 60*time.Second)
	if o.ExecutionCacheSize == 0 {
		o.ExecutionCacheSize = 1024
	}
	def(&o.FanInWindow, 100*time.Millisecond)
}

func (o *Options) validate() error {
	switch {
	case o.OrchestrationConcurrency < 0 || o.WorkerConcurrency < 0:
		return fmt.Errorf("%w: negative concurrency", provider.ErrInvalidInput)
	case !(o.VerifyReplay >= 0 && o.VerifyReplay <= 1):
		return fmt.Errorf("%w: VerifyReplay %v must be between 0 and 1", provider.ErrInvalidInput, o.VerifyReplay)
	case o.LeaseSafetyMargin < 0:
		return fmt.Errorf("%w: negative LeaseSafetyMargin %s", provider.ErrInvalidInput, o.LeaseSafetyMargin)
	case o.OrchestratorLockRenewalBuffer >= o.OrchestratorLockTimeout:
		return fmt.Errorf("%w: OrchestratorLockRenewalBuffer %s must be below OrchestratorLockTimeout %s", provider.ErrInvalidInput, o.OrchestratorLockRenewalBuffer, o.OrchestratorLockTimeout)
	case o.WorkerLockRenewalBuffer >= o.WorkerLockTimeout:
		return fmt.Errorf("%w: WorkerLockRenewalBuffer %s must be below WorkerLockTimeout %s", provider.ErrInvalidInput, o.WorkerLockRenewalBuffer, o.WorkerLockTimeout)
	case o.SessionIdleTimeout <= renewalInterval(o.WorkerLockTimeout, o.WorkerLockRenewalBuffer):
		return fmt.Errorf("%w: SessionIdleTimeout %s must exceed the worker lock renewal interval %s", provider.ErrInvalidInput, o.SessionIdleTimeout, renewalInterval(o.WorkerLockTimeout, o.WorkerLockRenewalBuffer))
	}
	return nil
}

// renewalInterval is how often a lease of timeout is renewed: timeout −
// buffer for leases of 15 s or more, else half the lease; at least 1 s.
func renewalInterval(timeout, buffer time.Duration) time.Duration {
	var d time.Duration
	if timeout >= 15*time.Second {
		d = timeout - buffer
	} else {
		d = (timeout + 1) / 2
	}
	return max(d, time.Second)
}

// Runtime runs the orchestrations and activities of a registry against a
// provider: orchestration and worker slots that fetch work, run it and
// commit the result. Several runtimes, in one process or many, may share a
// provider.
type Runtime struct {
	// skew is the provider's measure of this clock against the store's,
	// if it has one (leaseMargin).
	skew clockSkewer
	// finder is the provider, if it reports finding work (WaitIdle).
	finder workFinder
	p      provider.Provider
	reg    *Registry
	opts   Options
	log    *slog.Logger
	client *Client
	tel    *telemetry

	mu       sync.Mutex
	started  bool
	stopped  bool
	stop     context.CancelFunc      // ends fetches
	stopWork context.CancelCauseFunc // cancels activities and turns
	wg       sync.WaitGroup
	sessions *sessionTracker
	held     *heldCode
	work     *workTracker
	// stableOwners: the worker slots' session owner ids were given
	// (WorkerNodeID or RuntimeID), so a runtime that follows a stopped
	// one may own its sessions; random ids own none at the start.
	stableOwners bool
}

// NewRuntime returns a runtime for reg on p. It makes no request.
func NewRuntime(p provider.Provider, reg *Registry, optFns ...func(*Options)) (*Runtime, error) {
	if p == nil || reg == nil {
		return nil, fmt.Errorf("%w: NewRuntime needs a provider and a registry", provider.ErrInvalidInput)
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	stableOwners := o.WorkerNodeID != "" || o.RuntimeID != ""
	o.setDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	tel, err := newTelemetry(o.TracerProvider, o.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("durable: telemetry: %w", err)
	}
	r := &Runtime{
		p:        p,
		reg:      reg,
		opts:     o,
		log:      o.Logger.With("runtime_id", o.RuntimeID),
		client:   NewClient(p),
		tel:      tel,
		sessions: newSessionTracker(),
		held:     newHeldCode(o.ExecutionCacheSize),
		work:     newWorkTracker(),

		stableOwners: stableOwners,
	}
	if s, ok := p.(clockSkewer); ok {
		r.skew = s
	}
	if f, ok := p.(workFinder); ok {
		r.finder = f
	}
	if tel.tracing {
		r.p = traceProvider(p, tel.tracer)
	}
	return r, nil
}

// Client returns a client over the runtime's provider.
func (r *Runtime) Client() *Client { return r.client }

// layoutChecker is a provider that checks the stored data's layout (the
// DynamoDB provider's shard count) before it is used.
type layoutChecker interface {
	CheckLayout(ctx context.Context) error
}

// Start starts the runtime's slots and returns at once. It fails if the
// runtime was started before, or if the provider checks its stored layout
// (dynamo.Provider.CheckLayout) and it does not match. ctx supplies values
// only: the runtime runs until Shutdown.
func (r *Runtime) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("durable: runtime already started")
	}
	if lc, ok := r.p.(layoutChecker); ok {
		var err error
		for attempt := range 5 {
			if attempt > 0 && !sleep(ctx, 50*time.Millisecond<<attempt) {
				break
			}
			if err = lc.CheckLayout(ctx); err == nil || !provider.IsRetryable(err) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("durable: start: %w", err)
		}
	}
	r.started = true
	fetchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	workCtx, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	r.stop, r.stopWork = stop, stopWork
	for slot := range r.opts.OrchestrationConcurrency {
		r.spawn(func() { r.orchestrationSlot(fetchCtx, workCtx, slot) })
	}
	for slot := range r.opts.WorkerConcurrency {
		r.spawn(func() { r.workerSlot(fetchCtx, workCtx, slot) })
	}
	r.spawn(func() { r.sessionManager(fetchCtx) })
	ranges := make([]string, len(r.opts.SupportedReplayVersions))
	for i, sr := range r.opts.SupportedReplayVersions {
		ranges[i] = fmt.Sprintf(">=%s, <=%s", sr.Min, sr.Max)
	}
	r.log.Info("runtime started", "orchestration_slots", r.opts.OrchestrationConcurrency, "worker_slots", r.opts.WorkerConcurrency, "provider", provider.NameOf(r.p),
		"supported_replay_versions", ranges)
	return nil
}

func (r *Runtime) spawn(fn func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
}

// Shutdown stops the runtime gracefully: fetches stop at once, turns in
// flight finish and commit, running activities are cancelled with cause
// [ErrShutdown] and abandoned without counting an attempt unless they
// finish first. The code of executions kept between turns
// (ExecutionCacheSize) is unwound once the turns are done. It returns when
// every goroutine the runtime started has exited, or with ctx's error when
// ctx ends first (the rest are then cancelled and exit shortly).
func (r *Runtime) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if !r.started || r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	r.mu.Unlock()
	r.stop()
	r.stopWork(ErrShutdown)
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		r.held.close()
		close(done)
	}()
	select {
	case <-done:
		r.log.Info("runtime stopped")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("durable: shutdown: %w", ctx.Err())
	}
}

// Run starts the runtime, blocks until ctx is done, then shuts down within
// ShutdownTimeout.
func (r *Runtime) Run(ctx context.Context) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ShutdownTimeout)
	defer cancel()
	return r.Shutdown(sctx)
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetchBackoff is the wait after the n-th consecutive failed fetch.
func fetchBackoff(err error, n int) time.Duration {
	if !provider.IsRetryable(err) {
		return 100 * time.Millisecond
	}
	return min(100*time.Millisecond<<min(n, 5), 3*time.Second)
}
