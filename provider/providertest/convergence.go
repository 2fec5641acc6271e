package providertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// This file holds the checks that await convergence ([Factory.Convergence]).
//
// The convergence rule. A provider that declares a bound B promises that
// every read begun B after a write returned reflects it. A check that a
// write shows (in a listing, a gauge, a count, or as work a fetch finds)
// therefore reads until it does, and fails only on a read begun after B
// that still does not: the observation that fails lies wholly inside the
// window the promise covers, as the timing rule (above the constant
// longLease) asks. B is measured from the moment the check starts, after
// the write returned, so it is never shorter than the promise. With B zero
// a check makes exactly one read, as strict as before. A check that
// something is not visible, or not held, makes one read whatever B is: lag
// only hides writes, it never shows one early.

// convergencePoll is the pause between two reads of a check that awaits
// convergence: short against the bounds providers declare (hundreds of
// milliseconds to seconds) and long enough not to flood a remote store.
const convergencePoll = 50 * time.Millisecond

// convergenceKey is the context key of a test's convergence.
type convergenceKey struct{}

// convergence is what a test's checks need to await convergence.
type convergence struct {
	// bound is Factory.Convergence.
	bound time.Duration
	// longPolling is Factory.LongPolling: fetches that await work pass
	// what is left of the bound as their poll timeout.
	longPolling bool
}

// convergenceOf returns the convergence ctx carries (zero, reads are
// current, for a context that carries none).
func convergenceOf(ctx context.Context) convergence {
	c, _ := ctx.Value(convergenceKey{}).(convergence)
	return c
}

// eventually calls observe until it reports agreement ("") and returns "".
// Without a bound it calls observe once. With one it calls observe again,
// convergencePoll after each disagreement, until a call that began after
// the bound passed; that call's disagreement is returned, for the caller to
// fail on. observe may fail t itself (on errors).
func eventually(ctx context.Context, t *testing.T, observe func() (disagreement string)) string {
	t.Helper()
	c := convergenceOf(ctx)
	deadline := time.Now().Add(c.bound)
	for {
		start := time.Now()
		d := observe()
		if d == "" || c.bound == 0 || start.After(deadline) {
			return d
		}
		pause(ctx, t, convergencePoll)
	}
}

// pause waits for d, failing t when ctx ends first.
func pause(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		t.Fatalf("context done while awaiting convergence: %v", ctx.Err())
	}
}

// convergenceNote is the suffix of a failure of a check that awaited
// convergence: empty without a bound.
func convergenceNote(ctx context.Context) string {
	if b := convergenceOf(ctx).bound; b > 0 {
		return fmt.Sprintf(" (still so on a read begun after the %v Factory.Convergence bound)", b)
	}
	return ""
}

// awaitEqual reads with read until the result deep-equals want, within the
// test's convergence bound (see eventually), and fails t otherwise, as
// wantEqual does. It returns the last result.
func awaitEqual[T any](ctx context.Context, t *testing.T, what string, want T, read func() T) T {
	t.Helper()
	var got T
	if eventually(ctx, t, func() string {
		got = read()
		if reflect.DeepEqual(got, want) {
			return ""
		}
		return "differs"
	}) != "" {
		t.Fatalf("%s: got %#v, want %#v%s", what, got, want, convergenceNote(ctx))
	}
	return got
}

// awaitTrue fails t unless ok reports true within the test's convergence
// bound (see eventually); ok returns what it saw otherwise.
func awaitTrue(ctx context.Context, t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	if d := eventually(ctx, t, func() string {
		good, saw := ok()
		if good {
			return ""
		}
		return saw
	}); d != "" {
		t.Fatalf("%s: %s%s", what, d, convergenceNote(ctx))
	}
}

// awaitPollTimeout is the poll timeout of a fetch that awaits work until
// deadline: what is left until deadline for a long-polling provider, so
// that its own wait serves, and zero otherwise.
func awaitPollTimeout(c convergence, deadline time.Time) time.Duration {
	if !c.longPolling {
		return 0
	}
	return max(time.Until(deadline), 0)
}

// awaitOrchTimed fetches an orchestration item that must become available,
// within the test's convergence bound: without a bound it fetches once
// without waiting, as fetchOrchTimed does. With one it fetches again (a
// long-polling provider waits up to what is left of the bound, others are
// asked every convergencePoll, as is one whose wait ended early) until an
// item comes or a fetch begun after the bound returned none. It returns the
// item (nil for none) and the span of the last fetch.
func awaitOrchTimed(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, span) {
	t.Helper()
	c := convergenceOf(ctx)
	deadline := time.Now().Add(c.bound)
	for {
		var item *provider.OrchestrationItem
		var err error
		pt := time.Duration(0)
		if c.bound > 0 {
			pt = awaitPollTimeout(c, deadline)
		}
		sp := timed(func() { item, err = p.FetchOrchestrationItem(ctx, lockTimeout, pt, filter) })
		must(t, err, "FetchOrchestrationItem")
		if item != nil || c.bound == 0 || sp.start.After(deadline) {
			return item, sp
		}
		pause(ctx, t, convergencePoll)
	}
}

// awaitWorkTimed is awaitOrchTimed for a work item.
func awaitWorkTimed(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, span) {
	t.Helper()
	c := convergenceOf(ctx)
	deadline := time.Now().Add(c.bound)
	for {
		var item *provider.LockedWorkItem
		var err error
		pt := time.Duration(0)
		if c.bound > 0 {
			pt = awaitPollTimeout(c, deadline)
		}
		sp := timed(func() { item, err = p.FetchWorkItem(ctx, lockTimeout, pt, session, tags) })
		must(t, err, "FetchWorkItem")
		if item != nil || c.bound == 0 || sp.start.After(deadline) {
			return item, sp
		}
		pause(ctx, t, convergencePoll)
	}
}

// awaitWork is awaitWorkTimed without the span.
func awaitWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) *provider.LockedWorkItem {
	t.Helper()
	item, _ := awaitWorkTimed(ctx, t, p, lockTimeout, session, tags)
	return item
}

// settle waits out the test's convergence bound (nothing without one), for
// a check of the order in which fetches return work enqueued moments
// apart. A provider whose discovery lags may find a newer item before an
// older one it does not see yet; it promises order only among what its
// discovery shows, and only once every write has converged does that cover
// all the items. Convergence cannot be observed without consuming the work
// whose order is checked, so the check waits for the bound the provider
// promises and then verifies the order as strictly as without one.
func settle(ctx context.Context, t *testing.T) {
	t.Helper()
	if b := convergenceOf(ctx).bound; b > 0 {
		pause(ctx, t, b)
	}
}

// awaitListed awaits, before a bulk operation that selects instances
// through the provider's listing (DeleteInstanceBulk, PruneExecutionsBulk),
// that the listing agrees with the store on ids: every instance of ids that
// InstanceInfo finds is listed by ListInstancesByStatus under its current
// status, and every one it does not find is absent from ListInstances.
// Under a convergence bound the listing may not show the test's latest
// writes yet, and the operation would act on an older view; the bound is
// the promise that it converges, so the check fails when a read begun after
// it still disagrees (see eventually). One read that agrees does not make
// the next one agree (a lagging source may answer each read from a view of
// its own), so it then waits until the bound has passed since the read
// that agreed returned: the operation's own reads then begin a bound after
// a view that held the writes. (Counting from the writes instead would
// trust the bound to cover the time to that first read too, which retries
// of the read itself can stretch.) Without a bound it does nothing: the
// listing is current and the operation is checked as it comes.
func awaitListed(ctx context.Context, t *testing.T, admin provider.Admin, ids ...string) {
	t.Helper()
	bound := convergenceOf(ctx).bound
	if bound == 0 {
		return
	}
	status := make(map[string]string, len(ids))
	for _, id := range ids {
		info, err := admin.InstanceInfo(ctx, id)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		must(t, err, "InstanceInfo("+id+")")
		status[id] = info.Status
	}
	awaitTrue(ctx, t, "listing before a bulk operation that selects through it", func() (bool, string) {
		all, err := admin.ListInstances(ctx)
		must(t, err, "ListInstances")
		byStatus := map[string][]string{}
		for _, id := range ids {
			st, found := status[id]
			if !found {
				if slices.Contains(all, id) {
					return false, fmt.Sprintf("ListInstances still lists deleted instance %q", id)
				}
				continue
			}
			listed, ok := byStatus[st]
			if !ok {
				listed, err = admin.ListInstancesByStatus(ctx, st)
				must(t, err, "ListInstancesByStatus("+st+")")
				byStatus[st] = listed
			}
			if !slices.Contains(listed, id) {
				return false, fmt.Sprintf("ListInstancesByStatus(%s) does not list %q", st, id)
			}
		}
		return true, ""
	})
	pause(ctx, t, bound)
}
