package queues

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/provider"
)

// Kind names the queue a signal is for.
type Kind int

// The kinds of signal. The zero Kind is invalid.
const (
	// Orchestrator signals wake orchestration dispatchers: an orchestrator
	// message (start, completion, timer, event, ...) became or will become
	// visible. They travel on the orchestrator queue.
	Orchestrator Kind = iota + 1
	// Worker signals wake activity workers: a worker item became visible.
	// They travel on the worker queue.
	Worker
	// Lock signals wake the waiters of a distributed lock (package locks):
	// the lock named by [Signal.Instance] was released. They travel on the
	// orchestrator queue.
	Lock
	// Schedule signals wake job schedulers (package jobs): a job's next run
	// time, [Signal.VisibleAt], was set or moved earlier in shard
	// [Signal.Shard]. They travel on the orchestrator queue.
	Schedule

	numKinds = int(Schedule)
)

// kindNames are the names of the valid kinds, in the message body and in
// [Kind.String].
var kindNames = [numKinds]string{"orchestrator", "worker", "lock", "schedule"}

// String returns "orchestrator", "worker", "lock", "schedule" or "Kind(n)".
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k-1]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// parseKind is the inverse of [Kind.String] for the valid kinds; it returns
// 0 for anything else.
func parseKind(s string) Kind {
	for i, name := range kindNames {
		if name == s {
			return Kind(i + 1)
		}
	}
	return 0
}

func (k Kind) valid() bool { return k >= Orchestrator && k <= Schedule }

// queueOf is the queue a kind travels on: 0 the orchestrator queue, 1 the
// worker queue.
func (k Kind) queueOf() int {
	if k == Worker {
		return 1
	}
	return 0
}

// Signal is a hint that work of one kind is, or will become, visible in
// DynamoDB. It carries what makes the waker's next lookup cheap; it never
// carries the work itself.
type Signal struct {
	// Kind is the queue the work is on.
	Kind Kind
	// Shard is the queue shard (0 or more) that holds the work.
	Shard int
	// Instance is the orchestration instance the work targets, if known.
	// Any string is allowed, including '#', any Unicode and NUL.
	Instance string
	// VisibleAt is when the work becomes fetchable. The zero time means
	// now. Over SQS it travels with millisecond precision.
	VisibleAt time.Time
	// Work names the row that holds the work, in the sender's terms
	// (opaque here), so that a receiver can read it directly instead of
	// looking for it in an index that may lag. Empty when unknown. Like
	// Instance, any string is allowed.
	Work string
	// Claim, when set, is the state of the row Work names as the sender
	// wrote it, in the sender's terms (opaque here): a receiver may claim
	// the row directly, conditioned on that state, instead of first
	// looking for older work. Empty when the sender knows of no reason
	// to.
	Claim string

	// hops counts how often the signal was declined and sent on
	// ([Signals.Decline]); declinedBy is the id of the [Signals] that
	// declined it last.
	hops       int
	declinedBy string
	from       string // received from SQS: the sender's id, if the body named one
	received   bool   // received from SQS (its message is deleted)
	unsent     bool   // posted, not sent: a waiter of this process was free for it
}

// Unsent reports whether the signal reached this process only: [Signals.Post]
// kept it from SQS because a waiter of this process was free to take it. A
// waiter that cannot act on such a signal (another process holds its work,
// or its filter excludes the work) should [Signals.Decline] it, so that the
// process that can learns of the work without waiting for a sweep.
func (s Signal) Unsent() bool { return s.unsent }

// signalKey identifies identical signals (VisibleAt compared to the
// millisecond, as the message body carries it).
type signalKey struct {
	kind     Kind
	shard    int
	instance string
	work     string
	// claim tells apart the states of one row (an activity slot holds one
	// activity after another), so a stale copy does not stand for a new one.
	claim       string
	visibleAtMs int64
}

func (s Signal) key() signalKey {
	k := signalKey{kind: s.Kind, shard: s.Shard, instance: s.Instance, work: s.Work, claim: s.Claim}
	if !s.VisibleAt.IsZero() {
		k.visibleAtMs = visibleAtMs(s.VisibleAt)
	}
	return k
}

// visibleAtMs is t in Unix milliseconds, rounded up: a signal carried to the
// millisecond is never delivered before the time its work becomes
// fetchable, only up to a millisecond after it.
func visibleAtMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// API is the part of the SQS client that [Signals] uses; the SDK's [sqs.Client]
// satisfies it.
type API interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// ErrClosed is the cause of the error [Signals.Notify] and [Signals.Wait]
// return once [Signals.Close] has been called. Match it with [errors.Is].
var ErrClosed = errors.New("queues: signals closed")

// Operation names carried by the [*provider.Error] values this package
// returns.
const (
	opNotify = "queues_notify"
	opWait   = "queues_wait"
)

// Stats counts what a [Signals] has done since [New]: SQS requests per
// operation (the figures a request budget is measured with) and messages.
type Stats struct {
	// SendMessageBatchRequests counts SendMessageBatch calls.
	SendMessageBatchRequests int64
	// ReceiveMessageRequests counts ReceiveMessage calls (short and long
	// polls).
	ReceiveMessageRequests int64
	// DeleteMessageBatchRequests counts DeleteMessageBatch calls.
	DeleteMessageBatchRequests int64
	// MessagesSent counts messages SQS accepted.
	MessagesSent int64
	// MessagesReceived counts messages received, decodable or not.
	MessagesReceived int64
	// MessagesFromSelf counts received messages this [Signals] had sent
	// itself. They are deleted without waking anyone: Notify woke this
	// process's waiters already.
	MessagesFromSelf int64
	// SignalsDeferred counts signals whose VisibleAt was more than
	// [MaxDelay] away, kept in this process until they were within it.
	SignalsDeferred int64
	// SignalsBeyondMaxDelay counts signals neither sent nor deferred: more
	// than [MaxDelay] away while [Options.MaxDeferred] were deferred already.
	SignalsBeyondMaxDelay int64
	// SignalsDeclined counts signals sent on to other processes
	// ([Signals.Decline]).
	SignalsDeclined int64
	// SignalsDeclinedTooOften counts declined signals dropped because they
	// had been sent on [MaxHops] times.
	SignalsDeclinedTooOften int64
	// SignalsDropped counts posted signals ([Signals.Post]) dropped
	// because [Options.MaxPosted] were waiting to be sent already.
	SignalsDropped int64
	// SignalsKeptLocal counts posted signals not sent to SQS because a
	// waiter of this process was free to take each ([Signals.Post]), and
	// signals kept in the process ([Signals.Keep]).
	SignalsKeptLocal int64
	// SignalsReturned counts signals received from SQS while nobody in
	// this process waited for their kind, and sent back to their queue
	// for a process that does.
	SignalsReturned int64
	// Errors counts failed SQS requests and failed batch entries.
	Errors int64
}

type counters struct {
	send, receive, delete, sent, received, fromSelf, deferred, beyond, declined, declineDropped, dropped, keptLocal, returned, errors atomic.Int64
}

// Signals sends and receives wake-up signals for both queue kinds. It is safe
// for concurrent use. Create it with [New] and stop it with [Signals.Close].
type Signals struct {
	api  API
	opts Options
	id   string // random; marks the messages this Signals sends

	mu       sync.Mutex
	closed   bool
	done     chan struct{} // closed by Close
	queues   [2]*queueState
	kinds    [numKinds]*kindState
	timers   map[signalKey]*time.Timer // in-process delayed signals
	deferred map[signalKey]*time.Timer // signals beyond MaxDelay, sent when within it
	declined map[declineKey]time.Time  // recently declined, so a broadcast is sent on once
	outbox   outbox                    // posted signals not sent yet
	wg       sync.WaitGroup            // pollers, timer callbacks and the sender of posted signals

	// sendCtx is the context of the sender of posted signals; sendCancel
	// ends it, CloseFlushTimeout after Close.
	sendCtx    context.Context
	sendCancel context.CancelFunc

	stats counters
}

// kindState is the receive side of one kind. Guarded by Signals.mu.
type kindState struct {
	kind     Kind
	q        *queueState // the queue the kind travels on
	waiters  map[*waiter]struct{}
	pending  []Signal // arrived while nobody waited
	consumer bool     // some Wait for the kind has run in this process
	// keptSince holds when each received signal of pending was kept, for
	// returnUntaken; returning is set while its timer runs.
	keptSince map[signalKey]time.Time
	returning bool
	// idleSince is when the kind's last waiter left (zero before any).
	idleSince time.Time
}

// queueState is one SQS queue and its poller, shared by the kinds that
// travel on it. Guarded by Signals.mu.
type queueState struct {
	url   string
	kinds []*kindState // the first is the queue's own kind

	polling    bool               // a poller goroutine runs
	pollCancel context.CancelFunc // cancels the running poller's requests
	longPoll   bool               // a long poll (WaitTimeSeconds >= 1) is in flight
}

// waiter is one blocked [Signals.Wait] call. Fields other than ready are
// guarded by Signals.mu.
type waiter struct {
	deadline time.Time
	ready    chan struct{} // capacity 1: deliveries coalesce
	signals  []Signal
	woken    bool // a delivery is on its way; the poller ignores this waiter
	covered  bool // a receive that can see messages sent before the wait began has run
}

// New returns a [Signals] that sends and receives through api with the
// options optFns set. It does no I/O. api may be nil when neither queue URL
// is set (everything then stays in this process).
func New(api API, optFns ...func(*Options)) (*Signals, error) {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if api == nil && (o.OrchestratorQueueURL != "" || o.WorkerQueueURL != "") {
		return nil, errors.New("queues: nil SQS API with a queue URL set")
	}
	s := &Signals{
		api:      api,
		opts:     o,
		id:       rand.Text()[:16],
		done:     make(chan struct{}),
		timers:   make(map[signalKey]*time.Timer),
		deferred: make(map[signalKey]*time.Timer),
		declined: make(map[declineKey]time.Time),
	}
	s.sendCtx, s.sendCancel = context.WithCancel(context.Background())
	for i, url := range []string{o.OrchestratorQueueURL, o.WorkerQueueURL} {
		s.queues[i] = &queueState{url: url}
	}
	for i := range s.kinds {
		q := s.queues[Kind(i+1).queueOf()]
		k := &kindState{kind: Kind(i + 1), q: q, waiters: make(map[*waiter]struct{})}
		s.kinds[i] = k
		q.kinds = append(q.kinds, k)
	}
	return s, nil
}

// kindState returns the state of kind, or an error for an invalid kind.
func (s *Signals) kindState(op string, kind Kind) (*kindState, error) {
	if !kind.valid() {
		return nil, provider.Permanent(op, provider.ErrInvalidInput, "invalid signal kind %v", kind)
	}
	return s.kinds[kind-1], nil
}

// Stats returns the counters accumulated since [New].
func (s *Signals) Stats() Stats {
	c := &s.stats
	return Stats{
		SendMessageBatchRequests:   c.send.Load(),
		ReceiveMessageRequests:     c.receive.Load(),
		DeleteMessageBatchRequests: c.delete.Load(),
		MessagesSent:               c.sent.Load(),
		MessagesReceived:           c.received.Load(),
		MessagesFromSelf:           c.fromSelf.Load(),
		SignalsReturned:            c.returned.Load(),
		SignalsDeferred:            c.deferred.Load(),
		SignalsBeyondMaxDelay:      c.beyond.Load(),
		SignalsDeclined:            c.declined.Load(),
		SignalsDeclinedTooOften:    c.declineDropped.Load(),
		SignalsDropped:             c.dropped.Load(),
		SignalsKeptLocal:           c.keptLocal.Load(),
		Errors:                     c.errors.Load(),
	}
}

// Waiting returns how many [Signals.Wait] calls for kind are blocked now
// and not yet woken: the waiters a signal of kind would wake at once
// (0 for an invalid kind).
func (s *Signals) Waiting(kind Kind) int {
	k, err := s.kindState(opWait, kind)
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range k.waiters {
		if !w.woken {
			n++
		}
	}
	return n
}

// Close stops the background pollers and the in-process delay timers, wakes
// every blocked [Signals.Wait] (which then returns [ErrClosed]) and waits
// until all goroutines of s have ended. A receive in flight is cancelled (a
// message it had already taken becomes visible again within 2 s); a delete
// in flight is waited for (at most 5 s). Posted signals not sent yet
// ([Signals.Post]) are sent, for at most [CloseFlushTimeout]; Post and
// Notify fail with [ErrClosed] from the start of Close.
// Close always returns nil; calling it again only waits for the first call
// to finish.
func (s *Signals) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.done)
	for _, q := range s.queues {
		if q.pollCancel != nil {
			q.pollCancel()
		}
	}
	for _, timers := range []map[signalKey]*time.Timer{s.timers, s.deferred} {
		for key, t := range timers {
			if t.Stop() {
				s.wg.Done()
			}
			delete(timers, key)
		}
	}
	// The sender of posted signals sends what is left, for a while.
	giveUp := time.AfterFunc(CloseFlushTimeout, s.sendCancel)
	s.mu.Unlock()
	s.wg.Wait()
	giveUp.Stop()
	s.sendCancel()
	return nil
}

// closedError is the error of a call made after Close.
func closedError(op string) error {
	return provider.Permanent(op, ErrClosed, "signals closed")
}

// Requeue hands signals back to this process's waiters, without sending
// them anywhere: what a waiter does with signals it received but could not
// act on because of a transient failure, so that the next wait (its own
// retry, or another dispatcher's) still learns of the work. Signals of a
// kind that is not configured are ignored. A signal received from SQS that
// no Wait takes within half a second goes back to its queue, as the
// poller's kept signals do (see the package documentation).
func (s *Signals) Requeue(signals ...Signal) { s.requeue(0, signals) }

// Keep hands signals to this process's waiters only, marked as reaching
// this process alone ([Signal.Unsent]), as [Signals.Post] does for a
// signal a free waiter takes, whether or not one waits now: nothing goes to
// SQS. It is for work no other process can take while this one holds it
// (an instance whose lock this process keeps for its next turn). A waiter,
// or the host of a frozen process, that leaves such a signal unused sends
// it on ([Signals.Decline]). A signal visible later is handed over at its
// VisibleAt, as [Signals.Deliver] does; invalid signals are ignored.
func (s *Signals) Keep(signals ...Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.opts.Now()
	for _, sig := range signals {
		k, err := s.kindState(opWait, sig.Kind)
		if err != nil {
			continue
		}
		sig.unsent = true
		s.stats.keptLocal.Add(1)
		if wait := sig.VisibleAt.Sub(now); wait > 0 {
			s.scheduleLocked(k, sig.key(), sig, wait)
			continue
		}
		s.deliverLocked(k, []Signal{sig})
	}
}

// RequeueAfter hands signals to this process's waiters as Requeue does,
// after delay: for work a waiter looked for and may find on a second look
// (an index that lags the writes it announces). A signal identical to one
// already waiting to be handed over is not doubled. Close drops what has
// not been handed over yet. A delay of 0 or less is Requeue.
func (s *Signals) RequeueAfter(delay time.Duration, signals ...Signal) { s.requeue(delay, signals) }

// requeue is Requeue, after delay when it is positive.
func (s *Signals) requeue(delay time.Duration, signals []Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, sig := range signals {
		k, err := s.kindState(opWait, sig.Kind)
		switch {
		case err != nil:
		case delay > 0:
			s.scheduleLocked(k, sig.key(), sig, delay)
		default:
			s.deliverLocked(k, []Signal{sig})
		}
	}
}

// deliverLocked hands sigs to every waiter of k, or keeps them for the next
// waiter when there is none. Each waiter gets its own copy. s.mu is held.
func (s *Signals) deliverLocked(k *kindState, sigs []Signal) {
	if len(sigs) == 0 {
		return
	}
	if len(k.waiters) == 0 {
		k.pending = appendSignals(k.pending, sigs, s.opts.MaxPending)
		s.keepReceivedLocked(k, sigs)
		return
	}
	for w := range k.waiters {
		w.signals = appendSignals(w.signals, sigs, s.opts.MaxPending)
		w.woken = true
		select {
		case w.ready <- struct{}{}:
		default: // already signalled: this delivery coalesces with it
		}
	}
}

// keepReceivedLocked notes when the received signals of sigs, just kept in
// k.pending, were kept, and arms returnUntaken for them. s.mu is held.
func (s *Signals) keepReceivedLocked(k *kindState, sigs []Signal) {
	now := time.Now()
	armed := false
	for _, sig := range sigs {
		if !sig.received || sig.Kind == Lock {
			continue
		}
		if k.keptSince == nil {
			k.keptSince = make(map[signalKey]time.Time)
		}
		if _, ok := k.keptSince[sig.key()]; !ok {
			k.keptSince[sig.key()] = now
		}
		armed = true
	}
	if armed && !k.returning && !s.closed {
		k.returning = true
		s.wg.Add(1)
		time.AfterFunc(idleGrace, func() { s.returnUntaken(k) })
	}
}

// returnUntaken sends back to their queue the signals received from SQS
// that k has kept for its next Wait for idleGrace or longer (while s
// closes, all of them), and runs again for those kept more recently. A
// Wait takes every kept signal at once, so one still kept was taken by
// none: the process's dispatchers have stopped (a runtime shut down while
// its provider stays open), or are all busy, and the signal's message is
// already deleted. Sent back, it reaches a process that waits. A signal
// this process had only locally is not sent: its copy went to SQS when it
// was sent, or, unsent, its fetch declines it ([Signal.Unsent]).
func (s *Signals) returnUntaken(k *kindState) {
	defer s.wg.Done()
	s.mu.Lock()
	now := time.Now()
	var back, kept []Signal
	var next time.Duration // until the next kept signal is idleGrace old
	since := make(map[signalKey]time.Time)
	for _, sig := range k.pending {
		key := sig.key()
		at, ok := k.keptSince[key]
		switch {
		case !ok:
			kept = append(kept, sig)
		case s.closed || now.Sub(at) >= idleGrace:
			back = append(back, sig)
		default:
			kept = append(kept, sig)
			since[key] = at
			if wait := idleGrace - now.Sub(at); next == 0 || wait < next {
				next = wait
			}
		}
	}
	k.pending, k.keptSince = kept, since
	k.returning = len(since) > 0 && !s.closed
	if k.returning {
		s.wg.Add(1)
		time.AfterFunc(next, func() { s.returnUntaken(k) })
	}
	s.mu.Unlock()
	if len(back) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	if err := s.giveBack(ctx, back); err != nil {
		s.opts.Logger.Warn("queues: sending back signals no wait of this process took failed", "signals", len(back), "error", err)
	}
}

// appendSignals appends the signals of add that list does not hold yet,
// then keeps at most limit of them, dropping the oldest. Dropping reslices:
// the next append that outgrows the array copies only what is kept.
func appendSignals(list, add []Signal, limit int) []Signal {
	for _, sig := range add {
		key := sig.key()
		if !slices.ContainsFunc(list, func(have Signal) bool { return have.key() == key }) {
			list = append(list, sig)
		}
	}
	if len(list) > limit {
		clear(list[:len(list)-limit]) // no longer reachable through list
		list = list[len(list)-limit:]
	}
	return list
}
