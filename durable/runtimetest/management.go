package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// managementTests port duroxide's management_interface_test.rs (its
// instance stats tests are in stats.go), deletion_integration_tests.rs,
// bulk_deletion_integration_tests.rs and prune_integration_tests.rs:
// management through [durable.Client]. Instance listings (and what is
// computed from them: metrics, queue depths, bulk selections) may lag writes
// on some providers, so the tests wait for a listing to show a change before
// asserting on it or acting on it.
var managementTests = slices.Concat(managementInterfaceTests, managementStatsTests, deletionTests, bulkDeletionTests, pruneTests)

// From management_interface_test.rs.
var managementInterfaceTests = []Test{
	mgTest("test_capability_discovery", func(h *H) {
		if _, ok := provider.AdminOf(h.Client.Provider()); !ok {
			h.Fatal("client's provider has no management capability")
		}
		ids, err := h.Client.ListInstances(h.Ctx())
		if err != nil || len(ids) != 0 {
			h.Fatalf("ListInstances = %v, %v; want none", ids, err)
		}
		m, err := h.Client.SystemMetrics(h.Ctx())
		if err != nil || m != (provider.SystemMetrics{}) {
			h.Fatalf("SystemMetrics = %+v, %v; want zeros", m, err)
		}
		d, err := h.Client.QueueDepths(h.Ctx())
		if err != nil || d != (provider.QueueDepths{}) {
			h.Fatalf("QueueDepths = %+v, %v; want zeros", d, err)
		}
	}),
	mgTest("test_management_features_with_workflow", func(h *H) {
		const id = "test-instance"
		h.Serve(durable.NewOrchestration("TestOrchestration", func(*durable.OrchestrationContext, durable.Raw) (durable.Raw, error) {
			return "completed", nil
		}))
		h.Start("TestOrchestration", id, durable.Raw("{}"))
		if out := h.Completed(id); out != "completed" {
			h.Fatalf("output %q", out)
		}
		mgWaitStatusList(h, provider.StatusCompleted, id)
		mgWaitInstances(h, id)
		info := mgInfo(h, id)
		if info.InstanceID != id || info.OrchestrationName != "TestOrchestration" ||
			info.OrchestrationVersion != durable.DefaultVersion || info.CurrentExecutionID != 1 {
			h.Errorf("InstanceInfo = %+v", info)
		}
		mgCheckExecutions(h, id, 1)
		mgWaitMetrics(h, "one instance with one execution", func(m provider.SystemMetrics) bool {
			return m.TotalInstances == 1 && m.TotalExecutions == 1
		})
	}),
	mgTest("test_instance_discovery", func(h *H) {
		if ids, err := h.Client.ListInstances(h.Ctx()); err != nil || len(ids) != 0 {
			h.Fatalf("ListInstances before any start = %v, %v", ids, err)
		}
		h.Serve(mgProcessActivity("TestActivity"), mgCallOrch("TestOrchestration", "TestActivity"))
		ids := []string{"instance-1", "instance-2", "instance-3"}
		for i, id := range ids {
			h.Start("TestOrchestration", id, fmt.Sprintf("input-%d", i+1))
		}
		for i, id := range ids {
			if out := h.Completed(id); out != mgJSON(fmt.Sprintf("Processed: input-%d", i+1)) {
				h.Errorf("%s: output %s", id, out)
			}
		}
		mgWaitStatusList(h, provider.StatusCompleted, ids...)
		mgWaitInstances(h, ids...)
		mgWaitStatusList(h, provider.StatusRunning)
	}),
	mgTest("test_instance_info", func(h *H) {
		const id = "test-instance"
		h.Serve(mgProcessActivity("TestActivity"), mgCallOrch("TestOrchestration", "TestActivity"))
		h.Start("TestOrchestration", id, "test-input")
		out := h.Completed(id)
		mgWaitStatusList(h, provider.StatusCompleted, id)
		info := mgInfo(h, id)
		if info.InstanceID != id || info.OrchestrationName != "TestOrchestration" ||
			info.OrchestrationVersion != durable.DefaultVersion || info.CurrentExecutionID != 1 ||
			info.Status != provider.StatusCompleted || info.Output == nil || *info.Output != out {
			h.Errorf("InstanceInfo = %+v; want TestOrchestration 1.0.0, execution 1, Completed with %s", info, out)
		}
		_, err := h.Client.InstanceInfo(h.Ctx(), "nonexistent")
		if !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("InstanceInfo(nonexistent) error = %v; want not found", err)
		}
	}),
	mgTest("test_execution_info", func(h *H) {
		const id = "test-exec"
		h.Serve(mgProcessActivity("TestActivity"), mgCallOrch("TestOrchestration", "TestActivity"))
		h.Start("TestOrchestration", id, "test-input")
		out := h.Completed(id)
		mgCheckExecutions(h, id, 1)
		ei, err := h.Client.ExecutionInfo(h.Ctx(), id, 1)
		if err != nil {
			h.Fatal(err)
		}
		history := mgHistory(h, id, 1)
		if ei.ExecutionID != 1 || ei.Status != provider.StatusCompleted || ei.Output == nil || *ei.Output != out ||
			ei.EventCount == 0 || ei.EventCount != len(history) {
			h.Errorf("ExecutionInfo = %+v; want execution 1 Completed with %s and %d events", ei, out, len(history))
		}
		if Count(history, "OrchestrationStarted") != 1 || Count(history, "OrchestrationCompleted") != 1 {
			h.Errorf("execution 1 history %v: want started and completed", EventTypes(history))
		}
		if _, err := h.Client.ExecutionInfo(h.Ctx(), id, 999); !errors.Is(err, provider.ErrNotFound) {
			h.Errorf("ExecutionInfo(999) error = %v; want not found", err)
		}
	}),
	mgTest("test_multi_execution_support", func(h *H) {
		const id = "test-continue"
		h.Serve(mgCountdown("ContinueAsNewTest", 3, nil))
		h.Start("ContinueAsNewTest", id, 0)
		if out := h.Completed(id); out != mgJSON("Final: 3") {
			h.Fatalf("output %s", out)
		}
		mgCheckExecutions(h, id, 1, 2, 3, 4)
		for exec := uint64(1); exec <= 4; exec++ {
			ei, err := h.Client.ExecutionInfo(h.Ctx(), id, exec)
			want := provider.StatusContinuedAsNew
			if exec == 4 {
				want = provider.StatusCompleted
			}
			if err != nil || ei.ExecutionID != exec || ei.Status != want {
				h.Errorf("ExecutionInfo(%d) = %+v, %v; want %s", exec, ei, err, want)
			}
		}
		if info := mgInfo(h, id); info.CurrentExecutionID != 4 || info.Status != provider.StatusCompleted {
			h.Errorf("InstanceInfo = %+v; want execution 4 Completed", info)
		}
	}),
	mgTest("test_system_metrics", func(h *H) {
		h.Serve(
			mgProcessActivity("TestActivity"), mgFailActivity("FailingActivity"),
			mgCallOrch("SuccessOrchestration", "TestActivity"),
			mgCallOrch("FailureOrchestration", "FailingActivity"),
			mgWaitOrch("RunningOrchestration", "NeverComes"),
		)
		h.Start("SuccessOrchestration", "success-1", "input-1")
		h.Start("SuccessOrchestration", "success-2", "input-2")
		h.Start("FailureOrchestration", "failure-1", "input-1")
		h.Start("RunningOrchestration", "running-1", "input-1")
		h.Completed("success-1")
		h.Completed("success-2")
		h.Failed("failure-1")
		h.AwaitEvent("running-1", "ExternalSubscribed")
		mgWaitMetrics(h, "4 instances: 2 completed, 1 failed, 1 running", func(m provider.SystemMetrics) bool {
			return m.TotalInstances == 4 && m.TotalExecutions == 4 && m.RunningInstances == 1 &&
				m.CompletedInstances == 2 && m.FailedInstances == 1 && m.TotalEvents > 0
		})
		mgWaitStatusList(h, provider.StatusCompleted, "success-1", "success-2")
		mgWaitStatusList(h, provider.StatusFailed, "failure-1")
		mgWaitStatusList(h, provider.StatusRunning, "running-1")
	}),
	mgTest("test_queue_depths", func(h *H) {
		h.Serve(
			durable.NewActivity("SlowActivity", func(ctx context.Context, _ string) (string, error) {
				// Work that takes a moment, so the queues hold messages
				// while the orchestrations start.
				select {
				case <-time.After(20 * time.Millisecond):
				case <-ctx.Done():
					return "", context.Cause(ctx)
				}
				return "Slow result", nil
			}),
			mgCallOrch("QueueTestOrchestration", "SlowActivity"),
		)
		var ids []string
		for i := 1; i <= 5; i++ {
			id := fmt.Sprintf("queue-test-%d", i)
			ids = append(ids, id)
			h.Start("QueueTestOrchestration", id, fmt.Sprintf("input-%d", i))
		}
		if _, err := h.Client.QueueDepths(h.Ctx()); err != nil {
			h.Fatalf("QueueDepths while busy: %v", err)
		}
		for _, id := range ids {
			h.Completed(id)
		}
		// The original allows at most one message per queue after the
		// work is done; once every orchestration has completed, none is
		// left.
		eventually(h, "empty queues", func() (bool, string) {
			d, err := h.Client.QueueDepths(h.Ctx())
			return err == nil && d == (provider.QueueDepths{}), fmt.Sprintf("%+v, %v", d, err)
		})
	}),
	mgTest("test_error_handling", func(h *H) {
		if _, err := h.Client.InstanceInfo(h.Ctx(), "nonexistent"); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("InstanceInfo error = %v; want not found", err)
		}
		if _, err := h.Client.ExecutionInfo(h.Ctx(), "nonexistent", 1); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("ExecutionInfo error = %v; want not found", err)
		}
		if hist, err := h.Client.History(h.Ctx(), "nonexistent", 1); err != nil || len(hist) != 0 {
			h.Errorf("History = %v, %v; want empty", EventTypes(hist), err)
		}
		if execs, err := h.Client.ListExecutions(h.Ctx(), "nonexistent"); err != nil || len(execs) != 0 {
			h.Errorf("ListExecutions = %v, %v; want empty", execs, err)
		}
		if ids, err := h.Client.ListInstancesByStatus(h.Ctx(), "NonExistentStatus"); err != nil || len(ids) != 0 {
			h.Errorf("ListInstancesByStatus(NonExistentStatus) = %v, %v; want empty", ids, err)
		}
	}),
	mgTest("test_complex_workflow_management", func(h *H) {
		h.Serve(
			mgProcessActivityWith("ProcessOrder", "Processed order: "),
			mgProcessActivityWith("SendEmail", "Sent email: "),
			mgProcessActivityWith("UpdateInventory", "Updated inventory for: "),
			durable.NewOrchestration("OrderProcessing", func(ctx *durable.OrchestrationContext, order string) (string, error) {
				result, err := durable.CallActivity[string](ctx, "ProcessOrder", order).Get(ctx)
				if err != nil {
					return "", err
				}
				if _, err := durable.CallActivity[string](ctx, "SendEmail", "Order processed: "+result).Get(ctx); err != nil {
					return "", err
				}
				if _, err := durable.CallActivity[string](ctx, "UpdateInventory", order).Get(ctx); err != nil {
					return "", err
				}
				return result, nil
			}),
		)
		orders := []string{"order-1", "order-2", "order-3", "order-4", "order-5"}
		for _, o := range orders {
			h.Start("OrderProcessing", o, o)
		}
		for _, o := range orders {
			if out := h.Completed(o); out != mgJSON("Processed order: "+o) {
				h.Errorf("%s: output %s", o, out)
			}
		}
		mgWaitStatusList(h, provider.StatusCompleted, orders...)
		mgWaitInstances(h, orders...)
		mgWaitMetrics(h, "5 completed instances", func(m provider.SystemMetrics) bool {
			return m.TotalInstances == 5 && m.TotalExecutions == 5 && m.CompletedInstances == 5 &&
				m.FailedInstances == 0 && m.RunningInstances == 0 && m.TotalEvents > 0
		})
		for _, o := range orders {
			info := mgInfo(h, o)
			if info.InstanceID != o || info.OrchestrationName != "OrderProcessing" || info.Status != provider.StatusCompleted || info.Output == nil {
				h.Errorf("InstanceInfo(%s) = %+v", o, info)
			}
			mgCheckExecutions(h, o, 1)
			ei, err := h.Client.ExecutionInfo(h.Ctx(), o, 1)
			if err != nil || ei.ExecutionID != 1 || ei.Status != provider.StatusCompleted || ei.EventCount == 0 {
				h.Errorf("ExecutionInfo(%s, 1) = %+v, %v", o, ei, err)
			}
			hist := mgHistory(h, o, 1)
			if Count(hist, "OrchestrationStarted") != 1 || Count(hist, "OrchestrationCompleted") != 1 || Count(hist, "ActivityCompleted") != 3 {
				h.Errorf("%s history %v: want started, 3 activities completed, completed", o, EventTypes(hist))
			}
		}
		eventually(h, "empty queues", func() (bool, string) {
			d, err := h.Client.QueueDepths(h.Ctx())
			return err == nil && d == (provider.QueueDepths{}), fmt.Sprintf("%+v, %v", d, err)
		})
	}),
	mgTest("test_management_unknown_instance_errors", func(h *H) {
		a := mgAdmin(h)
		const id = "unknown-instance"
		if _, err := a.InstanceInfo(h.Ctx(), id); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("InstanceInfo error = %v; want not found", err)
		}
		if _, err := a.ExecutionInfo(h.Ctx(), id, 1); !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("ExecutionInfo error = %v; want not found", err)
		}
		if execs, err := a.ListExecutions(h.Ctx(), id); err != nil || len(execs) != 0 {
			h.Errorf("ListExecutions = %v, %v; want empty", execs, err)
		}
		if hist, err := a.ReadHistoryWithExecutionID(h.Ctx(), id, 1); err != nil || len(hist) != 0 {
			h.Errorf("ReadHistoryWithExecutionID = %v, %v; want empty", EventTypes(hist), err)
		}
		if latest, err := a.LatestExecutionID(h.Ctx(), id); err != nil || latest != 1 {
			h.Errorf("LatestExecutionID = %d, %v; want 1", latest, err)
		}
	}),
	mgTest("test_management_read_execution_specific", func(h *H) {
		const id = "read-exec-test"
		a := mgAdmin(h)
		h.Serve(mgCountdown("ContinueTest", 2, nil))
		h.Start("ContinueTest", id, 0)
		h.Completed(id)
		execs, err := a.ListExecutions(h.Ctx(), id)
		if err != nil || len(execs) < 2 {
			h.Fatalf("ListExecutions = %v, %v; want at least 2", execs, err)
		}
		for _, exec := range execs {
			hist, err := a.ReadHistoryWithExecutionID(h.Ctx(), id, exec)
			if err != nil || len(hist) == 0 {
				h.Errorf("execution %d: history %v, %v", exec, EventTypes(hist), err)
				continue
			}
			if _, ok := hist[0].Kind.(provider.OrchestrationStarted); !ok {
				h.Errorf("execution %d starts with %s", exec, hist[0].Kind.EventType())
			}
		}
		if latest, err := a.LatestExecutionID(h.Ctx(), id); err != nil || latest != execs[len(execs)-1] {
			h.Errorf("LatestExecutionID = %d, %v; want %d", latest, err, execs[len(execs)-1])
		}
	}),
	mgTest("test_management_get_instance_tree", func(h *H) {
		const id = "parent-1"
		h.Serve(
			mgProcessActivity("SimpleActivity"),
			durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				c1 := durable.CallSubOrchestration[string](ctx, "Child", "input1", durable.WithInstanceID("child-1"))
				c2 := durable.CallSubOrchestration[string](ctx, "Child", "input2", durable.WithInstanceID("child-2"))
				results, err := durable.AwaitAll(ctx, c1, c2)
				return fmt.Sprintf("Children: %v", results), err
			}),
			mgCallOrch("Child", "SimpleActivity"),
		)
		h.Start("Parent", id, "start")
		h.Completed(id)
		tree := mgWaitTree(h, id, 3)
		if tree.RootID != id || tree.IsRootOnly() {
			h.Errorf("tree %+v", tree)
		}
		for _, want := range []string{id, "child-1", "child-2"} {
			if !slices.Contains(tree.AllIDs, want) {
				h.Errorf("tree %v lacks %s", tree.AllIDs, want)
			}
		}
	}),
	mgTest("test_management_all_status_types", func(h *H) {
		h.Serve(
			durable.NewActivity("OkActivity", func(_ context.Context, in string) (string, error) { return in, nil }),
			mgFailActivity("FailActivity"),
			mgCallOrch("Completed", "OkActivity"),
			mgCallOrch("Failed", "FailActivity"),
			mgCountdown("ContinuedAsNew", 1, nil),
			mgWaitOrch("Running", "NeverComes"),
		)
		h.Start("Completed", "inst-completed", "test")
		h.Start("Failed", "inst-failed", "test")
		h.Start("ContinuedAsNew", "inst-continued", 0)
		h.Start("Running", "inst-running", "test")
		// The original sleeps 2 s for the terminal ones; here each is
		// awaited.
		h.Completed("inst-completed")
		h.Failed("inst-failed")
		h.Completed("inst-continued")
		h.AwaitEvent("inst-running", "ExternalSubscribed")
		mgWaitStatusList(h, provider.StatusCompleted, "inst-completed", "inst-continued")
		mgWaitStatusList(h, provider.StatusFailed, "inst-failed")
		mgWaitStatusList(h, provider.StatusRunning, "inst-running")
		if ids, err := mgAdmin(h).ListInstancesByStatus(h.Ctx(), "UnknownStatus"); err != nil || len(ids) != 0 {
			h.Errorf("ListInstancesByStatus(UnknownStatus) = %v, %v; want empty", ids, err)
		}
	}),
}

// From deletion_integration_tests.rs.
var deletionTests = []Test{
	mgTest("test_delete_terminal_orchestrations", func(h *H) {
		h.Serve(
			durable.ActivityFunc("SuccessActivity", func(context.Context, string) (string, error) { return "done", nil }),
			durable.ActivityFunc("FailActivity", func(context.Context, string) (string, error) {
				return "", errors.New("intentional failure")
			}),
			mgCallOrchConst("SuccessOrch", "SuccessActivity", "completed"),
			mgCallOrchConst("FailOrch", "FailActivity", "unreachable"),
		)
		h.Start("SuccessOrch", "delete-completed", durable.Raw("{}"))
		h.Completed("delete-completed")
		h.Start("FailOrch", "delete-failed", durable.Raw("{}"))
		h.Failed("delete-failed")
		if s := mgInfo(h, "delete-completed").Status; s != provider.StatusCompleted {
			h.Errorf("delete-completed status %s", s)
		}
		if s := mgInfo(h, "delete-failed").Status; s != provider.StatusFailed {
			h.Errorf("delete-failed status %s", s)
		}
		// What the runtime stored: each instance's one execution and its
		// history, and no queued message once it finished.
		for _, id := range []string{"delete-completed", "delete-failed"} {
			events := len(h.History(id))
			res := mgDelete(h, id, false)
			if res.InstancesDeleted != 1 || res.ExecutionsDeleted != 1 || res.EventsDeleted != uint64(events) {
				h.Errorf("delete %s = %+v; want 1 instance, 1 execution, %d events", id, res, events)
			}
			mgGone(h, id)
		}
	}),
	mgTest("test_force_delete_in_flight_work", func(h *H) {
		started := make(chan struct{})
		var once sync.Once
		h.Serve(
			durable.ActivityFunc("SlowActivity", func(ctx context.Context, _ string) (string, error) {
				once.Do(func() { close(started) })
				// Runs until the runtime stops: the instance is deleted
				// while the activity is in flight.
				<-ctx.Done()
				return "", context.Cause(ctx)
			}),
			mgCallOrchConst("WaitOnActivity", "SlowActivity", "done"),
			durable.OrchestrationFunc("WaitOnTimer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				return "done", ctx.Sleep(time.Hour)
			}),
			mgWaitOrch("WaitOnEvent", "my-event"),
		)
		h.Start("WaitOnActivity", "force-activity", durable.Raw("{}"))
		select {
		case <-started:
		case <-h.Ctx().Done():
			h.Fatal("activity never started")
		}
		res := mgDelete(h, "force-activity", true)
		if res.InstancesDeleted != 1 {
			h.Errorf("force delete while waiting on an activity = %+v", res)
		}
		mgGone(h, "force-activity")

		h.Start("WaitOnTimer", "force-timer", durable.Raw("{}"))
		h.AwaitEvent("force-timer", "TimerCreated")
		res = mgDelete(h, "force-timer", true)
		// The timer's delayed message goes with the instance.
		if res.InstancesDeleted != 1 || res.QueueMessagesDeleted < 1 {
			h.Errorf("force delete while waiting on a timer = %+v; want the timer message deleted", res)
		}
		mgGone(h, "force-timer")

		h.Start("WaitOnEvent", "force-event", durable.Raw("{}"))
		h.AwaitEvent("force-event", "ExternalSubscribed")
		if res := mgDelete(h, "force-event", true); res.InstancesDeleted != 1 {
			h.Errorf("force delete while waiting on an event = %+v", res)
		}
		mgGone(h, "force-event")
	}),
	mgTest("test_cascade_delete_real_sub_orchestrations", func(h *H) {
		const parent = "cascade-parent"
		h.Serve(
			durable.NewOrchestration("ParentOrch", func(ctx *durable.OrchestrationContext, _ durable.Raw) (string, error) {
				// Both children are scheduled in one turn: events 2 and 3.
				c1 := durable.CallSubOrchestration[string](ctx, "ChildOrch", "1")
				c2 := durable.CallSubOrchestration[string](ctx, "ChildOrch", "2")
				if _, err := durable.AwaitAll(ctx, c1, c2); err != nil {
					return "", err
				}
				return "parent done", nil
			}),
			durable.NewOrchestration("ChildOrch", func(_ *durable.OrchestrationContext, in string) (string, error) {
				return "child " + in + " done", nil
			}),
		)
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		child1, child2 := parent+"::sub::2", parent+"::sub::3"
		for _, id := range []string{parent, child1, child2} {
			mgInfo(h, id)
		}
		h.Completed(child1)
		h.Completed(child2)
		if _, err := h.Client.DeleteInstance(h.Ctx(), child1, false); !errors.Is(err, provider.ErrSubOrchestration) {
			h.Fatalf("delete of a sub-orchestration: %v; want refused", err)
		}
		mgInfo(h, child1)
		if res := mgDelete(h, parent, false); res.InstancesDeleted != 3 {
			h.Errorf("delete %s = %+v; want the parent and both children", parent, res)
		}
		for _, id := range []string{parent, child1, child2} {
			mgGone(h, id)
		}
	}),
	mgTest("test_identity_reuse_after_delete", func(h *H) {
		const id = "reuse-id"
		h.Serve(mgEcho("SimpleOrch"), mgWaitOrch("WaitOrch", "never"))
		h.Start("SimpleOrch", id, durable.Raw("first"))
		if out := h.Completed(id); out != "first" {
			h.Fatalf("first run: output %q", out)
		}
		mgDelete(h, id, false)
		h.Start("SimpleOrch", id, durable.Raw("second"))
		if out := h.Completed(id); out != "second" {
			h.Fatalf("second run: output %q", out)
		}
		if info := mgInfo(h, id); info.Status != provider.StatusCompleted || info.Output == nil || !strings.Contains(*info.Output, "second") {
			h.Errorf("after reuse: %+v", info)
		}
		mgDelete(h, id, false)

		h.Start("WaitOrch", id, durable.Raw("{}"))
		h.AwaitEvent(id, "ExternalSubscribed")
		mgDelete(h, id, true)
		h.Start("SimpleOrch", id, durable.Raw("after-force"))
		if out := h.Completed(id); out != "after-force" {
			h.Fatalf("after a force delete: output %q", out)
		}
		if info := mgInfo(h, id); info.Status != provider.StatusCompleted || info.CurrentExecutionID != 1 {
			h.Errorf("after a force delete: %+v", info)
		}
	}),
	mgTest("test_delete_error_cases", func(h *H) {
		h.Serve(
			mgWaitOrch("WaitOrch", "never"),
			durable.NewOrchestration("ParentOrch", func(ctx *durable.OrchestrationContext, _ durable.Raw) (string, error) {
				_, err := durable.CallSubOrchestration[durable.Raw](ctx, "WaitOrch", durable.Raw("")).Get(ctx)
				return "done", err
			}),
		)
		_, err := h.Client.DeleteInstance(h.Ctx(), "does-not-exist", false)
		if !errors.Is(err, provider.ErrNotFound) || !strings.Contains(err.Error(), "not found") {
			h.Errorf("delete of an unknown instance: %v; want not found", err)
		}

		h.Start("WaitOrch", "error-running", durable.Raw("{}"))
		h.AwaitEvent("error-running", "ExternalSubscribed")
		_, err = h.Client.DeleteInstance(h.Ctx(), "error-running", false)
		if !errors.Is(err, provider.ErrStillRunning) || !strings.Contains(strings.ToLower(err.Error()), "running") {
			h.Errorf("delete of a running instance: %v; want still running", err)
		}
		mgInfo(h, "error-running")

		const child = "error-parent::sub::2"
		h.Start("ParentOrch", "error-parent", durable.Raw("{}"))
		h.AwaitEvent(child, "ExternalSubscribed")
		for _, force := range []bool{false, true} {
			_, err = h.Client.DeleteInstance(h.Ctx(), child, force)
			if !errors.Is(err, provider.ErrSubOrchestration) || !strings.Contains(strings.ToLower(err.Error()), "sub-orchestration") {
				h.Errorf("delete of a sub-orchestration (force %v): %v; want refused", force, err)
			}
		}
		mgInfo(h, child)
		mgDelete(h, "error-parent", true)
		mgDelete(h, "error-running", true)
		mgGone(h, child)
	}),
	mgTest("test_dispatcher_resilience_after_delete", func(h *H) {
		// The instances the activity ran for (an activity may run more
		// than once: delivery is at least once).
		var mu sync.Mutex
		ran := map[string]bool{}
		h.Serve(
			durable.ActivityFunc("CountingActivity", func(ctx context.Context, _ string) (string, error) {
				info, _ := durable.ActivityInfoFrom(ctx)
				mu.Lock()
				ran[info.Instance] = true
				mu.Unlock()
				return "counted", nil
			}),
			mgCallOrchConst("CountOrch", "CountingActivity", "done"),
			mgWaitOrch("WaitOrch", "never"),
		)
		h.Start("WaitOrch", "resilience-wait", durable.Raw("{}"))
		h.AwaitEvent("resilience-wait", "ExternalSubscribed")
		mgDelete(h, "resilience-wait", true)
		// An event for the deleted instance: a message nobody will run.
		if err := h.Client.RaiseEvent(h.Ctx(), "resilience-wait", "never", durable.Raw("late")); err != nil {
			h.Fatal(err)
		}
		for i := range 3 {
			h.Start("CountOrch", fmt.Sprintf("resilience-new-%d", i), durable.Raw("{}"))
		}
		for i := range 3 {
			if out := h.Completed(fmt.Sprintf("resilience-new-%d", i)); out != "done" {
				h.Errorf("resilience-new-%d: output %q", i, out)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 3 || ran["resilience-wait"] {
			h.Errorf("activity ran for %v; want the 3 new instances", ran)
		}
	}),
	mgTest("test_concurrent_delete_operations", func(h *H) {
		const id = "concurrent-delete"
		h.Serve(durable.OrchestrationFunc("SimpleOrch", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil }))
		h.Start("SimpleOrch", id, durable.Raw("{}"))
		h.Completed(id)
		errs := make(chan error, 2)
		for range 2 {
			// A client each, as two processes would have.
			c := durable.NewClient(h.Client.Provider())
			go func() {
				_, err := c.DeleteInstance(context.Background(), id, false)
				errs <- err
			}()
		}
		successes := 0
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				successes++
			case errors.Is(err, provider.ErrNotFound):
			default:
				h.Errorf("concurrent delete: %v; want success or not found", err)
			}
		}
		if successes < 1 {
			h.Errorf("no delete succeeded")
		}
		mgGone(h, id)
	}),
	mgTest("test_get_instance_tree", func(h *H) {
		const parent = "tree-test-parent"
		h.Serve(mgTwoChildrenParent("ParentOrch", "ChildOrch"), mgConstOrch("ChildOrch", "child done"))
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		tree := mgWaitTree(h, parent, 3)
		if tree.RootID != parent || tree.IsRootOnly() || !slices.Contains(tree.AllIDs, parent) {
			h.Errorf("tree %+v", tree)
		}
		subs := 0
		for _, id := range tree.AllIDs {
			if strings.Contains(id, "::sub::") {
				subs++
			}
		}
		if subs != 2 {
			h.Errorf("tree %v: %d children; want 2", tree.AllIDs, subs)
		}
		mgDelete(h, parent, false)
	}),
	mgTest("test_list_children_primitive", func(h *H) {
		const parent = "list-children-parent"
		a := mgAdmin(h)
		h.Serve(
			mgSubOrch("ParentOrch", "ChildOrch", "done"),
			mgSubOrch("ChildOrch", "GrandchildOrch", "child done"),
			mgConstOrch("GrandchildOrch", "grandchild done"),
		)
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		children := mgChildren(h, a, parent)
		if len(children) != 1 || !strings.HasPrefix(children[0], parent+"::sub::") {
			h.Fatalf("children of %s: %v; want one sub-orchestration", parent, children)
		}
		grandchildren := mgChildren(h, a, children[0])
		if len(grandchildren) != 1 {
			h.Fatalf("children of %s: %v; want one", children[0], grandchildren)
		}
		if leaf := mgChildren(h, a, grandchildren[0]); len(leaf) != 0 {
			h.Errorf("children of the grandchild: %v; want none", leaf)
		}
		mgDelete(h, parent, false)
	}),
	mgTest("test_get_parent_id_primitive", func(h *H) {
		const parent = "parent-id-parent"
		a := mgAdmin(h)
		h.Serve(mgSubOrch("ParentOrch", "ChildOrch", "done"), mgConstOrch("ChildOrch", "child done"))
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		if p, err := a.ParentID(h.Ctx(), parent); err != nil || p != "" {
			h.Errorf("ParentID(root) = %q, %v; want none", p, err)
		}
		tree := mgWaitTree(h, parent, 2)
		i := slices.IndexFunc(tree.AllIDs, func(id string) bool { return strings.Contains(id, "::sub::") })
		if i < 0 {
			h.Fatalf("tree %v has no child", tree.AllIDs)
		}
		if p, err := a.ParentID(h.Ctx(), tree.AllIDs[i]); err != nil || p != parent {
			h.Errorf("ParentID(child) = %q, %v; want %s", p, err, parent)
		}
		if _, err := a.ParentID(h.Ctx(), "non-existent"); !errors.Is(err, provider.ErrNotFound) {
			h.Errorf("ParentID(non-existent) error = %v; want not found", err)
		}
		mgDelete(h, parent, false)
	}),
	mgTest("test_delete_orphan_race_condition_detection", func(h *H) {
		const parent = "orphan-parent"
		a := mgAdmin(h)
		h.Serve(
			durable.ActivityFunc("ParentActivity", func(context.Context, string) (string, error) { return "done", nil }),
			durable.NewOrchestration("ParentOrch", func(ctx *durable.OrchestrationContext, _ durable.Raw) (string, error) {
				child := durable.CallSubOrchestration[string](ctx, "ChildOrch", "child-input")
				_, _ = durable.AwaitAll(ctx, child)
				return "parent-done", nil
			}),
			mgCallOrchConst("ChildOrch", "ParentActivity", "child-done"),
		)
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		full := mgWaitTree(h, parent, 2)
		// As if the child had been spawned after the tree was read: the
		// delete must refuse to orphan it, and delete nothing.
		_, err := a.DeleteInstancesAtomic(h.Ctx(), []string{parent}, false)
		if !errors.Is(err, provider.ErrTreeChanged) {
			h.Fatalf("delete without the child: %v; want tree changed", err)
		}
		mgInfo(h, parent)
		if res, err := a.DeleteInstancesAtomic(h.Ctx(), full.AllIDs, false); err != nil || res.InstancesDeleted != 2 {
			h.Fatalf("delete of the full tree = %+v, %v", res, err)
		}
		for _, id := range full.AllIDs {
			mgGone(h, id)
		}
	}),
}

// From bulk_deletion_integration_tests.rs.
var bulkDeletionTests = []Test{
	mgTest("test_delete_instance_bulk_retention_policies", func(h *H) {
		h.Serve(mgEcho("SimpleOrch"))
		var ids []string
		for i := range 6 {
			id := fmt.Sprintf("bulk-del-test-%d", i)
			ids = append(ids, id)
			h.Start("SimpleOrch", id, durable.Raw(fmt.Sprint(i)))
		}
		for _, id := range ids {
			h.Completed(id)
		}
		mgWaitStatusList(h, provider.StatusCompleted, ids...)

		results := mgBulkDeleteUntilGone(h, provider.InstanceFilter{InstanceIDs: ids[:2]}, ids[:2]...)
		if n := mgDeleted(results); n != 2 {
			h.Fatalf("bulk delete of two ids: %+v; want 2 deleted", results)
		}
		for _, id := range ids[2:] {
			mgInfo(h, id)
		}
		// Batches of at most two until none is left: two batches of two
		// where the listing keeps up, then an empty one.
		results = mgBulkDeleteUntilGone(h, provider.InstanceFilter{Limit: 2}, ids[2:]...)
		nonEmpty := 0
		for _, r := range results {
			if r.InstancesDeleted > 2 {
				h.Errorf("a batch with limit 2 deleted %d instances", r.InstancesDeleted)
			}
			if r.InstancesDeleted > 0 {
				nonEmpty++
			}
		}
		if mgDeleted(results) != 4 || nonEmpty < 2 {
			h.Errorf("batches %+v; want 4 deleted, at most 2 at a time", results)
		}
		if res, err := h.Client.DeleteInstanceBulk(h.Ctx(), provider.InstanceFilter{Limit: 2}); err != nil || res.InstancesDeleted != 0 {
			h.Errorf("batch after the last = %+v, %v; want nothing deleted", res, err)
		}
		for _, id := range ids {
			mgGone(h, id)
		}
	}),
	mgTest("test_delete_instance_bulk_safety", func(h *H) {
		h.Serve(
			mgConstOrch("SimpleOrch", "done"),
			mgWaitOrch("WaitOrch", "never"),
			mgSubOrch("ParentOrch", "SimpleOrch", "parent done"),
		)
		h.Start("SimpleOrch", "bulk-del-completed", durable.Raw("{}"))
		h.Start("WaitOrch", "bulk-del-running", durable.Raw("{}"))
		h.Completed("bulk-del-completed")
		h.AwaitEvent("bulk-del-running", "ExternalSubscribed")
		mgWaitStatusList(h, provider.StatusCompleted, "bulk-del-completed")
		mgWaitStatusList(h, provider.StatusRunning, "bulk-del-running")
		results := mgBulkDeleteUntilGone(h, provider.InstanceFilter{InstanceIDs: []string{"bulk-del-completed", "bulk-del-running"}}, "bulk-del-completed")
		if n := mgDeleted(results); n != 1 {
			h.Fatalf("bulk delete: %+v; want only the completed instance deleted", results)
		}
		if info := mgInfo(h, "bulk-del-running"); info.Status != provider.StatusRunning {
			h.Fatalf("running instance after the bulk delete: %+v", info)
		}
		mgDelete(h, "bulk-del-running", true)

		const parent, child = "bulk-del-parent", "bulk-del-parent::sub::2"
		h.Start("ParentOrch", parent, durable.Raw("{}"))
		h.Completed(parent)
		mgInfo(h, child)
		mgWaitStatusList(h, provider.StatusCompleted, parent, child)
		results = mgBulkDeleteUntilGone(h, provider.InstanceFilter{InstanceIDs: []string{parent}}, parent)
		if n := mgDeleted(results); n != 2 {
			h.Fatalf("bulk delete of the parent: %+v; want it and its child deleted", results)
		}
		mgGone(h, parent)
		mgGone(h, child)
	}),
}

// From prune_integration_tests.rs.
var pruneTests = []Test{
	mgTest("test_prune_continue_as_new_chain", func(h *H) {
		const id = "prune-chain"
		h.Serve(mgCountdown("ContinueOrch", 5, nil))
		h.Start("ContinueOrch", id, 0)
		h.Completed(id)
		mgCheckExecutions(h, id, 1, 2, 3, 4, 5, 6)
		res, err := h.Client.PruneExecutions(h.Ctx(), id, provider.PruneOptions{KeepLast: 2})
		if err != nil || res.InstancesProcessed != 1 || res.ExecutionsDeleted != 4 {
			h.Fatalf("prune keeping 2 = %+v, %v; want 4 executions deleted", res, err)
		}
		mgCheckExecutions(h, id, 5, 6)
	}),
	mgTest("test_prune_bulk_operations", func(h *H) {
		h.Serve(mgCountdown("ContinueOrch", 3, nil))
		ids := []string{"prune-bulk-0", "prune-bulk-1", "prune-bulk-2"}
		for _, id := range ids {
			h.Start("ContinueOrch", id, 0)
		}
		for _, id := range ids {
			h.Completed(id)
			mgCheckExecutions(h, id, 1, 2, 3, 4)
		}
		mgWaitInstances(h, ids...)
		res, err := h.Client.PruneExecutionsBulk(h.Ctx(), provider.InstanceFilter{InstanceIDs: ids[:2]}, provider.PruneOptions{KeepLast: 1})
		if err != nil || res.InstancesProcessed != 2 || res.ExecutionsDeleted != 6 {
			h.Fatalf("bulk prune = %+v, %v; want 2 instances, 6 executions", res, err)
		}
		mgCheckExecutions(h, ids[0], 4)
		mgCheckExecutions(h, ids[1], 4)
		mgCheckExecutions(h, ids[2], 1, 2, 3, 4)
	}),
	mgTest("test_prune_safety", func(h *H) {
		h.Serve(mgCountdown("ContinueOrch", 2, nil))
		for _, tc := range []struct {
			id   string
			opts provider.PruneOptions
		}{
			{"prune-safety", provider.PruneOptions{KeepLast: 0}},
			// Empty options prune every historical execution.
			{"prune-safety-empty", provider.PruneOptions{}},
		} {
			h.Start("ContinueOrch", tc.id, 0)
			h.Completed(tc.id)
			current := mgInfo(h, tc.id).CurrentExecutionID
			if _, err := h.Client.PruneExecutions(h.Ctx(), tc.id, tc.opts); err != nil {
				h.Fatalf("prune %s: %v", tc.id, err)
			}
			mgCheckExecutions(h, tc.id, current)
		}
	}),
	mgTest("test_prune_during_active_continue_as_new", func(h *H) {
		const id = "prune-active"
		reached3 := make(chan struct{})
		var once sync.Once
		release := make(chan struct{})
		// The original sleeps in every activity to leave time for the
		// prune; here execution 4's activity (input 3) holds until the
		// prune is done, so the prune always meets a running execution.
		h.Serve(
			durable.NewActivity("SlowActivity", func(ctx context.Context, n int) (string, error) {
				if n == 3 {
					once.Do(func() { close(reached3) })
					select {
					case <-release:
					case <-ctx.Done():
						return "", context.Cause(ctx)
					}
				}
				return fmt.Sprintf("exec-%d", n), nil
			}),
			mgCountdown("ActiveContinueOrch", 5, func(ctx *durable.OrchestrationContext, n int) error {
				_, err := durable.CallActivity[string](ctx, "SlowActivity", n).Get(ctx)
				return err
			}),
		)
		h.Start("ActiveContinueOrch", id, 0)
		select {
		case <-reached3:
		case <-h.Ctx().Done():
			h.Fatal("the orchestration never reached execution 4")
		}
		res, err := h.Client.PruneExecutions(h.Ctx(), id, provider.PruneOptions{KeepLast: 1})
		if err != nil || res.InstancesProcessed != 1 || res.ExecutionsDeleted != 3 {
			h.Fatalf("prune keeping 1 = %+v, %v; want executions 1-3 deleted", res, err)
		}
		if info := mgInfo(h, id); info.Status != provider.StatusRunning || info.CurrentExecutionID != 4 {
			h.Errorf("after the prune: %+v; want execution 4 running", info)
		}
		mgCheckExecutions(h, id, 4)
		close(release)
		if out := h.Completed(id); out != mgJSON("Final: 5") {
			h.Fatalf("output %s", out)
		}
		if info := mgInfo(h, id); info.Status != provider.StatusCompleted || info.Output == nil || !strings.Contains(*info.Output, "Final: 5") {
			h.Errorf("final InstanceInfo %+v", info)
		}
	}),
	mgTest("test_prune_bulk_includes_running_instances", func(h *H) {
		const id = "bulk-prune-running"
		h.Serve(
			durable.NewActivity("SignalExecution", func(_ context.Context, n int) (string, error) {
				return fmt.Sprintf("exec-%d", n), nil
			}),
			mgCountdown("LongRunningWithContinueAsNew", 10, func(ctx *durable.OrchestrationContext, n int) error {
				if _, err := durable.CallActivity[string](ctx, "SignalExecution", n).Get(ctx); err != nil {
					return err
				}
				if n == 5 {
					// Execution 6 waits here, running, with five older
					// executions behind it.
					_, err := durable.WaitForEvent[string](ctx, "proceed").Get(ctx)
					return err
				}
				return nil
			}),
		)
		h.Start("LongRunningWithContinueAsNew", id, 0)
		h.WaitFor("execution 6 waiting for proceed", func() bool {
			hist := h.history(id)
			return len(hist) > 0 && hist[0].ExecutionID == 6 && Count(hist, "ExternalSubscribed") == 1
		})
		if info := mgInfo(h, id); info.Status != provider.StatusRunning {
			h.Fatalf("before the prune: %+v; want running", info)
		}
		mgCheckExecutions(h, id, 1, 2, 3, 4, 5, 6)
		mgWaitInstances(h, id)
		res, err := h.Client.PruneExecutionsBulk(h.Ctx(), provider.InstanceFilter{Limit: 100}, provider.PruneOptions{KeepLast: 2})
		if err != nil || res.InstancesProcessed != 1 || res.ExecutionsDeleted != 4 {
			h.Fatalf("bulk prune = %+v, %v; want the running instance's executions 1-4 deleted", res, err)
		}
		info := mgInfo(h, id)
		if info.Status != provider.StatusRunning || info.CurrentExecutionID != 6 {
			h.Errorf("after the prune: %+v; want execution 6 running", info)
		}
		mgCheckExecutions(h, id, 5, 6)
		if err := h.Client.RaiseEvent(h.Ctx(), id, "proceed", "go!"); err != nil {
			h.Fatal(err)
		}
		if out := h.Completed(id); out != mgJSON("Final: 10") {
			h.Fatalf("output %s", out)
		}
		if info := mgInfo(h, id); info.Status != provider.StatusCompleted || info.Output == nil || !strings.Contains(*info.Output, "Final: 10") {
			h.Errorf("final InstanceInfo %+v", info)
		}
	}),
}

// mgAdmin returns the management capability of the client's provider,
// skipping the test when there is none.
func mgAdmin(h *H) provider.Admin {
	h.Helper()
	a, ok := provider.AdminOf(h.Client.Provider())
	if !ok {
		h.Skip("the provider has no management capability")
	}
	return a
}

// mgTest is a management test: skipped on providers without management.
func mgTest(name string, run func(h *H)) Test {
	return Test{Name: name, Run: func(h *H) {
		mgAdmin(h)
		run(h)
	}}
}

// mgSameSet reports whether got and want hold the same ids.
func mgSameSet(got, want []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

// mgWaitInstances waits until ListInstances returns exactly ids.
func mgWaitInstances(h *H, ids ...string) {
	h.Helper()
	eventually(h, fmt.Sprintf("instances %v", ids), func() (bool, string) {
		got, err := h.Client.ListInstances(h.Ctx())
		return err == nil && mgSameSet(got, ids), fmt.Sprintf("%v, %v", got, err)
	})
}

// mgWaitStatusList waits until ListInstancesByStatus(status) returns
// exactly ids.
func mgWaitStatusList(h *H, status string, ids ...string) {
	h.Helper()
	eventually(h, fmt.Sprintf("%s instances %v", status, ids), func() (bool, string) {
		got, err := h.Client.ListInstancesByStatus(h.Ctx(), status)
		return err == nil && mgSameSet(got, ids), fmt.Sprintf("%v, %v", got, err)
	})
}

// mgWaitMetrics waits until the system metrics satisfy ok.
func mgWaitMetrics(h *H, what string, ok func(provider.SystemMetrics) bool) {
	h.Helper()
	eventually(h, "metrics: "+what, func() (bool, string) {
		m, err := h.Client.SystemMetrics(h.Ctx())
		return err == nil && ok(m), fmt.Sprintf("%+v, %v", m, err)
	})
}

// mgWaitTree waits until root's tree has size instances and returns it.
func mgWaitTree(h *H, root string, size int) provider.InstanceTree {
	h.Helper()
	var tree provider.InstanceTree
	eventually(h, fmt.Sprintf("a tree of %d under %s", size, root), func() (bool, string) {
		t, err := h.Client.InstanceTree(h.Ctx(), root)
		tree = t
		return err == nil && t.Size() == size, fmt.Sprintf("%+v, %v", t, err)
	})
	return tree
}

// mgChildren returns the direct children of id.
func mgChildren(h *H, a provider.Admin, id string) []string {
	h.Helper()
	children, err := a.ListChildren(h.Ctx(), id)
	if err != nil {
		h.Fatalf("ListChildren(%s): %v", id, err)
	}
	return children
}

// mgBulkDeleteUntilGone calls DeleteInstanceBulk with filter until every
// one of ids is gone and returns each call's result. A provider whose
// instance listing lags may select, in one call, fewer instances than are
// there (or ones already deleted); calling again finishes the job, and the
// results still add up to what was deleted.
func mgBulkDeleteUntilGone(h *H, filter provider.InstanceFilter, ids ...string) []provider.DeleteInstanceResult {
	h.Helper()
	var results []provider.DeleteInstanceResult
	eventually(h, fmt.Sprintf("bulk delete of %v", ids), func() (bool, string) {
		res, err := h.Client.DeleteInstanceBulk(h.Ctx(), filter)
		if err != nil {
			h.Fatalf("DeleteInstanceBulk(%+v): %v", filter, err)
		}
		results = append(results, res)
		for _, id := range ids {
			if _, err := h.Client.InstanceInfo(h.Ctx(), id); !errors.Is(err, provider.ErrNotFound) {
				return false, fmt.Sprintf("%s still there (%v); results %+v", id, err, results)
			}
		}
		return true, ""
	})
	return results
}

// mgDeleted sums the instances deleted.
func mgDeleted(results []provider.DeleteInstanceResult) uint64 {
	var n uint64
	for _, r := range results {
		n += r.InstancesDeleted
	}
	return n
}

// mgInfo returns id's instance info, failing the test on error.
func mgInfo(h *H, id string) *provider.InstanceInfo {
	h.Helper()
	info, err := h.Client.InstanceInfo(h.Ctx(), id)
	if err != nil {
		h.Fatalf("InstanceInfo(%s): %v", id, err)
	}
	return info
}

// mgGone checks that id no longer exists.
func mgGone(h *H, id string) {
	h.Helper()
	if info, err := h.Client.InstanceInfo(h.Ctx(), id); !errors.Is(err, provider.ErrNotFound) {
		h.Errorf("InstanceInfo(%s) = %+v, %v; want not found", id, info, err)
	}
	if hist, err := h.Client.History(h.Ctx(), id, 0); err != nil || len(hist) != 0 {
		h.Errorf("History(%s) = %v, %v; want empty", id, EventTypes(hist), err)
	}
}

// mgDelete deletes id, failing the test on error.
func mgDelete(h *H, id string, force bool) provider.DeleteInstanceResult {
	h.Helper()
	res, err := h.Client.DeleteInstance(h.Ctx(), id, force)
	if err != nil {
		h.Fatalf("DeleteInstance(%s, force %v): %v", id, force, err)
	}
	return res
}

// mgHistory returns one execution's history through the client.
func mgHistory(h *H, id string, exec uint64) []provider.Event {
	h.Helper()
	hist, err := h.Client.History(h.Ctx(), id, exec)
	if err != nil {
		h.Fatalf("History(%s, %d): %v", id, exec, err)
	}
	return hist
}

// mgCheckExecutions checks id's execution ids.
func mgCheckExecutions(h *H, id string, want ...uint64) {
	h.Helper()
	got, err := h.Client.ListExecutions(h.Ctx(), id)
	if err != nil || !slices.Equal(got, want) {
		h.Errorf("ListExecutions(%s) = %v, %v; want %v", id, got, err, want)
	}
}

// mgJSON returns s encoded as a JSON string: the wire form of a typed
// string result.
func mgJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mgProcessActivity is an activity returning "Processed: " + its input.
func mgProcessActivity(name string) durable.Definition {
	return mgProcessActivityWith(name, "Processed: ")
}

// mgProcessActivityWith is an activity returning prefix + its input.
func mgProcessActivityWith(name, prefix string) durable.Definition {
	return durable.NewActivity(name, func(_ context.Context, in string) (string, error) { return prefix + in, nil })
}

// mgFailActivity is an activity that always fails.
func mgFailActivity(name string) durable.Definition {
	return durable.NewActivity(name, func(context.Context, string) (string, error) {
		return "", errors.New("Intentional failure")
	})
}

// mgCallOrch is an orchestration returning its activity's result for its
// input.
func mgCallOrch(name, activity string) durable.Definition {
	return durable.NewOrchestration(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, activity, in).Get(ctx)
	})
}

// mgCallOrchConst is an orchestration that calls its activity with "" and
// returns out.
func mgCallOrchConst(name, activity, out string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[durable.Raw](ctx, activity, durable.Raw("")).Get(ctx); err != nil {
			return "", err
		}
		return out, nil
	})
}

// mgEcho is an orchestration returning its input.
func mgEcho(name string) durable.Definition {
	return durable.OrchestrationFunc(name, func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil })
}

// mgConstOrch is an orchestration returning out.
func mgConstOrch(name, out string) durable.Definition {
	return durable.OrchestrationFunc(name, func(*durable.OrchestrationContext, string) (string, error) { return out, nil })
}

// mgWaitOrch is an orchestration waiting for an event that never comes.
func mgWaitOrch(name, event string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := durable.WaitForEvent[durable.Raw](ctx, event).Get(ctx)
		return "done", err
	})
}

// mgSubOrch is an orchestration that runs child (auto id) and returns out.
func mgSubOrch(name, child, out string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallSubOrchestration[durable.Raw](ctx, child, durable.Raw("")).Get(ctx); err != nil {
			return "", err
		}
		return out, nil
	})
}

// mgTwoChildrenParent runs two children of child in parallel.
func mgTwoChildrenParent(name, child string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		c1 := durable.CallSubOrchestration[durable.Raw](ctx, child, durable.Raw("child1"))
		c2 := durable.CallSubOrchestration[durable.Raw](ctx, child, durable.Raw("child2"))
		_, err := durable.AwaitAll(ctx, c1, c2)
		return "done", err
	})
}

// mgCountdown is an orchestration that, with input n, runs step (if any),
// then continues as new with n+1 while n < last, and returns "Final: n".
func mgCountdown(name string, last int, step func(*durable.OrchestrationContext, int) error) durable.Definition {
	return durable.NewOrchestration(name, func(ctx *durable.OrchestrationContext, n int) (string, error) {
		if step != nil {
			if err := step(ctx, n); err != nil {
				return "", err
			}
		}
		if n < last {
			return "", ctx.ContinueAsNew(n + 1)
		}
		return fmt.Sprintf("Final: %d", n), nil
	})
}
