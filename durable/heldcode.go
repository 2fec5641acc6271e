package durable

import (
	"container/list"
	"sync"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// heldCode keeps the code of executions between their turns, blocked where
// their last turn on this runtime left it, so that the next turn resumes
// it instead of replaying the whole history (Options.ExecutionCacheSize).
// At most max executions are kept; the least recently used goes first. A
// turn takes its execution's code out while it runs, so no two turns use
// the same code at once.
//
// A turn puts its code once its commit has landed, and the commit lets the
// execution's next turn be fetched, by any dispatcher of the runtime, before
// the put: so a turn marks its execution committing first, and a take for
// it waits until the put (or the commit's failure) is done.
type heldCode struct {
	mu     sync.Mutex
	max    int
	closed bool
	byID   map[string]*list.Element // of heldEntry
	order  list.List                // most recently used first
	// pending holds the executions whose last turn is committing, each
	// with a channel closed when it is done.
	pending map[string]chan struct{}
}

type heldEntry struct {
	instance string
	code     *replay.Held
}

// newHeldCode returns a cache of at most max executions; none when max is
// not positive.
func newHeldCode(max int) *heldCode {
	return &heldCode{max: max, byID: map[string]*list.Element{}, pending: map[string]chan struct{}{}}
}

// committing marks instance's turn as committing until done is called,
// after the turn has put its code or decided not to: a take for instance
// waits until then.
func (c *heldCode) committing(instance string) (done func()) {
	if c.max <= 0 {
		return func() {}
	}
	ch := make(chan struct{})
	c.mu.Lock()
	c.pending[instance] = ch
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if c.pending[instance] == ch {
			delete(c.pending, instance)
		}
		c.mu.Unlock()
		close(ch)
	}
}

// enabled reports whether turns should keep their code.
func (c *heldCode) enabled() bool { return c.max > 0 }

// take removes and returns the code held for instance, or nil, once no
// turn of instance is committing.
func (c *heldCode) take(instance string) *replay.Held {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := c.pending[instance]; ch != nil; ch = c.pending[instance] {
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
	el := c.byID[instance]
	if el == nil {
		return nil
	}
	delete(c.byID, instance)
	c.order.Remove(el)
	return el.Value.(heldEntry).code
}

// put keeps code for instance's next turn, closing the code it displaces
// (an older entry for the instance, or the least recently used beyond
// max). After close, put closes code at once.
func (c *heldCode) put(instance string, code *replay.Held) {
	var out []*replay.Held
	c.mu.Lock()
	if c.closed || c.max <= 0 {
		out = append(out, code)
	} else {
		if el := c.byID[instance]; el != nil {
			out = append(out, el.Value.(heldEntry).code)
			c.order.Remove(el)
		}
		c.byID[instance] = c.order.PushFront(heldEntry{instance, code})
		for c.order.Len() > c.max {
			el := c.order.Back()
			e := el.Value.(heldEntry)
			c.order.Remove(el)
			delete(c.byID, e.instance)
			out = append(out, e.code)
		}
	}
	c.mu.Unlock()
	// Closing unwinds the code's coroutines, running its deferred calls:
	// outside the lock.
	for _, h := range out {
		h.Close()
	}
}

// close closes every held execution's code; later puts close theirs.
func (c *heldCode) close() {
	c.mu.Lock()
	c.closed = true
	var out []*replay.Held
	for el := c.order.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(heldEntry).code)
	}
	c.order.Init()
	clear(c.byID)
	c.mu.Unlock()
	for _, h := range out {
		h.Close()
	}
}

// len returns how many executions' code is held.
func (c *heldCode) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
