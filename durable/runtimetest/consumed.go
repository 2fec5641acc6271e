package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// consumedWatch is the provider the suite's runtimes use: the test's
// provider, with a record of the orchestrator messages that committed
// turns consumed. A check that a message changed nothing waits for that
// record, not for an empty queue: a fetch's lock hides its messages before
// the turn that may wrongly record them commits, so an empty queue can be
// read while that turn is still under way.
type consumedWatch struct {
	provider.Provider
	rec *consumedRecord
}

// consumedRecord is what the runtimes of one test had fetched, committed
// and acked, shared by the wrappers of each runtime's provider.
type consumedRecord struct {
	mu        sync.Mutex
	locked    map[string]lockedBatch         // lock token → the batch its fetch returned
	consumed  map[string][]provider.WorkItem // instance → messages of acknowledged turns
	work      map[string]*heldWork           // activity lock token → what became of it
	delivered map[string]int                 // instance → completions that worker acks enqueued
}

// heldWork is an activity a worker fetch handed a runtime.
type heldWork struct {
	instance string
	settled  bool // acked, its lock found lost, or abandoned: the runtime is done with it
}

// lockedBatch is what one fetch locked.
type lockedBatch struct {
	instance string
	messages []provider.WorkItem
}

// consumedWatchAdmin is a consumedWatch over a provider with the
// management capability, which it offers too.
type consumedWatchAdmin struct {
	*consumedWatch
	provider.Admin
}

// newConsumedRecord returns an empty record.
func newConsumedRecord() *consumedRecord {
	return &consumedRecord{
		locked: map[string]lockedBatch{}, consumed: map[string][]provider.WorkItem{},
		work: map[string]*heldWork{}, delivered: map[string]int{},
	}
}

// watchConsumed wraps p, recording in rec; the wrapper offers
// [provider.Admin] exactly when p does, and forwards [provider.Describer]
// and the layout check.
func watchConsumed(p provider.Provider, rec *consumedRecord) provider.Provider {
	w := &consumedWatch{Provider: p, rec: rec}
	if admin, ok := provider.AdminOf(p); ok {
		return &consumedWatchAdmin{consumedWatch: w, Admin: admin}
	}
	return w
}

// Name returns the wrapped provider's name.
func (w *consumedWatch) Name() string { return provider.NameOf(w.Provider) }

// Version returns the wrapped provider's version.
func (w *consumedWatch) Version() string { return provider.VersionOf(w.Provider) }

// CheckLayout runs the wrapped provider's layout check, if it has one.
func (w *consumedWatch) CheckLayout(ctx context.Context) error {
	if lc, ok := w.Provider.(interface{ CheckLayout(context.Context) error }); ok {
		return lc.CheckLayout(ctx)
	}
	return nil
}

// FetchOrchestrationItem fetches from the wrapped provider and remembers
// the batch a lock holds.
func (w *consumedWatch) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := w.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		w.rec.mu.Lock()
		w.rec.locked[item.LockToken] = lockedBatch{item.Instance, item.Messages}
		w.rec.mu.Unlock()
	}
	return item, err
}

// AckOrchestrationItem commits through the wrapped provider and, when the
// commit succeeded, records the lock's batch as consumed.
func (w *consumedWatch) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	err := w.Provider.AckOrchestrationItem(ctx, lockToken, commit)
	if err == nil {
		w.rec.mu.Lock()
		if b, ok := w.rec.locked[lockToken]; ok {
			w.rec.consumed[b.instance] = append(w.rec.consumed[b.instance], b.messages...)
			delete(w.rec.locked, lockToken)
		}
		w.rec.mu.Unlock()
	}
	return err
}

// AbandonOrchestrationItem abandons through the wrapped provider and
// forgets the lock's batch once it is given back.
func (w *consumedWatch) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := w.Provider.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	if err == nil {
		w.rec.mu.Lock()
		delete(w.rec.locked, lockToken)
		w.rec.mu.Unlock()
	}
	return err
}

// FetchWorkItem fetches from the wrapped provider and remembers the
// activity a lock holds.
func (w *consumedWatch) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	locked, err := w.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if locked != nil {
		w.rec.mu.Lock()
		w.rec.work[locked.LockToken] = &heldWork{instance: locked.Item.Instance}
		w.rec.mu.Unlock()
	}
	return locked, err
}

// AckWorkItem acks through the wrapped provider. An ack that succeeded
// settles the activity and, with a completion, counts it as delivered; one
// that found the lock lost settles it too. After any other failure the
// runtime retries or abandons.
func (w *consumedWatch) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	err := w.Provider.AckWorkItem(ctx, lockToken, completion)
	if err == nil || errors.Is(err, provider.ErrInvalidLockToken) {
		w.rec.mu.Lock()
		if hw, ok := w.rec.work[lockToken]; ok && !hw.settled {
			hw.settled = true
			if err == nil && completion != nil {
				w.rec.delivered[completion.TargetInstance()]++
			}
		}
		w.rec.mu.Unlock()
	}
	return err
}

// AbandonWorkItem abandons through the wrapped provider: whatever it
// returns, it is the runtime's last call for the activity.
func (w *consumedWatch) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := w.Provider.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	w.rec.mu.Lock()
	if hw, ok := w.rec.work[lockToken]; ok {
		hw.settled = true
	}
	w.rec.mu.Unlock()
	return err
}

// activitiesSettled reports whether the runtimes are done with every
// activity of instance a fetch handed them, and committed turns consumed
// as many activity results for instance as worker acks enqueued.
func (r *consumedRecord) activitiesSettled(instance string) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := 0
	for _, hw := range r.work {
		if hw.instance == instance && !hw.settled {
			held++
		}
	}
	results := 0
	for _, m := range r.consumed[instance] {
		if isKind[provider.ActivityCompletedItem](m) || isKind[provider.ActivityFailedItem](m) {
			results++
		}
	}
	return held == 0 && results >= r.delivered[instance],
		fmt.Sprintf("%d activities held, %d results enqueued, %d consumed", held, r.delivered[instance], results)
}

// count returns how many messages to instance that acknowledged turns
// consumed match.
func (r *consumedRecord) count(instance string, match func(provider.WorkItem) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.consumed[instance] {
		if match(m) {
			n++
		}
	}
	return n
}

// AwaitConsumed waits until turns of the test's runtimes (those started by
// [H.Runtime] or [H.Serve]) that committed have consumed at least n
// messages to instance that match: from then on, what those messages did
// to the instance's history is stored. what names the messages for a
// failure.
func (h *H) AwaitConsumed(instance, what string, n int, match func(provider.WorkItem) bool) {
	h.Helper()
	h.WaitFor(fmt.Sprintf("%s of %s consumed by a committed turn", what, instance), func() bool {
		return h.watch.count(instance, match) >= n
	})
}

// AwaitActivitiesSettled waits until the test's runtimes are done with
// every activity of instance that a worker fetch handed them (acked, found
// lost or abandoned), and committed turns have consumed every result those
// acks enqueued: from then on, whatever the activities' results did to the
// instance's history is stored. An activity a fetch is still returning is
// not known yet: call it once the activities that matter were fetched, or
// could no longer be.
func (h *H) AwaitActivitiesSettled(instance string) {
	h.Helper()
	eventually(h, fmt.Sprintf("the activities of %s to settle and their results to be consumed", instance), func() (bool, string) {
		return h.watch.activitiesSettled(instance)
	})
}

// isKind reports whether m is a T.
func isKind[T provider.WorkItem](m provider.WorkItem) bool {
	_, ok := m.(T)
	return ok
}
