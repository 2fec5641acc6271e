// Package atomics uses sync/atomic on package-level state in an
// orchestration.
package atomics

import (
	"sync/atomic"

	"github.com/duradyn/duradyn/durable"
)

var (
	hits   int64
	total  atomic.Int64
	ready  atomic.Bool
	stats  struct{ calls atomic.Uint32 }
	shared = new(atomic.Int64)
	value  atomic.Value
)

// Count counts in package state.
func Count(ctx *durable.OrchestrationContext) int64 {
	atomic.AddInt64(&hits, 1)    // want `^atomic\.AddInt64 on package-level variable hits in orchestration: package-level state is not replayed and every instance shares it`
	n := atomic.LoadInt64(&hits) // want `^atomic\.LoadInt64 on package-level variable hits in orchestration`
	total.Add(1)                 // want `^atomic\.Int64\.Add on package-level variable total in orchestration`
	ready.Store(true)            // want `^atomic\.Bool\.Store on package-level variable ready in orchestration`
	stats.calls.Add(1)           // want `^atomic\.Uint32\.Add on package-level variable stats in orchestration`
	shared.Add(1)                // want `^atomic\.Int64\.Add on package-level variable shared in orchestration`
	value.Store(n)               // want `^atomic\.Value\.Store on package-level variable value in orchestration`

	// Atomics on local state are fine.
	var own atomic.Int64
	own.Add(1)
	var mine int64
	atomic.AddInt64(&mine, 1)
	return n + own.Load() + mine + total.Load() // want `^atomic\.Int64\.Load on package-level variable total in orchestration`
}
