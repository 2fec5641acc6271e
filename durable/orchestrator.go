package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/durable/internal/coro"
	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// corruptHistoryEventID is the id of the failure event appended to a history
// that could not be decoded (duroxide's sentinel).
const corruptHistoryEventID = 99999

// orchestrationSlot fetches and runs orchestration turns until fetchCtx
// ends.
func (r *Runtime) orchestrationSlot(fetchCtx, workCtx context.Context, slot int) {
	filter := provider.CapabilityFilter{SupportedVersions: r.opts.SupportedReplayVersions}
	r.pollLoop(fetchCtx, slot, queueOrchestrator, func() (func(), error) {
		item, err := r.p.FetchOrchestrationItem(fetchCtx, r.opts.OrchestratorLockTimeout, r.opts.LongPollTimeout, &filter)
		if item == nil {
			return nil, err
		}
		fetched := r.opts.Now()
		return func() { r.processOrchestration(workCtx, item, fetched) }, err
	})
}

// pollLoop calls fetch until fetchCtx ends: fetch fetches one item of
// queue and returns what processes it (nil when there was none). After a
// failed fetch the slot
// backs off (longer for retryable failures that repeat); after an empty
// one it waits out the rest of MinPollInterval.
func (r *Runtime) pollLoop(fetchCtx context.Context, slot int, queue string, fetch func() (func(), error)) {
	failures := 0
	for fetchCtx.Err() == nil {
		began := time.Now()
		process, err := fetch()
		r.tel.fetched(fetchCtx, queue, began, process != nil, err)
		switch {
		case err != nil:
			if fetchCtx.Err() != nil {
				return
			}
			r.log.Warn("fetch failed", "queue", queue, "slot", slot, "error", err)
			sleep(fetchCtx, fetchBackoff(err, failures))
			failures++
		case process == nil:
			failures = 0
			sleep(fetchCtx, r.opts.MinPollInterval-time.Since(began))
		default:
			failures = 0
			r.work.begin()
			process()
			r.work.end()
		}
	}
}

// processOrchestration runs one locked turn and commits it.
//
// A turn in flight finishes and commits even when the runtime shuts down:
// its requests do not use the shutdown's cancellation.
func (r *Runtime) processOrchestration(ctx context.Context, item *provider.OrchestrationItem, fetched time.Time) {
	ctx = context.WithoutCancel(ctx)
	log := r.log.With("instance_id", item.Instance, "execution_id", item.ExecutionID)
	ctx, tt := r.tel.startTurn(ctx, item, r.opts.Now())
	defer tt.end()
	// The code this runtime kept from the execution's last turn, if any:
	// consumed by the turn's run, closed if the turn does not run.
	held := r.held.take(item.Instance)
	defer func() { held.Close() }()
	if item.HistoryError != nil {
		r.corruptHistory(ctx, log, item)
		return
	}
	if !r.supportedPin(item.History) {
		log.Warn("history pinned to an unsupported replay version; leaving it to another runtime")
		r.abandonOrchestration(ctx, log, item, time.Second, false)
		return
	}
	in := r.turnInput(log, item, tt)
	turnCtx, endTurn := context.WithCancel(ctx)
	defer endTurn()
	lost := r.keepTurnLease(turnCtx, item, fetched)
	turn, err := replay.Resume(held, in)
	held = nil
	if turn != nil {
		// Kept for the execution's next turn only once this one's commit
		// has landed.
		held, turn.Held = turn.Held, nil
		tt.resumed(turn.Resumed)
	}
	if err != nil {
		r.turnFailed(ctx, log, item, err)
		return
	}
	if r.verifySampled() {
		if failed := r.verifyTurn(log, in, turn); failed != nil {
			held.Close() // the execution ends
			held, turn = nil, failed
		}
	}
	if turn.Panic != nil {
		log.Error("orchestration panicked", "panic", turn.Panic.Value, "stack", turn.Panic.Stack)
	}
	select {
	case err := <-lost:
		log.Warn("orchestration lock lost during the turn; dropping it", "error", err)
		tt.lockLost()
		return
	default:
	}
	if err := r.notifyParent(ctx, turn); err != nil {
		log.Warn("parent's execution not resolved; retrying the turn", "error", err)
		r.abandonOrchestration(ctx, log, item, 50*time.Millisecond, true)
		return
	}
	turn.Commit.CompletionWindow = completionWindow(turn, r.opts.FanInWindow)
	if held == nil {
		r.commitTurn(ctx, log, item, in, turn)
		return
	}
	// The commit lets the next turn be fetched before the put below: that
	// turn's take waits for it.
	done := r.held.committing(item.Instance)
	defer done()
	if r.commitTurn(ctx, log, item, in, turn) {
		r.held.put(item.Instance, held)
		held = nil
	}
}

// turnInput is what the replay of item's turn starts from; an item
// delivered more than MaxAttempts times is poisoned.
func (r *Runtime) turnInput(log *slog.Logger, item *provider.OrchestrationItem, tt *turnTelemetry) replay.Input {
	in := replay.Input{
		Item:         item,
		Now:          r.opts.Now(),
		Resolve:      r.reg.resolve,
		Env:          &turnEnv{logger: r.opts.Logger},
		YieldTimeout: r.opts.TurnTimeout,
		Keep:         r.held.enabled(),
		Callers:      r.opts.VerifyReplay > 0,
	}
	if item.AttemptCount > r.opts.MaxAttempts {
		in.Abort = provider.PoisonDetails{
			AttemptCount: item.AttemptCount, MaxAttempts: r.opts.MaxAttempts,
			MessageType: provider.PoisonOrchestration{Instance: item.Instance, ExecutionID: item.ExecutionID},
			Message:     messagesJSON(item.Messages),
			Cause:       r.unregisteredCause(item),
		}
		log.Error("orchestration poisoned", "attempts", item.AttemptCount, "max_attempts", r.opts.MaxAttempts)
		tt.poisoned()
	}
	return in
}

// unregisteredCause names the cause of a poisoned turn whose orchestration
// this runtime cannot run: its attempts were abandoned for that reason by
// every runtime that fetched it and did not serve it. "" when it can.
func (r *Runtime) unregisteredCause(item *provider.OrchestrationItem) string {
	var version *string
	if item.Version != "" && item.Version != provider.UnknownVersion {
		version = &item.Version
	}
	if _, _, err := r.reg.resolve(item.OrchestrationName, version); !errors.Is(err, replay.ErrUnregistered) {
		return ""
	}
	what := strconv.Quote(item.OrchestrationName)
	if version != nil {
		what += " version " + *version
	}
	return "orchestration " + what + " is not registered on any worker that fetched it"
}

// keepTurnLease keeps the lease of item's lock until ctx ends; the channel
// receives the reason once the lock is lost (lease.keep).
func (r *Runtime) keepTurnLease(ctx context.Context, item *provider.OrchestrationItem, fetched time.Time) <-chan error {
	lost := make(chan error, 1)
	l := r.newLease(r.opts.OrchestratorLockTimeout, r.opts.OrchestratorLockRenewalBuffer, func(ctx context.Context, extendFor time.Duration) error {
		return r.p.RenewOrchestrationItemLock(ctx, item.LockToken, extendFor)
	})
	go l.keep(ctx, expiryOf(item.LeaseExpiry, fetched, r.opts.OrchestratorLockTimeout), func(err error) { lost <- err })
	return lost
}

// turnFailed abandons a turn whose replay failed, for a retry after a
// delay that suits the failure.
func (r *Runtime) turnFailed(ctx context.Context, log *slog.Logger, item *provider.OrchestrationItem, err error) {
	switch {
	case errors.Is(err, replay.ErrUnregistered):
		delay := r.opts.UnregisteredBackoff.Delay(item.AttemptCount)
		log.Warn("orchestration not registered; retrying later", "error", err, "attempt", item.AttemptCount, "backoff", delay)
		r.abandonOrchestration(ctx, log, item, delay, false)
	case errors.Is(err, coro.ErrStuck):
		log.Error("orchestration code did not yield; its goroutine is left running", "error", err, "turn_timeout", r.opts.TurnTimeout)
		r.abandonOrchestration(ctx, log, item, time.Second, false)
	default:
		log.Error("orchestration turn failed", "error", err)
		r.abandonOrchestration(ctx, log, item, time.Second, false)
	}
}

// completionWindow is how long turn asks the provider to hold back the
// execution's next turn (Options.FanInWindow): 1 ms per activity and
// sub-orchestration awaited, up to limit, after a turn that leaves two or
// more awaited and schedules nothing, and so only waits for them.
func completionWindow(turn *replay.Turn, limit time.Duration) time.Duration {
	c := turn.Commit
	if limit <= 0 || turn.Outcome != replay.Continue || turn.Awaiting < 2 || len(c.WorkerItems) > 0 || len(c.OrchestratorItems) > 0 {
		return 0
	}
	return min(time.Duration(turn.Awaiting)*time.Millisecond, limit)
}

// commitTurn acks the turn, retrying transient failures; a commit the
// provider refuses fails the orchestration instead. It reports whether the
// turn's own commit landed.
func (r *Runtime) commitTurn(ctx context.Context, log *slog.Logger, item *provider.OrchestrationItem, in replay.Input, turn *replay.Turn) bool {
	err := r.ackWithRetry(ctx, item.LockToken, turn.Commit)
	switch {
	case err == nil:
		r.tel.turn(ctx).committed(turn)
		r.observeTurn(item, turn)
		if turn.Outcome == replay.Completed || turn.Outcome == replay.Failed {
			log.Debug("orchestration ended", "outcome", turn.Outcome, "name", turn.Name)
		}
		return true
	case errors.Is(err, provider.ErrInvalidLockToken):
		log.Warn("orchestration lock lost before the commit; another runtime owns the instance", "error", err)
		r.tel.turn(ctx).lockLost()
		return false
	case provider.IsRetryable(err):
		log.Warn("orchestration commit failed; abandoning the turn", "error", err)
		r.abandonOrchestration(ctx, log, item, 50*time.Millisecond, false)
		return false
	}
	log.Error("orchestration commit refused; failing the orchestration", "error", err)
	in.Abort = provider.ToInfrastructureDetails(err)
	failed, ferr := replay.Run(in)
	if ferr == nil {
		ferr = r.notifyParent(ctx, failed)
	}
	if ferr == nil {
		ferr = r.ackWithRetry(ctx, item.LockToken, failed.Commit)
	}
	if ferr != nil {
		log.Error("recording the failure failed; abandoning the turn", "error", ferr)
		r.abandonOrchestration(ctx, log, item, 50*time.Millisecond, false)
		return false
	}
	r.tel.turn(ctx).committed(failed)
	r.observeTurn(item, failed)
	return false
}

// ackWithRetry acks a turn, retrying retryable failures five times.
func (r *Runtime) ackWithRetry(ctx context.Context, token string, commit provider.TurnCommit) error {
	var err error
	for attempt := range 6 {
		if attempt > 0 && !sleep(ctx, 10*time.Millisecond<<(attempt-1)) {
			return err
		}
		err = r.p.AckOrchestrationItem(ctx, token, commit)
		if err == nil || !provider.IsRetryable(err) {
			return err
		}
	}
	return err
}

func (r *Runtime) abandonOrchestration(ctx context.Context, log *slog.Logger, item *provider.OrchestrationItem, delay time.Duration, ignoreAttempt bool) {
	if err := r.p.AbandonOrchestrationItem(context.WithoutCancel(ctx), item.LockToken, delay, ignoreAttempt); err != nil && !errors.Is(err, provider.ErrInvalidLockToken) {
		log.Warn("abandon failed; the lock expires instead", "error", err)
	}
}

// supportedPin reports whether the execution's pinned replay version, if
// any, is one this runtime runs.
func (r *Runtime) supportedPin(history []provider.Event) bool {
	if len(history) == 0 || history[0].DuroxideVersion == "" {
		return true
	}
	v, err := provider.ParseSemVer(history[0].DuroxideVersion)
	if err != nil {
		return false
	}
	return provider.CapabilityFilter{SupportedVersions: r.opts.SupportedReplayVersions}.IsCompatible(v)
}

// corruptHistory retries a history that did not decode, in case another
// runtime can read it, and fails the execution once the attempts run out.
func (r *Runtime) corruptHistory(ctx context.Context, log *slog.Logger, item *provider.OrchestrationItem) {
	if item.AttemptCount <= r.opts.MaxAttempts {
		log.Warn("history did not decode; retrying", "error", item.HistoryError, "attempt", item.AttemptCount)
		r.abandonOrchestration(ctx, log, item, time.Second, false)
		return
	}
	details := provider.PoisonDetails{
		AttemptCount: item.AttemptCount, MaxAttempts: r.opts.MaxAttempts,
		MessageType: provider.PoisonFailedDeserialization{Instance: item.Instance, ExecutionID: item.ExecutionID, Error: item.HistoryError.Error()},
	}
	output := details.DisplayMessage()
	commit := provider.TurnCommit{
		ExecutionID: item.ExecutionID,
		HistoryDelta: []provider.Event{{
			EventID: corruptHistoryEventID, InstanceID: item.Instance, ExecutionID: item.ExecutionID,
			TimestampMs: uint64(r.opts.Now().UnixMilli()), DuroxideVersion: ReplayVersion,
			Kind: provider.OrchestrationFailed{Details: details},
		}},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusFailed, Output: &output},
	}
	log.Error("history did not decode; failing the execution", "error", item.HistoryError)
	r.tel.turn(ctx).poisoned()
	if err := r.ackWithRetry(ctx, item.LockToken, commit); err != nil {
		r.abandonOrchestration(ctx, log, item, time.Second, false)
		return
	}
	r.tel.turn(ctx).failedExecution(output)
	r.observeCorruptHistory(item, details)
}

// notifyParent resolves the parent's execution and adds the child's result
// for it. The child's start records that execution, so a fan-out's
// completions read no parent history; only a child whose start did not
// record it (one written by another tool) looks it up.
func (r *Runtime) notifyParent(ctx context.Context, turn *replay.Turn) error {
	if turn.Parent == nil {
		return nil
	}
	exec := turn.Parent.ExecutionID
	if exec == 0 {
		var err error
		if exec, err = r.parentExecution(ctx, turn.Parent, turn.Commit); err != nil {
			return err
		}
	}
	turn.NotifyParent(exec)
	return nil
}

// parentExecution finds the parent execution whose schedule event started
// this child, for a child whose start did not record it: the latest
// execution if its event matches, else an older one, else the first.
func (r *Runtime) parentExecution(ctx context.Context, link *replay.ParentLink, commit provider.TurnCommit) (uint64, error) {
	child := ""
	for _, ev := range commit.HistoryDelta {
		child = ev.InstanceID
		break
	}
	matches := func(events []provider.Event) (uint64, bool) {
		for _, ev := range events {
			if k, ok := ev.Kind.(provider.SubOrchestrationScheduled); ok && ev.EventID == link.EventID {
				id := k.Instance
				if len(id) >= len(replay.SubOrchestrationPrefix) && id[:len(replay.SubOrchestrationPrefix)] == replay.SubOrchestrationPrefix {
					id = link.Instance + "::" + id
				}
				if child == "" || id == child {
					return ev.ExecutionID, true
				}
			}
		}
		return 0, false
	}
	latest, err := r.p.Read(ctx, link.Instance)
	if err != nil {
		return 0, fmt.Errorf("read parent %s: %w", link.Instance, err)
	}
	if exec, ok := matches(latest); ok {
		return exec, nil
	}
	admin, ok := provider.AdminOf(r.p)
	if !ok {
		return provider.InitialExecutionID, nil
	}
	execs, err := admin.ListExecutions(ctx, link.Instance)
	if err != nil {
		if errors.Is(err, provider.ErrNotFound) {
			return provider.InitialExecutionID, nil
		}
		return 0, fmt.Errorf("list parent %s executions: %w", link.Instance, err)
	}
	for i := len(execs) - 1; i >= 0; i-- {
		events, err := r.p.ReadWithExecution(ctx, link.Instance, execs[i])
		if err != nil {
			continue
		}
		if exec, ok := matches(events); ok {
			return exec, nil
		}
	}
	return provider.InitialExecutionID, nil
}

func messagesJSON(msgs []provider.WorkItem) string {
	raw := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		if b, err := provider.MarshalWorkItem(m); err == nil {
			raw = append(raw, b)
		}
	}
	b, _ := json.Marshal(raw)
	return string(b)
}
