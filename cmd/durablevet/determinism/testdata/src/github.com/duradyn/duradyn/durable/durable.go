// Package durable is a stand-in for the runtime package: only what the test
// code refers to.
package durable

import "time"

// OrchestrationContext stands in for the runtime's orchestration context.
type OrchestrationContext struct{}

// Now stands in for the replayed clock.
func (c *OrchestrationContext) Now() time.Time { return time.Time{} }

// Sleep stands in for a durable timer.
func (c *OrchestrationContext) Sleep(d time.Duration) error { return nil }

// Go runs fn on a goroutine. The analyzer does not check the runtime
// package, so nothing here is reported.
func Go(ctx *OrchestrationContext, fn func(*OrchestrationContext) error) {
	done := make(chan error)
	go func() { done <- fn(ctx) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}
