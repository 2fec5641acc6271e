package queues

import (
	"errors"
	"fmt"
	"time"
)

// Receiving elsewhere. When an SQS event source mapping consumes the
// queues and invokes an AWS Lambda function with batches of their
// messages ([Options.ReceiveElsewhere]), the function decodes each body
// with [ParseSignal], hands the signals to its fetches with
// [Signals.Deliver], and at the end of the invocation takes back what no
// fetch took ([Signals.TakeKept]) to report those messages as failed, so
// that SQS delivers them again. The event source mapping deletes the
// others.

// ErrBadMessage is wrapped by the error [ParseSignal] returns for a body
// that is not a signal this version reads.
var ErrBadMessage = errors.New("queues: not a signal message")

// ParseSignal decodes the body of a signal message that a consumer other
// than this package's poller received, and returns the signal as the
// poller would hand it to the waiters of its kind. A body that does not
// decode, has another format version or names no kind this version knows
// fails with an error wrapping [ErrBadMessage]; the poller deletes such
// messages, and so may the caller.
func ParseSignal(body string) (Signal, error) {
	sig, from, err := decodeSignal(body)
	if err != nil {
		return Signal{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if !sig.Kind.valid() {
		return Signal{}, fmt.Errorf("%w: unknown kind", ErrBadMessage)
	}
	sig.from = from
	return sig, nil
}

// Deliver hands signals received from SQS by another consumer of the
// queues ([Options.ReceiveElsewhere]) to this process's waiters, as the
// poller hands what it receives: to every waiter of each signal's kind at
// once, or kept for the next [Signals.Wait] of the kind when none waits
// (at most [Options.MaxPending] per kind, the oldest dropped first); a
// signal whose VisibleAt is still ahead by [Options.Now] reaches them
// then. Unlike the poller, it drops no signal this process sent itself
// (an invocation that sent it may have ended before a waiter took it) and
// sends nothing back to SQS: signals nobody takes stay until
// [Signals.TakeKept]. Invalid signals (an unknown kind, a negative shard)
// and calls after [Signals.Close] are ignored.
func (s *Signals) Deliver(signals ...Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.opts.Now()
	var visible [numKinds][]Signal
	for _, sig := range signals {
		if !sig.Kind.valid() || sig.Shard < 0 {
			continue
		}
		sig.received, sig.unsent = false, false
		if wait := sig.VisibleAt.Sub(now); !sig.VisibleAt.IsZero() && wait > 0 {
			s.scheduleLocked(s.kinds[sig.Kind-1], sig.key(), sig, wait)
			continue
		}
		visible[sig.Kind-1] = append(visible[sig.Kind-1], sig)
	}
	for i, list := range visible {
		s.deliverLocked(s.kinds[i], list)
	}
}

// Kept returns how many signals are kept for the next [Signals.Wait] of
// their kind, every kind together: signals delivered or handed back while
// no waiter was there to take them.
func (s *Signals) Kept() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.kinds {
		n += len(k.pending)
	}
	return n
}

// TakeKept removes and returns the signals no [Signals.Wait] has taken:
// those kept for the next Wait of each kind, and those waiting for their
// VisibleAt in this process, whose timers it stops (a signal delivered
// early by SQS, or sent with a delay, whose SQS copy is on its way).
// Signals beyond [MaxDelay] that this process defers are left alone. A
// signal that reached this process only ([Signal.Unsent]) keeps its mark,
// so that the caller can send it on ([Signals.Decline]). A process whose
// environment is frozen between invocations calls it as an invocation
// ends, so that nothing of one invocation is left for the next.
func (s *Signals) TakeKept() []Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []Signal
	for _, k := range s.kinds {
		kept = append(kept, k.pending...)
		k.pending = nil
		clear(k.keptSince)
	}
	for key, t := range s.timers {
		if !t.Stop() {
			continue // firing now: it delivers to pending, or finds s closed
		}
		s.wg.Done()
		delete(s.timers, key)
		sig := Signal{Kind: key.kind, Shard: key.shard, Instance: key.instance, Work: key.work}
		if key.visibleAtMs != 0 {
			sig.VisibleAt = time.UnixMilli(key.visibleAtMs)
		}
		kept = append(kept, sig)
	}
	return kept
}
