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
	// sweepPageSize is how many ready-index rows one sweep reads per shard
	// and page.
	sweepPageSize = 50
	// maxSweepPages bounds the pages one sweep reads in one shard looking
	// for rows this process can use.
	maxSweepPages = 20
	// maxTurnMessages and maxTurnBytes cap one turn's batch: the oldest
	// visible messages, at most this many and this much data, so that the
	// lock row (which lists the batch) stays small and an ack that deletes
	// them and records one event for each, plus its own records, fits one
	// transaction (100 actions). The rest waits for the next turn.
	maxTurnMessages = 45
	maxTurnBytes    = 1 << 20
)

// poll runs the fetch loop both queues share: the signals already pending
// first (no DynamoDB request unless one names work), then one sweep of the
// ready index, then, unless the provider short-polls, signals as they
// arrive until pollTimeout. trySignals and sweep return true when they
// produced the result, and the signals for the work they did not get to,
// which go to this process's waiters (the next fetch tries them: a waiter
// got them all, and the other waiters may be busy). For a sweep, these are
// the eligible rows it saw beyond the one its fetch took: work no signal
// may announce (its signal was lost, or taken by a process that died), so
// the process's other fetches take it now rather than at the next sweep.
//
// Without a wake-up queue (or with ShortPoll, or no poll timeout) every
// fetch sweeps before it waits: other processes' work is found by sweeps
// only, at most one pollTimeout after it was committed. With a queue,
// signals announce the work, and the process's fetches share one sweep per
// interval of sweepSchedule, a waiting fetch waking to make it when it
// falls due: what no signal announced is found within that interval.
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
	// A fetch holds the schedule (sweepSchedule.hold) while it sweeps or
	// tries signals it took, until it has handed back what it did not use:
	// a backlog sweep waits for it. A signal whose try failed goes back,
	// so that the retry of this fetch (or another dispatcher) still goes
	// straight to its work.
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
			// A turn of this process handed this fetch its activity
			// (handoff): what else arrived is for the next wait.
			p.signals.Requeue(sigs...)
			schedule.active(time.Now())
			return nil
		}
		if err != nil {
			p.forwardUnsent(ctx, sigs)
			return translate(op, err)
		}
		if len(sigs) == 0 {
			// The sweep came due (its interval, a watched lease, a
			// backlog), which may have cut the wait short as another
			// fetch handed signals on: take those first, then sweep if
			// none is left, as the poll's first step does.
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

// pollFirst is poll's first step: the signals already pending, then a
// sweep unless the process's fetches share one that is not due. done
// reports that poll ends here: a result, or a short poll that swept.
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

// hasQueue reports whether kind has a wake-up queue, so that other
// processes' signals reach this one.
func (p *Provider) hasQueue(kind queues.Kind) bool {
	if kind == queues.Worker {
		return p.o.WorkerQueueURL != ""
	}
	return p.o.OrchestratorQueueURL != ""
}

// forwardUnsent sends on the signals of sigs that reached this process only
// (queues.Signal.Unsent) and that a fetch ending before it tried them (ctx
// done, the provider closing) leaves behind, so that another process
// learns of their work; a failure is logged, and sweeps find the work. (A
// Wait ended by ctx returns only those: it leaves the others with the
// process, from which received ones go back to their queue if no fetch
// takes them.)
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

// decline hands signals that named work this process passed over to another
// process (queues.Signals.Decline). Signals are hints: a failure is logged.
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
// current execution's history. See the package documentation for how it
// waits; nil, nil means no work.
//
// Requests (docs/design.md §5): for a signalled instance, a consistent
// Query of its lock row, instance record and visible messages (not its
// future timers nor its KV rows), a conditional PutItem of its lock row,
// and a Query of its history (3), which a turn of an instance whose
// history this process holds as the lock row shows, and a new instance's
// first turn, do without (2). A process's first turn of an execution whose
// KV store holds keys adds a Query of the KV rows, beside the history's.
// A sweep adds one Query of the ready index per shard, run in parallel.
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

// orchFetch is one FetchOrchestrationItem call: the arguments and the
// result its steps (signals, the sweep, each instance tried) share, so
// that each step is a method rather than a closure over the call's locals.
type orchFetch struct {
	p           *Provider
	ctx         context.Context
	lockTimeout time.Duration
	filter      *provider.CapabilityFilter
	schedule    *sweepSchedule
	// result is the turn a try of this fetch locked.
	result *provider.OrchestrationItem
}

// try tries instance, led by signal or, in a sweep, by the message rows
// shown (their sort keys) that the index showed. A try another fetch of
// this process is making meanwhile is not made twice.
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
		// Another fetch of this process tries the instance, and may have
		// read it before this signal's message was written: the signal is
		// handed back when that try ends (kept for its turn's end if it
		// locked the instance).
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
// consumed: it announces nothing, as every waiting fetch received it, and
// another took the instance (hints.heldWork).
func (f *orchFetch) stale(sig queues.Signal) bool {
	return sig.Work != "" && f.p.hints.holdsWork(messageRowKeyOf(sig.Instance, sig.Work), f.p.nowMs())
}

// trySignals is the fetch's step for the signals poll hands it: their
// instances in order, each once. Signals this process passes over go to
// the others (declines) when the step ends.
func (f *orchFetch) trySignals(sigs []queues.Signal) (bool, []queues.Signal, error) {
	p := f.p
	seen := map[string]bool{}
	var declined []queues.Signal
	defer func() { p.decline(f.ctx, declined) }()
	for i, sig := range sigs {
		if seen[sig.Instance] || f.stale(sig) {
			continue
		}
		seen[sig.Instance] = true
		if p.waits.heldSignal(sig, p.nowMs()) {
			continue // a turn of this process holds it: kept for its end
		}
		done, err := f.try(sig.Instance, &sig, nil)
		if done || err != nil {
			var untried []queues.Signal
			for _, rest := range sigs[i+1:] {
				if !seen[rest.Instance] && !f.stale(rest) {
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

// declines reports whether a signal whose instance this fetch passed over
// goes to other processes. Passed over by this process (its capability
// filter, data it cannot read): another process may take it. A signal only
// this process received, for an instance another process holds, goes to
// the others as well: the holder takes the message when its turn ends,
// where this process would try again when the lease ends.
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

// sweep is the fetch's step for a sweep of the ready index: the instances
// of the eligible rows of every shard, oldest first.
//
// Candidates go oldest first. One whose stored data this process cannot
// read is parked and passed over (try); a transient failure ends the
// fetch, so that its retry tries the same oldest candidate again. The
// oldest instances after the one taken go to the process's other fetches
// (handOn); when the sweep saw more than those, or a shard holds more than
// it read, the next sweep is due at once, for the fetch that finds no
// signal left (sweepSchedule.backlog).
//
// A page of the index can show only rows whose messages are gone (a lag
// longer than ackedWorkMs): the tries mark them, and when the shard holds
// more rows than the sweep read, the next sweep is due at once too, and
// reads past them.
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

// sweepable is the sweep's filter of the ready index's rows, read at now.
// Instances seen locked, and messages this process consumed a moment ago
// (a lagging index still shows them), are passed over inside the index
// query, so that they do not hide a shard's other work.
func (f *orchFetch) sweepable(row item, now int64) bool {
	p := f.p
	pk, _, _ := strAttr(row, attrPK)
	id, err := keys.InstanceFromPK(pk)
	return err == nil && !p.hints.isLocked(id, now) && !p.waits.ownLocked(id, now) && !p.hints.isParked(id, now) &&
		!p.hints.isParked(filteredKey(id, f.filter), now) && !p.hints.holdsWork(queueRowKey(row), now)
}

// handOn returns a signal for each instance of rest not in seen (which it
// adds them to), oldest first, for the process's other fetches: no more
// than sweepHandLimit, which its list of signals keeps with room to spare.
// full reports that rest held more.
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

// sweepHandLimit is how many instances an orchestrator sweep hands to the
// process's other fetches at most: half the signals a process keeps
// (queues.DefaultMaxPending), which drops the oldest past that, so that
// the signals arriving meanwhile fit too.
const sweepHandLimit = queues.DefaultMaxPending / 2

// handOutAge is how long a row a sweep saw must have been eligible for the
// sweep to hand it to the process's other fetches: a younger row's signal
// is most likely on its way, and the fetch it wakes takes it.
const handOutAge = 2 * time.Second

// unannounced returns the rows that have been eligible for handOutAge at
// nowMs.
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

// sweepReady returns the rows of one queue's ready index (prefix
// keys.ReadyOrchestratorPrefix or keys.ReadyWorkerPrefix) eligible now,
// oldest first, and whether a shard holds eligible rows past those read.
// keep, when set, filters rows by their projected attributes. leases, when
// set, collects the leases of other processes a Scan shows (leasewatch.go).
//
// While the whole index (both queues) holds at most sweepScanLimit rows,
// which is the case in an idle deployment and in a modest busy one, one
// Scan of it does: every eligible row of the queue. Otherwise every shard
// is queried in parallel, each paged until it yields a kept row or ends;
// a Scan that met a larger index makes the sweeps go by shard for
// sweepScanRetry before one tries a Scan again.
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
	// sweepScanLimit is how many ready-index rows a sweep's Scan evaluates
	// (both queues' rows, eligible or not): about 200 bytes each, so a
	// Scan that reads them all costs at most about 6 RRU, less than the
	// 8 of one Query per shard.
	sweepScanLimit = 200
	// sweepScanRetry is how long the sweeps go by shard after a Scan found
	// the index larger than sweepScanLimit rows.
	sweepScanRetry = time.Minute
)

// scanReady reads the eligible rows of the queue with prefix that keep
// accepts with one Scan page of the ready index, when it is due (see
// sweepReady). whole is false when the sweep must query the shards: the
// index holds more rows than one page evaluates, or a Scan found that
// recently.
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

// scanLimit is the Limit of a sweep's Scan: sweepScanLimit unless a test
// set another.
func (p *Provider) scanLimit() int {
	if n := p.scanSweeps.limit.Load(); n > 0 {
		return int(n)
	}
	return sweepScanLimit
}

// scanGate decides whether a sweep tries a Scan: not for sweepScanRetry
// after a Scan found the ready index too large for one page. It uses the
// real clock: it decides what requests cost, not what is correct.
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

// eachShard runs query for every shard at once and returns all they found,
// in no particular order, or the first error one of them reported.
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

// queryReadyShard returns the eligible rows of one shard of the queue with
// prefix (one ready-index partition),
// oldest first: the first page that holds rows keep accepts (all rows of
// that page that it accepts), looking at most maxSweepPages pages deep;
// more reports that the shard holds eligible rows past those read.
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

// tryInstance tries to lock instance's visible messages as a turn. It
// returns nil when the instance has nothing to do, is locked, is not
// admitted by filter, or another dispatcher won the lock. An instance
// found locked is tried again when the lease ends
// (lockWaits.heldElsewhere). shown names the message rows (sort keys) a
// sweep's read of the ready index showed for instance: when the consistent
// read finds none of the instance's messages visible, those rows are gone,
// or moved later, and the sweeps of the next ackedWorkMs pass over them.
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
			p.hints.heldWork(messageRowKeyOf(instance, sk), "", now+ackedWorkMs)
		}
		return nil, nil
	}
	if filter != nil && !filter.Admits(st.pinned()) {
		// Another process's filter may admit it: this one passes over it
		// for a while, without a write.
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
		// Ok(Some) means the lock is held; an error means it is not.
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
	p.waits.locked(instance, turn.token, now, turn.leaseEnd(), capped, turn.batch)
	return out, nil
}

// unlockedState reads instance's control rows for a try, with a large
// turn whose committer stopped finished first, and returns them with the
// time now they are judged at. st is nil when a live lease holds the instance
// (lockedWhenTried recorded it).
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
	if st.lock.live(now) {
		p.lockedWhenTried(instance, st.lock.until, now)
		return nil, 0, nil
	}
	return st, now, nil
}

// turnBatch picks a turn's batch from an instance's queued messages: those
// visible at now, oldest first, decoded, up to maxTurnMessages and
// maxTurnBytes. capped reports visible messages left for the next turn.
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
			// Perhaps a newer version's message: another process may read
			// it. This one passes over the instance for a while.
			return nil, nil, false, provider.Corrupt(provider.OpFetchOrchestrationItem, err, "failed to decode queued %s message for instance %q: %v", m.kind, instance, err)
		}
		batch = append(batch, m)
		msgs = append(msgs, w)
		batchBytes += len(m.data)
	}
	return batch, msgs, capped, nil
}

// nameTurn starts the item of a turn on batch (msgs decoded): the
// orchestration, version and execution it runs, before the lock is
// written. Without an instance record, finding them may read the history
// (historyLoaded, historyRows); a batch that names none is dropped or
// parked, and out is nil.
func (p *Provider) nameTurn(ctx context.Context, instance string, st *instanceState, batch []queueRow, msgs []provider.WorkItem, now int64) (out *provider.OrchestrationItem, historyRows []item, historyLoaded bool, err error) {
	out = &provider.OrchestrationItem{Instance: instance, Messages: msgs}
	if st.meta != nil {
		out.OrchestrationName, out.Version, out.ExecutionID = st.meta.name, st.meta.version, st.meta.current
	} else {
		// No instance record yet: history written without one (by
		// AppendWithExecution) names the orchestration; else a queued start.
		// Only such an append, or a turn (which leaves an execution record),
		// writes history: without either there is none to read, and the
		// lock write (lockTurn), conditioned on the row as read, fails if
		// one lands meanwhile.
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
			// its start, but parked so that sweeps do not meet them first
			// every time.
			return nil, nil, false, p.parkOrphans(ctx, st, batch, now)
		}
	}
	if out.Version == "" {
		out.Version = provider.UnknownVersion
	}
	return out, historyRows, historyLoaded, nil
}

// turnHistory returns the history of execution executionID of a turn just
// locked (the lock row read being lock), decoded: from this process's
// cache when it holds it, else read, unless nameTurn read it already
// (loaded, rows). decodeErr is history that cannot be decoded, which the
// turn reports (OrchestrationItem.HistoryError); err is a failed read.
func (p *Provider) turnHistory(ctx context.Context, instance string, executionID uint64, lock lockRow, rows []item, loaded bool) (events []provider.Event, historyBytes int, decodeErr, err error) {
	// The lock row read may be the one this process's last ack left: the
	// history is then what that ack knew, decoded (historyCache).
	cached := false
	if !loaded {
		events, historyBytes, cached = p.history.lookup(instance, executionID, lock)
	}
	if !loaded && !cached {
		// Or the cache holds its start, and other processes' turns added
		// the rest: only those rows are read.
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

// lockedWhenTried records that a try found instance locked until untilMs:
// sweeps pass over it for a while, and the instance is tried again when
// the lease ends, whether a signal or a sweep brought the try: if the
// holder died, nothing else would bring it back before the next sweep.
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

// dropOrphans deletes the QueueMessage-only batch of an instance that does
// not exist and has no start queued, conditioned on the lock row being as
// read (so that no turn runs meanwhile).
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

// historyRows reads one execution's history rows, consistently and in
// event order, finishing first a large turn it finds being applied (its
// mark ends the range; docs/design.md §5).
func (p *Provider) historyRows(ctx context.Context, instance string, executionID uint64) ([]item, error) {
	rows, err := p.queryHistory(ctx, instance, executionID)
	if err != nil {
		return nil, err
	}
	rows, turnID := splitTurnMark(rows)
	if turnID == "" {
		return rows, nil
	}
	// The mark is written with the turn's first rows, after its commit:
	// make sure the turn is fully applied, then read again.
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

// startedFromHistory finds the OrchestrationStarted in history rows of an
// instance without an instance record.
func startedFromHistory(instance string, executionID uint64, rows []item) (name, version string, ok bool) {
	events, err := decodeHistory(provider.OpFetchOrchestrationItem, instance, executionID, rows)
	if err != nil {
		return "", "", false
	}
	return provider.StartedIn(events)
}

// isHistorySK reports whether sk is a history event's sort key (not a
// turn mark's).
func isHistorySK(sk string) bool {
	return strings.HasPrefix(sk, keys.HistPrefix) && !keys.IsTurnMarkSK(sk)
}
