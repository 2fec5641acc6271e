package runtimetest

import (
	"context"
	"testing"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

func memHarness(t *testing.T) *H {
	return newHarness(t, Factory{New: func(testing.TB) provider.Provider { return memprovider.New() }})
}

// An empty orchestrator queue is no sign that the turn that took the
// messages committed; AwaitConsumed waits for the commit.
func TestAwaitConsumedWaitsForTheCommit(t *testing.T) {
	h := memHarness(t)
	fp := relFaults(h)
	const id = "held-commit"
	h.Serve(durable.OrchestrationFunc("Wait", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitForEvent[string](ctx, "Go").Get(ctx)
	}))
	h.Start("Wait", id, durable.Raw(""))
	h.AwaitSubscription(id, "Go")
	hold := fp.HoldAck(id, HoldOptions{})
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Go", "now"); err != nil {
		t.Fatal(err)
	}
	relAwait(h, "the turn's commit held", hold.Reached())

	raised := isKind[provider.ExternalRaisedItem]
	if d, err := h.Client.QueueDepths(h.Ctx()); err != nil || d.OrchestratorQueue != 0 {
		t.Fatalf("QueueDepths while the commit is held = %+v, %v; want an empty orchestrator queue", d, err)
	}
	if n := h.watch.count(id, raised); n != 0 {
		t.Fatalf("%d raised events counted consumed while their turn's commit is held; want 0", n)
	}
	if Count(h.History(id), "ExternalEvent") != 0 {
		t.Fatal("the event is in the history before its turn committed")
	}
	hold.Release()
	h.AwaitConsumed(id, "the raised event", 1, raised)
	if Count(h.History(id), "ExternalEvent") != 1 {
		t.Fatalf("history %v after the commit; want the event", EventTypes(h.History(id)))
	}
}

// Once an activity's result was enqueued, AwaitActivitiesSettled returns
// only after a committed turn consumed it.
func TestAwaitActivitiesSettledWaitsForTheResultsTurn(t *testing.T) {
	h := memHarness(t)
	const id = "settled"
	returned := newCxSignal()
	h.Serve(
		durable.ActivityFunc("A", func(context.Context, string) (string, error) {
			defer returned.fire()
			return "a", nil
		}),
		durable.OrchestrationFunc("O", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if _, err := durable.CallActivity[durable.Raw](ctx, "A", durable.Raw("")).Get(ctx); err != nil {
				return "", err
			}
			return durable.WaitForEvent[string](ctx, "Never").Get(ctx)
		}),
	)
	h.Start("O", id, durable.Raw(""))
	returned.wait(h, "the activity to return")
	h.AwaitActivitiesSettled(id)
	if Count(h.History(id), "ActivityCompleted") != 1 {
		t.Fatalf("history %v once the activity settled; want its completion", EventTypes(h.History(id)))
	}
	if n := h.watch.count(id, isKind[provider.ActivityCompletedItem]); n != 1 {
		t.Fatalf("%d completions counted consumed; want 1", n)
	}
}
