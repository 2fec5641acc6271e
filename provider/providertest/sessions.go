package providertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Sessions pin every activity of one session id to the worker that claimed
// the session. These tests follow duroxide's sessions module, including its
// short leases (50 ms, 200 ms, 500 ms, 1 s): the assertions depend on those
// durations and on their ratios to the waits. The tests that observe a
// lease or idle window from inside it lengthen it on a slow provider (see
// suite.window); the others only wait it out.

const (
	// sessionsWorkLock is the activity lock most session tests fetch with;
	// none waits for it to run out.
	sessionsWorkLock = longLease
	// sessionsDefaultLease is the session lease of sessionsCfg.
	sessionsDefaultLease = 30 * time.Second
	// sessionsRenewFor and sessionsLongIdle are the renewal arguments used
	// when a session is meant to count as active.
	sessionsRenewFor = 30 * time.Second
	sessionsLongIdle = 300 * time.Second
)

// sessionsTests returns the Sessions category.
func sessionsTests() []testCase {
	return []testCase{
		{"NonSessionItemsFetchableByAnyWorker", sessionsNonSessionItemsFetchableByAnyWorker},
		{"SessionItemClaimableWhenNoSession", sessionsSessionItemClaimableWhenNoSession},
		{"SessionAffinitySameWorker", sessionsSessionAffinitySameWorker},
		{"SessionAffinityBlocksOtherWorker", sessionsSessionAffinityBlocksOtherWorker},
		{"DifferentSessionsDifferentWorkers", sessionsDifferentSessionsDifferentWorkers},
		{"MixedSessionAndNonSessionItems", sessionsMixedSessionAndNonSessionItems},
		{"SessionClaimableAfterLockExpiry", sessionsSessionClaimableAfterLockExpiry},
		{"NoneSessionSkipsSessionItems", sessionsNoneSessionSkipsSessionItems},
		{"SomeSessionReturnsAllItems", sessionsSomeSessionReturnsAllItems},
		{"RenewSessionLockActive", sessionsRenewSessionLockActive},
		{"RenewSessionLockSkipsIdle", sessionsRenewSessionLockSkipsIdle},
		{"RenewSessionLockNoSessions", sessionsRenewSessionLockNoSessions},
		{"CleanupRemovesExpiredNoItems", sessionsCleanupRemovesExpiredNoItems},
		{"CleanupKeepsSessionsWithPendingItems", sessionsCleanupKeepsSessionsWithPendingItems},
		{"CleanupKeepsActiveSessions", sessionsCleanupKeepsActiveSessions},
		{"AckUpdatesSessionLastActivity", sessionsAckUpdatesSessionLastActivity},
		{"RenewWorkItemUpdatesSessionLastActivity", sessionsRenewWorkItemUpdatesSessionLastActivity},
		{"SessionItemsProcessedInOrder", sessionsSessionItemsProcessedInOrder},
		{"NonSessionItemsReturnedWithSessionConfig", sessionsNonSessionItemsReturnedWithSessionConfig},
		{"SharedWorkerIDAnyCallerCanFetchOwnedSession", sessionsSharedWorkerIDAnyCallerCanFetchOwnedSession},
		{"ConcurrentSessionClaimOnlyOneWins", sessionsConcurrentSessionClaimOnlyOneWins},
		{"SessionTakeoverAfterLockExpiry", sessionsSessionTakeoverAfterLockExpiry},
		{"CleanupThenNewItemRecreatesSession", sessionsCleanupThenNewItemRecreatesSession},
		{"AbandonedSessionItemRetryable", sessionsAbandonedSessionItemRetryable},
		{"AbandonedSessionItemIgnoreAttempt", sessionsAbandonedSessionItemIgnoreAttempt},
		{"RenewSessionLockAfterExpiryReturnsZero", sessionsRenewSessionLockAfterExpiryReturnsZero},
		{"OriginalWorkerReclaimsExpiredSession", sessionsOriginalWorkerReclaimsExpiredSession},
		{"ActivityLockExpiresSessionLockValidSameWorkerRefetches", sessionsActivityLockExpiresSessionLockValidSameWorkerRefetches},
		{"SessionLockExpiresNewOwnerGetsRedelivery", sessionsSessionLockExpiresNewOwnerGetsRedelivery},
		{"SessionLockExpiresSameWorkerReacquires", sessionsSessionLockExpiresSameWorkerReacquires},
		{"BothLocksExpireDifferentWorkerClaims", sessionsBothLocksExpireDifferentWorkerClaims},
		{"SessionLockExpiresActivityLockValidAckSucceeds", sessionsSessionLockExpiresActivityLockValidAckSucceeds},
		{"SessionLockRenewalExtendsPastOriginalTimeout", sessionsSessionLockRenewalExtendsPastOriginalTimeout},
	}
}

// ---------------------------------------------------------------------------
// Helpers

// sessionsItem is activity id of execution 1 of instance, bound to session.
func sessionsItem(instance string, id uint64, session string) provider.ActivityExecuteItem {
	item := activityItem(instance, 1, id)
	item.Name = "SessionActivity"
	item.SessionID = ptr(session)
	return item
}

// sessionsPlainItem is activity id of execution 1 of instance, with no
// session.
func sessionsPlainItem(instance string, id uint64) provider.ActivityExecuteItem {
	item := activityItem(instance, 1, id)
	item.Name = "PlainActivity"
	return item
}

// sessionsCfg is a session fetch config for owner with a 30 s lease.
func sessionsCfg(owner string) *provider.SessionFetchConfig {
	return sessionsCfgLease(owner, sessionsDefaultLease)
}

// sessionsCfgLease is a session fetch config for owner with the given lease.
func sessionsCfgLease(owner string, lease time.Duration) *provider.SessionFetchConfig {
	return &provider.SessionFetchConfig{OwnerID: owner, LockTimeout: lease}
}

// sessionsFetch fetches an untagged work item with a 5 s activity lock under
// cfg (nil for a session-less fetch); nil when there is none.
func sessionsFetch(ctx context.Context, t *testing.T, p provider.Provider, cfg *provider.SessionFetchConfig) *provider.LockedWorkItem {
	t.Helper()
	return fetchWork(ctx, t, p, sessionsWorkLock, cfg, provider.DefaultOnlyTags())
}

// sessionsAwait is sessionsFetch for an item that must be available:
// under a convergence bound it awaits one (see awaitWorkTimed); nil when
// none came.
func sessionsAwait(ctx context.Context, t *testing.T, p provider.Provider, cfg *provider.SessionFetchConfig) *provider.LockedWorkItem {
	t.Helper()
	return awaitWork(ctx, t, p, sessionsWorkLock, cfg, provider.DefaultOnlyTags())
}

// sessionsOwnerOf names the owner in cfg for messages.
func sessionsOwnerOf(cfg *provider.SessionFetchConfig) string {
	if cfg == nil {
		return "<no session config>"
	}
	return cfg.OwnerID
}

// sessionsWant fails t unless got is activity id bound to session ("" for
// an activity without a session).
func sessionsWant(t *testing.T, got *provider.LockedWorkItem, id uint64, session, what string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: want activity %d, got no item", what, id)
	}
	if got.Item.ID != id {
		t.Fatalf("%s: got activity %d, want %d", what, got.Item.ID, id)
	}
	sessionsWantSession(t, got, session, what)
}

// sessionsWantSession fails t unless got is bound to session ("" for none).
func sessionsWantSession(t *testing.T, got *provider.LockedWorkItem, session, what string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: want an item of session %q, got no item", what, session)
	}
	switch gotSession := got.Item.SessionID; {
	case session == "" && gotSession != nil:
		t.Fatalf("%s: got activity %d of session %q, want one without a session", what, got.Item.ID, *gotSession)
	case session != "" && gotSession == nil:
		t.Fatalf("%s: got activity %d without a session, want session %q", what, got.Item.ID, session)
	case session != "" && *gotSession != session:
		t.Fatalf("%s: got activity %d of session %q, want session %q", what, got.Item.ID, *gotSession, session)
	}
}

// sessionsWantNone fails t if got is an item.
func sessionsWantNone(t *testing.T, got *provider.LockedWorkItem, what string) {
	t.Helper()
	if got != nil {
		session := "<none>"
		if got.Item.SessionID != nil {
			session = *got.Item.SessionID
		}
		t.Fatalf("%s: want no item, got activity %d of instance %q (session %s)", what, got.Item.ID, got.Item.Instance, session)
	}
}

// sessionsMustFetch fetches under cfg and fails t when there is no item.
func sessionsMustFetch(ctx context.Context, t *testing.T, p provider.Provider, cfg *provider.SessionFetchConfig, what string) *provider.LockedWorkItem {
	t.Helper()
	got := sessionsAwait(ctx, t, p, cfg)
	if got == nil {
		t.Fatalf("%s: FetchWorkItem as %s: want an item, got none%s", what, sessionsOwnerOf(cfg), convergenceNote(ctx))
	}
	return got
}

// sessionsAckDrop acks a work item without a completion.
func sessionsAckDrop(ctx context.Context, t *testing.T, p provider.Provider, token string) {
	t.Helper()
	must(t, p.AckWorkItem(ctx, token, nil), "AckWorkItem")
}

// sessionsClaim enqueues item, fetches it under cfg (which claims its
// session for cfg's owner) and acks it, leaving the session owned by that
// owner with no pending item. It returns the span of the claiming fetch,
// during which the session's lease was granted.
func sessionsClaim(ctx context.Context, t *testing.T, p provider.Provider, item provider.ActivityExecuteItem, cfg *provider.SessionFetchConfig) span {
	t.Helper()
	enqueueWorker(ctx, t, p, item)
	got, claimed := awaitWorkTimed(ctx, t, p, sessionsWorkLock, cfg, provider.DefaultOnlyTags())
	if got == nil {
		t.Fatalf("claim session: FetchWorkItem as %s: want an item, got none", sessionsOwnerOf(cfg))
	}
	sessionsWant(t, got, item.ID, *item.SessionID, "claim session")
	sessionsAckDrop(ctx, t, p, got.LockToken)
	return claimed
}

// sessionsRenew calls RenewSessionLock for owners and fails t on error.
func sessionsRenew(ctx context.Context, t *testing.T, p provider.Provider, owners []string, extendFor, idle time.Duration) int {
	t.Helper()
	n, err := p.RenewSessionLock(ctx, owners, extendFor, idle)
	must(t, err, "RenewSessionLock")
	return n
}

// sessionsCountDiffers is the disagreement of a count n that should be
// want, for eventually: "" when they agree.
func sessionsCountDiffers(n, want int) string {
	if n == want {
		return ""
	}
	return fmt.Sprintf("got %d, want %d", n, want)
}

// sessionsCleanup calls CleanupOrphanedSessions and fails t on error.
func sessionsCleanup(ctx context.Context, t *testing.T, p provider.Provider) int {
	t.Helper()
	n, err := p.CleanupOrphanedSessions(ctx, sessionsLongIdle)
	must(t, err, "CleanupOrphanedSessions")
	return n
}

// ---------------------------------------------------------------------------
// Basic routing

// sessionsNonSessionItemsFetchableByAnyWorker checks that an activity without a session is fetched by a worker using a session config.
func sessionsNonSessionItemsFetchableByAnyWorker(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsPlainItem("inst-1", 1))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 1, "", "plain item fetched by worker-A")
}

// sessionsSessionItemClaimableWhenNoSession checks that a session item nobody owns is fetchable and keeps its session id.
func sessionsSessionItemClaimableWhenNoSession(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "session-1"))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 1, "session-1", "unclaimed session item")
}

// sessionsSessionAffinitySameWorker checks that the worker that claimed a session fetches its later items.
func sessionsSessionAffinitySameWorker(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 2, "session-1", "owner fetches its session's next item")
}

// sessionsSessionAffinityBlocksOtherWorker checks that another worker cannot fetch items of a session someone else owns.
func sessionsSessionAffinityBlocksOtherWorker(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))
	got := sessionsFetch(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWantNone(t, got, "worker-B fetching while worker-A owns session-1")
}

// sessionsDifferentSessionsDifferentWorkers checks that two sessions owned by two workers each route to their owner.
func sessionsDifferentSessionsDifferentWorkers(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))
	sessionsClaim(ctx, t, p, sessionsItem("inst-2", 1, "session-2"), sessionsCfg("worker-B"))

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))
	enqueueWorker(ctx, t, p, sessionsItem("inst-2", 2, "session-2"))

	gotA := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWantSession(t, gotA, "session-1", "worker-A")
	if gotA.Item.Instance != "inst-1" {
		t.Fatalf("worker-A: got instance %q, want inst-1", gotA.Item.Instance)
	}
	gotB := sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWantSession(t, gotB, "session-2", "worker-B")
	if gotB.Item.Instance != "inst-2" {
		t.Fatalf("worker-B: got instance %q, want inst-2", gotB.Item.Instance)
	}
}

// sessionsMixedSessionAndNonSessionItems checks that a worker blocked from an owned session still receives plain items queued behind it.
func sessionsMixedSessionAndNonSessionItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))
	enqueueWorker(ctx, t, p, sessionsPlainItem("inst-2", 1))

	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWantSession(t, got, "", "worker-B skips session-1 and gets the plain item")
	if got.Item.Instance != "inst-2" {
		t.Fatalf("worker-B: got instance %q, want inst-2", got.Item.Instance)
	}
}

// ---------------------------------------------------------------------------
// Session leases

// sessionsSessionClaimableAfterLockExpiry checks that another worker can claim a session once its 50 ms lease has run out.
func sessionsSessionClaimableAfterLockExpiry(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfgLease("worker-A", lease))

	sleepPast(ctx, t, lease)

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWant(t, got, 2, "session-1", "worker-B claims the expired session")
}

// sessionsNoneSessionSkipsSessionItems checks that a fetch without a session config returns only items without a session.
func sessionsNoneSessionSkipsSessionItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "session-1"))
	enqueueWorker(ctx, t, p, sessionsPlainItem("inst-2", 2))

	got := sessionsAwait(ctx, t, p, nil)
	sessionsWant(t, got, 2, "", "session-less fetch")
	sessionsAckDrop(ctx, t, p, got.LockToken)

	sessionsWantNone(t, sessionsFetch(ctx, t, p, nil), "session-less fetch with only a session item queued")

	got = sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 1, "session-1", "fetch with a session config")
}

// sessionsSomeSessionReturnsAllItems checks that a fetch with a session config returns items of several unowned sessions and plain items, in FIFO order.
func sessionsSomeSessionReturnsAllItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "sess-A"))
	enqueueWorker(ctx, t, p, sessionsItem("inst-2", 2, "sess-B"))
	enqueueWorker(ctx, t, p, sessionsItem("inst-3", 3, "sess-C"))
	enqueueWorker(ctx, t, p, sessionsPlainItem("inst-4", 4))
	settle(ctx, t) // FIFO among what converged (see settle)

	cfg := sessionsCfg("shared-proc")
	var ids []uint64
	for range 4 {
		got := sessionsMustFetch(ctx, t, p, cfg, "fetch with session config")
		ids = append(ids, got.Item.ID)
		sessionsAckDrop(ctx, t, p, got.LockToken)
	}
	wantEqual(t, ids, []uint64{1, 2, 3, 4}, "activity ids in fetch order")

	sessionsWantNone(t, sessionsFetch(ctx, t, p, cfg), "fetch after the queue was drained")
}

// ---------------------------------------------------------------------------
// Session renewal

// sessionsRenewSessionLockActive checks that renewal counts each active session of the owner (1, then 2).
func sessionsRenewSessionLockActive(t *testing.T, s *suite) {
	ctx := s.context(t)
	s.tries(t, func(p provider.Provider) string {
		lease := s.window(ctx, t, p, 5*time.Second)
		claimed := sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfgLease("worker-A", lease))

		// Renewal finds the owner's sessions as work discovery does: under
		// a convergence bound the count is awaited.
		var n int
		var renewed span
		eventually(ctx, t, func() string {
			renewed = timed(func() { n = sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, sessionsLongIdle) })
			return sessionsCountDiffers(n, 1)
		})
		if live := claimed.earliest(lease); n != 1 && !renewed.endsBefore(live) {
			return renewed.missed("RenewSessionLock with one active session", live)
		}
		wantEqual(t, n, 1, "sessions renewed with one active session")

		sessionsClaim(ctx, t, p, sessionsItem("inst-2", 1, "session-2"), sessionsCfg("worker-A"))

		// Both leases now run for sessionsRenewFor.
		awaitEqual(ctx, t, "sessions renewed with two active sessions", 2, func() int {
			return sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, sessionsLongIdle)
		})
		return ""
	})
}

// sessionsRenewSessionLockSkipsIdle checks that renewal with a zero idle timeout renews nothing.
func sessionsRenewSessionLockSkipsIdle(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))

	n := sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, 0)
	wantEqual(t, n, 0, "sessions renewed with idle timeout 0")
}

// sessionsRenewSessionLockNoSessions checks that renewal for an owner without sessions returns 0, while another owner's session is renewed.
func sessionsRenewSessionLockNoSessions(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	n := sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, sessionsLongIdle)
	wantEqual(t, n, 0, "sessions renewed for an owner with none")

	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-B"))
	n = sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, sessionsLongIdle)
	wantEqual(t, n, 0, "sessions renewed for an owner with none, while worker-B owns one")
	n = sessionsRenew(ctx, t, p, []string{"worker-B"}, sessionsRenewFor, sessionsLongIdle)
	wantEqual(t, n, 1, "sessions renewed for worker-B, which owns one")
}

// ---------------------------------------------------------------------------
// Session cleanup

// sessionsCleanupRemovesExpiredNoItems checks that cleanup removes an expired session no item references and reports 1.
func sessionsCleanupRemovesExpiredNoItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfgLease("worker-A", lease))

	sleepPast(ctx, t, lease)

	// Cleanup finds idle sessions as discovery does: awaited under a
	// convergence bound (a count of 0 stays exact).
	awaitEqual(ctx, t, "sessions cleaned up", 1, func() int { return sessionsCleanup(ctx, t, p) })
}

// sessionsCleanupKeepsSessionsWithPendingItems checks that cleanup keeps an expired session that a queued item still references.
func sessionsCleanupKeepsSessionsWithPendingItems(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfgLease("worker-A", lease))
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "session-1"))

	sleepPast(ctx, t, lease)

	wantEqual(t, sessionsCleanup(ctx, t, p), 0, "sessions cleaned up while an item is pending")
}

// sessionsCleanupKeepsActiveSessions checks that cleanup keeps a session whose lease is live.
func sessionsCleanupKeepsActiveSessions(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfgLease("worker-A", 300*time.Second))

	wantEqual(t, sessionsCleanup(ctx, t, p), 0, "live sessions cleaned up")
}

// ---------------------------------------------------------------------------
// Activity on session items counts as session activity

// sessionsAckUpdatesSessionLastActivity checks that acking a session item refreshes the session's last activity (seen through an idle window of 200 ms or more, see suite.window).
func sessionsAckUpdatesSessionLastActivity(t *testing.T, s *suite) {
	ctx := s.context(t)
	s.tries(t, func(p provider.Provider) string {
		idle := s.window(ctx, t, p, 200*time.Millisecond)
		enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "session-1"))
		got := sessionsMustFetch(ctx, t, p, sessionsCfg("worker-A"), "fetch session item")

		// The claim's activity time is now older than the idle window; only
		// the ack can make the session look active again.
		sleepPast(ctx, t, idle)
		n := sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, idle)
		wantEqual(t, n, 0, "sessions renewed when the claim is older than the idle window ("+idle.String()+")")

		acked := timed(func() {
			must(t, p.AckWorkItem(ctx, got.LockToken, provider.ActivityCompletedItem{
				Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "ok",
			}), "AckWorkItem")
		})
		return sessionsWantActive(ctx, t, p, acked, idle, "sessions renewed right after the ack (idle window "+idle.String()+")")
	})
}

// sessionsRenewWorkItemUpdatesSessionLastActivity checks that renewing a session item's lock refreshes the session's last activity.
func sessionsRenewWorkItemUpdatesSessionLastActivity(t *testing.T, s *suite) {
	ctx := s.context(t)
	s.tries(t, func(p provider.Provider) string {
		idle := s.window(ctx, t, p, 200*time.Millisecond)
		enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "session-1"))
		got := sessionsMustFetch(ctx, t, p, sessionsCfg("worker-A"), "fetch session item")

		// As above: only the renewal can make the session look active.
		sleepPast(ctx, t, idle)
		n := sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, idle)
		wantEqual(t, n, 0, "sessions renewed when the claim is older than the idle window ("+idle.String()+")")

		renewed := timed(func() {
			must(t, p.RenewWorkItemLock(ctx, got.LockToken, 30*time.Second), "RenewWorkItemLock")
		})
		return sessionsWantActive(ctx, t, p, renewed, idle, "sessions renewed right after the work-item renewal (idle window "+idle.String()+")")
	})
}

// sessionsWantActive checks that worker-A's session counts as active when
// renewed with idle timeout idle right after the call of touched, which
// should have refreshed its last activity: RenewSessionLock must return 1.
// The renewal counts only when it returned within idle of touched's start;
// otherwise it is a miss.
func sessionsWantActive(ctx context.Context, t *testing.T, p provider.Provider, touched span, idle time.Duration, what string) (missed string) {
	t.Helper()
	var n int
	renewed := timed(func() { n = sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, idle) })
	if active := touched.earliest(idle); !renewed.endsBefore(active) {
		return renewed.missed("RenewSessionLock", active)
	}
	wantEqual(t, n, 1, what)
	return ""
}

// ---------------------------------------------------------------------------
// Edge cases

// sessionsSessionItemsProcessedInOrder checks that the items of one session are fetched in enqueue order.
func sessionsSessionItemsProcessedInOrder(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	for id := uint64(1); id <= 3; id++ {
		enqueueWorker(ctx, t, p, sessionsItem("inst-1", id, "session-1"))
	}
	settle(ctx, t) // FIFO among what converged (see settle)
	cfg := sessionsCfg("worker-A")
	for id := uint64(1); id <= 3; id++ {
		got := sessionsMustFetch(ctx, t, p, cfg, "fetch session item")
		sessionsWant(t, got, id, "session-1", "FIFO within a session")
		sessionsAckDrop(ctx, t, p, got.LockToken)
	}
}

// sessionsNonSessionItemsReturnedWithSessionConfig checks that a session owner still receives plain items.
func sessionsNonSessionItemsReturnedWithSessionConfig(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "session-1"), sessionsCfg("worker-A"))

	enqueueWorker(ctx, t, p, sessionsPlainItem("inst-2", 1))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 1, "", "plain item fetched by a session owner")
	if got.Item.Instance != "inst-2" {
		t.Fatalf("got instance %q, want inst-2", got.Item.Instance)
	}
}

// sessionsSharedWorkerIDAnyCallerCanFetchOwnedSession checks that callers sharing one owner id all fetch that owner's session items, and other owners do not.
func sessionsSharedWorkerIDAnyCallerCanFetchOwnedSession(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "shared-sess"))
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "shared-sess"))

	// Two separate fetches (two slots of one process) with the same owner.
	got := sessionsMustFetch(ctx, t, p, sessionsCfg("process-1"), "first slot")
	sessionsWant(t, got, 1, "shared-sess", "first slot of process-1")
	sessionsAckDrop(ctx, t, p, got.LockToken)

	got = sessionsMustFetch(ctx, t, p, sessionsCfg("process-1"), "second slot")
	sessionsWant(t, got, 2, "shared-sess", "second slot of process-1")
	sessionsAckDrop(ctx, t, p, got.LockToken)

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 3, "shared-sess"))
	sessionsWantNone(t, sessionsFetch(ctx, t, p, sessionsCfg("process-2")), "process-2 fetching a session process-1 owns")
}

// sessionsConcurrentSessionClaimOnlyOneWins checks that of several owners racing for one unclaimed session exactly one gets an item and the others stay locked out.
func sessionsConcurrentSessionClaimOnlyOneWins(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "contested-sess"))
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "contested-sess"))

	owners := []string{"worker-A", "worker-B", "worker-C", "worker-D", "worker-E", "worker-F", "worker-G", "worker-H"}
	results := make([]*provider.LockedWorkItem, len(owners))
	errs := make([]error, len(owners))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, owner := range owners {
		wg.Go(func() {
			<-start
			results[i], errs[i] = p.FetchWorkItem(ctx, sessionsWorkLock, 0, sessionsCfg(owner), provider.DefaultOnlyTags())
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, got := range results {
		must(t, errs[i], "FetchWorkItem as "+owners[i])
		if got == nil {
			continue
		}
		if winner >= 0 {
			t.Fatalf("both %s (activity %d) and %s (activity %d) got an item of the contested session",
				owners[winner], results[winner].Item.ID, owners[i], got.Item.ID)
		}
		winner = i
		sessionsWantSession(t, got, "contested-sess", "winner's item")
	}
	if winner < 0 {
		t.Fatal("no racer got an item of the unclaimed session")
	}

	// The session now belongs to the winner: every other owner still gets
	// nothing, although one item of the session is unlocked.
	for i, owner := range owners {
		if i == winner {
			continue
		}
		sessionsWantNone(t, sessionsFetch(ctx, t, p, sessionsCfg(owner)), owner+" fetching after "+owners[winner]+" won the session")
	}
	sessionsAckDrop(ctx, t, p, results[winner].LockToken)
}

// sessionsSessionTakeoverAfterLockExpiry checks that another worker takes over a session after its 50 ms lease ran out, even with an item queued meanwhile.
func sessionsSessionTakeoverAfterLockExpiry(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "takeover-sess"), sessionsCfgLease("worker-A", lease))
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "takeover-sess"))

	sleepPast(ctx, t, lease)

	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWant(t, got, 2, "takeover-sess", "worker-B takes over the expired session")
}

// sessionsCleanupThenNewItemRecreatesSession checks that after cleanup removed a session, a new item of that session id can be claimed afresh.
func sessionsCleanupThenNewItemRecreatesSession(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "ephemeral-sess"), sessionsCfgLease("worker-A", lease))

	sleepPast(ctx, t, lease)

	// Cleanup finds idle sessions as discovery does: awaited under a
	// convergence bound (a count of 0 stays exact).
	awaitEqual(ctx, t, "sessions cleaned up", 1, func() int { return sessionsCleanup(ctx, t, p) })

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "ephemeral-sess"))
	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWant(t, got, 2, "ephemeral-sess", "claim of a cleaned-up session")
}

// sessionsAbandonedSessionItemRetryable checks that an abandoned session item is redelivered with attempt count 2 and is gone after its ack.
func sessionsAbandonedSessionItemRetryable(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	cfg := sessionsCfg("worker-A")
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "retry-sess"))

	got := sessionsMustFetch(ctx, t, p, cfg, "first delivery")
	sessionsWant(t, got, 1, "retry-sess", "first delivery")
	wantEqual(t, got.AttemptCount, uint32(1), "attempt count of the first delivery")

	must(t, p.AbandonWorkItem(ctx, got.LockToken, 0, false), "AbandonWorkItem")

	got = sessionsMustFetch(ctx, t, p, cfg, "redelivery")
	sessionsWant(t, got, 1, "retry-sess", "redelivery")
	wantEqual(t, got.AttemptCount, uint32(2), "attempt count after abandon")
	sessionsAckDrop(ctx, t, p, got.LockToken)

	sessionsWantNone(t, sessionsFetch(ctx, t, p, cfg), "fetch after the ack")
}

// sessionsAbandonedSessionItemIgnoreAttempt checks that abandoning a session item with ignoreAttempt leaves the redelivery's attempt count at 1.
func sessionsAbandonedSessionItemIgnoreAttempt(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	cfg := sessionsCfg("worker-A")
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "ignore-sess"))

	got := sessionsMustFetch(ctx, t, p, cfg, "first delivery")
	wantEqual(t, got.AttemptCount, uint32(1), "attempt count of the first delivery")

	delay := time.Millisecond
	must(t, p.AbandonWorkItem(ctx, got.LockToken, delay, true), "AbandonWorkItem(ignoreAttempt)")
	sleepPast(ctx, t, delay)

	got = sessionsMustFetch(ctx, t, p, cfg, "redelivery")
	sessionsWant(t, got, 1, "ignore-sess", "redelivery")
	wantEqual(t, got.AttemptCount, uint32(1), "attempt count after an abandon with ignoreAttempt")
	sessionsAckDrop(ctx, t, p, got.LockToken)
}

// sessionsRenewSessionLockAfterExpiryReturnsZero checks that renewal does not revive a session whose lease already ran out.
func sessionsRenewSessionLockAfterExpiryReturnsZero(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "expired-sess"), sessionsCfgLease("worker-A", lease))

	sleepPast(ctx, t, lease)

	n := sessionsRenew(ctx, t, p, []string{"worker-A"}, sessionsRenewFor, sessionsLongIdle)
	wantEqual(t, n, 0, "sessions renewed after the lease expired")
}

// sessionsOriginalWorkerReclaimsExpiredSession checks that the former owner can claim its own session again after the lease ran out.
func sessionsOriginalWorkerReclaimsExpiredSession(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 50 * time.Millisecond
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "reclaim-sess"), sessionsCfgLease("worker-A", lease))
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "reclaim-sess"))

	sleepPast(ctx, t, lease)

	got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 2, "reclaim-sess", "worker-A reclaims its expired session")
}

// sessionsActivityLockExpiresSessionLockValidSameWorkerRefetches checks that an item whose activity lock expired while its session lease is live is redelivered only to the session owner, with attempt count 2.
func sessionsActivityLockExpiresSessionLockValidSameWorkerRefetches(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	workLock := 500 * time.Millisecond
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "sticky-sess"))
	got := fetchWork(ctx, t, p, workLock, sessionsCfg("worker-A"), provider.DefaultOnlyTags())
	sessionsWant(t, got, 1, "sticky-sess", "worker-A claims with a 500ms activity lock and a 30s lease")

	// Not acked: the activity lock runs out, the session lease does not.
	sleepPast(ctx, t, workLock)

	sessionsWantNone(t, sessionsFetch(ctx, t, p, sessionsCfg("worker-B")), "worker-B while worker-A's lease is live")

	got = sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
	sessionsWant(t, got, 1, "sticky-sess", "redelivery to worker-A")
	wantEqual(t, got.AttemptCount, uint32(2), "attempt count of the redelivery")
	sessionsAckDrop(ctx, t, p, got.LockToken)
}

// sessionsSessionLockExpiresNewOwnerGetsRedelivery checks that once another worker took over an expired session, a redelivered earlier item of it goes to the new owner.
func sessionsSessionLockExpiresNewOwnerGetsRedelivery(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 200 * time.Millisecond
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "takeover2-sess"))
	gotA := fetchWork(ctx, t, p, longLease, sessionsCfgLease("worker-A", lease), provider.DefaultOnlyTags())
	sessionsWant(t, gotA, 1, "takeover2-sess", "worker-A claims with a 200ms lease and a 30s activity lock")

	// The lease runs out while worker-A still holds the activity lock.
	sleepPast(ctx, t, lease)

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "takeover2-sess"))
	cfgB := sessionsCfg("worker-B")
	gotB := sessionsAwait(ctx, t, p, cfgB)
	sessionsWant(t, gotB, 2, "takeover2-sess", "worker-B takes over and gets the new item")
	sessionsAckDrop(ctx, t, p, gotB.LockToken)

	// Worker-A gives its item up (as if its activity timed out).
	must(t, p.AbandonWorkItem(ctx, gotA.LockToken, 0, false), "AbandonWorkItem of worker-A's live lock")

	gotB = sessionsAwait(ctx, t, p, cfgB)
	sessionsWant(t, gotB, 1, "takeover2-sess", "redelivery to the new owner")
	wantEqual(t, gotB.AttemptCount, uint32(2), "attempt count of the redelivery")
	sessionsAckDrop(ctx, t, p, gotB.LockToken)
}

// sessionsSessionLockExpiresSameWorkerReacquires checks that the owner whose lease expired reacquires the session on its next fetch.
func sessionsSessionLockExpiresSameWorkerReacquires(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := 200 * time.Millisecond
	cfgA := sessionsCfgLease("worker-A", lease)
	sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "reacq-sess"), cfgA)

	sleepPast(ctx, t, lease)

	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "reacq-sess"))
	got := sessionsAwait(ctx, t, p, cfgA)
	sessionsWant(t, got, 2, "reacq-sess", "worker-A reacquires its expired session")
	sessionsAckDrop(ctx, t, p, got.LockToken)
}

// sessionsBothLocksExpireDifferentWorkerClaims checks that when both the activity lock and the session lease ran out, another worker gets the item with attempt count 2.
func sessionsBothLocksExpireDifferentWorkerClaims(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	// 200 ms, as duroxide has it, or longer on a slow machine: the fetch
	// must return before its own lock runs out (suite.window).
	short := s.window(ctx, t, p, 200*time.Millisecond)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "both-expire-sess"))
	got := fetchWork(ctx, t, p, short, sessionsCfgLease("worker-A", short), provider.DefaultOnlyTags())
	sessionsWant(t, got, 1, "both-expire-sess", "worker-A claims with a short activity lock and lease")

	// Not acked: both leases run out (waits 400ms, as duroxide does).
	sleepPast(ctx, t, short+100*time.Millisecond)

	got = sessionsAwait(ctx, t, p, sessionsCfg("worker-B"))
	sessionsWant(t, got, 1, "both-expire-sess", "worker-B after both leases expired")
	wantEqual(t, got.AttemptCount, uint32(2), "attempt count of the redelivery")
	sessionsAckDrop(ctx, t, p, got.LockToken)
}

// sessionsSessionLockExpiresActivityLockValidAckSucceeds checks that an item's ack succeeds while its activity lock is live even though the session lease ran out.
func sessionsSessionLockExpiresActivityLockValidAckSucceeds(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	lease := s.window(ctx, t, p, 200*time.Millisecond)
	enqueueWorker(ctx, t, p, sessionsItem("inst-1", 1, "sess-expires"))
	got := fetchWork(ctx, t, p, 30*time.Second, sessionsCfgLease("worker-A", lease), provider.DefaultOnlyTags())
	sessionsWant(t, got, 1, "sess-expires", "worker-A claims with a short lease and a 30s activity lock")

	sleepPast(ctx, t, lease)

	err := p.AckWorkItem(ctx, got.LockToken, provider.ActivityCompletedItem{
		Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "done",
	})
	must(t, err, "AckWorkItem with a live activity lock after the session lease expired")
}

// sessionsSessionLockRenewalExtendsPastOriginalTimeout checks that renewing a lease of 1 s (or more, see suite.window) at 60% keeps the session owned past its original expiry.
func sessionsSessionLockRenewalExtendsPastOriginalTimeout(t *testing.T, s *suite) {
	ctx := s.context(t)
	s.tries(t, func(p provider.Provider) string {
		lease := s.window(ctx, t, p, time.Second)
		claimed := sessionsClaim(ctx, t, p, sessionsItem("inst-1", 1, "renew-ext-sess"), sessionsCfgLease("worker-A", lease))

		sleepUntil(ctx, t, claimed.start.Add(lease*6/10))
		var n int
		renewed := timed(func() { n = sessionsRenew(ctx, t, p, []string{"worker-A"}, lease, sessionsLongIdle) })
		if live := claimed.earliest(lease); n != 1 && !renewed.endsBefore(live) {
			return renewed.missed("RenewSessionLock at 60% of the lease", live)
		}
		wantEqual(t, n, 1, "sessions renewed at 60% of the lease")

		// Past the original expiry, inside the renewed lease.
		sleepUntil(ctx, t, claimed.latest(lease).Add(pastMargin))
		enqueueWorker(ctx, t, p, sessionsItem("inst-1", 2, "renew-ext-sess"))
		other, probed := fetchWorkTimed(ctx, t, p, sessionsWorkLock, sessionsCfg("worker-B"), provider.DefaultOnlyTags())
		if live := renewed.earliest(lease); !probed.endsBefore(live) {
			return probed.missed("worker-B's fetch", live)
		}
		sessionsWantNone(t, other, "worker-B after the original expiry of a renewed lease")

		got := sessionsAwait(ctx, t, p, sessionsCfg("worker-A"))
		sessionsWant(t, got, 2, "renew-ext-sess", "worker-A still owns the renewed session")
		return ""
	})
}
