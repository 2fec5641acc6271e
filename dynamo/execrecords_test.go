package dynamo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// TestFetchOfEternalOrchestrationReadsNoExecutionRecords: an instance that
// continued as new 60 times has 61 execution records, which sort before
// its other control rows. A fetch reads none of them (the instance record
// holds what a turn needs of the current one), so an eternal
// orchestration's turns do not grow with its executions; the records are
// all still there for ListExecutions and ExecutionInfo, the current
// execution's pinned version still filters fetches, and a finished
// execution's output survives a later turn that rewrites its record.
func TestFetchOfEternalOrchestrationReadsNoExecutionRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _, scans := countingProvider(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst, executions = "eternal", 61
	pinned := provider.SemVer{Major: 1, Minor: 2, Patch: 3}
	first := func(exec uint64) provider.TurnCommit {
		start := ev(1, inst, provider.OrchestrationStarted{Name: testName, Version: testVersion, Input: "{}"})
		start.ExecutionID = exec
		m := meta()
		m.PinnedDuroxideVersion = &pinned
		return provider.TurnCommit{ExecutionID: exec, HistoryDelta: []provider.Event{start}, Metadata: m}
	}
	item := startAndFetch(ctx, t, p, inst)
	for exec := uint64(1); ; exec++ {
		commit := first(exec)
		if exec == executions {
			must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack of the last execution's start")
			break
		}
		commit.Metadata.Status = provider.StatusContinuedAsNew
		commit.Metadata.Output = ptr(fmt.Sprint("output of ", exec))
		commit.OrchestratorItems = []provider.WorkItem{provider.ContinueAsNewItem{Instance: inst, Orchestration: testName, Input: "{}", Version: ptr(testVersion)}}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), fmt.Sprint("ack continuing execution ", exec))
		next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil || next == nil || next.ExecutionID != exec {
			t.Fatalf("fetch of the continue-as-new of execution %d: %+v, %v", exec, next, err)
		}
		item = next
	}

	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "x"}, 0), "raise")
	scans.scanned.Store(0)
	other := &provider.CapabilityFilter{SupportedVersions: []provider.SemverRange{{Min: provider.SemVer{Major: 2}, Max: provider.SemVer{Major: 2, Minor: 9}}}}
	if got, err := p.FetchOrchestrationItem(ctx, longLock, 0, other); err != nil || got != nil {
		t.Fatalf("fetch with a filter the pinned version is outside of: %+v, %v; want nothing", got, err)
	}
	got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || got == nil || got.ExecutionID != executions {
		t.Fatalf("fetch of the event: %+v, %v; want a turn of execution %d", got, err, executions)
	}
	// Per fetch: control rows (instance record, lock, the message) and,
	// for the second, the history; no execution record.
	if n := scans.scanned.Load(); n > 12 {
		t.Errorf("two fetches of an instance with %d executions read %d rows of the table; want a handful", executions, n)
	}
	must(t, p.AckOrchestrationItem(ctx, got.LockToken, provider.TurnCommit{ExecutionID: executions, Metadata: meta()}), "ack of the event")

	admin, _ := provider.AdminOf(p)
	ids, err := admin.ListExecutions(ctx, inst)
	must(t, err, "ListExecutions")
	if len(ids) != executions || !slices.IsSorted(ids) || ids[0] != 1 {
		t.Fatalf("ListExecutions: %v; want 1..%d", ids, executions)
	}
	info, err := admin.ExecutionInfo(ctx, inst, 7)
	must(t, err, "ExecutionInfo(7)")
	if info.Status != provider.StatusContinuedAsNew || info.Output == nil || *info.Output != "output of 7" {
		t.Fatalf("ExecutionInfo(7): %+v", info)
	}

	// A turn that rewrites a finished execution's record without a new
	// status keeps its output (the fetch only had the instance record's
	// copy, which has none).
	end := first(executions)
	end.HistoryDelta = nil
	end.Metadata.PinnedDuroxideVersion = nil
	end.Metadata.Status, end.Metadata.Output = provider.StatusCompleted, ptr("final")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "y"}, 0), "raise")
	got = fetchWithin(t, p, 10*time.Second)
	must(t, p.AckOrchestrationItem(ctx, got.LockToken, end), "ack completing the last execution")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "z"}, 0), "raise after completion")
	got = fetchWithin(t, p, 10*time.Second)
	repin := provider.TurnCommit{ExecutionID: executions, Metadata: meta()}
	repin.Metadata.PinnedDuroxideVersion = &pinned
	must(t, p.AckOrchestrationItem(ctx, got.LockToken, repin), "ack rewriting the finished record")
	info, err = admin.ExecutionInfo(ctx, inst, executions)
	must(t, err, "ExecutionInfo(last)")
	if info.Status != provider.StatusCompleted || info.Output == nil || *info.Output != "final" {
		t.Fatalf("ExecutionInfo of the finished execution after a turn rewrote its record: %+v; want Completed with output \"final\"", info)
	}
}

// fetchWithin fetches an orchestration item, failing t when none comes
// within d.
func fetchWithin(t *testing.T, p provider.Provider, d time.Duration) *provider.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, d, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem: %+v, %v", item, err)
	}
	return item
}
