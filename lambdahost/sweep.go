package lambdahost

import (
	"context"
	"time"
)

// SweepResult is what a sweep invocation returns.
type SweepResult struct {
	// Found counts the instances and activities found waiting for
	// SweepAge or more; Signalled, those whose signal was sent (the rest,
	// if the deadline came first, wait for the next sweep).
	Found     int `json:"found"`
	Signalled int `json:"signalled"`
	// DurationMs is how long the invocation ran, in milliseconds.
	DurationMs int64 `json:"duration_ms"`
}

// sweepChunk is how many signals a sweep sends at once (ten
// SendMessageBatch calls), between which it checks its deadline.
const sweepChunk = 100

// HandleSweep serves a scheduled invocation (EventBridge Scheduler, every
// minute in the Terraform module): it stands in for the periodic sweeps of
// a long-running process. It reads the ready index of both queues once
// (one Scan while the index is small, else a Query per shard) and sends a
// signal to SQS for each instance and activity eligible for
// [Options.SweepAge] or more: work whose signal was lost, timers due
// beyond SQS's 15-minute delay, work whose lease ended with an invocation
// that was frozen or timed out. The event source mappings then invoke the
// function with those signals, in parallel, as with any other. At most
// [Options.SweepLimit] are sent, and no more than fit before the
// deadline; the next sweep sends the rest. It runs no runtime.
//
// It fails with an error wrapping [ErrDeadlineTooClose] when the deadline
// is closer than [Options.StopBefore], and with the provider's error when
// the index cannot be read or no signal could be sent (the next sweep
// tries again).
func (h *Host) HandleSweep(ctx context.Context, _ SweepEvent) (SweepResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	began := time.Now()
	h.stats.sweeps.Add(1)
	b, err := h.budgetOf(ctx)
	if err != nil {
		return SweepResult{}, err
	}
	if !b.finishBy.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, b.finishBy)
		defer cancel()
	}
	sigs, err := h.p.Unannounced(ctx, h.o.SweepAge, h.o.SweepLimit)
	res := SweepResult{Found: len(sigs)}
	for len(sigs) > 0 && err == nil {
		n := min(len(sigs), sweepChunk)
		if err = h.p.NotifySignals(ctx, sigs[:n]...); err == nil {
			res.Signalled += n
		}
		sigs = sigs[n:]
	}
	// NotifySignals handed a copy of each to this process's fetches: no
	// runtime runs here to take them.
	_, _ = h.p.TakeUnusedSignals()
	res.DurationMs = time.Since(began).Milliseconds()
	h.o.Logger.Info("lambdahost: sweep served", "found", res.Found, "signalled", res.Signalled,
		"duration", time.Since(began).Round(time.Millisecond), "error", err)
	if err != nil && res.Signalled > 0 {
		err = nil // the rest waits for the next sweep
	}
	return res, err
}
