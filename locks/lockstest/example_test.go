package lockstest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
)

// An implementation runs the whole suite from one test in its own package.
// Here the in-memory locker stands in for the implementation under test:
// each pair shares a fresh store, as two processes share a table.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		lockstest.Run(t, lockstest.Factory{
			NewPair: func(t *testing.T, clock locks.Clock) (a, b locks.Locker) {
				store := locks.NewMemoryStore()
				newLocker := func() locks.Locker {
					l, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Store, o.Clock = store, clock })
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				return newLocker(), newLocker()
			},
		})
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { ... }
}

// A fake clock ends leases when the test says so.
func ExampleFakeClock() {
	ctx := context.Background()
	clock := lockstest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Clock = clock })
	if err != nil {
		panic(err)
	}
	defer l.Close()
	l.Acquire(ctx, "k", 10*time.Second, locks.WithOwner("first"))
	_, ok, _ := l.Acquire(ctx, "k", 10*time.Second)
	fmt.Println("while held:", ok)
	clock.Advance(10 * time.Second)
	_, ok, _ = l.Acquire(ctx, "k", 10*time.Second)
	fmt.Println("after the lease:", ok)
	// Output:
	// while held: false
	// after the lease: true
}
