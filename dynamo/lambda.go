package dynamo

import (
	"context"
	"time"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/queues"
)

// Hosting on AWS Lambda (package lambdahost, docs/lambda.md): a provider
// built with Options.ReceiveElsewhere gets its signals from the event
// source mappings instead of a poller. Signals no fetch acted on are
// reported as failed so that SQS delivers them again: nothing of one
// invocation is left for the next, which may come much later or never.

// DeliverSignals hands signals an SQS event source mapping received
// ([queues.ParseSignal]) to this provider's fetches, as a poller would.
func (p *Provider) DeliverSignals(signals ...queues.Signal) {
	p.signals.Deliver(signals...)
}

// FindingWork reports whether the provider's fetches are finding work:
// holding signals they have not acted on (kept, or being tried), or
// sweeping. A runtime counts it as work when it decides it is idle
// (durable.Runtime.WaitIdle), so that a slow store does not end a run
// halfway through a fetch.
func (p *Provider) FindingWork() bool {
	if p.signals.Kept() > 0 || p.sweeps.holding() {
		return true
	}
	p.hints.mu.Lock()
	defer p.hints.mu.Unlock()
	return len(p.hints.trying) > 0
}

// TakeUnusedSignals removes and returns the signals no fetch acted on:
// kept, those kept for a next fetch or waiting for their VisibleAt; held,
// instances waiting for another process's lock or a completion window to
// end (their timers are stopped). Call it once the fetches have stopped.
func (p *Provider) TakeUnusedSignals() (kept []queues.Signal, held []string) {
	return p.signals.TakeKept(), p.waits.takeWaiting()
}

// DeclineSignals sends on to other processes ([queues.Signals.Decline])
// unused signals that reached this process only. Failures are logged.
func (p *Provider) DeclineSignals(ctx context.Context, signals ...queues.Signal) {
	p.decline(ctx, signals)
}

// FlushSignals waits until the signals posted after commits have been
// sent to SQS (or failed), or ctx ends.
func (p *Provider) FlushSignals(ctx context.Context) error {
	return p.signals.Flush(ctx)
}

// Unannounced sweeps the ready index of both queues (one Scan of a small
// index, else a Query per shard) and returns, oldest first and at most
// limit, a signal for each instance with messages and each activity that
// has been eligible for age or more: lost signals, ended leases of frozen
// invocations, timers beyond SQS's 15-minute delay. Work whose signal is
// merely late is returned too; a duplicate signal costs one lookup. A
// scheduled invocation sends them with NotifySignals.
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
			} else if id, _, _, _, err := parseWorkRow(r.pk, r.sk); err == nil {
				sigs = append(sigs, queues.Signal{Kind: queues.Worker, Shard: r.shard, Instance: id, Work: r.sk})
			}
		}
	}
	return sigs, nil
}

// opUnannounced names Unannounced in its errors.
const opUnannounced = "unannounced"

// NotifySignals sends signals to SQS and hands them to this process's
// fetches ([queues.Signals.Notify]).
func (p *Provider) NotifySignals(ctx context.Context, signals ...queues.Signal) error {
	return p.signals.Notify(ctx, signals...)
}

// takeWaiting stops the timers that would hand an instance back to the
// fetches (another process's lease ending; a completion window ending
// with messages waiting) and returns those instances.
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

// QueueURLs returns the URLs of the wake-up queues ("" for a kind without
// one), by which a Lambda host tells the mappings' messages apart.
func (p *Provider) QueueURLs() (orchestrator, worker string) {
	return p.o.OrchestratorQueueURL, p.o.WorkerQueueURL
}
