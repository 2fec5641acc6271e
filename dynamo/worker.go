package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Worker fetches: docs/design.md §8 (a shard's lagging index: hints.lagged).

// EnqueueForWorker puts an activity on the worker queue, visible now, with
// its identity, session and tag; an identity already queued is replaced.
//
// Requests: one TransactWriteItems of one Put with a ClientRequestToken,
// then the wake-up signal.
func (p *Provider) EnqueueForWorker(ctx context.Context, item provider.ActivityExecuteItem) error {
	if err := provider.ValidateWorkerItem(provider.OpEnqueueForWorker, item); err != nil {
		return err
	}
	if err := checkIDs(provider.OpEnqueueForWorker, item.Instance, item.SessionID); err != nil {
		return err
	}
	data, err := json.Marshal(item)
	if err != nil {
		return provider.Permanent(provider.OpEnqueueForWorker, provider.ErrInvalidInput, "encode ActivityExecute work item: %v", err)
	}
	row, sig, size := p.workerItem(item, data, p.nowMs())
	if size > MaxItemBytes {
		return provider.Permanent(provider.OpEnqueueForWorker, provider.ErrInvalidInput,
			"ActivityExecute work item is %d bytes stored; it must fit one DynamoDB item (%d bytes)", size, MaxItemBytes)
	}
	if err := p.putOnce(ctx, provider.OpEnqueueForWorker, &types.Put{TableName: p.table, Item: row}); err != nil {
		return translate(provider.OpEnqueueForWorker, err)
	}
	p.notify(ctx, []queues.Signal{sig})
	return nil
}

// FetchWorkItem locks and returns the oldest eligible activity that passes
// tags and the session rules: without session, only activities without a
// session; with one, also those of sessions session.OwnerID holds or
// nobody holds (which it then claims for session.LockTimeout). A
// [provider.TagNone] filter returns nil at once. Where processes compete,
// it may take one of the 16 oldest without a session instead. See the
// package documentation for how it waits; nil, nil means no work.
//
// Requests: none for an activity a turn of this process hands it while it
// waits; one conditional UpdateItem for a signal addressing its row; else a
// Query of the shard's ready index and a conditional UpdateItem (a
// TransactWriteItems to claim a session), and a second Query when the index
// lagged the acks. A sweep: one Scan of a small index, else a Query a shard.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	if tags.Mode() == provider.TagNone {
		return nil, nil
	}
	return p.newWorkFetch(ctx, lockTimeout, session, tags).wait(pollTimeout)
}

// workFetch is one FetchWorkItem call; its steps are its methods.
type workFetch struct {
	p           *Provider
	ctx         context.Context
	lockTimeout time.Duration
	session     *provider.SessionFetchConfig
	tags        provider.TagFilter
	// shardFilter keys the fetch's shard hints, so that fetches taking other
	// rows (another tags filter or owner) pass over none of its shards.
	shardFilter string
	schedule    *sweepSchedule
	// result is the activity a claim of this fetch won.
	result *provider.LockedWorkItem
}

// newWorkFetch sets up one fetch: its shard filter and sweep schedule.
func (p *Provider) newWorkFetch(ctx context.Context, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) *workFetch {
	f := &workFetch{p: p, ctx: ctx, lockTimeout: lockTimeout, session: session, tags: tags}
	f.shardFilter = tags.String()
	if session != nil {
		f.shardFilter += "\x00" + session.OwnerID
	}
	f.schedule = p.sweeps.of(queues.Worker, p.sweeps.workerFilter(tags.String(), session, p.nowMs()))
	return f
}

// wait runs poll with this fetch's steps and returns the activity it got.
func (f *workFetch) wait(pollTimeout time.Duration) (*provider.LockedWorkItem, error) {
	p, ctx := f.p, f.ctx
	// A fetch taking untagged activities may be handed one (handoff).
	var hand *handoff
	if f.tags.Matches(nil) {
		hand = newHandoff(f.lockTimeout)
	}
	err := p.poll(ctx, provider.OpFetchWorkItem, queues.Worker, f.schedule, pollTimeout, hand, f.trySignals, f.sweep)
	if err != nil {
		return nil, translate(provider.OpFetchWorkItem, err)
	}
	if hand != nil && hand.got != nil {
		if err := ctx.Err(); err != nil {
			// Handed as the caller left: back to the queue, as in lockWork.
			_ = p.AbandonWorkItem(context.WithoutCancel(ctx), hand.got.LockToken, 0, true)
			return nil, provider.Permanent(provider.OpFetchWorkItem, err, "context done: %v", err)
		}
		return hand.got, nil
	}
	return f.result, nil
}

// keep reports whether this fetch may take row: the filter of its every
// Query, Scan and read, so that rows it cannot take hide none it can.
func (f *workFetch) keep(row item) bool {
	p := f.p
	k, now := queueRowKey(row), p.nowMs()
	if p.hints.isParked(k, now) {
		return false
	}
	// A lagging index shows rows this process holds, acked or found gone.
	if rsk, _, _ := strAttr(row, attrReadySK); p.hints.holdsRow(k, readySeq(rsk), now) {
		return false
	}
	tag, hasTag, _ := strAttr(row, attrTag)
	var tagPtr *string
	if hasTag {
		tagPtr = &tag
	}
	if !f.tags.Matches(tagPtr) {
		return false
	}
	if sid, ok, _ := strAttr(row, attrSession); ok {
		return f.session != nil && !p.hints.sessionBlocked(sid, f.session.OwnerID, p.nowMs())
	}
	return true
}

// tryRow tries one candidate; tried is false when another fetch of this
// process is trying it. A failure other than an unreadable row (parked)
// ends the fetch, so that a retry tries the same oldest candidate again.
func (f *workFetch) tryRow(r readyRow) (tried, done bool, err error) {
	p := f.p
	k := queueRowKey(r.row)
	if !p.hints.beginTry(k) {
		return false, false, nil
	}
	got, err := p.lockWork(f.ctx, r, f.lockTimeout, f.session)
	p.hints.endTry(k)
	if err != nil {
		return true, false, p.candidateFailed(k, err)
	}
	if got != nil {
		f.result = got
		return true, true, nil
	}
	return true, false, nil
}

// tryRows tries rows in order; after a claim, next hands the rows after
// the one taken to the process's other fetches (nextRows).
func (f *workFetch) tryRows(rows []readyRow) (done bool, next []queues.Signal, err error) {
	for i, r := range rows {
		if _, done, err := f.tryRow(r); done || err != nil {
			if done {
				next = nextRows(rows[i+1:])
			}
			return done, next, err
		}
	}
	return false, nil, nil
}

// stale reports whether sig names a row this process holds or just acked:
// it announces nothing. With the enqueue in its claim, it is stale only for
// that enqueue (a re-created instance reuses activity identities).
func (f *workFetch) stale(sig queues.Signal) bool {
	if sig.Work == "" || sig.Instance == "" {
		return false
	}
	p := f.p
	k, now := workRowKeyOf(sig.Instance, sig.Work), p.nowMs()
	if seq := readySeq(sig.Claim); seq != "" {
		return p.hints.holdsRow(k, seq, now)
	}
	return p.hints.holdsWork(k, now)
}

// trySignals tries the rows the signals address, then their shards.
func (f *workFetch) trySignals(sigs []queues.Signal) (bool, []queues.Signal, error) {
	// A lost addressed claim's signal is not handed back: the row is
	// another's, and every later fetch would try it first and lose again.
	done, claimed, handled, err := f.p.claimAddressed(sigs, f.tags, f.stale, f.tryRow)
	if done || err != nil {
		var rest []queues.Signal
		for _, sig := range sigs {
			if sig != claimed && !f.stale(sig) && !slices.Contains(handled, sig) {
				rest = append(rest, sig)
			}
		}
		return done, rest, err
	}
	if len(handled) > 0 {
		sigs = slices.DeleteFunc(slices.Clone(sigs), func(sig queues.Signal) bool { return slices.Contains(handled, sig) })
	}
	return f.tryShards(sigs)
}

// tryShards queries once each shard sigs name, in order, then reads the
// rows named; a later fetch looks again at one showing nothing
// (hints.lagged).
func (f *workFetch) tryShards(sigs []queues.Signal) (bool, []queues.Signal, error) {
	var shards []int
	named := map[int][]queues.Signal{}
	for _, sig := range sigs {
		if sig.Shard >= f.p.o.Shards {
			continue
		}
		if f.stale(sig) {
			continue // announces work this process already has
		}
		if !slices.Contains(shards, sig.Shard) {
			shards = append(shards, sig.Shard)
		}
		if sig.Work != "" && sig.Instance != "" && !isRelook(sig) {
			named[sig.Shard] = append(named[sig.Shard], sig)
		}
	}
	for i, shard := range shards {
		done, next, err := f.lookAtShard(shard, sigs, named[shard])
		if done || err != nil {
			return done, f.untried(sigs, shards, i, next), err
		}
	}
	return false, nil, nil
}

// untried returns the signals a fetch that got work in shards[i] hands
// back: those of shards[i:] that still announce something, then next,
// which names the next row it saw, so a shard's backlog does not depend on
// a signal a full list may have dropped. The done shard's signals naming
// no row are dropped: next hands its backlog on, and a copy finding the
// shard emptied would spend the index-lag budget (hints.lagged).
func (f *workFetch) untried(sigs []queues.Signal, shards []int, i int, next []queues.Signal) []queues.Signal {
	var rest []queues.Signal
	for _, shard := range shards[i:] {
		for _, sig := range sigs {
			if sig.Shard == shard && !f.stale(sig) && (shard != shards[i] || (sig.Work != "" && !isRelook(sig))) {
				rest = append(rest, sig)
			}
		}
	}
	return append(rest, next...)
}

// lookAtShard looks for the work of one signalled shard, unless another
// fetch of this process is trying it or made the relook sigs ask for; named
// are the signals naming its rows. A try passed over may have read the
// index before these rows were written, so its end makes a relook.
func (f *workFetch) lookAtShard(shard int, sigs, named []queues.Signal) (done bool, next []queues.Signal, err error) {
	p := f.p
	k := f.shardKey(shard)
	if !p.hints.beginTry(k) {
		p.hints.passedOver(k, relookSignal(shard))
		return false, nil, nil
	}
	if relookOnly(sigs, shard) && !p.hints.lagLookDue(k, time.Now()) {
		// Another fetch made this look already.
		if p.hints.endTry(k) != nil {
			p.signals.RequeueAfter(indexLagRetry, relookSignal(shard))
		}
		return false, nil, nil
	}
	done, next, lagging, err := f.tryShard(shard, named)
	passed := p.hints.endTry(k) != nil
	if lagging || passed {
		if wait, again := p.hints.lagged(k, time.Now(), relookOnly(sigs, shard) && !passed); again {
			p.signals.RequeueAfter(wait, relookSignal(shard))
		}
	}
	return done, next, err
}

// shardKey names worker shard shard, for this fetch's filter, in hints.
func (f *workFetch) shardKey(shard int) string {
	return fmt.Sprintf("\x00shard\x00%s\x00%d", f.shardFilter, shard)
}

// queryShard reads a shard's index: the rows this fetch may take. Rows
// found end the shard's index lag.
func (f *workFetch) queryShard(shard int) ([]readyRow, bool, error) {
	rows, more, err := f.p.queryReadyShard(f.ctx, keys.ReadyWorkerPrefix, shard, readyBound(f.p.nowMs()), f.keep)
	if err == nil && len(rows) > 0 {
		f.p.hints.lagEnded(f.shardKey(shard))
	}
	return rows, more, err
}

// tryShard tries a shard's index, then the rows named, read from the
// table. lagging: no row named and the index showed nothing (hints.lagged).
func (f *workFetch) tryShard(shard int, named []queues.Signal) (done bool, next []queues.Signal, lagging bool, err error) {
	var rows []readyRow
	// A lagging index shows rows already gone: keep passes over known ones,
	// and a second Query reads past those the claims found gone.
	for range 2 {
		var more bool
		rows, more, err = f.queryShard(shard)
		if err != nil {
			return false, nil, false, err
		}
		done, next, err = f.tryRows(f.p.spreadClaims(rows, shard))
		if done && more && len(next) == 0 {
			// Took the last row read, and the shard holds more: hand it on.
			next = []queues.Signal{{Kind: queues.Worker, Shard: shard}}
		}
		if done || err != nil {
			return done, next, false, err
		}
		if !more || len(rows) == 0 || slices.ContainsFunc(rows, func(r readyRow) bool { return f.keep(r.row) }) {
			break
		}
	}
	if len(named) > 0 {
		done, next, err = f.tryNamed(shard, named)
		return done, next, false, err
	}
	return false, nil, len(rows) == 0, nil
}

// tryNamed reads the rows sigs name in shard (the index may lag the
// signals) and tries the eligible ones, oldest first; signals whose rows
// are eligible but not for this fetch are declined to other processes.
func (f *workFetch) tryNamed(shard int, sigs []queues.Signal) (done bool, next []queues.Signal, err error) {
	p := f.p
	var direct []readyRow
	var declined []queues.Signal
	for _, sig := range sigs {
		if f.stale(sig) {
			continue // another fetch of this process took it meanwhile
		}
		found, notForUs, err := p.readyWorkRow(f.ctx, sig.Instance, sig.Work, f.keep)
		if err != nil {
			return false, nil, err
		}
		if notForUs {
			declined = append(declined, sig)
		}
		for _, r := range found {
			r.shard = shard
			direct = append(direct, r)
		}
	}
	p.decline(f.ctx, declined)
	slices.SortFunc(direct, func(a, b readyRow) int { return cmp.Compare(a.readySK, b.readySK) })
	return f.tryRows(direct)
}

// sweep tries the eligible rows of every shard, oldest first.
func (f *workFetch) sweep() (bool, []queues.Signal, error) {
	var leases leaseWatch
	rows, more, err := f.p.sweepReady(f.ctx, keys.ReadyWorkerPrefix, f.keep, &leases)
	if err != nil {
		return false, nil, err
	}
	leases.apply(f.schedule, f.p.nowMs())
	if len(rows) > 0 {
		f.schedule.active(time.Now())
	}
	if more {
		// A shard holds rows past those read (the index showed gone ones):
		// the next sweep reads past them once the signals handed on run out.
		f.schedule.backlog()
	}
	// Hand the rest on by shard, not a signal per row (nextRows).
	for i := range rows {
		if done, _, err := f.tryRows(rows[i : i+1]); done || err != nil {
			return done, nextRows(handOnRows(rows[i+1:], f.p.nowMs())), err
		}
	}
	return false, nil, nil
}

// nextRows hands on rows a fetch saw and did not take: per shard, a signal
// naming its oldest row, whose fetch queries the shard and hands on the
// rest in turn. Naming a row costs, in a shard emptied meanwhile, one read
// instead of the Queries that wait out index lag.
func nextRows(rows []readyRow) []queues.Signal {
	var next []queues.Signal
	seen := map[int]bool{}
	for _, r := range rows {
		if seen[r.shard] {
			continue
		}
		instance, _, _, _, err := parseWorkRow(r.pk, r.sk)
		if err != nil {
			continue
		}
		seen[r.shard] = true
		next = append(next, queues.Signal{Kind: queues.Worker, Shard: r.shard, Instance: instance, Work: r.sk})
	}
	return next
}

// queueRowKey names a queue row (an activity or a message) in hints.
func queueRowKey(row item) string {
	pk, _, _ := strAttr(row, attrPK)
	sk, _, _ := strAttr(row, attrSK)
	return pk + "\x00" + sk
}

// workRowKeyOf is queueRowKey of the activity row work of instance.
func workRowKeyOf(instance, work string) string { return workRowPK(instance, work) + "\x00" + work }

// messageRowKeyOf is queueRowKey of instance's orchestrator message sk.
func messageRowKeyOf(instance, sk string) string { return keys.InstancePK(instance) + "\x00" + sk }

// readyWorkRow reads the activity row work of instance consistently and
// returns it as a candidate when it is eligible now and keep accepts it.
func (p *Provider) readyWorkRow(ctx context.Context, instance, work string, keep func(item) bool) (rows []readyRow, notForUs bool, err error) {
	pk := workRowPK(instance, work)
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(pk, work), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return nil, false, err
	}
	rsk, _, _ := strAttr(out.Item, attrReadySK)
	if rsk == "" || rsk >= readyBound(p.nowMs()) {
		return nil, false, nil
	}
	if !keep(out.Item) {
		// Eligible, not for this fetch: its tag, another's session, or data
		// this process cannot read.
		return nil, true, nil
	}
	return []readyRow{{pk: pk, sk: work, readySK: rsk, row: out.Item}}, false, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockWork tries to lock a candidate row, conditioned on the ready key
// the index showed (a stale entry or a rival fetch fails it); nil: not won.
func (p *Provider) lockWork(ctx context.Context, r readyRow, lockTimeout time.Duration, session *provider.SessionFetchConfig) (*provider.LockedWorkItem, error) {
	c, err := newWorkClaim(r, lockTimeout, session)
	if err != nil {
		return nil, err
	}
	c.start = p.nowMs()
	c.until = c.start + durMs(lockTimeout)
	claimCtx := underClaim(ctx, c.start+durMs(claimBudget(lockTimeout)))
	update := c.rowUpdate(p.table)
	var won bool
	if c.tok.session == nil {
		won, err = p.claimRow(ctx, claimCtx, c, update)
	} else {
		won, err = p.claimRowAndSession(ctx, claimCtx, c, update)
	}
	if err != nil || !won {
		return nil, err
	}
	return p.claimedWork(ctx, c)
}

// workClaim is one claim of a worker row, shared by lockWork's steps.
type workClaim struct {
	r           readyRow
	lockTimeout time.Duration
	session     *provider.SessionFetchConfig
	tok         workToken
	token       string
	// data is the activity's JSON, nil until the index or claim brings it.
	data     *string
	attempts uint64
	// start is when the claim was sent; until ends its lease (epoch ms).
	start, until int64
}

// newWorkClaim reads what a claim of r needs and makes its token.
func newWorkClaim(r readyRow, lockTimeout time.Duration, session *provider.SessionFetchConfig) (*workClaim, error) {
	instance, execID, actID, slot, err := parseWorkRow(r.pk, r.sk)
	if err != nil {
		return nil, err
	}
	var d decoder
	// Only older tables' index projects it; it usually comes with the claim.
	data := d.optPayload(r.row, attrItem)
	attempts := d.uint(r.row, attrAttempts)
	sid := d.optStr(r.row, attrSession)
	if d.err != nil {
		return nil, d.err
	}
	seq := readySeq(r.readySK)
	tok := workToken{instance: instance, executionID: execID, activityID: actID, session: sid, seq: seq, slot: slot}
	if sid != nil {
		tok.owner = session.OwnerID
	}
	token := newWorkToken(tok)
	return &workClaim{r: r, lockTimeout: lockTimeout, session: session, tok: tok, token: token, data: data, attempts: attempts}, nil
}

// rowUpdate is the claim's write of the row: token, lease, attempt, and
// the ready key at the lease's end, when the row is eligible again. A
// slot stores its lease entrySlack longer, so that the next activity in it
// may keep its entry (waitingEntry).
func (c *workClaim) rowUpdate(table *string) *types.Update {
	stored := c.until
	if c.tok.slot {
		stored += entrySlack(c.lockTimeout)
	}
	u := &types.Update{
		TableName:                table,
		Key:                      key(c.r.pk, c.r.sk),
		UpdateExpression:         aws.String("SET #tok = :tok, #until = :until, #att = :att, #rs = :rs"),
		ConditionExpression:      aws.String("#rs = :seen"),
		ExpressionAttributeNames: map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#att": attrAttempts, "#rs": attrReadySK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tok": s(c.token), ":until": n(stored), ":att": nu(c.attempts + 1),
			":rs": s(readySK(stored, c.tok.seq)), ":seen": s(c.r.readySK),
		},
		// The row as it was when the claim failed; none when it is gone.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if c.tok.slot {
		// A done slot keeps its entry: its completion is not claimable. A
		// waiting one's first claim counts no attempt (waitingUpdate).
		u.ConditionExpression = aws.String("#rs = :seen AND #slot = :run AND attribute_not_exists(#sw)")
		u.ExpressionAttributeNames["#slot"], u.ExpressionAttributeNames["#sw"] = attrSlot, attrSlotWaits
		u.ExpressionAttributeValues[":run"] = s(slotRunning)
	}
	if isWaitingClaim(c.r.readySK) {
		return c.waitingUpdate(u)
	}
	return u
}

// waitingUpdate is the first claim of a waiting slot (waitingSlot), made
// from u: found by its enqueue, it keeps the attempt the kept entry holds,
// and the entry itself when the entry's end covers the claim's lease by at
// most entrySlack; else the entry moves to that slack past the lease.
func (c *workClaim) waitingUpdate(u *types.Update) *types.Update {
	end, _ := readyAt(c.r.readySK)
	names := map[string]string{"#tok": attrToken, "#slot": attrSlot, "#seq": attrSeq, "#sw": attrSlotWaits}
	values := map[string]types.AttributeValue{":tok": s(c.token), ":run": s(slotRunning), ":seq": s(c.tok.seq)}
	expr, cond := "SET #tok = :tok REMOVE #sw", "#slot = :run AND #seq = :seq AND attribute_exists(#sw)"
	if end >= c.until && end <= c.until+entrySlack(c.lockTimeout) {
		names["#until"], values[":end"] = attrLockUntil, n(end)
		cond += " AND #until = :end"
	} else {
		stored := c.until + entrySlack(c.lockTimeout)
		names["#until"], names["#rs"] = attrLockUntil, attrReadySK
		values[":until"], values[":rs"] = n(stored), s(readySK(stored, c.tok.seq))
		expr = "SET #tok = :tok, #until = :until, #rs = :rs REMOVE #sw"
	}
	u.UpdateExpression, u.ConditionExpression = aws.String(expr), aws.String(cond)
	u.ExpressionAttributeNames, u.ExpressionAttributeValues = names, values
	return u
}

// asWaiting is c made the first claim of the waiting slot row, which a
// claim of its kept entry found instead (its signal was lost): nil when
// row is no waiting slot.
func (c *workClaim) asWaiting(row item) *workClaim {
	if _, waits := row[attrSlotWaits]; !waits || !c.tok.slot || isWaitingClaim(c.r.readySK) {
		return nil
	}
	var d decoder
	until, seq := d.int(row, attrLockUntil), d.str(row, attrSeq)
	if d.err != nil {
		return nil
	}
	w := *c
	w.r.readySK, w.tok.seq, w.attempts = waitingClaim(until, seq), seq, 0
	w.token = newWorkToken(w.tok)
	return &w
}

// claimRow claims a row without a session with one UpdateItem, whose
// answer carries the activity. won is false when the row was taken or
// changed; a claim whose answer was lost is won if a read finds its token.
func (p *Provider) claimRow(ctx, claimCtx context.Context, c *workClaim, update *types.Update) (won bool, err error) {
	out, err := p.db.UpdateItem(claimCtx, &dynamodb.UpdateItemInput{
		TableName: update.TableName, Key: update.Key, UpdateExpression: update.UpdateExpression,
		ConditionExpression: update.ConditionExpression, ExpressionAttributeNames: update.ExpressionAttributeNames,
		ExpressionAttributeValues: update.ExpressionAttributeValues,
		// The claimed row carries the activity, at no read unit.
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var claimed item
	if err == nil {
		claimed = out.Attributes
	} else if claimed = heldItem(err, c.token); claimed != nil {
		err = nil // the SDK sent the claim again after it landed
	}
	if err == nil && c.data == nil {
		var od decoder
		c.data = od.optPayload(claimed, attrItem)
	}
	if err != nil {
		if conditionFailed(err) && isDoneSlot(failedConditionItem(err)) {
			p.slotDoneFound(c.r, failedConditionItem(err))
			return false, nil
		}
		if w := c.asWaiting(failedConditionItem(err)); conditionFailed(err) && w != nil {
			*c = *w
			return p.claimRow(ctx, claimCtx, c, c.rowUpdate(update.TableName))
		}
		if conditionFailed(err) {
			p.claimLost(c.r)
			if failedConditionItem(err) == nil {
				p.claimFoundGone(c.r)
			}
			return false, nil
		}
		if held, rerr := p.heldBy(ctx, key(c.r.pk, c.r.sk), c.token); rerr != nil || !held {
			return false, err
		}
	}
	return true, nil
}

// sessionClaim takes (or keeps) the row's session for the fetch's owner,
// listed under it, unless another owner holds it with a live lease.
func (p *Provider) sessionClaim(c *workClaim) *types.Update {
	sid, session := *c.tok.session, c.session
	sessUntil := c.start + durMs(session.LockTimeout)
	ownerShard := keys.ShardOf(session.OwnerID, p.o.Shards)
	return &types.Update{
		TableName: p.table,
		Key:       key(keys.SessionPK(sid), keys.Session),
		UpdateExpression: aws.String("SET #owner = :owner, #until = :suntil, #last = :now, " +
			"#lpk = :lpk, #lsk = :lsk"),
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR #owner = :owner OR " +
			"attribute_not_exists(#until) OR #until <= :now"),
		ExpressionAttributeNames: map[string]string{
			"#owner": attrOwner, "#until": attrLockUntil, "#last": attrLastSeen, "#pk": attrPK,
			"#lpk": attrListPK, "#lsk": attrListSK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": s(session.OwnerID), ":suntil": n(sessUntil), ":now": n(c.start),
			":lpk": s(keys.SessionsPK(ownerShard)), ":lsk": s(keys.SessionsSK(session.OwnerID, sid)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// claimRowAndSession claims a session's row and the session in one
// TransactWriteItems, whose answer carries nothing. won is false when the
// row was taken or another owner holds the session (hints records it).
func (p *Provider) claimRowAndSession(ctx, claimCtx context.Context, c *workClaim, update *types.Update) (won bool, err error) {
	_, err = p.db.TransactWriteItems(claimCtx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Update: update}, {Update: p.sessionClaim(c)}},
	})
	if err == nil {
		return true, nil
	}
	var tc *types.TransactionCanceledException
	if reasons := cancelReasons(err); reasons != nil {
		if reasons[0] == "ConditionalCheckFailed" && errors.As(err, &tc) && tc.CancellationReasons[0].Item == nil {
			p.claimFoundGone(c.r)
		}
		if len(reasons) == 2 && reasons[1] == "ConditionalCheckFailed" && errors.As(err, &tc) {
			if old := tc.CancellationReasons[1].Item; old != nil {
				var od decoder
				p.hints.sessionOwned(*c.tok.session, od.str(old, attrOwner), od.int(old, attrLockUntil))
			}
		}
		if slices.Contains(reasons, "ConditionalCheckFailed") {
			return false, nil // row taken, or session owned by another
		}
		return false, err
	}
	if held, rerr := p.heldBy(ctx, key(c.r.pk, c.r.sk), c.token); rerr != nil || !held {
		return false, err
	}
	return true, nil
}

// claimedWork delivers a claim that landed, or hands it back: the caller
// is gone, the activity cannot be decoded, or too little lease is left.
func (p *Provider) claimedWork(ctx context.Context, c *workClaim) (*provider.LockedWorkItem, error) {
	if ctx.Err() != nil {
		_ = p.AbandonWorkItem(context.WithoutCancel(ctx), c.token, 0, true)
		return nil, ctx.Err()
	}
	act, found, err := p.claimedActivity(ctx, workKey(c.tok), c.data)
	if err == nil && !found {
		return nil, nil // deleted since the claim (its instance was)
	}
	if err != nil {
		// Not delivered, so not an attempt; others may decode it (parked).
		_ = p.AbandonWorkItem(context.WithoutCancel(ctx), c.token, 0, true)
		return nil, err
	}
	if !usefulLease(c.until, p.nowMs(), c.lockTimeout) {
		p.o.Logger.Warn("dynamo: activity lock came back with less than a quarter of its lease left; released", "instance", c.tok.instance, "activity", act.ID, "lock_timeout", c.lockTimeout)
		// Never delivered, so not an attempt.
		_ = p.AbandonWorkItem(context.WithoutCancel(ctx), c.token, 0, true)
		return nil, nil
	}
	p.leases.set(c.token, c.until)
	p.hints.heldWork(workRowKeyOf(c.tok.instance, c.r.sk), c.tok.seq, c.until)
	if c.tok.session != nil {
		p.sweeps.sessionsHeld(c.session.OwnerID, c.start+durMs(c.session.LockTimeout))
	}
	return &provider.LockedWorkItem{Item: act, LockToken: c.token, AttemptCount: uint32(c.attempts + 1), LeaseExpiry: time.UnixMilli(c.until)}, nil
}

// claimedActivity decodes the claimed activity at k from data, else from a
// consistent read; found is false when the row is gone.
func (p *Provider) claimedActivity(ctx context.Context, k item, data *string) (act provider.ActivityExecuteItem, found bool, err error) {
	if data == nil {
		out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: p.table, Key: k, ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#item"), ExpressionAttributeNames: map[string]string{"#item": attrItem},
		})
		if err != nil || out.Item == nil {
			return act, false, err
		}
		var d decoder
		v := d.payload(out.Item, attrItem)
		if d.err != nil {
			return act, true, provider.Corrupt(provider.OpFetchWorkItem, d.err, "queued activity %s: %v", describeKey(k), d.err)
		}
		data = &v
	}
	w, err := provider.UnmarshalWorkItem([]byte(*data))
	if err != nil {
		return act, true, provider.Corrupt(provider.OpFetchWorkItem, err, "failed to decode queued activity %s: %v", describeKey(k), err)
	}
	act, ok := w.(provider.ActivityExecuteItem)
	if !ok {
		return act, true, provider.Permanent(provider.OpFetchWorkItem, provider.ErrCorruptData, "worker queue holds a %s work item", w.Kind())
	}
	return act, true, nil
}

// workKey returns the key of the worker row token locks.
func workKey(tok workToken) item {
	return key(workRowPK(tok.instance, tokWork(tok)), tokWork(tok))
}

// sessionTouch records activity on tok's session if the owner tok was
// fetched for holds it with a live lease; a refused touch cancels its
// transaction, which the caller resends without it (touchRefused).
func (p *Provider) sessionTouch(tok workToken, nowMs int64) *types.Update {
	return &types.Update{
		TableName:                p.table,
		Key:                      key(keys.SessionPK(*tok.session), keys.Session),
		UpdateExpression:         aws.String("SET #last = :now"),
		ConditionExpression:      aws.String("#owner = :owner AND #until > :now"),
		ExpressionAttributeNames: map[string]string{"#last": attrLastSeen, "#owner": attrOwner, "#until": attrLockUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": n(nowMs), ":owner": s(tok.owner),
		},
	}
}

// touchRefused reports whether err cancelled a transaction for its last
// action's (a session touch's) condition alone.
func touchRefused(err error) bool {
	reasons := cancelReasons(err)
	last := len(reasons) - 1
	if last < 1 || reasons[last] != "ConditionalCheckFailed" {
		return false
	}
	for _, r := range reasons[:last] {
		if r != "" && r != "None" {
			return false
		}
	}
	return true
}

// workLockLost is the error of an ack or renewal whose lock is gone.
func workLockLost(op string) error {
	return provider.Permanent(op, provider.ErrInvalidLockToken, "Invalid lock token: activity was cancelled or its lock expired")
}

// AckWorkItem deletes a locked activity and, when completion is non-nil,
// enqueues it on the orchestrator queue (visible now), atomically; it also
// records activity on the session while it is still the worker's, with a
// live lease. A completion other than [provider.ActivityCompletedItem] or
// [provider.ActivityFailedItem] fails with [provider.ErrInvalidInput]; an
// activity gone (cancelled, deleted, acked) or whose lock expired fails
// with [provider.ErrInvalidLockToken]. A failed ack changes nothing.
//
// Requests: for an activity in its instance's slot with a completion, one
// UpdateItem of the slot (a resend after it landed finds its own token
// there and succeeds); else one TransactWriteItems with a
// ClientRequestToken kept per call (so an SDK resend after it landed
// succeeds), and a second, without the session, when the session is no
// longer the worker's.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion provider.WorkItem) error {
	if err := provider.ValidateCompletion(provider.OpAckWorkItem, completion); err != nil {
		return err
	}
	if completion != nil {
		if err := checkIDs(provider.OpAckWorkItem, completion.TargetInstance(), nil); err != nil {
			return err
		}
	}
	tok, err := parseWorkToken(lockToken)
	if err != nil {
		return workLockLost(provider.OpAckWorkItem)
	}
	if tok.slot && completion != nil {
		data, err := provider.MarshalWorkItem(completion)
		if err != nil {
			return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput, "encode %s completion: %v", completion.Kind(), err)
		}
		return p.fillSlot(ctx, tok, lockToken, completion, data)
	}
	var data []byte
	var signals []queues.Signal
	var completionRow item
	if completion != nil {
		if data, err = provider.MarshalWorkItem(completion); err != nil {
			return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput, "encode %s completion: %v", completion.Kind(), err)
		}
		// The row is built once: its signal names it (lockWaits.heldSignal).
		row, sig, size := p.orchestratorItem(completion, data, p.nowMs())
		completionRow = row
		if size > MaxItemBytes {
			return provider.Permanent(provider.OpAckWorkItem, provider.ErrInvalidInput,
				"%s completion is %d bytes stored; it must fit one DynamoDB item (%d bytes)", completion.Kind(), size, MaxItemBytes)
		}
		signals = append(signals, sig)
	}
	del := func(now int64) *types.Delete {
		return &types.Delete{
			TableName:                 p.table,
			Key:                       workKey(tok),
			ConditionExpression:       aws.String("#tok = :tok AND #until > :now"),
			ExpressionAttributeNames:  map[string]string{"#tok": attrToken, "#until": attrLockUntil},
			ExpressionAttributeValues: map[string]types.AttributeValue{":tok": s(lockToken), ":now": n(now)},
		}
	}
	callKey := "ack\x00" + lockToken + "\x00" + string(data)
	touch := tok.session != nil
	build := func() *dynamodb.TransactWriteItemsInput {
		now := p.nowMs()
		actions := []types.TransactWriteItem{{Delete: del(now)}}
		if completion != nil {
			actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: p.table, Item: completionRow}})
		}
		if touch {
			actions = append(actions, types.TransactWriteItem{Update: p.sessionTouch(tok, now)})
		}
		return &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	}
	ackCtx := ackBudget(ctx)
	err = p.sendTx(ackCtx, provider.OpAckWorkItem, callKey, build)
	if touch && touchRefused(err) {
		// The session is no longer this worker's: ack without the touch.
		touch = false
		p.txs.rebuild(callKey)
		err = p.sendTx(ackCtx, provider.OpAckWorkItem, callKey, build)
	}
	if conditionFailedAt(cancelReasons(err)) == 0 {
		return workLockLost(provider.OpAckWorkItem)
	}
	if err != nil {
		return translate(provider.OpAckWorkItem, err)
	}
	p.leases.drop(lockToken)
	p.hints.heldWork(tokRowKey(tok), tok.seq, p.nowMs()+ackedWorkMs)
	p.post(signals)
	return nil
}

// abandonedAt reports whether a failed condition's row is unlocked at
// readyKey, which holds this abandon's clock read: no other write sets it.
func abandonedAt(err error, readyKey string) bool {
	row := failedConditionItem(err)
	if row == nil {
		return false
	}
	_, locked := row[attrToken]
	rs, _, _ := strAttr(row, attrReadySK)
	return !locked && rs == readyKey
}

// RenewWorkItemLock extends a live activity lock to now+extendFor and
// records activity on its session. An activity gone or whose lock expired
// fails with [provider.ErrInvalidLockToken]: so a worker learns of a
// cancellation. Throttling, conflicts (two of a session's activities
// renewing at once) and lost responses are retried inside the call as for
// [Provider.RenewOrchestrationItemLock]: an error means the lock is lost,
// proved or by the clock, or that ctx ended.
//
// Requests: one UpdateItem (a two-action TransactWriteItems for a session
// activity, the UpdateItem alone once the session is not the worker's);
// on a failure, a consistent GetItem of the row and more attempts.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	tok, err := parseWorkToken(lockToken)
	if err != nil {
		return workLockLost(provider.OpRenewWorkItemLock)
	}
	touch := tok.session != nil
	until, err := p.renewLease(ctx, renewal{
		op: provider.OpRenewWorkItemLock, knownEnd: p.leases.get(lockToken), extendFor: extendFor,
		write: func(ctx context.Context, now, until int64) error {
			var err error
			touch, err = p.renewWork(ctx, tok, lockToken, touch, now, until)
			return err
		},
		read: func(ctx context.Context) (int64, bool, error) { return p.leaseOf(ctx, workKey(tok), lockToken) },
	})
	if err != nil {
		return translate(provider.OpRenewWorkItemLock, err)
	}
	p.leases.set(lockToken, until)
	p.hints.heldWork(tokRowKey(tok), tok.seq, until)
	return nil
}

// renewWork sends one renewal attempt, touching the session when touch is
// set; it reports whether the next attempt should touch it.
func (p *Provider) renewWork(ctx context.Context, tok workToken, lockToken string, touch bool, now, until int64) (bool, error) {
	// The ready key moves with the lease: eligible again when it ends.
	update := &types.Update{
		TableName:                p.table,
		Key:                      workKey(tok),
		UpdateExpression:         aws.String("SET #until = :until, #rs = :rs"),
		ConditionExpression:      aws.String("#tok = :tok AND #until > :now"),
		ExpressionAttributeNames: map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#rs": attrReadySK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tok": s(lockToken), ":now": n(now), ":until": n(until), ":rs": s(readySK(until, tok.seq)),
		},
	}
	if touch {
		_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: update}, {Update: p.sessionTouch(tok, now)},
		}})
		if !touchRefused(err) {
			if conditionFailedAt(cancelReasons(err)) == 0 {
				return touch, workLockLost(provider.OpRenewWorkItemLock)
			}
			return touch, err
		}
		// The session is no longer this worker's: renew the lock alone.
	}
	_, err := p.db.UpdateItem(ctx, updateItem(update))
	if conditionFailed(err) {
		return false, workLockLost(provider.OpRenewWorkItemLock)
	}
	return false, err
}

// AbandonWorkItem unlocks an activity, visible again after delay (0 =
// now); ignoreAttempt undoes the fetch's attempt increment (floor 0). A
// token that locks no activity fails with [provider.ErrInvalidLockToken].
//
// Requests: one UpdateItem conditioned on the token.
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	tok, err := parseWorkToken(lockToken)
	if err != nil {
		return provider.Permanent(provider.OpAbandonWorkItem, provider.ErrInvalidLockToken, "Invalid lock token or already acked")
	}
	visible := p.nowMs() + durMs(delay)
	expr := "SET #vis = :vis, #rs = :rs REMOVE #tok, #until"
	names := map[string]string{"#vis": attrVisible, "#rs": attrReadySK, "#tok": attrToken, "#until": attrLockUntil}
	values := map[string]types.AttributeValue{":tok": s(lockToken), ":vis": n(visible), ":rs": s(readySK(visible, tok.seq))}
	if ignoreAttempt {
		// A fetch made the count at least 1, and only the holder abandons.
		expr = "SET #vis = :vis, #rs = :rs, #att = #att - :one REMOVE #tok, #until"
		names["#att"] = attrAttempts
		values[":one"] = n(1)
	}
	// A failed condition means an earlier attempt landed on a resend, or when
	// the row is unlocked at this call's ready key (the SDK resent it).
	resent, err := p.resend(ctx, provider.OpAbandonWorkItem, func() error {
		_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: p.table, Key: workKey(tok),
			UpdateExpression:                    aws.String(expr),
			ConditionExpression:                 aws.String("#tok = :tok"),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	if conditionFailed(err) && (resent || abandonedAt(err, readySK(visible, tok.seq))) {
		err = nil
	}
	if err != nil {
		if conditionFailed(err) {
			return provider.Permanent(provider.OpAbandonWorkItem, provider.ErrInvalidLockToken, "Invalid lock token or already acked")
		}
		return translate(provider.OpAbandonWorkItem, err)
	}
	p.leases.drop(lockToken)
	p.hints.releasedWork(tokRowKey(tok))
	shard := keys.ShardOf(keys.WorkerRoutingKey(tok.instance, tok.session), p.o.Shards)
	p.post([]queues.Signal{{
		Kind: queues.Worker, Shard: shard, Instance: tok.instance, VisibleAt: timeMs(visible),
		Work: tokWork(tok),
	}})
	return nil
}
