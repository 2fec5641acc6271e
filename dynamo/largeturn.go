package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
)

// The large-turn protocol (docs/design.md §5): a turn too big for one
// transaction is staged in its instance's partition, committed by one
// conditional write of the lock row, and applied in transactions that each
// consume one staging row, so every staged action is applied exactly once
// whoever applies it and however often that is retried.

const (
	// stageRowBytes bounds the actions one staging row holds.
	stageRowBytes = 300 * 1024
	// stageActions bounds the actions of one staging row, so that applying
	// it (plus checking the lock row and deleting the staging row) is one
	// transaction.
	stageActions = maxTransactActions - 2
	// stageTTL is how long an uncommitted staging row lives before TTL
	// removes it.
	stageTTL = 7 * 24 * time.Hour
	// batchWriteSize is the most requests one BatchWriteItem takes.
	batchWriteSize = 25
)

// Staged action map keys.
const (
	stagePut = "p"
	stageDel = "d"
)

// largeTurnID is the id of the large turn of lockToken: the same for every
// retry of one ack.
func largeTurnID(lockToken string) string {
	sum := sha256.Sum256([]byte(lockToken))
	return hex.EncodeToString(sum[:8])
}

// commitLargeTurn stages, commits and applies a turn that does not fit one
// transaction.
func (p *Provider) commitLargeTurn(ctx context.Context, turn *turnState, plan turnPlan) error {
	id := turn.st.id
	tid := largeTurnID(turn.token)
	if settled, err := p.largeTurnRetried(ctx, turn, tid); settled {
		return err
	}
	execID, err := p.checkLargeTurn(ctx, turn, plan)
	if err != nil {
		return err
	}

	// 1. Stage, all but the records the commit writes itself.
	records, staged := commitRecords(keys.InstancePK(id), plan.actions)
	chunks, err := p.stageTurn(ctx, id, tid, staged)
	if err != nil {
		return err
	}

	// 2. Commit: the fencing check, the pointer to the staged turn, the
	// records and the turn mark (publishing the turn to readers).
	cell, done := p.takeCell(plan.cell)
	defer done()
	commit := append(p.largeTurnCommit(turn, plan, tid, execID, records), cell...)
	if err := p.sendFresh(ackBudget(ctx), provider.OpAckOrchestrationItem, commit); err != nil {
		return p.largeCommitRefused(ctx, turn, tid, err)
	}

	// 3. Apply (the commit wrote the mark). Failures from here on leave a
	// committed turn that the next fetch of the instance finishes; the ack
	// reports them as retryable.
	if err := p.applyStaged(ctx, id, tid, chunks); err != nil {
		if errors.Is(err, errTurnGone) {
			return p.turnOutcome(ctx, id, tid)
		}
		return translate(provider.OpAckOrchestrationItem, err)
	}
	return translateNil(provider.OpAckOrchestrationItem, p.finishTurn(ctx, id, tid, execID, turn.attempts, turn.batch))
}

// largeTurnRetried reads the lock row before a large turn is staged, so
// that a retry after the commit finishes the committed turn instead of
// staging it again. settled reports that the ack's outcome is known (err,
// nil for a turn that is in); otherwise the lock is held and live.
func (p *Provider) largeTurnRetried(ctx context.Context, turn *turnState, tid string) (settled bool, err error) {
	id := turn.st.id
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(id), keys.Lock), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return true, translate(provider.OpAckOrchestrationItem, err)
	}
	lock, err := parseState(id, []item{out.Item})
	if err == nil && out.Item != nil && lock.lock.turnDone == tid {
		return true, nil // a retry of a turn someone finished meanwhile
	}
	if err != nil || out.Item == nil || lock.lock.token != turn.token {
		return true, invalidToken(provider.OpAckOrchestrationItem)
	}
	if lock.lock.turn == tid {
		return true, translateNil(provider.OpAckOrchestrationItem, p.rollForward(ctx, id, tid))
	}
	if !lock.lock.live(p.nowMs()) {
		return true, invalidToken(provider.OpAckOrchestrationItem)
	}
	return false, nil
}

// checkLargeTurn makes, under the lock, the checks that the staged writes
// cannot carry as conditions, and returns the execution the turn's history
// belongs to (0 when it writes none). History rows cannot be conditioned
// in batches: duplicates are checked now (only the lock holder appends to
// a turn's execution). Staged writes cannot be conditioned either
// (applying one twice must succeed): the rows the one-transaction ack
// conditions on are checked being as read.
func (p *Provider) checkLargeTurn(ctx context.Context, turn *turnState, plan turnPlan) (uint64, error) {
	var execID uint64
	for _, a := range plan.actions {
		if a.eventID == 0 {
			continue
		}
		sk, _, _ := strAttr(a.put, attrSK)
		execID, _, _ = keys.ParseHistorySK(sk)
	}
	if err := p.checkNewEvents(ctx, provider.OpAckOrchestrationItem, turn.st.id, execID, plan.actions); err != nil {
		return 0, err
	}
	if changed, err := p.changedSinceRead(ctx, turn); err != nil {
		return 0, translate(provider.OpAckOrchestrationItem, err)
	} else if changed {
		return 0, p.staleRead(ctx, turn)
	}
	return execID, nil
}

// stageTurn writes the staging rows of large turn tid of instance id, its
// actions in chunks of one apply transaction each, and returns the chunks.
// It fails before writing when a staging row exceeds the item limit.
func (p *Provider) stageTurn(ctx context.Context, id, tid string, actions []planAction) ([][]planAction, error) {
	chunks := chunkActions(actions)
	expires := p.o.Now().Add(stageTTL).Unix()
	stage := make([]item, len(chunks))
	for i, chunk := range chunks {
		row := key(keys.InstancePK(id), keys.StageSK(tid, i))
		row[attrActions] = encodeStaged(chunk)
		row[attrExpiresAt] = n(expires)
		if size := itemsize.ItemSize(row); size > dynamoItemLimit {
			// One row near the item limit, carried under a long key.
			return nil, provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrInvalidInput,
				"turn of instance %q is too large for one transaction and holds a %d-byte row (%s) that the staged protocol cannot carry (%d bytes with its staging key); make the row smaller",
				id, itemsize.ItemSize(chunk[0].put), describeKey(chunk[0].put), size)
		}
		stage[i] = row
	}
	if err := p.batchPut(ctx, stage); err != nil {
		return nil, translate(provider.OpAckOrchestrationItem, err)
	}
	return chunks, nil
}

// commitRecords splits the actions of a large turn into the rows its
// commit writes itself and the rest, which are staged: the puts of the
// instance record (first) and of execution records (small rows, at most
// one of each kind), and the writes of KV rows and child links when all of
// them fit the commit's transaction (commitKVActions, commitKVBytes).
// Readers of those rows alone (InstanceInfo, CustomStatus, ListExecutions,
// the latest execution, KVValue, ListChildren) then see the turn from its
// commit point on, with nothing to finish or overlay.
func commitRecords(pk string, actions []planAction) (records, staged []planAction) {
	staged = make([]planAction, 0, len(actions))
	var kv []planAction
	kvBytes := 0
	for _, a := range actions {
		target := a.put
		if target == nil {
			target = a.del
		}
		rowPK, _, _ := strAttr(target, attrPK)
		sk, _, _ := strAttr(target, attrSK)
		switch {
		case rowPK != pk:
			staged = append(staged, a)
		case a.put != nil && sk == keys.Meta:
			records = append([]planAction{a}, records...)
		case a.put != nil && strings.HasPrefix(sk, keys.ExecPrefix):
			records = append(records, a)
		case strings.HasPrefix(sk, keys.KVRowsPrefix), strings.HasPrefix(sk, keys.ChildPrefix), strings.HasPrefix(sk, keys.ChildHashedPrefix):
			kv = append(kv, a)
			kvBytes += itemsize.ItemSize(target)
		default:
			staged = append(staged, a)
		}
	}
	if len(kv) <= commitKVActions && kvBytes <= commitKVBytes {
		return append(records, kv...), staged
	}
	return records, append(staged, kv...)
}

// The KV and child-link writes a large turn's commit takes: besides them
// it holds at most five actions (lock row, instance and execution
// records, turn mark, counter cell) and two records of up to 400 KB each.
const (
	commitKVActions = maxTransactActions - 5
	commitKVBytes   = maxTransactBytes - 2*dynamoItemLimit - 64*1024
)

// largeTurnCommit is the commit transaction of large turn tid: the lock
// row's update, conditioned on the token and a live lease (the fencing
// check), that points to the staged turn. It goes in one transaction with
// the put of the instance record conditioned on the record being as the
// fetch read it (a check of that alone when the turn writes none: a prune
// that changed its figures before the commit fails the commit), the puts
// of the turn's execution records, the turn mark of execution execID
// (readers of the history meet it from the commit point on and overlay
// the staged rows, historyView), and the change of the counter cell, so
// that it is added once: a resend after a lost response carries the same
// ClientRequestToken.
func (p *Provider) largeTurnCommit(turn *turnState, plan turnPlan, tid string, execID uint64, records []planAction) []types.TransactWriteItem {
	pk := keys.InstancePK(turn.st.id)
	now := p.nowMs()
	set, remove := "SET #turn = :tid, #texec = :exec, #kvd = :kvd", ""
	names := map[string]string{
		"#turn": attrTurn, "#texec": attrTurnExec, "#tok": attrToken, "#until": attrLockUntil, "#ver": attrLockVer,
		"#kvd": attrKVDigest, "#hexec": attrHistExec, "#hlen": attrHistLen,
	}
	values := map[string]types.AttributeValue{
		":tid": s(tid), ":exec": nu(execID), ":tok": s(turn.token), ":now": n(now), ":one": n(1),
		":kvd": s(plan.kvDigest),
	}
	if e := plan.histEnd; e != nil {
		set += ", #hexec = :hexec, #hlen = :hlen"
		values[":hexec"], values[":hlen"] = nu(e.exec), nu(e.events)
	} else {
		remove = " REMOVE #hexec, #hlen"
	}
	commit := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 p.table,
			Key:                       key(pk, keys.Lock),
			UpdateExpression:          aws.String(set + " ADD #ver :one" + remove),
			ConditionExpression:       aws.String("#tok = :tok AND #until > :now AND attribute_not_exists(#turn)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}},
	}
	// The record's put or check is the second action: largeCommitRefused
	// reads a failure there as a stale read.
	if len(records) == 0 || records[0].asRead == nil {
		commit = append(commit, p.conditionCheck(key(pk, keys.Meta), metaAsRead(turn.st.meta)))
	}
	for _, a := range records {
		commit = append(commit, p.transactAction(a))
	}
	if execID != 0 {
		mark := key(pk, keys.TurnMarkSK(execID))
		mark[attrTurnID] = s(tid)
		commit = append(commit, types.TransactWriteItem{Put: &types.Put{TableName: p.table, Item: mark}})
	}
	return commit
}

// largeCommitRefused is the outcome of an ack whose large-turn commit
// failed with err. A refused fencing check may be an earlier attempt of
// this call having committed: the lock row tells, and a committed turn is
// finished. A changed instance record is a stale read.
func (p *Provider) largeCommitRefused(ctx context.Context, turn *turnState, tid string, err error) error {
	id := turn.st.id
	switch conditionFailedAt(cancelReasons(err)) {
	case 0:
		// An earlier attempt of this call may have committed.
		out, gerr := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(id), keys.Lock), ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return translate(provider.OpAckOrchestrationItem, gerr)
		}
		if pending, _, _ := strAttr(out.Item, attrTurn); pending == tid {
			return translateNil(provider.OpAckOrchestrationItem, p.rollForward(ctx, id, tid))
		}
		if done, _, _ := strAttr(out.Item, attrTurnDone); done == tid {
			return nil
		}
		return invalidToken(provider.OpAckOrchestrationItem)
	case 1:
		return p.staleRead(ctx, turn)
	}
	return translate(provider.OpAckOrchestrationItem, err)
}

// translateNil is translate that keeps nil.
func translateNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return translate(op, err)
}

// checkNewEvents fails with [provider.ErrDuplicateEvent] when an event
// that actions write is already stored.
func (p *Provider) checkNewEvents(ctx context.Context, op, instance string, executionID uint64, actions []planAction) error {
	stored, err := p.storedEvents(ctx, op, instance, executionID, actions, false)
	if err != nil {
		return err
	}
	for _, a := range actions {
		for id := a.eventID; a.eventID != 0 && id <= a.lastEventID; id++ {
			if _, ok := stored[id]; ok {
				return provider.Permanent(op, provider.ErrDuplicateEvent,
					"event_id %d already exists in execution %d of instance %s", id, executionID, instance)
			}
		}
	}
	return nil
}

// storedEvents reads which of the events that actions write execution
// executionID of instance already stores, with each one's JSON when
// withData is set: a Query of the row at or before the first id (a row
// holds events from its key's on) and one of the rest of the range they
// span.
func (p *Provider) storedEvents(ctx context.Context, op, instance string, executionID uint64, actions []planAction, withData bool) (map[uint64]string, error) {
	lo, hi := ^uint64(0), uint64(0)
	for _, a := range actions {
		if a.eventID != 0 {
			lo, hi = min(lo, a.eventID), max(hi, a.lastEventID)
		}
	}
	if lo > hi {
		return nil, nil
	}
	projection := []string{attrSK, attrEventCount}
	if withData {
		projection = append(projection, attrEvent, attrEvents)
	}
	pk, prefix := keys.InstancePK(instance), keys.HistoryPrefix(executionID)
	before, err := p.lastHistoryRow(ctx, pk, prefix, keys.HistorySK(executionID, lo), projection...)
	if err != nil {
		return nil, translate(op, err)
	}
	rows, err := p.queryPartition(ctx, pk, keys.HistorySK(executionID, lo)+"\x00", keys.HistorySK(executionID, hi)+"\x00", projection...)
	if err != nil {
		return nil, translate(op, err)
	}
	if before != nil {
		rows = append([]item{before}, rows...)
	}
	stored := make(map[uint64]string, len(rows))
	for _, row := range rows {
		first, err := rowFirstEvent(row)
		if err != nil {
			continue
		}
		if !withData {
			for i := range rowEventCount(row) {
				stored[first+i] = ""
			}
			continue
		}
		events, err := rowEvents(row)
		if err != nil {
			return nil, provider.Corrupt(op, err, "history of instance %q execution %d: %v", instance, executionID, err)
		}
		for i, data := range events {
			stored[first+uint64(i)] = data
		}
	}
	return stored, nil
}

// changedSinceRead reports whether a row a turn's ack conditions on being
// as read (see staleRead) changed since its fetch: a message of the batch
// is gone (one Query of the keys of the range they span), or the instance
// record is not the one read (one GetItem).
func (p *Provider) changedSinceRead(ctx context.Context, turn *turnState) (bool, error) {
	pk := keys.InstancePK(turn.st.id)
	if len(turn.batch) > 0 {
		first, last := slices.Min(turn.batch), slices.Max(turn.batch)
		rows, err := p.queryPartition(ctx, pk, first, last+"\x00", attrSK)
		if err != nil {
			return false, err
		}
		present := make(map[string]bool, len(rows))
		for _, row := range rows {
			sk, _, _ := strAttr(row, attrSK)
			present[sk] = true
		}
		for _, sk := range turn.batch {
			if !present[sk] {
				return true, nil
			}
		}
	}
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(pk, keys.Meta), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, err
	}
	read := turn.st.meta
	if out.Item == nil || read == nil {
		return (out.Item == nil) != (read == nil), nil
	}
	now, err := parseState(turn.st.id, []item{out.Item})
	if err != nil {
		return false, err
	}
	return !sameRecord(now.meta, read), nil
}

// chunkActions splits actions into staging rows. The first row takes one
// action fewer: its apply also writes the turn mark.
func chunkActions(actions []planAction) [][]planAction {
	var chunks [][]planAction
	var cur []planAction
	size := 0
	for _, a := range actions {
		as := 64
		if a.put != nil {
			as += itemsize.ItemSize(a.put)
		}
		limit := stageActions
		if len(chunks) == 0 {
			limit--
		}
		if len(cur) > 0 && (len(cur) >= limit || size+as > stageRowBytes) {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, a)
		size += as
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// encodeStaged stores actions as a DynamoDB list.
func encodeStaged(actions []planAction) types.AttributeValue {
	l := make([]types.AttributeValue, len(actions))
	for i, a := range actions {
		var m map[string]types.AttributeValue
		switch {
		case a.del != nil:
			m = map[string]types.AttributeValue{stageDel: &types.AttributeValueMemberM{Value: a.del}}
		default:
			m = map[string]types.AttributeValue{stagePut: &types.AttributeValueMemberM{Value: a.put}}
		}
		l[i] = &types.AttributeValueMemberM{Value: m}
	}
	return &types.AttributeValueMemberL{Value: l}
}

// decodeStaged reads a staging row's actions.
func decodeStaged(row item) ([]planAction, error) {
	l, ok := row[attrActions].(*types.AttributeValueMemberL)
	if !ok {
		return nil, fmt.Errorf("%w: staging row %s has no action list", provider.ErrCorruptData, describeKey(row))
	}
	out := make([]planAction, 0, len(l.Value))
	for _, v := range l.Value {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("%w: staging row %s holds %T", provider.ErrCorruptData, describeKey(row), v)
		}
		switch {
		case m.Value[stagePut] != nil:
			put, ok := m.Value[stagePut].(*types.AttributeValueMemberM)
			if !ok {
				return nil, fmt.Errorf("%w: staged put of %s", provider.ErrCorruptData, describeKey(row))
			}
			out = append(out, planAction{put: put.Value})
		case m.Value[stageDel] != nil:
			del, ok := m.Value[stageDel].(*types.AttributeValueMemberM)
			if !ok {
				return nil, fmt.Errorf("%w: staged delete of %s", provider.ErrCorruptData, describeKey(row))
			}
			out = append(out, planAction{del: del.Value})
		default:
			return nil, fmt.Errorf("%w: staged action of %s", provider.ErrCorruptData, describeKey(row))
		}
	}
	return out, nil
}

// applyStaged applies every staging row of turn tid, whose commit wrote
// the turn mark (see applyOne).
func (p *Provider) applyStaged(ctx context.Context, instance, tid string, chunks [][]planAction) error {
	pk := keys.InstancePK(instance)
	for i, chunk := range chunks {
		if err := p.applyOne(ctx, pk, tid, 0, i, chunk); err != nil {
			return err
		}
	}
	return nil
}

// rollForward finishes large turn tid of instance if it is still pending:
// applies the staging rows that remain, then finishes it. Only holders and
// takers of the lock call it (fetches, acks, abandons): readers overlay
// the staging rows instead, and write nothing (historyView). The first
// row's apply writes the turn mark again, for a turn whose commit did not
// (one committed by an earlier release).
func (p *Provider) rollForward(ctx context.Context, instance, tid string) error {
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return err
	}
	if st.lock.turn != tid {
		return nil // finished meanwhile
	}
	prefix := keys.StagePrefixOf(tid)
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), prefix, prefixEnd(prefix))
	if err != nil {
		return err
	}
	pk := keys.InstancePK(instance)
	for _, row := range rows {
		sk, _, _ := strAttr(row, attrSK)
		idx, err := keys.ParseNum20(sk[len(prefix):])
		if err != nil {
			return fmt.Errorf("%w: staging row %s: %v", provider.ErrCorruptData, describeKey(row), err)
		}
		actions, err := decodeStaged(row)
		if err != nil {
			return err
		}
		if err := p.applyOne(ctx, pk, tid, st.lock.turnExec, int(idx), actions); err != nil {
			if errors.Is(err, errTurnGone) {
				return nil // finished by someone else, or the instance was deleted
			}
			return err
		}
	}
	return p.finishTurn(ctx, instance, tid, st.lock.turnExec, st.lock.attempts, st.lock.batch)
}

// errTurnGone is what applyOne reports when the lock row no longer holds
// the turn: someone finished it, or the instance was deleted.
var errTurnGone = errors.New("large turn is no longer pending")

// Retries of an apply transaction that conflicted with another writer (a
// reader rolling the same turn forward, a concurrent fetch of the
// instance's lock row).
const (
	applyAttempts     = 8
	applyFirstBackoff = 20 * time.Millisecond
)

// applyOne applies staging row idx of turn tid in one transaction that
// also deletes the row, conditioned on it existing (a row someone else
// applied already is skipped, so each action is applied exactly once) and
// on the lock row still holding the turn (so that nothing is applied to an
// instance deleted meanwhile). History puts do not overwrite an event that
// exists. With execID set, the first row's transaction also writes the
// turn mark into execution execID's history range (rows are applied in
// order, so no row of the turn is visible before its mark), which
// finishTurn removes; a commit of this release wrote it already.
// Transient cancellations are retried here.
func (p *Provider) applyOne(ctx context.Context, pk, tid string, execID uint64, idx int, actions []planAction) error {
	tx := make([]types.TransactWriteItem, 0, len(actions)+2)
	tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 p.table,
		Key:                       key(pk, keys.Lock),
		ConditionExpression:       aws.String("#turn = :tid"),
		ExpressionAttributeNames:  map[string]string{"#turn": attrTurn},
		ExpressionAttributeValues: map[string]types.AttributeValue{":tid": s(tid)},
	}})
	for _, a := range actions {
		if sk, _, _ := strAttr(a.put, attrSK); a.put != nil && isHistorySK(sk) {
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{
				TableName:                p.table,
				Item:                     a.put,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": attrPK},
			}})
			continue
		}
		a.eventID = 0 // duplicates were checked before staging
		tx = append(tx, p.transactAction(a))
	}
	if idx == 0 && execID != 0 {
		mark := key(pk, keys.TurnMarkSK(execID))
		mark[attrTurnID] = s(tid)
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: p.table, Item: mark}})
	}
	tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{
		TableName:                p.table,
		Key:                      key(pk, keys.StageSK(tid, idx)),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}})
	backoff := applyFirstBackoff
	for attempt := 1; ; attempt++ {
		_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
		if err == nil {
			return nil
		}
		reasons := cancelReasons(err)
		switch i := conditionFailedAt(reasons); {
		case len(reasons) == len(tx) && reasons[len(reasons)-1] == "ConditionalCheckFailed":
			return nil // applied already
		case i == 0:
			return errTurnGone
		case i > 0:
			return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrDuplicateEvent,
				"staged row %s of large turn %s would overwrite a row of another turn", describeKey(actions[i-1].put), tid)
		}
		if !translate(provider.OpAckOrchestrationItem, err).Retryable || attempt == applyAttempts {
			return err
		}
		if err := sleepCtx(ctx, jitter(backoff)); err != nil {
			return err
		}
		backoff *= 2
	}
}

// finishTurn releases the lock, recording the turn as done, and removes
// the turn mark from execution executionID's history, in one transaction
// conditioned on the lock row still holding the turn. It writes no
// history row: one a delete or prune removed meanwhile stays removed.
func (p *Provider) finishTurn(ctx context.Context, instance, tid string, executionID uint64, attempts map[string]uint32, batch []string) error {
	remaining := maps.Clone(attempts)
	for _, sk := range batch {
		delete(remaining, sk)
	}
	u := newLockRelease(remaining, tid, "").update(p.table, instance, "#turn = :tid",
		map[string]string{"#turn": attrTurn}, map[string]types.AttributeValue{":tid": s(tid)})
	actions := []types.TransactWriteItem{{Update: u}}
	if executionID != 0 {
		actions = append(actions, deleteAction(p.table, key(keys.InstancePK(instance), keys.TurnMarkSK(executionID))))
	}
	// Readers that roll the turn forward may finish it at the same moment:
	// a conflict is resent, and then meets the finished turn.
	if err := p.sendFresh(ctx, provider.OpAckOrchestrationItem, actions); err != nil {
		if conditionFailedAt(cancelReasons(err)) != 0 {
			return err
		}
		if err := p.turnOutcome(ctx, instance, tid); err != nil {
			return err
		}
	}
	p.hints.unlocked(instance)
	return nil
}

// turnOutcome decides, when the lock row no longer holds large turn tid,
// whether it finished (nil) or was cut short ([provider.ErrInvalidLockToken]:
// the instance was deleted while it was applied).
func (p *Provider) turnOutcome(ctx context.Context, instance, tid string) error {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(keys.InstancePK(instance), keys.Lock), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return translate(provider.OpAckOrchestrationItem, err)
	}
	if done, _, _ := strAttr(out.Item, attrTurnDone); done == tid {
		return nil
	}
	p.o.Logger.Warn("dynamo: large turn cut short: the lock row no longer holds it (instance deleted?)", "instance", instance, "turn", tid)
	return invalidToken(provider.OpAckOrchestrationItem)
}

// batchPut writes rows with BatchWriteItem, 25 at a time, resending
// unprocessed ones with backoff.
func (p *Provider) batchPut(ctx context.Context, rows []item) error {
	reqs := make([]types.WriteRequest, len(rows))
	for i, row := range rows {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: row}}
	}
	return p.batchWrite(ctx, reqs)
}

// batchWrite runs write requests with BatchWriteItem.
func (p *Provider) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		batch := reqs[:min(len(reqs), batchWriteSize)]
		reqs = reqs[len(batch):]
		backoff := 20 * time.Millisecond
		for attempt := 0; len(batch) > 0; attempt++ {
			out, err := p.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{*p.table: batch},
			})
			if err != nil {
				return err
			}
			batch = out.UnprocessedItems[*p.table]
			if len(batch) == 0 {
				break
			}
			if attempt >= 8 {
				return provider.Retryable("batch_write", nil, "%d writes still unprocessed after %d attempts", len(batch), attempt+1)
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return ctx.Err()
			}
			backoff *= 2
		}
	}
	return nil
}
