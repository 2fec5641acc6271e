package providertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// managementTests returns the Management category.
func managementTests() []testCase {
	return []testCase{
		{"ListInstances", managementListInstances},
		{"ListInstancesByStatus", managementListInstancesByStatus},
		{"ListExecutions", managementListExecutions},
		{"GetInstanceInfo", managementGetInstanceInfo},
		{"GetExecutionInfo", managementGetExecutionInfo},
		{"GetSystemMetrics", managementGetSystemMetrics},
		{"GetQueueDepths", managementGetQueueDepths},
		{"GetInstanceStatsNonexistent", managementGetInstanceStatsNonexistent},
		{"GetInstanceStatsHistory", managementGetInstanceStatsHistory},
		{"GetInstanceStatsKV", managementGetInstanceStatsKV},
		{"GetInstanceStatsCarryForward", managementGetInstanceStatsCarryForward},
		{"GetInstanceStatsKVDeltaOnly", managementGetInstanceStatsKVDeltaOnly},
		{"GetInstanceStatsKVMerged", managementGetInstanceStatsKVMerged},
	}
}

// managementFetch fetches the next orchestration item and fails t unless it
// belongs to instance. The categories of this file family enqueue one
// instance's messages at a time, so the next item is always that instance's.
func managementFetch(ctx context.Context, t *testing.T, p provider.Provider, instance string) *provider.OrchestrationItem {
	t.Helper()
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("FetchOrchestrationItem: got instance %q, want %q", item.Instance, instance)
	}
	return item
}

// managementSorted returns a sorted copy of ids, for order-free comparison.
func managementSorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// managementListByStatus lists the instances whose current execution has
// status, sorted.
func managementListByStatus(ctx context.Context, t *testing.T, admin provider.Admin, status string) []string {
	t.Helper()
	ids, err := admin.ListInstancesByStatus(ctx, status)
	must(t, err, "ListInstancesByStatus("+status+")")
	return managementSorted(ids)
}

// managementStats reads instance's stats and fails t when there are none.
func managementStats(ctx context.Context, t *testing.T, p provider.Provider, instance string) provider.SystemStats {
	t.Helper()
	stats, err := p.InstanceStats(ctx, instance)
	must(t, err, "InstanceStats("+instance+")")
	if stats == nil {
		t.Fatalf("InstanceStats(%s): got nil, want stats of an existing instance", instance)
	}
	return *stats
}

// managementWantKVStats fails t unless stats report keys live KV keys holding
// bytes value bytes in total.
func managementWantKVStats(t *testing.T, stats provider.SystemStats, keys, bytes uint64, phase string) {
	t.Helper()
	if stats.KVUserKeyCount != keys {
		t.Fatalf("%s: KVUserKeyCount = %d, want %d", phase, stats.KVUserKeyCount, keys)
	}
	if stats.KVTotalValueBytes != bytes {
		t.Fatalf("%s: KVTotalValueBytes = %d, want %d", phase, stats.KVTotalValueBytes, bytes)
	}
}

// managementPoke enqueues an external event for instance and fetches the
// turn it causes.
func managementPoke(ctx context.Context, t *testing.T, p provider.Provider, instance, name string) *provider.OrchestrationItem {
	t.Helper()
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: name, Data: "{}"}, 0)
	return managementFetch(ctx, t, p, instance)
}

// managementListInstances checks that ListInstances returns every created
// instance.
func managementListInstances(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	want := []string{"mgmt-inst-0", "mgmt-inst-1", "mgmt-inst-2"}
	for _, id := range want {
		createInstance(ctx, t, p, id)
	}
	awaitEqual(ctx, t, "ListInstances of a store holding three instances", want, func() []string {
		got, err := admin.ListInstances(ctx)
		must(t, err, "ListInstances")
		return managementSorted(got)
	})
}

// managementListInstancesByStatus checks that ListInstancesByStatus selects
// instances by the status of their current execution.
func managementListInstancesByStatus(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	completeInstance(ctx, t, p, "mgmt-completed", "", provider.StatusCompleted)
	completeInstance(ctx, t, p, "mgmt-failed", "", provider.StatusFailed)
	createInstance(ctx, t, p, "mgmt-running")
	// Execution 1 continued as new; the current execution 2 runs.
	pruneAdvance(ctx, t, p, "mgmt-can-running", 1, provider.StatusContinuedAsNew)
	pruneAdvance(ctx, t, p, "mgmt-can-running", 2, "")

	for _, c := range []struct {
		status, what string
		want         []string
	}{
		{provider.StatusCompleted, "Completed instances", []string{"mgmt-completed"}},
		{provider.StatusFailed, "Failed instances", []string{"mgmt-failed"}},
		{provider.StatusRunning, "Running instances", []string{"mgmt-can-running", "mgmt-running"}},
		// Awaited too: a lagging listing may still show mgmt-can-running's
		// first execution as current.
		{provider.StatusContinuedAsNew, "ContinuedAsNew instances (only a past execution has that status)", []string{}},
	} {
		awaitEqual(ctx, t, c.what, c.want, func() []string { return managementListByStatus(ctx, t, admin, c.status) })
	}
}

// managementListExecutions checks that ListExecutions returns an instance's
// execution ids in ascending order, and none for an unknown instance.
func managementListExecutions(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	// A first turn acked without metadata still records execution 1.
	const inst = "mgmt-multi-exec"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
	})
	got, err := admin.ListExecutions(ctx, inst)
	must(t, err, "ListExecutions("+inst+")")
	wantEqual(t, got, []uint64{1}, "ListExecutions after the first turn")

	pruneChain(ctx, t, p, "mgmt-three-execs", 3, provider.StatusCompleted)
	got, err = admin.ListExecutions(ctx, "mgmt-three-execs")
	must(t, err, "ListExecutions(mgmt-three-execs)")
	wantEqual(t, got, []uint64{1, 2, 3}, "ListExecutions of a three-execution chain")

	got, err = admin.ListExecutions(ctx, "mgmt-no-such-instance")
	must(t, err, "ListExecutions of an unknown instance")
	if len(got) != 0 {
		t.Fatalf("ListExecutions of an unknown instance: got %v, want none", got)
	}
}

// managementGetInstanceInfo checks that InstanceInfo reports the name and
// version from ack metadata and the current execution, and that an unknown
// instance is not found.
func managementGetInstanceInfo(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	const inst = "mgmt-info"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(provider.InitialEventID, inst, provider.InitialExecutionID, provider.OrchestrationStarted{
			Name: "InfoOrch", Version: "2.0.0", Input: "test",
		})},
		Metadata: provider.ExecutionMetadata{OrchestrationName: "InfoOrch", OrchestrationVersion: "2.0.0"},
	})

	info, err := admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo("+inst+")")
	wantEqual(t, info.InstanceID, inst, "InstanceInfo.InstanceID")
	wantEqual(t, info.OrchestrationName, "InfoOrch", "InstanceInfo.OrchestrationName (from ack metadata)")
	wantEqual(t, info.OrchestrationVersion, "2.0.0", "InstanceInfo.OrchestrationVersion (from ack metadata)")
	wantEqual(t, info.CurrentExecutionID, uint64(1), "InstanceInfo.CurrentExecutionID")
	wantEqual(t, info.Status, provider.StatusRunning, "InstanceInfo.Status of an instance acked without a status")
	wantEqual(t, info.ParentInstanceID, "", "InstanceInfo.ParentInstanceID of a root instance")

	_, err = admin.InstanceInfo(ctx, "mgmt-no-such-instance")
	wantPermanent(t, err, provider.ErrNotFound, "InstanceInfo of an unknown instance")
	wantMessage(t, err, "InstanceInfo of an unknown instance", "not found")
}

// managementGetExecutionInfo checks that ExecutionInfo reports the status,
// output, completion and event count an ack recorded, and that an unknown
// execution is not found.
func managementGetExecutionInfo(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	const inst = "mgmt-exec-info"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:     provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("result")},
	})

	info, err := admin.ExecutionInfo(ctx, inst, 1)
	must(t, err, "ExecutionInfo("+inst+", 1)")
	wantEqual(t, info.ExecutionID, uint64(1), "ExecutionInfo.ExecutionID")
	wantEqual(t, info.Status, provider.StatusCompleted, "ExecutionInfo.Status")
	wantEqual(t, info.Output, ptr("result"), "ExecutionInfo.Output")
	if info.CompletedAt == nil {
		t.Fatal("ExecutionInfo.CompletedAt: got nil for an execution acked as Completed")
	}
	wantEqual(t, info.EventCount, 1, "ExecutionInfo.EventCount")

	_, err = admin.ExecutionInfo(ctx, inst, 2)
	wantPermanent(t, err, provider.ErrNotFound, "ExecutionInfo of an unknown execution")
	wantMessage(t, err, "ExecutionInfo of an unknown execution", "not found")
}

// managementGetSystemMetrics checks that SystemMetrics counts new instances
// by current status, canceled ones among the failed, and their executions
// and events.
func managementGetSystemMetrics(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	base, err := admin.SystemMetrics(ctx)
	must(t, err, "SystemMetrics (baseline)")

	createInstance(ctx, t, p, "mgmt-metrics-running")                                   // 1 event
	completeInstance(ctx, t, p, "mgmt-metrics-completed", "", provider.StatusCompleted) // 2 events
	completeInstance(ctx, t, p, "mgmt-metrics-failed", "", provider.StatusFailed)       // 2 events
	cancelInstance(ctx, t, p, "mgmt-metrics-canceled")                                  // 2 events

	want := provider.SystemMetrics{
		TotalInstances:     base.TotalInstances + 4,
		TotalExecutions:    base.TotalExecutions + 4,
		RunningInstances:   base.RunningInstances + 1,
		CompletedInstances: base.CompletedInstances + 1,
		FailedInstances:    base.FailedInstances + 2,
		CanceledInstances:  base.CanceledInstances + 1,
		TotalEvents:        base.TotalEvents + 7,
		PendingInstances:   base.PendingInstances,
	}
	awaitEqual(ctx, t, "SystemMetrics after one running, one completed, one failed and one canceled instance", want, func() provider.SystemMetrics {
		got, err := admin.SystemMetrics(ctx)
		must(t, err, "SystemMetrics")
		return got
	})
}

// cancelInstance starts instance and fails it by cancellation in one turn,
// as the runtime ends a canceled orchestration: its OrchestrationFailed
// event holds application details of kind Cancelled.
func cancelInstance(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("cancelInstance: fetched %q, want %q", item.Instance, instance)
	}
	details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppCancelled, Reason: "stop"}}
	meta := startMetadata()
	meta.Status = provider.StatusFailed
	meta.Output = ptr(details.DisplayMessage())
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			startedEvent(instance, provider.InitialExecutionID),
			event(2, instance, provider.InitialExecutionID, provider.OrchestrationFailed{Details: details}),
		},
		Metadata: meta,
	})
}

// managementGetQueueDepths checks that QueueDepths counts enqueued, unlocked
// messages per queue and reports no timer queue.
func managementGetQueueDepths(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)

	depths := func(what string) provider.QueueDepths {
		t.Helper()
		d, err := admin.QueueDepths(ctx)
		must(t, err, "QueueDepths ("+what+")")
		if d.TimerQueue != 0 {
			t.Fatalf("QueueDepths (%s): TimerQueue = %d, want 0", what, d.TimerQueue)
		}
		return d
	}
	base := depths("baseline")

	const inst = "mgmt-queue"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	awaitEqual(ctx, t, "QueueDepths after an orchestrator enqueue", provider.QueueDepths{
		OrchestratorQueue: base.OrchestratorQueue + 1, WorkerQueue: base.WorkerQueue,
	}, func() provider.QueueDepths { return depths("after an orchestrator enqueue") })

	enqueueWorker(ctx, t, p, activityItem(inst, 1, 1))
	awaitEqual(ctx, t, "QueueDepths after a worker enqueue", provider.QueueDepths{
		OrchestratorQueue: base.OrchestratorQueue + 1, WorkerQueue: base.WorkerQueue + 1,
	}, func() provider.QueueDepths { return depths("after a worker enqueue") })

	// Locked messages are not counted.
	managementFetch(ctx, t, p, inst)
	mustFetchWork(ctx, t, p, 30*time.Second)
	awaitEqual(ctx, t, "QueueDepths with both messages locked", base, func() provider.QueueDepths { return depths("with both messages locked") })
}

// managementGetInstanceStatsNonexistent checks that InstanceStats of an
// unknown instance is nil.
func managementGetInstanceStatsNonexistent(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	stats, err := p.InstanceStats(ctx, "no-such-instance")
	must(t, err, "InstanceStats of an unknown instance")
	if stats != nil {
		t.Fatalf("InstanceStats of an unknown instance: got %+v, want nil", *stats)
	}

	createInstance(ctx, t, p, "stats-exists")
	stats, err = p.InstanceStats(ctx, "stats-exists")
	must(t, err, "InstanceStats of an instance that exists")
	if stats == nil || stats.HistoryEventCount != 1 {
		t.Fatalf("InstanceStats of an instance with one event: got %+v, want one event", stats)
	}
}

// managementGetInstanceStatsHistory checks that InstanceStats counts the
// current execution's events and bytes and reports no KV or carried events.
func managementGetInstanceStatsHistory(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	createInstance(ctx, t, p, "stats-hist")
	stats := managementStats(ctx, t, p, "stats-hist")
	wantEqual(t, stats.HistoryEventCount, uint64(1), "HistoryEventCount after one OrchestrationStarted")
	if stats.HistorySizeBytes == 0 {
		t.Fatal("HistorySizeBytes: got 0 for a history of one event")
	}
	managementWantKVStats(t, stats, 0, 0, "instance without KV")
	wantEqual(t, stats.QueuePendingCount, uint64(0), "QueuePendingCount without carry-forward events")
}

// managementGetInstanceStatsKV checks that InstanceStats counts KV keys and
// value bytes written by a completed execution.
func managementGetInstanceStatsKV(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const inst = "stats-kv"
	createInstance(ctx, t, p, inst)
	item := managementPoke(ctx, t, p, inst, "poke")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(100, inst, 1, provider.KeyValueSet{Key: "k1", Value: "aaa"}),
			event(101, inst, 1, provider.KeyValueSet{Key: "k2", Value: "bbbbb"}),
			event(102, inst, 1, provider.OrchestrationCompleted{Output: "done"}),
		},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("done")},
	})
	managementWantKVStats(t, managementStats(ctx, t, p, inst), 2, 3+5, "after a completed execution set k1 and k2")
}

// managementGetInstanceStatsCarryForward checks that QueuePendingCount is
// the number of events OrchestrationStarted carried forward.
func managementGetInstanceStatsCarryForward(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const inst = "cf-stats"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(provider.InitialEventID, inst, provider.InitialExecutionID, provider.OrchestrationStarted{
			Name: testOrchestration, Version: testVersion, Input: "{}",
			CarryForwardEvents: []provider.CarryForwardEvent{
				{Name: "raised-1", Data: `{"data":"a"}`},
				{Name: "raised-2", Data: `{"data":"b"}`},
				{Name: "raised-3", Data: `{"data":"c"}`},
			},
		})},
		Metadata: startMetadata(),
	})

	stats := managementStats(ctx, t, p, inst)
	wantEqual(t, stats.QueuePendingCount, uint64(3), "QueuePendingCount with three carried events")
	wantEqual(t, stats.HistoryEventCount, uint64(1), "HistoryEventCount")
	if stats.HistorySizeBytes == 0 {
		t.Fatal("HistorySizeBytes: got 0 for a history of one event")
	}
	managementWantKVStats(t, stats, 0, 0, "instance without KV")
}

// managementGetInstanceStatsKVDeltaOnly checks that InstanceStats counts KV
// values written by the still-running current execution.
func managementGetInstanceStatsKVDeltaOnly(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const inst = "kv-delta-stats"
	createInstance(ctx, t, p, inst)
	item := managementPoke(ctx, t, p, inst, "poke")
	// No status: the execution keeps running and its writes stay in the delta.
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(100, inst, 1, provider.KeyValueSet{Key: "dk1", Value: "xxx"}),
			event(101, inst, 1, provider.KeyValueSet{Key: "dk2", Value: "yyyyyy"}),
			event(102, inst, 1, provider.ActivityScheduled{Name: "Noop", Input: "{}"}),
		},
	})

	stats := managementStats(ctx, t, p, inst)
	managementWantKVStats(t, stats, 2, 3+6, "keys only in the current execution's delta")
	wantEqual(t, stats.QueuePendingCount, uint64(0), "QueuePendingCount without carry-forward events")
}

// managementGetInstanceStatsKVMerged checks InstanceStats while KV writes
// are in the delta and after completion merges them, overwrites included.
func managementGetInstanceStatsKVMerged(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	const inst = "kv-merged-stats"
	createInstance(ctx, t, p, inst)

	item := managementPoke(ctx, t, p, inst, "poke1")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(100, inst, 1, provider.KeyValueSet{Key: "mk1", Value: "aaa"}),
			event(101, inst, 1, provider.KeyValueSet{Key: "mk2", Value: "bb"}),
			event(102, inst, 1, provider.ActivityScheduled{Name: "Noop", Input: "{}"}),
		},
	})
	managementWantKVStats(t, managementStats(ctx, t, p, inst), 2, 3+2, "delta phase")

	// Overwrite mk1 and complete, which merges the delta into the store.
	item = managementPoke(ctx, t, p, inst, "poke2")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(200, inst, 1, provider.KeyValueSet{Key: "mk1", Value: "zzzzz", LastUpdatedAtMs: 1}),
			event(201, inst, 1, provider.OrchestrationCompleted{Output: "done"}),
		},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("done")},
	})
	stats := managementStats(ctx, t, p, inst)
	managementWantKVStats(t, stats, 2, 5+2, "merged phase (mk1 overwritten, not duplicated)")
	wantEqual(t, stats.QueuePendingCount, uint64(0), "QueuePendingCount without carry-forward events")
}

// managementAdditions returns duradyn's additions to Management.
func managementAdditions() []testCase {
	return []testCase{
		{"AdminHistoryReads", managementAdminHistoryReads},
		{"PendingInstance", managementPendingInstance},
		{"InstanceStatus", managementInstanceStatus},
	}
}

// managementAdminHistoryReads checks Admin's history reads against the
// provider's: ReadHistoryWithExecutionID returns each execution's events,
// ReadHistory and LatestExecutionID the latest execution's, and an unknown
// instance has empty histories and latest execution 1.
func managementAdminHistoryReads(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "admin-history"

	// Execution 1: started, an activity, then continued as new.
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: 1,
		HistoryDelta: []provider.Event{
			startedEvent(inst, 1),
			event(2, inst, 1, provider.ActivityScheduled{Name: "First", Input: "1"}),
		},
		Metadata: startMetadata(),
	})
	item = managementPoke(ctx, t, p, inst, "end-1")
	can := startMetadata()
	can.Status = provider.StatusContinuedAsNew
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{event(3, inst, 1, provider.OrchestrationContinuedAsNew{Input: "next"})},
		Metadata:     can,
	})

	// Execution 2: started and one activity.
	enqueueOrch(ctx, t, p, provider.ContinueAsNewItem{
		Instance: inst, Orchestration: testOrchestration, Input: "next", Version: ptr(testVersion),
	}, 0)
	item = managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: 2,
		HistoryDelta: []provider.Event{
			startedEvent(inst, 2),
			event(2, inst, 2, provider.ActivityScheduled{Name: "Second", Input: "2"}),
		},
		Metadata: startMetadata(),
	})

	exec1, err := p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution(1)")
	wantEqual(t, eventIDs(exec1), []uint64{1, 2, 3}, "ReadWithExecution(1): event ids")
	exec2 := readHistory(ctx, t, p, inst)
	wantEqual(t, eventIDs(exec2), []uint64{1, 2}, "Read: event ids (execution 2's)")
	for _, e := range exec2 {
		wantEqual(t, e.ExecutionID, uint64(2), "Read: execution id of each event")
	}

	got, err := admin.ReadHistoryWithExecutionID(ctx, inst, 1)
	must(t, err, "ReadHistoryWithExecutionID(1)")
	wantEqual(t, got, exec1, "ReadHistoryWithExecutionID(1)")
	got, err = admin.ReadHistoryWithExecutionID(ctx, inst, 2)
	must(t, err, "ReadHistoryWithExecutionID(2)")
	wantEqual(t, got, exec2, "ReadHistoryWithExecutionID(2)")
	got, err = admin.ReadHistory(ctx, inst)
	must(t, err, "ReadHistory")
	wantEqual(t, got, exec2, "ReadHistory (the latest execution's)")
	latest, err := admin.LatestExecutionID(ctx, inst)
	must(t, err, "LatestExecutionID")
	wantEqual(t, latest, uint64(2), "LatestExecutionID")

	const unknown = "admin-history-unknown"
	got, err = admin.ReadHistory(ctx, unknown)
	must(t, err, "ReadHistory of an unknown instance")
	wantEqual(t, len(got), 0, "ReadHistory of an unknown instance: events")
	got, err = admin.ReadHistoryWithExecutionID(ctx, unknown, 1)
	must(t, err, "ReadHistoryWithExecutionID of an unknown instance")
	wantEqual(t, len(got), 0, "ReadHistoryWithExecutionID of an unknown instance: events")
	latest, err = admin.LatestExecutionID(ctx, unknown)
	must(t, err, "LatestExecutionID of an unknown instance")
	wantEqual(t, latest, provider.InitialExecutionID, "LatestExecutionID of an unknown instance")
}

// managementPendingInstance checks that an instance is visible from its
// start: before any turn, InstanceInfo describes it from the queued start
// (status Pending, its name and version, a creation time) and the listings
// list it, and SystemMetrics counts it as pending, not among the instances;
// after its first turn it is listed once, as Running, and counted as an
// instance; a start sent to it then does not make it pending again in the
// listings, and SystemMetrics counts that start until a turn takes it.
func managementPendingInstance(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	admin := s.admin(t, p)
	const inst = "mgmt-pending"
	before := uint64(time.Now().Add(-time.Minute).UnixMilli())
	base, err := admin.SystemMetrics(ctx)
	must(t, err, "SystemMetrics (baseline)")
	// pending awaits SystemMetrics counting queued starts and instances
	// (base plus these).
	pending := func(what string, starts, instances uint64) {
		t.Helper()
		type counts struct{ Pending, Instances uint64 }
		awaitEqual(ctx, t, "SystemMetrics pending and total instances "+what, counts{base.PendingInstances + starts, base.TotalInstances + instances}, func() counts {
			got, err := admin.SystemMetrics(ctx)
			must(t, err, "SystemMetrics "+what)
			return counts{got.PendingInstances, got.TotalInstances}
		})
	}
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	pending("with one queued start", 1, 0)

	info, err := admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo of a started instance before its first turn")
	if info.Status != provider.StatusPending || info.OrchestrationName != testOrchestration ||
		info.OrchestrationVersion != testVersion || info.InstanceID != inst || info.CreatedAt < before {
		t.Fatalf("InstanceInfo before the first turn = %+v; want status %s, orchestration %s %s, created after %d",
			info, provider.StatusPending, testOrchestration, testVersion, before)
	}
	awaitEqual(ctx, t, "ListInstances with one pending instance", []string{inst}, func() []string {
		got, err := admin.ListInstances(ctx)
		must(t, err, "ListInstances")
		return got
	})
	awaitEqual(ctx, t, "ListInstancesByStatus(Pending)", []string{inst}, func() []string {
		return managementListByStatus(ctx, t, admin, provider.StatusPending)
	})

	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:     provider.ExecutionMetadata{Status: provider.StatusRunning, OrchestrationName: testOrchestration, OrchestrationVersion: testVersion},
	})
	pending("after the first turn", 0, 1)
	// A second start of the instance, now that it has a record: a queued
	// start, counted until a turn takes it.
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	pending("with a second start queued", 1, 1)
	info, err = admin.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo after the first turn")
	if info.Status != provider.StatusRunning {
		t.Fatalf("InstanceInfo after the first turn: status %q, want %q", info.Status, provider.StatusRunning)
	}
	awaitEqual(ctx, t, "ListInstancesByStatus(Running) after the first turn", []string{inst}, func() []string {
		return managementListByStatus(ctx, t, admin, provider.StatusRunning)
	})
	awaitEqual(ctx, t, "ListInstancesByStatus(Pending) after the first turn", []string{}, func() []string {
		return managementListByStatus(ctx, t, admin, provider.StatusPending)
	})
	awaitEqual(ctx, t, "ListInstances after the first turn and a second start", []string{inst}, func() []string {
		got, err := admin.ListInstances(ctx)
		must(t, err, "ListInstances")
		return got
	})
}
