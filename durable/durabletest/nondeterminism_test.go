package durabletest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
)

// callerLine returns the line of its caller.
func callerLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

// mapRange visits the keys of a map, one activity at a time, in the
// map's order, which changes from run to run: nondeterministic code that
// the runtime's kept code hides. line receives the line of the call.
func mapRange(line *atomic.Int64) durable.Definition {
	return durable.NewOrchestration("MapRange", func(ctx *durable.OrchestrationContext, _ string) (int, error) {
		keys := map[string]bool{}
		for i := range 16 {
			keys[fmt.Sprintf("k%02d", i)] = true
		}
		for k := range keys { //durablevet:ignore the nondeterminism under test
			f, l := durable.CallActivity[durable.Raw](ctx, "Visit", durable.Raw(k)), callerLine()
			line.Store(int64(l))
			if _, err := f.Get(ctx); err != nil {
				return 0, err
			}
		}
		return len(keys), nil
	})
}

var visit = durable.ActivityFunc("Visit", func(_ context.Context, in string) (string, error) { return in, nil })

// A unit test of an orchestration that ranges over a map fails, and the
// failure names the orchestration and the line of the call.
func TestNondeterministicCodeFailsTheTest(t *testing.T) {
	var line atomic.Int64
	ft := &fakeT{TB: t}
	env := durabletest.New(ft, newRegistry(t, mapRange(&line), visit))
	env.Start("MapRange", "map-1", "")
	if st := env.Wait("map-1"); st.State != durable.StateFailed {
		t.Fatalf("state %v, output %q; want Failed", st.State, st.Output)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.msgs) != 1 || ft.fatal {
		t.Fatalf("reported %q (fatal %v); want one error", ft.msgs, ft.fatal)
	}
	for _, want := range []string{
		"instance map-1 of MapRange version 1.0.0 is nondeterministic",
		`CallActivity { name: "Visit"`,
		fmt.Sprintf("at nondeterminism_test.go:%d in durabletest_test.mapRange.func1", line.Load()),
	} {
		if !strings.Contains(ft.msgs[0], want) {
			t.Errorf("reported %q\nwant it to contain %q", ft.msgs[0], want)
		}
	}
}

// Without the check, kept code runs the same orchestration to its end:
// the check, not a replay that happened to occur, is what caught it.
func TestWithoutReplayCheckKeptCodeHidesNondeterminism(t *testing.T) {
	var line atomic.Int64
	ft := &fakeT{TB: t}
	env := durabletest.New(ft, newRegistry(t, mapRange(&line), visit), durabletest.WithoutReplayCheck())
	env.Start("MapRange", "map-1", "")
	if got := output[int](t, env.Wait("map-1")); got != 16 {
		t.Fatalf("output %d; want 16", got)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.msgs) != 0 {
		t.Fatalf("reported %q; want nothing", ft.msgs)
	}
}

// Replay names the line of the call that does not match history.
func TestReplayNamesTheLineOfTheMismatchedCall(t *testing.T) {
	history := record(t, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return actA.Call(ctx, in).Get(ctx)
	})
	var line int
	err := replayAs(t, history, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		f, l := actA.Call(ctx, in+"!"), callerLine()
		line = l
		return f.Get(ctx)
	})
	want := fmt.Sprintf("(call #1, at nondeterminism_test.go:%d in durabletest_test.TestReplayNamesTheLineOfTheMismatchedCall.func2)", line)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant it to contain %q", err, want)
	}
}
