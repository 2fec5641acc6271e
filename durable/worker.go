package durable

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// ActivityInfo describes the activity execution a context belongs to.
type ActivityInfo struct {
	// Instance and ExecutionID identify the orchestration that scheduled
	// the activity.
	Instance    string
	ExecutionID uint64
	// Name is the activity's name and ID the event id of its schedule.
	Name string
	ID   uint64
	// SessionID and Tag are the activity's session and tag, if any.
	SessionID *string
	Tag       *string
	// Attempt counts deliveries of this activity, from 1.
	Attempt uint32
	// WorkerID names the worker slot running it.
	WorkerID string

	client *Client
}

// Orchestration returns the name and version of the orchestration that
// scheduled the activity, read from the provider's management interface.
func (i ActivityInfo) Orchestration(ctx context.Context) (name, version string, err error) {
	admin, ok := provider.AdminOf(i.client.p)
	if !ok {
		return "", "", ErrManagementNotAvailable
	}
	info, err := admin.InstanceInfo(ctx, i.Instance)
	if err != nil {
		return "", "", err
	}
	return info.OrchestrationName, info.OrchestrationVersion, nil
}

type activityKey struct{}

type activityValues struct {
	info   ActivityInfo
	logger *slog.Logger
}

// ActivityInfoFrom returns the activity execution ctx belongs to; ok is
// false outside an activity.
func ActivityInfoFrom(ctx context.Context) (ActivityInfo, bool) {
	v, ok := ctx.Value(activityKey{}).(*activityValues)
	if !ok {
		return ActivityInfo{}, false
	}
	return v.info, true
}

// ActivityLogger returns a logger whose records carry the activity's
// instance, execution, name and id; outside an activity, slog.Default().
func ActivityLogger(ctx context.Context) *slog.Logger {
	if v, ok := ctx.Value(activityKey{}).(*activityValues); ok {
		return v.logger
	}
	return slog.Default()
}

// ClientFrom returns a client over the provider of the runtime running the
// activity; nil outside an activity.
func ClientFrom(ctx context.Context) *Client {
	if v, ok := ctx.Value(activityKey{}).(*activityValues); ok {
		return v.info.client
	}
	return nil
}

// workerSlot fetches and runs activities until fetchCtx ends.
func (r *Runtime) workerSlot(fetchCtx, workCtx context.Context, slot int) {
	owner := r.opts.WorkerNodeID
	if owner == "" {
		owner = "work-" + strconv.Itoa(slot) + "-" + r.opts.RuntimeID
	}
	r.sessions.addOwner(owner, r.opts.Now(), r.stableOwners)
	r.pollLoop(fetchCtx, slot, queueWorker, func() (func(), error) {
		var session *provider.SessionFetchConfig
		if r.sessions.count() < r.opts.MaxSessionsPerRuntime {
			session = &provider.SessionFetchConfig{OwnerID: owner, LockTimeout: r.opts.SessionLockTimeout}
		}
		item, err := r.p.FetchWorkItem(fetchCtx, r.opts.WorkerLockTimeout, r.opts.LongPollTimeout, session, r.opts.WorkerTags)
		if item == nil {
			return nil, err
		}
		fetched := r.opts.Now()
		return func() { r.processWork(workCtx, item, fetched, owner) }, err
	})
}

// processWork runs one locked activity and acks its outcome.
func (r *Runtime) processWork(ctx context.Context, locked *provider.LockedWorkItem, fetched time.Time, owner string) {
	item := locked.Item
	log := r.log.With("instance_id", item.Instance, "execution_id", item.ExecutionID, "activity_name", item.Name, "activity_id", item.ID)
	ctx, at := r.tel.startActivity(ctx, locked)
	defer at.end()
	if item.SessionID != nil {
		// The fetch claimed or touched the session; so will the ack.
		r.sessions.worked(owner, r.opts.Now())
		defer func() { r.sessions.worked(owner, r.opts.Now()) }()
		if !r.sessions.enter(*item.SessionID, r.opts.MaxSessionsPerRuntime) {
			r.abandonWork(ctx, log, locked.LockToken, 100*time.Millisecond, true)
			return
		}
		defer r.sessions.leave(*item.SessionID)
	}
	if locked.AttemptCount > r.opts.MaxAttempts {
		log.Error("activity poisoned", "attempts", locked.AttemptCount, "max_attempts", r.opts.MaxAttempts)
		at.finished(outcomePoisoned, "poisoned")
		r.ackWork(ctx, log, locked, provider.ActivityFailedItem{
			Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID,
			Details: provider.PoisonDetails{
				AttemptCount: locked.AttemptCount, MaxAttempts: r.opts.MaxAttempts,
				MessageType: provider.PoisonActivity{Instance: item.Instance, ExecutionID: item.ExecutionID, ActivityName: item.Name, ActivityID: item.ID},
				Message:     messagesJSON([]provider.WorkItem{item}),
			},
		})
		return
	}
	fn, ok := r.activity(item.Name)
	if !ok {
		delay := r.opts.UnregisteredBackoff.Delay(locked.AttemptCount)
		log.Warn("activity not registered; retrying later", "attempt", locked.AttemptCount, "backoff", delay)
		r.abandonWork(ctx, log, locked.LockToken, delay, false)
		return
	}
	if !r.workLease(locked).usable(expiryOf(locked.LeaseExpiry, fetched, r.opts.WorkerLockTimeout)) {
		// Too little of the lease is left to start: not an attempt.
		log.Warn("activity lease ends before it could start; handing it back", "lease_expiry", locked.LeaseExpiry)
		r.abandonWork(ctx, log, locked.LockToken, 0, true)
		return
	}
	info := r.activityInfo(locked, owner)
	finished := r.activityStarted(info)
	result, err, cause := r.runActivity(ctx, log, locked, fetched, info, fn)
	outcome := activityOutcome(err, cause)
	// Told once the outcome is acked or handed back.
	defer func() { finished(outcome, err) }()
	switch outcome {
	case outcomeAbandoned:
		r.abandonWork(context.WithoutCancel(ctx), log, locked.LockToken, 0, true)
		return
	case outcomeCancelled:
		log.Info("activity cancelled", "cause", cause)
		at.finished(outcomeCancelled, "")
		// The lock is normally gone (item cancelled or lock lost) and this
		// abandon fails harmlessly. After a transient renewal failure the
		// lock may still be held: abandoning, unlike acking without a
		// result (duroxide), lets the activity run again instead of
		// dropping it.
		r.abandonWork(context.WithoutCancel(ctx), log, locked.LockToken, 0, false)
		return
	}
	var completion provider.WorkItem
	if err != nil {
		at.finished(outcomeFailed, err.Error())
		completion = provider.ActivityFailedItem{Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID,
			Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppActivityFailed}, Message: err.Error()}}
	} else {
		at.finished(outcomeCompleted, "")
		completion = provider.ActivityCompletedItem{Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID, Result: result}
	}
	r.ackWork(context.WithoutCancel(ctx), log, locked, completion)
}

// activityOutcome is how an activity run ended, from runActivity's
// error and cause: "abandoned" when the runtime shut down before it
// finished (it runs again elsewhere), "cancelled" when its lock was lost,
// else "failed" or "completed".
func activityOutcome(err, cause error) string {
	switch {
	case errors.Is(cause, ErrShutdown):
		if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ErrShutdown)) {
			return outcomeAbandoned
		}
		// It finished despite the shutdown: acked as it ended.
	case cause != nil:
		return outcomeCancelled
	}
	if err != nil {
		return outcomeFailed
	}
	return outcomeCompleted
}

// activityInfo describes the run of locked by worker owner.
func (r *Runtime) activityInfo(locked *provider.LockedWorkItem, owner string) ActivityInfo {
	item := locked.Item
	return ActivityInfo{
		Instance: item.Instance, ExecutionID: item.ExecutionID, Name: item.Name, ID: item.ID,
		SessionID: item.SessionID, Tag: item.Tag, Attempt: locked.AttemptCount, WorkerID: owner, client: r.client,
	}
}

// runActivity runs fn with its lease kept beside it. cause is set when the
// activity's context was cancelled: ErrShutdown, ErrActivityCancelled or
// ErrLeaseExpired.
func (r *Runtime) runActivity(ctx context.Context, log *slog.Logger, locked *provider.LockedWorkItem, fetched time.Time, info ActivityInfo, fn func(context.Context, string) (string, error)) (result string, err error, cause error) {
	item := locked.Item
	actCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	actCtx = context.WithValue(actCtx, activityKey{}, &activityValues{info: info, logger: log})
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRenew()
	go r.workLease(locked).keep(renewCtx, expiryOf(locked.LeaseExpiry, fetched, r.opts.WorkerLockTimeout), func(err error) {
		log.Warn("activity lock lost; cancelling the activity", "error", err)
		r.tel.activity(ctx).lockLost()
		if !errors.Is(err, ErrLeaseExpired) {
			err = ErrActivityCancelled
		}
		cancel(err)
	})
	type outcome struct {
		result string
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				log.Error("activity panicked", "panic", p, "stack", string(debug.Stack()))
				o = outcome{err: fmt.Errorf("activity panicked: %v", p)}
			}
			done <- o
		}()
		o.result, o.err = fn(actCtx, item.Input)
	}()
	select {
	case o := <-done:
		return o.result, o.err, context.Cause(actCtx)
	case <-actCtx.Done():
	}
	cause = context.Cause(actCtx)
	if errors.Is(cause, ErrShutdown) {
		o := <-done // shutdown waits for the activity to return
		return o.result, o.err, cause
	}
	grace := time.NewTimer(r.opts.ActivityCancellationGracePeriod)
	defer grace.Stop()
	select {
	case o := <-done:
		return o.result, o.err, cause
	case <-grace.C:
		log.Warn("cancelled activity did not return within the grace period; its result will be discarded")
		return "", context.Canceled, cause
	}
}

// ackWork acks an activity's completion; a result the provider cannot
// store fails the activity instead.
func (r *Runtime) ackWork(ctx context.Context, log *slog.Logger, locked *provider.LockedWorkItem, completion provider.WorkItem) {
	err := r.ackWorkWithRetry(ctx, locked.LockToken, completion)
	if errors.Is(err, provider.ErrInvalidInput) {
		item := locked.Item
		log.Warn("activity result refused by the provider; failing the activity", "error", err)
		err = r.ackWorkWithRetry(ctx, locked.LockToken, provider.ActivityFailedItem{
			Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID,
			Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppActivityFailed}, Message: "result too large: " + err.Error()},
		})
	}
	switch {
	case err == nil:
	case errors.Is(err, provider.ErrInvalidLockToken):
		log.Warn("activity lock lost before the ack; its result is discarded", "error", err)
		r.tel.activity(ctx).lockLost()
	default:
		log.Warn("activity ack failed; abandoning for a retry", "error", err)
		r.abandonWork(ctx, log, locked.LockToken, 100*time.Millisecond, false)
	}
}

// ackWorkWithRetry acks an activity, retrying retryable failures five
// times with the same token: a retry of an ack that committed but lost its
// response succeeds (the provider's contract), so the activity is not run
// again for a transient failure.
func (r *Runtime) ackWorkWithRetry(ctx context.Context, token string, completion provider.WorkItem) error {
	var err error
	for attempt := range 6 {
		if attempt > 0 && !sleep(ctx, 10*time.Millisecond<<(attempt-1)) {
			return err
		}
		err = r.p.AckWorkItem(ctx, token, completion)
		if err == nil || !provider.IsRetryable(err) {
			return err
		}
	}
	return err
}

func (r *Runtime) abandonWork(ctx context.Context, log *slog.Logger, token string, delay time.Duration, ignoreAttempt bool) {
	if err := r.p.AbandonWorkItem(context.WithoutCancel(ctx), token, delay, ignoreAttempt); err != nil && !errors.Is(err, provider.ErrInvalidLockToken) {
		log.Warn("abandon failed; the lock expires instead", "error", err)
	}
}

// activity returns the handler of name: registered, or built in.
func (r *Runtime) activity(name string) (func(context.Context, string) (string, error), bool) {
	switch name {
	case syscallNewGUID:
		return newGUID, true
	case syscallUTCNowMs:
		return func(context.Context, string) (string, error) {
			return strconv.FormatInt(r.opts.Now().UnixMilli(), 10), nil
		}, true
	case syscallGetKVValue:
		return r.getKVValue, true
	}
	return r.reg.activity(name)
}

func newGUID(context.Context, string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func (r *Runtime) getKVValue(ctx context.Context, input string) (string, error) {
	var in struct {
		InstanceID string `json:"instance_id"`
		Key        string `json:"key"`
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("get_kv_value input %q: %w", input, err)
	}
	v, ok, err := r.p.KVValue(ctx, in.InstanceID, in.Key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "null", nil
	}
	return encode(v)
}

// sessionTracker counts this runtime's in-flight activities per session,
// and knows the owner ids whose sessions it renews and when each last
// worked on a session.
type sessionTracker struct {
	mu       sync.Mutex
	inFlight map[string]int
	owners   []string
	// lastWork is, per owner, when it last fetched or acked an activity
	// of a session, or when it was added if it may hold sessions from
	// before a restart (a stable id).
	lastWork map[string]time.Time
}

func newSessionTracker() *sessionTracker {
	return &sessionTracker{inFlight: map[string]int{}, lastWork: map[string]time.Time{}}
}

// addOwner adds owner, which may already hold sessions (a stable id a
// stopped runtime used) when held is true: it is then renewable as if it
// had just worked. A new random id holds none until it works.
func (s *sessionTracker) addOwner(owner string, now time.Time, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if held {
		s.lastWork[owner] = now
	}
	for _, o := range s.owners {
		if o == owner {
			return
		}
	}
	s.owners = append(s.owners, owner)
}

// workedSince reports whether an owner fetched or acked an activity of a
// session after t.
func (s *sessionTracker) workedSince(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range s.lastWork {
		if at.After(t) {
			return true
		}
	}
	return false
}

// cleanupSchedule spaces the clean-ups of orphaned sessions: every base
// interval while there are sessions about, doubling up to maxCleanupFactor
// times it while clean-ups find nothing to delete and this runtime does no
// session work. An orphan is a session record nothing uses; removing it
// later costs nothing but its storage, while each clean-up costs a Query
// per shard on DynamoDB.
type cleanupSchedule struct {
	base, interval time.Duration
	// last is when the last clean-up ended (the runtime's clock).
	last time.Time
}

// maxCleanupFactor bounds the clean-up interval: 12 × the default 5 min
// is an hour.
const maxCleanupFactor = 12

func newCleanupSchedule(base time.Duration) *cleanupSchedule {
	return &cleanupSchedule{base: base, interval: base}
}

// next returns the wait before the next clean-up, after one that found
// sessions (or failed) or not, and whether the runtime did session work
// since the one before.
func (c *cleanupSchedule) next(found, worked bool) time.Duration {
	if found || worked {
		c.interval = c.base
	} else {
		c.interval = min(2*c.interval, maxCleanupFactor*c.base)
	}
	return c.interval
}

// worked records that owner fetched or acked an activity of a session.
func (s *sessionTracker) worked(owner string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastWork[owner] = now
}

// renewable returns the owners that may hold a session a renewal would
// extend. A provider renews only sessions with activity within
// SessionIdleTimeout, and a session's activity is its owner's fetches and
// acks: an owner that has done none for longer than horizon (the idle
// timeout plus a lease, a margin for index lag and clocks) holds no such
// session, and renewing it would cost requests for nothing.
func (s *sessionTracker) renewable(now time.Time, horizon time.Duration) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, o := range s.owners {
		if now.Sub(s.lastWork[o]) <= horizon {
			out = append(out, o)
		}
	}
	return out
}

func (s *sessionTracker) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inFlight)
}

// enter admits an activity of session id unless that would exceed limit
// distinct sessions.
func (s *sessionTracker) enter(id string, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[id] == 0 && len(s.inFlight) >= limit {
		return false
	}
	s.inFlight[id]++
	return true
}

func (s *sessionTracker) leave(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[id]--; s.inFlight[id] <= 0 {
		delete(s.inFlight, id)
	}
}

// sessionManager renews this runtime's sessions and removes orphaned ones
// until ctx ends.
func (r *Runtime) sessionManager(ctx context.Context) {
	renew := time.NewTicker(renewalInterval(r.opts.SessionLockTimeout, r.opts.SessionLockRenewalBuffer))
	defer renew.Stop()
	cleanups := newCleanupSchedule(r.opts.SessionCleanupInterval)
	cleanup := time.NewTimer(cleanups.interval)
	defer cleanup.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			if owners := r.sessions.renewable(r.opts.Now(), r.opts.SessionIdleTimeout+r.opts.SessionLockTimeout); len(owners) > 0 {
				if _, err := r.p.RenewSessionLock(ctx, owners, r.opts.SessionLockTimeout, r.opts.SessionIdleTimeout); err != nil && ctx.Err() == nil {
					r.log.Warn("session renewal failed", "error", err)
				}
			}
		case <-cleanup.C:
			deleted, err := r.p.CleanupOrphanedSessions(ctx, r.opts.SessionIdleTimeout)
			if err != nil && ctx.Err() == nil {
				r.log.Warn("session cleanup failed", "error", err)
			}
			cleanup.Reset(cleanups.next(deleted > 0 || err != nil, r.sessions.workedSince(cleanups.last)))
			cleanups.last = r.opts.Now()
		}
	}
}

// workLease is the lease of an activity's lock.
func (r *Runtime) workLease(locked *provider.LockedWorkItem) *lease {
	return r.newLease(r.opts.WorkerLockTimeout, r.opts.WorkerLockRenewalBuffer, func(ctx context.Context, extendFor time.Duration) error {
		return r.p.RenewWorkItemLock(ctx, locked.LockToken, extendFor)
	})
}
