package durable

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// BenchmarkVerifyReplay measures what Options.VerifyReplay costs: one op is
// a chain of activities, started and awaited on memprovider, each turn
// resuming kept code; with rate 1 each turn is also replayed from history
// and compared, and every call records its source line.
//
//	go test -run '^$' -bench BenchmarkVerifyReplay ./durable/
func BenchmarkVerifyReplay(b *testing.B) {
	for _, steps := range []int{10, 100} {
		for _, rate := range []float64{0, 1} {
			b.Run(fmt.Sprintf("steps=%d/rate=%g", steps, rate), func(b *testing.B) {
				rt := utStart(b, memprovider.New(), chainRegistry(b, steps, nil), utQuick, func(o *Options) { o.VerifyReplay = rate })
				c := rt.Client()
				ctx := utCtx(b)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					id := "bench-" + strconv.Itoa(i)
					if err := c.StartOrchestration(ctx, id, "Chain", 0); err != nil {
						b.Fatal(err)
					}
					if out := utCompleted(b, c, id); out != strconv.Itoa(steps) {
						b.Fatalf("output %s; want %d", out, steps)
					}
				}
			})
		}
	}
}

// BenchmarkVerifyReplayTurns measures the CPU Options.VerifyReplay costs
// without a provider: one op drives a chain of activities through all its
// turns in memory, each resuming the kept code, as the runtime computes
// them; with rate 1 each turn is also replayed from history and compared.
func BenchmarkVerifyReplayTurns(b *testing.B) {
	for _, steps := range []int{10, 100} {
		for _, rate := range []float64{0, 1} {
			b.Run(fmt.Sprintf("steps=%d/rate=%g", steps, rate), func(b *testing.B) {
				rt, err := NewRuntime(memprovider.New(), chainRegistry(b, steps, nil), utQuick, func(o *Options) { o.VerifyReplay = rate })
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if out := driveChain(b, rt); out != strconv.Itoa(steps) {
						b.Fatalf("output %s; want %d", out, steps)
					}
				}
			})
		}
	}
}

// driveChain runs the turns of one instance of chainRegistry's Chain as
// rt computes them, answering each activity at once, and returns the
// output.
func driveChain(b *testing.B, rt *Runtime) string {
	var history []provider.Event
	msgs := []provider.WorkItem{provider.StartOrchestrationItem{Instance: "bench", Orchestration: "Chain", Input: "0", ExecutionID: provider.InitialExecutionID}}
	var held *replay.Held
	defer func() { held.Close() }()
	for {
		item := &provider.OrchestrationItem{Instance: "bench", OrchestrationName: "Chain", ExecutionID: provider.InitialExecutionID,
			History: history, Messages: msgs, LockToken: "token", AttemptCount: 1}
		in := rt.turnInput(rt.log, item, nil)
		turn, err := replay.Resume(held, in)
		if err != nil {
			b.Fatal(err)
		}
		held, turn.Held = turn.Held, nil
		if rt.verifySampled() && rt.verifyTurn(rt.log, in, turn) != nil {
			b.Fatal("a deterministic chain diverged")
		}
		history = append(history, turn.Commit.HistoryDelta...)
		if turn.Outcome != replay.Continue {
			return turn.Output
		}
		msgs = nil
		for _, a := range turn.Commit.WorkerItems {
			n, _ := strconv.Atoi(a.Input)
			msgs = append(msgs, provider.ActivityCompletedItem{Instance: "bench", ExecutionID: provider.InitialExecutionID, ID: a.ID, Result: strconv.Itoa(n + 1)})
		}
	}
}
