package providertest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// RetryPolicy bounds the retries of [Retrying]. The zero value is a policy
// close to a runtime's: eight attempts, backoff from 10ms doubling to at
// most 500ms, each wait jittered.
type RetryPolicy struct {
	// Attempts is the most calls made for one operation, the first one
	// included. Zero means 8; 1 means no retries.
	Attempts int
	// BaseDelay is the backoff before the first retry; each further retry
	// doubles it, up to MaxDelay. Every wait is drawn at random between
	// half the backoff and the whole of it. Zero means 10ms.
	BaseDelay time.Duration
	// MaxDelay caps the backoff. Zero means 500ms.
	MaxDelay time.Duration
}

// withDefaults returns rp with its zero fields set to their defaults.
func (rp RetryPolicy) withDefaults() RetryPolicy {
	if rp.Attempts <= 0 {
		rp.Attempts = 8
	}
	if rp.BaseDelay <= 0 {
		rp.BaseDelay = 10 * time.Millisecond
	}
	if rp.MaxDelay <= 0 {
		rp.MaxDelay = 500 * time.Millisecond
	}
	rp.MaxDelay = max(rp.MaxDelay, rp.BaseDelay)
	return rp
}

// Retrying returns a provider that calls p and, as a runtime would, calls
// again when a call fails with an error [provider.IsRetryable] accepts:
// with the same arguments (an ack with the same token and commit), after a
// jittered, doubling backoff, at most policy.Attempts times in all, and no
// longer than ctx allows. It returns the first success, the first
// permanent error, or the last error when the attempts run out or ctx ends
// during a backoff. A fetch spends its poll timeout across its attempts: a
// retry waits for work only for what is left of it.
//
// The result implements [provider.Admin] exactly when p does (Admin calls
// are retried too) and [provider.Describer] exactly when p does, so the
// suite's capability checks see through it. Its Unwrap method returns p.
//
// Retrying repeats a call whose error said it may succeed later; it cannot
// tell a call that failed before taking effect from one whose effect
// happened and whose answer was lost. After such a call its retry reports
// what the provider makes of the repetition: an ack retried after its
// commit fails with [provider.ErrInvalidLockToken] unless the provider
// recognises it, and a repeated enqueue may enqueue twice.
func Retrying(p provider.Provider, policy RetryPolicy) provider.Provider {
	r := &retrying{p: p, policy: policy.withDefaults()}
	a, isAdmin := provider.AdminOf(p)
	d, isDescriber := p.(provider.Describer)
	switch {
	case isAdmin && isDescriber:
		return &retryingAdminDescriber{&retryingAdmin{r, a}, d}
	case isAdmin:
		return &retryingAdmin{r, a}
	case isDescriber:
		return &retryingDescriber{r, d}
	}
	return r
}

// RetryingFactory returns f with every provider it makes wrapped by
// [Retrying] with policy. The hooks of f receive the provider f made, not
// the wrapper.
func RetryingFactory(f Factory, policy RetryPolicy) Factory {
	g := f
	if f.NewProvider != nil {
		g.NewProvider = func(t *testing.T) provider.Provider {
			p := f.NewProvider(t)
			if p == nil {
				return nil
			}
			return Retrying(p, policy)
		}
	}
	if f.CorruptHistory != nil {
		g.CorruptHistory = func(t *testing.T, p provider.Provider, instance string) {
			f.CorruptHistory(t, unwrapRetrying(p), instance)
		}
	}
	if f.MaxAttemptCount != nil {
		g.MaxAttemptCount = func(t *testing.T, p provider.Provider, instance string) uint32 {
			return f.MaxAttemptCount(t, unwrapRetrying(p), instance)
		}
	}
	return g
}

// unwrapRetrying returns the provider a Retrying wrapper calls, or p when p
// is not one.
func unwrapRetrying(p provider.Provider) provider.Provider {
	if w, ok := p.(interface{ retryingInner() provider.Provider }); ok {
		return w.retryingInner()
	}
	return p
}

// retrying is the wrapper of a provider without optional interfaces.
type retrying struct {
	p      provider.Provider
	policy RetryPolicy
}

// retryingAdmin adds the retried Admin methods.
type retryingAdmin struct {
	*retrying
	a provider.Admin
}

// retryingDescriber forwards Name and Version.
type retryingDescriber struct {
	*retrying
	provider.Describer
}

// retryingAdminDescriber has both optional interfaces.
type retryingAdminDescriber struct {
	*retryingAdmin
	provider.Describer
}

// Unwrap returns the provider the wrapper calls.
func (r *retrying) Unwrap() provider.Provider { return r.p }

func (r *retrying) retryingInner() provider.Provider { return r.p }

// do makes call until it succeeds, fails permanently, has been made
// policy.Attempts times, or ctx ends during a backoff.
func (r *retrying) do(ctx context.Context, call func() error) error {
	backoff := r.policy.BaseDelay
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || !provider.IsRetryable(err) || attempt >= r.policy.Attempts {
			return err
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return err
		}
		backoff = min(2*backoff, r.policy.MaxDelay)
	}
}

// retried makes call as r.do does and returns its result, or the zero T
// with the error.
func retried[T any](ctx context.Context, r *retrying, call func() (T, error)) (T, error) {
	var out T
	err := r.do(ctx, func() error {
		v, err := call()
		if err != nil {
			return err
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// pollBudget hands out the poll timeout of one fetch across its attempts:
// the first gets all of it, a retry what is left.
type pollBudget struct {
	start   time.Time
	timeout time.Duration
	started bool
}

func newPollBudget(timeout time.Duration) *pollBudget {
	return &pollBudget{start: time.Now(), timeout: timeout}
}

// next returns the poll timeout of the next attempt.
func (b *pollBudget) next() time.Duration {
	if !b.started {
		b.started = true
		return b.timeout
	}
	return max(0, b.timeout-time.Since(b.start))
}

func (r *retrying) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	poll := newPollBudget(pollTimeout)
	return retried(ctx, r, func() (*provider.OrchestrationItem, error) {
		return r.p.FetchOrchestrationItem(ctx, lockTimeout, poll.next(), filter)
	})
}

func (r *retrying) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	return r.do(ctx, func() error { return r.p.AckOrchestrationItem(ctx, lockToken, commit) })
}

func (r *retrying) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return r.do(ctx, func() error { return r.p.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt) })
}

func (r *retrying) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return r.do(ctx, func() error { return r.p.RenewOrchestrationItemLock(ctx, lockToken, extendFor) })
}

func (r *retrying) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	return retried(ctx, r, func() ([]provider.Event, error) { return r.p.Read(ctx, instance) })
}

func (r *retrying) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return retried(ctx, r, func() ([]provider.Event, error) { return r.p.ReadWithExecution(ctx, instance, executionID) })
}

func (r *retrying) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	return r.do(ctx, func() error { return r.p.AppendWithExecution(ctx, instance, executionID, events) })
}

func (r *retrying) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	return r.do(ctx, func() error { return r.p.EnqueueForWorker(ctx, item) })
}

func (r *retrying) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	poll := newPollBudget(pollTimeout)
	return retried(ctx, r, func() (*provider.LockedWorkItem, error) {
		return r.p.FetchWorkItem(ctx, lockTimeout, poll.next(), session, tags)
	})
}

func (r *retrying) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	return r.do(ctx, func() error { return r.p.AckWorkItem(ctx, lockToken, completion) })
}

func (r *retrying) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return r.do(ctx, func() error { return r.p.RenewWorkItemLock(ctx, lockToken, extendFor) })
}

func (r *retrying) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return r.do(ctx, func() error { return r.p.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt) })
}

func (r *retrying) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	return retried(ctx, r, func() (int, error) { return r.p.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout) })
}

func (r *retrying) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	return retried(ctx, r, func() (int, error) { return r.p.CleanupOrphanedSessions(ctx, idleTimeout) })
}

func (r *retrying) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	return r.do(ctx, func() error { return r.p.EnqueueForOrchestrator(ctx, item, delay) })
}

func (r *retrying) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*provider.CustomStatus, error) {
	return retried(ctx, r, func() (*provider.CustomStatus, error) { return r.p.CustomStatus(ctx, instance, lastSeenVersion) })
}

func (r *retrying) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	type found struct {
		value string
		ok    bool
	}
	v, err := retried(ctx, r, func() (found, error) {
		value, ok, err := r.p.KVValue(ctx, instance, key)
		return found{value, ok}, err
	})
	return v.value, v.ok, err
}

func (r *retrying) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	return retried(ctx, r, func() (map[string]string, error) { return r.p.KVValues(ctx, instance) })
}

func (r *retrying) InstanceStats(ctx context.Context, instance string) (*provider.SystemStats, error) {
	return retried(ctx, r, func() (*provider.SystemStats, error) { return r.p.InstanceStats(ctx, instance) })
}

func (r *retryingAdmin) ListInstances(ctx context.Context) ([]string, error) {
	return retried(ctx, r.retrying, func() ([]string, error) { return r.a.ListInstances(ctx) })
}

func (r *retryingAdmin) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return retried(ctx, r.retrying, func() ([]string, error) { return r.a.ListInstancesByStatus(ctx, status) })
}

func (r *retryingAdmin) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	return retried(ctx, r.retrying, func() ([]uint64, error) { return r.a.ListExecutions(ctx, instance) })
}

func (r *retryingAdmin) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return retried(ctx, r.retrying, func() ([]provider.Event, error) {
		return r.a.ReadHistoryWithExecutionID(ctx, instance, executionID)
	})
}

func (r *retryingAdmin) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	return retried(ctx, r.retrying, func() ([]provider.Event, error) { return r.a.ReadHistory(ctx, instance) })
}

func (r *retryingAdmin) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	return retried(ctx, r.retrying, func() (uint64, error) { return r.a.LatestExecutionID(ctx, instance) })
}

func (r *retryingAdmin) InstanceInfo(ctx context.Context, instance string) (*provider.InstanceInfo, error) {
	return retried(ctx, r.retrying, func() (*provider.InstanceInfo, error) { return r.a.InstanceInfo(ctx, instance) })
}

func (r *retryingAdmin) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*provider.ExecutionInfo, error) {
	return retried(ctx, r.retrying, func() (*provider.ExecutionInfo, error) {
		return r.a.ExecutionInfo(ctx, instance, executionID)
	})
}

func (r *retryingAdmin) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	return retried(ctx, r.retrying, func() (provider.SystemMetrics, error) { return r.a.SystemMetrics(ctx) })
}

func (r *retryingAdmin) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	return retried(ctx, r.retrying, func() (provider.QueueDepths, error) { return r.a.QueueDepths(ctx) })
}

func (r *retryingAdmin) ListChildren(ctx context.Context, instance string) ([]string, error) {
	return retried(ctx, r.retrying, func() ([]string, error) { return r.a.ListChildren(ctx, instance) })
}

func (r *retryingAdmin) ParentID(ctx context.Context, instance string) (string, error) {
	return retried(ctx, r.retrying, func() (string, error) { return r.a.ParentID(ctx, instance) })
}

func (r *retryingAdmin) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	return retried(ctx, r.retrying, func() (provider.DeleteInstanceResult, error) {
		return r.a.DeleteInstancesAtomic(ctx, ids, force)
	})
}

// DeleteInstanceBulk retries as a caller should: an attempt that failed
// part-way reports what it deleted, which is added up, and the next
// attempt's Limit is lowered by the instances already deleted.
func (r *retryingAdmin) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	var total provider.DeleteInstanceResult
	limit := uint64(filter.EffectiveLimit())
	err := r.do(ctx, func() error {
		f := filter
		f.Limit = int(limit - total.InstancesDeleted)
		if f.Limit <= 0 {
			return nil
		}
		res, err := r.a.DeleteInstanceBulk(ctx, f)
		total = total.Add(res)
		return err
	})
	return total, err
}

func (r *retryingAdmin) PruneExecutions(ctx context.Context, instance string, options provider.PruneOptions) (provider.PruneResult, error) {
	return retried(ctx, r.retrying, func() (provider.PruneResult, error) {
		return r.a.PruneExecutions(ctx, instance, options)
	})
}

func (r *retryingAdmin) PruneExecutionsBulk(ctx context.Context, filter provider.InstanceFilter, options provider.PruneOptions) (provider.PruneResult, error) {
	return retried(ctx, r.retrying, func() (provider.PruneResult, error) {
		return r.a.PruneExecutionsBulk(ctx, filter, options)
	})
}

// Compile-time checks of the wrappers' method sets.
var (
	_ provider.Provider  = (*retrying)(nil)
	_ provider.Admin     = (*retryingAdmin)(nil)
	_ provider.Describer = (*retryingDescriber)(nil)
	_ provider.Admin     = (*retryingAdminDescriber)(nil)
	_ provider.Describer = (*retryingAdminDescriber)(nil)
)

// statusReaderOf returns p's [provider.StatusReader], looking through a
// [Retrying] wrapper (which does not implement the optional interface)
// and retrying its calls as the wrapper would.
func statusReaderOf(p provider.Provider) (provider.StatusReader, bool) {
	if r, ok := p.(provider.StatusReader); ok {
		return r, true
	}
	w, ok := p.(interface{ retryingBase() *retrying })
	if !ok {
		return nil, false
	}
	base := w.retryingBase()
	inner, ok := statusReaderOf(base.p)
	if !ok {
		return nil, false
	}
	return retryingStatus{base, inner}, true
}

func (r *retrying) retryingBase() *retrying { return r }

// retryingStatus retries a StatusReader's calls.
type retryingStatus struct {
	r     *retrying
	inner provider.StatusReader
}

func (s retryingStatus) InstanceStatus(ctx context.Context, instance string) (*provider.InstanceStatus, error) {
	return retried(ctx, s.r, func() (*provider.InstanceStatus, error) { return s.inner.InstanceStatus(ctx, instance) })
}
