package providertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Tag filters route activities to the workers that can run them. These
// tests follow duroxide's tag_filtering module.

// tagFilteringLock is the activity lock the tag tests fetch with.
const tagFilteringLock = 30 * time.Second

// tagFilteringTests returns the TagFiltering category.
func tagFilteringTests() []testCase {
	return []testCase{
		{"DefaultOnlyFetchesUntagged", tagFilteringDefaultOnlyFetchesUntagged},
		{"TagsFetchesOnlyMatching", tagFilteringTagsFetchesOnlyMatching},
		{"DefaultAndFetchesUntaggedAndMatching", tagFilteringDefaultAndFetchesUntaggedAndMatching},
		{"NoneFilterReturnsNothing", tagFilteringNoneFilterReturnsNothing},
		{"MultiTagFilter", tagFilteringMultiTagFilter},
		{"TagRoundTripPreservation", tagFilteringTagRoundTripPreservation},
		{"AnyFilterFetchesEverything", tagFilteringAnyFilterFetchesEverything},
		{"TagSurvivesAbandonAndRefetch", tagFilteringTagSurvivesAbandonAndRefetch},
		{"MultiRuntimeTagIsolation", tagFilteringMultiRuntimeTagIsolation},
		{"TagPreservedThroughAckOrchestrationItem", tagFilteringTagPreservedThroughAckOrchestrationItem},
	}
}

// ---------------------------------------------------------------------------
// Helpers

// tagFilteringItem is activity id ("Activity<id>") of execution 1 of
// instance, tagged with tag ("" for untagged).
func tagFilteringItem(instance string, id uint64, tag string) provider.ActivityExecuteItem {
	item := activityItem(instance, 1, id)
	item.Name = "Activity" + strconv.FormatUint(id, 10)
	if tag != "" {
		item.Tag = ptr(tag)
	}
	return item
}

// tagFilteringOnly builds an OnlyTags filter and fails t if it is rejected.
func tagFilteringOnly(t *testing.T, tags ...string) provider.TagFilter {
	t.Helper()
	f, err := provider.OnlyTags(tags...)
	must(t, err, fmt.Sprintf("OnlyTags(%q)", tags))
	return f
}

// tagFilteringDefaultAnd builds a DefaultAndTags filter and fails t if it is
// rejected.
func tagFilteringDefaultAnd(t *testing.T, tags ...string) provider.TagFilter {
	t.Helper()
	f, err := provider.DefaultAndTags(tags...)
	must(t, err, fmt.Sprintf("DefaultAndTags(%q)", tags))
	return f
}

// tagFilteringFetch fetches a session-less work item through filter; nil
// when there is none.
func tagFilteringFetch(ctx context.Context, t *testing.T, p provider.Provider, filter provider.TagFilter) *provider.LockedWorkItem {
	t.Helper()
	return fetchWork(ctx, t, p, tagFilteringLock, nil, filter)
}

// tagFilteringAwait is tagFilteringFetch for an item that must be
// available: under a convergence bound it awaits one (see awaitWorkTimed).
func tagFilteringAwait(ctx context.Context, t *testing.T, p provider.Provider, filter provider.TagFilter) *provider.LockedWorkItem {
	t.Helper()
	return awaitWork(ctx, t, p, tagFilteringLock, nil, filter)
}

// tagFilteringTagOf formats an activity's tag for messages.
func tagFilteringTagOf(tag *string) string {
	if tag == nil {
		return "<untagged>"
	}
	return strconv.Quote(*tag)
}

// tagFilteringWant fails t unless got is activity id carrying tag ("" for
// untagged).
func tagFilteringWant(t *testing.T, got *provider.LockedWorkItem, id uint64, tag, what string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: want activity %d, got no item", what, id)
	}
	if got.Item.ID != id {
		t.Fatalf("%s: got activity %d (tag %s), want activity %d", what, got.Item.ID, tagFilteringTagOf(got.Item.Tag), id)
	}
	tagFilteringWantTag(t, got, tag, what)
}

// tagFilteringWantTag fails t unless got carries tag ("" for untagged).
func tagFilteringWantTag(t *testing.T, got *provider.LockedWorkItem, tag, what string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: want an item tagged %q, got no item", what, tag)
	}
	gotTag := got.Item.Tag
	if (tag == "") != (gotTag == nil) || (gotTag != nil && *gotTag != tag) {
		want := "<untagged>"
		if tag != "" {
			want = strconv.Quote(tag)
		}
		t.Fatalf("%s: activity %d has tag %s, want %s", what, got.Item.ID, tagFilteringTagOf(gotTag), want)
	}
}

// tagFilteringWantNone fails t if got is an item.
func tagFilteringWantNone(t *testing.T, got *provider.LockedWorkItem, what string) {
	t.Helper()
	if got != nil {
		t.Fatalf("%s: want no item, got activity %d (tag %s)", what, got.Item.ID, tagFilteringTagOf(got.Item.Tag))
	}
}

// ---------------------------------------------------------------------------
// Tests

// tagFilteringDefaultOnlyFetchesUntagged checks that the default filter returns only untagged activities, in order.
func tagFilteringDefaultOnlyFetchesUntagged(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 3, ""))

	filter := provider.DefaultOnlyTags()
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 1, "", "first DefaultOnly fetch")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 3, "", "second DefaultOnly fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, filter), "DefaultOnly with only a gpu item left")
}

// tagFilteringTagsFetchesOnlyMatching checks that a single-tag filter returns only activities with that tag, in order.
func tagFilteringTagsFetchesOnlyMatching(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 3, "cpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 4, "gpu"))

	filter := tagFilteringOnly(t, "gpu")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 2, "gpu", "first Tags[gpu] fetch")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 4, "gpu", "second Tags[gpu] fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, filter), "Tags[gpu] with no gpu item left")
}

// tagFilteringDefaultAndFetchesUntaggedAndMatching checks that a DefaultAnd filter returns untagged and matching activities but not others.
func tagFilteringDefaultAndFetchesUntaggedAndMatching(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 3, "cpu"))

	filter := tagFilteringDefaultAnd(t, "gpu")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 1, "", "first DefaultAnd[gpu] fetch")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, filter), 2, "gpu", "second DefaultAnd[gpu] fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, filter), "DefaultAnd[gpu] with only a cpu item left")
}

// tagFilteringNoneFilterReturnsNothing checks that the None filter returns nothing while tagged and untagged activities are queued.
func tagFilteringNoneFilterReturnsNothing(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, "gpu"))

	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, provider.NoTags()), "None filter")

	// The items are there for a filter that admits them.
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, provider.AnyTag()), 1, "", "Any filter after the None filter")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, provider.AnyTag()), 2, "gpu", "second Any filter after the None filter")
}

// tagFilteringMultiTagFilter checks that a multi-tag filter returns activities with any of its tags and no others.
func tagFilteringMultiTagFilter(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, "tpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 3, "cpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 4, ""))

	filter := tagFilteringOnly(t, "gpu", "tpu")
	tagFilteringWantTag(t, tagFilteringFetch(ctx, t, p, filter), "gpu", "first Tags[gpu,tpu] fetch")
	tagFilteringWantTag(t, tagFilteringFetch(ctx, t, p, filter), "tpu", "second Tags[gpu,tpu] fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, filter), "Tags[gpu,tpu] with only cpu and untagged items left")
}

// tagFilteringTagRoundTripPreservation checks that an activity's tag and name come back unchanged from the queue.
func tagFilteringTagRoundTripPreservation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, "gpu"))

	got := tagFilteringFetch(ctx, t, p, tagFilteringOnly(t, "gpu"))
	tagFilteringWant(t, got, 1, "gpu", "Tags[gpu] fetch")
	wantEqual(t, got.Item.Name, "Activity1", "activity name")
}

// tagFilteringAnyFilterFetchesEverything checks that the Any filter returns untagged and tagged activities alike.
func tagFilteringAnyFilterFetchesEverything(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-2", 2, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-3", 3, "cpu"))

	filter := provider.AnyTag()
	var ids []uint64
	for i := range 3 {
		got := tagFilteringFetch(ctx, t, p, filter)
		if got == nil {
			t.Fatalf("Any fetch %d: want an item, got none (fetched %v so far)", i+1, ids)
		}
		ids = append(ids, got.Item.ID)
	}
	slices.Sort(ids)
	wantEqual(t, ids, []uint64{1, 2, 3}, "activities fetched with Any")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, filter), "Any with every item locked")
}

// tagFilteringTagSurvivesAbandonAndRefetch checks that an abandoned tagged activity comes back with its tag, a new token and a higher attempt count, and stays hidden from DefaultOnly.
func tagFilteringTagSurvivesAbandonAndRefetch(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 2, ""))

	filter := tagFilteringOnly(t, "gpu")
	first := tagFilteringFetch(ctx, t, p, filter)
	tagFilteringWant(t, first, 1, "gpu", "Tags[gpu] fetch")

	must(t, p.AbandonWorkItem(ctx, first.LockToken, 0, false), "AbandonWorkItem")

	again := tagFilteringAwait(ctx, t, p, filter)
	tagFilteringWant(t, again, 1, "gpu", "Tags[gpu] fetch after abandon")
	if again.AttemptCount < 2 {
		t.Fatalf("attempt count after abandon: got %d, want at least 2", again.AttemptCount)
	}
	if again.LockToken == first.LockToken {
		t.Fatalf("refetch after abandon reused lock token %q", first.LockToken)
	}

	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, provider.DefaultOnlyTags()), 2, "", "DefaultOnly fetch")
}

// tagFilteringMultiRuntimeTagIsolation checks that consumers with disjoint, overlapping and Any filters each receive only activities their filter accepts, in turn and when running concurrently.
func tagFilteringMultiRuntimeTagIsolation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-1", 1, ""))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-2", 2, "gpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-3", 3, "cpu"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-4", 4, "fpga"))
	enqueueWorker(ctx, t, p, tagFilteringItem("inst-5", 5, "gpu"))

	// Disjoint: DefaultOnly sees only the untagged activity.
	defaultOnly := provider.DefaultOnlyTags()
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, defaultOnly), 1, "", "DefaultOnly fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, defaultOnly), "DefaultOnly with no untagged item left")

	// Overlapping: gpu+cpu takes gpu(2) and cpu(3); cpu+fpga then finds
	// its cpu item locked and gets only fpga(4).
	gpuCPU := tagFilteringOnly(t, "gpu", "cpu")
	var ids []uint64
	for i := range 2 {
		got := tagFilteringAwait(ctx, t, p, gpuCPU)
		if got == nil {
			t.Fatalf("Tags[gpu,cpu] fetch %d: want an item, got none", i+1)
		}
		ids = append(ids, got.Item.ID)
	}
	slices.Sort(ids)
	wantEqual(t, ids, []uint64{2, 3}, "activities fetched with Tags[gpu,cpu]")

	cpuFPGA := tagFilteringOnly(t, "cpu", "fpga")
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, cpuFPGA), 4, "fpga", "Tags[cpu,fpga] fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, cpuFPGA), "Tags[cpu,fpga] with cpu locked and fpga taken")

	// Superset: Any gets the one activity nobody holds.
	anyTag := provider.AnyTag()
	tagFilteringWant(t, tagFilteringAwait(ctx, t, p, anyTag), 5, "gpu", "Any fetch")
	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, anyTag), "Any with every item locked")

	// The same filters again, now consuming concurrently. Activities 1-5
	// stay locked by the fetches above, so no consumer may see them.
	tagFilteringConcurrentConsumers(ctx, t, p)
}

// tagFilteringConcurrentConsumers enqueues activities 101-125 and runs
// consumers with disjoint, overlapping, DefaultAnd and Any filters against
// the queue at the same time. Each fetches and acks until it finds nothing.
// Every consumer must receive only activities its filter accepts, and no
// activity may be delivered twice or lost.
func tagFilteringConcurrentConsumers(ctx context.Context, t *testing.T, p provider.Provider) {
	t.Helper()
	tags := []string{"", "gpu", "cpu", "fpga", "tpu"}
	const first, n = 101, 25
	tagOf := make(map[uint64]string, n)
	for id := uint64(first); id < first+n; id++ {
		tag := tags[int(id)%len(tags)]
		tagOf[id] = tag
		enqueueWorker(ctx, t, p, tagFilteringItem(fmt.Sprintf("inst-%d", id), id, tag))
	}

	consumers := []tagFilteringConsumer{
		{"DefaultOnly", provider.DefaultOnlyTags()},
		{"Tags[gpu]", tagFilteringOnly(t, "gpu")},
		{"Tags[gpu,cpu]", tagFilteringOnly(t, "gpu", "cpu")},
		{"Tags[cpu,fpga]", tagFilteringOnly(t, "cpu", "fpga")},
		{"DefaultAnd[tpu]", tagFilteringDefaultAnd(t, "tpu")},
		{"Any", provider.AnyTag()},
	}
	got, errs := tagFilteringRunConsumers(ctx, p, consumers)
	seen := tagFilteringCheckDeliveries(t, consumers, got, errs, tagOf)
	tagFilteringDrainRest(ctx, t, p, seen, tagOf)
	if len(seen) != n {
		var missing []uint64
		for id := uint64(first); id < first+n; id++ {
			if _, ok := seen[id]; !ok {
				missing = append(missing, id)
			}
		}
		t.Fatalf("%d of %d activities were delivered; lost: %v", len(seen), n, missing)
	}
}

// tagFilteringConsumer is one of the concurrent consumers: a name for
// failure messages and the filter it fetches with.
type tagFilteringConsumer struct {
	name   string
	filter provider.TagFilter
}

// tagFilteringRunConsumers runs every consumer at once, released together,
// and returns what each received and the error that stopped it (got[i] and
// errs[i] belong to consumers[i]). It is the concurrent step of
// [tagFilteringConcurrentConsumers]; the checks run once all have stopped.
func tagFilteringRunConsumers(ctx context.Context, p provider.Provider, consumers []tagFilteringConsumer) ([][]provider.ActivityExecuteItem, []error) {
	got := make([][]provider.ActivityExecuteItem, len(consumers))
	errs := make([]error, len(consumers))
	start := make(chan struct{})
	// A consumer stops at an empty fetch; under a convergence bound, only
	// at one begun after the bound passed (the items were all enqueued
	// before), so that items a lagging discovery hides are awaited.
	bound := convergenceOf(ctx).bound
	deadline := time.Now().Add(bound)
	var wg sync.WaitGroup
	for i, c := range consumers {
		wg.Go(func() {
			<-start
			got[i], errs[i] = tagFilteringConsume(ctx, p, c.filter, bound, deadline)
		})
	}
	close(start)
	wg.Wait()
	return got, errs
}

// tagFilteringConsume is one consumer's loop: fetch with filter and ack
// until a fetch finds nothing (under a convergence bound, one begun after
// deadline). It returns the items received, and with an error the items
// received before it.
func tagFilteringConsume(ctx context.Context, p provider.Provider, filter provider.TagFilter, bound time.Duration, deadline time.Time) ([]provider.ActivityExecuteItem, error) {
	var got []provider.ActivityExecuteItem
	for {
		began := time.Now()
		item, err := p.FetchWorkItem(ctx, tagFilteringLock, 0, nil, filter)
		if err != nil {
			return got, fmt.Errorf("FetchWorkItem: %w", err)
		}
		if item == nil {
			if bound == 0 || began.After(deadline) {
				return got, nil
			}
			select {
			case <-time.After(convergencePoll):
			case <-ctx.Done():
				return got, nil
			}
			continue
		}
		got = append(got, item.Item)
		if err := p.AckWorkItem(ctx, item.LockToken, nil); err != nil {
			return got, fmt.Errorf("AckWorkItem of activity %d: %w", item.Item.ID, err)
		}
	}
}

// tagFilteringCheckDeliveries checks what each consumer received: only
// known activities its filter accepts, with the tag they were enqueued with,
// none delivered twice. It returns which consumer received each activity.
func tagFilteringCheckDeliveries(t *testing.T, consumers []tagFilteringConsumer, got [][]provider.ActivityExecuteItem, errs []error, tagOf map[uint64]string) map[uint64]string {
	t.Helper()
	seen := make(map[uint64]string, len(tagOf))
	for i, c := range consumers {
		must(t, errs[i], "concurrent consumer "+c.name)
		for _, item := range got[i] {
			if !c.filter.Matches(item.Tag) {
				t.Fatalf("concurrent consumer %s received activity %d tagged %s", c.name, item.ID, tagFilteringTagOf(item.Tag))
			}
			want, known := tagOf[item.ID]
			if !known {
				t.Fatalf("concurrent consumer %s received unknown activity %d", c.name, item.ID)
			}
			if (want == "") != (item.Tag == nil) || (item.Tag != nil && *item.Tag != want) {
				t.Fatalf("concurrent consumer %s: activity %d has tag %s, was enqueued with %q", c.name, item.ID, tagFilteringTagOf(item.Tag), want)
			}
			if other, dup := seen[item.ID]; dup {
				t.Fatalf("activity %d delivered to both %s and %s", item.ID, other, c.name)
			}
			seen[item.ID] = c.name
		}
	}
	return seen
}

// tagFilteringDrainRest collects, with Any, what the consumers left queued
// and adds it to seen, so that every activity can be accounted for exactly
// once. Every consumer acked what it fetched, so whatever is left is
// unlocked; an acked or unknown activity here is a failure.
func tagFilteringDrainRest(ctx context.Context, t *testing.T, p provider.Provider, seen, tagOf map[uint64]string) {
	t.Helper()
	for {
		item := tagFilteringFetch(ctx, t, p, provider.AnyTag())
		if item == nil {
			break
		}
		if other, dup := seen[item.Item.ID]; dup {
			t.Fatalf("activity %d acked by %s is still queued", item.Item.ID, other)
		}
		if _, known := tagOf[item.Item.ID]; !known {
			t.Fatalf("Any fetch after the concurrent consumers returned activity %d, which is locked or unknown", item.Item.ID)
		}
		seen[item.Item.ID] = "the final Any drain"
	}
}

// tagFilteringTagPreservedThroughAckOrchestrationItem checks that tags of worker items written by an orchestration ack are honoured by fetch.
func tagFilteringTagPreservedThroughAckOrchestrationItem(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "tag-ack-inst"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)

	gpuWork := provider.ActivityExecuteItem{
		Instance: inst, ExecutionID: 1, ID: 10, Name: "GpuWork", Input: `"model-v3"`, Tag: ptr("gpu"),
	}
	cpuWork := provider.ActivityExecuteItem{
		Instance: inst, ExecutionID: 1, ID: 11, Name: "CpuWork", Input: `"data"`,
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{startedEvent(inst, 1)},
		WorkerItems:  []provider.ActivityExecuteItem{gpuWork, cpuWork},
	})

	got := tagFilteringFetch(ctx, t, p, provider.DefaultOnlyTags())
	tagFilteringWant(t, got, 11, "", "DefaultOnly fetch after the ack")
	wantEqual(t, got.Item.Name, "CpuWork", "activity name from DefaultOnly")
	must(t, p.AckWorkItem(ctx, got.LockToken, nil), "AckWorkItem")

	tagFilteringWantNone(t, tagFilteringFetch(ctx, t, p, provider.DefaultOnlyTags()), "DefaultOnly with only the gpu item left")

	got = tagFilteringFetch(ctx, t, p, tagFilteringOnly(t, "gpu"))
	tagFilteringWant(t, got, 10, "gpu", "Tags[gpu] fetch after the ack")
	wantEqual(t, got.Item.Name, "GpuWork", "activity name from Tags[gpu]")
}
