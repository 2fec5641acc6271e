package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
	"github.com/duradyn/duradyn/tables"
)

// Work discovery limits (docs/design.md §8).
const (
	// sweepPageSize is the ready-index rows a sweep reads per shard and page.
	sweepPageSize = 50
	// maxSweepPages bounds the pages a sweep reads in one shard.
	maxSweepPages = 20
	// maxTurnMessages and maxTurnBytes cap a turn's batch so that the lock
	// row (which lists it) stays small and the ack, a delete and an event
	// per message, fits one transaction (100 actions).
	maxTurnMessages = 45
	maxTurnBytes    = 1 << 20
)

// poll runs the fetch loop both queues share (docs/design.md §8): pending
// signals, one sweep, then, unless short-polling, signals as they arrive
// until pollTimeout. trySignals and sweep report a result and the signals
// of work they did not get to, which go back to this process's fetches.
// With a wake-up queue the process's fetches share one sweep per interval
// (sweepSchedule); otherwise every fetch sweeps before it waits.
func (p *Provider) poll(ctx context.Context, op string, kind queues.Kind, schedule *sweepSchedule, pollTimeout time.Duration, hand *handoff,
	trySignals func([]queues.Signal) (done bool, untried []queues.Signal, err error), sweep func() (done bool, untried []queues.Signal, err error)) error {
	if err := ctx.Err(); err != nil {
		return provider.Permanent(op, err, "context done: %v", err)
	}
	deadline := time.Now().Add(pollTimeout)
	amortised := !p.o.ShortPoll && pollTimeout > 0 && p.hasQueue(kind)
	found := func(done bool, err error) (bool, error) {
		if done && err == nil {
			schedule.active(time.Now())
		}
		return done, err
	}
	tried := func(done bool, untried []queues.Signal, err error) (bool, error) {
		if done && err == nil && len(untried) > 0 {
			p.signals.Requeue(untried...)
		}
		return found(done, err)
	}
	// The schedule is held until what was not used is handed back (a
	// backlog sweep waits for that). Signals of a failed try go back, so
	// that the retry goes straight to its work.
	trySigs := func(sigs []queues.Signal, release func()) (bool, error) {
		defer release()
		schedule.active(time.Now())
		done, err := tried(trySignals(sigs))
		if err != nil {
			p.signals.Requeue(sigs...)
		}
		return done, err
	}
	sweepHeld := func() (bool, error) {
		defer schedule.hold()()
		return tried(sweep())
	}
	if done, err := p.pollFirst(ctx, op, kind, schedule, amortised, trySigs, sweepHeld); done || err != nil {
		return err
	}
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		if amortised {
			wait = min(wait, schedule.untilDue(time.Now()))
		}
		sigs, handed, err := p.waitSignals(ctx, kind, wait, hand, schedule)
		if handed {
			// A turn handed this fetch its activity: the rest goes back.
			p.signals.Requeue(sigs...)
			schedule.active(time.Now())
			return nil
		}
		if err != nil {
			p.forwardUnsent(ctx, sigs)
			return translate(op, err)
		}
		if len(sigs) == 0 {
			// The sweep came due; signals another fetch handed on
			// meanwhile go first, as in the first step.
			if amortised {
				if done, err := p.pollFirst(ctx, op, kind, schedule, amortised, trySigs, sweepHeld); done || err != nil {
					return err
				}
			}
			continue
		}
		if done, err := trySigs(sigs, schedule.hold()); done || err != nil {
			return err
		}
	}
}

// pollFirst is poll's first step: pending signals, then a sweep unless a
// shared one is not due. done: poll ends (a result, or a short poll swept).
func (p *Provider) pollFirst(ctx context.Context, op string, kind queues.Kind, schedule *sweepSchedule, amortised bool,
	trySigs func([]queues.Signal, func()) (bool, error), sweepHeld func() (bool, error)) (done bool, err error) {
	release := schedule.hold() // before the list is taken, which empties it
	pending, err := p.signals.Wait(ctx, kind, 0)
	if err != nil {
		release()
		p.forwardUnsent(ctx, pending)
		return true, translate(op, err)
	}
	if len(pending) > 0 {
		if done, err := trySigs(pending, release); done || err != nil {
			return true, err
		}
	}
	release()
	if !amortised || schedule.claim(time.Now()) {
		if done, err := sweepHeld(); done || err != nil || p.o.ShortPoll {
			return true, err
		}
	}
	return false, nil
}

// hasQueue reports whether kind has a wake-up queue.
func (p *Provider) hasQueue(kind queues.Kind) bool {
	if kind == queues.Worker {
		return p.o.WorkerQueueURL != ""
	}
	return p.o.OrchestratorQueueURL != ""
}

// forwardUnsent declines the signals only this process had
// (queues.Signal.Unsent) that a fetch ending untried leaves behind, so that
// another process learns of their work; on failure sweeps find it.
func (p *Provider) forwardUnsent(ctx context.Context, sigs []queues.Signal) {
	var unsent []queues.Signal
	for _, sig := range sigs {
		if sig.Unsent() {
			unsent = append(unsent, sig)
		}
	}
	if len(unsent) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	p.decline(ctx, unsent)
}

// decline sends signals for work this process passed over to another
// (queues.Signals.Decline). Signals are hints: a failure is logged.
func (p *Provider) decline(ctx context.Context, sigs []queues.Signal) {
	if len(sigs) == 0 {
		return
	}
	if err := p.signals.Decline(ctx, sigs...); err != nil {
		p.o.Logger.Warn("dynamo: sending on signals this process cannot use failed", "signals", len(sigs), "error", err)
	}
}

// FetchOrchestrationItem locks an instance with visible messages that no
// one else holds and that filter admits, and returns its batch with the
// current execution's history; nil, nil means no work. The package
// documentation says how it waits.
//
// Requests (docs/design.md §5): 3 for a signalled instance (control rows,
// lock, history); 2 when this process holds the history or on a new
// instance's first turn; +1 for KV rows this process does not hold. A sweep
// adds one Scan, or one Query per shard in parallel.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	if filter != nil && len(filter.SupportedVersions) == 0 {
		return nil, nil // supports nothing
	}
	f := &orchFetch{p: p, ctx: ctx, lockTimeout: lockTimeout, filter: filter}
	filterKey := "*"
	if filter != nil {
		filterKey = fmt.Sprint(filter.SupportedVersions)
	}
	f.schedule = p.sweeps.of(queues.Orchestrator, filterKey)
	err := p.poll(ctx, provider.OpFetchOrchestrationItem, queues.Orchestrator, f.schedule, pollTimeout, nil, f.trySignals, f.sweep)
	if err != nil {
		return nil, translate(provider.OpFetchOrchestrationItem, err)
	}
	return f.result, nil
}

// orchFetch is one FetchOrchestrationItem call: the state its steps share.
type orchFetch struct {
	p           *Provider
	ctx         context.Context
	lockTimeout time.Duration
	filter      *provider.CapabilityFilter
	schedule    *sweepSchedule
	// result is the turn a try of this fetch locked.
	result *provider.OrchestrationItem
}

// try tries instance, led by signal or by the message rows (sort keys) a
// sweep's index read showed; one try per instance at a time in the process.
func (f *orchFetch) try(instance string, signal *queues.Signal, shown []string) (bool, error) {
	p := f.p
	signalled := signal != nil
	// A signal means the instance changed: hints do not apply to it.
	if signalled {
		p.hints.unlocked(instance)
	} else if p.hints.isLocked(instance, p.nowMs()) {
		return false, nil
	}
	if !p.hints.beginTry(instance) {
		// Another fetch's try may have read the instance before this
		// signal's message: the signal goes back when it (or its turn) ends.
		if signalled {
			p.hints.passedOver(instance, *signal)
		}
		return false, nil
	}
	defer func() {
		if sig := p.hints.endTry(instance); sig != nil {
			p.signals.Requeue(*sig)
		}
	}()
	item, err := p.tryInstance(f.ctx, instance, f.lockTimeout, f.filter, shown)
	if err != nil {
		return false, p.candidateFailed(instance, err)
	}
	f.result = item
	return item != nil, nil
}

// stale reports whether sig names a message an ack of this process
// consumed (hints.heldWork): it announces nothing.
func (f *orchFetch) stale(sig queues.Signal) bool {
	if sig.Work == "" {
		return false
	}
	k, now := messageRowKeyOf(sig.Instance, sig.Work), f.p.nowMs()
	if sig.Claim != "" {
		return f.p.hints.holdsRow(k, readySeq(sig.Claim), now) // the slot's completion
	}
	return f.p.hints.holdsWork(k, now)
}

// trySignals tries the signals' instances in order, each once; those this
// process passes over are declined when it ends. Every signal of an
// instance counts, not only its first: a turn of this process that holds
// the instance, or another fetch's try, may have read before one of them.
// A try reads after them all, so one try per instance suffices.
func (f *orchFetch) trySignals(sigs []queues.Signal) (bool, []queues.Signal, error) {
	p := f.p
	tried := map[string]bool{}
	var declined []queues.Signal
	defer func() { p.decline(f.ctx, declined) }()
	for i, sig := range sigs {
		switch {
		case f.stale(sig):
			continue
		case p.waits.heldSignal(sig, p.nowMs()):
			continue // a turn of this process holds it: kept for its end
		case tried[sig.Instance]:
			p.hints.passedOver(sig.Instance, sig) // kept if another fetch's try holds it
			continue
		}
		tried[sig.Instance] = true
		done, err := f.try(sig.Instance, &sig, nil)
		if done || err != nil {
			var untried []queues.Signal
			for _, rest := range sigs[i+1:] {
				if !tried[rest.Instance] && !f.stale(rest) {
					untried = append(untried, rest)
				}
			}
			return done, untried, err
		}
		if f.declines(sig) {
			declined = append(declined, sig)
		}
	}
	return false, nil, nil
}

// declines reports whether a passed-over signal goes to other processes:
// its instance is parked here (filter, unreadable data), or only this
// process had it and another holds the instance, which takes the message
// at its turn's end, before this process's retry at the lease's end.
func (f *orchFetch) declines(sig queues.Signal) bool {
	p, now := f.p, f.p.nowMs()
	switch {
	case p.hints.isParked(filteredKey(sig.Instance, f.filter), now) || p.hints.isParked(sig.Instance, now):
		return true
	case sig.Unsent() && p.hints.isLocked(sig.Instance, now) && !p.waits.ownLocked(sig.Instance, now):
		return true
	}
	return false
}

// sweep tries the instances of the ready index's eligible rows, oldest
// first. A transient failure ends the fetch, so that its retry tries the
// same oldest candidate again. The next instances go to the process's
// other fetches (handOn); when there is more than that, or than the sweep
// read, the next sweep is due at once (docs/design.md §8, "Backlogs").
func (f *orchFetch) sweep() (bool, []queues.Signal, error) {
	p := f.p
	now := p.nowMs()
	candidates, more, err := p.sweepReady(f.ctx, keys.ReadyOrchestratorPrefix, func(row item) bool { return f.sweepable(row, now) }, nil)
	if err != nil {
		return false, nil, err
	}
	if len(candidates) > 0 {
		f.schedule.active(time.Now())
	}
	shown := map[string][]string{}
	for _, c := range candidates {
		if id, err := keys.InstanceFromPK(c.pk); err == nil {
			shown[id] = append(shown[id], c.sk)
		}
	}
	seen := map[string]bool{}
	for i, c := range candidates {
		id, err := keys.InstanceFromPK(c.pk)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		if done, err := f.try(id, nil, shown[id]); done || err != nil {
			untried, full := handOn(unannounced(candidates[i+1:], now), seen)
			// A shard holding more is a backlog even when nothing is
			// handed on: one instance's messages can fill the page read.
			if done && (more || full) {
				f.schedule.backlog()
			}
			return done, untried, err
		}
	}
	if more && len(candidates) > 0 {
		f.schedule.backlog()
	}
	return false, nil, nil
}

// sweepable filters index rows inside the query, so that instances locked
// or parked, and messages consumed a moment ago (a lagging index), do not
// hide a shard's other work. A row of a turn this process holds counts as
// its message's signal: one the turn did not take brings the instance back
// at the ack, as a lost signal would have.
func (f *orchFetch) sweepable(row item, now int64) bool {
	p := f.p
	pk, _, _ := strAttr(row, attrPK)
	sk, _, _ := strAttr(row, attrSK)
	rsk, _, _ := strAttr(row, attrReadySK)
	id, err := keys.InstanceFromPK(pk)
	if err != nil || p.hints.isLocked(id, now) || p.hints.isParked(id, now) ||
		p.hints.isParked(filteredKey(id, f.filter), now) || p.hints.holdsRow(queueRowKey(row), readySeq(rsk), now) {
		return false
	}
	return !p.waits.heldSignal(queues.Signal{Kind: queues.Orchestrator, Instance: id, Work: sk, Claim: rsk}, now)
}

// handOn returns a signal for each instance of rest not yet in seen, oldest
// first, at most sweepHandLimit; full reports that rest held more.
func handOn(rest []readyRow, seen map[string]bool) (untried []queues.Signal, full bool) {
	for _, r := range rest {
		if id, err := keys.InstanceFromPK(r.pk); err == nil && !seen[id] {
			if len(untried) == sweepHandLimit {
				return untried, true
			}
			seen[id] = true
			untried = append(untried, queues.Signal{Kind: queues.Orchestrator, Shard: r.shard, Instance: id})
		}
	}
	return untried, false
}

// sweepHandLimit is half the signals a process keeps
// (queues.DefaultMaxPending), so that those arriving meanwhile fit too.
const sweepHandLimit = queues.DefaultMaxPending / 2

// handOutAge is how long a row must have been eligible for a sweep to hand
// it on: a younger row's signal is likely on its way.
const handOutAge = 2 * time.Second

// unannounced returns the rows eligible for handOutAge at nowMs.
func unannounced(rows []readyRow, nowMs int64) []readyRow {
	var out []readyRow
	for _, r := range rows {
		if at, ok := readyAt(r.readySK); ok && at <= nowMs-handOutAge.Milliseconds() {
			out = append(out, r)
		}
	}
	return out
}

// readyRow is one ready-index entry a sweep found.
type readyRow struct {
	pk, sk, readySK string
	shard           int // the index partition's shard (set by sweepReady)
	row             item
}

// sweepReady returns one queue's eligible ready-index rows, oldest first,
// and whether a shard holds more past those read. keep filters rows by
// their projected attributes; leases collects other processes' leases
// (leasewatch.go). One Scan while the index is small, else one Query per
// shard (docs/design.md §8, "Sweeps by Scan").
func (p *Provider) sweepReady(ctx context.Context, prefix string, keep func(item) bool, leases *leaseWatch) (rows []readyRow, more bool, err error) {
	bound := readyBound(p.nowMs())
	found, whole, err := p.scanReady(ctx, prefix, bound, keep, leases)
	if err != nil {
		return nil, false, err
	}
	if !whole {
		type shardRows struct {
			rows []readyRow
			more bool
		}
		shards, err := eachShard(p.o.Shards, func(shard int) ([]shardRows, error) {
			rows, more, err := p.queryReadyShard(ctx, prefix, shard, bound, keep)
			return []shardRows{{rows, more}}, err
		})
		if err != nil {
			return nil, false, err
		}
		for _, sh := range shards {
			found = append(found, sh.rows...)
			more = more || sh.more
		}
	}
	slices.SortFunc(found, func(a, b readyRow) int { return cmp.Compare(a.readySK, b.readySK) })
	return found, more, nil
}

// Sweeps by Scan (docs/design.md §8).
const (
	// sweepScanLimit is the rows a sweep's Scan evaluates (both queues'):
	// at about 200 bytes each, at most about 6 RRU, under 16 Queries' 8.
	sweepScanLimit = 200
	// sweepScanRetry is how long sweeps go by shard after a Scan met
	// an index larger than one page.
	sweepScanRetry = time.Minute
)

// scanReady reads sweepReady's rows with one Scan page; whole is false when
// the shards must be queried (the index exceeds a page, or did recently).
func (p *Provider) scanReady(ctx context.Context, prefix, bound string, keep func(item) bool, leases *leaseWatch) (rows []readyRow, whole bool, err error) {
	if !p.scanSweeps.due(time.Now()) {
		return nil, false, nil
	}
	filter, names := scanFilter(leases != nil)
	page, err := p.db.Scan(ctx, &dynamodb.ScanInput{
		TableName:                 p.table,
		IndexName:                 aws.String(tables.IndexReady),
		FilterExpression:          aws.String(filter),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": s(prefix), ":bound": s(bound)},
		Limit:                     aws.Int32(int32(p.scanLimit())),
	})
	if err != nil {
		return nil, false, err
	}
	if len(page.LastEvaluatedKey) > 0 {
		p.scanSweeps.tooLarge(time.Now())
		return nil, false, nil
	}
	for _, row := range page.Items {
		rpk, _, _ := strAttr(row, attrReadyPK)
		shard, ok := keys.ReadyShard(rpk, prefix)
		if !ok || shard >= p.o.Shards || keep != nil && !keep(row) {
			continue
		}
		pk, _, _ := strAttr(row, attrPK)
		sk, _, _ := strAttr(row, attrSK)
		rsk, _, _ := strAttr(row, attrReadySK)
		if leases.leased(rsk, bound) {
			continue
		}
		rows = append(rows, readyRow{pk: pk, sk: sk, readySK: rsk, shard: shard, row: row})
	}
	return rows, true, nil
}

// scanLimit is the Scan's Limit: sweepScanLimit unless a test set another.
func (p *Provider) scanLimit() int {
	if n := p.scanSweeps.limit.Load(); n > 0 {
		return int(n)
	}
	return sweepScanLimit
}

// scanGate stops Scans for sweepScanRetry after one met a large index. It
// uses the real clock: it decides cost, not correctness.
type scanGate struct {
	limit atomic.Int32 // a test's Limit for the Scan; 0: sweepScanLimit

	mu       sync.Mutex
	notUntil time.Time
}

// due reports whether a sweep at now tries a Scan.
func (g *scanGate) due(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !now.Before(g.notUntil)
}

// tooLarge records that a Scan at now found the index larger than a page.
func (g *scanGate) tooLarge(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.notUntil = now.Add(sweepScanRetry)
}

// eachShard runs query for every shard at once: all found, or an error.
func eachShard[T any](shards int, query func(shard int) ([]T, error)) ([]T, error) {
	var (
		mu       sync.Mutex
		out      []T
		firstErr error
		wg       sync.WaitGroup
	)
	for shard := range shards {
		wg.Go(func() {
			found, err := query(shard)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out = append(out, found...)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// queryReadyShard returns the rows keep accepts from the first page of one
// shard that holds any, oldest first, at most maxSweepPages deep; more
// reports eligible rows past those read.
func (p *Provider) queryReadyShard(ctx context.Context, prefix string, shard int, bound string, keep func(item) bool) (rows []readyRow, more bool, err error) {
	readyPK := keys.ReadyPK(prefix, shard)
	in := &dynamodb.QueryInput{
		TableName:                 p.table,
		IndexName:                 aws.String(tables.IndexReady),
		KeyConditionExpression:    aws.String("#rp = :rp AND #rs < :bound"),
		ExpressionAttributeNames:  map[string]string{"#rp": attrReadyPK, "#rs": attrReadySK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rp": s(readyPK), ":bound": s(bound)},
		Limit:                     aws.Int32(sweepPageSize),
	}
	for pages := 1; ; pages++ {
		page, err := p.db.Query(ctx, in)
		if err != nil {
			return nil, false, err
		}
		var out []readyRow
		for _, row := range page.Items {
			if keep != nil && !keep(row) {
				continue
			}
			pk, _, _ := strAttr(row, attrPK)
			sk, _, _ := strAttr(row, attrSK)
			rsk, _, _ := strAttr(row, attrReadySK)
			out = append(out, readyRow{pk: pk, sk: sk, readySK: rsk, shard: shard, row: row})
		}
		if len(out) > 0 || len(page.LastEvaluatedKey) == 0 || pages == maxSweepPages {
			return out, len(page.LastEvaluatedKey) > 0, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// tryInstance tries to lock instance's visible messages as a turn: nil when
// it has nothing to do, is locked (tried again at the lease's end), filter
// rejects it or another dispatcher won. Rows a sweep showed are gone if the
// consistent read finds no message visible: sweeps skip them for ackedWorkMs.
func (p *Provider) tryInstance(ctx context.Context, instance string, lockTimeout time.Duration, filter *provider.CapabilityFilter, shown []string) (*provider.OrchestrationItem, error) {
	st, now, err := p.unlockedState(ctx, instance)
	if err != nil || st == nil {
		return nil, err
	}
	batch, msgs, capped, err := turnBatch(instance, st.msgs, now)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		for _, sk := range shown {
			if sk != keys.SlotSK { // its next completion would be hidden too
				p.hints.heldWork(messageRowKeyOf(instance, sk), "", now+ackedWorkMs)
			}
		}
		return nil, nil
	}
	if filter != nil && !filter.Admits(st.pinned()) {
		// Another process's filter may admit it: parked here, no write.
		p.hints.park(filteredKey(instance, filter), now)
		return nil, nil
	}
	out, historyRows, historyLoaded, err := p.nameTurn(ctx, instance, st, batch, msgs, now)
	if err != nil || out == nil {
		return nil, err
	}

	turn, err := p.lockTurn(ctx, st, batch, lockTimeout)
	if err != nil || turn == nil {
		return nil, err
	}
	out.LockToken, out.LeaseExpiry = turn.token, time.UnixMilli(turn.until)
	for _, m := range batch {
		out.AttemptCount = max(out.AttemptCount, turn.attempts[m.sk])
	}
	snapshot := p.kvSnapshot(ctx, st)
	events, historyBytes, decodeErr, err := p.turnHistory(ctx, instance, out.ExecutionID, st.lock, historyRows, historyLoaded)
	kv, kvErr := snapshot()
	if err = cmp.Or(err, kvErr); err != nil {
		// An error return leaves the lock unheld: release it.
		p.releaseUndelivered(instance, turn)
		return nil, err
	}
	if decodeErr != nil {
		out.HistoryError = decodeErr
		out.History = []provider.Event{}
		out.KVSnapshot = map[string]provider.KVEntry{}
		p.history.drop(instance)
	} else {
		out.History = events
		out.KVSnapshot = kv
		turn.outstanding, turn.outstandingExec = outstandingActivities(events), out.ExecutionID
		turn.histEnd = &historyEnd{exec: out.ExecutionID, events: uint64(len(events))}
		turn.histIDs = idsOf(events)
		p.history.fetched(instance, out.ExecutionID, turn.token, st.lock, events, historyBytes)
	}
	p.turns.put(turn)
	taken := make([]string, len(batch))
	for i, m := range batch {
		taken[i] = takenKey(m.sk, m.seq)
	}
	p.waits.locked(instance, turn.token, now, turn.leaseEnd(), capped, taken)
	return out, nil
}

// unlockedState reads instance's control rows, finishing first a large turn
// whose committer stopped, and the time they are judged at; st is nil when a
// live lease holds the instance, other than one this process kept.
func (p *Provider) unlockedState(ctx context.Context, instance string) (st *instanceState, now int64, err error) {
	st, err = p.loadFetchState(ctx, instance)
	if err != nil {
		return nil, 0, err
	}
	now = p.nowMs()
	if st.lock.turn != "" {
		if st.lock.live(now) {
			p.lockedWhenTried(instance, st.lock.until, now)
			return nil, 0, nil
		}
		// A committed large turn whose committer stopped: finish it first.
		if err := p.rollForward(ctx, instance, st.lock.turn); err != nil {
			return nil, 0, err
		}
		if st, err = p.loadFetchState(ctx, instance); err != nil {
			return nil, 0, err
		}
		now = p.nowMs()
	}
	if st.lock.live(now) && !p.kept.mine(instance, st.lock) {
		p.lockedWhenTried(instance, st.lock.until, now)
		return nil, 0, nil
	}
	return st, now, nil
}

// turnBatch picks a turn's batch: messages visible at now, oldest first,
// decoded, within the caps; capped reports visible messages left over.
func turnBatch(instance string, queued []queueRow, now int64) (batch []queueRow, msgs []provider.WorkItem, capped bool, err error) {
	batchBytes := 0
	for _, m := range queued {
		if m.visible > now {
			continue
		}
		if len(batch) == maxTurnMessages || (len(batch) > 0 && batchBytes+len(m.data) > maxTurnBytes) {
			capped = true
			break
		}
		w, err := provider.UnmarshalWorkItem([]byte(m.data))
		if err != nil {
			// Perhaps a newer version's: parked here, another may read it.
			return nil, nil, false, provider.Corrupt(provider.OpFetchOrchestrationItem, err, "failed to decode queued %s message for instance %q: %v", m.kind, instance, err)
		}
		batch = append(batch, m)
		msgs = append(msgs, w)
		batchBytes += len(m.data)
	}
	return batch, msgs, capped, nil
}

// nameTurn names a turn's orchestration, version and execution before the
// lock is written, reading the history if there is no instance record
// (historyLoaded, historyRows); out is nil when the batch names none.
func (p *Provider) nameTurn(ctx context.Context, instance string, st *instanceState, batch []queueRow, msgs []provider.WorkItem, now int64) (out *provider.OrchestrationItem, historyRows []item, historyLoaded bool, err error) {
	out = &provider.OrchestrationItem{Instance: instance, Messages: msgs}
	if st.meta != nil {
		out.OrchestrationName, out.Version, out.ExecutionID = st.meta.name, st.meta.version, st.meta.current
	} else {
		// Only an append or a turn writes history: without either
		// there is none, and the lock write, conditioned on the row as
		// read, fails if one lands meanwhile.
		execID := st.latestExecution()
		if st.mayHoldHistory() {
			if historyRows, err = p.historyRows(ctx, instance, execID); err != nil {
				return nil, nil, false, err
			}
			if historyRows, err = p.settledHistory(ctx, instance, execID, st.lock, historyRows); err != nil {
				return nil, nil, false, err
			}
		}
		historyLoaded = true
		if name, version, ok := startedFromHistory(instance, execID, historyRows); ok {
			out.OrchestrationName, out.Version, out.ExecutionID = name, version, execID
		} else if name, version, ok := provider.StartFromMessages(msgs); ok {
			out.OrchestrationName, out.Version, out.ExecutionID = name, version, provider.InitialExecutionID
			historyRows = nil
		} else {
			if provider.OnlyQueueMessages(msgs) {
				return nil, nil, false, p.dropOrphans(ctx, st, batch)
			}
			// Messages for an instance that does not exist (yet): kept for
			// its start, but parked so that sweeps do not meet them first.
			return nil, nil, false, p.parkOrphans(ctx, st, batch, now)
		}
	}
	if out.Version == "" {
		out.Version = provider.UnknownVersion
	}
	return out, historyRows, historyLoaded, nil
}

// turnHistory returns a just-locked turn's history, decoded: from the cache,
// else read, unless nameTurn read it (loaded, rows). decodeErr is history the
// turn reports as undecodable (OrchestrationItem.HistoryError).
func (p *Provider) turnHistory(ctx context.Context, instance string, executionID uint64, lock lockRow, rows []item, loaded bool) (events []provider.Event, historyBytes int, decodeErr, err error) {
	// The lock row may be as this process's last ack left it (historyCache).
	cached := false
	if !loaded {
		events, historyBytes, cached = p.history.lookup(instance, executionID, lock)
	}
	if !loaded && !cached {
		// Or the cache holds its start: read only other processes' rows.
		if events, historyBytes, cached, err = p.historyAfterCached(ctx, instance, executionID, lock); err != nil {
			return nil, 0, nil, err
		}
	}
	if !loaded && !cached {
		if rows, err = p.historyRows(ctx, instance, executionID); err == nil {
			rows, err = p.settledHistory(ctx, instance, executionID, lock, rows)
		}
		if err != nil {
			return nil, 0, nil, err
		}
	}
	if !cached {
		events, historyBytes, decodeErr = decodeHistorySized(provider.OpFetchOrchestrationItem, instance, executionID, rows)
	}
	return events, historyBytes, decodeErr, nil
}

// lockedWhenTried records that instance is locked until untilMs: sweeps pass
// over it, and it is tried again at the lease's end, since if the holder
// died nothing else would bring it back before the next sweep.
func (p *Provider) lockedWhenTried(instance string, untilMs, nowMs int64) {
	p.hints.lockedUntil(instance, nowMs, untilMs)
	p.waits.heldElsewhere(instance, time.Duration(untilMs-nowMs)*time.Millisecond+leaseEndMargin, func() {
		p.signals.Requeue(p.instanceSignal(instance))
	})
}

// leaseEndMargin is how long after a lease's end a signal kept for it is
// handed back, so that the lease is over by the clock that read it.
const leaseEndMargin = 20 * time.Millisecond

// instanceSignal is an in-process signal for instance's messages.
func (p *Provider) instanceSignal(instance string) queues.Signal {
	return queues.Signal{Kind: queues.Orchestrator, Shard: keys.ShardOf(instance, p.o.Shards), Instance: instance}
}

// dropOrphans deletes a missing instance's QueueMessage-only batch,
// conditioned on the lock row as read (no turn meanwhile).
func (p *Provider) dropOrphans(ctx context.Context, st *instanceState, batch []queueRow) error {
	check := &types.ConditionCheck{
		TableName: p.table,
		Key:       key(keys.InstancePK(st.id), keys.Lock),
	}
	check.ConditionExpression, check.ExpressionAttributeNames, check.ExpressionAttributeValues = st.lockAsRead()
	actions := []types.TransactWriteItem{{ConditionCheck: check}}
	for _, m := range batch[:min(len(batch), maxTransactActions-1)] {
		actions = append(actions, types.TransactWriteItem{Delete: &types.Delete{
			TableName: p.table, Key: key(keys.InstancePK(st.id), m.sk),
		}})
	}
	_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
	if err != nil && cancelReasons(err) == nil {
		return err
	}
	if err == nil {
		p.o.Logger.Warn("dynamo: dropped messages queued for an instance that does not exist", "instance", st.id, "messages", len(actions)-1)
	}
	return nil
}

// historyRows reads one execution's history rows consistently, finishing
// first a large turn being applied (docs/design.md §5).
func (p *Provider) historyRows(ctx context.Context, instance string, executionID uint64) ([]item, error) {
	rows, err := p.queryHistory(ctx, instance, executionID)
	if err != nil {
		return nil, err
	}
	rows, turnID := splitTurnMark(rows)
	if turnID == "" {
		return rows, nil
	}
	// The mark follows the turn's commit: finish applying it, then reread.
	if err := p.rollForward(ctx, instance, turnID); err != nil {
		return nil, err
	}
	rows, err = p.queryHistory(ctx, instance, executionID)
	if err != nil {
		return nil, err
	}
	rows, _ = splitTurnMark(rows)
	return rows, nil
}

// splitTurnMark returns an execution's history rows without the turn mark
// that may end them, and the large turn the mark names ("" for none).
func splitTurnMark(rows []item) ([]item, string) {
	if len(rows) == 0 {
		return rows, ""
	}
	last := rows[len(rows)-1]
	if sk, _, _ := strAttr(last, attrSK); !keys.IsTurnMarkSK(sk) {
		return rows, ""
	}
	tid, _, _ := strAttr(last, attrTurnID)
	return rows[:len(rows)-1], tid
}

// startedFromHistory finds the OrchestrationStarted in history rows.
func startedFromHistory(instance string, executionID uint64, rows []item) (name, version string, ok bool) {
	events, err := decodeHistory(provider.OpFetchOrchestrationItem, instance, executionID, rows)
	if err != nil {
		return "", "", false
	}
	return provider.StartedIn(events)
}

// isHistorySK reports whether sk is a history event's (not a turn mark's).
func isHistorySK(sk string) bool {
	return strings.HasPrefix(sk, keys.HistPrefix) && !keys.IsTurnMarkSK(sk)
}
