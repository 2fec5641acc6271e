package durabletest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// clock is the simulated clock shared by the provider and the runtime. It
// only moves when the driver skips to the next due time.
type clock struct{ nanos atomic.Int64 }

func (c *clock) Now() time.Time { return time.Unix(0, c.nanos.Load()).UTC() }

func (c *clock) set(t time.Time) { c.nanos.Store(t.UnixNano()) }

// idleProvider wraps a memprovider to know when the system is idle and when
// it next has something to do.
//
// Idleness. The runtime's orchestration and worker slots are the only
// callers of the fetch methods, and a slot holds its item (turn or
// activity) from its fetch until it acks or abandons it and fetches again.
// The wrapper's fetches never long-poll the memprovider: each makes one
// non-blocking attempt and, when it finds nothing, parks on the wrapper's
// change signal. Every call that can make work available (enqueues, acks,
// abandons, appends) and every clock skip bumps a generation and wakes the
// parked slots, which attempt again. The system is idle exactly when every
// slot is parked after an attempt made at the current generation: no turn
// or activity is held, and nothing fetchable appeared since each slot last
// looked. No sleep or timeout is involved.
//
// Due times. The wrapper records the time at which each delayed message
// becomes visible: TimerFired items committed by acks (their FireAtMs),
// enqueues with a delay, and abandons with a delay (unregistered backoff,
// session limits). When idle, the driver skips the clock to the earliest
// such time still ahead of it.
//
// Gating. Fetches only attempt while the driver runs (Env.Run, Env.Wait,
// Env.RunUntilIdle), so a test can start instances and raise events
// between runs and know exactly what the orchestrations have seen.
type idleProvider struct {
	*memprovider.Provider
	clock *clock
	slots int // fetching goroutines of the runtime

	mu      sync.Mutex
	gen     uint64
	running bool
	parked  int           // slots parked after an attempt at gen
	changed chan struct{} // closed and replaced on every change
	idle    chan struct{} // signalled (buffered) when the system turns idle
	due     []time.Time   // visibility times of delayed messages, unsorted
}

var _ provider.Provider = (*idleProvider)(nil)

func newIdleProvider(c *clock, slots int) *idleProvider {
	return &idleProvider{
		Provider: memprovider.New(func(o *memprovider.Options) { o.Now = c.Now }),
		clock:    c,
		slots:    slots,
		changed:  make(chan struct{}),
		idle:     make(chan struct{}, 1),
	}
}

// notifyLocked records a change: parked slots wake and attempt again.
// Callers hold p.mu.
func (p *idleProvider) notifyLocked() {
	p.gen++
	p.parked = 0
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *idleProvider) notify(due ...time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, t := range due {
		if t.After(now) {
			p.due = append(p.due, t)
		}
	}
	p.notifyLocked()
}

// isIdleLocked reports whether the running system has nothing to do now.
func (p *idleProvider) isIdleLocked() bool {
	return p.running && p.parked >= p.slots
}

// setRunning opens or closes the fetch gate.
func (p *idleProvider) setRunning(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = on
	p.notifyLocked()
}

// nextDue drops the due times not ahead of now and returns the earliest of
// the rest.
func (p *idleProvider) nextDue() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	p.due = slices.DeleteFunc(p.due, func(t time.Time) bool { return !t.After(now) })
	if len(p.due) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(p.due, func(a, b time.Time) int { return a.Compare(b) }), true
}

// advance moves the clock to t and wakes the slots.
func (p *idleProvider) advance(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.clock.Now()) {
		p.clock.set(t)
	}
	p.notifyLocked()
}

// fetch runs attempt until it yields work, pollTimeout (real time) passes
// or ctx ends. attempt makes one non-blocking fetch.
func fetch[T any](p *idleProvider, ctx context.Context, op string, pollTimeout time.Duration, attempt func() (*T, error)) (*T, error) {
	deadline := time.NewTimer(pollTimeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		gen, running, changed := p.gen, p.running, p.changed
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, provider.Permanent(op, err, "context done: %v", err)
		}
		if running {
			item, err := attempt()
			if item != nil || err != nil {
				return item, err
			}
			p.mu.Lock()
			if p.gen != gen {
				p.mu.Unlock()
				continue // something changed during the attempt: look again
			}
			p.parked++
			if p.isIdleLocked() {
				select {
				case p.idle <- struct{}{}:
				default:
				}
			}
			p.mu.Unlock()
		}
		select {
		case <-changed:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		p.mu.Lock()
		if running && p.changed == changed {
			p.parked--
		}
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, provider.Permanent(op, err, "context done while polling: %v", err)
		}
		return nil, nil
	}
}

// FetchOrchestrationItem fetches without long-polling the memprovider; see
// the type's documentation.
func (p *idleProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	return fetch(p, ctx, provider.OpFetchOrchestrationItem, pollTimeout, func() (*provider.OrchestrationItem, error) {
		return p.Provider.FetchOrchestrationItem(ctx, lockTimeout, 0, filter)
	})
}

// FetchWorkItem fetches without long-polling the memprovider.
func (p *idleProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	return fetch(p, ctx, provider.OpFetchWorkItem, pollTimeout, func() (*provider.LockedWorkItem, error) {
		return p.Provider.FetchWorkItem(ctx, lockTimeout, 0, session, tags)
	})
}

// AckOrchestrationItem commits a turn and records its timers' fire times.
func (p *idleProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	err := p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
	var due []time.Time
	if err == nil {
		for _, item := range commit.OrchestratorItems {
			if t, ok := item.(provider.TimerFiredItem); ok {
				due = append(due, time.UnixMilli(int64(t.FireAtMs)))
			}
		}
	}
	p.notify(due...)
	return err
}

// AbandonOrchestrationItem releases a turn, visible again after delay.
func (p *idleProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := p.Provider.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	p.notify(p.clock.Now().Add(roundUpMs(delay)))
	return err
}

// AckWorkItem commits an activity's completion.
func (p *idleProvider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	err := p.Provider.AckWorkItem(ctx, lockToken, completion)
	p.notify()
	return err
}

// AbandonWorkItem releases an activity, visible again after delay.
func (p *idleProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := p.Provider.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	p.notify(p.clock.Now().Add(roundUpMs(delay)))
	return err
}

// EnqueueForOrchestrator enqueues a message, visible after delay.
func (p *idleProvider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	err := p.Provider.EnqueueForOrchestrator(ctx, item, delay)
	p.notify(p.clock.Now().Add(roundUpMs(delay)))
	return err
}

// EnqueueForWorker enqueues an activity.
func (p *idleProvider) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	err := p.Provider.EnqueueForWorker(ctx, item)
	p.notify()
	return err
}

// AppendWithExecution appends events.
func (p *idleProvider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	err := p.Provider.AppendWithExecution(ctx, instance, executionID, events)
	p.notify()
	return err
}

// roundUpMs rounds d up to whole milliseconds, as the memprovider does.
func roundUpMs(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}
