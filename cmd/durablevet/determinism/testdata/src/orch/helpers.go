package orch

import (
	"time"

	"github.com/duradyn/duradyn/durable"
	"other"
)

// Helpers calls helpers of this package, which are followed, and of another
// package outside any module, which is not.
func Helpers(ctx *durable.OrchestrationContext) error {
	stamp()
	var s state
	s.tick()
	_ = first(1)
	_ = other.Stamp()
	ignoredHelper() //durablevet:ignore the helper runs only in tests
	return Clock(ctx, time.Time{})
}

func stamp() {
	_ = time.Now() // want `time\.Now in orchestration: use ctx\.Now\(\) \(in a helper called from orchestration Helpers\)`
	deeper()
}

func deeper() {
	go func() {}() // want `go statement in orchestration: use durable\.Go \(in a helper called from orchestration Helpers\)`
}

type state struct{ m map[string]int }

func (s *state) tick() {
	for range s.m { // want `range over map in orchestration: .* \(in a helper called from orchestration Helpers\)`
	}
}

func first[T any](v T) T {
	time.Sleep(0) // want `time\.Sleep in orchestration: .*\(in a helper called from orchestration Helpers\)`
	return v
}

func ignoredHelper() { _ = time.Now() }

// Suppressed shows the ignore directive.
func Suppressed(ctx *durable.OrchestrationContext, m map[string]int) {
	_ = time.Now() //durablevet:ignore on the line
	//durablevet:ignore alone on the line above
	_ = time.Now()

	//durablevet:ignore
	for range m {
	}

	_ = 1          //durablevet:ignore only this line, not the next
	_ = time.Now() // want `time\.Now in orchestration`

	// durablevet:ignore with a space is not the directive
	_ = time.Now() // want `time\.Now in orchestration`
	//durablevet:ignored is not the directive either
	_ = time.Now() // want `time\.Now in orchestration`
}
