// Package coro runs orchestration code as coroutines: goroutines that take
// turns under a strict handoff, so exactly one of them (or the scheduler)
// runs at any moment and the order in which they run is a function of the
// code alone.
//
// A [Scheduler] owns a set of coroutines, run in creation order. A coroutine
// blocks with [Scheduler.Block], naming the condition it waits for; the
// scheduler resumes it only once that condition holds. [Scheduler.Run]
// resumes runnable coroutines, in passes over them in creation order, until
// none can run. [Scheduler.Close] unwinds the coroutines still parked with
// runtime.Goexit, so no goroutine outlives its turn.
package coro

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// ErrStuck reports a coroutine that did not block or return within the
// scheduler's yield timeout: code that spins, sleeps or waits on something
// other than a durable future. Its goroutine cannot be stopped and is left
// behind.
var ErrStuck = errors.New("coroutine did not yield")

// PanicError is the panic of a coroutine, with its stack.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the coroutine's stack when it panicked.
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprint(e.Value) }

type state int

const (
	created state = iota
	parked
	finished
)

type coroutine struct {
	name   string
	fn     func()
	state  state
	cond   func() bool
	resume chan bool // true: run on; false: unwind
	// yield hands control back: nil when the coroutine blocked or
	// returned, its panic otherwise. It is buffered so that a coroutine
	// that returns after the scheduler gave up on it (ErrStuck) can exit.
	yield chan *PanicError
}

// Scheduler runs coroutines one at a time. Its methods other than Block are
// called by the owner of the turn, never from a coroutine; Block is called
// only from a coroutine the scheduler runs.
type Scheduler struct {
	coroutines []*coroutine
	current    *coroutine
	timeout    time.Duration
	stuck      bool
}

// New returns a scheduler. A coroutine that runs for longer than
// yieldTimeout without blocking or returning makes Run return [ErrStuck];
// zero means no limit.
func New(yieldTimeout time.Duration) *Scheduler {
	return &Scheduler{timeout: yieldTimeout}
}

// Go adds a coroutine that runs fn. It first runs during the current or next
// Run, after the coroutines created before it. Go may be called from a
// coroutine.
func (s *Scheduler) Go(name string, fn func()) {
	s.coroutines = append(s.coroutines, &coroutine{
		name:   name,
		fn:     fn,
		resume: make(chan bool),
		yield:  make(chan *PanicError, 1),
	})
}

// Block parks the calling coroutine until cond reports true. cond is
// evaluated by the scheduler, between coroutines; it must only read state
// that coroutines and the scheduler's owner change. If cond already holds,
// Block returns at once.
func (s *Scheduler) Block(cond func() bool) {
	if cond() {
		return
	}
	c := s.current
	if c == nil {
		panic("coro: Block called outside a coroutine")
	}
	c.state, c.cond = parked, cond
	c.yield <- nil
	if !<-c.resume {
		runtime.Goexit()
	}
}

// Run resumes runnable coroutines until every one is finished or blocked on
// a condition that does not hold. It returns the first panic of a coroutine
// as a [*PanicError] (the coroutines are then left as they are, for Close),
// or [ErrStuck].
func (s *Scheduler) Run() error {
	if s.stuck {
		return ErrStuck
	}
	for {
		progressed := false
		for i := 0; i < len(s.coroutines); i++ {
			c := s.coroutines[i]
			if !s.runnable(c) {
				continue
			}
			progressed = true
			if err := s.step(c); err != nil {
				return err
			}
		}
		if !progressed {
			return nil
		}
	}
}

func (s *Scheduler) runnable(c *coroutine) bool {
	switch c.state {
	case created:
		return true
	case parked:
		return c.cond()
	}
	return false
}

// step runs c until it blocks or ends.
func (s *Scheduler) step(c *coroutine) error {
	s.current = c
	defer func() { s.current = nil }()
	if c.state == created {
		c.state = parked
		go s.body(c)
	} else {
		c.cond = nil
		c.resume <- true
	}
	var p *PanicError
	if s.timeout <= 0 {
		p = <-c.yield
	} else {
		t := time.NewTimer(s.timeout)
		defer t.Stop()
		select {
		case p = <-c.yield:
		case <-t.C:
			s.stuck = true
			return fmt.Errorf("coroutine %q: %w within %s", c.name, ErrStuck, s.timeout)
		}
	}
	if p != nil {
		return p
	}
	return nil
}

func (s *Scheduler) body(c *coroutine) {
	defer func() {
		var p *PanicError
		if r := recover(); r != nil {
			p = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
		c.state = finished
		c.yield <- p
	}()
	c.fn()
}

// Current returns the name of the running coroutine, or "" when called
// from outside one.
func (s *Scheduler) Current() string {
	if s.current == nil {
		return ""
	}
	return s.current.name
}

// Finished reports whether the named coroutine (the first with that name)
// has returned.
func (s *Scheduler) Finished(name string) bool {
	for _, c := range s.coroutines {
		if c.name == name {
			return c.state == finished
		}
	}
	return false
}

// Close unwinds every parked coroutine with runtime.Goexit (its deferred
// calls run) and waits for each to exit. A stuck coroutine cannot be
// unwound and is left running. Close is idempotent.
func (s *Scheduler) Close() {
	if s.stuck {
		return
	}
	for _, c := range s.coroutines {
		if c.state != parked || c.cond == nil {
			continue
		}
		s.current = c
		for c.state == parked && c.cond != nil { // a deferred call may block again
			c.cond = nil
			c.resume <- false
			<-c.yield
		}
		s.current = nil
	}
}
