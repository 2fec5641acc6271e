package durable_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/internal/legacystart"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// historyCounter is a memprovider that counts the reads of one instance's
// history, through every method that returns one. With strip set, the
// child starts its turns commit leave out the parent's execution id, as a
// start written by another tool does.
type historyCounter struct {
	*memprovider.Provider
	instance string
	strip    bool
	reads    atomic.Int64
}

func (p *historyCounter) count(instance string) {
	if instance == p.instance {
		p.reads.Add(1)
	}
}

func (p *historyCounter) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	p.count(instance)
	return p.Provider.Read(ctx, instance)
}

func (p *historyCounter) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	p.count(instance)
	return p.Provider.ReadWithExecution(ctx, instance, executionID)
}

func (p *historyCounter) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	p.count(instance)
	return p.Provider.ReadHistory(ctx, instance)
}

func (p *historyCounter) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	p.count(instance)
	return p.Provider.ReadHistoryWithExecutionID(ctx, instance, executionID)
}

func (p *historyCounter) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	if p.strip {
		commit = legacystart.Strip(commit)
	}
	return p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
}

// fanOutInput is the input of the fan-out parent: its first execution
// continues as new, so that its children are scheduled by execution 2.
type fanOutInput struct {
	Children int
	Second   bool
}

// fanOutDefinitions are a parent that fans out to its children from its
// second execution and checks every result, and children that answer
// 2*i: the even ones on their first turn (the link to the parent comes
// from the start item), the odd ones after an activity (it comes from
// their history).
func fanOutDefinitions() []durable.Definition {
	double := durable.NewActivity("Double", func(_ context.Context, i int) (int, error) { return 2 * i, nil })
	child := durable.NewOrchestration("FanOutChild", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		if i%2 == 0 {
			return 2 * i, nil
		}
		return double.Call(ctx, i).Get(ctx)
	})
	parent := durable.NewOrchestration("FanOutParent", func(ctx *durable.OrchestrationContext, in fanOutInput) (int, error) {
		if !in.Second {
			return 0, ctx.ContinueAsNew(fanOutInput{Children: in.Children, Second: true})
		}
		fs := make([]durable.Future[int], in.Children)
		for i := range fs {
			fs[i] = child.CallSub(ctx, i)
		}
		got, err := durable.AwaitAll(ctx, fs...)
		if err != nil {
			return 0, err
		}
		sum := 0
		for i, v := range got {
			if v != 2*i {
				return 0, fmt.Errorf("child %d answered %d, want %d", i, v, 2*i)
			}
			sum += v
		}
		return sum, nil
	})
	return []durable.Definition{double, child, parent}
}

// runFanOut runs the fan-out parent with n children on p and returns its
// output; the client that waits reads p's memprovider directly, so that
// p counts the runtime's reads alone.
func runFanOut(t *testing.T, p *historyCounter, n int) string {
	t.Helper()
	reg, err := durable.NewRegistry(fanOutDefinitions()...)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.LongPollTimeout = 200 * time.Millisecond
		o.MinPollInterval = 5 * time.Millisecond
		o.Logger = quietLogger()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	c := durable.NewClient(p.Provider)
	if err := c.StartOrchestration(ctx, p.instance, "FanOutParent", fanOutInput{Children: n}); err != nil {
		t.Fatal(err)
	}
	st, err := c.WaitForCompletion(ctx, p.instance)
	if err != nil {
		t.Fatalf("wait for the parent: %v", err)
	}
	if st.State != durable.StateCompleted || st.ExecutionID != 2 {
		t.Fatalf("parent: state %v in execution %d, failure %v; want completed in execution 2", st.State, st.ExecutionID, st.Failure)
	}
	return st.Output
}

// A thousand children of a parent's second execution complete without
// reading the parent's history: each child's start records the execution
// that scheduled it, and its last turn addresses its result there.
func TestFanOutChildCompletionsReadNoParentHistory(t *testing.T) {
	const n = 1000
	p := &historyCounter{Provider: memprovider.New(), instance: "fan-out"}
	out := runFanOut(t, p, n)
	if want := strconv.Itoa(n * (n - 1)); out != want {
		t.Fatalf("output %s, want %s", out, want)
	}
	if reads := p.reads.Load(); reads != 0 {
		t.Fatalf("the runtime read the parent's history %d times; want none", reads)
	}
	for _, i := range []int{0, 1, n - 1} {
		id := childInstanceOf(t, p.Provider, p.instance, i)
		h, err := p.Provider.Read(t.Context(), id)
		if err != nil || len(h) == 0 {
			t.Fatalf("child %s: history %v, %v", id, h, err)
		}
		started := h[0].Kind.(provider.OrchestrationStarted)
		if started.ParentExecutionID != 2 || started.ParentInstance == nil || *started.ParentInstance != p.instance {
			t.Errorf("child %s started as %+v; want parent %s execution 2", id, started, p.instance)
		}
	}
}

// A child whose start does not record the parent's execution (written by
// another tool) still reaches it: its last turn looks the execution up in
// the parent's history, which the counter sees.
func TestChildStartWithoutParentExecutionLooksItUp(t *testing.T) {
	const n = 20
	p := &historyCounter{Provider: memprovider.New(), instance: "fan-out-lookup", strip: true}
	out := runFanOut(t, p, n)
	if want := strconv.Itoa(n * (n - 1)); out != want {
		t.Fatalf("output %s, want %s", out, want)
	}
	if reads := p.reads.Load(); reads < n {
		t.Fatalf("the runtime read the parent's history %d times; want at least one per child (%d)", reads, n)
	}
	h, err := p.Provider.Read(t.Context(), childInstanceOf(t, p.Provider, p.instance, 0))
	if err != nil || len(h) == 0 {
		t.Fatalf("child history %v, %v", h, err)
	}
	if started := h[0].Kind.(provider.OrchestrationStarted); started.ParentExecutionID != 0 {
		t.Fatalf("child started as %+v; want no parent execution recorded", started)
	}
}

// childInstanceOf returns the instance id of the i-th child that the
// parent's latest execution scheduled.
func childInstanceOf(t *testing.T, p provider.Provider, parent string, i int) string {
	t.Helper()
	h, err := p.Read(t.Context(), parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range h {
		if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok {
			if i == 0 && strings.HasPrefix(k.Instance, "sub::") {
				return parent + "::" + k.Instance // an id the runtime chose
			}
			if i == 0 {
				return k.Instance
			}
			i--
		}
	}
	t.Fatal(errors.New("no such child"))
	return ""
}
