package providertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// capabilityFilteringTests returns the CapabilityFiltering category.
func capabilityFilteringTests() []testCase {
	return []testCase{
		{"FetchWithFilterNoneReturnsAnyItem", capabilityFilteringFilterNoneReturnsAnyItem},
		{"FetchWithCompatibleFilterReturnsItem", capabilityFilteringCompatibleFilterReturnsItem},
		{"FetchWithIncompatibleFilterSkipsItem", capabilityFilteringIncompatibleFilterSkipsItem},
		{"FetchFilterSkipsIncompatibleSelectsCompatible", capabilityFilteringSkipsIncompatibleSelectsCompatible},
		{"FetchFilterDoesNotLockSkippedInstances", capabilityFilteringDoesNotLockSkippedInstances},
		{"FetchFilterNullPinnedVersionAlwaysCompatible", capabilityFilteringNullPinnedVersionAlwaysCompatible},
		{"FetchFilterBoundaryVersions", capabilityFilteringBoundaryVersions},
		{"PinnedVersionStoredViaAckMetadata", capabilityFilteringPinnedVersionStoredViaAckMetadata},
		{"PinnedVersionImmutableAcrossAckCycles", capabilityFilteringPinnedVersionImmutableAcrossAckCycles},
		{"ContinueAsNewExecutionGetsOwnPinnedVersion", capabilityFilteringContinueAsNewGetsOwnPinnedVersion},
		{"FilterWithEmptySupportedVersionsReturnsNothing", capabilityFilteringEmptySupportedVersionsReturnsNothing},
		{"ConcurrentFilteredFetchNoDoubleLock", capabilityFilteringConcurrentFilteredFetchNoDoubleLock},
		{"AckStoresPinnedVersionViaMetadataUpdate", capabilityFilteringAckStoresPinnedVersionViaMetadataUpdate},
		{"ProviderUpdatesPinnedVersionWhenTold", capabilityFilteringProviderUpdatesPinnedVersionWhenTold},
		{"FetchCorruptedHistoryFilteredVsUnfiltered", capabilityFilteringCorruptedHistoryFilteredVsUnfiltered},
		{"FetchDeserializationErrorIncrementsAttemptCount", capabilityFilteringDeserializationErrorIncrementsAttemptCount},
		{"FetchDeserializationErrorEventuallyReachesPoison", capabilityFilteringDeserializationErrorEventuallyReachesPoison},
		{"FetchFilterAppliedBeforeHistoryDeserialization", capabilityFilteringFilterAppliedBeforeHistoryDeserialization},
		{"FetchSingleRangeOnlyUsesFirstRange", capabilityFilteringSingleRangeOnlyUsesFirstRange},
		{"AckAppendsEventToCorruptedHistory", capabilityFilteringAckAppendsEventToCorruptedHistory},
	}
}

// capabilityFilteringLock is the orchestration lock timeout of this
// category; long enough that no lock taken here expires by accident.
const capabilityFilteringLock = 30 * time.Second

// capabilityFilteringV builds a version.
func capabilityFilteringV(major, minor, patch uint64) provider.SemVer {
	return provider.SemVer{Major: major, Minor: minor, Patch: patch}
}

// capabilityFilteringRange is a filter with the single inclusive range
// [lo, hi].
func capabilityFilteringRange(lo, hi provider.SemVer) *provider.CapabilityFilter {
	return &provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{{Min: lo, Max: hi}}}
}

// capabilityFilteringFetch fetches with filter and fails t on error; nil
// when nothing is eligible.
func capabilityFilteringFetch(ctx context.Context, t *testing.T, p provider.Provider, filter *provider.CapabilityFilter) *provider.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, filter)
	must(t, err, "FetchOrchestrationItem")
	return item
}

// capabilityFilteringWantItem fetches with filter and fails t unless it
// returns instance.
func capabilityFilteringWantItem(ctx context.Context, t *testing.T, p provider.Provider, filter *provider.CapabilityFilter, instance, why string) *provider.OrchestrationItem {
	t.Helper()
	item := capabilityFilteringFetch(ctx, t, p, filter)
	if item == nil {
		t.Fatalf("%s: want instance %q, got no item", why, instance)
	}
	if item.Instance != instance {
		t.Fatalf("%s: got instance %q, want %q", why, item.Instance, instance)
	}
	return item
}

// capabilityFilteringWantNone fetches with filter and fails t if it returns
// an item.
func capabilityFilteringWantNone(ctx context.Context, t *testing.T, p provider.Provider, filter *provider.CapabilityFilter, why string) {
	t.Helper()
	if item := capabilityFilteringFetch(ctx, t, p, filter); item != nil {
		t.Fatalf("%s: want no item, got instance %q", why, item.Instance)
	}
}

// capabilityFilteringStarted is OrchestrationStarted for an execution,
// written by runtime version runtime.
func capabilityFilteringStarted(instance string, executionID uint64, runtime string) provider.Event {
	e := startedEvent(instance, executionID)
	e.DuroxideVersion = runtime
	return e
}

// capabilityFilteringPing enqueues an external event for instance so that it
// has work to fetch.
func capabilityFilteringPing(ctx context.Context, t *testing.T, p provider.Provider, instance, name string) {
	t.Helper()
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: name, Data: "{}"}, 0)
}

// capabilityFilteringSeed starts instance with its first execution pinned to
// pinned and leaves one external event queued for it (enqueued by the same
// ack). Other instances' batches met on the way are abandoned without
// counting the attempt.
func capabilityFilteringSeed(ctx context.Context, t *testing.T, p provider.Provider, instance string, pinned provider.SemVer) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	var others []string
	var item *provider.OrchestrationItem
	for {
		item = capabilityFilteringFetch(ctx, t, p, nil)
		if item == nil {
			t.Fatalf("seeding %q: want its start message, got no item", instance)
		}
		if item.Instance == instance {
			break
		}
		others = append(others, item.LockToken)
	}
	meta := startMetadata()
	meta.PinnedDuroxideVersion = &pinned
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:       provider.InitialExecutionID,
		HistoryDelta:      []provider.Event{capabilityFilteringStarted(instance, provider.InitialExecutionID, pinned.String())},
		OrchestratorItems: []provider.WorkItem{provider.ExternalRaisedItem{Instance: instance, Name: "ping", Data: "{}"}},
		Metadata:          meta,
	})
	for _, token := range others {
		must(t, p.AbandonOrchestrationItem(ctx, token, 0, true), "AbandonOrchestrationItem(other instance)")
	}
}

// capabilityFilteringSeedCorrupt seeds instance pinned to pinned and then
// corrupts its stored history (skipping t when the factory cannot).
func capabilityFilteringSeedCorrupt(ctx context.Context, t *testing.T, s *suite, p provider.Provider, instance string, pinned provider.SemVer) {
	t.Helper()
	capabilityFilteringSeed(ctx, t, p, instance, pinned)
	s.corruptHistory(t, p, instance)
}

// capabilityFilteringWantHistoryError fails t unless item is instance's
// batch carrying a history error and no history.
func capabilityFilteringWantHistoryError(t *testing.T, item *provider.OrchestrationItem, instance, why string) {
	t.Helper()
	if item == nil {
		t.Fatalf("%s: want instance %q with a history error, got no item", why, instance)
	}
	if item.Instance != instance {
		t.Fatalf("%s: got instance %q, want %q", why, item.Instance, instance)
	}
	if item.HistoryError == nil {
		t.Fatalf("%s: want HistoryError set for corrupted history, got nil (history %d events)", why, len(item.History))
	}
	if len(item.History) != 0 {
		t.Fatalf("%s: want empty History alongside HistoryError, got %d events", why, len(item.History))
	}
}

// capabilityFilteringFilterNoneReturnsAnyItem checks that a fetch without a
// filter returns a pinned instance.
func capabilityFilteringFilterNoneReturnsAnyItem(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-1", capabilityFilteringV(1, 2, 3))
	capabilityFilteringWantItem(ctx, t, p, nil, "inst-1", "fetch without filter")
}

// capabilityFilteringCompatibleFilterReturnsItem checks that a filter whose
// range holds the pinned version returns the instance.
func capabilityFilteringCompatibleFilterReturnsItem(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-2", capabilityFilteringV(1, 2, 3))
	filter := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, filter, "inst-2", "fetch with [1.0.0, 1.9.9] for pinned 1.2.3")
}

// capabilityFilteringIncompatibleFilterSkipsItem checks that a filter whose
// range excludes the pinned version returns nothing.
func capabilityFilteringIncompatibleFilterSkipsItem(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-3", capabilityFilteringV(1, 2, 3))
	filter := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, filter, "fetch with [2.0.0, 2.9.9] for pinned 1.2.3")
}

// capabilityFilteringSkipsIncompatibleSelectsCompatible checks that with a
// v1 and a v2 instance queued each filter picks the instance it supports.
func capabilityFilteringSkipsIncompatibleSelectsCompatible(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-v1", capabilityFilteringV(1, 0, 0))
	capabilityFilteringSeed(ctx, t, p, "inst-v2", capabilityFilteringV(2, 0, 0))

	v2 := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	item := capabilityFilteringWantItem(ctx, t, p, v2, "inst-v2", "fetch with the v2 filter")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")

	v1 := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, v1, "inst-v1", "fetch with the v1 filter")
}

// capabilityFilteringDoesNotLockSkippedInstances checks that an instance a
// filter skipped is not left locked.
func capabilityFilteringDoesNotLockSkippedInstances(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-5", capabilityFilteringV(1, 0, 0))

	incompatible := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, incompatible, "fetch with an excluding filter")

	compatible := capabilityFilteringRange(capabilityFilteringV(0, 0, 0), capabilityFilteringV(1, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, compatible, "inst-5", "fetch with a compatible filter after the skip (the skipped instance must not be locked)")
}

// capabilityFilteringNullPinnedVersionAlwaysCompatible checks that an
// execution without a pinned version passes any filter.
func capabilityFilteringNullPinnedVersionAlwaysCompatible(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-null"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := capabilityFilteringWantItem(ctx, t, p, nil, inst, "first fetch")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{capabilityFilteringStarted(inst, provider.InitialExecutionID, "0.0.0")},
		Metadata:     startMetadata(), // no pinned version
	})
	capabilityFilteringPing(ctx, t, p, inst, "ping")

	filter := capabilityFilteringRange(capabilityFilteringV(99, 0, 0), capabilityFilteringV(99, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, filter, inst, "fetch with [99.0.0, 99.9.9] for an unpinned execution")
}

// capabilityFilteringBoundaryVersions checks that both range bounds are
// inclusive and that the next version above the range is excluded.
func capabilityFilteringBoundaryVersions(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	filter := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 9, 99))

	capabilityFilteringSeed(ctx, t, p, "v1-low", capabilityFilteringV(1, 0, 0))
	item := capabilityFilteringWantItem(ctx, t, p, filter, "v1-low", "lower bound 1.0.0 in [1.0.0, 1.9.99]")
	// Consume its batch, so the next check can only be answered by v1-high.
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})

	capabilityFilteringSeed(ctx, t, p, "v1-high", capabilityFilteringV(1, 9, 99))
	item = capabilityFilteringWantItem(ctx, t, p, filter, "v1-high", "upper bound 1.9.99 in [1.0.0, 1.9.99]")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")

	// A second provider holds only the out-of-range instance.
	p2 := s.provider(t)
	capabilityFilteringSeed(ctx, t, p2, "v2-exact", capabilityFilteringV(2, 0, 0))
	capabilityFilteringWantNone(ctx, t, p2, filter, "2.0.0 is outside [1.0.0, 1.9.99]")
	capabilityFilteringWantItem(ctx, t, p2, nil, "v2-exact", "fetch of the excluded instance without a filter")
}

// capabilityFilteringPinnedVersionStoredViaAckMetadata checks that the
// pinned version sent in ack metadata is what filters are matched against.
func capabilityFilteringPinnedVersionStoredViaAckMetadata(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-8", capabilityFilteringV(3, 1, 4))

	// An unpinned execution would pass every filter: an excluding range
	// proves the version was stored.
	below := capabilityFilteringRange(capabilityFilteringV(3, 0, 0), capabilityFilteringV(3, 1, 3))
	capabilityFilteringWantNone(ctx, t, p, below, "fetch with [3.0.0, 3.1.3] for pinned 3.1.4")

	filter := capabilityFilteringRange(capabilityFilteringV(3, 0, 0), capabilityFilteringV(3, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, filter, "inst-8", "fetch with [3.0.0, 3.9.9] for pinned 3.1.4")
}

// capabilityFilteringPinnedVersionImmutableAcrossAckCycles checks that a
// later ack without a pinned version leaves the stored one in place.
func capabilityFilteringPinnedVersionImmutableAcrossAckCycles(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-9"
	capabilityFilteringSeed(ctx, t, p, inst, capabilityFilteringV(1, 0, 0))

	filter := capabilityFilteringRange(capabilityFilteringV(0, 0, 0), capabilityFilteringV(1, 9, 9))
	item := capabilityFilteringWantItem(ctx, t, p, filter, inst, "second turn")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		Metadata:    startMetadata(), // no pinned version this time
	})
	capabilityFilteringPing(ctx, t, p, inst, "ping2")

	// Still pinned (not cleared): a v2-only filter must skip it.
	v2 := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, v2, "fetch with [2.0.0, 2.9.9] after an ack without a pinned version")
	capabilityFilteringWantItem(ctx, t, p, filter, inst, "fetch with the original filter after an ack without a pinned version")
}

// capabilityFilteringContinueAsNewGetsOwnPinnedVersion checks that the
// execution created by continue-as-new is filtered by its own pinned
// version, not the previous execution's.
func capabilityFilteringContinueAsNewGetsOwnPinnedVersion(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-can"
	capabilityFilteringSeed(ctx, t, p, inst, capabilityFilteringV(1, 0, 0))

	v1 := capabilityFilteringRange(capabilityFilteringV(0, 0, 0), capabilityFilteringV(1, 9, 9))
	item := capabilityFilteringWantItem(ctx, t, p, v1, inst, "turn of execution 1")
	meta := startMetadata()
	meta.Status = provider.StatusContinuedAsNew
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(2, inst, provider.InitialExecutionID, provider.OrchestrationContinuedAsNew{Input: "{}"})},
		OrchestratorItems: []provider.WorkItem{provider.ContinueAsNewItem{
			Instance:           inst,
			Orchestration:      testOrchestration,
			Input:              "{}",
			Version:            ptr(testVersion),
			CarryForwardEvents: []provider.CarryForwardEvent{},
		}},
		Metadata: meta,
	})

	const exec2 = provider.InitialExecutionID + 1
	item = capabilityFilteringWantItem(ctx, t, p, nil, inst, "fetch of the continue-as-new message")
	meta = startMetadata()
	meta.PinnedDuroxideVersion = ptr(capabilityFilteringV(2, 0, 0))
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  exec2,
		HistoryDelta: []provider.Event{capabilityFilteringStarted(inst, exec2, "2.0.0")},
		Metadata:     meta,
	})
	capabilityFilteringPing(ctx, t, p, inst, "ping")

	v2 := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	item = capabilityFilteringWantItem(ctx, t, p, v2, inst, "fetch with the v2 filter after continue-as-new")
	if item.ExecutionID != exec2 {
		t.Fatalf("fetch after continue-as-new: ExecutionID = %d, want %d", item.ExecutionID, exec2)
	}
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")

	v1Only := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, v1Only, "fetch with the v1 filter: execution 2 is pinned to 2.0.0, not execution 1's 1.0.0")
}

// capabilityFilteringEmptySupportedVersionsReturnsNothing checks that a
// filter with no ranges admits nothing.
func capabilityFilteringEmptySupportedVersionsReturnsNothing(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-empty", capabilityFilteringV(1, 0, 0))
	capabilityFilteringWantNone(ctx, t, p, &provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{}}, "fetch with an empty range list")
	capabilityFilteringWantItem(ctx, t, p, nil, "inst-empty", "fetch without a filter after the empty-filter fetch")
}

// capabilityFilteringConcurrentFilteredFetchNoDoubleLock checks that
// filtered fetches never hand one instance to two callers.
func capabilityFilteringConcurrentFilteredFetchNoDoubleLock(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-conc"
	capabilityFilteringSeed(ctx, t, p, inst, capabilityFilteringV(1, 0, 0))
	filter := capabilityFilteringRange(capabilityFilteringV(0, 0, 0), capabilityFilteringV(1, 9, 9))

	const fetchers = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		items = make([]*provider.OrchestrationItem, fetchers)
		errs  = make([]error, fetchers)
	)
	for i := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			items[i], errs[i] = p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, filter)
		}()
	}
	close(start)
	wg.Wait()

	won := 0
	for i := range fetchers {
		must(t, errs[i], "concurrent filtered FetchOrchestrationItem")
		if items[i] == nil {
			continue
		}
		won++
		if items[i].Instance != inst {
			t.Fatalf("concurrent filtered fetch: got instance %q, want %q", items[i].Instance, inst)
		}
	}
	if won != 1 {
		t.Fatalf("concurrent filtered fetches: %d callers got the instance, want exactly 1", won)
	}
	capabilityFilteringWantNone(ctx, t, p, filter, "filtered fetch while the instance is locked")
}

// capabilityFilteringAckStoresPinnedVersionViaMetadataUpdate checks that a
// pinned version sent on a later ack is stored for an execution that had
// none.
func capabilityFilteringAckStoresPinnedVersionViaMetadataUpdate(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-backfill"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := capabilityFilteringWantItem(ctx, t, p, nil, inst, "first turn")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{capabilityFilteringStarted(inst, provider.InitialExecutionID, "1.2.3")},
		Metadata:     startMetadata(), // no pinned version
	})

	capabilityFilteringPing(ctx, t, p, inst, "ping")
	item = capabilityFilteringWantItem(ctx, t, p, nil, inst, "second turn")
	meta := startMetadata()
	meta.PinnedDuroxideVersion = ptr(capabilityFilteringV(1, 2, 3))
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID, Metadata: meta})

	capabilityFilteringPing(ctx, t, p, inst, "ping2")
	// Unpinned executions pass every filter; an excluding range shows the
	// back-filled version is stored.
	v2 := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, v2, "fetch with [2.0.0, 2.9.9] after back-filling 1.2.3")
	filter := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 9, 9))
	capabilityFilteringWantItem(ctx, t, p, filter, inst, "fetch with [1.0.0, 1.9.9] after back-filling 1.2.3")
}

// capabilityFilteringProviderUpdatesPinnedVersionWhenTold checks that the
// provider overwrites a stored pinned version whenever ack metadata carries
// one.
func capabilityFilteringProviderUpdatesPinnedVersionWhenTold(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-update"
	capabilityFilteringSeed(ctx, t, p, inst, capabilityFilteringV(1, 0, 0))

	v1 := capabilityFilteringRange(capabilityFilteringV(0, 0, 0), capabilityFilteringV(1, 9, 9))
	item := capabilityFilteringWantItem(ctx, t, p, v1, inst, "second turn")
	meta := startMetadata()
	meta.PinnedDuroxideVersion = ptr(capabilityFilteringV(2, 0, 0))
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID, Metadata: meta})
	capabilityFilteringPing(ctx, t, p, inst, "ping2")

	exactly2 := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 0, 0))
	item = capabilityFilteringWantItem(ctx, t, p, exactly2, inst, "fetch with [2.0.0, 2.0.0] after re-pinning to 2.0.0")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")

	exactly1 := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(1, 0, 0))
	capabilityFilteringWantNone(ctx, t, p, exactly1, "fetch with [1.0.0, 1.0.0] after re-pinning to 2.0.0")
}

// capabilityFilteringCorruptedHistoryFilteredVsUnfiltered checks that a
// filtered-out instance with corrupted history yields no item and no error,
// while an unfiltered fetch returns it with a history error.
func capabilityFilteringCorruptedHistoryFilteredVsUnfiltered(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-corrupt-39"
	capabilityFilteringSeedCorrupt(ctx, t, s, p, inst, capabilityFilteringV(1, 0, 0))

	excluding := capabilityFilteringRange(capabilityFilteringV(2, 0, 0), capabilityFilteringV(2, 9, 9))
	capabilityFilteringWantNone(ctx, t, p, excluding, "filtered fetch of an excluded corrupted instance")

	item, err := p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, nil)
	must(t, err, "unfiltered fetch of corrupted history (want an item with HistoryError, not an error)")
	capabilityFilteringWantHistoryError(t, item, inst, "unfiltered fetch of corrupted history")
	// An item with a history error still holds the instance lock.
	capabilityFilteringWantNone(ctx, t, p, nil, "unfiltered fetch while the corrupted instance is locked")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")
}

// capabilityFilteringDeserializationCycles fetches a corrupted instance
// cycles times, each time expecting a history error and attempt count i+1,
// and abandons it keeping the attempt (abandon releases the lock at once,
// so the next fetch needs no wait).
func capabilityFilteringDeserializationCycles(ctx context.Context, t *testing.T, s *suite, p provider.Provider, instance string, cycles int) {
	t.Helper()
	for i := range cycles {
		item, err := p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, nil)
		must(t, err, "fetch of corrupted history")
		why := fmt.Sprintf("fetch #%d of corrupted history", i+1)
		capabilityFilteringWantHistoryError(t, item, instance, why)
		if want := uint32(i + 1); item.AttemptCount != want {
			t.Fatalf("%s: AttemptCount = %d, want %d", why, item.AttemptCount, want)
		}
		must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "AbandonOrchestrationItem")
	}
}

// capabilityFilteringDeserializationErrorIncrementsAttemptCount checks that
// each fetch of an undecodable history counts an attempt.
func capabilityFilteringDeserializationErrorIncrementsAttemptCount(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-deser-41"
	capabilityFilteringSeedCorrupt(ctx, t, s, p, inst, capabilityFilteringV(1, 0, 0))
	capabilityFilteringDeserializationCycles(ctx, t, s, p, inst, 2)
	if got := s.maxAttemptCount(t, p, inst); got < 2 {
		t.Fatalf("max attempt count after two fetches of corrupted history = %d, want >= 2", got)
	}
}

// capabilityFilteringDeserializationErrorEventuallyReachesPoison checks that
// the attempt count of an undecodable history keeps climbing to the
// runtime's poison limit.
func capabilityFilteringDeserializationErrorEventuallyReachesPoison(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-poison-42"
	const maxAttempts = 5
	capabilityFilteringSeedCorrupt(ctx, t, s, p, inst, capabilityFilteringV(1, 0, 0))
	capabilityFilteringDeserializationCycles(ctx, t, s, p, inst, maxAttempts)
	if got := s.maxAttemptCount(t, p, inst); got < maxAttempts {
		t.Fatalf("max attempt count after %d fetches of corrupted history = %d, want >= %d", maxAttempts, got, maxAttempts)
	}
}

// capabilityFilteringFilterAppliedBeforeHistoryDeserialization checks that
// the filter excludes an instance before its (corrupted) history is read.
func capabilityFilteringFilterAppliedBeforeHistoryDeserialization(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-order-43"
	capabilityFilteringSeedCorrupt(ctx, t, s, p, inst, capabilityFilteringV(99, 0, 0))

	filter := capabilityFilteringRange(capabilityFilteringV(1, 0, 0), capabilityFilteringV(2, 0, 0))
	capabilityFilteringWantNone(ctx, t, p, filter, "filtered fetch of an instance pinned to 99.0.0 (filter must apply before decoding history)")

	item, err := p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, nil)
	must(t, err, "unfiltered fetch of corrupted history (want an item with HistoryError, not an error)")
	capabilityFilteringWantHistoryError(t, item, inst, "unfiltered fetch of corrupted history")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "AbandonOrchestrationItem")
}

// capabilityFilteringSingleRangeOnlyUsesFirstRange checks that only the
// first range of a filter is honoured.
func capabilityFilteringSingleRangeOnlyUsesFirstRange(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	capabilityFilteringSeed(ctx, t, p, "inst-range-a", capabilityFilteringV(1, 0, 0))
	capabilityFilteringSeed(ctx, t, p, "inst-range-b", capabilityFilteringV(3, 0, 0))
	filter := &provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{
		{Min: capabilityFilteringV(1, 0, 0), Max: capabilityFilteringV(1, 5, 0)},
		{Min: capabilityFilteringV(3, 0, 0), Max: capabilityFilteringV(3, 5, 0)},
	}}

	item := capabilityFilteringWantItem(ctx, t, p, filter, "inst-range-a", "fetch with two ranges (first range holds 1.0.0)")
	// Consume A's batch so that only B, in the second range, has work left.
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})

	capabilityFilteringWantNone(ctx, t, p, filter, "fetch with two ranges when only the 3.0.0 instance (second range) has work")
	capabilityFilteringWantItem(ctx, t, p, nil, "inst-range-b", "fetch of the 3.0.0 instance without a filter")
}

// capabilityFilteringAckAppendsEventToCorruptedHistory checks that an ack
// appending a poison failure onto corrupted history succeeds and records
// the failed status.
func capabilityFilteringAckAppendsEventToCorruptedHistory(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-ack-corrupt-45"
	capabilityFilteringSeedCorrupt(ctx, t, s, p, inst, capabilityFilteringV(1, 0, 0))

	item, err := p.FetchOrchestrationItem(ctx, capabilityFilteringLock, 0, nil)
	must(t, err, "fetch of corrupted history")
	capabilityFilteringWantHistoryError(t, item, inst, "fetch of corrupted history")

	msg := item.HistoryError.Error()
	details := provider.PoisonDetails{
		AttemptCount: 4,
		MaxAttempts:  3,
		MessageType: provider.PoisonFailedDeserialization{
			Instance:    inst,
			ExecutionID: item.ExecutionID,
			Error:       msg,
		},
		Message: msg,
	}
	const poisonEventID = 99999
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  item.ExecutionID,
		HistoryDelta: []provider.Event{event(poisonEventID, inst, item.ExecutionID, provider.OrchestrationFailed{Details: details})},
		Metadata: provider.ExecutionMetadata{
			Status:               provider.StatusFailed,
			Output:               ptr(details.DisplayMessage()),
			OrchestrationName:    item.OrchestrationName,
			OrchestrationVersion: item.Version,
		},
	})

	info, err := s.admin(t, p).InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo")
	if info.Status != provider.StatusFailed {
		t.Fatalf("InstanceInfo after the poison ack: Status = %q, want %q", info.Status, provider.StatusFailed)
	}
	if info.Output == nil {
		t.Fatal("InstanceInfo after the poison ack: Output = nil, want the poison message")
	}
	if !strings.Contains(*info.Output, "deserialization failed") {
		t.Fatalf("InstanceInfo after the poison ack: Output = %q, want text containing %q", *info.Output, "deserialization failed")
	}
}
