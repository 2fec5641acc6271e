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
	// maxTransactBytes is the aggregate size one TransactWriteItems takes
	// (4 MB), with room for request overhead.
	maxTransactBytes = 4_000_000
	// MaxItemBytes is the largest row the provider stores: DynamoDB's
	// 400 KB item limit less 1 KB, the room a staging row of the
	// large-turn protocol needs around a row it carries. One history event,
	// one queued work item, with keys, must fit in it. Rows are measured
	// with itemsize.ItemSize, the size DynamoDB itself applies, so the 1 KB
	// is room for the staging row only, not for an error in the measure.
	MaxItemBytes = 399 * 1024
	// dynamoItemLimit is DynamoDB's item size limit, to which
	// itemsize.ItemSize is compared exactly.
	dynamoItemLimit = 400 * 1024
)

// planAction is one write of a turn: a Put of a whole item or a Delete.
type planAction struct {
	put item
	del item
	// eventID and lastEventID are set on history puts, which must not
	// overwrite: the ids of the first and last events of the row.
	eventID, lastEventID uint64
	// asRead, when set, conditions the write on the row being as the
	// fetch read it (staleRead): the deletes of the consumed messages, the
	// put of the instance record.
	asRead *rowCondition
	// limitSize, when set, is the size the item limit applies to: a queue
	// row's with its payload uncompressed (Provider.setPayload).
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

// metaAsRead conditions a put of the instance record on the record being
// the one the fetch read (m; nil when it read none): its update time,
// custom status version and current execution, and its status and figures
// (figuresAsRead), from which the turn computes its change of the counter
// cells. Acks write it, each with a new update time; prunes and appends
// change its figures.
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

// sameRecord reports whether now, a record read again, is still read: the
// fields metaAsRead conditions on are equal.
func sameRecord(now, read *metaRow) bool {
	if now == nil || read == nil {
		return now == read
	}
	return now.updatedAt == read.updatedAt && now.cstatVersion == read.cstatVersion && now.current == read.current &&
		now.status == read.status && now.execs == read.execs && now.events == read.events
}

// turnPlan is every write of one turn except the lock release, and the
// signals to send once it is committed.
type turnPlan struct {
	actions []planAction
	// release holds the attempt counts the lock row keeps after the turn.
	release map[string]uint32
	signals []queues.Signal
	size    int
	// history holds the history rows the turn writes, in event order.
	history []item
	// meta is the instance record when the turn does not write it (it
	// holds nothing new): a large turn writes it all the same, since its
	// release does not record the ack's time.
	meta planAction
	// kvDigest digests the KV state the turn leaves (kvDigest).
	kvDigest string
	// histEnd is where the turn leaves the history
	// (Provider.settledHistory; nil when unknown).
	histEnd *historyEnd
	// cell is the change of the instance's contribution to the counter
	// cells (change), zero when the turn leaves it as it was. It is added
	// to a cell in the transaction that writes the instance record, or in
	// the commit of a large turn (Provider.takeCell).
	cell figures
	// claimable is the activity a direct claim may take
	// (Provider.claimAddressed), which the turn may hand to a waiting fetch
	// instead (Provider.handActivity).
	claimable *claimableActivity
}

// claimableActivity names a turn's claimable activity: its put among the
// plan's actions and its signal among the plan's signals.
type claimableActivity struct {
	action, signal int
	item           provider.ActivityExecuteItem
}

// AckOrchestrationItem commits a turn atomically and releases the lock.
// An unknown, released or expired lock, or a deleted instance, fails with
// [provider.ErrInvalidLockToken]; an event id already stored fails with
// [provider.ErrDuplicateEvent]; an event too large for one item (see
// [MaxItemBytes]) fails with [provider.ErrInvalidInput]. A failed ack
// writes nothing and keeps the lock.
//
// Requests: one TransactWriteItems when the turn fits one transaction (100
// actions, 4 MB) and this process fetched it; plus one Query of the control
// rows when another process did, and one of the KV rows when the turn
// writes KV or ends the execution and this process does not hold the KV
// state the lock row names, unless that state is empty (turnKV). Larger turns use the staged protocol of
// docs/design.md §5. A retry of an ack whose response was lost resends the
// same transaction with the same ClientRequestToken and succeeds without
// applying twice. An ack after this process has returned success for the
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

// validateAck checks a commit before anything is read: the turn itself,
// and the ids of the instances and sessions its work items name.
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

// uncachedTurn rebuilds the turn of an ack this process holds no turn for
// (another process fetched it, or this one forgot it) from the control
// rows. settled reports that the ack's outcome is known without planning
// it: a retry of a commit that is in (err nil), or a lock not held.
func (p *Provider) uncachedTurn(ctx context.Context, instance, lockToken string, commit provider.TurnCommit) (turn *turnState, settled bool, err error) {
	if p.turns.wasAcked(lockToken) {
		// This process returned this turn's ack already: another call
		// is a second ack, even of the same commit. (A retry of an ack
		// whose outcome was unknown finds the turn still cached, or,
		// from another process, learns below that its commit is in.)
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
	if st.lock.turn != "" {
		// This token's large turn is committed: a retried ack finishes it.
		if err := p.rollForward(ctx, instance, st.lock.turn); err != nil {
			return nil, true, translate(provider.OpAckOrchestrationItem, err)
		}
		return nil, true, nil
	}
	return &turnState{token: lockToken, st: st, ver: st.lock.ver, batch: st.lock.batch, attempts: st.lock.attempts}, false, nil
}

// sendTurn commits a planned turn: in one transaction when it fits one,
// with the lock release and the cell change beside the plan's actions,
// handing its claimable activity to a waiting fetch; else by the staged
// protocol, which also writes the instance record the plan kept aside.
// large reports which.
func (p *Provider) sendTurn(ctx context.Context, turn *turnState, plan *turnPlan, digest string, now int64) (large bool, err error) {
	// The lock release, and the cell change if any, go beside the plan's
	// actions.
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
	hand := p.handActivity(plan, now)
	return false, p.commitTurn(ctx, turn, *plan, hand, digest, now)
}

// turnAcked updates what this process keeps of a turn it committed (the
// turn cache, hints, cached history, lock waits) and posts the turn's
// signals.
func (p *Provider) turnAcked(turn *turnState, lockToken string, commit provider.TurnCommit, plan turnPlan, digest string, large bool, now int64) {
	turn.done = true
	p.turns.ackedTurn(lockToken)
	p.hints.unlocked(turn.st.id)
	// The messages the turn consumed are gone; a lagging ready index shows
	// them a while longer, and sweeps pass over them (ackedWorkMs).
	for _, sk := range turn.batch {
		p.hints.heldWork(messageRowKeyOf(turn.st.id, sk), "", now+ackedWorkMs)
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

// smallTurnID is what the release of a turn that fits one transaction
// records as the last finished turn: it names the lock token and the
// commit, so that a retry of that ack from a process that did not make it
// (nothing cached) learns it is in, while another commit for the same
// token does not pass for it.
func smallTurnID(lockToken, digest string) string {
	sum := sha256.Sum256([]byte(lockToken + "\x00" + digest))
	return hex.EncodeToString(sum[:8])
}

// smallTurnDone returns the smallTurnID of commit acked with lockToken,
// planned on st, or "" when it cannot be planned.
func (p *Provider) smallTurnDone(st *instanceState, lockToken string, commit provider.TurnCommit) string {
	_, digest, err := p.planTurn(&turnState{token: lockToken, st: st}, commit, p.nowMs())
	if err != nil {
		return ""
	}
	return smallTurnID(lockToken, digest)
}

// invalidToken is the error of an ack, renewal or abandon whose lock is not
// held.
func invalidToken(op string) error {
	return provider.Permanent(op, provider.ErrInvalidLockToken, "Invalid lock token: the lock expired, was released, or its instance was deleted")
}

// commitTurn sends a turn that fits one TransactWriteItems. The lock
// release comes first, conditioned on the token and a live lease (the
// fencing check).
func (p *Provider) commitTurn(ctx context.Context, turn *turnState, plan turnPlan, hand *handedRow, digest string, now int64) error {
	if turn.tx == nil || turn.tx.key != turn.token+"\x00"+digest {
		turn.tx = &pendingTx{key: turn.token + "\x00" + digest}
		turn.txHanded = nil
	}
	cell, done := p.takeCell(plan.cell)
	defer done()
	_, err := p.sendPending(ackBudget(ctx), provider.OpAckOrchestrationItem, turn.tx, func() *dynamodb.TransactWriteItemsInput {
		turn.txHanded = hand
		actions := make([]types.TransactWriteItem, 0, len(plan.actions)+1)
		actions = append(actions, types.TransactWriteItem{Update: newLockRelease(plan.release, "", smallTurnID(turn.token, digest)).withSmallPast(turn.st.lock).acked(now).withKV(plan.kvDigest).withHistoryEnd(plan.histEnd).update(p.table, turn.st.id,
			"#tok = :tok AND #until > :now AND attribute_not_exists(#turn)",
			map[string]string{"#tok": attrToken, "#until": attrLockUntil, "#turn": attrTurn},
			map[string]types.AttributeValue{":tok": s(turn.token), ":now": n(now)})})
		for _, a := range plan.actions {
			actions = append(actions, p.transactAction(a))
		}
		actions = append(actions, cell...)
		return &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	})
	p.settleHanded(ctx, hand, turn.txHanded, err == nil)
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

// staleRead refuses the ack of a turn planned on rows that an earlier turn
// had changed before this turn's lock was taken. A Query is read-committed
// across items: one that runs while a turn commits can see the turn's lock
// release and not yet its other writes (the deletes of the messages it
// consumed, its instance record), and a fetch that read so locks the
// instance on rows that are no longer there. Only a lock holder writes
// them, so a row that differs under the lock from what the fetch read
// changed before the lock was taken. staleRead releases the instance at
// once, without counting an attempt (the messages are not at fault), and
// reports the lock as lost: the next fetch reads the rows as they are.
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

// planTurn computes every write of a turn from the instance state the fetch
// read and the commit, and a digest of the commit. It fails, with nothing
// written, on events that cannot be stored.
func (p *Provider) planTurn(turn *turnState, commit provider.TurnCommit, now int64) (turnPlan, string, error) {
	tp := &turnPlanner{p: p, turn: turn, st: turn.st, commit: commit, now: now,
		id: turn.st.id, pk: keys.InstancePK(turn.st.id), digest: sha256.New()}
	fmt.Fprintf(tp.digest, "%d\x00", commit.ExecutionID)
	// History, checked first: an event that cannot be stored fails the
	// turn before anything is planned.
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

// turnPlanner builds the plan of one turn part by part. planTurn calls its
// methods in the order the turn's writes go out, and each one appends its
// writes to the plan and its part of the commit to the digest, so that the
// requests and the digest depend on that order alone.
type turnPlanner struct {
	p      *Provider
	turn   *turnState
	st     *instanceState
	commit provider.TurnCommit
	now    int64
	id, pk string
	plan   turnPlan
	digest hash.Hash
	// startsTaken and startsSent count the start messages the turn
	// consumes and queues, which change the cells' pending figure.
	startsTaken, startsSent int
}

// add appends a to the plan and counts its size towards the transaction's
// (a delete as 200 bytes).
func (tp *turnPlanner) add(a planAction) {
	tp.plan.actions = append(tp.plan.actions, a)
	if a.put != nil {
		tp.plan.size += itemsize.ItemSize(a.put)
	} else {
		tp.plan.size += 200
	}
}

// history plans the history rows of the turn's events, and where the turn
// leaves the history. It fails before any other part is planned on an
// event that cannot be stored or is stored already.
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

// consumed plans the deletes of the messages the turn consumed, each
// conditioned on the row the fetch read (Provider.staleRead).
func (tp *turnPlanner) consumed() {
	starts := map[string]bool{}
	for _, m := range tp.st.msgs {
		starts[m.sk] = isStart(m.kind)
	}
	for _, sk := range tp.turn.batch {
		tp.add(planAction{del: key(tp.pk, sk), asRead: rowExists})
		if starts[sk] {
			tp.startsTaken++
		}
	}
}

// execution digests the commit's metadata and plans the record of the
// turn's execution, written when the turn creates it or changes its
// pinned version or status. It returns the record as the turn leaves it,
// and whether the turn writes it.
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

// instance plans the instance record, exec being the turn's execution
// record as the turn leaves it. The record holds the custom status (up to
// 256 KB), so it is written only when what it holds changes (the time of
// each ack goes on the lock row); otherwise plan.meta keeps it for a large
// turn. A record the turn creates for a child also gets its link to the
// parent.
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
		// A put of its own item: children created at once do not
		// contend for one row of their parent.
		tp.add(planAction{put: childLink(newMeta.parent, tp.id)})
	}
}

// figures sets the status and figures of newMeta, the instance record the
// turn writes (contribution), from current, the record of the instance's
// current execution, and exec, the turn's: figuresAsRead makes the turn
// fail when another writer changed them since the fetch.
func (tp *turnPlanner) figures(newMeta *metaRow, current, exec *execRow, created bool) {
	newMeta.status = ""
	if current != nil {
		newMeta.status = current.status
	}
	before := tp.st.execs[tp.commit.ExecutionID]
	if created {
		// Turns acked without a name write execution records and no
		// instance record (no runtime sends them): count those.
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

// kv plans the KV rows (Provider.planKV) and the digest of the KV state
// the turn leaves, which its release records (kvDigest).
func (tp *turnPlanner) kv() error {
	actions, digest, err := tp.p.planKV(tp.pk, tp.st, tp.commit)
	for _, a := range actions {
		tp.add(a)
	}
	tp.plan.kvDigest = digest
	return err
}

// workerItems plans the worker rows of the turn's activities, minus those
// cancelled in the same turn, and then the deletes of the cancelled ones.
// The turn's first activity may be claimable (Provider.claimAddressed).
func (tp *turnPlanner) workerItems() error {
	commit := tp.commit
	cancelled := map[provider.ScheduledActivityIdentifier]bool{}
	for _, c := range commit.CancelledActivities {
		cancelled[c] = true
	}
	// The last of two items with one identity wins (DynamoDB takes one
	// action per item); rows are written in the turn's order.
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
			// No older activity of the instance can be queued: its
			// fetcher may claim the row at once (Provider.claimAddressed).
			sig.Claim, _, _ = strAttr(row, attrReadySK)
			tp.plan.claimable = &claimableActivity{action: len(tp.plan.actions), signal: len(tp.plan.signals), item: w}
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
		tp.add(planAction{del: key(keys.WorkerPK(c.Instance), keys.WorkerSK(c.ExecutionID, c.ActivityID))})
	}
	return nil
}

// mergeSignals thins the signals of a turn that schedules many
// activities: the first of each shard and instance is announced by its
// row, the rest by their shard, so that signals that are alike merge into
// one and the receiver finds them in the index. It runs before the
// orchestrator items are planned, whose signals it leaves alone.
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

// orchestratorItems plans the queue rows of the turn's messages, for any
// instance. A child this turn starts is linked to this instance at once,
// in this instance's partition: from this commit on, the tree includes it
// (deleting the tree deletes its queued start), and a delete that read the
// tree before fails on this turn's lock version (Provider.deleteInstances).
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

// release plans the lock row after the turn: released, without the
// consumed messages' attempt counts. Its size counts towards the
// transaction's.
func (tp *turnPlanner) release() {
	attempts := maps.Clone(tp.turn.attempts)
	for _, sk := range tp.turn.batch {
		delete(attempts, sk)
	}
	tp.plan.release = attempts
	tp.plan.size += itemsize.ItemSize(lockItem(tp.id, tp.turn.ver+1, attempts))
}

// checkRowSizes fails the turn, before anything is written, when a row it
// puts exceeds MaxItemBytes. History rows are left out: encodeEvents
// checked their events one by one, so that the error names the event.
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

// metaItem is an instance's metadata row, with the status and completion
// time of its current execution copied for the instances index, and its
// figures (contribution). m.status must be current's status.
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

// workerItem is the worker row of an activity visible at nowMs, the
// signal that announces it, and the row's size with its payload stored
// uncompressed, which the limits apply to (Provider.setPayload).
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

// orchestratorItem is the queue row of a message visible at visibleMs, the
// signal that announces it, and the row's size with its payload stored
// uncompressed, which the limits apply to (Provider.setPayload).
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
	// The signal names the row, so that a turn of this process holding the
	// instance can tell whether it took the message (lockWaits.heldSignal).
	return row, queues.Signal{Kind: queues.Orchestrator, Shard: shard, Instance: target, Work: sk, VisibleAt: timeMs(visibleMs)}, size
}

// listPending gives the queued start row of instance an entry in the
// instances index, so that the instance is listed as pending
// (provider.StatusPending) until its first turn consumes the row, in the
// transaction that writes its instance record. The entry sorts by the
// start's enqueue time. A start sent to an instance that has a record is
// listed too until a turn consumes it; the listings drop such entries
// (Provider.listEntries).
func listPending(row item, instance, seq string, shards int) {
	row[attrListPK] = s(keys.ListInstancesPK(keys.ShardOf(instance, shards)))
	row[attrListSK] = s(keys.ListInstancesSK(uint64(seqMs(seq)), instance))
	row[attrStatus] = s(provider.StatusPending)
}

// seqMs is the enqueue time, in epoch milliseconds, of the message whose
// queue sequence is seq (nextSeq); 0 when seq does not start with one.
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

// notify sends signals after a commit and returns when SQS has them;
// failures are logged, never returned (the work is committed, and sweeps
// find it). For the writes of clients (starts, events, enqueued
// activities), whose process may end as soon as the call returns.
func (p *Provider) notify(ctx context.Context, signals []queues.Signal) {
	if len(signals) == 0 {
		return
	}
	// After the commit, whatever the caller's context does; but bounded, so
	// that an SQS brown-out does not hold the dispatcher that committed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	if err := p.signals.Notify(ctx, signals...); err != nil {
		p.o.Logger.Warn("dynamo: wake-up signals not sent; the work is committed and sweeps find it", "error", err)
	}
}

// post wakes this process's waiters of signals after a commit and leaves
// their sending to SQS to the background (queues.Signals.Post): for the
// commits of dispatchers (acks, abandons), which go on to their next fetch
// instead of waiting for a request whose only use is to wake other
// processes. Close sends what is left.
func (p *Provider) post(signals []queues.Signal) {
	if len(signals) == 0 {
		return
	}
	if err := p.signals.Post(signals...); err != nil {
		p.o.Logger.Warn("dynamo: wake-up signals not sent; the work is committed and sweeps find it", "error", err)
	}
}

// timeMs is the time of epoch milliseconds ms.
func timeMs(ms int64) time.Time { return time.UnixMilli(ms) }
