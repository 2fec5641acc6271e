package crashsoak

import (
	"context"
	"fmt"

	"github.com/duradyn/duradyn/durable"
)

// The workload. Every process registers it; only a victim holds work
// (holder), the others run it to its end at once.
//
//	RecActs(i)  calls RecHold(i): an activity a victim holds while running.
//	RecTurn(i)  returns i: its first turn is one a victim holds under way.
//	RecChain(i) calls RecHand(i): its first turn schedules one activity,
//	            which the turn hands to a worker slot of the same process
//	            waiting for work; a victim holds it without starting it.
var (
	recHold = durable.NewActivity("RecHold", func(ctx context.Context, i int) (int, error) {
		if h := current(); h != nil {
			h.holdActivity(ctx)
		}
		return i, ctx.Err()
	})
	recHand = durable.NewActivity("RecHand", func(_ context.Context, i int) (int, error) { return i, nil })

	recActs = durable.NewOrchestration("RecActs", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		return recHold.Call(ctx, i).Get(ctx)
	})
	recTurn = durable.NewOrchestration("RecTurn", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		if h := current(); h != nil {
			h.holdTurn(ctx.InstanceID())
		}
		return i, nil
	})
	recChain = durable.NewOrchestration("RecChain", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		return recHand.Call(ctx, i).Get(ctx)
	})
)

// definitions are the workload's orchestrations and activities.
func definitions() []durable.Definition {
	return []durable.Definition{recHold, recHand, recActs, recTurn, recChain}
}

// Kinds of held work.
const (
	KindActivity = "activity" // an activity running
	KindTurn     = "turn"     // an orchestration turn under way
	KindHanded   = "handed"   // an activity handed to a slot, not started
)

// instanceID names the n-th instance of orchestration kind in round r.
func instanceID(r int, kind string, n int) string { return fmt.Sprintf("r%02d-%s-%03d", r, kind, n) }
