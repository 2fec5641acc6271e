package runtimetest

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

var statusTests = []Test{
	{Name: "test_status_not_found", Run: func(h *H) {
		if st := statusOf(h, "nonexistent-instance"); st.State != durable.StateNotFound {
			h.Fatalf("status %v, want NotFound", st.State)
		}
	}},
	{Name: "test_status_running", Run: func(h *H) {
		const id = "test-running"
		h.Serve(durable.ActivityFunc("BlockForever", blockUntilCancelled), activityOrch("RunningOrch", "BlockForever"))
		h.Start("RunningOrch", id, durable.Raw(""))
		// duroxide's test sleeps 500 ms; the activity being scheduled shows the
		// orchestration started and is waiting on it.
		h.AwaitEvent(id, "ActivityScheduled")
		if st := statusOf(h, id); st.State != durable.StateRunning {
			h.Fatalf("status %v, want Running", st.State)
		}
	}},
	{Name: "test_status_completed", Run: func(h *H) {
		const id = "test-completed"
		h.Serve(
			durable.ActivityFunc("ReturnValue", func(_ context.Context, in string) (string, error) { return "result: " + in, nil }),
			activityOrch("CompletedOrch", "ReturnValue"),
		)
		h.Start("CompletedOrch", id, durable.Raw("test-input"))
		if out := h.Completed(id); out != "result: test-input" {
			h.Fatalf("output %q", out)
		}
		if st := statusOf(h, id); st.State != durable.StateCompleted || st.Output != "result: test-input" {
			h.Fatalf("status %v %q on re-check, want Completed", st.State, st.Output)
		}
	}},
	{Name: "test_status_failed", Run: func(h *H) {
		const id = "test-failed"
		h.Serve(
			durable.ActivityFunc("FailActivity", func(context.Context, string) (string, error) { return "", errors.New("intentional failure") }),
			activityOrch("FailedOrch", "FailActivity"),
		)
		h.Start("FailedOrch", id, durable.Raw(""))
		if app := appDetails(h, h.Failed(id)); app.Kind.Code != provider.AppOrchestrationFailed || app.Message != "intentional failure" {
			h.Fatalf("failure %+v", app)
		}
		checkAppFailure(h, id, provider.AppOrchestrationFailed, "intentional failure")
	}},
	{Name: "test_status_after_continue_as_new", Run: func(h *H) {
		const id = "test-continue"
		h.Serve(durable.OrchestrationFunc("ContinueAsNewOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			n, _ := strconv.Atoi(in)
			if n < 2 {
				return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
			}
			return "done: " + strconv.Itoa(n), nil
		}))
		h.Start("ContinueAsNewOrch", id, durable.Raw("0"))
		// Intermediate executions report Running; the final one Completed.
		h.WaitFor("the final execution to complete", func() bool {
			st := statusOf(h, id)
			if st.State == durable.StateFailed {
				h.Fatalf("failed: %s", st.Failure.DisplayMessage())
			}
			return st.State == durable.StateCompleted && st.Output == "done: 2"
		})
		if st := statusOf(h, id); st.ExecutionID != 3 {
			h.Errorf("status execution %d, want 3", st.ExecutionID)
		}
		started := ofKind[provider.OrchestrationStarted](h.History(id))
		if len(started) != 1 || started[0].Kind.(provider.OrchestrationStarted).Input != "2" {
			h.Fatalf("current history starts %+v, want the final execution (input 2)", started)
		}
	}},
	{Name: "test_status_cancelled", Run: func(h *H) {
		const id = "test-cancelled"
		h.Serve(durable.ActivityFunc("LongTask", blockUntilCancelled), activityOrch("CancellableOrch", "LongTask"))
		h.Start("CancellableOrch", id, durable.Raw(""))
		h.AwaitEvent(id, "ActivityScheduled")
		if err := h.Client.CancelInstance(h.Ctx(), id, "test requested cancellation"); err != nil {
			h.Fatal(err)
		}
		app := appDetails(h, h.Failed(id))
		if app.Kind.Code != provider.AppCancelled || !strings.Contains(app.Kind.Reason, "test requested cancellation") {
			h.Fatalf("failure %+v, want Cancelled with the reason", app)
		}
	}},
	{Name: "test_status_lifecycle_transitions", Run: func(h *H) {
		// duroxide's test checks Running 50 ms after the start while a 200 ms
		// activity runs; here the activity runs until the test releases it.
		const id = "test-lifecycle"
		release := make(chan struct{})
		h.Serve(
			durable.ActivityFunc("QuickTask", func(ctx context.Context, _ string) (string, error) {
				select {
				case <-release:
					return "quick", nil
				case <-ctx.Done():
					return "", context.Cause(ctx)
				}
			}),
			activityOrch("LifecycleOrch", "QuickTask"),
		)
		if st := statusOf(h, id); st.State != durable.StateNotFound {
			h.Fatalf("status before start %v, want NotFound", st.State)
		}
		h.Start("LifecycleOrch", id, durable.Raw(""))
		h.AwaitEvent(id, "ActivityScheduled")
		if st := statusOf(h, id); st.State != durable.StateRunning {
			h.Fatalf("status after start %v, want Running", st.State)
		}
		close(release)
		if out := h.Completed(id); out != "quick" {
			h.Fatalf("output %q", out)
		}
		if st := statusOf(h, id); st.State != durable.StateCompleted {
			h.Fatalf("status on re-check %v, want Completed", st.State)
		}
	}},
	{Name: "test_status_independence", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("SuccessTask", func(context.Context, string) (string, error) { return "success", nil }),
			durable.ActivityFunc("FailTask", func(context.Context, string) (string, error) { return "", errors.New("failed") }),
			activityOrch("SuccessOrch", "SuccessTask"),
			activityOrch("FailOrch", "FailTask"),
		)
		h.Start("SuccessOrch", "inst-success", durable.Raw(""))
		h.Start("FailOrch", "inst-fail", durable.Raw(""))
		if out := h.Completed("inst-success"); out != "success" {
			h.Errorf("inst-success output %q", out)
		}
		if msg := h.Failed("inst-fail").DisplayMessage(); msg != "failed" {
			h.Errorf("inst-fail failure %q", msg)
		}
	}},
}

// statusOf returns id's status, failing the test on error.
func statusOf(h *H, id string) *durable.Status {
	h.Helper()
	st, err := h.Client.Status(h.Ctx(), id)
	if err != nil {
		h.Fatalf("status %s: %v", id, err)
	}
	return st
}

// activityOrch returns the result of activity called with its input.
func activityOrch(name, activity string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		res, err := durable.CallActivity[durable.Raw](ctx, activity, durable.Raw(in)).Get(ctx)
		return string(res), err
	})
}
