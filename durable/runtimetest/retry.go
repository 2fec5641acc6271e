package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// The policy tests port duroxide's RetryPolicy and BackoffStrategy unit
// tests onto the Go types: a struct literal stands for the builder, and
// RetryPolicy.Delay for delay_for_attempt. Go's zero values select
// defaults (MaxAttempts 3, Base 100 ms, Max 30 s, Multiplier 2); those
// tests assert that instead of duroxide's zero.
var retryTests = append(retryPolicyTests, retryRunTests...)

var retryPolicyTests = []Test{
	{Name: "test_retry_policy_default", Run: func(h *H) {
		var p durable.RetryPolicy
		if p.MaxAttempts != 0 || p.Timeout != 0 || p.Backoff.Kind != durable.BackoffExponential {
			h.Fatalf("zero policy %+v: want exponential backoff, no timeout", p)
		}
		// Default exponential backoff: 100 ms doubling, capped at 30 s.
		expectDelays(h, p, map[uint32]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 20: 30 * time.Second})
	}},
	{Name: "test_retry_policy_new", Run: func(h *H) {
		p := durable.RetryPolicy{MaxAttempts: 5}
		if p.MaxAttempts != 5 || p.Timeout != 0 {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_retry_policy_new_single_attempt", Run: func(h *H) {
		if p := (durable.RetryPolicy{MaxAttempts: 1}); p.MaxAttempts != 1 {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_retry_policy_new_zero_panics", Run: func(h *H) {
		// duradyn: MaxAttempts 0 is the zero value and means the default 3
		// (duroxide's RetryPolicy::new(0) panics). Checked by running it.
		var attempts atomic.Int32
		h.Serve(
			durable.ActivityFunc("AlwaysFail", func(context.Context, string) (string, error) {
				return "", fmt.Errorf("fail %d", attempts.Add(1))
			}),
			durable.OrchestrationFunc("RetryOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				res, err := durable.CallActivity[durable.Raw](ctx, "AlwaysFail", durable.Raw(""),
					durable.WithRetry(durable.RetryPolicy{Backoff: durable.Backoff{Kind: durable.BackoffNone}})).Get(ctx)
				return string(res), err
			}),
		)
		h.Start("RetryOrch", "retry-zero-1", durable.Raw(""))
		if msg := h.Failed("retry-zero-1").DisplayMessage(); msg != "fail 3" {
			h.Fatalf("failure %q, want fail 3", msg)
		}
		if n := Count(h.History("retry-zero-1"), "ActivityScheduled"); n != 3 || attempts.Load() != 3 {
			h.Fatalf("%d attempts scheduled, %d run; want 3", n, attempts.Load())
		}
	}},
	{Name: "test_retry_policy_builder_with_timeout", Run: func(h *H) {
		p := durable.RetryPolicy{MaxAttempts: 3, Timeout: 60 * time.Second}
		if p.MaxAttempts != 3 || p.Timeout != 60*time.Second {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_retry_policy_builder_with_backoff", Run: func(h *H) {
		p := durable.RetryPolicy{MaxAttempts: 3, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: time.Second}}
		if p.Backoff.Kind != durable.BackoffFixed || p.Backoff.Delay != time.Second {
			h.Fatalf("policy %+v", p)
		}
		expectDelays(h, p, map[uint32]time.Duration{1: time.Second})
	}},
	{Name: "test_retry_policy_builder_chained", Run: func(h *H) {
		p := durable.RetryPolicy{MaxAttempts: 10, Timeout: 120 * time.Second,
			Backoff: durable.Backoff{Kind: durable.BackoffLinear, Base: 500 * time.Millisecond, Max: 10 * time.Second}}
		if p.MaxAttempts != 10 || p.Timeout != 120*time.Second || p.Backoff.Kind != durable.BackoffLinear ||
			p.Backoff.Base != 500*time.Millisecond || p.Backoff.Max != 10*time.Second {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_backoff_none_always_zero", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffNone}), map[uint32]time.Duration{1: 0, 2: 0, 100: 0})
	}},
	{Name: "test_backoff_fixed_same_delay", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffFixed, Delay: 5 * time.Second}),
			map[uint32]time.Duration{1: 5 * time.Second, 2: 5 * time.Second, 10: 5 * time.Second, 100: 5 * time.Second})
	}},
	{Name: "test_backoff_fixed_zero_delay", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffFixed}), map[uint32]time.Duration{1: 0, 5: 0})
	}},
	{Name: "test_backoff_linear_multiplies_by_attempt", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffLinear, Base: 100 * time.Millisecond, Max: 10 * time.Second}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 300 * time.Millisecond, 10: time.Second})
	}},
	{Name: "test_backoff_linear_respects_max", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffLinear, Base: time.Second, Max: 5 * time.Second}),
			map[uint32]time.Duration{1: time.Second, 5: 5 * time.Second, 10: 5 * time.Second, 100: 5 * time.Second})
	}},
	{Name: "test_backoff_linear_zero_base", Run: func(h *H) {
		// duradyn: a zero Base is the default 100 ms (duroxide: no delay);
		// BackoffNone is the way to retry at once.
		expectDelays(h, backoffPolicy(durable.Backoff{Kind: durable.BackoffLinear, Max: 10 * time.Second}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 100: 10 * time.Second})
	}},
	{Name: "test_backoff_exponential_doubles", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Base: 100 * time.Millisecond, Multiplier: 2, Max: 60 * time.Second}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond})
	}},
	{Name: "test_backoff_exponential_respects_max", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Base: 100 * time.Millisecond, Multiplier: 2, Max: 500 * time.Millisecond}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 500 * time.Millisecond, 10: 500 * time.Millisecond})
	}},
	{Name: "test_backoff_exponential_different_multiplier", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Base: 100 * time.Millisecond, Multiplier: 3, Max: 60 * time.Second}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 2: 300 * time.Millisecond, 3: 900 * time.Millisecond})
	}},
	{Name: "test_backoff_exponential_multiplier_one", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Base: 500 * time.Millisecond, Multiplier: 1, Max: 60 * time.Second}),
			map[uint32]time.Duration{1: 500 * time.Millisecond, 5: 500 * time.Millisecond, 100: 500 * time.Millisecond})
	}},
	{Name: "test_backoff_exponential_large_attempt_no_overflow", Run: func(h *H) {
		expectDelays(h, backoffPolicy(durable.Backoff{Base: 100 * time.Millisecond, Multiplier: 2, Max: 30 * time.Second}),
			map[uint32]time.Duration{1000: 30 * time.Second, ^uint32(0): 30 * time.Second})
	}},
	{Name: "test_backoff_exponential_zero_base", Run: func(h *H) {
		// duradyn: a zero Base is the default 100 ms (duroxide: no delay).
		expectDelays(h, backoffPolicy(durable.Backoff{Multiplier: 2, Max: 30 * time.Second}),
			map[uint32]time.Duration{1: 100 * time.Millisecond, 100: 30 * time.Second})
	}},
	{Name: "test_policy_delay_for_attempt_delegates", Run: func(h *H) {
		p := durable.RetryPolicy{MaxAttempts: 5, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: 2 * time.Second}}
		expectDelays(h, p, map[uint32]time.Duration{1: 2 * time.Second, 5: 2 * time.Second})
	}},
	{Name: "test_large_max_attempts", Run: func(h *H) {
		if p := (durable.RetryPolicy{MaxAttempts: 1000}); p.MaxAttempts != 1000 {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_very_short_timeout", Run: func(h *H) {
		if p := (durable.RetryPolicy{MaxAttempts: 3, Timeout: time.Millisecond}); p.Timeout != time.Millisecond {
			h.Fatalf("policy %+v", p)
		}
	}},
	{Name: "test_zero_duration_timeout", Run: func(h *H) {
		// duradyn: a zero Timeout is the zero value, "no timeout"
		// (duroxide's Some(0) is a timeout that fires at once). Checked by
		// running it: the attempt is not raced against a timer.
		h.Serve(
			durable.ActivityFunc("Fast", func(_ context.Context, in string) (string, error) { return "fast:" + in, nil }),
			durable.OrchestrationFunc("RetryOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				res, err := durable.CallActivity[durable.Raw](ctx, "Fast", durable.Raw(in),
					durable.WithRetry(durable.RetryPolicy{MaxAttempts: 3, Timeout: 0})).Get(ctx)
				return string(res), err
			}),
		)
		h.Start("RetryOrch", "retry-zero-timeout", durable.Raw("x"))
		if out := h.Completed("retry-zero-timeout"); out != "fast:x" {
			h.Fatalf("output %q", out)
		}
		if n := Count(h.History("retry-zero-timeout"), "TimerCreated"); n != 0 {
			h.Fatalf("%d timers, want none", n)
		}
	}},
}

var retryRunTests = []Test{
	{Name: "test_activity_succeeds_first_attempt", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("SuccessActivity", func(_ context.Context, in string) (string, error) { return "success:" + in, nil }),
			retryOrch("RetryOrch", "SuccessActivity", durable.RetryPolicy{MaxAttempts: 3}),
		)
		h.Start("RetryOrch", "retry-success-1", durable.Raw("test"))
		if out := h.Completed("retry-success-1"); out != "success:test" {
			h.Fatalf("output %q", out)
		}
		if n := Count(h.History("retry-success-1"), "ActivityScheduled"); n != 1 {
			h.Fatalf("%d attempts, want 1", n)
		}
	}},
	{Name: "test_activity_fails_then_succeeds", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("FlakyActivity", &n, 3, "fail on attempt %d", "success on attempt %d"),
			retryOrch("RetryOrch", "FlakyActivity", noBackoff(5)))
		h.Start("RetryOrch", "retry-flaky-1", durable.Raw(""))
		if out := h.Completed("retry-flaky-1"); out != "success on attempt 3" {
			h.Fatalf("output %q", out)
		}
		if n.Load() != 3 {
			h.Fatalf("%d attempts, want 3", n.Load())
		}
	}},
	{Name: "test_activity_exhausts_all_attempts", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("AlwaysFailActivity", &n, 1000, "fail on attempt %d", ""),
			retryOrch("RetryOrch", "AlwaysFailActivity", noBackoff(3)))
		h.Start("RetryOrch", "retry-exhaust-1", durable.Raw(""))
		if msg := h.Failed("retry-exhaust-1").DisplayMessage(); !strings.Contains(msg, "fail on attempt 3") {
			h.Fatalf("failure %q, want the last error", msg)
		}
		if n.Load() != 3 {
			h.Fatalf("%d attempts, want 3", n.Load())
		}
	}},
	{Name: "test_single_attempt_fails", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("FailOnce", func(context.Context, string) (string, error) { return "", errors.New("single failure") }),
			retryOrch("RetryOrch", "FailOnce", durable.RetryPolicy{MaxAttempts: 1}),
		)
		h.Start("RetryOrch", "retry-single-1", durable.Raw(""))
		if msg := h.Failed("retry-single-1").DisplayMessage(); !strings.Contains(msg, "single failure") {
			h.Fatalf("failure %q", msg)
		}
		hist := h.History("retry-single-1")
		if Count(hist, "ActivityScheduled") != 1 || Count(hist, "TimerCreated") != 0 {
			h.Fatalf("history %v: want one attempt, no backoff", EventTypes(hist))
		}
	}},
	{Name: "test_retry_with_fixed_backoff", Run: func(h *H) {
		var n atomic.Int32
		const delay = 50 * time.Millisecond
		h.Serve(flakyActivity("FlakyActivity", &n, 3, "fail %d", "done"),
			retryOrch("RetryOrch", "FlakyActivity", durable.RetryPolicy{MaxAttempts: 5, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: delay}}))
		h.Start("RetryOrch", "retry-backoff-1", durable.Raw(""))
		if out := h.Completed("retry-backoff-1"); out != "done" {
			h.Fatalf("output %q", out)
		}
		// Two backoff timers: after attempts 1 and 2, none after the success.
		timers := ofKind[provider.TimerCreated](h.History("retry-backoff-1"))
		if len(timers) != 2 {
			h.Fatalf("%d backoff timers, want 2", len(timers))
		}
		for _, ev := range timers {
			if got := timerDelayMs(ev); got != delay.Milliseconds() {
				h.Errorf("backoff timer %d: delay %d ms, want %d", ev.EventID, got, delay.Milliseconds())
			}
		}
	}},
	{Name: "test_retry_with_no_backoff", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("FlakyActivity", &n, 3, "fail %d", "done"),
			retryOrch("RetryOrch", "FlakyActivity", noBackoff(5)))
		h.Start("RetryOrch", "retry-no-backoff-1", durable.Raw(""))
		if out := h.Completed("retry-no-backoff-1"); out != "done" {
			h.Fatalf("output %q", out)
		}
		if c := Count(h.History("retry-no-backoff-1"), "TimerCreated"); c != 0 {
			h.Fatalf("%d backoff timers, want 0", c)
		}
	}},
	{Name: "test_timeout_fires_before_success", Run: func(h *H) {
		h.Serve(durable.ActivityFunc("SlowActivity", blockUntilCancelled),
			retryOrch("RetryOrch", "SlowActivity", durable.RetryPolicy{MaxAttempts: 3, Timeout: 100 * time.Millisecond}))
		h.Start("RetryOrch", "retry-timeout-1", durable.Raw(""))
		if msg := h.Failed("retry-timeout-1").DisplayMessage(); !strings.Contains(msg, "timeout") {
			h.Fatalf("failure %q, want a timeout", msg)
		}
	}},
	{Name: "test_success_before_timeout", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("FastActivity", func(_ context.Context, in string) (string, error) { return "fast:" + in, nil }),
			retryOrch("RetryOrch", "FastActivity", durable.RetryPolicy{MaxAttempts: 3, Timeout: 60 * time.Second}),
		)
		h.Start("RetryOrch", "retry-fast-1", durable.Raw("data"))
		if out := h.Completed("retry-fast-1"); out != "fast:data" {
			h.Fatalf("output %q", out)
		}
	}},
	{Name: "test_timeout_exits_immediately_without_retry", Run: func(h *H) {
		var started atomic.Int32
		h.Serve(
			durable.ActivityFunc("SlowActivity", func(ctx context.Context, in string) (string, error) {
				started.Add(1)
				return blockUntilCancelled(ctx, in)
			}),
			retryOrch("RetryOrch", "SlowActivity", durable.RetryPolicy{MaxAttempts: 3, Timeout: 100 * time.Millisecond,
				Backoff: durable.Backoff{Kind: durable.BackoffNone}}),
		)
		h.Start("RetryOrch", "timeout-no-retry-1", durable.Raw(""))
		if msg := h.Failed("timeout-no-retry-1").DisplayMessage(); !strings.Contains(msg, "timeout") {
			h.Fatalf("failure %q, want a timeout", msg)
		}
		// duroxide's test counts exactly one run; a worker may not even have
		// started the attempt before its deadline, so at most one.
		if s := started.Load(); s > 1 {
			h.Fatalf("activity ran %d times, want at most 1 (no retry on timeout)", s)
		}
		hist := h.History("timeout-no-retry-1")
		if Count(hist, "ActivityScheduled") != 1 || Count(hist, "TimerCreated") != 1 || Count(hist, "TimerFired") != 1 {
			h.Fatalf("history %v: want 1 attempt and 1 deadline timer that fired", EventTypes(hist))
		}
	}},
	{Name: "test_error_retries_but_timeout_exits", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(
			durable.ActivityFunc("MixedActivity", func(ctx context.Context, in string) (string, error) {
				if n.Add(1) == 1 {
					return "", errors.New("fast failure")
				}
				return blockUntilCancelled(ctx, in)
			}),
			// The deadline must let the first, failing attempt be fetched and
			// finish on a loaded machine and a slower provider (duroxide:
			// 500 ms); it costs the second attempt's wait.
			retryOrch("RetryOrch", "MixedActivity", durable.RetryPolicy{MaxAttempts: 5, Timeout: 10 * time.Second,
				Backoff: durable.Backoff{Kind: durable.BackoffNone}}),
		)
		h.Start("RetryOrch", "error-then-timeout-1", durable.Raw(""))
		if msg := h.Failed("error-then-timeout-1").DisplayMessage(); !strings.Contains(msg, "timeout") {
			h.Fatalf("failure %q, want a timeout", msg)
		}
		hist := h.History("error-then-timeout-1")
		if Count(hist, "ActivityScheduled") != 2 || Count(hist, "ActivityFailed") != 1 || Count(hist, "TimerCreated") < 2 {
			h.Fatalf("history %v: want 2 attempts, 1 failure, a deadline per attempt", EventTypes(hist))
		}
	}},
	{Name: "test_typed_activity_retry_success", Run: func(h *H) {
		type typedInput struct {
			Value int `json:"value"`
		}
		type typedOutput struct {
			Result int `json:"result"`
		}
		act := durable.NewActivity("TypedActivity", func(_ context.Context, in typedInput) (typedOutput, error) {
			return typedOutput{Result: in.Value * 2}, nil
		})
		h.Serve(act, durable.NewOrchestration("RetryOrch", func(ctx *durable.OrchestrationContext, _ string) (typedOutput, error) {
			return act.Call(ctx, typedInput{Value: 21}, durable.WithRetry(durable.RetryPolicy{MaxAttempts: 3})).Get(ctx)
		}))
		h.Start("RetryOrch", "retry-typed-1", "")
		h.Completed("retry-typed-1")
		st, err := h.Client.Status(h.Ctx(), "retry-typed-1")
		if err != nil {
			h.Fatal(err)
		}
		if out, err := durable.Output[typedOutput](st); err != nil || out.Result != 42 {
			h.Fatalf("output %+v, %v; want result 42", out, err)
		}
	}},
	{Name: "test_history_contains_all_activity_scheduled_events", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("FlakyActivity", &n, 4, "fail %d", "done"),
			retryOrch("RetryOrch", "FlakyActivity", noBackoff(5)))
		h.Start("RetryOrch", "retry-history-1", durable.Raw(""))
		h.Completed("retry-history-1")
		hist := h.History("retry-history-1")
		if Count(hist, "ActivityScheduled") != 4 || Count(hist, "ActivityFailed") != 3 || Count(hist, "ActivityCompleted") != 1 {
			h.Fatalf("history %v: want 4 attempts, 3 failed", EventTypes(hist))
		}
	}},
	{Name: "test_large_max_attempts_integration", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("FlakyActivity", &n, 10, "fail %d", "done"),
			retryOrch("RetryOrch", "FlakyActivity", noBackoff(20)))
		h.Start("RetryOrch", "retry-large-1", durable.Raw(""))
		if out := h.Completed("retry-large-1"); out != "done" {
			h.Fatalf("output %q", out)
		}
		if n.Load() != 10 {
			h.Fatalf("%d attempts, want 10", n.Load())
		}
	}},
	{Name: "test_replay_with_stale_events_in_history", Run: func(h *H) {
		var calls atomic.Int32
		h.Serve(
			durable.ActivityFunc("CountedActivity", func(context.Context, string) (string, error) {
				calls.Add(1)
				return "done", nil
			}),
			retryOrch("ReplayOrch", "CountedActivity", noBackoff(3)),
		)
		h.Start("ReplayOrch", "replay-1", durable.Raw(""))
		if out := h.Completed("replay-1"); out != "done" {
			h.Fatalf("output %q", out)
		}
		if calls.Load() != 1 {
			h.Fatalf("activity ran %d times, want 1", calls.Load())
		}
	}},
	{Name: "test_timeout_history_replays_correctly", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("SlowActivity", blockUntilCancelled),
			durable.OrchestrationFunc("TimeoutOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				res, err := durable.CallActivity[durable.Raw](ctx, "SlowActivity", durable.Raw(""),
					durable.WithRetry(durable.RetryPolicy{MaxAttempts: 1, Timeout: 50 * time.Millisecond})).Get(ctx)
				if err != nil {
					return "error:" + err.Error(), nil
				}
				return string(res), nil
			}),
		)
		h.Start("TimeoutOrch", "timeout-replay-1", durable.Raw(""))
		out := h.Completed("timeout-replay-1")
		if !strings.Contains(out, "timeout") {
			h.Fatalf("output %q, want a timeout error", out)
		}
		hist := h.History("timeout-replay-1")
		// The deadline won: the attempt's activity is cancelled.
		if Count(hist, "TimerCreated") < 1 || Count(hist, "TimerFired") < 1 || Count(hist, "ActivityCancelRequested") != 1 {
			h.Fatalf("history %v: want the deadline fired and the attempt cancelled", EventTypes(hist))
		}
	}},
	{Name: "test_activity_completes_after_continue_as_new", Run: func(h *H) {
		var execs atomic.Int32
		h.Serve(
			durable.ActivityFunc("TrackedActivity", func(_ context.Context, in string) (string, error) {
				return fmt.Sprintf("exec%d:%s", execs.Add(1)-1, in), nil
			}),
			durable.OrchestrationFunc("CANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				count, _ := strconv.Atoi(in)
				res, err := durable.CallActivity[durable.Raw](ctx, "TrackedActivity", durable.Raw(in)).Get(ctx)
				if err != nil {
					return "", err
				}
				if count < 2 {
					return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(count + 1)))
				}
				return string(res), nil
			}),
		)
		h.Start("CANOrch", "can-stale-1", durable.Raw("0"))
		if out := h.Completed("can-stale-1"); out != "exec2:2" {
			h.Fatalf("output %q, want the third execution's result", out)
		}
		if execs.Load() != 3 {
			h.Fatalf("%d activity runs, want 3", execs.Load())
		}
	}},
	{Name: "test_retry_timeout_with_continue_as_new", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(
			durable.ActivityFunc("FlakyActivity", func(_ context.Context, in string) (string, error) {
				attempt := n.Add(1)
				if in == "0" {
					return "", fmt.Errorf("fail exec0 attempt%d", attempt)
				}
				return fmt.Sprintf("success exec%s attempt%d", in, attempt), nil
			}),
			durable.OrchestrationFunc("RetryCANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
				exec, _ := strconv.Atoi(in)
				res, err := durable.CallActivity[durable.Raw](ctx, "FlakyActivity", durable.Raw(in), durable.WithRetry(noBackoff(2))).Get(ctx)
				switch {
				case err == nil:
					return string(res), nil
				case exec < 1:
					return "", ctx.ContinueAsNew(durable.Raw(strconv.Itoa(exec + 1)))
				}
				return "", err
			}),
		)
		h.Start("RetryCANOrch", "retry-can-1", durable.Raw("0"))
		if out := h.Completed("retry-can-1"); out != "success exec1 attempt3" {
			h.Fatalf("output %q", out)
		}
	}},
	{Name: "test_multiple_orchestrations_retrying", Run: func(h *H) {
		var n1, n2 atomic.Int32
		h.Serve(
			flakyActivity("Flaky1", &n1, 2, "flaky1 fail %d", "flaky1 ok %d"),
			flakyActivity("Flaky2", &n2, 3, "flaky2 fail %d", "flaky2 ok %d"),
			retryOrch("Orch1", "Flaky1", noBackoff(5)),
			retryOrch("Orch2", "Flaky2", noBackoff(5)),
		)
		h.Start("Orch1", "multi-1", durable.Raw(""))
		h.Start("Orch2", "multi-2", durable.Raw(""))
		if out := h.Completed("multi-1"); out != "flaky1 ok 2" {
			h.Errorf("multi-1 output %q", out)
		}
		if out := h.Completed("multi-2"); out != "flaky2 ok 3" {
			h.Errorf("multi-2 output %q", out)
		}
		if n1.Load() != 2 || n2.Load() != 3 {
			h.Fatalf("attempts %d and %d, want 2 and 3", n1.Load(), n2.Load())
		}
	}},
	{Name: "retry_on_session_basic_success", Run: func(h *H) {
		var n atomic.Int32
		h.Serve(flakyActivity("FlakySession", &n, 2, "fail attempt %d", "ok attempt %d"),
			sessionRetryOrch("RetrySession", "FlakySession", "input", noBackoff(3)))
		h.Start("RetrySession", "retry-sess-1", durable.Raw(""))
		if out := h.Completed("retry-sess-1"); out != "ok attempt 2" {
			h.Fatalf("output %q", out)
		}
		if n.Load() != 2 {
			h.Fatalf("%d attempts, want 2", n.Load())
		}
		checkOneSession(h, "retry-sess-1", "FlakySession", 2)
	}},
	{Name: "retry_on_session_all_attempts_fail", Run: func(h *H) {
		h.Serve(
			durable.ActivityFunc("AlwaysFail", func(context.Context, string) (string, error) { return "", errors.New("nope") }),
			sessionRetryOrch("RetrySessionFail", "AlwaysFail", "", noBackoff(2)),
		)
		h.Start("RetrySessionFail", "retry-sess-fail", durable.Raw(""))
		if msg := h.Failed("retry-sess-fail").DisplayMessage(); !strings.Contains(msg, "nope") {
			h.Fatalf("failure %q", msg)
		}
		checkOneSession(h, "retry-sess-fail", "AlwaysFail", 2)
	}},
	{Name: "retry_on_session_typed_round_trip", Run: func(h *H) {
		type query struct {
			SQL string `json:"sql"`
		}
		type queryResult struct {
			Rows uint32 `json:"rows"`
		}
		var n atomic.Int32
		act := durable.NewActivity("TypedSessionAct", func(_ context.Context, q query) (queryResult, error) {
			if q.SQL != "SELECT 1" {
				return queryResult{}, fmt.Errorf("query %q", q.SQL)
			}
			if n.Add(1) < 2 {
				return queryResult{}, errors.New("transient")
			}
			return queryResult{Rows: 42}, nil
		})
		h.Serve(act, durable.OrchestrationFunc("TypedRetrySession", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			session, err := ctx.NewGUID().Get(ctx)
			if err != nil {
				return "", err
			}
			res, err := act.Call(ctx, query{SQL: "SELECT 1"}, durable.WithRetry(noBackoff(3)), durable.OnSession(session)).Get(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("rows=%d", res.Rows), nil
		}))
		h.Start("TypedRetrySession", "typed-retry-sess", durable.Raw(""))
		if out := h.Completed("typed-retry-sess"); out != "rows=42" {
			h.Fatalf("output %q", out)
		}
		if n.Load() != 2 {
			h.Fatalf("%d attempts, want 2", n.Load())
		}
		checkOneSession(h, "typed-retry-sess", "TypedSessionAct", 2)
	}},
}

// expectDelays checks p.Delay for each attempt.
func expectDelays(h *H, p durable.RetryPolicy, want map[uint32]time.Duration) {
	h.Helper()
	for attempt, d := range want {
		if got := p.Delay(attempt); got != d {
			h.Errorf("delay for attempt %d = %v, want %v", attempt, got, d)
		}
	}
}

func backoffPolicy(b durable.Backoff) durable.RetryPolicy {
	return durable.RetryPolicy{MaxAttempts: 3, Backoff: b}
}

func noBackoff(attempts uint32) durable.RetryPolicy {
	return durable.RetryPolicy{MaxAttempts: attempts, Backoff: durable.Backoff{Kind: durable.BackoffNone}}
}

// flakyActivity fails its first succeedAt-1 runs with failFmt % attempt,
// then returns okFmt (formatted with the attempt when it has a verb).
func flakyActivity(name string, n *atomic.Int32, succeedAt int32, failFmt, okFmt string) durable.Definition {
	return durable.ActivityFunc(name, func(context.Context, string) (string, error) {
		attempt := n.Add(1)
		if attempt < succeedAt {
			return "", fmt.Errorf(failFmt, attempt)
		}
		if strings.Contains(okFmt, "%") {
			return fmt.Sprintf(okFmt, attempt), nil
		}
		return okFmt, nil
	})
}

// retryOrch calls activity with its input under policy and returns the
// result; a final failure fails the orchestration.
func retryOrch(name, activity string, policy durable.RetryPolicy) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		res, err := durable.CallActivity[durable.Raw](ctx, activity, durable.Raw(in), durable.WithRetry(policy)).Get(ctx)
		return string(res), err
	})
}

// sessionRetryOrch retries activity on a session named by a new GUID.
func sessionRetryOrch(name, activity, input string, policy durable.RetryPolicy) durable.Definition {
	return durable.OrchestrationFunc(name, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		session, err := ctx.NewGUID().Get(ctx)
		if err != nil {
			return "", err
		}
		res, err := durable.CallActivity[durable.Raw](ctx, activity, durable.Raw(input), durable.WithRetry(policy), durable.OnSession(session)).Get(ctx)
		return string(res), err
	})
}

// checkOneSession checks that id scheduled attempts runs of activity, all
// on the same session.
func checkOneSession(h *H, id, activity string, attempts int) {
	h.Helper()
	var sessions []string
	for _, ev := range ofKind[provider.ActivityScheduled](h.History(id)) {
		if k := ev.Kind.(provider.ActivityScheduled); k.Name == activity {
			if k.SessionID == nil {
				h.Fatalf("attempt %d has no session", ev.EventID)
			}
			sessions = append(sessions, *k.SessionID)
		}
	}
	if len(sessions) != attempts {
		h.Fatalf("%d attempts scheduled, want %d", len(sessions), attempts)
	}
	for _, s := range sessions[1:] {
		if s != sessions[0] {
			h.Fatalf("attempts on sessions %v, want one", sessions)
		}
	}
}
