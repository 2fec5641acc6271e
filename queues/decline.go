package queues

import (
	"context"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// MaxHops is how many times in all a signal is declined and sent on
// ([Signals.Decline]) before it is dropped. With N processes on a queue, a
// declined signal reaches another one each time; after MaxHops the work it
// named waits for a sweep, as a lost signal's does.
const MaxHops = 4

// hopDelaySeconds is the delay of a declined signal's hop-th sending on: none
// for the first, then 1, 2, 4 s. A signal that keeps coming back to processes
// that decline it (the one that can use it is busy, or not polling) thus
// circulates for about 7 s before it is dropped, instead of burning its
// hops in milliseconds.
func hopDelaySeconds(hops int) int32 {
	if hops <= 1 {
		return 0
	}
	return 1 << (hops - 2)
}

// declineWindow is how long a declined signal is remembered, so that the
// copies every waiter of the kind received (a broadcast) are sent on once.
const declineWindow = 2 * time.Second

// declineKey identifies the copies of one declined signal: the copies every
// waiter received have the same hops; the signal coming back after it was
// sent on has more.
type declineKey struct {
	signalKey
	hops int
}

// opDecline names the operation in the errors [Signals.Decline] returns.
const opDecline = "queues_decline"

// Decline hands signals this process received but cannot act on (work its
// tag or capability filter excludes, a session another process owns, a lock
// nobody here waits for) to other processes: each is sent again on its
// kind's queue, marked as declined by this [Signals], delayed until its
// VisibleAt and by 0, 1, 2 and 4 s on its first to fourth hop. When this
// process receives it back, it sends it on
// again without waking anyone. A signal declined [MaxHops] times in all, a
// signal whose kind has no queue URL, and a copy of one declined in the last
// two seconds are dropped: the work stays in DynamoDB for a sweep to find.
//
// The poller declines on its own the signals of a kind no [Signals.Wait]
// has ever waited for in this process, so a process that uses only some
// kinds does not swallow the others'.
//
// Decline wakes no waiter of this process. Its error is what
// [Signals.Notify] returns for a failed send; callers may log it and carry
// on, as signals are hints.
func (s *Signals) Decline(ctx context.Context, signals ...Signal) error {
	for _, sig := range signals {
		if !sig.Kind.valid() {
			return provider.Permanent(opDecline, provider.ErrInvalidInput, "invalid signal kind %v", sig.Kind)
		}
		if sig.Shard < 0 {
			return provider.Permanent(opDecline, provider.ErrInvalidInput, "negative shard %d", sig.Shard)
		}
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return closedError(opDecline)
	}
	return s.decline(ctx, signals)
}

// decline is Decline for valid signals, also while Close runs: the poller
// sends on what it received before Close stopped it.
func (s *Signals) decline(ctx context.Context, signals []Signal) error {
	var send [2][]toSend
	s.mu.Lock()
	now := s.opts.Now()
	for key, at := range s.declined {
		if now.Sub(at) > declineWindow {
			delete(s.declined, key)
		}
	}
	for _, sig := range signals {
		q := s.kinds[sig.Kind-1].q
		key := declineKey{sig.key(), sig.hops}
		if _, recent := s.declined[key]; recent || q.url == "" {
			continue
		}
		s.declined[key] = now
		if sig.hops >= MaxHops {
			s.stats.declineDropped.Add(1)
			continue
		}
		sig.hops++
		sig.declinedBy = s.id
		delaySeconds := hopDelaySeconds(sig.hops)
		if delay := sig.VisibleAt.Sub(now); !sig.VisibleAt.IsZero() && delay > 0 {
			delaySeconds = max(delaySeconds, int32(min((delay+time.Second-1)/time.Second, MaxDelay/time.Second)))
		}
		s.stats.declined.Add(1)
		send[sig.Kind.queueOf()] = append(send[sig.Kind.queueOf()], toSend{sig: sig, delaySeconds: delaySeconds})
	}
	s.mu.Unlock()
	return s.send(ctx, opDecline, send, "")
}
