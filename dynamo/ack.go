package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// DynamoDB limits the turn protocol is built around.
const (
	// maxTransactActions is the most actions one TransactWriteItems takes.
	maxTransactActions = 100
	// maxTransactBytes is a TransactWriteItems' 4 MB, less request overhead.
	maxTransactBytes = 4_000_000
	// MaxItemBytes is the largest row the provider stores (one history
	// event, one queued work item, keys included): DynamoDB's 400 KB, as
	// itemsize measures it exactly, less 1 KB a staging row needs around it.
	MaxItemBytes = 399 * 1024
	// dynamoItemLimit is DynamoDB's item size limit (itemsize.ItemSize).
	dynamoItemLimit = 400 * 1024
)

// planAction is one write of a turn: a Put of a whole item or a Delete.
type planAction struct {
	put item
	del item
	// eventID and lastEventID are a history put's first and last events.
	eventID, lastEventID uint64
	// asRead, if set, conditions the write on the row as read (staleRead).
	asRead *rowCondition
	// limitSize, if set, is the size the item limit applies to (setPayload).
	limitSize int
}

// rowCondition is a condition expression on one row.
type rowCondition struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// rowExists conditions a delete of a row the fetch read.
var rowExists = &rowCondition{expr: "attribute_exists(#pk)", names: map[string]string{"#pk": attrPK}}

// metaAsRead conditions a put of the instance record on it being the one
// the fetch read (m; nil for none): update time, custom status version,
// current execution, status and figures (figuresAsRead).
func metaAsRead(m *metaRow) *rowCondition {
	if m == nil {
		return figuresAsRead(nil)
	}
	return (&rowCondition{
		expr:   "#ua = :ua AND #cv = :cv AND #cur = :cur",
		names:  map[string]string{"#ua": attrUpdatedAt, "#cv": attrCStatusVer, "#cur": attrCurrent},
		values: map[string]types.AttributeValue{":ua": n(m.updatedAt), ":cv": nu(m.cstatVersion), ":cur": nu(m.current)},
	}).and(figuresAsRead(m))
}

// sameRecord reports whether now matches read where metaAsRead conditions.
func sameRecord(now, read *metaRow) bool {
	if now == nil || read == nil {
		return now == read
	}
	return now.updatedAt == read.updatedAt && now.cstatVersion == read.cstatVersion && now.current == read.current &&
		now.status == read.status && now.execs == read.execs && now.events == read.events
}

// turnPlan is a turn's writes but the lock release, and its signals.
type turnPlan struct {
	actions []planAction
	// release holds the attempt counts the lock row keeps after the turn.
	release map[string]uint32
	signals []queues.Signal
	size    int
	// history holds the history rows the turn writes, in event order.
	history []item
	// meta is the instance record when it holds nothing new; a large turn
	// writes it anyway (its release records no ack time).
	meta planAction
	// kvDigest digests the KV state the turn leaves (kvDigest).
	kvDigest string
	// histEnd is where the turn leaves the history (nil: unknown).
	histEnd *historyEnd
	// cell is the change to the counter cells (change), added in the
	// transaction that writes the record or commits a large turn (takeCell).
	cell figures
	// claimable is the activity for claimAddressed or handActivity.
	claimable *claimableActivity
}

// claimableActivity indexes a claimable activity in plan actions and signals.
type claimableActivity struct {
	action, signal int
	item           provider.ActivityExecuteItem
	// sole reports that the turn leaves no other work outstanding that it
	// knows of: no other activity, none scheduled before, no message sent
	// (kept.go keeps only such a turn's lock).
	sole bool
}

// AckOrchestrationItem commits a turn atomically and releases the lock.
// An unknown, released or expired lock, or a deleted instance, fails with
// [provider.ErrInvalidLockToken]; a stored event id with
// [provider.ErrDuplicateEvent]; an event over [MaxItemBytes] with
// [provider.ErrInvalidInput]. A failed ack writes nothing and keeps the lock.
//
// Requests: one TransactWriteItems when the turn fits one transaction (100
// actions, 4 MB); +1 Query of the control rows when another process
// fetched it; +1 Query of the KV rows when the turn writes KV or ends the
// execution and this process lacks the non-empty KV state the lock row
// names (turnKV). Larger turns are staged (docs/design.md §5). A retry
// after a lost response resends the same transaction and token and does
// not apply twice; an ack after this process returned success for the
// token is a second ack and fails with [provider.ErrInvalidLockToken].
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	if err := validateAck(commit); err != nil {
		return err
	}
	tok, err := parseOrchToken(lockToken)
	if err != nil {
		return invalidToken(provider.OpAckOrchestrationItem)
	}
	turn := p.turns.get(lockToken)
	if turn != nil {
		turn.mu.Lock()
		defer turn.mu.Unlock()
		if turn.done {
			return invalidToken(provider.OpAckOrchestrationItem)
		}
	} else {
		var settled bool
		if turn, settled, err = p.uncachedTurn(ctx, tok.instance, lockToken, commit); err != nil || settled {
			return err
		}
	}
	if err := p.readExecIfNeeded(ctx, turn.st, commit.ExecutionID, commit.Metadata); err != nil {
		return translate(provider.OpAckOrchestrationItem, err)
	}
	if err := p.turnKV(ctx, turn.st, commit); err != nil {
		return translate(provider.OpAckOrchestrationItem, err)
	}
	if err := p.countEndingHistory(ctx, turn, commit); err != nil {
		return translate(provider.OpAckOrchestrationItem, err)
	}
	now := p.nowMs()
	plan, digest, err := p.planTurn(turn, commit, now)
	if err != nil {
		return err
	}
	large, err := p.sendTurn(ctx, turn, &plan, digest, now)
	if err != nil {
		return err
	}
	p.turnAcked(turn, lockToken, commit, plan, digest, large, now)
	return nil
}

// validateAck checks a commit, and the ids its work items name, unread.
func validateAck(commit provider.TurnCommit) error {
	if err := provider.ValidateTurn(provider.OpAckOrchestrationItem, commit); err != nil {
		return err
	}
	for _, w := range commit.WorkerItems {
		if err := checkIDs(provider.OpAckOrchestrationItem, w.Instance, w.SessionID); err != nil {
			return err
		}
	}
	for _, w := range commit.OrchestratorItems {
		if err := checkIDs(provider.OpAckOrchestrationItem, w.TargetInstance(), nil); err != nil {
			return err
		}
	}
	return nil
}

// uncachedTurn rebuilds from the control rows a turn this process lacks.
// settled reports a known outcome (nil: a commit that is in).
func (p *Provider) uncachedTurn(ctx context.Context, instance, lockToken string, commit provider.TurnCommit) (turn *turnState, settled bool, err error) {
	if p.turns.wasAcked(lockToken) {
		// This process returned this ack: a second ack, even of one commit.
		return nil, true, invalidToken(provider.OpAckOrchestrationItem)
	}
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return nil, true, translate(provider.OpAckOrchestrationItem, err)
	}
	if st.lock.turnDone == largeTurnID(lockToken) {
		return nil, true, nil // a retry of a large turn someone finished meanwhile
	}
	if st.lock.token != lockToken {
		if st.lock.smallDone != "" && st.lock.smallDone == p.smallTurnDone(st, lockToken, commit) {
			return nil, true, nil // a retry of this commit, which an earlier attempt made
		}
		return nil, true, invalidToken(provider.OpAckOrchestrationItem)
	}
	if len(st.lock.batch) == 0 && st.lock.turn == "" {
		// A turn taken under a lock its process kept: only that process
		// knows its batch (docs/design.md §6, kept locks).
		return nil, true, invalidToken(provider.OpAckOrchestrationItem)
	}
	if st.lock.turn != "" {
		// This token's large turn is committed: a retried ack finishes it.
		if err := p.rollForward(ctx, instance, st.lock.turn); err != nil {
			return nil, true, translate(provider.OpAckOrchestrationItem, err)
		}
		return nil, true, nil
	}
	return &turnState{token: lockToken, st: st, ver: st.lock.ver, batch: st.lock.batch, attempts: st.lock.attempts}, false, nil
}

// sendTurn commits a planned turn in one transaction when it fits, else by
// the staged protocol (which also writes plan.meta). large reports which.
func (p *Provider) sendTurn(ctx context.Context, turn *turnState, plan *turnPlan, digest string, now int64) (large bool, err error) {
	// Beside the plan's actions: the lock release and any cell change.
	beside := 1
	if plan.cell != (figures{}) {
		beside++
	}
	large = len(plan.actions)+beside > maxTransactActions || plan.size > maxTransactBytes
	if large {
		if plan.meta.put != nil {
			plan.actions = append(plan.actions, plan.meta)
		}
		return true, p.commitLargeTurn(ctx, turn, *plan)
	}
	slotActivity(plan, turn)
	hand := p.handActivity(plan, turn, now)
	if hand == nil {
		p.waitingSlot(plan, turn, now)
	}
	if err := p.commitTurn(ctx, turn, *plan, hand, digest, now); err != nil {
		return false, err
	}
	plan.signals = turn.txSignals // the transaction sent may be an earlier try's
	return false, nil
}

// turnAcked updates what this process keeps of a committed turn (turns,
// hints, history, lock waits) and posts its signals.
func (p *Provider) turnAcked(turn *turnState, lockToken string, commit provider.TurnCommit, plan turnPlan, digest string, large bool, now int64) {
	turn.done = true
	p.turns.ackedTurn(lockToken)
	p.hints.unlocked(turn.st.id)
	// Sweeps pass over consumed messages a lagging index still shows.
	for _, sk := range turn.batch {
		seq := ""
		if sk == keys.SlotSK && turn.st.slot != nil {
			seq = turn.st.slot.seq // the slot's next completion is no stale signal
		}
		p.hints.heldWork(messageRowKeyOf(turn.st.id, sk), seq, now+ackedWorkMs)
	}
	if large {
		p.history.drop(turn.st.id) // its lock row records the large turn
	} else {
		p.history.acked(turn.st.id, lockToken, commit.ExecutionID, plan.history, smallTurnID(turn.token, digest), turn.st.lock.turnDone)
	}
	again := p.waits.released(turn.st.id, lockToken)
	if window := commit.CompletionWindow; window > 0 {
		id := turn.st.id
		p.waits.gather(id, now, min(window, maxCompletionWindow), again, func() { p.signals.Requeue(p.instanceSignal(id)) })
	} else if again {
		p.signals.Requeue(p.instanceSignal(turn.st.id))
	}
	p.post(plan.signals)
}

// smallTurnID is what a small turn's release records as done: a hash of
// token and commit, so a retry with nothing cached learns it is in, and
// another commit for the same token does not pass for it.
func smallTurnID(lockToken, digest string) string {
	sum := sha256.Sum256([]byte(lockToken + "\x00" + digest))
	return hex.EncodeToString(sum[:8])
}

// smallTurnDone is the smallTurnID of commit planned on st, or "".
func (p *Provider) smallTurnDone(st *instanceState, lockToken string, commit provider.TurnCommit) string {
	_, digest, err := p.planTurn(&turnState{token: lockToken, st: st}, commit, p.nowMs())
	if err != nil {
		return ""
	}
	return smallTurnID(lockToken, digest)
}

// invalidToken is the error of an ack, renewal or abandon of a lock not held.
func invalidToken(op string) error {
	return provider.Permanent(op, provider.ErrInvalidLockToken, "Invalid lock token: the lock expired, was released, or its instance was deleted")
}

// commitTurn sends a turn that fits one TransactWriteItems, the lock
// release first, conditioned on token and live lease (the fencing check).
func (p *Provider) commitTurn(ctx context.Context, turn *turnState, plan turnPlan, hand *handedRow, digest string, now int64) error {
	if turn.tx == nil || turn.tx.key != turn.token+"\x00"+digest {
		turn.tx = &pendingTx{key: turn.token + "\x00" + digest}
		turn.txHanded = nil
	}
	cell, done := p.takeCell(plan.cell)
	defer done()
	_, err := p.sendPending(ackBudget(ctx), provider.OpAckOrchestrationItem, turn.tx, func() *dynamodb.TransactWriteItemsInput {
		turn.txHanded, turn.txSignals = hand, plan.signals
		turn.txKept = keepLock(turn, hand, plan.release, now)
		actions := make([]types.TransactWriteItem, 0, len(plan.actions)+1)
		actions = append(actions, types.TransactWriteItem{Update: newLockRelease(plan.release, "", smallTurnID(turn.token, digest)).withSmallPast(turn.st.lock).acked(now).withKV(plan.kvDigest).withHistoryEnd(plan.histEnd).keeping(turn.txKept).update(p.table, turn.st.id,
			"#tok = :tok AND #until > :now AND attribute_not_exists(#turn)",
			map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#turn": attrTurn},
			map[string]types.AttributeValue{":tok": s(turn.token), ":now": n(now)})})
		for _, a := range plan.actions {
			actions = append(actions, p.transactAction(a))
		}
		actions = append(actions, cell...)
		return &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	})
	if err == nil && turn.txKept != nil {
		// Before the handed fetch returns: its completion may come at once.
		p.kept.put(turn.st.id, *turn.txKept, now)
	}
	if delivered := p.settleHanded(ctx, hand, turn.txHanded, err == nil); err == nil && turn.txKept != nil && !delivered {
		// The activity went back to the queue: its completion may come
		// from anywhere.
		p.releaseKept(ctx, turn.st.id, turn.txKept.token)
	}
	if err == nil {
		return nil
	}
	switch i := conditionFailedAt(cancelReasons(err)); {
	case i == 0:
		return invalidToken(provider.OpAckOrchestrationItem)
	case i > len(plan.actions):
	case i > 0 && plan.actions[i-1].eventID != 0:
		return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrDuplicateEvent,
			"event_id %d already exists in execution of instance %s", plan.actions[i-1].eventID, turn.st.id)
	case i > 0 && plan.actions[i-1].asRead != nil:
		return p.staleRead(ctx, turn)
	}
	return translate(provider.OpAckOrchestrationItem, err)
}

// staleRead refuses the ack of a turn planned on a torn read
// (docs/design.md §5): it releases the instance without counting an
// attempt and reports the lock lost; the next fetch reads the rows anew.
func (p *Provider) staleRead(ctx context.Context, turn *turnState) error {
	if err := p.AbandonOrchestrationItem(ctx, turn.token, 0, true); err != nil && !errors.Is(err, provider.ErrInvalidLockToken) {
		p.o.Logger.Warn("dynamo: releasing an instance after a stale read failed; its lock expires instead", "instance", turn.st.id, "error", err)
	}
	return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidLockToken,
		"the turn of instance %q was planned on rows an earlier turn had changed (the fetch read the instance while that turn committed); the turn is released and the instance is fetched again", turn.st.id)
}

// transactAction turns a plan action into a transaction action.
func (p *Provider) transactAction(a planAction) types.TransactWriteItem {
	switch {
	case a.del != nil && a.asRead != nil:
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName:                 p.table,
			Key:                       a.del,
			ConditionExpression:       aws.String(a.asRead.expr),
			ExpressionAttributeNames:  a.asRead.names,
			ExpressionAttributeValues: a.asRead.values,
		}}
	case a.asRead != nil:
		return types.TransactWriteItem{Put: &types.Put{
			TableName:                 p.table,
			Item:                      a.put,
			ConditionExpression:       aws.String(a.asRead.expr),
			ExpressionAttributeNames:  a.asRead.names,
			ExpressionAttributeValues: a.asRead.values,
		}}
	case a.del != nil:
		return types.TransactWriteItem{Delete: &types.Delete{TableName: p.table, Key: a.del}}
	case a.eventID != 0:
		return types.TransactWriteItem{Put: &types.Put{
			TableName:                p.table,
			Item:                     a.put,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}}
	default:
		return types.TransactWriteItem{Put: &types.Put{TableName: p.table, Item: a.put}}
	}
}

// planTurn computes a turn's writes from the state its fetch read, and a
// digest of the commit. It fails on events that cannot be stored.
func (p *Provider) planTurn(turn *turnState, commit provider.TurnCommit, now int64) (turnPlan, string, error) {
	tp := &turnPlanner{p: p, turn: turn, st: turn.st, commit: commit, now: now,
		id: turn.st.id, pk: keys.InstancePK(turn.st.id), digest: sha256.New()}
	fmt.Fprintf(tp.digest, "%d\x00", commit.ExecutionID)
	if err := tp.history(); err != nil {
		return tp.plan, "", err
	}
	tp.consumed()
	tp.instance(tp.execution())
	if err := tp.kv(); err != nil {
		return tp.plan, "", err
	}
	if err := tp.workerItems(); err != nil {
		return tp.plan, "", err
	}
	tp.mergeSignals()
	if err := tp.orchestratorItems(); err != nil {
		return tp.plan, "", err
	}
	tp.plan.cell = tp.plan.cell.plus(1, startsChange(tp.startsSent, tp.startsTaken))
	tp.release()
	if err := tp.checkRowSizes(); err != nil {
		return tp.plan, "", err
	}
	return tp.plan, hex.EncodeToString(tp.digest.Sum(nil)), nil
}

// turnPlanner builds a turn's plan. planTurn calls its methods in the order
// the writes go out, so plan and digest depend on that order alone.
type turnPlanner struct {
	p      *Provider
	turn   *turnState
	st     *instanceState
	commit provider.TurnCommit
	now    int64
	id, pk string
	plan   turnPlan
	digest hash.Hash
	// startsTaken and startsSent count starts consumed and queued (np).
	startsTaken, startsSent int
}

// deleteActionBytes is what a planned delete counts toward a transaction's
// size: its key and condition.
const deleteActionBytes = 200

// add appends a to the plan, counting its size.
func (tp *turnPlanner) add(a planAction) {
	tp.plan.actions = append(tp.plan.actions, a)
	if a.put != nil {
		tp.plan.size += itemsize.ItemSize(a.put)
	} else {
		tp.plan.size += deleteActionBytes
	}
}

// history plans the turn's history rows and where they end the history.
// It runs first: a bad or stored event fails before anything is planned.
func (tp *turnPlanner) history() error {
	commit := tp.commit
	encoded, err := encodeEvents(provider.OpAckOrchestrationItem, tp.id, commit.ExecutionID, commit.HistoryDelta)
	if err != nil {
		return err
	}
	if err := tp.turn.checkNewEvents(commit.ExecutionID, encoded); err != nil {
		return err
	}
	for _, e := range encoded {
		tp.digest.Write([]byte(e.data))
	}
	for _, run := range packHistory(tp.id, commit.ExecutionID, encoded, !tp.p.o.DisablePayloadCompression) {
		tp.add(planAction{put: run.row, eventID: run.first, lastEventID: run.first + uint64(run.events) - 1})
		tp.plan.history = append(tp.plan.history, run.plain)
	}
	if e := tp.turn.histEnd; e != nil && e.exec == commit.ExecutionID {
		tp.plan.histEnd = &historyEnd{exec: e.exec, events: e.events + uint64(len(commit.HistoryDelta))}
	}
	return nil
}

// consumed plans the deletes of the batch's messages, each conditioned on
// its row existing (staleRead).
func (tp *turnPlanner) consumed() {
	starts := map[string]bool{}
	for _, m := range tp.st.msgs {
		starts[m.sk] = isStart(m.kind)
	}
	for _, sk := range tp.turn.batch {
		asRead := rowExists
		if sk == keys.SlotSK {
			asRead = slotAsRead(tp.st.slot)
		}
		tp.add(planAction{del: key(tp.pk, sk), asRead: asRead})
		if starts[sk] {
			tp.startsTaken++
		}
	}
}

// execution digests the metadata and plans the execution record, written
// when created or its pin or status change; it returns it and whether so.
func (tp *turnPlanner) execution() (*execRow, bool) {
	meta := tp.commit.Metadata
	fmt.Fprintf(tp.digest, "%q%q%q%q", meta.OrchestrationName, meta.OrchestrationVersion, meta.Status, meta.ParentInstanceID)
	if meta.Output != nil {
		fmt.Fprintf(tp.digest, "%q", *meta.Output)
	}
	if meta.PinnedDuroxideVersion != nil {
		tp.digest.Write([]byte(meta.PinnedDuroxideVersion.String()))
	}
	exec := cloneExec(tp.st.execs[tp.commit.ExecutionID])
	execChanged := exec == nil
	if exec == nil {
		exec = &execRow{id: tp.commit.ExecutionID, status: provider.StatusRunning, startedAt: tp.now}
	}
	if meta.PinnedDuroxideVersion != nil {
		v := *meta.PinnedDuroxideVersion
		exec.pinned, execChanged = &v, true
	}
	if meta.Status != "" {
		exec.status, exec.output = meta.Status, meta.Output
		completed := tp.now
		exec.completedAt, execChanged = &completed, true
	}
	if execChanged {
		tp.add(planAction{put: execItem(tp.id, exec)})
	}
	return exec, execChanged
}

// instance plans the instance record. Holding up to 256 KB of custom
// status, it is written only when what it holds changes (ack times go on
// the lock row); else plan.meta keeps it for a large turn. A new child's
// record gets its link to the parent.
func (tp *turnPlanner) instance(exec *execRow, execChanged bool) {
	st, commit, meta := tp.st, tp.commit, tp.commit.Metadata
	var newMeta *metaRow
	if st.meta != nil {
		m := *st.meta
		newMeta = &m
	}
	created := false
	if meta.OrchestrationName != "" && meta.OrchestrationVersion != "" {
		if newMeta == nil {
			newMeta = &metaRow{current: commit.ExecutionID, parent: meta.ParentInstanceID, createdAt: tp.now}
			created = true
		}
		newMeta.name, newMeta.version = meta.OrchestrationName, meta.OrchestrationVersion
	}
	if newMeta == nil {
		return
	}
	newMeta.current = max(newMeta.current, commit.ExecutionID)
	newMeta.updatedAt = tp.now
	if status, changed := provider.CustomStatusChange(commit.HistoryDelta); changed {
		newMeta.cstat = status
		newMeta.cstatVersion++
	}
	current := st.execs[newMeta.current]
	if newMeta.current == commit.ExecutionID {
		current = exec
	}
	tp.figures(newMeta, current, exec, created)
	tp.runFigures(newMeta)
	newMeta.result = tp.endedResult(newMeta)
	tp.plan.cell = change(st.meta, newMeta)
	figuresChanged := st.meta == nil || newMeta.status != st.meta.status ||
		newMeta.execs != st.meta.execs || newMeta.events != st.meta.events
	tp.plan.meta = planAction{put: metaItem(tp.id, newMeta, current, tp.p.o.Shards), asRead: metaAsRead(st.meta)}
	cstatChanged := newMeta.cstatVersion != 0 && (st.meta == nil || newMeta.cstatVersion != st.meta.cstatVersion)
	if figuresChanged || created || cstatChanged || newMeta.current != st.meta.current ||
		newMeta.name != st.meta.name || newMeta.version != st.meta.version ||
		(execChanged && newMeta.current == commit.ExecutionID) {
		tp.add(tp.plan.meta)
		tp.plan.meta = planAction{}
	}
	if created && newMeta.parent != "" {
		// An item of its own: children created at once do not contend.
		tp.add(planAction{put: childLink(newMeta.parent, tp.id)})
	}
}

// figures sets newMeta's status and figures (contribution) from the
// current execution's record and exec, the turn's.
func (tp *turnPlanner) figures(newMeta *metaRow, current, exec *execRow, created bool) {
	newMeta.status = ""
	if current != nil {
		newMeta.status = current.status
	}
	before := tp.st.execs[tp.commit.ExecutionID]
	if created {
		// Count executions that turns acked without a name left.
		for _, e := range tp.st.execs {
			if !e.pruning {
				newMeta.execs++
			}
		}
		newMeta.events += tp.turn.unrecorded
	}
	if before == nil {
		newMeta.execs++
	}
	switch {
	case before != nil && provider.IsTerminalStatus(before.status):
		newMeta.events += uint64(len(tp.commit.HistoryDelta))
	case provider.IsTerminalStatus(exec.status):
		newMeta.events += tp.turn.endingEvents(tp.commit)
	}
}

// kv plans the KV rows (planKV) and the digest the release records.
func (tp *turnPlanner) kv() error {
	actions, digest, err := tp.p.planKV(tp.pk, tp.st, tp.commit)
	for _, a := range actions {
		tp.add(a)
	}
	tp.plan.kvDigest = digest
	return err
}

// workerItems plans the rows of the turn's activities not also cancelled,
// then the deletes of the cancelled ones. The first may be claimable.
func (tp *turnPlanner) workerItems() error {
	commit := tp.commit
	cancelled := map[provider.ScheduledActivityIdentifier]bool{}
	for _, c := range commit.CancelledActivities {
		cancelled[c] = true
	}
	// The last item of one identity wins (one action per item).
	last := map[provider.ScheduledActivityIdentifier]int{}
	for i, w := range commit.WorkerItems {
		last[provider.ScheduledActivityIdentifier{Instance: w.Instance, ExecutionID: w.ExecutionID, ActivityID: w.ID}] = i
	}
	scheduled := map[provider.ScheduledActivityIdentifier]bool{}
	claimable := tp.turn.noEarlierActivities(commit)
	for i, w := range commit.WorkerItems {
		ident := provider.ScheduledActivityIdentifier{Instance: w.Instance, ExecutionID: w.ExecutionID, ActivityID: w.ID}
		if last[ident] != i {
			continue
		}
		scheduled[ident] = true
		data, err := json.Marshal(w)
		if err != nil {
			return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput, "encode worker item %d: %v", i, err)
		}
		tp.digest.Write(data)
		if cancelled[ident] {
			continue
		}
		row, sig, size := tp.p.workerItem(w, data, tp.now)
		if claimable && w.Instance == tp.id && w.SessionID == nil && w.Tag == nil {
			// No older activity can precede it (claimAddressed).
			sig.Claim, _, _ = strAttr(row, attrReadySK)
			tp.plan.claimable = &claimableActivity{action: len(tp.plan.actions), signal: len(tp.plan.signals), item: w,
				sole: len(commit.WorkerItems) == 1 && len(commit.OrchestratorItems) == 0}
		}
		claimable = false // only the turn's first activity
		tp.add(planAction{put: row, limitSize: size})
		tp.plan.signals = append(tp.plan.signals, sig)
	}
	for _, c := range commit.CancelledActivities {
		fmt.Fprintf(tp.digest, "c%q%d.%d", c.Instance, c.ExecutionID, c.ActivityID)
		if scheduled[c] {
			continue
		}
		scheduled[c] = true // one delete per activity, however often it is named
		if sl := tp.st.slot; sl != nil && !sl.done && c.Instance == tp.id && sl.exec == c.ExecutionID && sl.act == c.ActivityID {
			tp.add(planAction{del: key(tp.pk, keys.SlotSK), asRead: slotAsRead(sl)})
			continue
		}
		tp.add(planAction{del: key(keys.WorkerPK(c.Instance), keys.WorkerSK(c.ExecutionID, c.ActivityID))})
	}
	return nil
}

// mergeSignals names by its row only the first activity of each shard and
// instance; the rest become shard signals, which merge.
func (tp *turnPlanner) mergeSignals() {
	named := map[queues.Signal]bool{}
	for i, sig := range tp.plan.signals {
		plain := sig
		plain.Work, plain.Claim = "", ""
		if named[plain] {
			tp.plan.signals[i] = plain
		}
		named[plain] = true
	}
}

// orchestratorItems plans the turn's message rows and links each child it
// starts here, in the tree from the commit on (docs/design.md §5, deletion).
func (tp *turnPlanner) orchestratorItems() error {
	linked := map[string]bool{}
	for _, w := range tp.commit.OrchestratorItems {
		if start, ok := w.(provider.StartOrchestrationItem); ok && start.ParentInstance != nil && *start.ParentInstance == tp.id && !linked[start.Instance] {
			linked[start.Instance] = true
			tp.add(planAction{put: childLink(tp.id, start.Instance)})
		}
	}
	for i, w := range tp.commit.OrchestratorItems {
		data, err := provider.MarshalWorkItem(w)
		if err != nil {
			return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput, "encode orchestrator item %d: %v", i, err)
		}
		tp.digest.Write(data)
		visible := provider.TurnVisibleAt(w, timeMs(tp.now)).UnixMilli()
		row, sig, size := tp.p.orchestratorItem(w, data, visible)
		tp.add(planAction{put: row, limitSize: size})
		if isStart(w.Kind()) {
			tp.startsSent++
		}
		tp.plan.signals = append(tp.plan.signals, sig)
	}
	return nil
}

// release plans the released lock row, less consumed messages' attempts.
func (tp *turnPlanner) release() {
	attempts := maps.Clone(tp.turn.attempts)
	for _, sk := range tp.turn.batch {
		delete(attempts, sk)
	}
	tp.plan.release = attempts
	tp.plan.size += itemsize.ItemSize(lockItem(tp.id, tp.turn.ver+1, attempts))
}

// checkRowSizes fails the turn when a row it puts exceeds MaxItemBytes.
func (tp *turnPlanner) checkRowSizes() error {
	for _, a := range tp.plan.actions {
		if a.put == nil || a.eventID != 0 {
			continue // events were checked by history, each with its id
		}
		size := a.limitSize
		if size == 0 {
			size = itemsize.ItemSize(a.put)
		}
		if size > MaxItemBytes {
			return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput,
				"turn of instance %q writes a %d-byte row (%s); one row must fit one DynamoDB item (%d bytes)",
				tp.id, size, describeKey(a.put), MaxItemBytes)
		}
	}
	return nil
}

// execItem is an execution row.
func execItem(instance string, e *execRow) item {
	row := key(keys.InstancePK(instance), keys.ExecSK(e.id))
	row[attrStatus] = s(e.status)
	row[attrStartedAt] = n(e.startedAt)
	if e.output != nil {
		row[attrOutput] = s(*e.output)
	}
	if e.completedAt != nil {
		row[attrCompletedAt] = n(*e.completedAt)
	}
	if e.pinned != nil {
		row[attrPinned] = s(e.pinned.String())
	}
	return row
}

// metaItem is an instance's record, with a copy of current, its figures
// and its instances index keys. m.status must be current's status.
func metaItem(instance string, m *metaRow, current *execRow, shards int) item {
	row := key(keys.InstancePK(instance), keys.Meta)
	row[attrName] = s(m.name)
	row[attrVersion] = s(m.version)
	row[attrCurrent] = nu(m.current)
	if m.parent != "" {
		row[attrParent] = s(m.parent)
	}
	if m.cstat != nil {
		row[attrCStatus] = s(*m.cstat)
	}
	row[attrCStatusVer] = nu(m.cstatVersion)
	row[attrCreatedAt] = n(m.createdAt)
	row[attrUpdatedAt] = n(m.updatedAt)
	if current != nil {
		row[attrStatus] = s(current.status)
		if current.completedAt != nil {
			row[attrCompletedAt] = n(*current.completedAt)
		}
		row[attrExecStartedAt] = n(current.startedAt)
		if current.pinned != nil {
			row[attrExecPinned] = s(current.pinned.String())
		}
	}
	m.result.put(row)
	row[attrExecCount] = nu(m.execs)
	row[attrEndedEvs] = nu(m.events)
	m.run.put(row)
	row[attrListPK] = s(keys.ListInstancesPK(keys.ShardOf(instance, shards)))
	listSK := keys.ListInstancesSK(uint64(max(m.createdAt, 0)), instance)
	if ended(m.status) {
		listSK = keys.EndedListSK(listSK)
	}
	row[attrListSK] = s(listSK)
	return row
}

// childLink is the row that lists child under parent.
func childLink(parent, child string) item {
	link := key(keys.InstancePK(parent), keys.ChildSK(child))
	link[attrChild] = s(child)
	return link
}

func cloneExec(e *execRow) *execRow {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// workerItem is an activity's row, visible at nowMs, its signal, and its
// size with the payload uncompressed (setPayload).
func (p *Provider) workerItem(w provider.ActivityExecuteItem, data []byte, nowMs int64) (item, queues.Signal, int) {
	seq := p.nextSeq()
	shard := keys.ShardOf(keys.WorkerRoutingKey(w.Instance, w.SessionID), p.o.Shards)
	row := key(keys.WorkerPK(w.Instance), keys.WorkerSK(w.ExecutionID, w.ID))
	row[attrVisible] = n(nowMs)
	row[attrSeq] = s(seq)
	row[attrReadyPK] = s(keys.ReadyWorkerPK(shard))
	row[attrReadySK] = s(readySK(nowMs, seq))
	row[attrAttempts] = n(0)
	if w.SessionID != nil {
		row[attrSession] = s(*w.SessionID)
	}
	if w.Tag != nil {
		row[attrTag] = s(*w.Tag)
	}
	size := p.setPayload(row, data)
	return row, queues.Signal{Kind: queues.Worker, Shard: shard, Instance: w.Instance, Work: keys.WorkerSK(w.ExecutionID, w.ID)}, size
}

// orchestratorItem is a message's row, visible at visibleMs, its signal,
// and its size with the payload uncompressed (setPayload).
func (p *Provider) orchestratorItem(w provider.WorkItem, data []byte, visibleMs int64) (item, queues.Signal, int) {
	seq := p.nextSeq()
	target := w.TargetInstance()
	shard := keys.ShardOf(target, p.o.Shards)
	sk := keys.MessageSK(visibleMs, seq)
	row := key(keys.InstancePK(target), sk)
	row[attrKind] = s(w.Kind())
	row[attrVisible] = n(visibleMs)
	row[attrReadyPK] = s(keys.ReadyOrchestratorPK(shard))
	row[attrReadySK] = s(readySK(visibleMs, seq))
	if w.Kind() == provider.KindStartOrchestration {
		listPending(row, target, seq, p.o.Shards)
	}
	size := p.setPayload(row, data)
	// Named, so a turn holding the instance knows if it took it (heldSignal).
	return row, queues.Signal{Kind: queues.Orchestrator, Shard: shard, Instance: target, Work: sk, VisibleAt: timeMs(visibleMs)}, size
}

// listPending indexes a queued start by enqueue time, so its instance is
// listed as pending until a turn consumes it (docs/design.md §2; listings
// drop the entries of instances with a record: Provider.listEntries).
func listPending(row item, instance, seq string, shards int) {
	row[attrListPK] = s(keys.ListInstancesPK(keys.ShardOf(instance, shards)))
	row[attrListSK] = s(keys.ListInstancesSK(uint64(seqMs(seq)), instance))
	row[attrStatus] = s(provider.StatusPending)
}

// seqMs is the enqueue time (epoch ms) in queue sequence seq, or 0.
func seqMs(seq string) int64 {
	if len(seq) < 20 {
		return 0
	}
	us, err := keys.ParseNum20(seq[:20])
	if err != nil {
		return 0
	}
	return int64(us / 1000)
}

// notifyTimeout bounds the sending of the signals of one commit.
const notifyTimeout = 2 * time.Second

// notify sends signals after a client's commit and returns when SQS has
// them: the process may end then. Failures are logged (sweeps find work).
func (p *Provider) notify(ctx context.Context, signals []queues.Signal) {
	if len(signals) == 0 {
		return
	}
	// Beyond the caller's context, bounded against an SQS brown-out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	if err := p.signals.Notify(ctx, signals...); err != nil {
		p.o.Logger.Warn("dynamo: wake-up signals not sent; the work is committed and sweeps find it", "error", err)
	}
}

// post wakes this process's waiters after a dispatcher's commit and leaves
// SQS to the background (queues.Signals.Post); Close sends what is left.
// The signals of instances whose lock this process keeps stay in it.
func (p *Provider) post(signals []queues.Signal) {
	signals = p.keepKeptSignals(signals)
	if len(signals) == 0 {
		return
	}
	if err := p.signals.Post(signals...); err != nil {
		p.o.Logger.Warn("dynamo: wake-up signals not sent; the work is committed and sweeps find it", "error", err)
	}
}

// timeMs is the time of epoch milliseconds ms.
func timeMs(ms int64) time.Time { return time.UnixMilli(ms) }
