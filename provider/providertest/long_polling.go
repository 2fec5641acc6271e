package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Timings of the polling tests.
const (
	// longPollingLockTimeout is the lock timeout passed to every fetch.
	longPollingLockTimeout = 30 * time.Second
	// longPollingPollTimeout is the poll timeout of the short- and
	// long-poll tests.
	longPollingPollTimeout = 500 * time.Millisecond
	// longPollingBoundPoll and longPollingBoundSlack define the upper-bound
	// test: a fetch with that poll timeout returns within poll+slack.
	longPollingBoundPoll  = 300 * time.Millisecond
	longPollingBoundSlack = 200 * time.Millisecond
)

// longPollingTests returns the LongPolling category (duroxide module
// long_polling). Short-poll tests run for providers without
// Factory.LongPolling, long-poll tests for those with it.
func longPollingTests() []testCase {
	return []testCase{
		{"ShortPollReturnsImmediately", longPollingShortPollReturnsImmediately},
		{"LongPollWaitsForTimeout", longPollingLongPollWaitsForTimeout},
		{"FetchRespectsTimeoutUpperBound", longPollingFetchRespectsTimeoutUpperBound},
		{"ShortPollWorkItemReturnsImmediately", longPollingShortPollWorkItemReturnsImmediately},
		{"LongPollWorkItemWaitsForTimeout", longPollingLongPollWorkItemWaitsForTimeout},
	}
}

// longPollingOnlyShort skips t for a long-polling provider.
func longPollingOnlyShort(t *testing.T, s *suite) {
	t.Helper()
	if s.f.LongPolling {
		t.Skip("short-poll test; the provider long-polls (Factory.LongPolling is set)")
	}
}

// longPollingOnlyLong skips t for a short-polling provider.
func longPollingOnlyLong(t *testing.T, s *suite) {
	t.Helper()
	if !s.f.LongPolling {
		t.Skip("long-poll test; the provider short-polls (Factory.LongPolling is not set)")
	}
}

// longPollingTimeOrchFetch fetches from an empty orchestrator queue with
// pollTimeout, checks that nothing came back and returns how long it took.
func longPollingTimeOrchFetch(ctx context.Context, t *testing.T, p provider.Provider, pollTimeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	item, err := p.FetchOrchestrationItem(ctx, longPollingLockTimeout, pollTimeout, nil)
	elapsed := time.Since(start)
	must(t, err, "FetchOrchestrationItem")
	if item != nil {
		t.Fatalf("FetchOrchestrationItem on an empty queue: got instance %q, want none", item.Instance)
	}
	return elapsed
}

// longPollingTimeWorkFetch fetches from an empty worker queue with
// pollTimeout, checks that nothing came back and returns how long it took.
func longPollingTimeWorkFetch(ctx context.Context, t *testing.T, p provider.Provider, pollTimeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	w, err := p.FetchWorkItem(ctx, longPollingLockTimeout, pollTimeout, nil, provider.DefaultOnlyTags())
	elapsed := time.Since(start)
	must(t, err, "FetchWorkItem")
	if w != nil {
		t.Fatalf("FetchWorkItem on an empty queue: got activity %d of %q, want none", w.Item.ID, w.Item.Instance)
	}
	return elapsed
}

// longPollingUnder makes the empty fetch timeFetch up to timingTries times
// and fails t unless one of them took less than limit. An upper bound on a
// call's duration cannot be told apart from the scheduler's delays, so one
// fetch under the bound is what the provider shows it can do; a provider
// that waits for the poll timeout exceeds it every time.
func longPollingUnder(t *testing.T, limit time.Duration, what string, timeFetch func() time.Duration) {
	t.Helper()
	var took []time.Duration
	for range timingTries {
		elapsed := timeFetch()
		if elapsed < limit {
			return
		}
		took = append(took, elapsed.Round(time.Millisecond))
	}
	t.Fatalf("%s took %v in %d tries, want one under %v", what, took, timingTries, limit)
}

// longPollingWantWork enqueues a start for instance and checks that a fetch
// with pollTimeout returns it: an empty fetch that returns quickly counts
// only from a provider that does return work.
func longPollingWantWork(ctx context.Context, t *testing.T, p provider.Provider, instance string, pollTimeout time.Duration) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item, err := p.FetchOrchestrationItem(ctx, longPollingLockTimeout, pollTimeout, nil)
	must(t, err, "FetchOrchestrationItem with work queued")
	if item == nil || item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem with a start of %q queued: got %+v, want that instance", instance, item)
	}
}

// longPollingShortPollReturnsImmediately checks that a short-polling
// provider ignores the poll timeout: an empty orchestration fetch returns
// within the factory's short-poll threshold, and one with work returns it.
func longPollingShortPollReturnsImmediately(t *testing.T, s *suite) {
	longPollingOnlyShort(t, s)
	ctx := s.context(t)
	p := s.provider(t)

	limit := s.shortPollThreshold()
	longPollingUnder(t, limit, "empty orchestration fetch with poll timeout "+longPollingPollTimeout.String(), func() time.Duration {
		return longPollingTimeOrchFetch(ctx, t, p, longPollingPollTimeout)
	})
	longPollingWantWork(ctx, t, p, "short-poll-work", longPollingPollTimeout)
}

// longPollingLongPollWaitsForTimeout checks that a long-polling provider
// blocks an empty orchestration fetch for at least the poll timeout.
func longPollingLongPollWaitsForTimeout(t *testing.T, s *suite) {
	longPollingOnlyLong(t, s)
	ctx := s.context(t)
	p := s.provider(t)

	elapsed := longPollingTimeOrchFetch(ctx, t, p, longPollingPollTimeout)
	if elapsed < longPollingPollTimeout {
		t.Fatalf("empty orchestration fetch returned after %v, want at least the poll timeout %v", elapsed, longPollingPollTimeout)
	}
}

// longPollingFetchRespectsTimeoutUpperBound checks that an empty
// orchestration fetch never blocks much longer than its poll timeout, and
// that a fetch with work queued returns it.
func longPollingFetchRespectsTimeoutUpperBound(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	limit := longPollingBoundPoll + longPollingBoundSlack
	longPollingUnder(t, limit, "empty orchestration fetch with poll timeout "+longPollingBoundPoll.String(), func() time.Duration {
		return longPollingTimeOrchFetch(ctx, t, p, longPollingBoundPoll)
	})
	longPollingWantWork(ctx, t, p, "bounded-poll-work", longPollingBoundPoll)
}

// longPollingShortPollWorkItemReturnsImmediately checks that a short-polling
// provider's empty work-item fetch returns within the short-poll threshold,
// and that one with work returns it.
func longPollingShortPollWorkItemReturnsImmediately(t *testing.T, s *suite) {
	longPollingOnlyShort(t, s)
	ctx := s.context(t)
	p := s.provider(t)

	limit := s.shortPollThreshold()
	longPollingUnder(t, limit, "empty work-item fetch with poll timeout "+longPollingPollTimeout.String(), func() time.Duration {
		return longPollingTimeWorkFetch(ctx, t, p, longPollingPollTimeout)
	})
	enqueueWorker(ctx, t, p, activityItem("short-poll-work", provider.InitialExecutionID, 1))
	w, err := p.FetchWorkItem(ctx, longPollingLockTimeout, longPollingPollTimeout, nil, provider.DefaultOnlyTags())
	must(t, err, "FetchWorkItem with work queued")
	if w == nil && convergenceOf(ctx).bound > 0 {
		// Discovery may lag the enqueue: await it (see awaitWorkTimed).
		w = awaitWork(ctx, t, p, longPollingLockTimeout, nil, provider.DefaultOnlyTags())
	}
	if w == nil || w.Item.Instance != "short-poll-work" {
		t.Fatalf("FetchWorkItem with an activity queued: got %+v, want it", w)
	}
}

// longPollingLongPollWorkItemWaitsForTimeout checks that a long-polling
// provider blocks an empty work-item fetch for at least the poll timeout.
func longPollingLongPollWorkItemWaitsForTimeout(t *testing.T, s *suite) {
	longPollingOnlyLong(t, s)
	ctx := s.context(t)
	p := s.provider(t)

	elapsed := longPollingTimeWorkFetch(ctx, t, p, longPollingPollTimeout)
	if elapsed < longPollingPollTimeout {
		t.Fatalf("empty work-item fetch returned after %v, want at least the poll timeout %v", elapsed, longPollingPollTimeout)
	}
}
