package providertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// This file holds the helpers shared by every category. Category files use
// these rather than writing their own variants.

const (
	// testOrchestration and testVersion are the name and version the
	// helpers give instances.
	testOrchestration = "TestOrch"
	testVersion       = "1.0.0"
	// runtimeVersion is the duroxide_version written on test events.
	runtimeVersion = "0.1.29"
)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// nowMs is the current time in epoch milliseconds.
func nowMs() uint64 { return uint64(time.Now().UnixMilli()) }

// event builds a history event.
func event(id uint64, instance string, executionID uint64, kind provider.EventKind) provider.Event {
	return provider.Event{
		EventID:         id,
		InstanceID:      instance,
		ExecutionID:     executionID,
		TimestampMs:     nowMs(),
		DuroxideVersion: runtimeVersion,
		Kind:            kind,
	}
}

// startedEvent is event 1 of an execution of testOrchestration.
func startedEvent(instance string, executionID uint64) provider.Event {
	return event(provider.InitialEventID, instance, executionID, provider.OrchestrationStarted{
		Name: testOrchestration, Version: testVersion, Input: "{}",
	})
}

// startItem is the start message for instance.
func startItem(instance string) provider.StartOrchestrationItem {
	return provider.StartOrchestrationItem{
		Instance:      instance,
		Orchestration: testOrchestration,
		Input:         "{}",
		Version:       ptr(testVersion),
		ExecutionID:   provider.InitialExecutionID,
	}
}

// activityItem is a worker-queue item for activity id of an execution.
func activityItem(instance string, executionID, id uint64) provider.ActivityExecuteItem {
	return provider.ActivityExecuteItem{
		Instance:    instance,
		ExecutionID: executionID,
		ID:          id,
		Name:        "TestActivity",
		Input:       "{}",
	}
}

// startMetadata is the metadata of an execution's first turn.
func startMetadata() provider.ExecutionMetadata {
	return provider.ExecutionMetadata{OrchestrationName: testOrchestration, OrchestrationVersion: testVersion}
}

// must fails t if err is not nil.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// enqueueOrch enqueues item on the orchestrator queue.
func enqueueOrch(ctx context.Context, t *testing.T, p provider.Provider, item provider.WorkItem, delay time.Duration) {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, item, delay), "EnqueueForOrchestrator("+item.Kind()+")")
}

// enqueueWorker enqueues item on the worker queue.
func enqueueWorker(ctx context.Context, t *testing.T, p provider.Provider, item provider.ActivityExecuteItem) {
	t.Helper()
	must(t, p.EnqueueForWorker(ctx, item), "EnqueueForWorker")
}

// fetchOrch fetches an orchestration item without waiting; nil when there
// is none. Errors fail t.
func fetchOrch(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	return item
}

// mustFetchOrch fetches an orchestration item that must be available and
// fails t when there is none. Under a convergence bound it awaits the item
// (see awaitOrchTimed).
func mustFetchOrch(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.OrchestrationItem {
	t.Helper()
	item, _ := mustFetchOrchTimed(ctx, t, p, lockTimeout)
	return item
}

// wantNoOrch fails t if an orchestration item can be fetched.
func wantNoOrch(ctx context.Context, t *testing.T, p provider.Provider, why string) {
	t.Helper()
	if item := fetchOrch(ctx, t, p, 30*time.Second); item != nil {
		t.Fatalf("%s: want no orchestration item, got instance %q with %d messages", why, item.Instance, len(item.Messages))
	}
}

// fetchWork fetches a work item without waiting; nil when there is none.
func fetchWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) *provider.LockedWorkItem {
	t.Helper()
	item, err := p.FetchWorkItem(ctx, lockTimeout, 0, session, tags)
	must(t, err, "FetchWorkItem")
	return item
}

// mustFetchWork fetches an untagged, session-less work item that must be
// available and fails t when there is none. Under a convergence bound it
// awaits the item (see awaitWorkTimed).
func mustFetchWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.LockedWorkItem {
	t.Helper()
	item := awaitWork(ctx, t, p, lockTimeout, nil, provider.DefaultOnlyTags())
	if item == nil {
		t.Fatal("FetchWorkItem: want an item, got none" + convergenceNote(ctx))
	}
	return item
}

// ack acknowledges an orchestration item and fails t on error.
func ack(ctx context.Context, t *testing.T, p provider.Provider, token string, commit provider.TurnCommit) {
	t.Helper()
	must(t, p.AckOrchestrationItem(ctx, token, commit), "AckOrchestrationItem")
}

// createInstance starts instance: it enqueues a start, fetches it and acks
// the first turn with OrchestrationStarted and start metadata. The instance
// is left running with an empty queue.
func createInstance(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("createInstance: fetched %q, want %q", item.Instance, instance)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})
}

// completeInstance starts instance and completes it in one turn with status
// (Completed or Failed) and output.
func completeInstance(ctx context.Context, t *testing.T, p provider.Provider, instance, parent, status string) {
	t.Helper()
	start := startItem(instance)
	if parent != "" {
		start.ParentInstance = &parent
	}
	enqueueOrch(ctx, t, p, start, 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("completeInstance: fetched %q, want %q", item.Instance, instance)
	}
	var last provider.EventKind = provider.OrchestrationCompleted{Output: "done"}
	if status == provider.StatusFailed {
		last = provider.OrchestrationFailed{Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "failed"}}
	}
	meta := startMetadata()
	meta.ParentInstanceID = parent
	meta.Status = status
	meta.Output = ptr("done")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID), event(2, instance, provider.InitialExecutionID, last)},
		Metadata:     meta,
	})
}

// wantErr fails t unless err is a non-nil error that matches target (when
// target is not nil) and carries a *provider.Error.
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: want an error, got nil", what)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("%s: want an error matching %v, got %v", what, target, err)
	}
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: want a *provider.Error in the chain, got %T: %v", what, err, err)
	}
}

// wantPermanent fails t unless err is a permanent provider error (matching
// target when target is not nil).
func wantPermanent(t *testing.T, err, target error, what string) {
	t.Helper()
	wantErr(t, err, target, what)
	if provider.IsRetryable(err) {
		t.Fatalf("%s: want a permanent error, got a retryable one: %v", what, err)
	}
}

// wantMessage fails t unless err's text contains one of subs.
func wantMessage(t *testing.T, err error, what string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if strings.Contains(err.Error(), s) {
			return
		}
	}
	t.Fatalf("%s: error %q contains none of %q", what, err, subs)
}

// readHistory reads instance's latest history and fails t on error.
func readHistory(ctx context.Context, t *testing.T, p provider.Provider, instance string) []provider.Event {
	t.Helper()
	h, err := p.Read(ctx, instance)
	must(t, err, "Read("+instance+")")
	return h
}

// eventIDs returns the event ids of history, in order.
func eventIDs(history []provider.Event) []uint64 {
	ids := make([]uint64, len(history))
	for i, e := range history {
		ids[i] = e.EventID
	}
	return ids
}

// wantEqual fails t unless got deep-equals want.
func wantEqual[T any](t *testing.T, got, want T, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}

// ---------------------------------------------------------------------------
// Timing
//
// The timing rule. A provider reads its own clock somewhere inside a call;
// the suite knows only the call's span, from a clock read just before the
// call to one just after it returned. A time the provider stamps during a
// call as "d from now" (a lock's expiry, a delayed message's visibility, a
// session's last activity plus an idle timeout) therefore lies between
// span.start+d and span.end+d, give or take the millisecond providers keep
// times in. An observation of such a time counts only when the whole call
// that makes it lies on one side of it:
//
//   - "still locked", "still invisible", "still active" counts only from a
//     call that returned before span.start+d-1ms ([span.earliest]);
//   - "expired", "visible", "idle" counts only from a call that started
//     after span.end+d+1ms ([span.latest]). The suite waits until then,
//     plus pastMargin, before making such a call (sleepPast, sleepUntil),
//     so the scheduler can only make it later, never move it out of its
//     window.
//
// An observation of the first kind that the scheduler pushed past its
// instant is not asserted on, and the window is not widened to take it in:
// the test runs its scenario again on a fresh provider ([suite.tries]), at
// most timingTries times, and fails only if no try yields an observation
// inside the window. Where a test looks again late in a window, it picks
// the instant to leave room for its slowest probe ([span.late]). An
// instant the test names itself, such as a timer's FireAtMs, is observed
// clockAgreement inside it, since the provider's clock, not the test's,
// decides when it has come. An upper bound on how long a call takes (the
// poll tests) cannot be told apart from scheduler delay; it holds when one
// of timingTries calls meets it. No wait stands in for something that
// could be awaited: each is the passing of a lease or delay under test.
//
// Leases of longLease are held wherever expiry is not a test's subject; the
// suite takes it that no single step of a test stalls for that long.
//
// The scaling rule. A window must hold the calls a test makes inside it,
// or every try misses. A test whose subject is a lease or delay therefore
// sizes it, at the start of each try, as max(its nominal value,
// windowCalls × the provider's latency) ([suite.window]): the latency is
// the slowest of latencySamples cheap reads on the try's fresh provider.
// On an idle machine the nominal value wins and the test runs as written;
// on a loaded one, or against a slow store, the scenario grows. What is asserted does not change: invisible (held) during the
// delay (lease) and visible (free) after it, observed under the timing
// rule. A provider that honours only part of a delay still fails, since
// the late probe looks at least three quarters into the delay (or half,
// see span.late), whatever its length.

const (
	// longLease is the lock timeout and session lease of tests that never
	// wait for a lease to run out.
	longLease = 30 * time.Second
	// clockTick is the resolution providers keep times in: a time stamped
	// from a clock read at instant x may read as early as x-clockTick.
	clockTick = time.Millisecond
	// pastMargin is added to waits for a lease or delay to run out.
	pastMargin = 100 * time.Millisecond
	// timingTries bounds how often a test repeats a scenario whose timing
	// observation fell outside its window.
	timingTries = 5
	// lateSlackCap bounds how far before a window's end a late probe
	// starts, beyond a quarter of the window (see span.late).
	lateSlackCap = 400 * time.Millisecond
	// clockAgreement is how far a provider's clock may be from the
	// test's. A constant offset cancels out of the windows the provider
	// both stamps and checks; it matters where the test names an instant
	// itself (a timer's FireAtMs), which is observed that much inside.
	clockAgreement = 50 * time.Millisecond
	// windowCalls is how many calls, at the provider's measured latency,
	// a lease or delay under test lasts at least (see suite.window).
	windowCalls = 10
	// latencySamples is how many reads measure the latency.
	latencySamples = 5
	// latencyProbe is the instance whose (empty) history those reads read.
	latencyProbe = "providertest-latency-probe"
)

// window returns the length of a lease or delay of nominal length d for a
// try on p: d, or windowCalls times p's latency when that is longer (the
// scaling rule). p's latency is the slowest of latencySamples reads of the
// history of an instance no test creates: a cheap call that, unlike a
// fetch, leaves the provider's work discovery untouched. Their errors are
// not asserted on (their time counts all the same).
func (s *suite) window(ctx context.Context, t *testing.T, p provider.Provider, d time.Duration) time.Duration {
	t.Helper()
	var slowest time.Duration
	for range latencySamples {
		sp := timed(func() { _, _ = p.Read(ctx, latencyProbe) })
		slowest = max(slowest, sp.took())
	}
	w := max(d, windowCalls*slowest)
	if w > d {
		w = w.Truncate(time.Millisecond) + time.Millisecond
		t.Logf("the provider's calls take up to %v: a %v window is scaled to %v", slowest.Round(time.Millisecond), d, w.Round(time.Millisecond))
	}
	return w
}

// span is the interval of one call: from a clock read just before it to
// one just after it returned.
type span struct{ start, end time.Time }

// timed runs call and returns its span.
func timed(call func()) span {
	start := time.Now()
	call()
	return span{start, time.Now()}
}

// earliest is the earliest instant at which a time the provider stamped
// during sp as d from its clock can have arrived: before it, whatever was
// stamped still holds.
func (sp span) earliest(d time.Duration) time.Time { return sp.start.Add(d - clockTick) }

// latest is the instant after which a time the provider stamped during sp
// as d from its clock has surely arrived.
func (sp span) latest(d time.Duration) time.Time { return sp.end.Add(d + clockTick) }

// late is the instant, late in a window of length d that opened during sp,
// where tests look again whether what was stamped still holds: not only just
// after it began. It leaves room before the window's end for a probe three
// times as slow as took (the slowest probe the scenario has made), but no
// less than a quarter of the window and no more than half of it or
// lateSlackCap, whichever is more than the quarter: three quarters into the
// window for a fast provider, half to three quarters for one that is slow
// on a busy machine.
func (sp span) late(d, took time.Duration) time.Time {
	slack := max(d/4, min(3*took, d/2, lateSlackCap))
	return sp.start.Add(d - slack)
}

// took is how long the call of sp took.
func (sp span) took() time.Duration { return sp.end.Sub(sp.start) }

// endsBefore reports whether the call of sp returned before instant, so
// that what it observed holds before instant.
func (sp span) endsBefore(instant time.Time) bool { return sp.end.Before(instant) }

// missed describes an observation of sp that was due before deadline and
// came too late to count.
func (sp span) missed(what string, deadline time.Time) string {
	return fmt.Sprintf("%s returned %v after the end of the window it observes", what, sp.end.Sub(deadline).Round(time.Millisecond))
}

// tries runs scenario on a fresh provider until every timing observation
// it makes falls inside its window; scenario then returns "". Otherwise it
// returns a description of the observation that came too late (see
// span.missed), having asserted nothing on it, and runs again. After
// timingTries misses t fails.
func (s *suite) tries(t *testing.T, scenario func(p provider.Provider) (missed string)) {
	t.Helper()
	var misses []string
	for try := 1; try <= timingTries; try++ {
		missed := scenario(s.provider(t))
		if missed == "" {
			return
		}
		t.Logf("try %d: %s; it does not count, the scenario runs again", try, missed)
		misses = append(misses, missed)
	}
	t.Fatalf("no observation fell inside its window in %d tries (the machine is too loaded for these windows): %s",
		timingTries, strings.Join(misses, "; "))
}

// fetchOrchTimed fetches an orchestration item without waiting and returns
// it (nil for none) with the span of the fetch.
func fetchOrchTimed(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) (*provider.OrchestrationItem, span) {
	t.Helper()
	var item *provider.OrchestrationItem
	var err error
	sp := timed(func() { item, err = p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil) })
	must(t, err, "FetchOrchestrationItem")
	return item, sp
}

// mustFetchOrchTimed is fetchOrchTimed for an item that must be there
// (awaited under a convergence bound, see awaitOrchTimed). The span is the
// successful fetch's.
func mustFetchOrchTimed(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) (*provider.OrchestrationItem, span) {
	t.Helper()
	item, sp := awaitOrchTimed(ctx, t, p, lockTimeout, nil)
	if item == nil {
		t.Fatal("FetchOrchestrationItem: want an item, got none" + convergenceNote(ctx))
	}
	return item, sp
}

// fetchWorkTimed fetches a work item without waiting and returns it (nil
// for none) with the span of the fetch.
func fetchWorkTimed(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, span) {
	t.Helper()
	var item *provider.LockedWorkItem
	var err error
	sp := timed(func() { item, err = p.FetchWorkItem(ctx, lockTimeout, 0, session, tags) })
	must(t, err, "FetchWorkItem")
	return item, sp
}

// noOrchBefore checks that no orchestration item can be fetched, from a
// fetch that must return before deadline (the end of the lock or delay
// that hides the work), and returns how long the fetch took. It fails t
// when the fetch counts and returned an item, and returns a miss,
// asserting nothing, when it came too late.
func noOrchBefore(ctx context.Context, t *testing.T, p provider.Provider, deadline time.Time, why string) (took time.Duration, missed string) {
	t.Helper()
	item, sp := fetchOrchTimed(ctx, t, p, longLease)
	if !sp.endsBefore(deadline) {
		return sp.took(), sp.missed(why, deadline)
	}
	if item != nil {
		t.Fatalf("%s: want no orchestration item, got instance %q with %d messages", why, item.Instance, len(item.Messages))
	}
	return sp.took(), ""
}

// noWorkBefore is noOrchBefore for an untagged, session-less work item.
func noWorkBefore(ctx context.Context, t *testing.T, p provider.Provider, deadline time.Time, why string) (took time.Duration, missed string) {
	t.Helper()
	w, sp := fetchWorkTimed(ctx, t, p, longLease, nil, provider.DefaultOnlyTags())
	if !sp.endsBefore(deadline) {
		return sp.took(), sp.missed(why, deadline)
	}
	if w != nil {
		t.Fatalf("%s: want no work item, got activity %d of %q", why, w.Item.ID, w.Item.Instance)
	}
	return sp.took(), ""
}

// heldCall makes call, which needs a lock or lease that lasts until
// deadline, and returns its span. A success counts whenever it comes. An
// error fails t when call returned before deadline; after it, the error is
// a miss and nothing is asserted.
func heldCall(t *testing.T, deadline time.Time, what string, call func() error) (sp span, missed string) {
	t.Helper()
	var err error
	sp = timed(func() { err = call() })
	if err == nil {
		return sp, ""
	}
	if !sp.endsBefore(deadline) {
		return sp, sp.missed(what+" (failed: "+err.Error()+")", deadline)
	}
	t.Fatalf("%s: unexpected error while the lock it needs was held: %v", what, err)
	return sp, ""
}

// sleepPast sleeps until d plus pastMargin has passed, for tests whose
// subject is a lease or visibility time running out: called after the call
// that stamped the time returned, it waits past span.latest(d).
func sleepPast(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	sleepUntil(ctx, t, time.Now().Add(d+pastMargin))
}

// sleepUntil waits until the clock reaches when. Tests that act at fixed
// points of a lease measure them from one span, so slow calls in between do
// not shift the later points.
func sleepUntil(ctx context.Context, t *testing.T, when time.Time) {
	t.Helper()
	timer := time.NewTimer(time.Until(when))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		t.Fatalf("context done while waiting until %v: %v", when, ctx.Err())
	}
}
