package durable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// mapRangeKeys is how many keys the nondeterministic orchestration ranges
// over: enough that two runs practically never visit them in one order.
const mapRangeKeys = 16

// mapRangeOrchestration visits the keys of a map one activity at a time,
// in the map's order: nondeterministic, since that order changes from run
// to run. line receives the line of its activity call.
func mapRangeOrchestration(line *atomic.Int64) Definition {
	return NewOrchestration("MapRange", func(ctx *OrchestrationContext, _ string) (int, error) {
		keys := map[string]bool{}
		for i := range mapRangeKeys {
			keys[fmt.Sprintf("k%02d", i)] = true
		}
		n := 0
		for k := range keys { //durablevet:ignore the nondeterminism under test
			f, l := CallActivity[Raw](ctx, "Visit", Raw(k)), callerLine()
			line.Store(int64(l))
			if _, err := f.Get(ctx); err != nil {
				return 0, err
			}
			n++
		}
		return n, nil
	}, Version("1.2.0"))
}

// callerLine returns the line of its caller.
func callerLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

var visit = ActivityFunc("Visit", func(_ context.Context, in string) (string, error) { return in, nil })

// Kept code hides an orchestration that ranges over a map: each turn
// resumes the code where the last left it, in the same iteration. With
// VerifyReplay 1 every turn is replayed from history too, and the first
// difference fails the instance as nondeterministic, naming the
// orchestration, its version and the line of the call.
func TestVerifyReplayReportsAMapRangeRunKept(t *testing.T) {
	t.Run("VerifyReplay 0", func(t *testing.T) {
		var line atomic.Int64
		_, c, _ := utServe(t, mapRangeOrchestration(&line), visit)
		if err := c.StartOrchestration(utCtx(t), "map-0", "MapRange", ""); err != nil {
			t.Fatal(err)
		}
		if out := utCompleted(t, c, "map-0"); out != fmt.Sprint(mapRangeKeys) {
			t.Fatalf("output %s; want %d", out, mapRangeKeys)
		}
	})
	t.Run("VerifyReplay 1", func(t *testing.T) {
		var line atomic.Int64
		reg, err := NewRegistry(mapRangeOrchestration(&line), visit)
		if err != nil {
			t.Fatal(err)
		}
		rt := utStart(t, memprovider.New(), reg, utQuick, func(o *Options) { o.VerifyReplay = 1 })
		c := rt.Client()
		if err := c.StartOrchestration(utCtx(t), "map-1", "MapRange", ""); err != nil {
			t.Fatal(err)
		}
		st := utWait(t, c, "map-1")
		if st.State != StateFailed {
			t.Fatalf("state %v, output %q; want Failed", st.State, st.Output)
		}
		err = &FailureError{Instance: "map-1", Details: st.Failure}
		if !errors.Is(err, ErrNondeterminism) {
			t.Fatalf("failure %v; want nondeterminism", err)
		}
		t.Logf("failure: %v", err)
		for _, want := range []string{
			"orchestration MapRange version 1.2.0",
			`differs: as run, the code made CallActivity { name: "Visit"`,
			fmt.Sprintf("verify_test.go:%d in durable.mapRangeOrchestration.func1", line.Load()),
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("failure %q\nwant it to contain %q", err, want)
			}
		}
	})
}

// A deterministic orchestration passes every check: its turns, kept or
// not, commit what they would without the check.
func TestVerifyReplayPassesDeterministicCode(t *testing.T) {
	for _, size := range []int{0, -1} {
		t.Run(fmt.Sprintf("ExecutionCacheSize %d", size), func(t *testing.T) {
			reg := chainRegistry(t, 10, nil)
			rt := utStart(t, memprovider.New(), reg, utQuick, func(o *Options) {
				o.VerifyReplay = 1
				o.ExecutionCacheSize = size
			})
			if err := rt.Client().StartOrchestration(utCtx(t), "chain-v", "Chain", 0); err != nil {
				t.Fatal(err)
			}
			if out := utCompleted(t, rt.Client(), "chain-v"); out != "10" {
				t.Fatalf("output %s; want 10", out)
			}
		})
	}
}

func TestVerifyReplayOption(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := NewRuntime(memprovider.New(), reg, func(o *Options) { o.VerifyReplay = rate }); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("VerifyReplay %v: %v; want ErrInvalidInput", rate, err)
		}
	}
	for _, rate := range []float64{0, 0.25, 1} {
		if _, err := NewRuntime(memprovider.New(), reg, func(o *Options) { o.VerifyReplay = rate }); err != nil {
			t.Errorf("VerifyReplay %v: %v", rate, err)
		}
	}
}

// divergeRun is one computation of a turn of orchestration "Visits",
// which visits order one activity at a time and returns out.
type divergeRun struct {
	order []string
	out   string
}

// TestDivergeNamesTheFirstDifferingCall compares two computations of a
// turn whose code makes different calls, as the runtime's check does, and
// checks which call, and which lines, the divergence names.
func TestDivergeNamesTheFirstDifferingCall(t *testing.T) {
	var run divergeRun
	var line atomic.Int64
	reg, err := NewRegistry(OrchestrationFunc("Visits", func(ctx *OrchestrationContext, _ string) (string, error) {
		for _, k := range run.order {
			f, l := CallActivity[Raw](ctx, "Visit", Raw(k)), callerLine()
			line.Store(int64(l))
			if _, err := f.Get(ctx); err != nil {
				return "", err
			}
		}
		return run.out, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	start := provider.StartOrchestrationItem{Instance: "v", Orchestration: "Visits", ExecutionID: provider.InitialExecutionID}
	turnOf := func(r divergeRun, history []provider.Event, msgs ...provider.WorkItem) *replay.Turn {
		t.Helper()
		run = r
		turn, err := replay.Run(replay.Input{Item: &provider.OrchestrationItem{
			Instance: "v", OrchestrationName: "Visits", ExecutionID: provider.InitialExecutionID, History: history,
			Messages: msgs, LockToken: "token", AttemptCount: 1,
		}, Now: testTurnTime, Resolve: reg.resolve, YieldTimeout: 10 * time.Second, Callers: true})
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	ab, ba := divergeRun{order: []string{"a", "b"}}, divergeRun{order: []string{"b", "a"}}
	call := func(k string) string {
		return fmt.Sprintf(`CallActivity { name: "Visit", input: %q, session_id: None, tag: None } at verify_test.go:%d in durable.TestDivergeNamesTheFirstDifferingCall.func1`, k, line.Load())
	}

	first := turnOf(ab, nil, start)
	if d := replay.Diverge(nil, first, turnOf(ab, nil, start)); d != nil {
		t.Fatalf("two runs of the same code diverge: %v", d)
	}
	t.Run("new calls differ", func(t *testing.T) {
		d := replay.Diverge(nil, first, turnOf(ba, nil, start))
		want := "call #1 differs: as run, the code made " + call("a") + "; replayed, it makes " + call("b")
		if d == nil || d.Position != 0 || d.String() != want {
			t.Fatalf("divergence %v\nwant %s", d, want)
		}
	})
	t.Run("a call history does not hold", func(t *testing.T) {
		history := first.Commit.HistoryDelta
		done := provider.ActivityCompletedItem{Instance: "v", ExecutionID: provider.InitialExecutionID, ID: first.Commit.WorkerItems[0].ID, Result: "ok"}
		second := turnOf(ab, history, done)
		d := replay.Diverge(history, second, turnOf(ba, history, done))
		want := "call #1 differs: as run, the code made " + call("a") + "; replayed, it makes " + call("b")
		if d == nil || d.Position != 0 || d.String() != want {
			t.Fatalf("divergence %v\nwant %s", d, want)
		}
	})
	t.Run("the same calls, another output", func(t *testing.T) {
		history := first.Commit.HistoryDelta
		one := divergeRun{order: []string{"a"}, out: "one"}
		done := provider.ActivityCompletedItem{Instance: "v", ExecutionID: provider.InitialExecutionID, ID: first.Commit.WorkerItems[0].ID, Result: "ok"}
		d := replay.Diverge(history, turnOf(one, history, done), turnOf(divergeRun{order: []string{"a"}, out: "two"}, history, done))
		if d == nil || d.Position != -1 || !strings.Contains(d.Ran, `OrchestrationCompleted {"output":"one"}`) || !strings.Contains(d.Replayed, `"two"`) {
			t.Fatalf("divergence %v; want the outputs", d)
		}
	})
}
