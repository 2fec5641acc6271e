package durable

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// heldTurn returns the code of instance's first turn, blocked on an
// activity; unwound counts the times a deferred call of the code ran.
func heldTurn(t *testing.T, instance string, unwound *atomic.Int32) *replay.Held {
	t.Helper()
	reg, err := NewRegistry(OrchestrationFunc(testOrch, func(ctx *OrchestrationContext, in string) (string, error) {
		defer unwound.Add(1)
		r, err := CallActivity[Raw](ctx, "wait", Raw(in)).Get(ctx)
		return string(r), err
	}, Version(testVersion)))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := replay.Run(replay.Input{
		Item: &provider.OrchestrationItem{Instance: instance, OrchestrationName: testOrch, ExecutionID: 1, Version: testVersion, LockToken: "token", AttemptCount: 1,
			Messages: []provider.WorkItem{provider.StartOrchestrationItem{Instance: instance, Orchestration: testOrch, Input: "x", Version: ptrTo(testVersion), ExecutionID: 1}}},
		Now: testTurnTime, Resolve: reg.resolve, YieldTimeout: 10 * time.Second, Keep: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Held == nil {
		t.Fatal("no code held")
	}
	return turn.Held
}

func TestHeldCodeIsBoundedAndUnwound(t *testing.T) {
	var unwound atomic.Int32
	c := newHeldCode(2)
	for _, id := range []string{"a", "b", "c"} {
		c.put(id, heldTurn(t, id, &unwound))
	}
	if n := unwound.Load(); n != 1 || c.len() != 2 {
		t.Fatalf("%d executions unwound, %d held; want the least recently used of 3 unwound and 2 held", n, c.len())
	}
	if c.take("a") != nil {
		t.Fatal("the evicted execution is still held")
	}
	b := c.take("b")
	if b == nil || c.take("b") != nil {
		t.Fatal("take does not hand the held code out exactly once")
	}
	b.Close()
	c.put("c", heldTurn(t, "c", &unwound)) // displaces the older code of c
	if n := unwound.Load(); n != 3 || c.len() != 1 {
		t.Fatalf("%d unwound, %d held; want 3 and 1", n, c.len())
	}
	c.close()
	if n := unwound.Load(); n != 4 || c.len() != 0 {
		t.Fatalf("after close %d unwound, %d held; want 4 and 0", n, c.len())
	}
	c.put("d", heldTurn(t, "d", &unwound))
	if n := unwound.Load(); n != 5 || c.len() != 0 {
		t.Fatalf("a put after close left %d unwound, %d held; want 5 and 0", n, c.len())
	}
	off := newHeldCode(-1)
	if off.enabled() {
		t.Fatal("a cache of size -1 is enabled")
	}
	off.put("e", heldTurn(t, "e", &unwound))
	if n := unwound.Load(); n != 6 || off.len() != 0 {
		t.Fatalf("a disabled cache kept code: %d unwound, %d held", n, off.len())
	}
}

// A chain's turns after the first resume the code the runtime kept, and the
// runtime unwinds what it keeps when it shuts down; with the cache off,
// every turn replays.
func TestRuntimeResumesTheTurnsOfAChain(t *testing.T) {
	const steps = 10
	for _, size := range []int{0, -1} {
		t.Run(fmt.Sprintf("ExecutionCacheSize %d", size), func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			var unwound atomic.Int32
			reg := chainRegistry(t, steps, &unwound)
			rt := utStart(t, memprovider.New(), reg, utQuick, func(o *Options) {
				o.TracerProvider = tp
				o.ExecutionCacheSize = size
			})
			if err := rt.Client().StartOrchestration(utCtx(t), "chain-1", "Chain", 0); err != nil {
				t.Fatal(err)
			}
			if out := utCompleted(t, rt.Client(), "chain-1"); out != strconv.Itoa(steps) {
				t.Fatalf("output %s, want %d", out, steps)
			}
			utShutdown(t, rt)
			resumed, replayed := resumedTurns(spans)
			wantResumed, wantReplayed := steps, 1
			if size < 0 {
				wantResumed, wantReplayed = 0, steps+1
			}
			if resumed != wantResumed || replayed != wantReplayed {
				t.Fatalf("%d turns resumed, %d replayed; want %d and %d", resumed, replayed, wantResumed, wantReplayed)
			}
			// The code ran to its end once; with the cache off every turn's
			// run was unwound too. Nothing is left held after Shutdown.
			wantUnwound := int32(1)
			if size < 0 {
				wantUnwound = steps + 1
			}
			if n := unwound.Load(); n != wantUnwound || rt.held.len() != 0 {
				t.Fatalf("the code's deferred call ran %d times, %d executions held after Shutdown; want %d and 0", n, rt.held.len(), wantUnwound)
			}
		})
	}
}

// lateAck is memprovider whose ack of a turn that schedules activities
// returns only once the execution's next turn has been fetched (or after
// a while): the next turn is then taken, by the runtime's other
// dispatcher, before the committing turn has put its code away.
type lateAck struct {
	*memprovider.Provider
	fetched chan struct{}
}

func (p *lateAck) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		select {
		case p.fetched <- struct{}{}:
		default:
		}
	}
	return item, err
}

func (p *lateAck) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	select {
	case <-p.fetched: // this turn's own fetch
	default:
	}
	err := p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
	if err == nil && len(commit.WorkerItems) > 0 {
		select {
		case <-p.fetched:
		case <-time.After(5 * time.Second):
		}
	}
	return err
}

// A turn's commit lets the execution's next turn be fetched before the
// committing turn has put its code away: that next turn waits for the put
// and resumes, instead of finding nothing kept and replaying.
func TestNextTurnWaitsForTheCommittingTurnsCode(t *testing.T) {
	const steps = 4
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reg := chainRegistry(t, steps, nil)
	p := &lateAck{Provider: memprovider.New(), fetched: make(chan struct{}, 1)}
	rt := utStart(t, p, reg, utQuick, func(o *Options) { o.TracerProvider = tp })
	if err := rt.Client().StartOrchestration(utCtx(t), "chain-late", "Chain", 0); err != nil {
		t.Fatal(err)
	}
	if out := utCompleted(t, rt.Client(), "chain-late"); out != strconv.Itoa(steps) {
		t.Fatalf("output %s, want %d", out, steps)
	}
	utShutdown(t, rt)
	resumed, replayed := resumedTurns(spans)
	if resumed != steps || replayed != 1 {
		t.Fatalf("%d turns resumed, %d replayed; want %d and 1", resumed, replayed, steps)
	}
}

// resumedTurns counts the turn spans of spans that resumed kept code and
// those that replayed.
func resumedTurns(spans *tracetest.InMemoryExporter) (resumed, replayed int) {
	for _, s := range spans.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == attrTurnResumed {
				if a.Value.AsBool() {
					resumed++
				} else {
					replayed++
				}
			}
		}
	}
	return resumed, replayed
}

// chainRegistry registers "Chain", steps activities "Step" one after the
// other, each adding 1; unwound, if set, counts the times the chain's
// deferred call ran.
func chainRegistry(t testing.TB, steps int, unwound *atomic.Int32) *Registry {
	t.Helper()
	step := NewActivity("Step", func(_ context.Context, n int) (int, error) { return n + 1, nil })
	chain := NewOrchestration("Chain", func(ctx *OrchestrationContext, n int) (int, error) {
		if unwound != nil {
			defer unwound.Add(1)
		}
		for range steps {
			var err error
			if n, err = step.Call(ctx, n).Get(ctx); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	reg, err := NewRegistry(step, chain)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
