package faults

import (
	"context"
	"sync"
)

// Gate holds requests for deterministic interleavings in tests. A rule
// with [Hold] (before sending) or [HoldResponse] (after the service
// applied the request) stops each request it picks at the gate until
// [Gate.Release]; [Gate.Arrived] and [Gate.Wait] tell the test that
// requests got there. Once released, a gate stays open: later requests
// pass at once. A Gate is safe for concurrent use.
//
//	g := faults.NewGate()
//	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.HoldResponse(g)})
//	go commit()   // its transaction lands; its response waits at the gate
//	<-g.Arrived() // the write is applied
//	check()       // what others see while its caller does not know
//	g.Release()
type Gate struct {
	mu       sync.Mutex
	arrivals int
	arrived  chan struct{} // closed at the first arrival
	released chan struct{} // closed by Release
	changed  chan struct{} // closed and replaced at every arrival
}

// NewGate returns a gate that holds requests until [Gate.Release].
func NewGate() *Gate {
	return &Gate{arrived: make(chan struct{}), released: make(chan struct{}), changed: make(chan struct{})}
}

// Release opens the gate for good: the requests it holds go on, and later
// ones pass without stopping. Calling it again does nothing.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.released:
	default:
		close(g.released)
	}
}

// Arrived returns a channel closed once the first request has reached the
// gate (before release or not).
func (g *Gate) Arrived() <-chan struct{} { return g.arrived }

// Arrivals returns how many requests have reached the gate so far.
func (g *Gate) Arrivals() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.arrivals
}

// Wait blocks until at least n requests have reached the gate in total, or
// ctx ends (it then returns ctx's error).
func (g *Gate) Wait(ctx context.Context, n int) error {
	for {
		g.mu.Lock()
		count, changed := g.arrivals, g.changed
		g.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pass records an arrival and waits until the gate is released or ctx
// ends; it returns ctx's error in the latter case.
func (g *Gate) pass(ctx context.Context) error {
	g.mu.Lock()
	g.arrivals++
	if g.arrivals == 1 {
		close(g.arrived)
	}
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	select {
	case <-g.released:
		return nil
	case <-ctx.Done():
		// Released at the same moment: the release wins.
		select {
		case <-g.released:
			return nil
		default:
			return ctx.Err()
		}
	}
}
