package dynamo

import "github.com/dynoxide/dynoxide/queues"

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
