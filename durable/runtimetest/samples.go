package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// The samples: the end-to-end examples that show the API, one pattern each.
var samplesTests = []Test{
	{"sample_hello_world_fs", sampleHelloWorld},
	{"sample_basic_control_flow_fs", sampleBasicControlFlow},
	{"sample_loop_fs", sampleLoop},
	{"sample_error_handling_fs", sampleErrorHandling},
	{"sample_timeout_with_timer_race_fs", sampleTimeoutWithTimerRace},
	{"sample_select2_activity_vs_external_fs", sampleSelect2ActivityVsExternal},
	{"dtf_legacy_gabbar_greetings_fs", sampleGabbarGreetings},
	{"sample_system_activities_fs", sampleSystemActivities},
	{"sample_status_polling_fs", sampleStatusPolling},
	{"sample_sub_orchestration_basic_fs", sampleSubOrchestrationBasic},
	{"sample_sub_orchestration_fanout_fs", sampleSubOrchestrationFanout},
	{"sample_sub_orchestration_chained_fs", sampleSubOrchestrationChained},
	{"sample_detached_orchestration_scheduling_fs", sampleDetachedOrchestrationScheduling},
	{"sample_detached_then_activity_fs", sampleDetachedThenActivity},
	{"sample_continue_as_new_fs", sampleContinueAsNew},
	{"sample_typed_activity_and_orchestration_fs", sampleTypedActivityAndOrchestration},
	{"sample_typed_event_fs", sampleTypedEvent},
	{"sample_mixed_string_and_typed_typed_orch_fs", sampleMixedStringAndTypedTypedOrch},
	{"sample_mixed_string_and_typed_string_orch_fs", sampleMixedStringAndTypedStringOrch},
	{"sample_versioning_start_latest_vs_exact_fs", sampleVersioningStartLatestVsExact},
	{"sample_versioning_sub_orchestration_explicit_vs_policy_fs", sampleVersioningSubOrchestrationExplicitVsPolicy},
	{"sample_versioning_continue_as_new_upgrade_fs", sampleVersioningContinueAsNewUpgrade},
	{"sample_cancellation_parent_cascades_to_children_fs", sampleCancellationParentCascadesToChildren},
	{"sample_basic_error_handling_fs", sampleBasicErrorHandling},
	{"sample_nested_function_error_handling_fs", sampleNestedFunctionErrorHandling},
	{"sample_error_recovery_fs", sampleErrorRecovery},
	{"sample_self_pruning_eternal_orchestration", sampleSelfPruningEternalOrchestration},
	{"sample_config_hot_reload_persistent_events_fs", sampleConfigHotReloadPersistentEvents},
	{"sample_heterogeneous_workers_with_tags", sampleHeterogeneousWorkersWithTags},
	{"sample_starvation_safe_tagged_activity", sampleStarvationSafeTaggedActivity},
	{"sample_dual_runtime_tag_cooperation", sampleDualRuntimeTagCooperation},
	{"sample_kv_request_response", sampleKVRequestResponse},
	{"sample_kv_cross_orchestration_read", sampleKVCrossOrchestrationRead},
	{"sample_kv_read_modify_write_counter", sampleKVReadModifyWriteCounter},
	{"sample_orchestration_stats", sampleOrchestrationStats}, // stats.go
}

// Plain-string calls: the samples pass strings verbatim on the wire, as
// duroxide's untyped schedule_* calls do.

func smpUnraw(r durable.Raw) (string, error) { return string(r), nil }

// smpAct schedules activity name with a plain-string input and result.
func smpAct(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) durable.Future[string] {
	return durable.Map(durable.CallActivity[durable.Raw](ctx, name, durable.Raw(in), opts...), smpUnraw)
}

// smpSub schedules sub-orchestration name with a plain-string input and
// result.
func smpSub(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) durable.Future[string] {
	return durable.Map(durable.CallSubOrchestration[durable.Raw](ctx, name, durable.Raw(in), opts...), smpUnraw)
}

// smpWait waits for the external event name's plain-string payload.
func smpWait(ctx *durable.OrchestrationContext, name string) durable.Future[string] {
	return durable.Map(durable.WaitForEvent[durable.Raw](ctx, name), smpUnraw)
}

// smpDequeue dequeues a plain-string message from queue name.
func smpDequeue(ctx *durable.OrchestrationContext, name string) durable.Future[string] {
	return durable.Map(durable.Dequeue[durable.Raw](ctx, name), smpUnraw)
}

// smpBlocking is an activity that runs until it is cancelled (or the runtime
// stops): the sure loser of a race, where duroxide's samples use a long
// sleep.
func smpBlocking(name string) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
}

// smpChildID is the instance id of the child scheduled as inst by parent.
func smpChildID(parent, inst string) string {
	if strings.HasPrefix(inst, "sub::") {
		return parent + "::" + inst
	}
	return inst
}

// smpFirst returns the first event of events with kind K, if any.
func smpFirst[K provider.EventKind](events []provider.Event) (K, int, bool) {
	for i, ev := range events {
		if k, ok := ev.Kind.(K); ok {
			return k, i, true
		}
	}
	var zero K
	return zero, -1, false
}

func (h *H) smpWant(got, want string) {
	h.Helper()
	if got != want {
		h.Fatalf("output %q, want %q", got, want)
	}
}

func sampleHelloWorld(h *H) {
	hello := durable.ActivityFunc("Hello", func(ctx context.Context, in string) (string, error) {
		durable.ActivityLogger(ctx).Info("Hello activity started")
		return "Hello, " + in + "!", nil
	})
	orch := durable.OrchestrationFunc("HelloWorld", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.Logger().Info("hello_world started")
		res, err := smpAct(ctx, "Hello", "Rust").Get(ctx)
		if err != nil {
			return "", err
		}
		ctx.Logger().Info("hello_world result", "res", res)
		return smpAct(ctx, "Hello", in).Get(ctx)
	})
	h.Serve(hello, orch)
	h.Start("HelloWorld", "inst-sample-hello-1", durable.Raw("World"))
	h.smpWant(h.Completed("inst-sample-hello-1"), "Hello, World!")
}

func sampleBasicControlFlow(h *H) {
	h.Serve(
		durable.ActivityFunc("GetFlag", func(context.Context, string) (string, error) { return "yes", nil }),
		durable.ActivityFunc("SayYes", func(context.Context, string) (string, error) { return "picked_yes", nil }),
		durable.ActivityFunc("SayNo", func(context.Context, string) (string, error) { return "picked_no", nil }),
		durable.OrchestrationFunc("ControlFlow", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			flag, err := smpAct(ctx, "GetFlag", "").Get(ctx)
			if err != nil {
				return "", err
			}
			if flag == "yes" {
				return smpAct(ctx, "SayYes", "").Get(ctx)
			}
			return smpAct(ctx, "SayNo", "").Get(ctx)
		}),
	)
	h.Start("ControlFlow", "inst-sample-cflow-1", durable.Raw(""))
	h.smpWant(h.Completed("inst-sample-cflow-1"), "picked_yes")
}

func sampleLoop(h *H) {
	h.Serve(
		durable.ActivityFunc("Append", func(_ context.Context, in string) (string, error) { return in + "x", nil }),
		durable.OrchestrationFunc("LoopOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			acc := "start"
			for i := range 3 {
				var err error
				if acc, err = smpAct(ctx, "Append", acc).Get(ctx); err != nil {
					return "", err
				}
				ctx.Logger().Info("loop iteration completed", "i", i, "acc", acc)
			}
			return acc, nil
		}),
	)
	h.Start("LoopOrchestration", "inst-sample-loop-1", durable.Raw(""))
	h.smpWant(h.Completed("inst-sample-loop-1"), "startxxx")
}

func sampleErrorHandling(h *H) {
	h.Serve(
		durable.ActivityFunc("Fragile", func(_ context.Context, in string) (string, error) {
			if in == "bad" {
				return "", errors.New("boom")
			}
			return "ok", nil
		}),
		durable.ActivityFunc("Recover", func(context.Context, string) (string, error) { return "recovered", nil }),
		durable.OrchestrationFunc("ErrorHandling", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v, err := smpAct(ctx, "Fragile", "bad").Get(ctx)
			if err == nil {
				return v, nil
			}
			ctx.Logger().Warn("fragile failed", "error", err)
			return smpAct(ctx, "Recover", "").Get(ctx)
		}),
	)
	h.Start("ErrorHandling", "inst-sample-err-1", durable.Raw(""))
	h.smpWant(h.Completed("inst-sample-err-1"), "recovered")
}

func sampleTimeoutWithTimerRace(h *H) {
	h.Serve(
		smpBlocking("LongOp"),
		durable.OrchestrationFunc("TimeoutSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			act := smpAct(ctx, "LongOp", "")
			t := ctx.CreateTimer(5 * time.Millisecond)
			if durable.Race(ctx, act, t) == 1 {
				return "", errors.New("timeout")
			}
			return act.Get(ctx)
		}),
	)
	h.Start("TimeoutSample", "inst-timeout-sample", durable.Raw(""))
	if got := h.Failed("inst-timeout-sample").DisplayMessage(); got != "timeout" {
		h.Fatalf("failure %q, want timeout", got)
	}
}

func sampleSelect2ActivityVsExternal(h *H) {
	h.Serve(
		smpBlocking("Sleep"),
		durable.OrchestrationFunc("Select2ActVsEvt", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			act := smpAct(ctx, "Sleep", "")
			evt := smpWait(ctx, "Go")
			if durable.Race(ctx, act, evt) == 0 {
				s, err := act.Get(ctx)
				return "activity:" + s, err
			}
			payload, err := evt.Get(ctx)
			return "event:" + payload, err
		}),
	)
	h.Start("Select2ActVsEvt", "inst-s2-mixed", durable.Raw(""))
	h.AwaitSubscription("inst-s2-mixed", "Go")
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-s2-mixed", "Go", durable.Raw("ok")); err != nil {
		h.Fatal(err)
	}
	// The activity never finishes on its own, so the event wins.
	h.smpWant(h.Completed("inst-s2-mixed"), "event:ok")
}

func sampleGabbarGreetings(h *H) {
	h.Serve(
		durable.ActivityFunc("Greetings", func(_ context.Context, in string) (string, error) { return "Hello, " + in + "!", nil }),
		durable.OrchestrationFunc("Greetings", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			vals, err := durable.AwaitAll(ctx, smpAct(ctx, "Greetings", "Gabbar"), smpAct(ctx, "Greetings", "Samba"))
			if err != nil {
				return "", err
			}
			slices.Sort(vals)
			return vals[0] + ", " + vals[1], nil
		}),
	)
	h.Start("Greetings", "inst-dtf-greetings", durable.Raw(""))
	h.smpWant(h.Completed("inst-dtf-greetings"), "Hello, Gabbar!, Hello, Samba!")
}

var smpGUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func sampleSystemActivities(h *H) {
	h.Serve(durable.OrchestrationFunc("SystemActivities", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		now, err := ctx.UTCNow().Get(ctx)
		if err != nil {
			return "", err
		}
		guid, err := ctx.NewGUID().Get(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("n=%d,g=%s", now.UnixMilli(), guid), nil
	}))
	h.Start("SystemActivities", "inst-system-acts", durable.Raw(""))
	out := h.Completed("inst-system-acts")
	parts := strings.FieldsFunc(out, func(r rune) bool { return r == ',' || r == '=' })
	if len(parts) < 4 || parts[0] != "n" || parts[2] != "g" {
		h.Fatalf("output %q, want n=<ms>,g=<guid>", out)
	}
	if n, err := strconv.ParseUint(parts[1], 10, 64); err != nil || n == 0 {
		h.Fatalf("now %q is not a positive number of ms", parts[1])
	}
	if !smpGUID.MatchString(parts[3]) {
		h.Fatalf("guid %q is not a UUID", parts[3])
	}
}

func sampleStatusPolling(h *H) {
	h.Serve(durable.OrchestrationFunc("StatusSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := ctx.Sleep(20 * time.Millisecond); err != nil {
			return "", err
		}
		return "done", nil
	}))
	h.Start("StatusSample", "inst-status-sample", durable.Raw(""))
	var st *durable.Status
	h.WaitFor("a terminal status", func() bool {
		var err error
		st, err = h.Client.Status(h.Ctx(), "inst-status-sample")
		if err != nil {
			h.Fatalf("status: %v", err)
		}
		return st.State == durable.StateCompleted || st.State == durable.StateFailed
	})
	if st.State != durable.StateCompleted || st.Output != "done" {
		h.Fatalf("status %v %q (%v), want Completed done", st.State, st.Output, st.Failure)
	}
	h.CheckHistory("inst-status-sample")
}

func sampleSubOrchestrationBasic(h *H) {
	h.Serve(
		durable.ActivityFunc("Upper", func(_ context.Context, in string) (string, error) { return strings.ToUpper(in), nil }),
		durable.OrchestrationFunc("ChildUpper", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return smpAct(ctx, "Upper", in).Get(ctx)
		}),
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpSub(ctx, "ChildUpper", in).Get(ctx)
			return "parent:" + r, err
		}),
	)
	h.Start("Parent", "inst-sub-basic", durable.Raw("hi"))
	h.smpWant(h.Completed("inst-sub-basic"), "parent:HI")
}

func sampleSubOrchestrationFanout(h *H) {
	h.Serve(
		durable.ActivityFunc("Add", func(_ context.Context, in string) (string, error) {
			a, b, _ := strings.Cut(in, ",")
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return strconv.Itoa(x + y), nil
		}),
		durable.OrchestrationFunc("ChildSum", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return smpAct(ctx, "Add", in).Get(ctx)
		}),
		durable.OrchestrationFunc("ParentFan", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			outs, err := durable.AwaitAll(ctx, smpSub(ctx, "ChildSum", "1,2"), smpSub(ctx, "ChildSum", "3,4"))
			if err != nil {
				return "", err
			}
			total := 0
			for _, o := range outs {
				n, err := strconv.Atoi(o)
				if err != nil {
					return "", err
				}
				total += n
			}
			return fmt.Sprintf("total=%d", total), nil
		}),
	)
	h.Start("ParentFan", "inst-sub-fan", durable.Raw(""))
	h.smpWant(h.Completed("inst-sub-fan"), "total=10")
}

func sampleSubOrchestrationChained(h *H) {
	h.Serve(
		durable.ActivityFunc("AppendX", func(_ context.Context, in string) (string, error) { return in + "x", nil }),
		durable.OrchestrationFunc("Leaf", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return smpAct(ctx, "AppendX", in).Get(ctx)
		}),
		durable.OrchestrationFunc("Mid", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpSub(ctx, "Leaf", in).Get(ctx)
			return r + "-mid", err
		}),
		durable.OrchestrationFunc("Root", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpSub(ctx, "Mid", in).Get(ctx)
			return "root:" + r, err
		}),
	)
	h.Start("Root", "inst-sub-chain", durable.Raw("a"))
	h.smpWant(h.Completed("inst-sub-chain"), "root:ax-mid")
}

func smpEcho() durable.Definition {
	return durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return in, nil })
}

func sampleDetachedOrchestrationScheduling(h *H) {
	h.Serve(
		smpEcho(),
		durable.OrchestrationFunc("Chained", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if err := ctx.Sleep(5 * time.Millisecond); err != nil {
				return "", err
			}
			return smpAct(ctx, "Echo", in).Get(ctx)
		}),
		durable.OrchestrationFunc("Coordinator", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if err := ctx.StartOrchestration("Chained", "W1", durable.Raw("A")); err != nil {
				return "", err
			}
			if err := ctx.StartOrchestration("Chained", "W2", durable.Raw("B")); err != nil {
				return "", err
			}
			return "scheduled", nil
		}),
	)
	h.Start("Coordinator", "CoordinatorRoot", durable.Raw(""))
	h.smpWant(h.Completed("CoordinatorRoot"), "scheduled")
	// The scheduled instances are plain W1/W2 (no prefixing).
	h.smpWant(h.Completed("W1"), "A")
	h.smpWant(h.Completed("W2"), "B")
}

func sampleDetachedThenActivity(h *H) {
	h.Serve(
		smpEcho(),
		durable.OrchestrationFunc("Child", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if err := ctx.Sleep(5 * time.Millisecond); err != nil {
				return "", err
			}
			return "child-" + in, nil
		}),
		durable.OrchestrationFunc("Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// Fire-and-forget, then an awaited activity: replay must match the
			// recorded OrchestrationChained before the ActivityScheduled.
			if err := ctx.StartOrchestration("Child", "detached-child", durable.Raw("payload")); err != nil {
				return "", err
			}
			return smpAct(ctx, "Echo", "hello").Get(ctx)
		}),
	)
	h.Start("Parent", "ParentInstance", durable.Raw(""))
	h.smpWant(h.Completed("ParentInstance"), "hello")
	h.smpWant(h.Completed("detached-child"), "child-payload")
}

func sampleContinueAsNew(h *H) {
	h.Serve(durable.OrchestrationFunc("CanSample", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			ctx.Logger().Info("CAN sample: continue", "n", n)
			return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(n + 1)))
		}
		return fmt.Sprintf("final:%d", n), nil
	}))
	h.Start("CanSample", "inst-sample-can", durable.Raw("0"))
	h.smpWant(h.Completed("inst-sample-can"), "final:3")
	execs, err := h.Client.ListExecutions(h.Ctx(), "inst-sample-can")
	if err != nil {
		h.Fatal(err)
	}
	if !slices.Equal(execs, []uint64{1, 2, 3, 4}) {
		h.Fatalf("executions %v, want [1 2 3 4]", execs)
	}
}

type smpAddReq struct {
	A int `json:"a"`
	B int `json:"b"`
}

type smpAddRes struct {
	Sum int `json:"sum"`
}

type smpAck struct {
	OK bool `json:"ok"`
}

var smpAdd = durable.NewActivity("Add", func(_ context.Context, req smpAddReq) (smpAddRes, error) {
	return smpAddRes{Sum: req.A + req.B}, nil
})

var smpUpper = durable.ActivityFunc("Upper", func(_ context.Context, in string) (string, error) {
	return strings.ToUpper(in), nil
})

// smpOutput decodes id's JSON output, failing the test unless it completed.
func smpOutput[T any](h *H, id string) T {
	h.Helper()
	var v T
	out := h.Completed(id)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		h.Fatalf("%s: output %q: %v", id, out, err)
	}
	return v
}

func sampleTypedActivityAndOrchestration(h *H) {
	h.Serve(smpAdd, durable.NewOrchestration("Adder", func(ctx *durable.OrchestrationContext, req smpAddReq) (smpAddRes, error) {
		return smpAdd.Call(ctx, req).Get(ctx)
	}))
	h.Start("Adder", "inst-typed-add", smpAddReq{A: 2, B: 3})
	if got := smpOutput[smpAddRes](h, "inst-typed-add"); got != (smpAddRes{Sum: 5}) {
		h.Fatalf("output %+v, want {Sum:5}", got)
	}
}

func sampleTypedEvent(h *H) {
	h.Serve(durable.NewOrchestration("WaitAck", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		ack, err := durable.WaitForEvent[smpAck](ctx, "Ready").Get(ctx)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(ack)
		return string(b), err
	}))
	h.Start("WaitAck", "inst-typed-ack", struct{}{})
	h.AwaitSubscription("inst-typed-ack", "Ready")
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-typed-ack", "Ready", smpAck{OK: true}); err != nil {
		h.Fatal(err)
	}
	if got := smpOutput[string](h, "inst-typed-ack"); got != `{"ok":true}` {
		h.Fatalf("output %q, want {\"ok\":true}", got)
	}
}

// smpRaceTypedAndString races the typed Add activity against the string
// Upper activity, each mapped to a string, and returns the winner's value.
func smpRaceTypedAndString(ctx *durable.OrchestrationContext, req smpAddReq, upper string) (string, error) {
	fTyped := durable.Map(smpAdd.Call(ctx, req), func(r smpAddRes) (string, error) { return fmt.Sprintf("sum=%d", r.Sum), nil })
	fStr := durable.Map(smpAct(ctx, "Upper", upper), func(s string) (string, error) { return "up=" + s, nil })
	if durable.Race(ctx, fTyped, fStr) == 0 {
		return fTyped.Get(ctx)
	}
	return fStr.Get(ctx)
}

func sampleMixedStringAndTypedTypedOrch(h *H) {
	h.Serve(smpAdd, smpUpper, durable.NewOrchestration("MixedTypedOrch", func(ctx *durable.OrchestrationContext, req smpAddReq) (string, error) {
		return smpRaceTypedAndString(ctx, req, "hello")
	}))
	h.Start("MixedTypedOrch", "inst-mixed-typed", smpAddReq{A: 1, B: 2})
	if got := smpOutput[string](h, "inst-mixed-typed"); got != "sum=3" && got != "up=HELLO" {
		h.Fatalf("output %q, want sum=3 or up=HELLO", got)
	}
}

func sampleMixedStringAndTypedStringOrch(h *H) {
	h.Serve(smpAdd, smpUpper, durable.OrchestrationFunc("MixedStringOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return smpRaceTypedAndString(ctx, smpAddReq{A: 5, B: 7}, "race")
	}))
	h.Start("MixedStringOrch", "inst-mixed-string", durable.Raw(""))
	if got := h.Completed("inst-mixed-string"); got != "sum=12" && got != "up=RACE" {
		h.Fatalf("output %q, want sum=12 or up=RACE", got)
	}
}

// smpConst is an orchestration returning out.
func smpConst(name, out string, opts ...durable.Option) durable.Definition {
	return durable.OrchestrationFunc(name, func(*durable.OrchestrationContext, string) (string, error) { return out, nil }, opts...)
}

func sampleVersioningStartLatestVsExact(h *H) {
	reg := h.Registry(smpConst("Versioned", "v1"), smpConst("Versioned", "v2", durable.Version("2.0.0")))
	h.Runtime(reg)
	// The default policy (Latest) runs the highest version.
	h.Start("Versioned", "inst-vers-latest", durable.Raw(""))
	h.smpWant(h.Completed("inst-vers-latest"), "v2")
	// Pinning new starts to 1.0.0 runs v1.
	reg.SetVersionPolicy("Versioned", durable.Exact("1.0.0"))
	h.Start("Versioned", "inst-vers-exact", durable.Raw(""))
	h.smpWant(h.Completed("inst-vers-exact"), "v1")
}

func sampleVersioningSubOrchestrationExplicitVsPolicy(h *H) {
	h.Serve(
		smpConst("Child", "c1"),
		smpConst("Child", "c2", durable.Version("2.0.0")),
		durable.OrchestrationFunc("ParentVers", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			a, err := smpSub(ctx, "Child", "exp", durable.Version("1.0.0")).Get(ctx)
			if err != nil {
				return "", err
			}
			b, err := smpSub(ctx, "Child", "pol").Get(ctx)
			return a + "-" + b, err
		}),
	)
	h.Start("ParentVers", "inst-sub-vers", durable.Raw(""))
	h.smpWant(h.Completed("inst-sub-vers"), "c1-c2")
}

func sampleVersioningContinueAsNewUpgrade(h *H) {
	h.Serve(
		durable.OrchestrationFunc("LongRunner", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			// v1 rolls to a fresh execution, which the default policy runs on v2.
			return "", ctx.ContinueAsNew(durable.Raw("v1:" + in))
		}),
		durable.OrchestrationFunc("LongRunner", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return "upgraded:" + in, nil
		}, durable.Version("2.0.0")),
	)
	h.Start("LongRunner", "inst-can-upgrade", durable.Raw("state"), durable.Version("1.0.0"))
	h.smpWant(h.Completed("inst-can-upgrade"), "upgraded:v1:state")

	execs, err := h.Client.ListExecutions(h.Ctx(), "inst-can-upgrade")
	if err != nil {
		h.Fatal(err)
	}
	if !slices.Equal(execs, []uint64{1, 2}) {
		h.Fatalf("executions %v, want [1 2]", execs)
	}
	e1, err := h.Client.History(h.Ctx(), "inst-can-upgrade", 1)
	if err != nil {
		h.Fatal(err)
	}
	if start, _, _ := smpFirst[provider.OrchestrationStarted](e1); start.Version != "1.0.0" {
		h.Fatalf("execution 1 ran version %q, want 1.0.0", start.Version)
	}
	if _, _, ok := smpFirst[provider.OrchestrationContinuedAsNew](e1); !ok {
		h.Fatalf("execution 1 did not continue as new: %v", EventTypes(e1))
	}
	e2, err := h.Client.History(h.Ctx(), "inst-can-upgrade", 2)
	if err != nil {
		h.Fatal(err)
	}
	if start, _, _ := smpFirst[provider.OrchestrationStarted](e2); start.Input != "v1:state" || start.Version != "2.0.0" {
		h.Fatalf("execution 2 started %+v, want input v1:state on 2.0.0", start)
	}
}

// smpCancelled reports whether events end with a failure cancelled for
// reason.
func smpCancelled(events []provider.Event, reason string) bool {
	for _, ev := range events {
		if f, ok := ev.Kind.(provider.OrchestrationFailed); ok {
			if d, ok := f.Details.(provider.ApplicationDetails); ok && d.Kind.Code == provider.AppCancelled && d.Kind.Reason == reason {
				return true
			}
		}
	}
	return false
}

func sampleCancellationParentCascadesToChildren(h *H) {
	h.Serve(
		durable.OrchestrationFunc("ChildSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, err := smpWait(ctx, "Go").Get(ctx)
			return "done", err
		}),
		durable.OrchestrationFunc("ParentSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if _, err := smpSub(ctx, "ChildSample", "seed").Get(ctx); err != nil {
				return "", err
			}
			return "parent_done", nil
		}),
	)
	const parent = "inst-sample-cancel"
	h.Start("ParentSample", parent, durable.Raw(""))
	// Wait for the child to run (duroxide sleeps 50 ms).
	sched := h.AwaitEvent(parent, "SubOrchestrationScheduled").Kind.(provider.SubOrchestrationScheduled)
	child := smpChildID(parent, sched.Instance)
	h.AwaitEvent(child, "ExternalSubscribed")

	if err := h.Client.CancelInstance(h.Ctx(), parent, "user_request"); err != nil {
		h.Fatal(err)
	}
	f := h.Failed(parent)
	if d, ok := f.(provider.ApplicationDetails); !ok || d.Kind.Code != provider.AppCancelled || d.Kind.Reason != "user_request" {
		h.Fatalf("parent failure %#v, want cancelled: user_request", f)
	}

	instances, err := h.Client.ListInstances(h.Ctx())
	if err != nil {
		h.Fatal(err)
	}
	var children []string
	for _, id := range instances {
		if strings.HasPrefix(id, parent+"::") {
			children = append(children, id)
		}
	}
	if len(children) == 0 {
		h.Fatalf("no child instance of %s among %v", parent, instances)
	}
	for _, c := range children {
		h.WaitFor(c+" cancelled by its parent", func() bool {
			hist := h.history(c)
			_, _, requested := smpFirst[provider.OrchestrationCancelRequested](hist)
			return requested && smpCancelled(hist, "parent canceled")
		})
		h.CheckHistory(c)
	}
}

func smpValidate() durable.Definition {
	return durable.ActivityFunc("ValidateInput", func(_ context.Context, in string) (string, error) {
		if in == "" {
			return "", errors.New("Input cannot be empty")
		}
		return "Valid: " + in, nil
	})
}

func sampleBasicErrorHandling(h *H) {
	h.Serve(smpValidate(), durable.OrchestrationFunc("BasicErrorHandling", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.Logger().Info("Starting validation")
		return smpAct(ctx, "ValidateInput", in).Get(ctx)
	}))
	h.Start("BasicErrorHandling", "inst-basic-error-1", durable.Raw("test"))
	h.smpWant(h.Completed("inst-basic-error-1"), "Valid: test")
	h.Start("BasicErrorHandling", "inst-basic-error-2", durable.Raw(""))
	if msg := h.Failed("inst-basic-error-2").DisplayMessage(); !strings.Contains(msg, "Input cannot be empty") {
		h.Fatalf("failure %q, want Input cannot be empty", msg)
	}
}

func smpProcessData() durable.Definition {
	return durable.ActivityFunc("ProcessData", func(_ context.Context, in string) (string, error) {
		if strings.Contains(in, "error") {
			return "", errors.New("Processing failed")
		}
		return "Processed: " + in, nil
	})
}

// smpProcessAndFormat is the nested function of the error-handling sample:
// its errors propagate to the caller.
func smpProcessAndFormat(ctx *durable.OrchestrationContext, data string) (string, error) {
	processed, err := smpAct(ctx, "ProcessData", data).Get(ctx)
	if err != nil {
		return "", err
	}
	return smpAct(ctx, "FormatOutput", processed).Get(ctx)
}

func sampleNestedFunctionErrorHandling(h *H) {
	h.Serve(
		smpProcessData(),
		durable.ActivityFunc("FormatOutput", func(_ context.Context, in string) (string, error) { return "Final: " + in, nil }),
		durable.OrchestrationFunc("NestedErrorHandling", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return smpProcessAndFormat(ctx, in)
		}),
	)
	h.Start("NestedErrorHandling", "inst-nested-error-1", durable.Raw("test"))
	h.smpWant(h.Completed("inst-nested-error-1"), "Final: Processed: test")
	h.Start("NestedErrorHandling", "inst-nested-error-2", durable.Raw("error"))
	if msg := h.Failed("inst-nested-error-2").DisplayMessage(); !strings.Contains(msg, "Processing failed") {
		h.Fatalf("failure %q, want Processing failed", msg)
	}
}

func sampleErrorRecovery(h *H) {
	h.Serve(
		smpProcessData(),
		durable.ActivityFunc("LogError", func(_ context.Context, in string) (string, error) { return "Logged: " + in, nil }),
		durable.OrchestrationFunc("ErrorRecovery", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			res, err := smpAct(ctx, "ProcessData", in).Get(ctx)
			if err == nil {
				return res, nil
			}
			_, _ = smpAct(ctx, "LogError", err.Error()).Get(ctx)
			return "", fmt.Errorf("Failed to process '%s': %w", in, err)
		}),
	)
	h.Start("ErrorRecovery", "inst-recovery-1", durable.Raw("test"))
	h.smpWant(h.Completed("inst-recovery-1"), "Processed: test")
	h.Start("ErrorRecovery", "inst-recovery-2", durable.Raw("error"))
	msg := h.Failed("inst-recovery-2").DisplayMessage()
	if !strings.Contains(msg, "Failed to process 'error'") || !strings.Contains(msg, "Processing failed") {
		h.Fatalf("failure %q, want the recovery message", msg)
	}
}

func sampleSelfPruningEternalOrchestration(h *H) {
	var prunes, pruned atomic.Uint64
	type state struct {
		BatchNum     int `json:"batch_num"`
		TotalBatches int `json:"total_batches"`
	}
	h.Serve(
		durable.ActivityFunc("ProcessBatch", func(_ context.Context, in string) (string, error) { return "Processed batch " + in, nil }),
		durable.ActivityFunc("PruneSelf", func(ctx context.Context, _ string) (string, error) {
			info, _ := durable.ActivityInfoFrom(ctx)
			// Keep only the current execution.
			res, err := durable.ClientFrom(ctx).PruneExecutions(ctx, info.Instance, provider.PruneOptions{KeepLast: 1})
			if err != nil {
				return "", err
			}
			prunes.Add(1)
			pruned.Add(res.ExecutionsDeleted)
			return fmt.Sprintf("Pruned %d executions", res.ExecutionsDeleted), nil
		}),
		durable.OrchestrationFunc("SelfPruningOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			var st state
			if err := json.Unmarshal([]byte(in), &st); err != nil || st.TotalBatches == 0 {
				st = state{BatchNum: 0, TotalBatches: 5}
			}
			if _, err := smpAct(ctx, "ProcessBatch", strconv.Itoa(st.BatchNum)).Get(ctx); err != nil {
				return "", err
			}
			if _, err := smpAct(ctx, "PruneSelf", "").Get(ctx); err != nil {
				return "", err
			}
			if st.BatchNum >= st.TotalBatches-1 {
				return fmt.Sprintf("Completed %d batches", st.TotalBatches), nil
			}
			next, _ := json.Marshal(state{BatchNum: st.BatchNum + 1, TotalBatches: st.TotalBatches})
			return "", ctx.ContinueAsNew(durable.Raw(next))
		}),
	)
	h.Start("SelfPruningOrch", "inst-self-prune", durable.Raw("{}"))
	if out := h.Completed("inst-self-prune"); !strings.Contains(out, "Completed 5 batches") {
		h.Fatalf("output %q, want Completed 5 batches", out)
	}
	if n := prunes.Load(); n < 4 {
		h.Fatalf("pruned %d times, want at least 4", n)
	}
	if n := pruned.Load(); n < 3 {
		h.Fatalf("pruned %d executions, want at least 3", n)
	}
	execs, err := h.Client.ListExecutions(h.Ctx(), "inst-self-prune")
	if err != nil {
		h.Fatal(err)
	}
	if len(execs) != 1 {
		h.Fatalf("executions %v, want only the final one", execs)
	}
}

func sampleConfigHotReloadPersistentEvents(h *H) {
	const (
		drainTimeout = 50 * time.Millisecond  // duroxide: 100 ms
		cycleWork    = 200 * time.Millisecond // duroxide: 1 s
	)
	h.Serve(
		durable.ActivityFunc("ApplyConfig", func(_ context.Context, in string) (string, error) { return "applied:" + in, nil }),
		durable.OrchestrationFunc("ConfigHotReload", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var log []string
			// drain applies the pending config updates without blocking: a
			// dequeue raced against a short timer.
			drain := func() error {
				for {
					update := smpDequeue(ctx, "ConfigUpdate")
					if durable.Race(ctx, update, ctx.CreateTimer(drainTimeout)) != 0 {
						return nil
					}
					cfg, err := update.Get(ctx)
					if err != nil {
						return err
					}
					res, err := smpAct(ctx, "ApplyConfig", cfg).Get(ctx)
					if err != nil {
						return err
					}
					log = append(log, res)
				}
			}
			for cycle := range 3 {
				if err := drain(); err != nil {
					return "", err
				}
				if err := ctx.Sleep(cycleWork); err != nil {
					return "", err
				}
				if _, err := smpAct(ctx, "ApplyConfig", fmt.Sprintf("cycle_%d", cycle)).Get(ctx); err != nil {
					return "", err
				}
				log = append(log, fmt.Sprintf("cycle:%d", cycle))
			}
			if err := drain(); err != nil {
				return "", err
			}
			return strings.Join(log, ","), nil
		}),
	)
	const id = "inst-hot-reload"
	h.Start("ConfigHotReload", id, durable.Raw(""))
	for _, v := range []string{"v1", "v2"} {
		if err := h.Client.EnqueueEvent(h.Ctx(), id, "ConfigUpdate", durable.Raw(v)); err != nil {
			h.Fatal(err)
		}
	}
	// v3 arrives mid-flight: once cycle 0's work is scheduled.
	h.WaitFor("cycle_0 scheduled", func() bool {
		return slices.ContainsFunc(h.history(id), func(ev provider.Event) bool {
			a, ok := ev.Kind.(provider.ActivityScheduled)
			return ok && a.Input == "cycle_0"
		})
	})
	if err := h.Client.EnqueueEvent(h.Ctx(), id, "ConfigUpdate", durable.Raw("v3")); err != nil {
		h.Fatal(err)
	}
	out := h.Completed(id)
	entries := strings.Split(out, ",")
	pos := func(e string) int {
		i := slices.Index(entries, e)
		if i < 0 {
			h.Fatalf("%s missing from output %q", e, out)
		}
		return i
	}
	v1, v2, v3, c0 := pos("applied:v1"), pos("applied:v2"), pos("applied:v3"), pos("cycle:0")
	if v1 >= v2 || v2 >= v3 {
		h.Fatalf("updates out of FIFO order in %q", out)
	}
	if v3 <= c0 {
		h.Fatalf("v3 arrived mid-flight and should be applied after cycle:0: %q", out)
	}
}

// smpTags lists the tags of the activities scheduled in events.
func smpTags(events []provider.Event) []string {
	var out []string
	for _, ev := range events {
		if a, ok := ev.Kind.(provider.ActivityScheduled); ok {
			tag := "<none>"
			if a.Tag != nil {
				tag = *a.Tag
			}
			out = append(out, a.Name+":"+tag)
		}
	}
	return out
}

// smpWorkerTags returns a function that turns a tag filter constructor's
// result into a runtime option, failing the test on error.
func smpWorkerTags(h *H) func(provider.TagFilter, error) func(*durable.Options) {
	return func(f provider.TagFilter, err error) func(*durable.Options) {
		if err != nil {
			h.Fatal(err)
		}
		return func(o *durable.Options) { o.WorkerTags = f }
	}
}

func sampleHeterogeneousWorkersWithTags(h *H) {
	reg := h.Registry(
		durable.ActivityFunc("Render", func(_ context.Context, in string) (string, error) { return "rendered:" + in, nil }),
		durable.ActivityFunc("Encode", func(_ context.Context, in string) (string, error) { return "encoded:" + in, nil }),
		durable.ActivityFunc("Upload", func(_ context.Context, in string) (string, error) { return "uploaded:" + in, nil }),
		durable.OrchestrationFunc("VideoPipeline", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			rendered, err := smpAct(ctx, "Render", "frame42", durable.WithTag("gpu")).Get(ctx)
			if err != nil {
				return "", err
			}
			encoded, err := smpAct(ctx, "Encode", rendered, durable.WithTag("cpu")).Get(ctx)
			if err != nil {
				return "", err
			}
			return smpAct(ctx, "Upload", encoded).Get(ctx)
		}),
	)
	// One runtime serving untagged, gpu and cpu work.
	h.Runtime(reg, smpWorkerTags(h)(provider.DefaultAndTags("gpu", "cpu")))
	h.Start("VideoPipeline", "video-1", durable.Raw(""))
	h.smpWant(h.Completed("video-1"), "uploaded:encoded:rendered:frame42")
	want := []string{"Render:gpu", "Encode:cpu", "Upload:<none>"}
	if got := smpTags(h.History("video-1")); !slices.Equal(got, want) {
		h.Fatalf("scheduled %v, want %v", got, want)
	}
}

func sampleStarvationSafeTaggedActivity(h *H) {
	reg := h.Registry(
		durable.ActivityFunc("GpuInference", func(_ context.Context, in string) (string, error) { return "inference:" + in, nil }),
		durable.ActivityFunc("CpuFallback", func(_ context.Context, in string) (string, error) { return "cpu_fallback:" + in, nil }),
		durable.OrchestrationFunc("InferenceWithFallback", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			gpu := smpAct(ctx, "GpuInference", in, durable.WithTag("gpu"))
			timeout := ctx.CreateTimer(20 * time.Millisecond) // duroxide: 500 ms
			if durable.Race(ctx, gpu, timeout) == 0 {
				return gpu.Get(ctx)
			}
			// No gpu worker answered in time: fall back to the CPU.
			return smpAct(ctx, "CpuFallback", in).Get(ctx)
		}),
	)
	// Only untagged work is served: no gpu worker exists.
	h.Runtime(reg, func(o *durable.Options) { o.WorkerTags = provider.DefaultOnlyTags() })
	h.Start("InferenceWithFallback", "infer-1", durable.Raw("model-v3"))
	h.smpWant(h.Completed("infer-1"), "cpu_fallback:model-v3")
}

func sampleDualRuntimeTagCooperation(h *H) {
	var ranOn smpSet
	// Each runtime gets its own registry, recording where each activity ran.
	defs := func(rt string) []durable.Definition {
		act := func(name, prefix string) durable.Definition {
			return durable.ActivityFunc(name, func(_ context.Context, in string) (string, error) {
				ranOn.add(name + "@" + rt)
				return prefix + in, nil
			})
		}
		return []durable.Definition{
			act("PreProcess", "preprocessed:"),
			act("GpuTrain", "trained:"),
			act("SaveModel", "saved:"),
			durable.OrchestrationFunc("MLPipeline", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				pre, err := smpAct(ctx, "PreProcess", in).Get(ctx)
				if err != nil {
					return "", err
				}
				model, err := smpAct(ctx, "GpuTrain", pre, durable.WithTag("gpu")).Get(ctx)
				if err != nil {
					return "", err
				}
				return smpAct(ctx, "SaveModel", model).Get(ctx)
			}),
		}
	}
	// Runtime A: orchestrations and untagged work. Runtime B: gpu work only
	// (duradyn has no orchestration-less runtime, so B's orchestration
	// dispatcher runs too; the worker filters decide who runs what).
	h.Runtime(h.Registry(defs("A")...), func(o *durable.Options) { o.WorkerTags = provider.DefaultOnlyTags() })
	h.Runtime(h.Registry(defs("B")...), smpWorkerTags(h)(provider.OnlyTags("gpu")))
	h.Start("MLPipeline", "ml-1", durable.Raw("dataset-v5"))
	h.smpWant(h.Completed("ml-1"), "saved:trained:preprocessed:dataset-v5")
	want := []string{"PreProcess:<none>", "GpuTrain:gpu", "SaveModel:<none>"}
	if got := smpTags(h.History("ml-1")); !slices.Equal(got, want) {
		h.Fatalf("scheduled %v, want %v", got, want)
	}
	if got, want := ranOn.list(), []string{"GpuTrain@B", "PreProcess@A", "SaveModel@A"}; !slices.Equal(got, want) {
		h.Fatalf("activities ran on %v, want %v", got, want)
	}
}

// smpSet is a set of strings safe for concurrent use.
type smpSet struct {
	mu  sync.Mutex
	set map[string]bool
}

func (s *smpSet) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	s.set[v] = true
}

// list returns the set's strings, sorted.
func (s *smpSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.set))
	for v := range s.set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func sampleKVRequestResponse(h *H) {
	h.Serve(
		durable.ActivityFunc("ProcessCommand", func(_ context.Context, in string) (string, error) {
			r := []rune(in)
			slices.Reverse(r)
			return string(r), nil
		}),
		durable.OrchestrationFunc("RequestServer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			ctx.KV().Set("status", "ready")
			for range 3 {
				var req struct {
					OpID    string `json:"op_id"`
					Command string `json:"command"`
				}
				raw, err := smpWait(ctx, "request").Get(ctx)
				if err != nil {
					return "", err
				}
				if err := json.Unmarshal([]byte(raw), &req); err != nil {
					return "", err
				}
				ctx.KV().Set("status", "processing")
				result, err := smpAct(ctx, "ProcessCommand", req.Command).Get(ctx)
				if err != nil {
					result = "error: " + err.Error()
				}
				ctx.KV().Set("response:"+req.OpID, result)
				ctx.KV().Set("status", "ready")
			}
			ctx.KV().Set("status", "shutdown")
			return "served 3 requests", nil
		}),
	)
	const id = "req-resp-server"
	h.Start("RequestServer", id, durable.Raw(""))
	if status, err := h.Client.WaitForKVValue(h.Ctx(), id, "status"); err != nil || status != "ready" {
		h.Fatalf("status %q (%v), want ready", status, err)
	}
	for _, r := range [][2]string{{"op-1", "hello"}, {"op-2", "world"}, {"op-3", "rust"}} {
		h.AwaitSubscription(id, "request") // the server waits for the next request
		data, _ := json.Marshal(map[string]string{"op_id": r[0], "command": r[1]})
		if err := h.Client.RaiseEvent(h.Ctx(), id, "request", durable.Raw(data)); err != nil {
			h.Fatal(err)
		}
		resp, err := h.Client.WaitForKVValue(h.Ctx(), id, "response:"+r[0])
		if err != nil {
			h.Fatalf("response to %s: %v", r[0], err)
		}
		rev := []rune(r[1])
		slices.Reverse(rev)
		if resp != string(rev) {
			h.Fatalf("response to %s %q, want %q", r[0], resp, string(rev))
		}
	}
	h.smpWant(h.Completed(id), "served 3 requests")
	for key, want := range map[string]string{"status": "shutdown", "response:op-1": "olleh", "response:op-2": "dlrow", "response:op-3": "tsur"} {
		if v, ok, err := h.Client.KVValue(h.Ctx(), id, key); err != nil || !ok || v != want {
			h.Fatalf("KV %s = %q, %v (%v); want %q", key, v, ok, err, want)
		}
	}
}

func sampleKVCrossOrchestrationRead(h *H) {
	h.Serve(
		durable.ActivityFunc("ComputeResult", func(_ context.Context, in string) (string, error) {
			n, err := strconv.ParseInt(in, 10, 64)
			if err != nil {
				return "", fmt.Errorf("parse: %w", err)
			}
			return strconv.FormatInt(n*n, 10), nil
		}),
		durable.OrchestrationFunc("Producer", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			ctx.KV().Set("status", "computing")
			squared, err := smpAct(ctx, "ComputeResult", in).Get(ctx)
			if err != nil {
				return "", err
			}
			ctx.KV().Set("result", squared)
			ctx.KV().Set("status", "done")
			// Wait for the consumer's acknowledgement before completing.
			if _, err := smpWait(ctx, "ack").Get(ctx); err != nil {
				return "", err
			}
			return "produced:" + squared, nil
		}),
		durable.OrchestrationFunc("Consumer", func(ctx *durable.OrchestrationContext, producer string) (string, error) {
			for attempts := 0; ; attempts++ {
				status, err := durable.ValueFromInstance(ctx, producer, "status").Get(ctx)
				if err != nil {
					return "", fmt.Errorf("read status: %w", err)
				}
				if status != nil && *status == "done" {
					break
				}
				if attempts >= 20 {
					return "", errors.New("producer never finished")
				}
				if err := ctx.Sleep(10 * time.Millisecond); err != nil { // duroxide: 100 ms
					return "", err
				}
			}
			result, err := durable.ValueFromInstance(ctx, producer, "result").Get(ctx)
			if err != nil {
				return "", fmt.Errorf("read result: %w", err)
			}
			if result == nil {
				return "", errors.New("result key missing")
			}
			return "consumed:" + *result, nil
		}),
	)
	h.Start("Producer", "producer-1", durable.Raw("7"))
	if v, err := h.Client.WaitForKVValue(h.Ctx(), "producer-1", "result"); err != nil || v != "49" {
		h.Fatalf("producer result %q (%v), want 49", v, err)
	}
	h.Start("Consumer", "consumer-1", durable.Raw("producer-1"))
	h.smpWant(h.Completed("consumer-1"), "consumed:49")
	h.AwaitSubscription("producer-1", "ack")
	if err := h.Client.RaiseEvent(h.Ctx(), "producer-1", "ack", durable.Raw("")); err != nil {
		h.Fatal(err)
	}
	h.smpWant(h.Completed("producer-1"), "produced:49")
	for key, want := range map[string]string{"result": "49", "status": "done"} {
		if v, ok, err := h.Client.KVValue(h.Ctx(), "producer-1", key); err != nil || !ok || v != want {
			h.Fatalf("KV %s = %q, %v (%v); want %q", key, v, ok, err, want)
		}
	}
}

func sampleKVReadModifyWriteCounter(h *H) {
	h.Serve(
		durable.ActivityFunc("ProcessBatch", func(_ context.Context, in string) (string, error) { return "processed:" + in, nil }),
		durable.OrchestrationFunc("BatchProcessor", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			for _, batch := range []string{"alpha", "beta", "gamma"} {
				processed, ok := ctx.KV().Get("batches_processed")
				if !ok {
					processed = "0"
				}
				count, err := strconv.Atoi(processed)
				if err != nil {
					return "", err
				}
				// The activity ends the turn: the next iteration replays.
				result, err := smpAct(ctx, "ProcessBatch", batch).Get(ctx)
				if err != nil {
					return "", err
				}
				ctx.KV().Set("batches_processed", strconv.Itoa(count+1))
				ctx.KV().Set("last_result", result)
			}
			v, ok := ctx.KV().Get("batches_processed")
			if !ok {
				v = "0"
			}
			return v, nil
		}),
	)
	h.Start("BatchProcessor", "batch-proc", durable.Raw(""))
	h.smpWant(h.Completed("batch-proc"), "3")
	for key, want := range map[string]string{"batches_processed": "3", "last_result": "processed:gamma"} {
		if v, ok, err := h.Client.KVValue(h.Ctx(), "batch-proc", key); err != nil || !ok || v != want {
			h.Fatalf("KV %s = %q, %v (%v); want %q", key, v, ok, err, want)
		}
	}
}
