package dynamo

import (
	"context"

	"github.com/duradyn/duradyn/queues"
)

// RequeueSignals hands sigs to p's waiters as a second delivery of a
// signal does (every waiter of a process receives each signal).
func RequeueSignals(p *Provider, sigs ...queues.Signal) { p.signals.Requeue(sigs...) }

// SetSweepScanLimit makes p's sweeps scan at most n ready-index rows
// before they go by shard (sweepScanLimit), so that tests reach the
// fallback with a few rows.
func SetSweepScanLimit(p *Provider, n int32) { p.scanSweeps.limit.Store(n) }

// HexPayload is n pseudo-random hex digits drawn from seed, a payload that
// compresses to about half (payload_internal_test.go).
var HexPayload = hexPayload

// SignalStats is what p's wake-up signals have done (queues.Signals.Stats).
func SignalStats(p *Provider) queues.Stats { return p.signals.Stats() }

// FlushSignals waits until the signals p posted have been sent
// (queues.Signals.Flush).
func FlushSignals(ctx context.Context, p *Provider) error { return p.signals.Flush(ctx) }

// WaitingFetches is how many fetches of kind p has waiting for a signal
// (queues.Signals.Waiting).
func WaitingFetches(p *Provider, kind queues.Kind) int { return p.signals.Waiting(kind) }

// SetClaimSpread makes p draw where its fetches in a contended worker
// shard start with spread instead of at random (contention.go).
func SetClaimSpread(p *Provider, spread func(n int) int) { p.spread = spread }
