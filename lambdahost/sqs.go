package lambdahost

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/queues"
)

// ErrDeadlineTooClose is wrapped by the error of an invocation whose
// deadline leaves no time to fetch ([Options.StopBefore]): a sweep returns
// it; an SQS batch reports every message as failed instead.
var ErrDeadlineTooClose = errors.New("lambdahost: deadline too close")

// record is one SQS record as an invocation deals with it.
type record struct {
	msg   events.SQSMessage
	queue queueRef
	// sig is the signal the record carries; nil for a record with nothing
	// for the runtime (ignored: deleted).
	sig    *queues.Signal
	failed bool
	// held: failed because another process held the instance.
	held bool
}

// HandleSQS serves one batch of an event source mapping of either wake-up
// queue. It hands the batch's signals to the provider's fetches and runs a
// runtime until it is idle ([Options.Idle]: the signalled work and what it
// leads to in this invocation are done) or until [Options.StopBefore]
// before the deadline, then shuts it down: turns in flight commit, running
// activities are abandoned and run again later. It reports as failed the
// messages whose signal no fetch acted on: still waiting when fetching
// stopped, or handed back after a failed try (made visible again at once),
// or waiting for the end of another process's lock on its instance
// (hidden for a backoff, [Options.RetryDelay]), so that SQS delivers them
// again; SQS deletes the others. A body that is no signal for a runtime
// (undecodable, or a lock's or a job's) is not reported: it is of no use
// later either.
//
// It returns an error, so that every message comes back, only when the
// runtime cannot start (the table's layout cannot be checked).
func (h *Host) HandleSQS(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	began := time.Now()
	h.stats.sqs.Add(1)
	h.stats.records.Add(int64(len(event.Records)))
	recs, sigs := h.parse(event.Records)
	b, err := h.budgetOf(ctx)
	reason := ""
	if err == nil && len(sigs) > 0 {
		h.p.DeliverSignals(sigs...)
		reason, err = h.run(ctx, h.o.Idle, b)
	}
	kept, held := h.p.TakeUnusedSignals()
	unsent := settle(recs, kept, held, err != nil)
	fctx, cancel := h.finishContext(ctx, b)
	defer cancel()
	h.p.DeclineSignals(fctx, unsent...)
	if ferr := h.p.FlushSignals(fctx); ferr != nil {
		h.o.Logger.Warn("lambdahost: posted signals not all sent before the deadline; sweeps find their work", "error", ferr)
	}
	var resp events.SQSEventResponse
	var failed []*record
	for _, r := range recs {
		if r.failed {
			failed = append(failed, r)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.msg.MessageId})
		}
	}
	h.stats.failed.Add(int64(len(failed)))
	for _, r := range failed {
		if r.held {
			h.stats.held.Add(1)
		}
	}
	h.backOff(fctx, failed)
	h.o.Logger.Info("lambdahost: batch served", "records", len(recs), "signals", len(sigs), "failed", len(failed),
		"stopped", reason, "duration", time.Since(began).Round(time.Millisecond), "error", err)
	if err != nil && !errors.Is(err, ErrDeadlineTooClose) {
		return events.SQSEventResponse{}, err
	}
	return resp, nil
}

// parse decodes the records' signals and returns the records and the
// signals to deliver. A signal takes the kind of the queue it came from
// (its ARN names it), as the poller's do; records beyond what the
// provider keeps for its fetches (queues.DefaultMaxPending a kind) fail
// at once.
func (h *Host) parse(msgs []events.SQSMessage) ([]*record, []queues.Signal) {
	recs := make([]*record, 0, len(msgs))
	sigs := make([]queues.Signal, 0, len(msgs))
	perKind := map[queues.Kind]int{}
	for _, m := range msgs {
		r := &record{msg: m, queue: h.queues[queueName(m.EventSourceARN)]}
		recs = append(recs, r)
		sig, err := queues.ParseSignal(m.Body)
		if err != nil {
			h.stats.ignored.Add(1)
			h.o.Logger.Warn("lambdahost: message dropped", "message_id", m.MessageId, "queue", m.EventSourceARN, "error", err)
			continue
		}
		if sig.Kind == queues.Lock || sig.Kind == queues.Schedule {
			// A lock's release notice or a job's schedule: no runtime
			// waits for them, and their waiters fall back on leases and
			// polls (docs/lambda.md, limits).
			h.stats.ignored.Add(1)
			continue
		}
		if r.queue.kind != 0 {
			sig.Kind = r.queue.kind
		}
		if perKind[sig.Kind] >= queues.DefaultMaxPending {
			r.failed = true
			continue
		}
		perKind[sig.Kind]++
		r.sig = &sig
		sigs = append(sigs, sig)
	}
	return recs, sigs
}

// settle marks failed the records whose signal no fetch acted on: among
// kept, or naming an instance in held (waiting for another process's
// lock); every record with a signal when all is set. It returns the kept
// signals that reached this process only, to send on.
func settle(recs []*record, kept []queues.Signal, held []string, all bool) (unsent []queues.Signal) {
	for _, r := range recs {
		switch {
		case r.sig == nil || r.failed:
		case all:
			r.failed = true
		case r.sig.Kind == queues.Orchestrator && slices.Contains(held, r.sig.Instance):
			r.failed, r.held = true, true
		default:
			for _, u := range kept {
				if covers(u, *r.sig) {
					r.failed = true
					break
				}
			}
		}
	}
	for _, u := range kept {
		if u.Unsent() {
			unsent = append(unsent, u)
		}
	}
	return unsent
}

// covers reports whether the unused signal u stands for the work the
// record's signal s announced: the same kind and instance, and the same
// row unless either names none; for signals naming no instance, the same
// shard.
func covers(u, s queues.Signal) bool {
	switch {
	case u.Kind != s.Kind:
		return false
	case u.Instance == "" && s.Instance == "":
		return u.Shard == s.Shard
	case u.Instance != s.Instance:
		return false
	}
	return u.Work == "" || s.Work == "" || u.Work == s.Work
}

// backOff shortens the visibility timeout of the failed records' messages,
// one ChangeMessageVisibilityBatch per queue and ten messages: to nothing
// for a signal no fetch got to, to a backoff (Options.RetryDelay) for one
// whose instance another process held. It is best effort: a message whose
// change fails comes back after the queue's visibility timeout.
func (h *Host) backOff(ctx context.Context, failed []*record) {
	if h.vis == nil || h.o.RetryDelay < 0 {
		return
	}
	byQueue := map[string][]types.ChangeMessageVisibilityBatchRequestEntry{}
	for i, r := range failed {
		if r.queue.url == "" || r.msg.ReceiptHandle == "" {
			continue
		}
		// A signal no fetch got to (the invocation's time ran out) is for
		// another invocation at once; one whose instance another process
		// holds waits for that turn, backing off as it fails again.
		var delay time.Duration
		if r.held {
			receives, _ := strconv.Atoi(r.msg.Attributes["ApproximateReceiveCount"])
			delay = h.o.retryDelay(receives)
		}
		byQueue[r.queue.url] = append(byQueue[r.queue.url], types.ChangeMessageVisibilityBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(i)),
			ReceiptHandle:     aws.String(r.msg.ReceiptHandle),
			VisibilityTimeout: int32((delay + time.Second - 1) / time.Second),
		})
	}
	for url, entries := range byQueue {
		for len(entries) > 0 {
			n := min(len(entries), 10)
			out, err := h.vis.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries[:n]})
			switch {
			case err != nil:
				h.o.Logger.Warn("lambdahost: failed messages keep the queue's visibility timeout", "queue", url, "messages", n, "error", err)
			case len(out.Failed) > 0:
				h.o.Logger.Warn("lambdahost: some failed messages keep the queue's visibility timeout", "queue", url, "messages", len(out.Failed))
			}
			entries = entries[n:]
		}
	}
}
