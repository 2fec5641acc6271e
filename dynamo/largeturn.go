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

// The large-turn protocol (docs/design.md §5): stage, commit by one fenced
// write of the lock row, apply each staging row once, whoever applies it.

const (
	// stageRowBytes bounds the actions one staging row holds.
	stageRowBytes = 300 * 1024
	// stageActions leaves room in an apply transaction for the lock check
	// and the staging row's delete.
	stageActions = maxTransactActions - 2
	// stageTTL is how long an uncommitted staging row lives.
	stageTTL = 7 * 24 * time.Hour
	// batchWriteSize is the most requests one BatchWriteItem takes.
	batchWriteSize = 25
)

// Staged action map keys.
const (
	stagePut = "p"
	stageDel = "d"
)

// largeTurnID is lockToken's large turn id, the same for every retry.
func largeTurnID(lockToken string) string {
	sum := sha256.Sum256([]byte(lockToken))
	return hex.EncodeToString(sum[:8])
}

// commitLargeTurn stages, commits and applies a turn beyond one transaction.
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

	// 2. Commit: fencing check, turn pointer, records, turn mark.
	cell, done := p.takeCell(plan.cell)
	defer done()
	commit := append(p.largeTurnCommit(turn, plan, tid, execID, records), cell...)
	if err := p.sendFresh(ackBudget(ctx), provider.OpAckOrchestrationItem, commit); err != nil {
		return p.largeCommitRefused(ctx, turn, tid, err)
	}

	// 3. Apply, the last row with the release. A failure leaves a committed
	// turn the next fetch finishes.
	release := p.releaseActions(id, tid, execID, turn.attempts, turn.batch)
	if err := p.applyStaged(ctx, id, tid, chunks, release); err != nil {
		if errors.Is(err, errTurnGone) {
			return p.turnOutcome(ctx, id, tid)
		}
		return translate(provider.OpAckOrchestrationItem, err)
	}
	p.hints.unlocked(id)
	return nil
}

// largeTurnRetried reads the lock row before staging, so that a retry
// after the commit finishes the turn instead of staging it again. settled
// reports that err is the outcome (nil: in); else the lock is held and live.
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

// checkLargeTurn checks under the lock what staged writes cannot carry as
// conditions (duplicate events; rows as read, see staleRead) and returns
// the history's execution (0: none).
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

// stageTurn writes turn tid's staging rows, one apply transaction each,
// and returns them; it fails before writing when one exceeds the item limit.
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

// commitRecords splits a large turn's actions into those its commit writes
// (instance record first, execution records, KV rows and child links if all
// fit), which readers then see from the commit on, and those staged. The
// deletes of the consumed messages are staged last: until the last row is
// applied they keep the instance in the ready index, where a sweep finds
// it and a fetch finishes the turn of a committer that died.
func commitRecords(pk string, actions []planAction) (records, staged []planAction) {
	staged = make([]planAction, 0, len(actions))
	var kv, consumed []planAction
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
		case a.del != nil && strings.HasPrefix(sk, keys.QueuePrefix):
			consumed = append(consumed, a)
		default:
			staged = append(staged, a)
		}
	}
	if len(kv) <= commitKVActions && kvBytes <= commitKVBytes {
		return append(records, kv...), append(staged, consumed...)
	}
	return records, append(append(staged, kv...), consumed...)
}

// A large turn's commit holds the KV and child-link writes beside at most
// five actions (lock, records, mark, cell) and two 400 KB records.
const (
	commitKVActions = maxTransactActions - 5
	commitKVBytes   = maxTransactBytes - 2*dynamoItemLimit - 64*1024
)

// largeTurnCommit is turn tid's commit: the lock row's pointer to the turn,
// fenced by token and live lease; the instance record's put or check as
// read (a prune meanwhile fails it); execution records; execID's turn mark,
// from which readers overlay the staged rows (historyView).
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

// largeCommitRefused is the outcome of a refused commit: a failed fencing
// check may be an earlier attempt's commit (the lock row tells; the turn
// is then finished); a changed instance record is a stale read.
func (p *Provider) largeCommitRefused(ctx context.Context, turn *turnState, tid string, err error) error {
	id := turn.st.id
	switch conditionFailedAt(cancelReasons(err)) {
	case 0:
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

// storedEvents returns which events of actions are stored (with their
// JSON if withData), by a Query of the row at or before the first id and
// one of the rest of the range.
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

// changedSinceRead reports whether a message of the batch is gone (one
// keys Query) or the instance record changed (one GetItem) (staleRead).
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
	// The last row also carries the release and the mark's delete: one
	// action more than a row in the middle.
	if n := len(chunks); n > 1 && len(chunks[n-1]) == stageActions {
		last := chunks[n-1]
		chunks = append(chunks[:n-1], last[:len(last)-1], last[len(last)-1:])
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

// applyStaged applies turn tid's staging rows (its commit wrote the mark),
// the last one with release (releaseActions).
func (p *Provider) applyStaged(ctx context.Context, instance, tid string, chunks [][]planAction, release []types.TransactWriteItem) error {
	if len(chunks) == 0 {
		return p.finishTurn(ctx, instance, tid, release)
	}
	pk := keys.InstancePK(instance)
	for i, chunk := range chunks {
		var last []types.TransactWriteItem
		if i == len(chunks)-1 {
			last = release
		}
		if err := p.applyOne(ctx, pk, tid, 0, i, chunk, last); err != nil {
			return err
		}
	}
	return nil
}

// rollForward applies the remaining staging rows of turn tid, if still
// pending, and finishes it. Only lock holders and takers, deletes, prunes
// and appends call it; readers overlay instead (historyView). The first
// row's apply rewrites the mark, for a turn committed by an earlier
// release without one.
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
	release := p.releaseActions(instance, tid, st.lock.turnExec, st.lock.attempts, st.lock.batch)
	if len(rows) == 0 {
		return p.finishTurn(ctx, instance, tid, release) // a turn staged nothing
	}
	for i, row := range rows {
		sk, _, _ := strAttr(row, attrSK)
		idx, err := keys.ParseNum20(sk[len(prefix):])
		if err != nil {
			return fmt.Errorf("%w: staging row %s: %v", provider.ErrCorruptData, describeKey(row), err)
		}
		actions, err := decodeStaged(row)
		if err != nil {
			return err
		}
		// While the turn is pending its last row is not applied: the
		// last row left is the turn's last, which releases the lock.
		var last []types.TransactWriteItem
		if i == len(rows)-1 {
			last = release
		}
		if err := p.applyOne(ctx, pk, tid, st.lock.turnExec, int(idx), actions, last); err != nil {
			if errors.Is(err, errTurnGone) {
				return nil // finished by someone else, or the instance was deleted
			}
			return err
		}
	}
	p.hints.unlocked(instance)
	return nil
}

// errTurnGone means the lock row no longer holds the turn (finished, deleted).
var errTurnGone = errors.New("large turn is no longer pending")

// Retries of an apply that conflicted with another writer.
const (
	applyAttempts     = 8
	applyFirstBackoff = 20 * time.Millisecond
)

// applyOne applies and deletes staging row idx of turn tid, conditioned on
// the row existing (each action lands once) and the lock row holding the
// turn (none on a deleted instance), retrying transient cancellations. With
// execID set, row 0 also writes the turn mark, before any row is visible.
// The last row carries release (releaseActions) in place of the check; a
// turn found finished or gone is then errTurnGone.
func (p *Provider) applyOne(ctx context.Context, pk, tid string, execID uint64, idx int, actions []planAction, release []types.TransactWriteItem) error {
	tx := make([]types.TransactWriteItem, 0, len(actions)+3)
	if len(release) > 0 {
		tx = append(tx, release[0]) // conditioned on the turn, as the check
	} else {
		tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 p.table,
			Key:                       key(pk, keys.Lock),
			ConditionExpression:       aws.String("#turn = :tid"),
			ExpressionAttributeNames:  map[string]string{"#turn": attrTurn},
			ExpressionAttributeValues: map[string]types.AttributeValue{":tid": s(tid)},
		}})
	}
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
	if idx == 0 && execID != 0 && len(release) == 0 {
		mark := key(pk, keys.TurnMarkSK(execID))
		mark[attrTurnID] = s(tid)
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: p.table, Item: mark}})
	}
	if len(release) > 0 {
		tx = append(tx, release[1:]...)
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
		case len(release) > 0 && (i == 0 || i == len(tx)-1):
			return errTurnGone // the turn was finished, or the instance deleted
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

// finishTurn sends a turn's release (releaseActions) on its own, for a
// turn that staged no row. It writes no history row, so rows a delete or
// prune removed stay removed.
func (p *Provider) finishTurn(ctx context.Context, instance, tid string, actions []types.TransactWriteItem) error {
	// A conflict with another finisher is resent and meets the finished turn.
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

// releaseActions release the lock of instance with turn tid recorded done,
// conditioned on the lock row holding the turn (the first action), and
// remove the turn mark of execution executionID (0: none).
func (p *Provider) releaseActions(instance, tid string, executionID uint64, attempts map[string]uint32, batch []string) []types.TransactWriteItem {
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
	return actions
}

// turnOutcome tells, once the lock row no longer holds turn tid, whether it
// finished (nil) or its instance was deleted ([provider.ErrInvalidLockToken]).
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
