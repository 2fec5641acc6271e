package queues

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// pollSlack lets a poll of whole seconds start a little after the wait it
// serves began: a 5 s wait polls for 5 s, not 4 s, although some
// microseconds have passed by the time the poller computes the remainder.
const pollSlack = 20 * time.Millisecond

// receiveVisibilitySeconds is the VisibilityTimeout of every receive. The
// poller deletes what it receives at once; the timeout only decides how soon a
// message comes back when a delete failed or a cancelled receive had taken
// it. Cancelling a long poll does not end it on the server side: SQS (and
// both emulators the tests run against) keeps the request open and hands it
// the next message, whose response nobody reads. So the poller never
// cancels a receive, except when [Signals.Close] stops it; this bounds the
// delay of a message such a receive takes then.
const receiveVisibilitySeconds = 2

// idleGrace is how long after its last waiter left a kind still keeps the
// signals its queue's receive in flight returns, and how long it keeps
// them. A dispatcher that found nothing, or made a sweep, waits again
// within milliseconds and takes them without a request; after idleGrace
// the dispatchers have found work (or stopped), and the poller sends the
// signals it receives back to the queue (see dispatch), as it does those it
// kept that no wait took (returnUntaken), so that this process does not
// hold signals that idle processes could act on.
const idleGrace = 500 * time.Millisecond

// deleteTimeout bounds one DeleteMessageBatch call. Deletes are not
// cancelled by Close (which waits for them instead), so that a signal already
// handed to waiters is not received a second time.
const deleteTimeout = 5 * time.Second

// Wait blocks until a signal of kind arrives, timeout passes, ctx ends or s
// is closed, and returns the signals received: possibly none (with a nil
// error) when timeout passed. Signals that arrived while nobody in this
// process waited for kind are returned at once.
//
// Signals come from [Signals.Notify] calls in this process (no network hop)
// and, when kind has a queue URL, from SQS. All goroutines waiting on one
// kind share one poller: it runs only while someone waits, long-polls for
// [Options.MaxLongPoll] while some wait has a second or more left (a short
// poll when every wait has less, and it has not been covered yet), deletes
// the messages it received, and hands every signal to every waiter of the
// kind (a broadcast). The remainder of a wait below one second is spent
// in-process, so a 300 ms wait returns after about 300 ms even though SQS
// counts in seconds. A delayed signal from SQS that arrives before its
// VisibleAt by this process's clock (a clock behind the sender's) is held
// until then, as Notify holds local ones. A kind without a queue URL makes
// no SQS requests.
//
// A timeout of 0 or less only collects the signals already kept for the
// next waiter; it never blocks and makes no request. When ctx ends, Wait
// returns ctx's error, and the signals that reached it meanwhile stay with
// the process as [Signals.Requeue] would keep them, except those that are
// [Signal.Unsent], which it returns with the error for the caller to send on
// ([Signals.Decline]), and a [Lock] waiter's release notices, which it
// returns with the error for the caller to dispatch. After [Signals.Close] it
// returns an error wrapping [ErrClosed], with what reached it. SQS failures
// are not returned: the poller logs them through [Options.Logger], counts them
// in [Stats.Errors], and waiters fall back to their timeout.
func (s *Signals) Wait(ctx context.Context, kind Kind, timeout time.Duration) ([]Signal, error) {
	k, err := s.kindState(opWait, kind)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, closedError(opWait)
	}
	k.consumer = true
	if len(k.pending) > 0 {
		sigs := k.pending
		k.pending = nil
		clear(k.keptSince)
		s.mu.Unlock()
		return sigs, nil
	}
	if timeout <= 0 {
		s.mu.Unlock()
		return nil, nil
	}
	w := &waiter{
		deadline: time.Now().Add(timeout),
		ready:    make(chan struct{}, 1),
		// A long poll in flight returns every message sent from now on.
		covered: k.q.longPoll,
	}
	k.waiters[w] = struct{}{}
	s.startPollerLocked(ctx, k.q)
	s.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
	case <-timer.C:
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.done:
		err = closedError(opWait)
	}
	s.mu.Lock()
	delete(k.waiters, w)
	if len(k.waiters) == 0 {
		k.idleSince = time.Now()
	}
	sigs := w.signals
	if err != nil && !s.closed && kind != Lock {
		sigs = s.leaveLocked(k, sigs)
	}
	s.mu.Unlock()
	return sigs, err
}

// leaveLocked hands the signals of sigs that a Wait ending with its
// context's error would otherwise return to a caller that is stopping back
// to the process, as Requeue does (other waiters, or the list for the next
// one, from which a received signal nobody takes goes back to its queue),
// and returns the Unsent ones, which the caller sends on. s.mu is held.
func (s *Signals) leaveLocked(k *kindState, sigs []Signal) (unsent []Signal) {
	var kept []Signal
	for _, sig := range sigs {
		if sig.unsent {
			unsent = append(unsent, sig)
		} else {
			kept = append(kept, sig)
		}
	}
	s.deliverLocked(k, kept)
	return unsent
}

// startPollerLocked starts the poller of queue k unless it runs already, k
// has no URL, s is closed or receives elsewhere (Options.ReceiveElsewhere). The poller's requests keep ctx's values but not
// its cancellation: they serve every waiter, and only Close cancels them.
// s.mu is held.
func (s *Signals) startPollerLocked(ctx context.Context, k *queueState) {
	if k.url == "" || k.polling || s.closed || s.opts.ReceiveElsewhere {
		return
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.polling = true
	k.pollCancel = cancel
	s.wg.Add(1)
	go s.poll(pctx, k)
}

// poll is the poller of queue k: it receives while someone waits for a kind
// that travels on it, and hands what it receives to the waiters of each
// signal's kind.
func (s *Signals) poll(ctx context.Context, k *queueState) {
	defer s.wg.Done()
	for {
		waitSeconds, ok := s.nextPoll(k)
		if !ok {
			return
		}
		msgs := s.receive(ctx, k, waitSeconds)
		if len(msgs) == 0 {
			continue
		}
		b := s.decode(k, msgs)
		s.dispatch(b)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
		s.sendOn(dctx, b)
		s.deleteMessages(dctx, k, b.dealt())
		cancel()
	}
}

// nextPoll decides the next receive of queue k with nextPollLocked and
// marks a long poll in flight. When ok is false the poller stops: nextPoll
// marks k as not polling and cancels the poller's context.
func (s *Signals) nextPoll(k *queueState) (waitSeconds int32, ok bool) {
	s.mu.Lock()
	waitSeconds, ok = s.nextPollLocked(k)
	if !ok {
		cancel := k.pollCancel
		k.polling, k.pollCancel = false, nil
		s.mu.Unlock()
		cancel()
		return 0, false
	}
	k.longPoll = waitSeconds > 0
	s.mu.Unlock()
	return waitSeconds, true
}

// receive is one ReceiveMessage call on queue k, waiting waitSeconds. It
// returns no messages when the call failed (logged and counted, after a
// pause of ErrorBackoff unless Close cancelled it) or came back empty
// (after that pause too if a long poll came back long before its time).
func (s *Signals) receive(ctx context.Context, k *queueState, waitSeconds int32) []types.Message {
	s.stats.receive.Add(1)
	started := time.Now()
	res, err := s.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            &k.url,
		MaxNumberOfMessages: maxBatchEntries,
		VisibilityTimeout:   receiveVisibilitySeconds,
		WaitTimeSeconds:     waitSeconds,
	})
	s.mu.Lock()
	k.longPoll = false
	s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil // Close: the next round ends the poller
		}
		s.stats.errors.Add(1)
		s.opts.Logger.Warn("queues: ReceiveMessage failed", "queue", k.url, "error", err)
		s.pause(ctx, s.opts.ErrorBackoff)
		return nil
	}
	if len(res.Messages) == 0 {
		if waitSeconds > 0 && time.Since(started) < time.Duration(waitSeconds)*time.Second/2 {
			// A long poll came back empty long before its time: the
			// queue does not block (an emulator, a proxy). Do not
			// turn it into a stream of requests.
			s.pause(ctx, s.opts.ErrorBackoff)
		}
		return nil
	}
	s.stats.received.Add(int64(len(res.Messages)))
	return res.Messages
}

// receivedBatch is what one receive returned, as the poller deals with it.
type receivedBatch struct {
	msgs []types.Message
	// sigs are the signals decoded from msgs that are for this process;
	// of is the message each came from.
	sigs []Signal
	of   []int
	// done marks the messages dealt with (delivered, sent on, or of no use
	// to anyone), which alone are deleted: one that a Close stopped the
	// poller from dealing with comes back to another process after the
	// receive's visibility timeout.
	done []bool
	// decline and giveBack are the signals to send on and to send back
	// to their queue; declined and givenBack their messages.
	decline, giveBack   []Signal
	declined, givenBack []int
}

// decode decodes the messages msgs that the poller of queue k received.
// It marks done, without a signal, those that cannot be decoded and those
// this process sent (but for a lock's release notices, which are for the
// waiters of other processes); a signal of a kind that does not travel on
// k is taken as k's own kind.
func (s *Signals) decode(k *queueState, msgs []types.Message) *receivedBatch {
	b := &receivedBatch{
		msgs: msgs,
		sigs: make([]Signal, 0, len(msgs)),
		of:   make([]int, 0, len(msgs)),
		done: make([]bool, len(msgs)),
	}
	for i, m := range msgs {
		sig, from, err := decodeSignal(deref(m.Body))
		switch {
		case err != nil:
			s.opts.Logger.Warn("queues: undecodable message dropped", "message_id", deref(m.MessageId), "queue", k.url, "error", err)
			b.done[i] = true
			continue
		case from == s.id && sig.Kind != Lock:
			// Notify already woke this process's waiters. (A lock's
			// release notice is meant for the waiters of other
			// processes: dispatch has it sent on.)
			s.stats.fromSelf.Add(1)
			b.done[i] = true
			continue
		case !sig.Kind.valid() || s.kinds[sig.Kind-1].q != k:
			own := k.kinds[0].kind
			s.opts.Logger.Warn("queues: message names another kind than its queue's; taken as the queue's", "message_id", deref(m.MessageId), "queue", k.url, "kind", sig.Kind.String(), "queue_kind", own.String())
			sig.Kind = own
		}
		sig.from, sig.received = from, true
		b.sigs = append(b.sigs, sig)
		b.of = append(b.of, i)
	}
	return b
}

// dispatch deals with b's signals under s.mu, unless s is closed (then
// their messages stay undone): the signals this process does not use go to
// b.decline, to send on; those that outlived their kind's waiters by
// idleGrace to b.giveBack, to send back; the rest are done, delivered to
// their kind's waiters at once or, if delayed, at their VisibleAt.
func (s *Signals) dispatch(b *receivedBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	visible := make([][]Signal, numKinds)
	for j, sig := range b.sigs {
		if s.closed {
			break
		}
		kind := s.kinds[sig.Kind-1]
		var sendOn bool
		if sig.Kind == Lock {
			// A lock's release notice this process sent, or that no
			// lock waiter of this process is there to take now, goes
			// on; one this process declined before is taken again if a
			// waiter is there now (its package declines the keys
			// nobody here waits for).
			sendOn = sig.from == s.id || len(kind.waiters) == 0
		} else {
			// Nobody here waits for this kind, or this process has
			// declined the signal before.
			sendOn = !kind.consumer || sig.declinedBy == s.id
		}
		if sendOn {
			b.decline = append(b.decline, sig)
			b.declined = append(b.declined, b.of[j])
			continue
		}
		if sig.Kind != Lock && len(kind.waiters) == 0 && time.Since(kind.idleSince) >= idleGrace {
			// The receive outlived its waiters (they found work):
			// the signal goes back to its queue for a process that
			// waits now; this one receives it again when it waits.
			b.giveBack = append(b.giveBack, sig)
			b.givenBack = append(b.givenBack, b.of[j])
			continue
		}
		b.done[b.of[j]] = true
		// DelaySeconds is rounded up, so a delayed signal reaches a
		// receiver whose clock agrees with the sender's after its
		// VisibleAt; one whose clock is behind gets it early. Its work
		// is not fetchable by this process's clock yet: deliver it
		// when it is, as Notify does for local delayed signals.
		if wait := sig.VisibleAt.Sub(now); !sig.VisibleAt.IsZero() && wait > 0 {
			s.scheduleLocked(kind, sig.key(), sig, wait)
			continue
		}
		visible[sig.Kind-1] = append(visible[sig.Kind-1], sig)
	}
	if !s.closed {
		for i, list := range visible {
			s.deliverLocked(s.kinds[i], list)
		}
	}
}

// sendOn sends b.decline on and b.giveBack back to their queue, and marks
// the messages of those sent done. Signals sent on or back go before the
// received copies are deleted, and even if Close began meanwhile; if
// sending fails, the copies are kept and come back after the visibility
// timeout.
func (s *Signals) sendOn(ctx context.Context, b *receivedBatch) {
	for _, out := range []struct {
		sigs     []Signal
		messages []int
		send     func(context.Context, []Signal) error
		what     string
	}{
		{b.decline, b.declined, s.decline, "queues: sending on signals this process does not use failed"},
		{b.giveBack, b.givenBack, s.giveBack, "queues: sending back signals nobody here waits for now failed"},
	} {
		if len(out.sigs) == 0 {
			continue
		}
		if err := out.send(ctx, out.sigs); err != nil {
			s.opts.Logger.Warn(out.what, "signals", len(out.sigs), "error", err)
			continue
		}
		for _, i := range out.messages {
			b.done[i] = true
		}
	}
}

// dealt returns the messages of b marked done, the ones to delete.
func (b *receivedBatch) dealt() []types.Message {
	var dealt []types.Message
	for i, m := range b.msgs {
		if b.done[i] {
			dealt = append(dealt, m)
		}
	}
	return dealt
}

// nextPollLocked decides the next receive of queue q: ok is false when the
// poller should stop (closed, nobody left waiting, or every remaining wait is
// under a second and already covered by an earlier receive). s.mu is held.
func (s *Signals) nextPollLocked(q *queueState) (waitSeconds int32, ok bool) {
	if s.closed {
		return 0, false
	}
	now := time.Now()
	var longest time.Duration
	active, uncovered := false, false
	for _, k := range q.kinds {
		for w := range k.waiters {
			rem := w.deadline.Sub(now)
			if w.woken || rem <= 0 {
				continue
			}
			active = true
			longest = max(longest, rem)
			uncovered = uncovered || !w.covered
		}
	}
	if !active {
		return 0, false
	}
	// A wait of a second or more gets the longest poll, not one cut to
	// the wait: a dispatcher whose wait ends with nothing waits again at
	// once, and the poll in flight serves it, so an idle
	// dispatcher costs one receive per MaxLongPoll, not one per wait.
	var wait time.Duration
	if longest+pollSlack >= time.Second {
		wait = s.opts.MaxLongPoll
	} else if !uncovered {
		return 0, false
	}
	for _, k := range q.kinds {
		for w := range k.waiters {
			w.covered = true
		}
	}
	return int32(wait / time.Second), true
}

// deleteMessages deletes received messages in one DeleteMessageBatch call (a
// receive returns at most 10). A failed delete only means the signal will be
// received again after the receive's visibility timeout.
func (s *Signals) deleteMessages(ctx context.Context, k *queueState, msgs []types.Message) {
	entries := make([]types.DeleteMessageBatchRequestEntry, 0, len(msgs))
	for i, m := range msgs {
		if m.ReceiptHandle == nil {
			continue
		}
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: strPtr(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	for len(entries) > 0 {
		n := min(len(entries), maxBatchEntries)
		batch := entries[:n]
		entries = entries[n:]
		s.stats.delete.Add(1)
		res, err := s.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &k.url, Entries: batch})
		if err != nil {
			s.stats.errors.Add(1)
			s.opts.Logger.Warn("queues: DeleteMessageBatch failed", "queue", k.url, "messages", len(batch), "error", err)
			continue
		}
		if len(res.Failed) > 0 {
			s.stats.errors.Add(int64(len(res.Failed)))
			f := res.Failed[0]
			s.opts.Logger.Warn("queues: DeleteMessageBatch failed for some messages", "queue", k.url, "failed", len(res.Failed), "messages", len(batch), "first_code", deref(f.Code), "first_message", deref(f.Message))
		}
	}
}

// pause sleeps for d or until ctx ends.
func (s *Signals) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// giveBack sends signals the poller received while nobody in this process
// waited for their kind back to their queue, unchanged: from the same
// sender, with the same hops, delayed until their VisibleAt.
func (s *Signals) giveBack(ctx context.Context, signals []Signal) error {
	var send [2][]toSend
	now := s.opts.Now()
	for _, sig := range signals {
		var delaySeconds int32
		if delay := sig.VisibleAt.Sub(now); !sig.VisibleAt.IsZero() && delay > 0 {
			delaySeconds = int32(min((delay+time.Second-1)/time.Second, MaxDelay/time.Second))
		}
		send[sig.Kind.queueOf()] = append(send[sig.Kind.queueOf()], toSend{sig: sig, delaySeconds: delaySeconds, from: sig.from})
	}
	s.stats.returned.Add(int64(len(signals)))
	return s.send(ctx, opWait, send, "")
}
