package lockstest

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/locks"
)

func contentionTests() []testCase {
	cases := []testCase{{name: "Contention", run: func(t *testing.T, e *env) { contend(t, e, e.f.Rounds, 0) }, realClock: true}}
	if longContention() {
		cases = append(cases, testCase{name: "ContentionLong", run: func(t *testing.T, e *env) { contend(t, e, 0, 10*time.Second) }, realClock: true})
	}
	return cases
}

// Parameters of the contention check. The lease is far longer than a turn
// in the critical section can take, so that a lease never ends while its
// holder is inside; the waits are short, so that a release notice that
// went astray costs a retry, not the check's time.
const (
	contenders      = 16
	contentionLease = 30 * time.Second
	contentionWait  = time.Second
)

// contend runs 16 goroutines, half on each locker, that take one lock in
// turn, rounds times each or, when rounds is 0, until duration has passed.
// Inside, each checks that nobody else is (an atomic flag) and that its
// fencing token is larger than that of the previous holder to enter, and
// increments a shared counter that loses counts if two are inside at once.
func contend(t *testing.T, e *env, rounds int, duration time.Duration) {
	const key = "contended"
	var (
		inside  atomic.Bool
		entries atomic.Int64
		mu      sync.Mutex // orders the fence check; the lock itself must exclude
		last    int64
		wg      sync.WaitGroup
		errs    = make(chan error, contenders)
	)
	stop := time.Now().Add(duration)
	done := func(round int) bool {
		if rounds > 0 {
			return round >= rounds
		}
		return time.Now().After(stop)
	}
	for g := range contenders {
		l := e.a
		if g%2 == 1 {
			l = e.b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; !done(round); {
				lease, ok, err := l.Acquire(e.ctx, key, contentionLease, locks.WithWait(contentionWait))
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: Acquire: %w", g, err)
					return
				}
				if !ok {
					continue // the wait ran out: try again
				}
				round++
				if !inside.CompareAndSwap(false, true) {
					errs <- fmt.Errorf("goroutine %d entered with fence %d while another holder was inside", g, lease.Fence)
					return
				}
				mu.Lock()
				prev := last
				last = lease.Fence
				mu.Unlock()
				if lease.Fence <= prev {
					errs <- fmt.Errorf("goroutine %d entered with fence %d after fence %d", g, lease.Fence, prev)
					return
				}
				// A read-modify-write that loses updates unless the lock
				// excludes: atomic only so that the race detector, which
				// cannot see the lock's ordering through the network, does
				// not object.
				n := entries.Load()
				runtime.Gosched()
				entries.Store(n + 1)
				inside.Store(false)
				released, err := l.Release(e.ctx, key, locks.WithOwner(lease.Owner))
				if err != nil || !released {
					errs <- fmt.Errorf("goroutine %d: Release = %v, %v; want true", g, released, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rounds > 0 && entries.Load() != int64(contenders*rounds) {
		t.Errorf("%d entries; want %d", entries.Load(), contenders*rounds)
	}
	t.Logf("%d entries by %d goroutines", entries.Load(), contenders)
}
