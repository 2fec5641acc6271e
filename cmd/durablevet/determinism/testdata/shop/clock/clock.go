// Package clock holds helpers that the orchestrations of this module call:
// the analyzer follows calls into it through the facts it exports for them.
package clock

import (
	"fmt"
	"os"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// Stamp reads the wall clock through a helper of its own package.
func Stamp() time.Time { // want Stamp:`^time\.Now through clock\.Stamp -> clock\.now \(clock\.go:19\)$`
	return now()
}

func now() time.Time { // want now:`^time\.Now through clock\.now \(clock\.go:19\)$`
	return time.Now()
}

// Region reads the environment.
func Region() string { // want Region:`^os\.Getenv through clock\.Region \(clock\.go:24\)$`
	return os.Getenv("REGION")
}

// Ticks counts calls in package state.
var Ticks int

// Tick writes package state.
func Tick() { // want Tick:`^write to package-level variable Ticks through clock\.Tick \(clock\.go:32\)$`
	Ticks++
}

// Clock reads the wall clock through a method.
type Clock struct{}

// Read reads the wall clock.
func (*Clock) Read() time.Time { // want Read:`^time\.Now through clock\.Clock\.Read \(clock\.go:40\)$`
	return time.Now()
}

// Label is generic: the fact is the generic function's, whatever the
// instantiation called.
func Label[T any](v T) string { // want Label:`^time\.Now through clock\.Label \(clock\.go:46\)$`
	return fmt.Sprint(v, time.Now())
}

// Add is deterministic: it has no fact, and calls of it are not reported.
func Add(a, b int) int { return a + b }

// Logged reads the clock under a directive: it has no fact.
func Logged() time.Time {
	return time.Now() //durablevet:ignore read only for a log line
}

// Step is an orchestration of its own: it is reported here, where it is
// written, and calls of it are not reported again.
func Step(ctx *durable.OrchestrationContext) time.Time {
	return time.Now() // want `time\.Now in orchestration: use ctx\.Now\(\)`
}
