package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// completions records when each instance's terminal turn committed. The
// runtimes' providers report to it (see watchedProvider), so waiting for an
// instance costs no request: a client polling for completion would add
// requests, and load, to what is measured.
type completions struct {
	mu     sync.Mutex
	at     map[string]time.Time
	done   map[string]chan struct{}
	onTurn func(instance string) (committed func())
}

func newCompletions() *completions {
	return &completions{at: map[string]time.Time{}, done: map[string]chan struct{}{}}
}

// channel returns the channel closed when instance completes. Call with
// c.mu held.
func (c *completions) channel(instance string) chan struct{} {
	ch, ok := c.done[instance]
	if !ok {
		ch = make(chan struct{})
		c.done[instance] = ch
	}
	return ch
}

// completed records that instance's terminal turn committed at t; later
// reports of the same instance are ignored.
func (c *completions) completed(instance string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.at[instance]; ok {
		return
	}
	c.at[instance] = t
	close(c.channel(instance))
}

// turning calls the function set by setOnTurn, if any, as instance's
// turn is acked, and returns what to call once the ack committed.
func (c *completions) turning(instance string) (committed func()) {
	c.mu.Lock()
	fn := c.onTurn
	c.mu.Unlock()
	if fn == nil {
		return func() {}
	}
	return fn(instance)
}

// setOnTurn makes fn called as each turn's ack is sent, before the
// provider's ack: the point that ends a chain's step, since the turn's
// commit hands out the next activity, whose requests belong to the next
// step. fn returns what to call once that ack committed (an ack that
// fails and is sent again calls fn again).
func (c *completions) setOnTurn(fn func(instance string) (committed func())) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onTurn = fn
}

// wait returns when instance's terminal turn committed, waiting for it
// until ctx ends.
func (c *completions) wait(ctx context.Context, instance string) (time.Time, error) {
	c.mu.Lock()
	ch := c.channel(instance)
	c.mu.Unlock()
	select {
	case <-ch:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.at[instance], nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("scenario: waiting for %s to complete: %w", instance, context.Cause(ctx))
	}
}

// layoutChecker is the optional check a runtime makes at Start
// (dynamo.Provider.CheckLayout); watchedProvider passes it on.
type layoutChecker interface {
	CheckLayout(ctx context.Context) error
}

// watchedProvider is a runtime's provider that reports terminal turns to
// completions. It makes no request of its own.
type watchedProvider struct {
	provider.Provider
	c *completions

	mu    sync.Mutex
	locks map[string]string // lock token → instance
}

func watch(p provider.Provider, c *completions) *watchedProvider {
	return &watchedProvider{Provider: p, c: c, locks: map[string]string{}}
}

// FetchOrchestrationItem remembers which instance a lock token locks.
func (w *watchedProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := w.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err == nil && item != nil {
		w.mu.Lock()
		w.locks[item.LockToken] = item.Instance
		w.mu.Unlock()
	}
	return item, err
}

// AckOrchestrationItem reports each turn as its ack is sent, and when a
// terminal turn committed, the instance's completion.
func (w *watchedProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	w.mu.Lock()
	instance, ok := w.locks[lockToken]
	w.mu.Unlock()
	var committed func()
	if ok {
		committed = w.c.turning(instance)
	}
	err := w.Provider.AckOrchestrationItem(ctx, lockToken, commit)
	if err != nil {
		return err
	}
	now := time.Now()
	w.mu.Lock()
	delete(w.locks, lockToken)
	w.mu.Unlock()
	if !ok {
		return nil
	}
	committed()
	if commit.Metadata.Status == provider.StatusCompleted || commit.Metadata.Status == provider.StatusFailed {
		w.c.completed(instance, now)
	}
	return nil
}

// AbandonOrchestrationItem forgets the lock token.
func (w *watchedProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	w.mu.Lock()
	delete(w.locks, lockToken)
	w.mu.Unlock()
	return w.Provider.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
}

// CheckLayout passes the runtime's start-up check on to the provider.
func (w *watchedProvider) CheckLayout(ctx context.Context) error {
	if lc, ok := w.Provider.(layoutChecker); ok {
		return lc.CheckLayout(ctx)
	}
	return nil
}
