package dynamo

import (
	"context"
	"time"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/queues"
)

// Hosting on AWS Lambda (package lambdahost). An SQS event source mapping
// consumes the wake-up queues and invokes a function with batches of their
// messages; the function keeps one provider per execution environment,
// built with Options.ReceiveElsewhere, and runs a runtime per invocation.
// The provider then needs, beyond what its poller gives it otherwise:
//
//   - the signals of the batch, handed to its fetches (DeliverSignals), as
//     its poller would hand what it received;
//   - to know whether its fetches still hold signals they have not acted
//     on (SignalsInHand), so that an invocation does not end before they
//     have tried them;
//   - the signals nobody acted on when the invocation ends
//     (TakeUnusedSignals): kept for a next fetch, waiting for their time,
//     or held for the end of another process's lock. Their messages are
//     reported as failed, so that SQS delivers them again; nothing of one
//     invocation is left for the next, which may come much later or never;
//   - its posted signals sent before the environment is frozen
//     (FlushSignals);
//   - in the scheduled invocations that stand in for the sweeps a
//     long-running process makes, signals for the work no signal announces
//     (Unannounced, NotifySignals), which the mappings' invocations then
//     take.

// DeliverSignals hands signals that an SQS event source mapping received
// (decoded with [queues.ParseSignal]) to this provider's fetches, as its
// own poller hands what it receives (see [queues.Signals.Deliver]).
func (p *Provider) DeliverSignals(signals ...queues.Signal) {
	p.signals.Deliver(signals...)
}

// SignalsInHand reports whether the provider holds signals its fetches
// have not acted on yet: signals kept for the next fetch, or a fetch
// trying an instance or an activity row right now.
func (p *Provider) SignalsInHand() bool {
	if p.signals.Kept() > 0 {
		return true
	}
	p.hints.mu.Lock()
	defer p.hints.mu.Unlock()
	return len(p.hints.trying) > 0
}

// TakeUnusedSignals removes and returns the signals this provider holds
// that no fetch acted on: kept, those kept for a next fetch or waiting for
// their VisibleAt ([queues.Signals.TakeKept]); held, the instances whose
// signal waits for the end of another process's lock on them, or of a
// completion window of this process (their timers are stopped). Call it
// once the fetches have stopped.
func (p *Provider) TakeUnusedSignals() (kept []queues.Signal, held []string) {
	return p.signals.TakeKept(), p.waits.takeWaiting()
}

// DeclineSignals sends signals on to other processes
// ([queues.Signals.Decline]): for signals that reached this process only
// ([queues.Signal.Unsent]) that no fetch acted on. Failures are logged.
func (p *Provider) DeclineSignals(ctx context.Context, signals ...queues.Signal) {
	p.decline(ctx, signals)
}

// FlushSignals waits until the signals the provider posted after its
// commits ([queues.Signals.Post]) have been sent to SQS, or their sending
// failed, or ctx ends.
func (p *Provider) FlushSignals(ctx context.Context) error {
	return p.signals.Flush(ctx)
}

// Unannounced sweeps the ready index of both queues, as a fetch's sweep
// does (one Scan of a small index, else a Query per shard), and returns a
// wake-up signal for each instance with messages, and each activity, that
// has been eligible for age or more: work whose signal was lost or never
// sent (the work of a frozen or timed-out invocation whose lease has
// ended, a signal dropped), or whose time came (a timer beyond SQS's
// 15-minute delay). Oldest work first, at most limit. Work queued behind a
// backlog, whose signal is on its way, is returned too once it is that
// old: the price of a signal sent twice is a lookup. A scheduled
// invocation sends them (NotifySignals) so that the event source mappings'
// invocations take that work, in parallel, instead of sweeping themselves.
func (p *Provider) Unannounced(ctx context.Context, age time.Duration, limit int) ([]queues.Signal, error) {
	bound := p.nowMs() - age.Milliseconds()
	var sigs []queues.Signal
	for _, prefix := range []string{keys.ReadyOrchestratorPrefix, keys.ReadyWorkerPrefix} {
		rows, _, err := p.sweepReady(ctx, prefix, nil, nil)
		if err != nil {
			return nil, translate(opUnannounced, err)
		}
		seen := map[string]bool{}
		for _, r := range rows {
			if at, ok := readyAt(r.readySK); !ok || at > bound || len(sigs) == limit {
				continue
			}
			if prefix == keys.ReadyOrchestratorPrefix {
				if id, err := keys.InstanceFromPK(r.pk); err == nil && !seen[id] {
					seen[id] = true
					sigs = append(sigs, queues.Signal{Kind: queues.Orchestrator, Shard: r.shard, Instance: id})
				}
			} else if id, _, _, err := keys.ParseWorkerKey(r.pk, r.sk); err == nil {
				sigs = append(sigs, queues.Signal{Kind: queues.Worker, Shard: r.shard, Instance: id, Work: r.sk})
			}
		}
	}
	return sigs, nil
}

// opUnannounced names Unannounced in its errors.
const opUnannounced = "unannounced"

// NotifySignals sends signals to SQS and hands them to this process's
// fetches, as the provider does after a client's write
// ([queues.Signals.Notify]).
func (p *Provider) NotifySignals(ctx context.Context, signals ...queues.Signal) error {
	return p.signals.Notify(ctx, signals...)
}

// takeWaiting stops the timers that would hand an instance back to the
// process's fetches (the end of another process's lease, heldElsewhere;
// the end of a completion window whose instance has messages waiting,
// gather) and returns those instances.
func (w *lockWaits) takeWaiting() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var instances []string
	for id, t := range w.timers {
		t.Stop()
		delete(w.timers, id)
		instances = append(instances, id)
	}
	for id, t := range w.windows {
		t.Stop()
		delete(w.windows, id)
		if turn := w.own[id]; turn != nil && turn.token == "" {
			delete(w.own, id)
			if turn.again {
				instances = append(instances, id)
			}
		}
	}
	return instances
}

// QueueURLs returns the URLs of the wake-up queues the provider sends
// signals to ("" for a kind without one): a host that receives their
// messages from an event source mapping tells the two apart by them.
func (p *Provider) QueueURLs() (orchestrator, worker string) {
	return p.o.OrchestratorQueueURL, p.o.WorkerQueueURL
}
