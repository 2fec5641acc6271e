package queues

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/provider"
)

// maxBatchEntries is the most entries one SendMessageBatch or
// DeleteMessageBatch call may carry.
const maxBatchEntries = 10

// outgoing is one message to send.
type outgoing struct {
	body         string
	delaySeconds int32
}

// toSend is a signal to send and its delay.
type toSend struct {
	sig          Signal
	delaySeconds int32
	from         string // the sender id the body names, if not the call's
}

// Notify wakes the waiters of signals: call it after the DynamoDB write that
// made the work visible has committed.
//
// It first wakes the waiters of this process, with no network hop: at once
// for signals that are visible now, and through an in-process timer at
// VisibleAt for delayed ones. Then it sends one SQS message per distinct
// signal to the queue of its kind, in SendMessageBatch calls of at most 10
// messages; identical signals (same kind, shard, instance, work, claim and
// VisibleAt to the millisecond) are sent once. A delayed signal uses DelaySeconds,
// rounded up to whole seconds so that it never arrives before its work. A
// signal more than [MaxDelay] (15 minutes) away is deferred: this process
// keeps it, in memory, until it is within MaxDelay and then notifies it
// (see [Stats.SignalsDeferred]; at most [Options.MaxDeferred] at once, the
// rest are counted in [Stats.SignalsBeyondMaxDelay] and dropped). A signal
// deferred by a process that stops is lost, and the dispatchers' periodic
// sweep finds that work. Kinds without a queue URL make no requests.
//
// An invalid signal (an unknown kind, a negative shard)
// fails the whole call before anything is woken or sent, with a permanent
// error wrapping [provider.ErrInvalidInput]. Otherwise every batch is
// attempted; the error, if any, is a [*provider.Error] whose Retryable field
// tells whether sending again may succeed (throttling and outages may;
// a missing queue, a refused message or a cancelled ctx may not). Because
// the work is already committed and signals are only hints, callers may
// log the error and carry on.
func (s *Signals) Notify(ctx context.Context, signals ...Signal) error {
	send, err := s.wake(signals, false)
	if err != nil {
		return err
	}
	return s.send(ctx, opNotify, send, s.id)
}

// Post is [Signals.Notify] without waiting for SQS: it checks signals and
// wakes this process's waiters as Notify does, hands the SQS messages to a
// background sender and returns. For commits whose caller should not wait
// for a wake-up meant for other processes: a dispatcher that committed a
// turn goes on to its next fetch while the sender works.
//
// A signal that names one unit of work (an orchestrator signal naming its
// instance, a worker signal naming its row: [Signal.Work]), visible now,
// is not sent at all when a waiter of this process is free to take it:
// waiting, not yet woken, and not counted for an earlier signal of the
// same Post. That waiter receives it marked [Signal.Unsent] and declines
// it if it cannot act on it. A chain of turns and activities run by one
// process thus makes no SQS request, where each step made six (a send, a
// receive and a delete on each queue; [Stats.SignalsKeptLocal] counts
// them). Signals that announce a shard's work, delayed signals, and
// signals beyond the free waiters are sent as before, so that the work
// this process cannot take at once reaches the others.
//
// The sender sends what has been posted in SendMessageBatch calls of at
// most 10 messages per queue, so that the signals of commits that follow
// each other closely share requests; identical signals posted while
// earlier ones were being sent are sent once. A failed send is logged
// ([Options.Logger]) and counted in [Stats.Errors], nothing more: signals are
// hints, and a lost one costs latency until a poll timeout or a sweep. At
// most [Options.MaxPosted] messages wait to be sent; a post beyond that
// drops its messages, counted in [Stats.SignalsDropped].
//
// [Signals.Flush] waits until what was posted before it has been sent.
// [Signals.Close] sends what is left, for at most [CloseFlushTimeout]. A
// process that stops without Close (a Lambda function's environment frozen
// after its handler returned) may hold posted signals unsent until it runs
// again; their work waits for a poll timeout or a sweep, as a lost signal's.
// Post fails only as Notify fails before sending: invalid signals, or
// [ErrClosed].
func (s *Signals) Post(signals ...Signal) error {
	send, err := s.wake(signals, true)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return closedError(opNotify)
	}
	o := &s.outbox
	for i, list := range send {
		for _, m := range list {
			if o.waiting >= s.opts.MaxPosted {
				s.stats.dropped.Add(1)
				continue
			}
			o.pending[i] = append(o.pending[i], m)
			o.waiting++
			o.posted++
		}
	}
	if !o.sending && o.waiting > 0 {
		o.sending = true
		s.wg.Add(1)
		go s.sendPosted()
	}
	return nil
}

// CloseFlushTimeout bounds the sending of posted signals by
// [Signals.Close].
const CloseFlushTimeout = 5 * time.Second

// postSendTimeout bounds the sending of one round of posted signals.
const postSendTimeout = 2 * time.Second

// outbox holds posted signals until the sender takes them. Guarded by
// Signals.mu.
type outbox struct {
	pending [2][]toSend   // by queue, in posting order
	waiting int           // messages in pending
	sending bool          // a sendPosted goroutine runs
	posted  uint64        // messages ever posted (not dropped)
	settled uint64        // of those, messages whose sending has ended
	round   chan struct{} // closed, and replaced, when a round ends
}

// sendPosted sends the posted signals, round after round, until none
// wait; each round takes every waiting message, identical ones once.
func (s *Signals) sendPosted() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		o := &s.outbox
		send, taken := o.pending, o.waiting
		o.pending, o.waiting = [2][]toSend{}, 0
		if taken == 0 {
			o.sending = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for i, list := range send {
			send[i] = distinctMessages(list)
		}
		ctx, cancel := context.WithTimeout(s.sendCtx, postSendTimeout)
		if err := s.send(ctx, opNotify, send, s.id); err != nil {
			s.opts.Logger.Warn("queues: posted wake-up signals not sent; their work is committed and a poll timeout or a sweep finds it", "error", err)
		}
		cancel()
		s.mu.Lock()
		o.settled += uint64(taken)
		if o.round != nil {
			close(o.round)
			o.round = nil
		}
		s.mu.Unlock()
	}
}

// distinctMessages returns list without the repeats of a signal (same
// kind, shard, instance, work, claim and VisibleAt), keeping the first.
func distinctMessages(list []toSend) []toSend {
	seen := make(map[signalKey]bool, len(list))
	out := list[:0]
	for _, m := range list {
		if key := m.sig.key(); !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	return out
}

// Flush waits until the signals posted ([Signals.Post]) before it was
// called have been sent, or their sending has failed, or ctx ends (then it
// returns ctx's error).
func (s *Signals) Flush(ctx context.Context) error {
	s.mu.Lock()
	target := s.outbox.posted
	for s.outbox.settled < target {
		if s.outbox.round == nil {
			s.outbox.round = make(chan struct{})
		}
		round := s.outbox.round
		s.mu.Unlock()
		select {
		case <-round:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return nil
}

// wake checks signals, wakes this process's waiters of those visible now,
// schedules the in-process delivery of delayed ones and defers those
// beyond MaxDelay, and returns the SQS messages to send: one per distinct
// signal, by queue. With keepLocal (Post), a signal for one unit of work
// that a free waiter of this process can take is not sent (see Post). It
// fails on an invalid signal (before anything is woken) and after Close.
func (s *Signals) wake(signals []Signal, keepLocal bool) ([2][]toSend, error) {
	var send [2][]toSend
	for _, sig := range signals {
		if !sig.Kind.valid() {
			return send, provider.Permanent(opNotify, provider.ErrInvalidInput, "invalid signal kind %v", sig.Kind)
		}
		if sig.Shard < 0 {
			return send, provider.Permanent(opNotify, provider.ErrInvalidInput, "negative shard %d", sig.Shard)
		}
	}
	if len(signals) == 0 {
		return send, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return send, closedError(opNotify)
	}
	now := s.opts.Now()
	seen := make(map[signalKey]bool, len(signals))
	var immediate [numKinds][]Signal
	var free [numKinds]int // waiters free to take a signal each
	if keepLocal {
		wall := time.Now()
		for _, kind := range []Kind{Orchestrator, Worker} {
			for w := range s.kinds[kind-1].waiters {
				if !w.woken && w.deadline.After(wall) {
					free[kind-1]++
				}
			}
		}
	}
	for _, sig := range signals {
		key := sig.key()
		if seen[key] {
			continue
		}
		seen[key] = true
		k := s.kinds[sig.Kind-1]
		delay := time.Duration(0)
		if !sig.VisibleAt.IsZero() {
			delay = sig.VisibleAt.Sub(now)
		}
		var delaySeconds int32
		switch {
		case delay <= 0 && free[sig.Kind-1] > 0 && k.q.url != "" && sig.namesOneUnit():
			free[sig.Kind-1]--
			sig.unsent = true
			immediate[sig.Kind-1] = append(immediate[sig.Kind-1], sig)
			s.stats.keptLocal.Add(1)
			continue
		case delay <= 0:
			immediate[sig.Kind-1] = append(immediate[sig.Kind-1], sig)
		case delay > MaxDelay:
			if s.deferLocked(key, sig, delay) {
				s.stats.deferred.Add(1)
			} else {
				s.stats.beyond.Add(1)
			}
			continue
		default:
			delaySeconds = int32((delay + time.Second - 1) / time.Second)
			s.scheduleLocked(k, key, sig, delay)
		}
		if k.q.url != "" {
			send[sig.Kind.queueOf()] = append(send[sig.Kind.queueOf()], toSend{sig: sig, delaySeconds: delaySeconds})
		}
	}
	for i, sigs := range immediate {
		s.deliverLocked(s.kinds[i], sigs)
	}
	return send, nil
}

// namesOneUnit reports whether sig announces one unit of work that one
// fetch takes: an orchestrator signal naming its instance, a worker signal
// naming its row.
func (s Signal) namesOneUnit() bool {
	switch s.Kind {
	case Orchestrator:
		return s.Instance != ""
	case Worker:
		return s.Instance != "" && s.Work != ""
	}
	return false
}

// send sends the signals of each queue in batches, their bodies marked as
// from from, and returns what Notify and Decline return.
func (s *Signals) send(ctx context.Context, op string, send [2][]toSend, from string) error {
	var errs []error
	retryable := true
	for i, list := range send {
		url := s.queues[i].url
		msgs := make([]outgoing, len(list))
		for j, m := range list {
			msgs[j] = outgoing{body: encodeSignal(m.sig, cmp.Or(m.from, from)), delaySeconds: m.delaySeconds}
		}
		for _, batch := range splitBatches(msgs) {
			if permanent, err := s.sendBatch(ctx, url, batch); err != nil {
				errs = append(errs, err)
				retryable = retryable && !permanent
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	if retryable {
		return provider.Retryable(op, err, "%v", err)
	}
	return provider.Permanent(op, err, "%v", err)
}

// scheduleLocked arranges for sig to reach the waiters of k after delay,
// unless an identical signal is already scheduled. s.mu is held.
func (s *Signals) scheduleLocked(k *kindState, key signalKey, sig Signal, delay time.Duration) {
	if _, ok := s.timers[key]; ok {
		return
	}
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		defer s.wg.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.timers[key] == t {
			delete(s.timers, key)
		}
		if !s.closed {
			s.deliverLocked(k, []Signal{sig})
		}
	})
	s.timers[key] = t
}

// deferLocked keeps sig, which is delay away (more than MaxDelay), until it
// is a second within MaxDelay, then notifies it. It reports false when
// MaxDeferred signals are deferred already. s.mu is held.
func (s *Signals) deferLocked(key signalKey, sig Signal, delay time.Duration) bool {
	if _, ok := s.deferred[key]; ok {
		return true
	}
	if len(s.deferred) >= s.opts.MaxDeferred {
		return false
	}
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(delay-MaxDelay+time.Second, func() {
		defer s.wg.Done()
		s.mu.Lock()
		mine := s.deferred[key] == t
		if mine {
			delete(s.deferred, key)
		}
		closed := s.closed
		s.mu.Unlock()
		if !mine || closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), deferredSendTimeout)
		defer cancel()
		if err := s.Notify(ctx, sig); err != nil {
			s.opts.Logger.Warn("queues: sending a deferred signal failed", "kind", sig.Kind.String(), "shard", sig.Shard, "error", err)
		}
	})
	s.deferred[key] = t
	return true
}

// deferredSendTimeout bounds the Notify of a deferred signal.
const deferredSendTimeout = 10 * time.Second

// splitBatches cuts msgs into batches of at most maxBatchEntries messages and
// maxBodyBytes of bodies.
func splitBatches(msgs []outgoing) [][]outgoing {
	var batches [][]outgoing
	var cur []outgoing
	size := 0
	for _, m := range msgs {
		if len(cur) == maxBatchEntries || (len(cur) > 0 && size+len(m.body) > maxBodyBytes) {
			batches = append(batches, cur)
			cur, size = nil, 0
		}
		cur = append(cur, m)
		size += len(m.body)
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// sendBatch sends one batch to url. It reports whether a failure is
// permanent.
func (s *Signals) sendBatch(ctx context.Context, url string, batch []outgoing) (permanent bool, err error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:           strPtr(strconv.Itoa(i)),
			MessageBody:  strPtr(m.body),
			DelaySeconds: m.delaySeconds,
		}
	}
	s.stats.send.Add(1)
	res, err := s.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries})
	if err != nil {
		s.stats.errors.Add(1)
		return permanentSQSError(err), fmt.Errorf("SendMessageBatch of %d to %s: %w", len(batch), url, err)
	}
	s.stats.sent.Add(int64(len(res.Successful)))
	if len(res.Failed) == 0 {
		return false, nil
	}
	s.stats.errors.Add(int64(len(res.Failed)))
	var b strings.Builder
	permanent = true
	for i, f := range res.Failed {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", deref(f.Code), deref(f.Message))
		permanent = permanent && f.SenderFault
	}
	return permanent, fmt.Errorf("SendMessageBatch to %s: %d of %d messages failed: %s", url, len(res.Failed), len(batch), b.String())
}

// permanentSQSError reports whether err will recur if the same request is
// sent again: a cancelled or expired ctx, a missing queue, a refused
// credential or a malformed request.
func permanentSQSError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var qdne *types.QueueDoesNotExist
	if errors.As(err, &qdne) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "AccessDenied", "AccessDeniedException",
			"InvalidAddress", "InvalidSecurity", "InvalidParameterValue", "UnsupportedOperation",
			"InvalidClientTokenId", "UnrecognizedClientException", "KmsAccessDenied", "KmsDisabled":
			return true
		}
	}
	return false
}

func strPtr(s string) *string { return &s }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
