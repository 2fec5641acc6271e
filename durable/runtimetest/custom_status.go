package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/duradyn/duradyn/durable"
)

// csMaxBytes is the custom status size limit (duroxide's
// limits::MAX_CUSTOM_STATUS_BYTES, 256 KiB in 0.1.26 and 0.1.29).
const csMaxBytes = 256 * 1024

var customStatusTests = []Test{
	{"custom_status_set_visible_on_completion", customStatusSetVisibleOnCompletion},
	{"custom_status_reset_clears_to_none", customStatusResetClearsToNone},
	{"custom_status_last_write_wins", customStatusLastWriteWins},
	{"custom_status_persists_across_turns", customStatusPersistsAcrossTurns},
	{"custom_status_updated_in_later_turn", customStatusUpdatedInLaterTurn},
	{"custom_status_none_when_not_set", customStatusNoneWhenNotSet},
	{"custom_status_visible_on_failure", customStatusVisibleOnFailure},
	{"custom_status_version_increments", customStatusVersionIncrements},
	{"custom_status_exceeding_size_limit_fails_orchestration", customStatusExceedingSizeLimitFails},
	{"custom_status_at_size_limit_succeeds", customStatusAtSizeLimitSucceeds},
	{"custom_status_persists_across_continue_as_new", customStatusPersistsAcrossContinueAsNew},
	{"custom_status_reset_across_continue_as_new", customStatusResetAcrossContinueAsNew},
	{"custom_status_get_reflects_set_across_turns", customStatusGetReflectsSetAcrossTurns},
	{"custom_status_get_reflects_carry_forward_after_can", customStatusGetReflectsCarryForwardAfterCAN},
	{"custom_status_size_limit_precise_boundary", customStatusSizeLimitPreciseBoundary},
}

// csEcho is an activity returning its input.
func csEcho() durable.Definition {
	return durable.ActivityFunc("Echo", func(_ context.Context, in string) (string, error) { return in, nil })
}

// csEchoCall awaits Echo(in).
func csEchoCall(ctx *durable.OrchestrationContext, in string) (string, error) {
	v, err := durable.CallActivity[durable.Raw](ctx, "Echo", durable.Raw(in)).Get(ctx)
	return string(v), err
}

// csRun serves orch (and Echo), starts id with input and waits.
func csRun(h *H, id, input string, orch durable.Definition) *durable.Status {
	h.Helper()
	h.Serve(csEcho(), orch)
	h.Start(csOrchName(orch), id, durable.Raw(input))
	return h.Wait(id)
}

// csOrchName returns the name of an orchestration built by
// durable.OrchestrationFunc.
func csOrchName(d durable.Definition) string {
	if n, ok := d.(interface{ Name() string }); ok {
		return n.Name()
	}
	panic("definition without a name")
}

// csStatus formats a custom status for messages.
func csStatus(s *string) string {
	if s == nil {
		return "<none>"
	}
	return fmt.Sprintf("%q", *s)
}

// csExpect checks state, custom status (nil: none) and, unless
// version < 0, the custom status version.
func csExpect(h *H, st *durable.Status, state durable.State, status *string, version int) {
	h.Helper()
	if st.State != state {
		h.Fatalf("state %v (%v); want %v", st.State, st.Failure, state)
	}
	if (st.CustomStatus == nil) != (status == nil) || status != nil && *st.CustomStatus != *status {
		h.Fatalf("custom status %s; want %s", csStatus(st.CustomStatus), csStatus(status))
	}
	if version >= 0 && st.CustomStatusVersion != uint64(version) {
		h.Fatalf("custom status version %d; want %d", st.CustomStatusVersion, version)
	}
}

func csPtr(s string) *string { return &s }

func customStatusSetVisibleOnCompletion(h *H) {
	st := csRun(h, "cs-set", "", durable.OrchestrationFunc("SetStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("step-1")
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("step-1"), -1)
	if st.Output != "done" || st.CustomStatusVersion < 1 {
		h.Fatalf("output %q version %d", st.Output, st.CustomStatusVersion)
	}
}

func customStatusResetClearsToNone(h *H) {
	st := csRun(h, "cs-reset", "", durable.OrchestrationFunc("ResetStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("temporary")
		ctx.ClearCustomStatus()
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, nil, -1)
	if st.CustomStatusVersion < 1 {
		h.Fatalf("version %d; want >= 1", st.CustomStatusVersion)
	}
}

func customStatusLastWriteWins(h *H) {
	st := csRun(h, "cs-lww", "", durable.OrchestrationFunc("LastWrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("first")
		ctx.SetCustomStatus("second")
		ctx.SetCustomStatus("third")
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("third"), -1)
}

func customStatusPersistsAcrossTurns(h *H) {
	st := csRun(h, "cs-persist", "", durable.OrchestrationFunc("MultiTurn", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("processing")
		return csEchoCall(ctx, "hello")
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("processing"), -1)
	if st.Output != "hello" {
		h.Fatalf("output %q", st.Output)
	}
}

func customStatusUpdatedInLaterTurn(h *H) {
	st := csRun(h, "cs-update", "", durable.OrchestrationFunc("UpdateStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("step-1")
		if _, err := csEchoCall(ctx, "a"); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("step-2")
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("step-2"), -1)
}

func customStatusNoneWhenNotSet(h *H) {
	st := csRun(h, "cs-none", "", durable.OrchestrationFunc("NoStatus", func(*durable.OrchestrationContext, string) (string, error) {
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, nil, 0)
}

func customStatusVisibleOnFailure(h *H) {
	st := csRun(h, "cs-fail", "", durable.OrchestrationFunc("FailWithStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("about-to-fail")
		return "", errors.New("boom")
	}))
	csExpect(h, st, durable.StateFailed, csPtr("about-to-fail"), -1)
}

func customStatusVersionIncrements(h *H) {
	st := csRun(h, "cs-ver", "", durable.OrchestrationFunc("VersionIncr", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("v1")
		if _, err := csEchoCall(ctx, "a"); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("v2")
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("v2"), -1)
	if st.CustomStatusVersion < 2 {
		h.Fatalf("version %d; want >= 2", st.CustomStatusVersion)
	}
}

// csSized sets a custom status of n bytes.
func csSized(name string, n int, out string) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus(strings.Repeat("x", n))
		return out, nil
	})
}

// csExpectSizeFailure checks a failure for the custom status size limit.
func csExpectSizeFailure(h *H, st *durable.Status) {
	h.Helper()
	if st.State != durable.StateFailed {
		h.Fatalf("state %v; want Failed for the size limit", st.State)
	}
	if msg := st.Failure.DisplayMessage(); !strings.Contains(msg, "Custom status size") || !strings.Contains(msg, "exceeds limit") {
		h.Fatalf("failure %q; want the size limit error", msg)
	}
}

func customStatusExceedingSizeLimitFails(h *H) {
	csExpectSizeFailure(h, csRun(h, "cs-oversize", "", csSized("OversizedStatus", csMaxBytes+1, "should-not-reach")))
}

func customStatusAtSizeLimitSucceeds(h *H) {
	st := csRun(h, "cs-exact", "", csSized("ExactLimit", csMaxBytes, "done"))
	if st.State != durable.StateCompleted || st.Output != "done" {
		h.Fatalf("%v %q (%v)", st.State, st.Output, st.Failure)
	}
}

func customStatusPersistsAcrossContinueAsNew(h *H) {
	h.Serve(
		// Reads the custom status straight from the provider.
		durable.ActivityFunc("ReadStatus", func(ctx context.Context, instance string) (string, error) {
			cs, err := h.Direct().CustomStatus(ctx, instance, 0)
			switch {
			case err != nil:
				return "", err
			case cs == nil:
				return "none", nil
			case cs.Status == nil:
				return fmt.Sprintf("null@v%d", cs.Version), nil
			}
			return fmt.Sprintf("%s@v%d", *cs.Status, cs.Version), nil
		}),
		durable.OrchestrationFunc("CanStatus", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			switch in {
			case "0":
				ctx.SetCustomStatus("step-A")
				return "", ctx.ContinueAsNew(durable.Raw("1"))
			case "1":
				snap, err := durable.CallActivity[durable.Raw](ctx, "ReadStatus", durable.Raw("cs-can")).Get(ctx)
				if err != nil {
					return "", err
				}
				if snap != "step-A@v1" {
					return "", fmt.Errorf("execution 2 sees %q; want step-A@v1", snap)
				}
				return "", ctx.ContinueAsNew(durable.Raw("2"))
			}
			ctx.SetCustomStatus("step-B")
			return "done", nil
		}),
	)
	h.Start("CanStatus", "cs-can", durable.Raw("0"))
	st := h.Wait("cs-can")
	csExpect(h, st, durable.StateCompleted, csPtr("step-B"), 2)
	if st.Output != "done" {
		h.Fatalf("output %q", st.Output)
	}
}

func customStatusResetAcrossContinueAsNew(h *H) {
	st := csRun(h, "cs-can-reset", "0", durable.OrchestrationFunc("CanReset", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "0" {
			ctx.SetCustomStatus("foo")
			return "", ctx.ContinueAsNew(durable.Raw("1"))
		}
		ctx.ClearCustomStatus()
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, nil, 2)
}

// csCheck returns an error unless ctx's custom status is want (nil: none).
func csCheck(ctx *durable.OrchestrationContext, want *string, what string) error {
	got, ok := ctx.CustomStatus()
	if ok != (want != nil) || ok && got != *want {
		g := (*string)(nil)
		if ok {
			g = &got
		}
		return fmt.Errorf("%s: custom status %s; want %s", what, csStatus(g), csStatus(want))
	}
	return nil
}

func customStatusGetReflectsSetAcrossTurns(h *H) {
	st := csRun(h, "cs-getter", "", durable.OrchestrationFunc("GetterTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := csCheck(ctx, nil, "initial"); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("step-1")
		if err := csCheck(ctx, csPtr("step-1"), "after set"); err != nil {
			return "", err
		}
		if _, err := csEchoCall(ctx, "ping"); err != nil {
			return "", err
		}
		if err := csCheck(ctx, csPtr("step-1"), "after replay"); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("step-2")
		if err := csCheck(ctx, csPtr("step-2"), "after second set"); err != nil {
			return "", err
		}
		return "done", nil
	}))
	csExpect(h, st, durable.StateCompleted, csPtr("step-2"), 2)
}

func customStatusGetReflectsCarryForwardAfterCAN(h *H) {
	st := csRun(h, "cs-can-getter", "0", durable.OrchestrationFunc("CANGetter", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		switch in {
		case "0":
			if err := csCheck(ctx, nil, "iter 0 initial"); err != nil {
				return "", err
			}
			ctx.SetCustomStatus("from-first")
			if err := csCheck(ctx, csPtr("from-first"), "iter 0 after set"); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew(durable.Raw("1"))
		case "1":
			if err := csCheck(ctx, csPtr("from-first"), "iter 1 carried"); err != nil {
				return "", err
			}
			ctx.ClearCustomStatus()
			if err := csCheck(ctx, nil, "iter 1 after reset"); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew(durable.Raw("2"))
		case "2":
			if err := csCheck(ctx, nil, "iter 2 carried reset"); err != nil {
				return "", err
			}
			ctx.SetCustomStatus("from-third")
			return "", ctx.ContinueAsNew(durable.Raw("3"))
		}
		if err := csCheck(ctx, csPtr("from-third"), "iter 3 carried"); err != nil {
			return "", err
		}
		if _, err := csEchoCall(ctx, "ping"); err != nil {
			return "", err
		}
		if err := csCheck(ctx, csPtr("from-third"), "iter 3 after replay"); err != nil {
			return "", err
		}
		return "done", nil
	}))
	// set, reset, set: three mutations.
	csExpect(h, st, durable.StateCompleted, csPtr("from-third"), 3)
}

func customStatusSizeLimitPreciseBoundary(h *H) {
	h.Serve(csEcho(),
		csSized("BelowLimit", csMaxBytes-1, "ok"),
		csSized("AtLimit", csMaxBytes, "ok"),
		csSized("AboveLimit", csMaxBytes+1, "should-not-reach"))
	for _, c := range []struct{ name, id string }{{"BelowLimit", "cs-below"}, {"AtLimit", "cs-at"}} {
		h.Start(c.name, c.id, durable.Raw(""))
		if st := h.Wait(c.id); st.State != durable.StateCompleted || st.Output != "ok" {
			h.Fatalf("%s: %v %q (%v); want Completed ok", c.id, st.State, st.Output, st.Failure)
		}
	}
	h.Start("AboveLimit", "cs-above", durable.Raw(""))
	csExpectSizeFailure(h, h.Wait("cs-above"))
}
