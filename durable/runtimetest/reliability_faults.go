package runtimetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// FaultMode is how an injected [Fault] changes a call.
type FaultMode int

const (
	// FailRetryable fails the call with a retryable error without
	// forwarding it.
	FailRetryable FaultMode = iota
	// FailPermanent fails the call with a permanent error (cause
	// [Fault.Err]) without forwarding it.
	FailPermanent
	// LoseResponse forwards the call, so its effect stays, then reports a
	// retryable error: a response lost after the commit.
	LoseResponse
	// SetAttempts forwards a fetch and reports [Fault.Attempts] as the
	// item's attempt count. Only fetches that return an item count.
	SetAttempts
	// StealLock, for a renewal, releases the lock in the wrapped provider
	// (an abandon without delay, so another dispatcher may take the item)
	// and fails with [provider.ErrInvalidLockToken]: a lock lost to
	// another node.
	StealLock
)

// Fault describes failures to inject into the calls of one operation.
type Fault struct {
	// Op is the operation (provider.Op*) whose calls fail.
	Op string
	// Mode is how they fail.
	Mode FaultMode
	// Times is how many calls the fault applies to; 0 means every one.
	Times int
	// Skip lets that many matching calls through first.
	Skip int
	// Match, when set, selects the calls the fault applies to.
	Match func(Call) bool
	// Err is the cause of a FailPermanent error (optional).
	Err error
	// Attempts is the attempt count reported by SetAttempts.
	Attempts uint32
	// Permanent makes the error of a LoseResponse fault permanent.
	Permanent bool

	applied int
}

// Call describes a provider call a [Fault] may apply to.
type Call struct {
	// Op is the operation.
	Op string
	// Instance is the instance the call concerns, when known: the fetched
	// item's, or the instance of the lock token being acked, abandoned or
	// renewed.
	Instance string
	// Commit is the turn being acked (ack_orchestration_item).
	Commit *provider.TurnCommit
	// Completion is the activity result being acked (ack_work_item).
	Completion provider.WorkItem
}

// FaultProvider wraps a provider and injects the failures a test asks for:
// acks that fail (retryably, permanently, or after committing), fetches
// and renewals that fail, inflated attempt counts, and orchestration acks
// held past their lock. It counts calls and records the inner provider's
// ack results. Use [FaultProvider.Provider] as the runtime's provider: it
// also implements [provider.Admin] and [provider.Describer] when the
// wrapped provider does.
type FaultProvider struct {
	inner provider.Provider

	mu         sync.Mutex
	faults     []*Fault
	calls      map[string]int
	injected   map[string]int
	results    map[string][]error
	orchTokens map[string]string // lock token → instance
	workTokens map[string]string // lock token → instance
	workKeys   map[string]string // lock token → instance/activity id
	// workRenewals counts successful renewals per instance/activity id.
	workRenewals map[string]int
	// lockTimeouts holds the last lock timeout (fetch) or extension
	// (renewal) passed to each operation.
	lockTimeouts map[string]time.Duration
	holds        []*Hold
}

// NewFaultProvider wraps inner.
func NewFaultProvider(inner provider.Provider) *FaultProvider {
	return &FaultProvider{
		inner:      inner,
		calls:      map[string]int{},
		injected:   map[string]int{},
		results:    map[string][]error{},
		orchTokens: map[string]string{},
		workTokens: map[string]string{},
		workKeys:   map[string]string{},

		workRenewals: map[string]int{},
		lockTimeouts: map[string]time.Duration{},
	}
}

func workKey(instance string, id uint64) string { return fmt.Sprintf("%s/%d", instance, id) }

// WorkRenewals returns how many times the lock of activity id of instance
// was renewed successfully, over all its deliveries.
func (f *FaultProvider) WorkRenewals(instance string, id uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.workRenewals[workKey(instance, id)]
}

// LockTimeout returns the last lock timeout passed to a fetch operation,
// or the last extension passed to a renewal.
func (f *FaultProvider) LockTimeout(op string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lockTimeouts[op]
}

func (f *FaultProvider) noteLockTimeout(op string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lockTimeouts[op] = d
}

type faultAdmin struct {
	*FaultProvider
	provider.Admin
}

type faultDescriber struct {
	*FaultProvider
	provider.Describer
}

type faultAdminDescriber struct {
	*FaultProvider
	provider.Admin
	provider.Describer
}

// Provider returns the wrapper as a provider with the wrapped provider's
// optional capabilities.
func (f *FaultProvider) Provider() provider.Provider {
	admin, isAdmin := provider.AdminOf(f.inner)
	desc, isDesc := f.inner.(provider.Describer)
	switch {
	case isAdmin && isDesc:
		return faultAdminDescriber{f, admin, desc}
	case isAdmin:
		return faultAdmin{f, admin}
	case isDesc:
		return faultDescriber{f, desc}
	}
	return f
}

// Inject adds a fault; faults apply in the order added, the first that
// matches a call deciding it.
func (f *FaultProvider) Inject(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := fault
	f.faults = append(f.faults, &fl)
}

// Clear removes every fault.
func (f *FaultProvider) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Calls returns how many calls of op the wrapper received.
func (f *FaultProvider) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Injected returns how many calls of op a fault changed.
func (f *FaultProvider) Injected(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[op]
}

// Results returns the inner provider's results of the forwarded calls of op
// (ack, abandon and renew operations), in order.
func (f *FaultProvider) Results(op string) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.results[op]...)
}

// pick returns the fault that applies to a call, if any: before the call
// (counting it) the failing modes, after a successful call the others.
func (f *FaultProvider) pick(c Call, before bool) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if before {
		f.calls[c.Op]++
	}
	for _, fl := range f.faults {
		if fl.Op != c.Op {
			continue
		}
		if preCall := fl.Mode == FailRetryable || fl.Mode == FailPermanent || fl.Mode == StealLock; preCall != before {
			continue
		}
		if fl.Times > 0 && fl.applied >= fl.Times {
			continue
		}
		if fl.Match != nil && !fl.Match(c) {
			continue
		}
		if fl.Skip > 0 {
			fl.Skip--
			return nil
		}
		fl.applied++
		f.injected[c.Op]++
		return fl
	}
	return nil
}

func (f *FaultProvider) record(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[op] = append(f.results[op], err)
}

func (f *FaultProvider) orchInstance(token string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.orchTokens[token]
}

func (f *FaultProvider) workInstance(token string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.workTokens[token]
}

func injectedError(fl *Fault, op string) error {
	switch {
	case fl.Mode == StealLock:
		return provider.Permanent(op, provider.ErrInvalidLockToken, "injected fault: lock lost")
	case fl.Mode == FailPermanent || fl.Permanent:
		return provider.Permanent(op, fl.Err, "injected permanent fault")
	}
	return provider.Retryable(op, nil, "injected transient fault")
}

// before counts a call and returns the error of a pre-call fault, if any.
// A StealLock fault releases the lock of token first.
func (f *FaultProvider) before(c Call, token ...string) error {
	fl := f.pick(c, true)
	if fl == nil {
		return nil
	}
	if fl.Mode == StealLock && len(token) > 0 {
		ctx := context.Background()
		switch c.Op {
		case provider.OpRenewOrchestrationItemLock:
			_ = f.inner.AbandonOrchestrationItem(ctx, token[0], 0, false)
		case provider.OpRenewWorkItemLock:
			_ = f.inner.AbandonWorkItem(ctx, token[0], 0, false)
		}
	}
	return injectedError(fl, c.Op)
}

// after applies a post-call fault (LoseResponse or SetAttempts) to a call
// that succeeded.
func (f *FaultProvider) after(c Call) *Fault {
	return f.pick(c, false)
}

// FetchOrchestrationItem implements [provider.Provider].
func (f *FaultProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	c := Call{Op: provider.OpFetchOrchestrationItem}
	f.noteLockTimeout(c.Op, lockTimeout)
	if err := f.before(c); err != nil {
		return nil, err
	}
	item, err := f.inner.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil {
		return item, err
	}
	f.mu.Lock()
	f.orchTokens[item.LockToken] = item.Instance
	f.mu.Unlock()
	c.Instance = item.Instance
	if fl := f.after(c); fl != nil {
		switch fl.Mode {
		case SetAttempts:
			item.AttemptCount = fl.Attempts
		case LoseResponse:
			return nil, injectedError(fl, c.Op)
		}
	}
	return item, nil
}

// AckOrchestrationItem implements [provider.Provider].
func (f *FaultProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	c := Call{Op: provider.OpAckOrchestrationItem, Instance: f.orchInstance(lockToken), Commit: &commit}
	if err := f.before(c); err != nil {
		return err
	}
	if h := f.holdFor(c, lockToken); h != nil {
		h.wait(ctx)
		err := f.inner.AckOrchestrationItem(ctx, lockToken, commit)
		f.record(c.Op, err)
		h.finish(err)
		return err
	}
	err := f.inner.AckOrchestrationItem(ctx, lockToken, commit)
	f.record(c.Op, err)
	if err != nil {
		return err
	}
	if fl := f.after(c); fl != nil && fl.Mode == LoseResponse {
		return injectedError(fl, c.Op)
	}
	return nil
}

// AbandonOrchestrationItem implements [provider.Provider].
func (f *FaultProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	c := Call{Op: provider.OpAbandonOrchestrationItem, Instance: f.orchInstance(lockToken)}
	if err := f.before(c); err != nil {
		return err
	}
	err := f.inner.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	f.record(c.Op, err)
	return err
}

// RenewOrchestrationItemLock implements [provider.Provider].
func (f *FaultProvider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	c := Call{Op: provider.OpRenewOrchestrationItemLock, Instance: f.orchInstance(lockToken)}
	f.noteLockTimeout(c.Op, extendFor)
	if err := f.before(c, lockToken); err != nil {
		return err
	}
	h := f.heldToken(lockToken)
	if h != nil && h.opts.ExpireLock {
		h.renewed()
		return nil // swallowed: the lock lapses while the caller believes it renewed
	}
	err := f.inner.RenewOrchestrationItemLock(ctx, lockToken, extendFor)
	f.record(c.Op, err)
	if h != nil && err == nil {
		h.renewed()
	}
	return err
}

// Read implements [provider.Provider].
func (f *FaultProvider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	return f.inner.Read(ctx, instance)
}

// ReadWithExecution implements [provider.Provider].
func (f *FaultProvider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return f.inner.ReadWithExecution(ctx, instance, executionID)
}

// AppendWithExecution implements [provider.Provider].
func (f *FaultProvider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	return f.inner.AppendWithExecution(ctx, instance, executionID, events)
}

// EnqueueForWorker implements [provider.Provider].
func (f *FaultProvider) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	return f.inner.EnqueueForWorker(ctx, item)
}

// FetchWorkItem implements [provider.Provider].
func (f *FaultProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	c := Call{Op: provider.OpFetchWorkItem}
	f.noteLockTimeout(c.Op, lockTimeout)
	if err := f.before(c); err != nil {
		return nil, err
	}
	item, err := f.inner.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if err != nil || item == nil {
		return item, err
	}
	f.mu.Lock()
	f.workTokens[item.LockToken] = item.Item.Instance
	f.workKeys[item.LockToken] = workKey(item.Item.Instance, item.Item.ID)
	f.mu.Unlock()
	c.Instance = item.Item.Instance
	if fl := f.after(c); fl != nil {
		switch fl.Mode {
		case SetAttempts:
			item.AttemptCount = fl.Attempts
		case LoseResponse:
			return nil, injectedError(fl, c.Op)
		}
	}
	return item, nil
}

// AckWorkItem implements [provider.Provider].
func (f *FaultProvider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	c := Call{Op: provider.OpAckWorkItem, Instance: f.workInstance(lockToken), Completion: completion}
	if err := f.before(c); err != nil {
		return err
	}
	err := f.inner.AckWorkItem(ctx, lockToken, completion)
	f.record(c.Op, err)
	if err != nil {
		return err
	}
	if fl := f.after(c); fl != nil && fl.Mode == LoseResponse {
		return injectedError(fl, c.Op)
	}
	return nil
}

// RenewWorkItemLock implements [provider.Provider].
func (f *FaultProvider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	c := Call{Op: provider.OpRenewWorkItemLock, Instance: f.workInstance(lockToken)}
	f.noteLockTimeout(c.Op, extendFor)
	if err := f.before(c, lockToken); err != nil {
		return err
	}
	err := f.inner.RenewWorkItemLock(ctx, lockToken, extendFor)
	f.record(c.Op, err)
	if err == nil {
		f.mu.Lock()
		f.workRenewals[f.workKeys[lockToken]]++
		f.mu.Unlock()
	}
	return err
}

// AbandonWorkItem implements [provider.Provider].
func (f *FaultProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	c := Call{Op: provider.OpAbandonWorkItem, Instance: f.workInstance(lockToken)}
	if err := f.before(c); err != nil {
		return err
	}
	err := f.inner.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	f.record(c.Op, err)
	return err
}

// RenewSessionLock implements [provider.Provider].
func (f *FaultProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	if err := f.before(Call{Op: provider.OpRenewSessionLock}); err != nil {
		return 0, err
	}
	return f.inner.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
}

// CleanupOrphanedSessions implements [provider.Provider].
func (f *FaultProvider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	return f.inner.CleanupOrphanedSessions(ctx, idleTimeout)
}

// EnqueueForOrchestrator implements [provider.Provider].
func (f *FaultProvider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	return f.inner.EnqueueForOrchestrator(ctx, item, delay)
}

// CustomStatus implements [provider.Provider].
func (f *FaultProvider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*provider.CustomStatus, error) {
	return f.inner.CustomStatus(ctx, instance, lastSeenVersion)
}

// KVValue implements [provider.Provider].
func (f *FaultProvider) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	return f.inner.KVValue(ctx, instance, key)
}

// KVValues implements [provider.Provider].
func (f *FaultProvider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	return f.inner.KVValues(ctx, instance)
}

// InstanceStats implements [provider.Provider].
func (f *FaultProvider) InstanceStats(ctx context.Context, instance string) (*provider.SystemStats, error) {
	return f.inner.InstanceStats(ctx, instance)
}

// HoldOptions configure [FaultProvider.HoldAck].
type HoldOptions struct {
	// ExpireLock swallows the held lock's renewals (they report success
	// but are not forwarded), so the lock lapses as a paused process's
	// would.
	ExpireLock bool
	// ReleaseAfterRenewals releases the hold by itself once the held lock
	// has been renewed that many times (0: only Release releases it).
	ReleaseAfterRenewals int
	// Match, when set, selects the ack to hold among the instance's acks.
	Match func(Call) bool
}

// Hold is an orchestration ack held by [FaultProvider.HoldAck].
type Hold struct {
	instance string
	opts     HoldOptions

	mu       sync.Mutex
	token    string
	renewals int
	reached  chan struct{}
	release  chan struct{}
	done     chan struct{}
	released bool
	err      error
}

// HoldAck makes the next AckOrchestrationItem of instance wait, before it
// is forwarded, until the hold is released.
func (f *FaultProvider) HoldAck(instance string, opts HoldOptions) *Hold {
	h := &Hold{instance: instance, opts: opts, reached: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds = append(f.holds, h)
	return h
}

// holdFor claims the pending hold of the ack c of token, if any.
func (f *FaultProvider) holdFor(c Call, token string) *Hold {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.holds {
		h.mu.Lock()
		free := h.instance == c.Instance && h.token == "" && (h.opts.Match == nil || h.opts.Match(c))
		if free {
			h.token = token
		}
		h.mu.Unlock()
		if free {
			close(h.reached)
			return h
		}
	}
	return nil
}

// heldToken returns the hold whose ack, of lock token, is waiting.
func (f *FaultProvider) heldToken(token string) *Hold {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.holds {
		h.mu.Lock()
		match := h.token == token
		h.mu.Unlock()
		if match {
			select {
			case <-h.done:
				continue
			default:
			}
			return h
		}
	}
	return nil
}

// wait blocks until the hold is released or the caller gives up (a
// runtime shutting down).
func (h *Hold) wait(ctx context.Context) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

func (h *Hold) renewed() {
	h.mu.Lock()
	h.renewals++
	auto := h.opts.ReleaseAfterRenewals > 0 && h.renewals >= h.opts.ReleaseAfterRenewals
	h.mu.Unlock()
	if auto {
		h.Release()
	}
}

func (h *Hold) finish(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	close(h.done)
}

// Reached is closed once the held ack is waiting.
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release lets the held ack through. It may be called more than once.
func (h *Hold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		h.released = true
		close(h.release)
	}
}

// Renewals returns how many renewals of the held lock were seen while it
// was held.
func (h *Hold) Renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewals
}

// Done is closed once the held ack has returned.
func (h *Hold) Done() <-chan struct{} { return h.done }

// Err returns the inner provider's result of the held ack, once Done.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// relFaults puts a fault wrapper around the test's provider: runtimes and
// the client started afterwards use it.
func relFaults(h *H) *FaultProvider {
	fp := NewFaultProvider(h.P)
	h.P = fp.Provider()
	h.Client = durable.NewClient(h.P)
	return fp
}

// relAwait waits for ch or fails the test after the harness's timeout.
func relAwait(h *H, what string, ch <-chan struct{}) {
	h.Helper()
	select {
	case <-ch:
	case <-h.Ctx().Done():
		h.Fatalf("timed out waiting for %s", what)
	}
}
