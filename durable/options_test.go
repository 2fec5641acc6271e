package durable

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// duroxide's polling tests assert wall-clock times ("completes in under
// 500 ms"). These ports assert request counts instead: a wrapper counts
// the runtime's fetches, and the bounds below hold however slow the
// machine is (a slow machine makes fewer requests, never more).

// opCounter counts the fetches that reach a provider. With shortPoll it
// passes a zero poll timeout on, as a provider that cannot long-poll
// behaves.
type opCounter struct {
	provider.Provider
	shortPoll bool

	orchCalls, orchItems, orchEmpty atomic.Int64
	workCalls, workItems, workEmpty atomic.Int64

	mu    sync.Mutex
	polls []time.Duration // the distinct poll timeouts the runtime asked for
}

func (p *opCounter) notePoll(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.polls, d) {
		p.polls = append(p.polls, d)
	}
}

func (p *opCounter) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	p.orchCalls.Add(1)
	p.notePoll(pollTimeout)
	if p.shortPoll {
		pollTimeout = 0
	}
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	switch {
	case err != nil:
	case item != nil:
		p.orchItems.Add(1)
	default:
		p.orchEmpty.Add(1)
	}
	return item, err
}

func (p *opCounter) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	p.workCalls.Add(1)
	p.notePoll(pollTimeout)
	if p.shortPoll {
		pollTimeout = 0
	}
	item, err := p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	switch {
	case err != nil:
	case item != nil:
		p.workItems.Add(1)
	default:
		p.workEmpty.Add(1)
	}
	return item, err
}

// opCounts is a snapshot of an opCounter.
type opCounts struct {
	orchCalls, orchItems, orchEmpty int64
	workCalls, workItems, workEmpty int64
}

func (p *opCounter) counts() opCounts {
	return opCounts{
		p.orchCalls.Load(), p.orchItems.Load(), p.orchEmpty.Load(),
		p.workCalls.Load(), p.workItems.Load(), p.workEmpty.Load(),
	}
}

func (p *opCounter) pollTimeouts() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.polls)
}

// opEnv is a runtime over a counted memprovider; its client uses the
// memprovider directly, so only the runtime's fetches are counted.
type opEnv struct {
	mem     *memprovider.Provider
	counter *opCounter
	rt      *Runtime
	c       *Client
	began   time.Time // just before the runtime started
	opts    Options
}

// opQuickTaskRegistry is the original tests' workflow: an orchestration
// that runs one activity.
func opQuickTaskRegistry(t *testing.T, orch, activity string) *Registry {
	t.Helper()
	reg, err := NewRegistry(
		ActivityFunc(activity, func(context.Context, string) (string, error) { return "done", nil }),
		OrchestrationFunc(orch, func(ctx *OrchestrationContext, _ string) (string, error) {
			out, err := CallActivity[Raw](ctx, activity, Raw("")).Get(ctx)
			return string(out), err
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func opStart(t *testing.T, reg *Registry, shortPoll bool, optFns ...func(*Options)) *opEnv {
	t.Helper()
	mem := memprovider.New()
	counter := &opCounter{Provider: mem, shortPoll: shortPoll}
	e := &opEnv{mem: mem, counter: counter, c: NewClient(mem)}
	fns := append([]func(*Options){func(o *Options) { o.Logger = slog.New(slog.DiscardHandler) }}, optFns...)
	fns = append(fns, func(o *Options) { e.opts = *o })
	e.began = time.Now()
	e.rt = utStart(t, counter, reg, fns...)
	e.opts.setDefaults()
	return e
}

// run starts instance id of orch and waits for it to complete with "done".
func (e *opEnv) run(t *testing.T, orch, id string) {
	t.Helper()
	if err := e.c.StartOrchestration(utCtx(t), id, orch, Raw("")); err != nil {
		t.Fatal(err)
	}
	if out := utCompleted(t, e.c, id); out != "done" {
		t.Fatalf("output %q", out)
	}
}

// checkEmptyFetchBound checks that no dispatcher slot made empty fetches
// more often than one per period since the runtime started: a slot's
// empty fetches begin at least period apart.
func (e *opEnv) checkEmptyFetchBound(t *testing.T, c opCounts, period time.Duration) {
	t.Helper()
	per := int64(time.Since(e.began)/period) + 1
	if maxOrch := int64(e.opts.OrchestrationConcurrency) * per; c.orchEmpty > maxOrch {
		t.Errorf("%d empty orchestration fetches; at most %d expected (%d slots, one per %v)", c.orchEmpty, maxOrch, e.opts.OrchestrationConcurrency, period)
	}
	if maxWork := int64(e.opts.WorkerConcurrency) * per; c.workEmpty > maxWork {
		t.Errorf("%d empty work fetches; at most %d expected (%d slots, one per %v)", c.workEmpty, maxWork, e.opts.WorkerConcurrency, period)
	}
}

// checkNoIdlePolling checks that every fetch so far either returned work
// or is still waiting for some: one outstanding long poll per slot.
func (e *opEnv) checkNoIdlePolling(t *testing.T, c opCounts) {
	t.Helper()
	if c.orchEmpty != 0 || c.workEmpty != 0 {
		t.Errorf("%+v: a long poll returned empty", c)
	}
	if c.orchCalls > c.orchItems+int64(e.opts.OrchestrationConcurrency) ||
		c.workCalls > c.workItems+int64(e.opts.WorkerConcurrency) {
		t.Errorf("%+v: more fetches than items plus one outstanding poll per slot", c)
	}
}

// TestOptions ports duroxide's tests/runtime_options_test.rs.
func TestOptions(t *testing.T) {
	t.Run("test_default_polling_frequency", func(t *testing.T) {
		// Default options: a 30 s long poll. The workflow's two turns and
		// its activity are fetched by polls that were already waiting, and
		// no poll comes back empty.
		e := opStart(t, opQuickTaskRegistry(t, "TestOrch", "QuickTask"), false)
		e.run(t, "TestOrch", "test-default")
		c := e.counter.counts()
		if c.orchItems != 2 || c.workItems != 1 {
			t.Errorf("%+v: want 2 orchestration turns and 1 activity fetched", c)
		}
		e.checkNoIdlePolling(t, c)
		if got := e.counter.pollTimeouts(); !slices.Equal(got, []time.Duration{30 * time.Second}) {
			t.Errorf("poll timeouts %v; want the default 30s", got)
		}
	})
	for _, tc := range []struct {
		name, orch, activity string
		interval             time.Duration
	}{
		{"test_custom_polling_frequency", "TestOrch", "QuickTask", 50 * time.Millisecond},
		{"test_fast_polling", "FastOrch", "Task", time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A provider that cannot long-poll: the runtime spaces its
			// empty fetches by MinPollInterval.
			e := opStart(t, opQuickTaskRegistry(t, tc.orch, tc.activity), true, func(o *Options) {
				o.MinPollInterval = tc.interval
			})
			e.run(t, tc.orch, "test-"+tc.name)
			// Let the runtime idle for a few polls of each slot.
			utWaitFor(t, "idle polls", func() bool {
				c := e.counter.counts()
				return c.orchEmpty >= 6 && c.workEmpty >= 6
			})
			e.checkEmptyFetchBound(t, e.counter.counts(), tc.interval)
		})
	}
}

// TestOptionsLongPoll ports duroxide's tests/long_poll_tests.rs. duroxide
// simulates long polling with a wrapper around SQLite; memprovider
// long-polls itself.
func TestOptionsLongPoll(t *testing.T) {
	t.Run("test_long_poll_waits_for_timeout", func(t *testing.T) {
		// A fetch with nothing to do waits its whole poll timeout.
		const poll = 100 * time.Millisecond
		mem := memprovider.New()
		began := time.Now()
		item, err := mem.FetchOrchestrationItem(utCtx(t), 5*time.Second, poll, nil)
		if err != nil || item != nil {
			t.Fatalf("fetch = %v, %v; want nothing", item, err)
		}
		if waited := time.Since(began); waited < poll {
			t.Fatalf("fetch returned after %v; want at least the %v poll timeout", waited, poll)
		}
		// So an idle runtime makes one request per slot per poll timeout,
		// although its MinPollInterval is far shorter.
		e := opStart(t, opQuickTaskRegistry(t, "TestOrch", "QuickTask"), false, func(o *Options) {
			o.LongPollTimeout = poll
			o.MinPollInterval = time.Millisecond
		})
		utWaitFor(t, "idle polls", func() bool {
			c := e.counter.counts()
			return c.orchEmpty >= 4 && c.workEmpty >= 4
		})
		e.checkEmptyFetchBound(t, e.counter.counts(), poll)
	})
	t.Run("test_long_poll_returns_early_on_work", func(t *testing.T) {
		// A waiting fetch returns as soon as work arrives.
		mem := memprovider.New()
		type result struct {
			item *provider.OrchestrationItem
			err  error
		}
		done := make(chan result, 1)
		ctx := utCtx(t)
		go func() {
			item, err := mem.FetchOrchestrationItem(ctx, 5*time.Second, time.Hour, nil)
			done <- result{item, err}
		}()
		select {
		case r := <-done:
			t.Fatalf("fetch returned %v, %v before any work", r.item, r.err)
		default:
		}
		if err := NewClient(mem).StartOrchestration(utCtx(t), "test-early-return", "TestOrch", Raw("")); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.err != nil || r.item == nil || r.item.Instance != "test-early-return" {
				t.Fatalf("fetch = %+v, %v; want the start", r.item, r.err)
			}
		case <-time.After(utTimeout):
			t.Fatal("the fetch did not return when work arrived")
		}
		// A runtime whose slots are all waiting in hour-long polls picks
		// the workflow up at once: no poll ever comes back empty.
		e := opStart(t, opQuickTaskRegistry(t, "TestOrch", "QuickTask"), false, func(o *Options) {
			o.LongPollTimeout = time.Hour
		})
		utWaitFor(t, "every slot polling", func() bool {
			c := e.counter.counts()
			return c.orchCalls == int64(e.opts.OrchestrationConcurrency) && c.workCalls == int64(e.opts.WorkerConcurrency)
		})
		e.run(t, "TestOrch", "test-early-return")
		e.checkNoIdlePolling(t, e.counter.counts())
	})
	t.Run("test_dispatcher_uses_long_polling", func(t *testing.T) {
		const poll = time.Second
		e := opStart(t, opQuickTaskRegistry(t, "TestOrch", "QuickTask"), false, func(o *Options) {
			o.LongPollTimeout = poll
			o.MinPollInterval = 100 * time.Millisecond
		})
		e.run(t, "TestOrch", "test-long-poll-flow")
		c := e.counter.counts()
		if got := e.counter.pollTimeouts(); !slices.Equal(got, []time.Duration{poll}) {
			t.Errorf("the runtime asked for poll timeouts %v; want %v", got, poll)
		}
		if c.orchItems != 2 || c.workItems != 1 {
			t.Errorf("%+v: want 2 orchestration turns and 1 activity fetched", c)
		}
		e.checkEmptyFetchBound(t, c, poll)
	})
}
