package durable_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// renewalRecorder records the owners of each RenewSessionLock call.
type renewalRecorder struct {
	provider.Provider
	mu    sync.Mutex
	calls [][]string
	call  chan struct{}
}

func (r *renewalRecorder) RenewSessionLock(ctx context.Context, owners []string, extendFor, idleTimeout time.Duration) (int, error) {
	r.mu.Lock()
	r.calls = append(r.calls, append([]string(nil), owners...))
	r.mu.Unlock()
	select {
	case r.call <- struct{}{}:
	default:
	}
	return r.Provider.RenewSessionLock(ctx, owners, extendFor, idleTimeout)
}

func (r *renewalRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// awaitCall waits for a RenewSessionLock call after the first n.
func (r *renewalRecorder) awaitCall(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for r.count() <= n {
		select {
		case <-r.call:
		case <-ctx.Done():
			t.Fatalf("no session renewal after the %d before", n)
		}
	}
}

// TestSessionRenewalsSkipIdleOwners: a provider renews only sessions with
// activity within SessionIdleTimeout, and only an owner's own fetches and
// acks make that activity. The runtime stops renewing for an owner that has
// done no session work for longer than the idle timeout plus a lease (each
// renewal is a request per owner, for nothing), and renews again once it
// has.
func TestSessionRenewalsSkipIdleOwners(t *testing.T) {
	ctx := t.Context()
	clock := faults.NewClock(time.Now, 0)
	// The provider shares the runtime's clock, as leases require.
	rec := &renewalRecorder{Provider: memprovider.New(func(o *memprovider.Options) { o.Now = clock.Now }), call: make(chan struct{}, 1)}
	const (
		lease = 300 * time.Millisecond
		idle  = 2 * time.Second
	)
	rt := startSessionRuntime(t, rec, func(o *durable.Options) {
		o.Now = clock.Now
		o.SessionLockTimeout = lease // a renewal every second, the shortest interval
		o.SessionIdleTimeout = idle
		o.WorkerNodeID = "node-1" // a stable id: it may own a stopped runtime's sessions
	})

	// Just started: the owner may hold sessions of a process it follows.
	rec.awaitCall(t, 0)

	// Idle for longer than the idle timeout and a lease: no more renewals
	// (one decided before the clock moved may still land).
	clock.SetOffset(idle + lease + time.Second)
	before := rec.count()
	window := time.NewTimer(4 * time.Second) // four renewal intervals
	<-window.C
	if n := rec.count() - before; n > 1 {
		t.Fatalf("%d session renewals in four intervals after the owner went idle; want none (one in flight at most)", n)
	}

	// Session work makes the owner renewable again.
	runOnSession(ctx, t, rt)
	rec.awaitCall(t, rec.count())
}

// TestSessionRenewalsWaitForANewOwnersWork: a worker slot whose owner id
// is new (no WorkerNodeID or RuntimeID given: random ids) holds no session
// when it starts, so the runtime renews nothing for it until it has done
// session work.
func TestSessionRenewalsWaitForANewOwnersWork(t *testing.T) {
	ctx := t.Context()
	rec := &renewalRecorder{Provider: memprovider.New(), call: make(chan struct{}, 1)}
	rt := startSessionRuntime(t, rec, func(o *durable.Options) {
		o.SessionLockTimeout = 300 * time.Millisecond // a renewal every second
	})
	window := time.NewTimer(4 * time.Second) // four renewal intervals
	<-window.C
	if n := rec.count(); n != 0 {
		t.Fatalf("%d session renewals in four intervals after the start, before any session work; want none", n)
	}
	runOnSession(ctx, t, rt)
	rec.awaitCall(t, 0)
}

// onSession runs greet on session s1.
var onSession = durable.NewOrchestration("OnSession", func(ctx *durable.OrchestrationContext, name string) (string, error) {
	return greet.Call(ctx, name, durable.OnSession("s1")).Get(ctx)
})

// runOnSession runs one OnSession orchestration to its end on rt.
func runOnSession(ctx context.Context, t *testing.T, rt *durable.Runtime) {
	t.Helper()
	c := rt.Client()
	if err := c.StartOrchestration(ctx, "s", "OnSession", "Rust"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForCompletion(ctx, "s"); err != nil {
		t.Fatal(err)
	}
}

// startSessionRuntime starts a runtime of one worker slot on p that runs
// OnSession, with renewal-friendly timeouts and then configure's options,
// and shuts it down when the test ends.
func startSessionRuntime(t *testing.T, p provider.Provider, configure func(*durable.Options)) *durable.Runtime {
	t.Helper()
	reg, err := durable.NewRegistry(greet, onSession)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.Logger = quietLogger()
		o.LongPollTimeout = 200 * time.Millisecond
		o.WorkerConcurrency = 1
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = time.Second, 500*time.Millisecond
		configure(o)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return rt
}

// cleanupCounter counts CleanupOrphanedSessions calls.
type cleanupCounter struct {
	provider.Provider
	mu    sync.Mutex
	calls int
}

func (c *cleanupCounter) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Provider.CleanupOrphanedSessions(ctx, idleTimeout)
}

// TestSessionCleanupBacksOffWhenIdle: with no sessions about, clean-ups of
// orphaned sessions space out (each is a Query per shard on DynamoDB):
// with a 200 ms interval, in the 3 s after the first, at most 4 more (400,
// 800, 1600 ms apart, and a margin), where a fixed interval made 15.
func TestSessionCleanupBacksOffWhenIdle(t *testing.T) {
	counter := &cleanupCounter{Provider: memprovider.New()}
	reg, err := durable.NewRegistry(greet)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(counter, reg, func(o *durable.Options) {
		o.Logger = quietLogger()
		o.LongPollTimeout = 200 * time.Millisecond
		o.SessionCleanupInterval = 200 * time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		counter.mu.Lock()
		defer counter.mu.Unlock()
		return counter.calls
	}
	for calls() == 0 {
		select {
		case <-t.Context().Done():
			t.Fatal("no clean-up")
		case <-time.After(10 * time.Millisecond):
		}
	}
	window := time.NewTimer(3 * time.Second)
	<-window.C
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := calls() - 1; n > 4 {
		t.Fatalf("%d clean-ups in the 3 s after the first of an idle runtime with a 200 ms interval; want at most 4", n)
	}
}
