package runtimetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// Tags: tagged activities run only on workers whose tag filter accepts
// them (the end-to-end tests of tag_serde_tests.rs; its serde tests are in
// provider), and activity routing across a restart
// (activity_routing_tests.rs).
var tagTests = []Test{
	{"e2e_tagged_activity_runs_on_matching_worker", e2eTaggedActivityRunsOnMatchingWorker},
	{"e2e_with_tag_persists_tag_in_event_history", e2eWithTagPersistsTagInEventHistory},
	{"e2e_tagged_activity_starvation_times_out", e2eTaggedActivityStarvationTimesOut},
	{"e2e_oversized_tag_fails_orchestration", e2eOversizedTagFailsOrchestration},
	{"e2e_tag_at_boundary_succeeds", e2eTagAtBoundarySucceeds},
	{"e2e_activity_context_tag_visible_in_handler", e2eActivityContextTagVisibleInHandler},
	{"e2e_activity_context_tag_none_for_untagged", e2eActivityContextTagNoneForUntagged},
	{"e2e_tag_routing_survives_continue_as_new", e2eTagRoutingSurvivesContinueAsNew},
	{"e2e_two_workers_different_tags_no_overlap", e2eTwoWorkersDifferentTagsNoOverlap},
	{"e2e_dropped_tagged_future_triggers_cancellation", e2eDroppedTaggedFutureTriggersCancellation},
	{"same_activity_name_and_input_routes_correctly_across_restart", sameActivityNameAndInputRoutesCorrectlyAcrossRestart},
}

// tagFilter sets the worker tag filter built by mk.
func tagFilter(h *H, mk func() (provider.TagFilter, error)) func(*durable.Options) {
	h.Helper()
	f, err := mk()
	if err != nil {
		h.Fatalf("tag filter: %v", err)
	}
	return func(o *durable.Options) { o.WorkerTags = f }
}

func onlyGPU() (provider.TagFilter, error)       { return provider.OnlyTags("gpu") }
func defaultAndGPU() (provider.TagFilter, error) { return provider.DefaultAndTags("gpu") }
func anyTag() (provider.TagFilter, error)        { return provider.AnyTag(), nil }
func defaultTags() (provider.TagFilter, error)   { return provider.DefaultOnlyTags(), nil }

// tagRun starts orch as id and returns its output.
func tagRun(h *H, orch, id, in string) string {
	h.Helper()
	h.Start(orch, id, durable.Raw(in))
	return h.Completed(id)
}

// raceTimer races f against a timer of d; it reports whether f won and
// f's result.
func raceTimer(ctx *durable.OrchestrationContext, f durable.Future[durable.Raw], d time.Duration) (bool, string, error) {
	if durable.Race(ctx, f, ctx.CreateTimer(d)) != 0 {
		return false, "", nil
	}
	r, err := f.Get(ctx)
	return true, string(r), err
}

func e2eTaggedActivityRunsOnMatchingWorker(h *H) {
	h.Runtime(h.Registry(sessPrefix("Compute", "computed:"),
		durable.OrchestrationFunc("TagTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			gpu, err := relCall(ctx, "Compute", "gpu-work", durable.WithTag("gpu"))
			if err != nil {
				return "", err
			}
			status := "untagged_timed_out"
			won, _, err := raceTimer(ctx, durable.CallActivity[durable.Raw](ctx, "Compute", durable.Raw("default-work")), 300*time.Millisecond)
			switch {
			case won && err == nil:
				status = "untagged_completed"
			case won:
				status = "untagged_error"
			}
			return gpu + "|" + status, nil
		})), tagFilter(h, onlyGPU))
	if out := tagRun(h, "TagTest", "tag-e2e-1", ""); out != "computed:gpu-work|untagged_timed_out" {
		h.Errorf("output %q", out)
	}
}

func e2eWithTagPersistsTagInEventHistory(h *H) {
	h.Runtime(h.Registry(sessPrefix("GpuTask", "gpu:"),
		durable.OrchestrationFunc("GpuOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relCall(ctx, "GpuTask", "frame1", durable.WithTag("gpu"))
		})), tagFilter(h, defaultAndGPU))
	if out := tagRun(h, "GpuOrch", "tag-e2e-2", ""); out != "gpu:frame1" {
		h.Errorf("output %q", out)
	}
	found := false
	for _, ev := range h.History("tag-e2e-2") {
		if k, ok := ev.Kind.(provider.ActivityScheduled); ok && k.Tag != nil && *k.Tag == "gpu" {
			found = true
		}
	}
	if !found {
		h.Errorf("no ActivityScheduled with tag gpu in %v", EventTypes(h.History("tag-e2e-2")))
	}
}

func e2eTaggedActivityStarvationTimesOut(h *H) {
	h.Runtime(h.Registry(sessPrefix("GpuRender", "rendered:"),
		durable.OrchestrationFunc("StarvationTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			won, r, err := raceTimer(ctx, durable.CallActivity[durable.Raw](ctx, "GpuRender", durable.Raw("frame1"), durable.WithTag("gpu")), 300*time.Millisecond)
			switch {
			case !won:
				return "timeout:no_gpu_worker", nil
			case err != nil:
				return "", err
			}
			return "completed:" + r, nil
		})), tagFilter(h, defaultTags))
	if out := tagRun(h, "StarvationTest", "starvation-1", ""); out != "timeout:no_gpu_worker" {
		h.Errorf("output %q", out)
	}
}

func tagSizeOrch(name, tag string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return relCall(ctx, "Work", "data", durable.WithTag(tag))
	})
}

func e2eOversizedTagFailsOrchestration(h *H) {
	h.Runtime(h.Registry(sessPrefix("Work", "done:"), tagSizeOrch("OversizedTagTest", strings.Repeat("x", replay.MaxTagBytes+1))), tagFilter(h, anyTag))
	h.Start("OversizedTagTest", "oversized-1", durable.Raw(""))
	msg := h.Failed("oversized-1").DisplayMessage()
	if !strings.Contains(msg, "tag size") || !strings.Contains(msg, "exceeds limit") {
		h.Errorf("failure %q; want the tag size limit", msg)
	}
}

func e2eTagAtBoundarySucceeds(h *H) {
	h.Runtime(h.Registry(sessPrefix("Work", "done:"), tagSizeOrch("BoundaryTagTest", strings.Repeat("x", replay.MaxTagBytes))), tagFilter(h, anyTag))
	if out := tagRun(h, "BoundaryTagTest", "boundary-1", ""); out != "done:data" {
		h.Errorf("output %q", out)
	}
}

func echoTag() durable.Definition {
	return durable.ActivityFunc("EchoTag", func(ctx context.Context, in string) (string, error) {
		if info, ok := durable.ActivityInfoFrom(ctx); ok && info.Tag != nil {
			return *info.Tag, nil
		}
		return "none", nil
	})
}

func e2eActivityContextTagVisibleInHandler(h *H) {
	h.Runtime(h.Registry(echoTag(), durable.OrchestrationFunc("EchoTagOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return relCall(ctx, "EchoTag", "", durable.WithTag("gpu"))
	})), tagFilter(h, defaultAndGPU))
	if out := tagRun(h, "EchoTagOrch", "echo-tag-1", ""); out != "gpu" {
		h.Errorf("output %q; want gpu", out)
	}
}

func e2eActivityContextTagNoneForUntagged(h *H) {
	h.Serve(echoTag(), durable.OrchestrationFunc("EchoTagOrchDefault", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return relCall(ctx, "EchoTag", "")
	}))
	if out := tagRun(h, "EchoTagOrchDefault", "echo-tag-2", ""); out != "none" {
		h.Errorf("output %q; want none", out)
	}
}

func e2eTagRoutingSurvivesContinueAsNew(h *H) {
	h.Runtime(h.Registry(sessPrefix("GpuWork", "gpu:"),
		durable.OrchestrationFunc("CanTagOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if in != "1" {
				return "", ctx.ContinueAsNew(durable.Raw("1"))
			}
			return relCall(ctx, "GpuWork", "iter"+in, durable.WithTag("gpu"))
		})), tagFilter(h, defaultAndGPU))
	if out := tagRun(h, "CanTagOrch", "can-tag-1", "0"); out != "gpu:iter1" {
		h.Errorf("output %q", out)
	}
}

func e2eTwoWorkersDifferentTagsNoOverlap(h *H) {
	var cpuWorker, gpuWorker atomic.Int32
	reg := func(counter *atomic.Int32) *durable.Registry {
		return h.Registry(
			durable.ActivityFunc("Work", func(ctx context.Context, in string) (string, error) {
				counter.Add(1)
				return "done:" + in, nil
			}),
			durable.OrchestrationFunc("TwoPoolOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				cpu, err := relCall(ctx, "Work", "cpu")
				if err != nil {
					return "", err
				}
				gpu, err := relCall(ctx, "Work", "gpu", durable.WithTag("gpu"))
				return cpu + "|" + gpu, err
			}))
	}
	h.Runtime(reg(&cpuWorker), tagFilter(h, defaultTags))
	// The original's orchestration_concurrency 0 means no orchestration
	// slots; duradyn reads 0 as the default, so the GPU runtime's
	// registry simply serves the same code.
	h.Runtime(reg(&gpuWorker), tagFilter(h, onlyGPU))
	if out := tagRun(h, "TwoPoolOrch", "two-pool-1", ""); out != "done:cpu|done:gpu" {
		h.Errorf("output %q", out)
	}
	if cpuWorker.Load() != 1 || gpuWorker.Load() != 1 {
		h.Errorf("untagged worker ran %d, gpu worker %d; want 1 each", cpuWorker.Load(), gpuWorker.Load())
	}
}

// The losing tagged activity is cancelled on its worker: its lock renewal
// fails and its context ends (the original's activity sleeps 60 s; this
// one waits for the cancellation and reports it).
func e2eDroppedTaggedFutureTriggersCancellation(h *H) {
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	h.Runtime(h.Registry(
		durable.ActivityFunc("SlowGpu", func(ctx context.Context, in string) (string, error) {
			started <- struct{}{}
			info, _ := durable.ActivityInfoFrom(ctx)
			if err := durable.ClientFrom(ctx).RaiseEvent(ctx, info.Instance, "running", durable.Raw("")); err != nil {
				return "", err
			}
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return "should_not_reach", nil
		}),
		durable.OrchestrationFunc("CancelTagOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			gpu := durable.CallActivity[durable.Raw](ctx, "SlowGpu", durable.Raw("data"), durable.WithTag("gpu"))
			// The race starts once the activity runs, so the cancellation
			// reaches a running activity.
			if _, err := durable.WaitForEvent[durable.Raw](ctx, "running").Get(ctx); err != nil {
				return "", err
			}
			won, r, err := raceTimer(ctx, gpu, 200*time.Millisecond)
			switch {
			case !won:
				return "timeout_won", nil
			case err != nil:
				return "", err
			}
			return "gpu_won:" + r, nil
		})), tagFilter(h, defaultAndGPU), func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
	})
	h.Start("CancelTagOrch", "cancel-tag-1", durable.Raw(""))
	if out := h.Completed("cancel-tag-1"); out != "timeout_won" {
		h.Errorf("output %q", out)
	}
	relAwait(h, "the activity to start", started)
	select {
	case cause := <-cancelled:
		if !errors.Is(cause, durable.ErrActivityCancelled) {
			h.Errorf("activity cancelled with %v; want ErrActivityCancelled", cause)
		}
	case <-h.Ctx().Done():
		h.Fatalf("the losing activity was never cancelled")
	}
	if n := Count(h.History("cancel-tag-1"), "ActivityCancelRequested"); n != 1 {
		h.Errorf("%d ActivityCancelRequested; want 1", n)
	}
}

// The second call has the same name and input as the first; after a
// restart between them, each completion still goes to its own schedule.
func sameActivityNameAndInputRoutesCorrectlyAcrossRestart(h *H) {
	var counter atomic.Int32
	defs := func() *durable.Registry {
		return h.Registry(
			durable.ActivityFunc("Task", func(ctx context.Context, in string) (string, error) {
				return "R" + string(rune('0'+counter.Add(1))), nil
			}),
			durable.OrchestrationFunc("SameActivityTwice", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				r1, err := relCall(ctx, "Task", "same")
				if err != nil {
					return "", err
				}
				if err := ctx.Sleep(time.Second); err != nil {
					return "", err
				}
				r2, err := relCall(ctx, "Task", "same")
				return r1 + "," + r2, err
			}))
	}
	rt1 := h.Runtime(defs())
	const id = "inst-same-activity"
	h.Start("SameActivityTwice", id, durable.Raw(""))
	h.WaitFor("R1 and the timer", func() bool {
		hist := h.history(id)
		r1 := false
		for _, ev := range hist {
			if k, ok := ev.Kind.(provider.ActivityCompleted); ok && k.Result == "R1" {
				r1 = true
			}
		}
		return r1 && hasEvent(hist, "TimerCreated")
	})
	if n := counter.Load(); n != 1 {
		h.Fatalf("activity ran %d times before the restart; want 1", n)
	}
	relShutdown(h, rt1)
	h.Runtime(defs())
	if out := h.Completed(id); out != "R1,R2" {
		h.Errorf("output %q; want R1,R2", out)
	}
	if n := counter.Load(); n != 2 {
		h.Errorf("activity ran %d times; want 2", n)
	}
}
