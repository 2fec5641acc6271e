// Package durable is a stand-in for the runtime package: only what the test
// code refers to.
package durable

import "time"

// OrchestrationContext stands in for the runtime's orchestration context.
type OrchestrationContext struct{}

// Now stands in for the replayed clock.
func (c *OrchestrationContext) Now() time.Time { return time.Time{} }

// Option stands in for the options of ContinueAsNew.
type Option func()

// ContinueAsNewError stands in for the error ContinueAsNew returns.
type ContinueAsNewError struct{}

func (*ContinueAsNewError) Error() string { return "continue as new" }

// ContinueAsNew stands in for the runtime's: the orchestration must return
// its error.
func (c *OrchestrationContext) ContinueAsNew(in any, opts ...Option) error {
	return &ContinueAsNewError{}
}
