package durabletest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
	"github.com/duradyn/duradyn/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newRegistry(t testing.TB, defs ...durable.Definition) *durable.Registry {
	t.Helper()
	reg, err := durable.NewRegistry(defs...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func output[T any](t testing.TB, s *durable.Status) T {
	t.Helper()
	if s.State != durable.StateCompleted {
		t.Fatalf("state %v, failure %v", s.State, s.Failure)
	}
	v, err := durable.Output[T](s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var greet = durable.NewActivity("Greet", func(_ context.Context, name string) (string, error) {
	return "Hello, " + name + "!", nil
})

func TestTimersOf24HoursFinishInstantly(t *testing.T) {
	orch := durable.NewOrchestration("Daily", func(ctx *durable.OrchestrationContext, days int) ([]string, error) {
		var stamps []string
		for range days {
			if err := ctx.Sleep(24 * time.Hour); err != nil {
				return nil, err
			}
			stamps = append(stamps, ctx.Now().Format(time.DateOnly))
		}
		g, err := greet.Call(ctx, "timer").Get(ctx)
		return append(stamps, g), err
	})
	env := durabletest.New(t, newRegistry(t, orch, greet))
	began := time.Now()
	env.Start("Daily", "daily-1", 3)
	got := output[[]string](t, env.Wait("daily-1"))
	want := []string{"2025-01-02", "2025-01-03", "2025-01-04", "Hello, timer!"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("output %v, want %v", got, want)
	}
	if d := env.Now().Sub(durabletest.DefaultStartTime); d != 72*time.Hour {
		t.Fatalf("simulated time advanced %s, want 72h", d)
	}
	// Three days of timers take no real time worth waiting for; the bound
	// is loose for a loaded machine.
	if real := time.Since(began); real > 20*time.Second {
		t.Fatalf("three 24h timers took %s of real time", real)
	}
}

func TestTimerRaceWithActivityAndRetryBackoffSkip(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	flaky := durable.NewActivity("Flaky", func(_ context.Context, in string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls < 3 {
			return "", errors.New("transient")
		}
		return in + " done", nil
	})
	orch := durable.NewOrchestration("Retrying", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return flaky.Call(ctx, in, durable.WithRetry(durable.RetryPolicy{
			MaxAttempts: 5, Backoff: durable.Backoff{Kind: durable.BackoffFixed, Delay: time.Hour},
		})).Get(ctx)
	})
	env := durabletest.New(t, newRegistry(t, orch, flaky))
	env.Start("Retrying", "r-1", "job")
	if got := output[string](t, env.Wait("r-1")); got != "job done" {
		t.Fatalf("output %q", got)
	}
	if d := env.Now().Sub(durabletest.DefaultStartTime); d != 2*time.Hour {
		t.Fatalf("two 1h backoffs advanced the clock %s", d)
	}
}

func TestMocksReplaceActivities(t *testing.T) {
	charge := durable.NewActivity("Charge", func(context.Context, int) (string, error) {
		return "", errors.New("the real payment service must not be called")
	})
	orch := durable.NewOrchestration("Checkout", func(ctx *durable.OrchestrationContext, amount int) (string, error) {
		receipt, err := charge.Call(ctx, amount).Get(ctx)
		if err != nil {
			return "", err
		}
		g, err := greet.Call(ctx, receipt).Get(ctx)
		if err != nil {
			return "", err
		}
		// Ship is registered nowhere: the mock adds it.
		shipped, err := durable.CallActivity[durable.Raw](ctx, "Ship", durable.Raw(receipt)).Get(ctx)
		return g + " " + string(shipped), err
	})
	env := durabletest.New(t, newRegistry(t, orch, charge, greet))
	var charged []int
	durabletest.Mock(env, charge, func(amount int) (string, error) {
		charged = append(charged, amount)
		return fmt.Sprintf("receipt-%d", amount), nil
	})
	env.MockActivity("Greet", func(_ context.Context, input string) (string, error) {
		return `"mocked greeting for ` + strings.Trim(input, `"`) + `"`, nil
	})
	env.MockActivity("Ship", func(_ context.Context, input string) (string, error) { return "shipped:" + input, nil })
	env.Start("Checkout", "c-1", 42)
	got := output[string](t, env.Wait("c-1"))
	if got != "mocked greeting for receipt-42 shipped:receipt-42" {
		t.Fatalf("output %q", got)
	}
	if len(charged) != 1 || charged[0] != 42 {
		t.Fatalf("mock called with %v", charged)
	}
}

func TestMocksAfterTheFirstRunFailTheTest(t *testing.T) {
	ft := &fakeT{TB: t}
	env := durabletest.New(ft, newRegistry(t, greet))
	if err := env.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	durabletest.Mock(env, greet, func(string) (string, error) { return "", nil })
	if !ft.fatal || !strings.Contains(ft.msgs[0], "before the first run") {
		t.Fatalf("late mock reported %v", ft.msgs)
	}
}

func TestEventsRaisedAfterSubscription(t *testing.T) {
	orch := durable.NewOrchestration("Approval", func(ctx *durable.OrchestrationContext, req string) (string, error) {
		ctx.SetCustomStatus("waiting")
		ok, err := durable.WaitForEvent[bool](ctx, "Approved").Get(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s approved=%v", req, ok), nil
	})
	env := durabletest.New(t, newRegistry(t, orch))
	env.Start("Approval", "a-1", "leave")
	if err := env.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := env.Status("a-1"); s.State != durable.StateRunning || s.CustomStatus == nil || *s.CustomStatus != "waiting" {
		t.Fatalf("status before the event: %+v", s)
	}
	env.RaiseEvent("a-1", "Approved", true)
	if got := output[string](t, env.Wait("a-1")); got != "leave approved=true" {
		t.Fatalf("output %q", got)
	}
}

func raceOrchestration() durable.Orchestration[string, string] {
	return durable.NewOrchestration("Deadline", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ev := durable.WaitForEvent[string](ctx, "Reply")
		timeout := ctx.CreateTimer(2 * time.Hour)
		if durable.Race(ctx, ev, timeout) == 0 {
			r, err := ev.Get(ctx)
			return "reply " + r + " at " + ctx.Now().Format("15:04"), err
		}
		return "timed out at " + ctx.Now().Format("15:04"), nil
	})
}

func TestEventsAtSimulatedTimesRaceTimers(t *testing.T) {
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{time.Hour, "reply yes at 01:00"},
		{3 * time.Hour, "timed out at 02:00"},
	} {
		t.Run(tc.at.String(), func(t *testing.T) {
			env := durabletest.New(t, newRegistry(t, raceOrchestration()))
			env.Start("Deadline", "d-1", "")
			env.AfterFunc(tc.at, func() { env.RaiseEvent("d-1", "Reply", "yes") })
			if got := output[string](t, env.Wait("d-1")); got != tc.want {
				t.Fatalf("output %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQueuedMessagesWaitForDequeue(t *testing.T) {
	orch := durable.NewOrchestration("Inbox", func(ctx *durable.OrchestrationContext, n int) ([]string, error) {
		var got []string
		for range n {
			m, err := durable.Dequeue[string](ctx, "inbox").Get(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, m)
		}
		return got, nil
	})
	env := durabletest.New(t, newRegistry(t, orch))
	env.Start("Inbox", "i-1", 2)
	// Queue messages are kept until dequeued, so they may be sent at once.
	env.Enqueue("i-1", "inbox", "first")
	env.Enqueue("i-1", "inbox", "second")
	if got := output[[]string](t, env.Wait("i-1")); strings.Join(got, ",") != "first,second" {
		t.Fatalf("output %v", got)
	}
}

func TestRunReportsBlockedInstances(t *testing.T) {
	orch := durable.NewOrchestration("Forever", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitForEvent[string](ctx, "never").Get(ctx)
	})
	env := durabletest.New(t, newRegistry(t, orch))
	env.Start("Forever", "f-1", "")
	err := env.Run(context.Background())
	if !errors.Is(err, durabletest.ErrBlocked) || !strings.Contains(err.Error(), "f-1") {
		t.Fatalf("Run: %v", err)
	}
	env.Cancel("f-1", "test over")
	if s := env.Wait("f-1"); s.State != durable.StateFailed || !strings.Contains(s.Failure.DisplayMessage(), "canceled: test over") {
		t.Fatalf("after cancel: %+v", s)
	}
}

func TestSubOrchestrationsAndContinueAsNew(t *testing.T) {
	child := durable.NewOrchestration("Child", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		if err := ctx.Sleep(time.Duration(n) * time.Hour); err != nil {
			return 0, err
		}
		return n * 10, nil
	})
	parent := durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, round int) (int, error) {
		v, err := child.CallSub(ctx, round).Get(ctx)
		if err != nil {
			return 0, err
		}
		ctx.KV().Set(fmt.Sprint("round-", round), fmt.Sprint(v))
		if round < 3 {
			return 0, ctx.ContinueAsNew(round + 1)
		}
		return v + ctx.KV().Len(), nil
	})
	env := durabletest.New(t, newRegistry(t, parent, child))
	env.Start("Parent", "p-1", 1)
	if got := output[int](t, env.Wait("p-1")); got != 33 {
		t.Fatalf("output %d", got)
	}
	if d := env.Now().Sub(durabletest.DefaultStartTime); d != 6*time.Hour {
		t.Fatalf("clock advanced %s, want 6h", d)
	}
	h := env.History("p-1")
	if h[len(h)-1].ExecutionID != 3 {
		t.Fatalf("history ends in execution %d", h[len(h)-1].ExecutionID)
	}
	if err := durabletest.Replay(env.Registry(), h); err != nil {
		t.Fatal(err)
	}
}

// fakeT records failures instead of failing the test.
type fakeT struct {
	testing.TB
	mu    sync.Mutex
	msgs  []string
	fatal bool
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *fakeT) Fatal(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatal = true
	f.msgs = append(f.msgs, fmt.Sprint(args...))
}

func (f *fakeT) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

// --- Replay verification ---------------------------------------------------

var (
	actA = durable.NewActivity("A", func(_ context.Context, in string) (string, error) { return "a(" + in + ")", nil })
	actB = durable.NewActivity("B", func(_ context.Context, in string) (string, error) { return "b(" + in + ")", nil })
)

type orchFn = func(ctx *durable.OrchestrationContext, in string) (string, error)

// record runs fn as orchestration "Subject" and returns its history as
// JSON lines.
func record(t *testing.T, fn orchFn, opts ...durabletest.Option) string {
	t.Helper()
	env := durabletest.New(t, newRegistry(t, durable.NewOrchestration("Subject", fn), actA, actB), opts...)
	env.Start("Subject", "subject-1", "x")
	env.AfterFunc(time.Hour, func() { env.RaiseEvent("subject-1", "Go", "go") })
	if s := env.Wait("subject-1"); s.State != durable.StateCompleted {
		t.Fatalf("recording: %+v", s)
	}
	return env.HistoryJSON("subject-1")
}

func replayAs(t *testing.T, history string, fn orchFn) error {
	t.Helper()
	return durabletest.ReplayJSON(newRegistry(t, durable.NewOrchestration("Subject", fn), actA, actB), strings.NewReader(history))
}

func TestReplayHistoryPassesOnRecordedHistories(t *testing.T) {
	fn := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a := actA.Call(ctx, in)
		w := durable.WaitForEvent[string](ctx, "Go")
		ev, err := w.Get(ctx)
		if err != nil {
			return "", err
		}
		ra, err := a.Get(ctx)
		if err != nil {
			return "", err
		}
		ctx.SetCustomStatus("half")
		ctx.KV().Set("k", ra)
		if err := ctx.Sleep(30 * time.Minute); err != nil {
			return "", err
		}
		rb, err := actB.Call(ctx, ra+ev, durable.WithTag("gpu")).Get(ctx)
		return rb, err
	}
	history := record(t, fn, durabletest.WithRuntimeOptions(func(o *durable.Options) { o.WorkerTags = provider.AnyTag() }))
	reg := newRegistry(t, durable.NewOrchestration("Subject", fn), actA, actB)
	if err := durabletest.ReplayHistory(t, reg, strings.NewReader(history)); err != nil {
		t.Fatal(err)
	}
	// The output is part of what is reproduced.
	changed := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		out, err := fn(ctx, in)
		return out + "!", err
	}
	err := replayAs(t, history, changed)
	if !errors.Is(err, durable.ErrNondeterminism) || !strings.Contains(err.Error(), "outcome mismatch") {
		t.Fatalf("changed output: %v", err)
	}
	// ReplayHistory reports through t.
	ft := &fakeT{TB: t}
	if err := durabletest.ReplayHistory(ft, newRegistry(t, durable.NewOrchestration("Subject", changed), actA, actB), strings.NewReader(history)); err == nil || len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "outcome mismatch") {
		t.Fatalf("ReplayHistory reported %v, returned %v", ft.msgs, err)
	}
}

func TestReplayHistoryFailsOnMutatedCode(t *testing.T) {
	anyTag := durabletest.WithRuntimeOptions(func(o *durable.Options) { o.WorkerTags = provider.AnyTag() })
	for _, tc := range []struct {
		name          string
		original, new orchFn
		want          string
	}{
		{
			name: "swap_activity",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actB.Call(ctx, in).Get(ctx)
			},
			want: `nondeterministic: schedule mismatch: action=CallActivity { name: "B", input: "\"x\"", session_id: None, tag: None } vs event=ActivityScheduled { name: "A", input: "\"x\"", session_id: None, tag: None }`,
		},
		{
			name: "change_input",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in+"2").Get(ctx)
			},
			want: `nondeterministic: schedule mismatch: action=CallActivity { name: "A", input: "\"x2\"", session_id: None, tag: None } vs event=ActivityScheduled { name: "A", input: "\"x\"", session_id: None, tag: None }`,
		},
		{
			name: "drop_an_await",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				if err := ctx.Sleep(time.Minute); err != nil {
					return "", err
				}
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			want: `nondeterministic: schedule mismatch: action=CallActivity { name: "A", input: "\"x\"", session_id: None, tag: None } vs event=TimerCreated`,
		},
		{
			name: "drop_a_trailing_await",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				a, err := actA.Call(ctx, in).Get(ctx)
				if err != nil {
					return "", err
				}
				if _, err := actB.Call(ctx, in).Get(ctx); err != nil {
					return "", err
				}
				return a, nil
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			want: "nondeterministic: history schedule but no emitted action",
		},
		{
			name: "add_a_cancel",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				durable.WaitForEvent[string](ctx, "Never")
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				w := durable.WaitForEvent[string](ctx, "Never")
				out, err := actA.Call(ctx, in).Get(ctx)
				w.Cancel()
				return out, err
			},
			want: "cancellation mismatch: the code cancels event 2",
		},
		{
			name: "remove_a_cancel",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				w := durable.WaitForEvent[string](ctx, "Never")
				w.Cancel()
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				durable.WaitForEvent[string](ctx, "Never")
				return actA.Call(ctx, in).Get(ctx)
			},
			want: "nondeterministic: cancellation mismatch (external waits)",
		},
		{
			name: "change_tag",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in, durable.WithTag("gpu")).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in, durable.WithTag("cpu")).Get(ctx)
			},
			want: `nondeterministic: schedule mismatch: action=CallActivity { name: "A", input: "\"x\"", session_id: None, tag: Some("cpu") } vs event=ActivityScheduled { name: "A", input: "\"x\"", session_id: None, tag: Some("gpu") }`,
		},
		{
			name: "change_session",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in, durable.OnSession("s1")).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in, durable.OnSession("s2")).Get(ctx)
			},
			want: `nondeterministic: schedule mismatch: action=CallActivity { name: "A", input: "\"x\"", session_id: Some("s2"), tag: None } vs event=ActivityScheduled { name: "A", input: "\"x\"", session_id: Some("s1"), tag: None }`,
		},
		{
			name: "add_a_fire_and_forget_activity",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				out, err := actA.Call(ctx, in).Get(ctx)
				actB.Call(ctx, in)
				return out, err
			},
			want: `the code emits ActivityScheduled {"name":"B","input":"\"x\""} beyond the recorded history`,
		},
		{
			name: "remove_a_fire_and_forget_activity",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				out, err := actA.Call(ctx, in).Get(ctx)
				actB.Call(ctx, in)
				ctx.KV().Set("k", "v")
				return out, err
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				out, err := actA.Call(ctx, in).Get(ctx)
				ctx.KV().Set("k", "v")
				return out, err
			},
			want: `nondeterministic: schedule mismatch: action=SetKeyValue { key: "k", value: "v" } vs event=ActivityScheduled { name: "B"`,
		},
		{
			name: "add_an_activity",
			original: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				return actA.Call(ctx, in).Get(ctx)
			},
			new: func(ctx *durable.OrchestrationContext, in string) (string, error) {
				a, err := actA.Call(ctx, in).Get(ctx)
				if err != nil {
					return "", err
				}
				return actB.Call(ctx, a).Get(ctx)
			},
			want: `outcome mismatch: history ends with OrchestrationCompleted {"output":"\"a(x)\""} but the code emits ActivityScheduled`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history := record(t, tc.original, anyTag)
			// The recorded code replays cleanly.
			if err := replayAs(t, history, tc.original); err != nil {
				t.Fatalf("original code: %v", err)
			}
			err := replayAs(t, history, tc.new)
			if !errors.Is(err, durable.ErrNondeterminism) {
				t.Fatalf("mutated code: %v, want ErrNondeterminism", err)
			}
			var re *durabletest.ReplayError
			if !errors.As(err, &re) || re.Instance != "subject-1" || re.ExecutionID != 1 {
				t.Fatalf("error %#v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReplayChecksRunningHistories(t *testing.T) {
	fn := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := actA.Call(ctx, in).Get(ctx); err != nil {
			return "", err
		}
		return durable.WaitForEvent[string](ctx, "Never").Get(ctx)
	}
	env := durabletest.New(t, newRegistry(t, durable.NewOrchestration("Subject", fn), actA, actB))
	env.Start("Subject", "subject-1", "x")
	if err := env.RunUntilIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	history := env.HistoryJSON("subject-1")
	if err := replayAs(t, history, fn); err != nil {
		t.Fatalf("original code: %v", err)
	}
	// Code that schedules more than history is new work, not a mismatch.
	more := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := actA.Call(ctx, in).Get(ctx); err != nil {
			return "", err
		}
		w := durable.WaitForEvent[string](ctx, "Never")
		actB.Call(ctx, in)
		return w.Get(ctx)
	}
	if err := replayAs(t, history, more); err != nil {
		t.Fatalf("code with new work: %v", err)
	}
	// Code that no longer waits does not reproduce a running execution.
	done := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		durable.WaitForEvent[string](ctx, "Never")
		return actA.Call(ctx, in).Get(ctx)
	}
	err := replayAs(t, history, done)
	if !errors.Is(err, durable.ErrNondeterminism) {
		t.Fatalf("code that completes: %v", err)
	}
	env.Cancel("subject-1", "done")
	env.Wait("subject-1")
}

func TestReplayReportsUnregisteredOrchestrations(t *testing.T) {
	history := `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":0,"duroxide_version":"0.1.29","type":"OrchestrationStarted","name":"Missing","version":"1.0.0","input":"","parent_instance":null,"parent_id":null}`
	err := durabletest.ReplayJSON(newRegistry(t), strings.NewReader(history))
	if err == nil || errors.Is(err, durable.ErrNondeterminism) || !strings.Contains(err.Error(), "Missing") {
		t.Fatalf("err %v", err)
	}
}

// The end-of-test replay check accepts the histories of common shapes:
// races whose loser is cancelled, branches, fan-out, retries with
// timeouts, detached starts, custom status, failures and cancellation.
func TestReplayCheckAcceptsCommonShapes(t *testing.T) {
	slow := durable.NewActivity("Slow", func(_ context.Context, in string) (string, error) { return "slow " + in, nil })
	fail := durable.NewActivity("Fail", func(context.Context, string) (string, error) { return "", errors.New("boom") })
	worker := durable.NewOrchestration("Worker", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "bad" {
			_, err := fail.Call(ctx, in).Get(ctx)
			return "", err
		}
		return actA.Call(ctx, in).Get(ctx)
	})
	shapes := durable.NewOrchestration("Shapes", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus("racing")
		a := actA.Call(ctx, "race")
		w := durable.WaitForEvent[string](ctx, "Never")
		if durable.Race(ctx, a, w) != 0 {
			return "", errors.New("the event cannot win")
		}
		branch := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			if err := ctx.Sleep(time.Hour); err != nil {
				return "", err
			}
			return actB.Call(ctx, "branch").Get(ctx)
		})
		fan := []durable.Future[string]{actA.Call(ctx, "1"), actA.Call(ctx, "2"), slow.Call(ctx, "3")}
		all, err := durable.AwaitAll(ctx, fan...)
		if err != nil {
			return "", err
		}
		b, err := branch.Get(ctx)
		if err != nil {
			return "", err
		}
		_, ferr := fail.Call(ctx, "x", durable.WithRetry(durable.RetryPolicy{MaxAttempts: 2, Timeout: time.Minute})).Get(ctx)
		if _, err := worker.CallSub(ctx, "bad").Get(ctx); err == nil {
			return "", errors.New("the child should fail")
		}
		if err := ctx.StartOrchestration("Worker", "detached-1", "ok"); err != nil {
			return "", err
		}
		guid, err := ctx.NewGUID().Get(ctx)
		if err != nil || guid == "" {
			return "", fmt.Errorf("guid %q: %v", guid, err)
		}
		ctx.ClearCustomStatus()
		return fmt.Sprintf("%v %s %v", all, b, ferr), nil
	})
	cancelled := durable.NewOrchestration("Cancelled", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := worker.CallSub(ctx, "ok").Get(ctx)
		if err != nil {
			return "", err
		}
		return durable.WaitForEvent[string](ctx, "Never").Get(ctx)
	})
	env := durabletest.New(t, newRegistry(t, shapes, worker, cancelled, actA, actB, slow, fail))
	env.Start("Shapes", "shapes-1", "")
	env.Start("Cancelled", "cancelled-1", "")
	env.AfterFunc(time.Hour, func() { env.Cancel("cancelled-1", "enough") })
	if err := env.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := output[string](t, env.Status("shapes-1")); got != "[a(1) a(2) slow 3] b(branch) boom" {
		t.Fatalf("output %q", got)
	}
	if s := env.Wait("detached-1"); s.State != durable.StateCompleted {
		t.Fatalf("detached: %+v", s)
	}
	if s := env.Status("cancelled-1"); s.State != durable.StateFailed {
		t.Fatalf("cancelled: %+v", s)
	}
	for _, id := range []string{"shapes-1", "cancelled-1", "detached-1"} {
		if err := durabletest.Replay(env.Registry(), env.History(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// A history that ended in nondeterminism passes when today's code
// reproduces that failure, and fails when it does not.
func TestReplayReproducesRecordedNondeterminism(t *testing.T) {
	msg := `schedule mismatch: action=CallActivity { name: "B", input: "\"x\"", session_id: None, tag: None } vs event=ActivityScheduled { name: "A", input: "\"x\"", session_id: None, tag: None }`
	ev := func(id uint64, kind provider.EventKind) provider.Event {
		return provider.Event{EventID: id, InstanceID: "nd-1", ExecutionID: 1, TimestampMs: 1, DuroxideVersion: durable.ReplayVersion, Kind: kind}
	}
	history := []provider.Event{
		ev(1, provider.OrchestrationStarted{Name: "Subject", Version: "1.0.0", Input: `"x"`}),
		ev(2, provider.ActivityScheduled{Name: "A", Input: `"x"`}),
		ev(3, provider.OrchestrationFailed{Details: provider.ConfigurationDetails{Kind: provider.ConfigNondeterminism, Message: &msg}}),
	}
	var b strings.Builder
	if err := durabletest.WriteHistory(&b, history); err != nil {
		t.Fatal(err)
	}
	callB := func(ctx *durable.OrchestrationContext, in string) (string, error) { return actB.Call(ctx, in).Get(ctx) }
	if err := replayAs(t, b.String(), callB); err != nil {
		t.Fatalf("code that reproduces the failure: %v", err)
	}
	callA := func(ctx *durable.OrchestrationContext, in string) (string, error) { return actA.Call(ctx, in).Get(ctx) }
	if err := replayAs(t, b.String(), callA); !errors.Is(err, durable.ErrNondeterminism) || !strings.Contains(err.Error(), "outcome mismatch") {
		t.Fatalf("code that no longer fails: %v", err)
	}
}

// A key keeps the time it was set: a later turn, which replays the Set,
// prunes it by that time, not by the time of the turn that replays it.
func TestKVPruneUsesTheTimeAKeyWasSet(t *testing.T) {
	orch := durable.NewOrchestration("Prune", func(ctx *durable.OrchestrationContext, _ string) ([]string, error) {
		ctx.KV().Set("old", "1")
		if err := ctx.Sleep(time.Hour); err != nil {
			return nil, err
		}
		ctx.KV().Set("new", "2")
		pruned := ctx.KV().PruneUpdatedBefore(ctx.Now().Add(-30 * time.Minute))
		return append([]string{fmt.Sprint(pruned)}, ctx.KV().Keys()...), nil
	})
	env := durabletest.New(t, newRegistry(t, orch))
	env.Start("Prune", "p-1", "")
	if got := output[[]string](t, env.Wait("p-1")); strings.Join(got, ",") != "1,new" {
		t.Fatalf("pruned and kept %v, want 1 pruned and [new] kept", got)
	}
}
