package runtimetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// duroxide's async blocks joined or raced are durable.Go branches here.
var cmpAsyncBlockTests = []Test{
	{"async_block_join_with_control_flow", cmpAsyncBlockJoinWithControlFlow},
	{"async_block_join_many", cmpAsyncBlockJoinMany},
	{"async_block_sequential", cmpAsyncBlockSequential},
	{"async_block_select_racing", cmpAsyncBlockSelectRacing},
	{"async_block_vs_durable_future", cmpAsyncBlockVsDurableFuture},
	{"async_block_select3_with_timers", cmpAsyncBlockSelect3WithTimers},
	{"async_block_nested_join_in_select", cmpAsyncBlockNestedJoinInSelect},
	{"async_block_suborchestration_wins_race", cmpAsyncBlockSuborchestrationWinsRace},
	{"async_block_suborchestration_loses_race", cmpAsyncBlockSuborchestrationLosesRace},
	{"async_block_multiple_suborchestrations_joined", cmpAsyncBlockMultipleSuborchestrationsJoined},
	{"async_block_suborchestration_racing_timeout", cmpAsyncBlockSuborchestrationRacingTimeout},
	{"async_block_nested_suborchestration_chain", cmpAsyncBlockNestedSuborchestrationChain},
}

// cmpConcurrency sets the runtime's orchestration and worker concurrency.
func cmpConcurrency(orchestrations, workers int) func(*durable.Options) {
	return func(o *durable.Options) { o.OrchestrationConcurrency, o.WorkerConcurrency = orchestrations, workers }
}

// cmpPrefixer is an activity returning prefix + its input after delay.
func cmpPrefixer(name, prefix string, delay time.Duration) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, in string) (string, error) {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		}
		return prefix + in, nil
	})
}

// cmpRaceResult races fs and returns "winner:<i>,result:<value>".
func cmpRaceResult(ctx *durable.OrchestrationContext, fs ...durable.Future[string]) (string, error) {
	as := make([]durable.Awaitable, len(fs))
	for i, f := range fs {
		as[i] = f
	}
	w := durable.Race(ctx, as...)
	r, err := fs[w].Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("winner:%d,result:%s", w, r), nil
}

func (h *H) cmpContains(out string, parts ...string) {
	h.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			h.Fatalf("output %q lacks %q", out, p)
		}
	}
}

// cmpChildren returns the instance ids of parent's children named name.
func (h *H) cmpChildren(parent, name string) []string {
	h.Helper()
	var out []string
	for _, ev := range h.History(parent) {
		if s, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok && s.Name == name {
			out = append(out, smpChildID(parent, s.Instance))
		}
	}
	return out
}

// cmpChildCancelled checks that the child that lost a race did not
// complete. duroxide only requires "not Completed" (its losing
// sub-orchestrations are not cancelled); duradyn cancels them, so the
// child must end Failed with a cancellation.
func (h *H) cmpChildCancelled(child string) {
	h.Helper()
	f := h.Failed(child)
	if d, ok := f.(provider.ApplicationDetails); !ok || d.Kind.Code != provider.AppCancelled {
		h.Fatalf("%s failed with %#v, want a cancellation", child, f)
	}
}

func cmpAsyncBlockJoinWithControlFlow(h *H) {
	reg := h.Registry(
		cmpPrefixer("Step", "step:", 5*time.Millisecond),
		cmpPrefixer("Check", "check:", 0),
		durable.OrchestrationFunc("JoinBlocks", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			blockA := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				first, err := smpAct(ctx, "Step", "A1").Get(ctx)
				if err != nil {
					return "", err
				}
				if !strings.Contains(first, "step") {
					return "A:fallback", nil
				}
				second, err := smpAct(ctx, "Step", "A2").Get(ctx)
				return fmt.Sprintf("A:[%s,%s]", first, second), err
			})
			blockB := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				check, err := smpAct(ctx, "Check", "B1").Get(ctx)
				if err != nil {
					return "", err
				}
				results := []string{check}
				for i := 2; i <= 3; i++ {
					step, err := smpAct(ctx, "Step", fmt.Sprintf("B%d", i)).Get(ctx)
					if err != nil {
						return "", err
					}
					results = append(results, step)
				}
				return "B:[" + strings.Join(results, ",") + "]", nil
			})
			blockC := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				if err := ctx.Sleep(5 * time.Millisecond); err != nil {
					return "", err
				}
				r, err := smpAct(ctx, "Step", "C1").Get(ctx)
				return "C:[timer," + r + "]", err
			})
			outs, err := durable.AwaitAll(ctx, blockA, blockB, blockC)
			return strings.Join(outs, ","), err
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 4))
	h.Start("JoinBlocks", "join-blocks-1", durable.Raw(""))
	h.cmpContains(h.Completed("join-blocks-1"), "A:[step:A1,step:A2]", "B:[check:B1,step:B2,step:B3]", "C:[timer,step:C1]")
}

func cmpAsyncBlockJoinMany(h *H) {
	reg := h.Registry(
		durable.ActivityFunc("Work", func(ctx context.Context, in string) (string, error) {
			delay, _ := strconv.Atoi(in)
			select {
			case <-time.After(time.Duration(delay) * time.Millisecond):
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
			return "done:" + in, nil
		}),
		durable.OrchestrationFunc("JoinMany", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var blocks []durable.Future[string]
			for i := range 5 {
				blocks = append(blocks, durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
					delay := (5 - i) * 5 // block 0 is the slowest, block 4 the fastest
					r, err := smpAct(ctx, "Work", strconv.Itoa(delay)).Get(ctx)
					return fmt.Sprintf("block%d:%s", i, r), err
				}))
			}
			var outputs []string
			for i, b := range blocks {
				r, err := b.Get(ctx)
				if err != nil {
					r = fmt.Sprintf("block%d:error:%v", i, err)
				}
				outputs = append(outputs, r)
			}
			return strings.Join(outputs, ","), nil
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 5))
	h.Start("JoinMany", "join-many-1", durable.Raw(""))
	// Every block completes, in block order.
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("block%d:done:%d", i, (5-i)*5))
	}
	h.smpWant(h.Completed("join-many-1"), strings.Join(want, ","))
}

func cmpAsyncBlockSequential(h *H) {
	reg := h.Registry(
		cmpPrefixer("Process", "processed:", 0),
		durable.OrchestrationFunc("SequentialBlocks", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			phase1, err := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				a, err := smpAct(ctx, "Process", in).Get(ctx)
				if err != nil {
					return "", err
				}
				b, err := smpAct(ctx, "Process", "extra").Get(ctx)
				return a + "+" + b, err
			}).Get(ctx)
			if err != nil {
				return "", err
			}
			phase2, err := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				return smpAct(ctx, "Process", phase1).Get(ctx)
			}).Get(ctx)
			if err != nil {
				return "", err
			}
			return durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				if err := ctx.Sleep(5 * time.Millisecond); err != nil {
					return "", err
				}
				r, err := smpAct(ctx, "Process", phase2).Get(ctx)
				return "final:" + r, err
			}).Get(ctx)
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 1))
	h.Start("SequentialBlocks", "seq-blocks-1", durable.Raw("start"))
	h.smpWant(h.Completed("seq-blocks-1"), "final:processed:processed:processed:start+processed:extra")
}

func cmpAsyncBlockSelectRacing(h *H) {
	reg := h.Registry(
		cmpPrefixer("Fast", "fast:", 10*time.Millisecond),
		smpBlocking("Slow"), // duroxide: 200 ms each
		durable.OrchestrationFunc("RaceBlocks", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			fastBlock := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				a, err := smpAct(ctx, "Fast", "1").Get(ctx)
				if err != nil {
					return "", err
				}
				b, err := smpAct(ctx, "Fast", "2").Get(ctx)
				return fmt.Sprintf("fast_block:[%s,%s]", a, b), err
			})
			slowBlock := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				a, err := smpAct(ctx, "Slow", "1").Get(ctx)
				if err != nil {
					return "", err
				}
				b, err := smpAct(ctx, "Slow", "2").Get(ctx)
				return fmt.Sprintf("slow_block:[%s,%s]", a, b), err
			})
			return cmpRaceResult(ctx, fastBlock, slowBlock)
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 4))
	h.Start("RaceBlocks", "race-blocks-1", durable.Raw(""))
	h.smpWant(h.Completed("race-blocks-1"), "winner:0,result:fast_block:[fast:1,fast:2]")
}

func cmpAsyncBlockVsDurableFuture(h *H) {
	reg := h.Registry(
		cmpPrefixer("Quick", "quick:", 5*time.Millisecond),
		smpBlocking("Multi"), // duroxide: 20 ms each
		durable.OrchestrationFunc("BlockVsFuture", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			single := smpAct(ctx, "Quick", "single")
			multiStep := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				a, err := smpAct(ctx, "Multi", "1").Get(ctx)
				if err != nil {
					return "", err
				}
				b, err := smpAct(ctx, "Multi", "2").Get(ctx)
				return fmt.Sprintf("block:[%s,%s]", a, b), err
			})
			return cmpRaceResult(ctx, single, multiStep)
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 2))
	h.Start("BlockVsFuture", "block-vs-future-1", durable.Raw(""))
	h.smpWant(h.Completed("block-vs-future-1"), "winner:0,result:quick:single")
}

func cmpAsyncBlockSelect3WithTimers(h *H) {
	block := func(ctx *durable.OrchestrationContext, name string, d time.Duration) durable.Future[string] {
		return durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			if err := ctx.Sleep(d); err != nil {
				return "", err
			}
			r, err := smpAct(ctx, "Work", name).Get(ctx)
			return name + ":" + r, err
		})
	}
	reg := h.Registry(
		cmpPrefixer("Work", "work:", 0),
		durable.OrchestrationFunc("Select3Timers", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			// The short timer wins; duroxide's 500 ms and 100 ms timers are
			// longer here so that timing cannot change the winner.
			return cmpRaceResult(ctx,
				block(ctx, "A", 10*time.Millisecond),
				block(ctx, "B", 2*cmpLongTimer),
				block(ctx, "C", cmpLongTimer))
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 1))
	h.Start("Select3Timers", "select3-timers-1", durable.Raw(""))
	h.smpWant(h.Completed("select3-timers-1"), "winner:0,result:A:work:A")
}

func cmpAsyncBlockNestedJoinInSelect(h *H) {
	reg := h.Registry(
		cmpPrefixer("Step", "step:", 10*time.Millisecond),
		durable.OrchestrationFunc("NestedJoinSelect", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			timeout := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				if err := ctx.Sleep(cmpLongTimer); err != nil { // duroxide: 2 s
					return "", err
				}
				return "timeout", nil
			})
			work := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				outs, err := durable.AwaitAll(ctx, smpAct(ctx, "Step", "1"), smpAct(ctx, "Step", "2"), smpAct(ctx, "Step", "3"))
				return "work:[" + strings.Join(outs, ",") + "]", err
			})
			return cmpRaceResult(ctx, work, timeout)
		}),
	)
	h.Runtime(reg, cmpConcurrency(1, 3))
	h.Start("NestedJoinSelect", "nested-join-select-1", durable.Raw(""))
	h.smpWant(h.Completed("nested-join-select-1"), "winner:0,result:work:[step:1,step:2,step:3]")
}

func cmpAsyncBlockSuborchestrationWinsRace(h *H) {
	reg := h.Registry(
		cmpPrefixer("FastWork", "fast:", 5*time.Millisecond),
		smpBlocking("SlowWork"), // duroxide: 500 ms each
		durable.OrchestrationFunc("FastChild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpAct(ctx, "FastWork", in).Get(ctx)
			return "child:" + r, err
		}),
		durable.OrchestrationFunc("RaceParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			subBlock := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "FastChild", "sub-input").Get(ctx)
				if err != nil {
					return "", err
				}
				act, err := smpAct(ctx, "FastWork", "after-sub").Get(ctx)
				return fmt.Sprintf("blockA:[%s,%s]", sub, act), err
			})
			slowBlock := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				r1, err := smpAct(ctx, "SlowWork", "1").Get(ctx)
				if err != nil {
					return "", err
				}
				r2, err := smpAct(ctx, "SlowWork", "2").Get(ctx)
				return fmt.Sprintf("blockB:[%s,%s]", r1, r2), err
			})
			return cmpRaceResult(ctx, subBlock, slowBlock)
		}),
	)
	h.Runtime(reg, cmpConcurrency(2, 2))
	const id = "suborchestration-wins-1"
	h.Start("RaceParent", id, durable.Raw(""))
	h.smpWant(h.Completed(id), "winner:0,result:blockA:[child:fast:sub-input,fast:after-sub]")
	// The child completed, once (duroxide counts its completions).
	children := h.cmpChildren(id, "FastChild")
	if len(children) != 1 {
		h.Fatalf("children %v, want one FastChild", children)
	}
	h.smpWant(h.Completed(children[0]), "child:fast:sub-input")
}

func cmpAsyncBlockSuborchestrationLosesRace(h *H) {
	reg := h.Registry(
		cmpPrefixer("Fast", "fast:", 5*time.Millisecond),
		smpBlocking("VerySlow"), // duroxide: 500 ms each
		durable.OrchestrationFunc("SlowChild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r1, err := smpAct(ctx, "VerySlow", in+"-1").Get(ctx)
			if err != nil {
				return "", err
			}
			r2, err := smpAct(ctx, "VerySlow", in+"-2").Get(ctx)
			return fmt.Sprintf("child:[%s,%s]", r1, r2), err
		}),
		durable.OrchestrationFunc("RaceParentLoses", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			slowSub := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "SlowChild", "sub-input").Get(ctx)
				return "blockA:" + sub, err
			})
			fast := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				r1, err := smpAct(ctx, "Fast", "1").Get(ctx)
				if err != nil {
					return "", err
				}
				r2, err := smpAct(ctx, "Fast", "2").Get(ctx)
				return fmt.Sprintf("blockB:[%s,%s]", r1, r2), err
			})
			return cmpRaceResult(ctx, slowSub, fast)
		}),
	)
	h.Runtime(reg, cmpConcurrency(2, 2))
	const id = "suborchestration-loses-1"
	h.Start("RaceParentLoses", id, durable.Raw(""))
	h.smpWant(h.Completed(id), "winner:1,result:blockB:[fast:1,fast:2]")
	for _, child := range h.cmpChildren(id, "SlowChild") {
		h.cmpChildCancelled(child)
	}
}

func cmpAsyncBlockMultipleSuborchestrationsJoined(h *H) {
	reg := h.Registry(
		cmpPrefixer("Transform", "transformed:", 0),
		durable.OrchestrationFunc("ChildA", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpAct(ctx, "Transform", "A-"+in).Get(ctx)
			return "childA:" + r, err
		}),
		durable.OrchestrationFunc("ChildB", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r1, err := smpAct(ctx, "Transform", "B1-"+in).Get(ctx)
			if err != nil {
				return "", err
			}
			r2, err := smpAct(ctx, "Transform", "B2-"+in).Get(ctx)
			return fmt.Sprintf("childB:[%s,%s]", r1, r2), err
		}),
		durable.OrchestrationFunc("ChildC", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if err := ctx.Sleep(5 * time.Millisecond); err != nil {
				return "", err
			}
			r, err := smpAct(ctx, "Transform", "C-"+in).Get(ctx)
			return "childC:timer+" + r, err
		}),
		durable.OrchestrationFunc("JoinSubOrchParent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			block1 := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "ChildA", in).Get(ctx)
				if err != nil {
					return "", err
				}
				act, err := smpAct(ctx, "Transform", "block1-extra").Get(ctx)
				return fmt.Sprintf("block1:[%s,%s]", sub, act), err
			})
			block2 := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "ChildB", in).Get(ctx)
				return "block2:" + sub, err
			})
			block3 := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				act, err := smpAct(ctx, "Transform", "block3-first").Get(ctx)
				if err != nil {
					return "", err
				}
				sub, err := smpSub(ctx, "ChildC", in).Get(ctx)
				return fmt.Sprintf("block3:[%s,%s]", act, sub), err
			})
			outs, err := durable.AwaitAll(ctx, block1, block2, block3)
			return strings.Join(outs, ","), err
		}),
	)
	h.Runtime(reg, cmpConcurrency(4, 3))
	h.Start("JoinSubOrchParent", "join-suborchestration-1", durable.Raw("data"))
	h.smpWant(h.Completed("join-suborchestration-1"),
		"block1:[childA:transformed:A-data,transformed:block1-extra],"+
			"block2:childB:[transformed:B1-data,transformed:B2-data],"+
			"block3:[transformed:block3-first,childC:timer+transformed:C-data]")
}

func cmpAsyncBlockSuborchestrationRacingTimeout(h *H) {
	reg := h.Registry(
		cmpPrefixer("Work", "work:", 10*time.Millisecond),
		smpBlocking("SlowWork"), // duroxide: 300 ms
		durable.OrchestrationFunc("FastChild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpAct(ctx, "Work", in).Get(ctx)
			return "fast-child:" + r, err
		}),
		durable.OrchestrationFunc("SlowChild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpAct(ctx, "SlowWork", in).Get(ctx)
			return "slow-child:" + r, err
		}),
		durable.OrchestrationFunc("TimeoutRaceParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			fast := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "FastChild", "fast-input").Get(ctx)
				return "blockA:" + sub, err
			})
			slow := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				sub, err := smpSub(ctx, "SlowChild", "slow-input").Get(ctx)
				return "blockB:" + sub, err
			})
			timeout := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				if err := ctx.Sleep(cmpLongTimer); err != nil { // duroxide: 2 s
					return "", err
				}
				return "blockC:timeout", nil
			})
			return cmpRaceResult(ctx, fast, slow, timeout)
		}),
	)
	h.Runtime(reg, cmpConcurrency(3, 2))
	const id = "timeout-race-1"
	h.Start("TimeoutRaceParent", id, durable.Raw(""))
	h.smpWant(h.Completed(id), "winner:0,result:blockA:fast-child:work:fast-input")
	for _, child := range h.cmpChildren(id, "SlowChild") {
		h.cmpChildCancelled(child)
	}
}

func cmpAsyncBlockNestedSuborchestrationChain(h *H) {
	reg := h.Registry(
		cmpPrefixer("Leaf", "leaf:", 0),
		durable.OrchestrationFunc("Grandchild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := smpAct(ctx, "Leaf", in).Get(ctx)
			return "grandchild:" + r, err
		}),
		durable.OrchestrationFunc("Child", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			gc := smpSub(ctx, "Grandchild", "gc-"+in)
			own := smpAct(ctx, "Leaf", "child-"+in)
			outs, err := durable.AwaitAll(ctx, gc, own)
			return fmt.Sprintf("child:[%s,%s]", outs[0], outs[1]), err
		}),
		durable.OrchestrationFunc("NestedParent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			child1 := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				r, err := smpSub(ctx, "Child", "c1-"+in).Get(ctx)
				return "block1:" + r, err
			})
			child2 := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
				if err := ctx.Sleep(5 * time.Millisecond); err != nil {
					return "", err
				}
				r, err := smpSub(ctx, "Child", "c2-"+in).Get(ctx)
				return "block2:timer+" + r, err
			})
			outs, err := durable.AwaitAll(ctx, child1, child2)
			return strings.Join(outs, ","), err
		}),
	)
	h.Runtime(reg, cmpConcurrency(5, 2))
	h.Start("NestedParent", "nested-chain-1", durable.Raw("root"))
	h.smpWant(h.Completed("nested-chain-1"),
		"block1:child:[grandchild:leaf:gc-c1-root,leaf:child-c1-root],"+
			"block2:timer+child:[grandchild:leaf:gc-c2-root,leaf:child-c2-root]")
}
