package providertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// pruneTests returns the Prune category.
func pruneTests() []testCase {
	return []testCase{
		{"PruneOptionsCombinations", pruneOptionsCombinations},
		{"PruneSafety", pruneSafety},
		{"PruneBulk", pruneBulk},
		{"PruneBulkIncludesRunningInstances", pruneBulkIncludesRunningInstances},
	}
}

// pruneClockGap separates completion times from a cutoff taken between
// them; sleepPast adds its own margin on top.
const pruneClockGap = 10 * time.Millisecond

// pruneAdvance runs the first turn of execution executionID of instance: a
// start message for execution 1, a continue-as-new after that. The ack
// writes OrchestrationStarted with start metadata and sets status ("" leaves
// the execution Running).
func pruneAdvance(ctx context.Context, t *testing.T, p provider.Provider, instance string, executionID uint64, status string) {
	t.Helper()
	var msg provider.WorkItem = startItem(instance)
	if executionID > provider.InitialExecutionID {
		msg = provider.ContinueAsNewItem{Instance: instance, Orchestration: testOrchestration, Input: "{}", Version: ptr(testVersion)}
	}
	enqueueOrch(ctx, t, p, msg, 0)
	item := managementFetch(ctx, t, p, instance)
	meta := startMetadata()
	meta.Status = status
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  executionID,
		HistoryDelta: []provider.Event{startedEvent(instance, executionID)},
		Metadata:     meta,
	})
}

// pruneChain gives instance n executions, one event each, as a
// continue-as-new chain: every execution but the last is ContinuedAsNew and
// the last has status last.
func pruneChain(ctx context.Context, t *testing.T, p provider.Provider, instance string, n uint64, last string) {
	t.Helper()
	for id := uint64(1); id <= n; id++ {
		status := provider.StatusContinuedAsNew
		if id == n {
			status = last
		}
		pruneAdvance(ctx, t, p, instance, id, status)
	}
}

// pruneExecutions lists instance's execution ids.
func pruneExecutions(ctx context.Context, t *testing.T, admin provider.Admin, instance string) []uint64 {
	t.Helper()
	ids, err := admin.ListExecutions(ctx, instance)
	must(t, err, "ListExecutions("+instance+")")
	return ids
}

// pruneOne prunes instance with options and fails t on error.
func pruneOne(ctx context.Context, t *testing.T, admin provider.Admin, instance string, options provider.PruneOptions) provider.PruneResult {
	t.Helper()
	r, err := admin.PruneExecutions(ctx, instance, options)
	must(t, err, fmt.Sprintf("PruneExecutions(%s, %+v)", instance, options))
	return r
}

// pruneCutoff returns a millisecond cutoff that every completion recorded
// before the call precedes and every completion recorded after it follows.
func pruneCutoff(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	sleepPast(ctx, t, pruneClockGap)
	cut := time.UnixMilli(time.Now().UnixMilli())
	sleepPast(ctx, t, pruneClockGap)
	return cut
}

// pruneOptionsCombinations checks KeepLast alone, CompletedBefore alone,
// both together (ANDed), and empty options (everything but the current
// execution).
func pruneOptionsCombinations(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	// KeepLast alone keeps the highest ids.
	const keep = "prune-options-test"
	pruneChain(ctx, t, p, keep, 4, provider.StatusCompleted)
	wantEqual(t, pruneExecutions(ctx, t, admin, keep), []uint64{1, 2, 3, 4}, "executions before pruning")
	r := pruneOne(ctx, t, admin, keep, provider.PruneOptions{KeepLast: 2})
	wantEqual(t, r, provider.PruneResult{InstancesProcessed: 1, ExecutionsDeleted: 2, EventsDeleted: 2}, "PruneResult of KeepLast=2 over 4 executions")
	wantEqual(t, pruneExecutions(ctx, t, admin, keep), []uint64{3, 4}, "executions after KeepLast=2")

	// Empty options leave only the current execution.
	const empty = "prune-options-empty"
	pruneChain(ctx, t, p, empty, 3, provider.StatusCompleted)
	info, err := admin.InstanceInfo(ctx, empty)
	must(t, err, "InstanceInfo("+empty+")")
	r = pruneOne(ctx, t, admin, empty, provider.PruneOptions{})
	wantEqual(t, pruneExecutions(ctx, t, admin, empty), []uint64{info.CurrentExecutionID}, "executions after pruning with empty options")
	wantEqual(t, r, provider.PruneResult{InstancesProcessed: 1, ExecutionsDeleted: 2, EventsDeleted: 2}, "PruneResult of empty options over 3 executions")

	// Three instances built in lockstep share completion times: execution 1
	// completes before cut1, executions 2 and 3 between cut1 and cut2, and
	// execution 4 (current) after cut2.
	const (
		before     = "prune-completed-before"
		andByTime  = "prune-and-time-limits"
		andByCount = "prune-and-count-limits"
	)
	insts := []string{before, andByTime, andByCount}
	for _, inst := range insts {
		pruneAdvance(ctx, t, p, inst, 1, provider.StatusContinuedAsNew)
	}
	cut1 := pruneCutoff(ctx, t)
	for _, inst := range insts {
		pruneAdvance(ctx, t, p, inst, 2, provider.StatusContinuedAsNew)
		pruneAdvance(ctx, t, p, inst, 3, provider.StatusContinuedAsNew)
	}
	cut2 := pruneCutoff(ctx, t)
	for _, inst := range insts {
		pruneAdvance(ctx, t, p, inst, 4, provider.StatusCompleted)
	}

	// CompletedBefore alone prunes what completed strictly before it.
	r = pruneOne(ctx, t, admin, before, provider.PruneOptions{CompletedBefore: cut1})
	wantEqual(t, r, provider.PruneResult{InstancesProcessed: 1, ExecutionsDeleted: 1, EventsDeleted: 1}, "PruneResult of CompletedBefore=cut1")
	wantEqual(t, pruneExecutions(ctx, t, admin, before), []uint64{2, 3, 4}, "executions after CompletedBefore=cut1")

	// KeepLast=2 alone would prune 1 and 2; the cutoff spares 2.
	r = pruneOne(ctx, t, admin, andByTime, provider.PruneOptions{KeepLast: 2, CompletedBefore: cut1})
	wantEqual(t, r.ExecutionsDeleted, uint64(1), "ExecutionsDeleted of KeepLast=2 AND CompletedBefore=cut1")
	wantEqual(t, pruneExecutions(ctx, t, admin, andByTime), []uint64{2, 3, 4}, "executions after KeepLast=2 AND CompletedBefore=cut1")

	// CompletedBefore=cut2 alone would prune 1, 2 and 3; KeepLast=2 spares 3.
	r = pruneOne(ctx, t, admin, andByCount, provider.PruneOptions{KeepLast: 2, CompletedBefore: cut2})
	wantEqual(t, r.ExecutionsDeleted, uint64(2), "ExecutionsDeleted of KeepLast=2 AND CompletedBefore=cut2")
	wantEqual(t, pruneExecutions(ctx, t, admin, andByCount), []uint64{3, 4}, "executions after KeepLast=2 AND CompletedBefore=cut2")
}

// pruneSafety checks that pruning never removes the current or a running
// execution, treats KeepLast 0 and 1 like unset, and fails for an unknown
// instance.
func pruneSafety(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	// KeepLast=0 still keeps the current execution.
	const current = "prune-safety-current"
	pruneChain(ctx, t, p, current, 3, provider.StatusCompleted)
	pruneOne(ctx, t, admin, current, provider.PruneOptions{KeepLast: 0})
	info, err := admin.InstanceInfo(ctx, current)
	must(t, err, "InstanceInfo("+current+")")
	wantEqual(t, info.CurrentExecutionID, uint64(3), "CurrentExecutionID after KeepLast=0")
	wantEqual(t, pruneExecutions(ctx, t, admin, current), []uint64{3}, "executions after KeepLast=0")

	_, err = admin.PruneExecutions(ctx, "does-not-exist-prune", provider.PruneOptions{KeepLast: 1})
	wantPermanent(t, err, provider.ErrNotFound, "PruneExecutions of an unknown instance")
	wantMessage(t, err, "PruneExecutions of an unknown instance", "not found")

	// On a completed instance, unset KeepLast (also 0) and KeepLast=1 all
	// prune every historical execution and keep the current one.
	for _, tc := range []struct {
		label   string
		options provider.PruneOptions
	}{
		{"unset", provider.PruneOptions{}},
		{"one", provider.PruneOptions{KeepLast: 1}},
	} {
		inst := "prune-terminal-" + tc.label
		pruneChain(ctx, t, p, inst, 4, provider.StatusCompleted)
		info, err := admin.InstanceInfo(ctx, inst)
		must(t, err, "InstanceInfo("+inst+")")
		wantEqual(t, info.Status, provider.StatusCompleted, inst+": status before pruning")
		r := pruneOne(ctx, t, admin, inst, tc.options)
		wantEqual(t, pruneExecutions(ctx, t, admin, inst), []uint64{info.CurrentExecutionID}, inst+": executions after pruning")
		wantEqual(t, r.ExecutionsDeleted, uint64(3), inst+": ExecutionsDeleted")
	}

	// A running execution is kept even when it is not the current one.
	const running = "prune-safety-running"
	pruneAdvance(ctx, t, p, running, 1, "")
	pruneAdvance(ctx, t, p, running, 2, provider.StatusCompleted)
	r := pruneOne(ctx, t, admin, running, provider.PruneOptions{})
	wantEqual(t, r, provider.PruneResult{InstancesProcessed: 1}, "PruneResult when the only older execution is running")
	wantEqual(t, pruneExecutions(ctx, t, admin, running), []uint64{1, 2}, "executions after pruning around a running execution")
}

// pruneBulk checks that PruneExecutionsBulk prunes the instances its filter
// selects (by ids and by limit) and leaves the others untouched.
func pruneBulk(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	insts := []string{"prune-bulk-0", "prune-bulk-1", "prune-bulk-2"}
	for _, inst := range insts {
		pruneChain(ctx, t, p, inst, 4, provider.StatusCompleted)
	}
	keepOne := provider.PruneOptions{KeepLast: 1}

	// The bulk prune selects through the listing (see awaitListed); pruning
	// leaves every instance and its status in place, so it stays current.
	awaitListed(ctx, t, admin, insts...)
	r, err := admin.PruneExecutionsBulk(ctx, provider.InstanceFilter{InstanceIDs: insts[:2]}, keepOne)
	must(t, err, "PruneExecutionsBulk(ids 0 and 1)")
	wantEqual(t, r, provider.PruneResult{InstancesProcessed: 2, ExecutionsDeleted: 6, EventsDeleted: 6}, "PruneResult of ids 0 and 1")
	wantEqual(t, pruneExecutions(ctx, t, admin, insts[0]), []uint64{4}, insts[0]+": executions")
	wantEqual(t, pruneExecutions(ctx, t, admin, insts[1]), []uint64{4}, insts[1]+": executions")
	wantEqual(t, pruneExecutions(ctx, t, admin, insts[2]), []uint64{1, 2, 3, 4}, insts[2]+" (outside the filter): executions")

	// An empty, non-nil allowlist selects nothing.
	r, err = admin.PruneExecutionsBulk(ctx, provider.InstanceFilter{InstanceIDs: []string{}}, keepOne)
	must(t, err, "PruneExecutionsBulk(empty allowlist)")
	wantEqual(t, r, provider.PruneResult{}, "PruneResult of an empty allowlist")
	wantEqual(t, pruneExecutions(ctx, t, admin, insts[2]), []uint64{1, 2, 3, 4}, insts[2]+" after an empty allowlist: executions")

	// Limit caps the instances processed; which one is unspecified.
	r1, err := admin.PruneExecutionsBulk(ctx, provider.InstanceFilter{Limit: 1}, keepOne)
	must(t, err, "PruneExecutionsBulk(limit 1)")
	wantEqual(t, r1.InstancesProcessed, uint64(1), "InstancesProcessed with Limit=1")
	if r1.ExecutionsDeleted != 0 && r1.ExecutionsDeleted != 3 {
		t.Fatalf("PruneExecutionsBulk(limit 1): ExecutionsDeleted = %d, want 0 or 3", r1.ExecutionsDeleted)
	}

	r2, err := admin.PruneExecutionsBulk(ctx, provider.InstanceFilter{}, keepOne)
	must(t, err, "PruneExecutionsBulk(no filter)")
	wantEqual(t, r2.InstancesProcessed, uint64(3), "InstancesProcessed without a filter")
	wantEqual(t, r1.ExecutionsDeleted+r2.ExecutionsDeleted, uint64(3), "executions deleted by the limited and the unfiltered prune together")
	for _, inst := range insts {
		wantEqual(t, pruneExecutions(ctx, t, admin, inst), []uint64{4}, inst+": executions after pruning everything")
	}
}

// pruneBulkIncludesRunningInstances checks that PruneExecutionsBulk prunes
// the old executions of an instance whose current execution runs.
func pruneBulkIncludesRunningInstances(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	const inst = "prune-running-inst"
	pruneChain(ctx, t, p, inst, 3, provider.StatusRunning)
	wantEqual(t, pruneExecutions(ctx, t, admin, inst), []uint64{1, 2, 3}, "executions before pruning")
	info, err := admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo before pruning")
	wantEqual(t, info.Status, provider.StatusRunning, "status before pruning")
	wantEqual(t, info.CurrentExecutionID, uint64(3), "current execution before pruning")

	awaitListed(ctx, t, admin, inst)
	r, err := admin.PruneExecutionsBulk(ctx, provider.InstanceFilter{InstanceIDs: []string{inst}}, provider.PruneOptions{KeepLast: 1})
	must(t, err, "PruneExecutionsBulk")
	wantEqual(t, r.InstancesProcessed, uint64(1), "InstancesProcessed (the running instance)")
	wantEqual(t, r.ExecutionsDeleted, uint64(2), "ExecutionsDeleted")
	wantEqual(t, pruneExecutions(ctx, t, admin, inst), []uint64{3}, "executions after pruning")

	info, err = admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo after pruning")
	wantEqual(t, info.Status, provider.StatusRunning, "status after pruning")
}
