// Package calls has orchestrations that call helpers of other packages of
// the module, and of another module.
package calls

import (
	"example.com/shop/billing"
	"example.com/shop/clock"
	"example.com/vendorlib"
	"github.com/duradyn/duradyn/durable"
)

// Invoice calls helpers of other packages of the module: each call that
// reaches a construct is reported where the orchestration makes it.
func Invoice(ctx *durable.OrchestrationContext) (string, error) {
	_ = clock.Stamp()           // want `^time\.Now in orchestration, through clock\.Stamp -> clock\.now \(clock\.go:19\): use ctx\.Now\(\)$`
	due := billing.Due()        // want `^time\.Now in orchestration, through billing\.Due -> clock\.Stamp -> clock\.now \(clock\.go:19\): use ctx\.Now\(\)$`
	_ = clock.Region()          // want `^os\.Getenv in orchestration, through clock\.Region \(clock\.go:24\): the environment differs between processes`
	clock.Tick()                // want `^write to package-level variable Ticks in orchestration, through clock\.Tick \(clock\.go:32\): package-level state is not replayed`
	_ = new(clock.Clock).Read() // want `^time\.Now in orchestration, through clock\.Clock\.Read \(clock\.go:40\)`
	_ = clock.Label(1)          // want `^time\.Now in orchestration, through clock\.Label \(clock\.go:46\)`
	_ = billing.Sum(1, 2)       // deterministic
	_ = clock.Logged()          // the helper's own directive
	_ = clock.Stamp()           //durablevet:ignore the stamp is only logged
	_ = clock.Step(ctx)         // an orchestration of its own, reported in its package
	_ = vendorlib.Stamp()       // another module: not followed
	return due, nil
}

// Helper reaches another package through a helper of its own package.
func Helper(ctx *durable.OrchestrationContext) {
	stamp()
}

func stamp() { // want stamp:`^time\.Now through calls\.stamp -> clock\.Stamp -> clock\.now \(clock\.go:19\)$`
	_ = clock.Stamp() // want `^time\.Now in orchestration, through clock\.Stamp -> clock\.now \(clock\.go:19\): use ctx\.Now\(\) \(in a helper called from orchestration Helper\)$`
}
