// Package continueasnew discards the error of ContinueAsNew.
package continueasnew

import "github.com/duradyn/duradyn/durable"

// Discards drops the error in every form.
func Discards(ctx *durable.OrchestrationContext, n int) (int, error) {
	if n < 10 {
		ctx.ContinueAsNew(n + 1) // want `^ContinueAsNew's error discarded: the execution continues as new anyway and what the orchestration returns is dropped; return it \(return ctx\.ContinueAsNew\(in\)\)$`
		return n, nil
	}
	_ = ctx.ContinueAsNew(n)       // want `^ContinueAsNew's error discarded`
	var _ = ctx.ContinueAsNew(n)   // want `^ContinueAsNew's error discarded`
	_, _ = n, ctx.ContinueAsNew(n) // want `^ContinueAsNew's error discarded`
	defer ctx.ContinueAsNew(n)     // want `^ContinueAsNew's error discarded`
	ctx.ContinueAsNew(n)           //durablevet:ignore the directive silences it
	return n, nil
}

// Returns returns the error, which is right.
func Returns(ctx *durable.OrchestrationContext, n int) (int, error) {
	if n < 10 {
		return 0, ctx.ContinueAsNew(n + 1)
	}
	if err := ctx.ContinueAsNew(n); err != nil {
		return 0, err
	}
	return n, nil
}

// step holds the context in a field: the rule applies in every function.
type step struct{ ctx *durable.OrchestrationContext }

func (s step) restart() {
	s.ctx.ContinueAsNew(0) // want `^ContinueAsNew's error discarded`
}
