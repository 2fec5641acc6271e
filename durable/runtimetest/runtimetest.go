// Package runtimetest is the runtime's end-to-end suite: ported duroxide
// runtime tests that run orchestrations on a real [durable.Runtime] over
// any [provider.Provider]. Providers call [Run] from their own tests, as
// they call providertest.Run for the storage contract.
//
// Tests are grouped in categories ("Samples", "Timers", ...), each test
// named after the duroxide test it ports. Every test checks the invariants
// of each history it produced (contiguous event ids, one terminal event,
// each schedule completed at most once).
//
// A check that a message or an activity's result changed nothing waits
// for the committed turn that consumed it ([H.AwaitConsumed],
// [H.AwaitActivitiesSettled]), not for an empty queue: a fetch's lock
// hides its messages before that turn commits.
package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
	"github.com/duradyn/duradyn/provider"
)

// Factory makes the providers the suite runs on.
type Factory struct {
	// New returns a fresh, empty provider for one test; its cleanup is the
	// factory's (t.Cleanup).
	New func(t testing.TB) provider.Provider
	// ClientProvider, when set, wraps the provider the harness's client
	// (and its waits) use; runtimes use the provider itself. A suite under
	// fault injection gives the client a retrying wrapper, as an
	// application would, while the runtimes meet every fault.
	ClientProvider func(provider.Provider) provider.Provider
	// Redelivers marks providers that inject faults forcing correct
	// redeliveries. The tests that count exact deliveries (ExactDelivery)
	// are left out of such a run: run them on the same providers without
	// faults, in a run of their own.
	Redelivers bool
	// Options adjusts every runtime the suite starts (for example longer
	// lease timeouts for a provider with slower requests).
	Options func(*durable.Options)
	// LeaseScale multiplies every lease under 15 s a test asks for (lock
	// timeouts and their renewal buffers of the runtimes it starts, and
	// leases it takes itself through H.Lease): a provider whose requests take a large
	// share of a short lease (an emulator shared by parallel tests) keeps
	// the same margins. Zero means 1.
	LeaseScale float64
	// Timeout bounds each wait for an orchestration; default 30 s.
	Timeout time.Duration
	// Convergence is how far the provider's listings and queue depths may
	// lag its writes (an index that is eventually consistent): a test that
	// decides on a depth of zero first lets that long pass since its
	// write. Zero means exact.
	Convergence time.Duration
	// Parallel runs the tests of a category in parallel.
	Parallel bool
	// Categories, when set, names the only categories the run holds (for
	// a configuration that differs from another run's in one concern).
	Categories []string
}

// Test is one ported test.
type Test struct {
	// Name is the duroxide test's name.
	Name string
	// Run runs the test with a harness over a fresh provider.
	Run func(h *H)
}

// Category is a group of tests.
type Category struct {
	Name  string
	Tests []Test
}

// Categories returns the suite's categories, in running order.
func Categories() []Category {
	return []Category{
		{"Samples", samplesTests},
		{"Composition", compositionTests},
		{"Timers", timerTests},
		{"Retry", retryTests},
		{"SystemCalls", systemCallTests},
		{"ContinueAsNew", continueAsNewTests},
		{"Errors", errorTests},
		{"Nondeterminism", nondeterminismTests},
		{"OrchestrationStatus", statusTests},
		{"Cancellation", cancellationTests},
		{"ExternalEvents", externalEventTests},
		{"CustomStatus", customStatusTests},
		{"KV", kvTests},
		{"Poison", poisonTests},
		{"Reliability", reliabilityTests},
		{"Sessions", sessionTests},
		{"Tags", tagTests},
		{"Versioning", versioningTests},
		{"Management", managementTests},
		{"Scenarios", scenarioTests},
	}
}

// ExactDelivery lists the tests (as "Category/name", or a whole
// "Category") that assert how often an activity ran or a message was
// delivered, inject faults of their own through a wrapper, drive the
// provider by hand with exact attempt counts, or expect two messages to
// arrive in one batch. Delivery is at least once: under injected faults
// any of them may see a correct redelivery, so a run whose factory
// Redelivers leaves them out.
var ExactDelivery = map[string]bool{
	// Whole categories: they inject faults of their own through a wrapper
	// and count attempts, renewals and lock losses exactly.
	"Reliability": true,
	"Poison":      true,
	"Retry/test_retry_timeout_with_continue_as_new":                                              true,
	"Retry/test_activity_exhausts_all_attempts":                                                  true,
	"Cancellation/user_cancel_instance_and_dropped_future_both_enqueue_cancelinstance_for_child": true,
}

// Run runs every category, or those f names, against providers from f.
func Run(t *testing.T, f Factory) {
	cats, err := f.categories()
	if err != nil {
		t.Fatal(err)
	}
	for _, cat := range cats {
		t.Run(cat.Name, func(t *testing.T) {
			if f.Parallel {
				t.Parallel()
			}
			for _, test := range cat.Tests {
				if f.Redelivers && (ExactDelivery[cat.Name] || ExactDelivery[cat.Name+"/"+test.Name]) {
					continue
				}
				t.Run(test.Name, func(t *testing.T) {
					if f.Parallel {
						t.Parallel()
					}
					test.Run(newHarness(t, f))
				})
			}
		})
	}
}

// categories returns the categories f's run holds, in running order: those
// Categories names, or all. A name that is no category is an error.
func (f Factory) categories() ([]Category, error) {
	all := Categories()
	for _, name := range f.Categories {
		if !slices.ContainsFunc(all, func(c Category) bool { return c.Name == name }) {
			return nil, fmt.Errorf("runtimetest: Factory.Categories names %q, which is no category", name)
		}
	}
	if f.Categories == nil {
		return all, nil
	}
	return slices.DeleteFunc(all, func(c Category) bool { return !slices.Contains(f.Categories, c.Name) }), nil
}

// H is a test's harness: a fresh provider, runtimes started on it and
// stopped when the test ends, and waits and checks.
type H struct {
	*testing.T
	// P is the test's provider. Its runtimes use it through a wrapper that
	// records what their committed turns consumed (AwaitConsumed,
	// AwaitActivitiesSettled); the test's own calls go through Direct.
	P provider.Provider
	// Client is a client over P.
	Client *durable.Client

	f        Factory
	runtimes int
	regs     []*durable.Registry // every registry a runtime of the test served
	watch    *consumedRecord     // what the runtimes' committed turns consumed
}

func newHarness(t *testing.T, f Factory) *H {
	p := f.New(t)
	cp := p
	if f.ClientProvider != nil {
		cp = f.ClientProvider(p)
	}
	return &H{T: t, P: p, Client: durable.NewClient(cp), f: f, watch: newConsumedRecord()}
}

// Redelivers reports whether the test's provider injects faults that force
// correct redeliveries (Factory.Redelivers): a test that counts runs then
// checks that every run beyond the first of an activity is a later
// delivery of it, not a second run of one delivery or of one schedule.
func (h *H) Redelivers() bool { return h.f.Redelivers }

// Logger returns the suite's logger: quiet unless DURADYN_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("DURADYN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Defaults are the runtime options the suite starts from: short polls and
// backoffs so tests finish quickly.
func Defaults(o *durable.Options) {
	o.LongPollTimeout = 500 * time.Millisecond
	o.MinPollInterval = 10 * time.Millisecond
	o.Logger = Logger()
	o.UnregisteredBackoff = durable.UnregisteredBackoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	o.ShutdownTimeout = 10 * time.Second
}

// Registry returns a registry of defs, failing the test on error.
func (h *H) Registry(defs ...durable.Definition) *durable.Registry {
	h.Helper()
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		h.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

// Runtime starts a runtime for reg on the test's provider with the suite's
// defaults, the factory's options, then optFns; it is shut down (and
// checked to stop) when the test ends. CheckReplay replays with reg.
func (h *H) Runtime(reg *durable.Registry, optFns ...func(*durable.Options)) *durable.Runtime {
	h.Helper()
	h.regs = append(h.regs, reg)
	return h.runtimeOn(watchConsumed(h.P, h.watch), reg, optFns...)
}

// runtimeOn starts a runtime for reg on p (the test's provider, or a
// wrapper of it) as Runtime does, leases scaled by the factory's
// LeaseScale, without adding reg to the registries CheckReplay uses.
func (h *H) runtimeOn(p provider.Provider, reg *durable.Registry, optFns ...func(*durable.Options)) *durable.Runtime {
	h.Helper()
	h.runtimes++
	id := fmt.Sprintf("rt%d", h.runtimes)
	fns := []func(*durable.Options){Defaults, func(o *durable.Options) { o.RuntimeID = id }}
	if h.f.Options != nil {
		fns = append(fns, h.f.Options)
	}
	fns = append(fns, optFns...)
	fns = append(fns, func(o *durable.Options) {
		for _, pair := range [][2]*time.Duration{
			{&o.OrchestratorLockTimeout, &o.OrchestratorLockRenewalBuffer},
			{&o.WorkerLockTimeout, &o.WorkerLockRenewalBuffer},
			{&o.SessionLockTimeout, &o.SessionLockRenewalBuffer},
		} {
			if h.Lease(*pair[0]) != *pair[0] { // a short lease: scale its buffer with it
				*pair[0], *pair[1] = h.Lease(*pair[0]), time.Duration(float64(*pair[1])*h.f.LeaseScale)
			}
		}
	})
	rt, err := durable.NewRuntime(p, reg, fns...)
	if err != nil {
		h.Fatalf("NewRuntime: %v", err)
	}
	if err := rt.Start(context.Background()); err != nil {
		h.Fatalf("Start: %v", err)
	}
	h.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			h.Errorf("runtime %s: Shutdown: %v", id, err)
		}
	})
	return rt
}

// longLease is where scaling stops: a lease this long leaves any provider
// room (and scaling it would push renewals past session idle timeouts).
const longLease = 15 * time.Second

// Lease returns d scaled by the factory's LeaseScale when it is shorter than
// 15 s: use it for every lease a test takes or sets.
func (h *H) Lease(d time.Duration) time.Duration {
	if h.f.LeaseScale <= 1 || d >= longLease {
		return d
	}
	return time.Duration(float64(d) * h.f.LeaseScale)
}

// Serve registers defs and starts one runtime for them.
func (h *H) Serve(defs ...durable.Definition) *durable.Runtime {
	h.Helper()
	return h.Runtime(h.Registry(defs...))
}

// Ctx returns a context bounded by the factory's timeout.
func (h *H) Ctx() context.Context {
	d := h.f.Timeout
	if d == 0 {
		d = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	h.Cleanup(cancel)
	return ctx
}

// Start starts instance id of orchestration name.
func (h *H) Start(name, id string, in any, opts ...durable.Option) {
	h.Helper()
	if err := h.Client.StartOrchestration(h.Ctx(), id, name, in, opts...); err != nil {
		h.Fatalf("start %s %s: %v", name, id, err)
	}
}

// Wait waits for id to complete or fail and checks its history.
func (h *H) Wait(id string) *durable.Status {
	h.Helper()
	st, err := h.Client.WaitForCompletion(h.Ctx(), id)
	if err != nil {
		h.Fatalf("wait %s: %v (history %v)", id, err, EventTypes(h.history(id)))
	}
	h.CheckHistory(id)
	h.CheckReplay(id)
	return st
}

// Completed waits for id and returns its output, failing the test unless
// it completed.
func (h *H) Completed(id string) string {
	h.Helper()
	st := h.Wait(id)
	if st.State != durable.StateCompleted {
		h.Fatalf("%s: %v (%v); want Completed", id, st.State, st.Failure)
	}
	return st.Output
}

// Failed waits for id and returns its failure, failing the test unless it
// failed.
func (h *H) Failed(id string) provider.ErrorDetails {
	h.Helper()
	st := h.Wait(id)
	if st.State != durable.StateFailed {
		h.Fatalf("%s: %v with output %q; want Failed", id, st.State, st.Output)
	}
	return st.Failure
}

// WaitFor polls cond until it holds or the test's timeout passes; what
// describes the condition in the failure.
func (h *H) WaitFor(what string, cond func() bool) {
	h.Helper()
	ctx := h.Ctx()
	for !cond() {
		select {
		case <-ctx.Done():
			h.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// eventually polls check until it reports true; on timeout the test
// fails with what and check's last detail.
func eventually(h *H, what string, check func() (bool, string)) {
	h.Helper()
	ctx := h.Ctx()
	for {
		ok, detail := check()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			h.Fatalf("timed out waiting for %s; last: %s", what, detail)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// AwaitEvent waits until id's current history holds an event of type typ
// (provider.EventKind.EventType) and returns it.
func (h *H) AwaitEvent(id, typ string) provider.Event {
	h.Helper()
	var found provider.Event
	h.WaitFor(fmt.Sprintf("%s in %s's history", typ, id), func() bool {
		for _, ev := range h.history(id) {
			if ev.Kind.EventType() == typ {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// AwaitSubscription waits until id waits for the external event name
// (durable.Client.WaitForSubscription): an event raised then is delivered
// to that wait instead of being dropped.
func (h *H) AwaitSubscription(id, name string) {
	h.Helper()
	if err := h.Client.WaitForSubscription(h.Ctx(), id, name); err != nil {
		h.Fatalf("waiting for %s to wait for %s: %v", id, name, err)
	}
}

// Direct returns the provider for the test's own provider calls (reads,
// messages sent and items locked by hand): P behind Factory.ClientProvider's
// wrapper when the factory has one, so that under injected faults the test
// retries as an application would while the runtimes meet every fault.
func (h *H) Direct() provider.Provider {
	if h.f.ClientProvider != nil {
		return h.f.ClientProvider(h.P)
	}
	return h.P
}

// History returns id's current execution's history.
func (h *H) History(id string) []provider.Event {
	h.Helper()
	events, err := h.Direct().Read(h.Ctx(), id)
	if err != nil {
		h.Fatalf("read %s: %v", id, err)
	}
	return events
}

func (h *H) history(id string) []provider.Event {
	events, _ := h.Direct().Read(context.Background(), id)
	return events
}

// EventTypes lists the types of events.
func EventTypes(events []provider.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Kind.EventType()
	}
	return out
}

// Count returns how many of events have type typ.
func Count(events []provider.Event, typ string) int {
	n := 0
	for _, ev := range events {
		if ev.Kind.EventType() == typ {
			n++
		}
	}
	return n
}

// CheckHistory checks the invariants of id's current history: ids
// contiguous from 1, at most one terminal event and nothing after it but
// breadcrumbs, each schedule completed at most once.
func (h *H) CheckHistory(id string) {
	h.Helper()
	if err := CheckInvariants(h.History(id)); err != nil {
		h.Errorf("%s: %v\nhistory: %v", id, err, EventTypes(h.history(id)))
	}
}

// CheckReplay replays every execution of id against the registries the
// test's runtimes served (durabletest.Replay): a finished execution must be
// reproduced by the code that ran it. With several registries (rolling
// deployments, code swaps) one of them must reproduce each execution.
func (h *H) CheckReplay(id string) {
	h.Helper()
	if len(h.regs) == 0 {
		return
	}
	var events []provider.Event
	for _, exec := range h.executions(id) {
		events = append(events, exec...)
	}
	var errs []error
	for _, reg := range h.regs {
		err := durabletest.Replay(reg, events)
		if err == nil || !errors.Is(err, durable.ErrNondeterminism) {
			// Reproduced, or not replayable here at all (an orchestration
			// no registry of the test has, as poison tests start).
			return
		}
		errs = append(errs, err)
	}
	h.Errorf("%s: recorded history does not replay: %v\nhistory: %v", id, errors.Join(errs...), EventTypes(events))
}

// executions returns the histories of id's executions: all of them when
// the provider has Admin, else the current one.
func (h *H) executions(id string) [][]provider.Event {
	h.Helper()
	admin, ok := provider.AdminOf(h.Direct())
	if !ok {
		return [][]provider.Event{h.History(id)}
	}
	ids, err := admin.ListExecutions(h.Ctx(), id)
	if err != nil {
		h.Fatalf("list executions of %s: %v", id, err)
	}
	out := make([][]provider.Event, 0, len(ids))
	for _, exec := range ids {
		events, err := h.Direct().ReadWithExecution(h.Ctx(), id, exec)
		if err != nil {
			h.Fatalf("read %s execution %d: %v", id, exec, err)
		}
		out = append(out, events)
	}
	return out
}

// CheckInvariants checks one execution's history.
func CheckInvariants(events []provider.Event) error {
	terminals := 0
	completed := map[uint64]int{}
	for i, ev := range events {
		if ev.EventID != uint64(i+1) {
			return fmt.Errorf("event %d has id %d: ids not contiguous", i, ev.EventID)
		}
		if ev.IsTerminal() {
			terminals++
		}
		switch ev.Kind.(type) {
		case provider.ActivityCompleted, provider.ActivityFailed, provider.TimerFired,
			provider.SubOrchestrationCompleted, provider.SubOrchestrationFailed:
			if ev.SourceEventID != nil {
				completed[*ev.SourceEventID]++
			}
		}
	}
	if terminals > 1 {
		return fmt.Errorf("%d terminal events", terminals)
	}
	for id, n := range completed {
		if n > 1 {
			return fmt.Errorf("schedule %d completed %d times", id, n)
		}
	}
	if len(events) > 0 && !slices.ContainsFunc(events[:1], func(ev provider.Event) bool {
		_, ok := ev.Kind.(provider.OrchestrationStarted)
		return ok
	}) {
		return fmt.Errorf("first event is %s", events[0].Kind.EventType())
	}
	return nil
}
