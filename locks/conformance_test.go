package locks_test

import (
	"testing"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

func TestMemoryConformance(t *testing.T) {
	lockstest.Run(t, lockstest.Factory{
		NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
			store := locks.NewMemoryStore()
			return newMemory(t, store, clock), newMemory(t, store, clock)
		},
		Rounds: 20,
	})
}

func newMemory(t *testing.T, store *locks.MemoryStore, clock locks.Clock) *locks.Memory {
	t.Helper()
	m, err := locks.NewMemory(func(o *locks.MemoryOptions) {
		o.Store = store
		o.Clock = clock
	})
	if err != nil {
		t.Fatalf("NewMemory: %v", err)
	}
	return m
}

// TestDynamoConformance runs the suite on DynamoDB Local, with the two
// lockers as two processes: sharing in-process signals (no queue), and
// with a [queues.Signals] each on one SQS queue.
func TestDynamoConformance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue bool
	}{{"InProcess", false}, {"SQS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lockstest.Run(t, lockstest.Factory{
				NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
					env := newDynamoEnv(t, tc.queue)
					return env.locker(t, withClock(clock), env.withSignals(t)), env.locker(t, withClock(clock), env.withSignals(t))
				},
			})
		})
	}
}
