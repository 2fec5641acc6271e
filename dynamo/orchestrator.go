package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// EnqueueForOrchestrator puts item on its target instance's queue, visible
// after delay (0 = now). A [provider.TimerFiredItem] enqueued here uses
// delay, not its FireAtMs. The instance is not created. Invalid items fail
// with [provider.ErrInvalidInput].
//
// Requests: one TransactWriteItems (a start also updates a counter cell),
// then the signal; the first call checks [Provider.CheckLayout] before,
// failing with [ErrLayoutMismatch], nothing written.
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item provider.WorkItem, delay time.Duration) error {
	if err := provider.ValidateOrchestratorItem(provider.OpEnqueueForOrchestrator, item); err != nil {
		return err
	}
	if err := checkIDs(provider.OpEnqueueForOrchestrator, item.TargetInstance(), nil); err != nil {
		return err
	}
	data, err := provider.MarshalWorkItem(item)
	if err != nil {
		return provider.Permanent(provider.OpEnqueueForOrchestrator, provider.ErrInvalidInput, "encode %s work item: %v", item.Kind(), err)
	}
	row, sig, size := p.orchestratorItem(item, data, p.nowMs()+durMs(delay))
	if size > MaxItemBytes {
		return provider.Permanent(provider.OpEnqueueForOrchestrator, provider.ErrInvalidInput,
			"%s work item is %d bytes stored; it must fit one DynamoDB item (%d bytes)", item.Kind(), size, MaxItemBytes)
	}
	if err := p.CheckLayout(ctx); err != nil {
		return err
	}
	// A failed condition on this new key means an earlier attempt landed;
	// the token keeps a resend from counting a start twice (docs/design.md §7).
	actions := []types.TransactWriteItem{{Put: &types.Put{
		TableName: p.table, Item: row,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}}}
	var counted int
	if isStart(item.Kind()) {
		counted = 1
	}
	cell, done := p.takeCell(startsChange(counted, 0))
	defer done()
	err = p.sendFresh(ctx, provider.OpEnqueueForOrchestrator, append(actions, cell...))
	if err != nil && conditionFailedAt(cancelReasons(err)) != 0 {
		return translate(provider.OpEnqueueForOrchestrator, err)
	}
	p.notify(ctx, []queues.Signal{sig})
	return nil
}

// delayedMessages makes at most limit of st's messages visible at now
// visible at visibleAt instead (an abandon's delay).
func (p *Provider) delayedMessages(st *instanceState, now, visibleAt int64, limit int) []types.TransactWriteItem {
	var out []types.TransactWriteItem
	for _, m := range st.msgs {
		if m.visible > now || len(out) == limit {
			continue
		}
		row := key(keys.InstancePK(st.id), m.sk)
		row[attrItem] = p.payload(m.data)
		row[attrKind] = s(m.kind)
		row[attrVisible] = n(visibleAt)
		row[attrReadyPK] = s(keys.ReadyOrchestratorPK(keys.ShardOf(st.id, p.o.Shards)))
		row[attrReadySK] = s(readySK(visibleAt, m.seq))
		if m.kind == provider.KindStartOrchestration {
			listPending(row, st.id, m.seq, p.o.Shards)
		}
		if m.sk == keys.SlotSK {
			row[attrSlot], row[attrSeq] = s(slotDone), s(m.seq) // still the slot's completion
		}
		out = append(out, types.TransactWriteItem{Put: &types.Put{
			TableName:                p.table,
			Item:                     row,
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}})
	}
	return out
}

// heldTurn returns the turn lockToken holds, from this process's fetch or
// else the lock row (one Query); expiry is not checked.
func (p *Provider) heldTurn(ctx context.Context, op, lockToken string) (*turnState, error) {
	tok, err := parseOrchToken(lockToken)
	if err != nil {
		return nil, invalidToken(op)
	}
	if turn := p.turns.get(lockToken); turn != nil {
		return turn, nil
	}
	st, err := p.loadState(ctx, tok.instance)
	if err != nil {
		return nil, translate(op, err)
	}
	if st.lock.token != lockToken {
		return nil, invalidToken(op)
	}
	return &turnState{token: lockToken, st: st, ver: st.lock.ver, batch: st.lock.batch, attempts: st.lock.attempts}, nil
}

// AbandonOrchestrationItem releases the lock without committing. A non-zero
// delay hides the instance's visible messages for that long; ignoreAttempt
// decrements their attempt counts (floor 0). A token that holds no lock
// fails with [provider.ErrInvalidLockToken].
//
// Requests: one TransactWriteItems (with a delay, of the messages too).
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	turn, err := p.heldTurn(ctx, provider.OpAbandonOrchestrationItem, lockToken)
	if err != nil {
		return err
	}
	st := turn.st
	if st.lock.turn != "" {
		// A committed large turn can only be finished.
		return translateNil(provider.OpAbandonOrchestrationItem, p.rollForward(ctx, st.id, st.lock.turn))
	}
	attempts := make(map[string]uint32, len(turn.attempts))
	for sk, a := range turn.attempts {
		if ignoreAttempt && a > 0 {
			a--
		}
		attempts[sk] = a
	}
	now := p.nowMs()
	cond, names, values := holderCondition(lockToken)
	actions := []types.TransactWriteItem{{Update: newLockRelease(attempts, "", "").update(p.table, st.id, cond, names, values)}}
	visibleAt := now + durMs(delay) // durMs is 0 for no delay
	if delay > 0 {
		actions = append(actions, p.delayedMessages(st, now, visibleAt, maxTransactActions-len(actions))...)
	}
	callKey := fmt.Sprintf("abandon\x00%s\x00%d\x00%t", lockToken, delay, ignoreAttempt)
	err = p.sendTx(ctx, provider.OpAbandonOrchestrationItem, callKey, func() *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{TransactItems: actions}
	})
	if err != nil {
		reasons := cancelReasons(err)
		if len(reasons) > 0 && reasons[0] == "ConditionalCheckFailed" {
			// A large turn of this lock committed since the fetch: finish it.
			now, err := p.loadState(ctx, st.id)
			if err != nil {
				return translate(provider.OpAbandonOrchestrationItem, err)
			}
			if now.lock.token == lockToken && now.lock.turn != "" {
				return translateNil(provider.OpAbandonOrchestrationItem, p.rollForward(ctx, st.id, now.lock.turn))
			}
			return invalidToken(provider.OpAbandonOrchestrationItem)
		}
		if reasons == nil || !onlyMissingRows(reasons) {
			return translate(provider.OpAbandonOrchestrationItem, err)
		}
		// A message went away meanwhile (instance deleted): release alone.
		if _, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions[:1]}); err != nil {
			if cancelReasons(err) != nil {
				return invalidToken(provider.OpAbandonOrchestrationItem)
			}
			return translate(provider.OpAbandonOrchestrationItem, err)
		}
	}
	p.turns.drop(lockToken)
	p.hints.unlocked(st.id)
	p.waits.released(st.id, lockToken) // the notice below announces the instance
	p.post([]queues.Signal{{
		Kind: queues.Orchestrator, Shard: keys.ShardOf(st.id, p.o.Shards), Instance: st.id, VisibleAt: timeMs(visibleAt),
	}})
	return nil
}

// onlyMissingRows reports whether a cancelled transaction failed only on
// conditions after its first action.
func onlyMissingRows(reasons []string) bool {
	for i, r := range reasons {
		if (i == 0 && r != "None" && r != "") || (r != "None" && r != "" && r != "ConditionalCheckFailed") {
			return false
		}
	}
	return true
}

// Read returns the latest execution's history; empty for unknown
// instances. An undecodable stored event fails with an error wrapping
// [provider.ErrCorruptData].
//
// Requests: a Query of the latest execution record, then the history
// (paged); two more when a large turn is pending. It writes nothing.
func (p *Provider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	return p.readLatest(ctx, provider.OpRead, instance)
}

// readLatest reads and decodes the latest execution's history, which no
// prune selects; a record flagged pruning reads as no history.
func (p *Provider) readLatest(ctx context.Context, op, instance string) ([]provider.Event, error) {
	execID, pruning, err := p.latestExecution(ctx, instance)
	if err != nil {
		return nil, translate(op, err)
	}
	if pruning {
		return []provider.Event{}, nil
	}
	rows, err := p.historyView(ctx, op, instance, execID)
	if err != nil {
		return nil, translate(op, err)
	}
	return decodeHistory(op, instance, execID, rows)
}

// ReadWithExecution returns one execution's history, as [Provider.Read];
// empty for an execution a prune is removing.
//
// Requests: the history Query (paged), then, when it found rows, a GetItem
// of the execution record (and of the first row when there is none).
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return p.readHistory(ctx, provider.OpReadWithExecution, instance, executionID)
}

// readHistory reads and decodes one execution's history.
func (p *Provider) readHistory(ctx context.Context, op, instance string, executionID uint64) ([]provider.Event, error) {
	rows, err := p.historyView(ctx, op, instance, executionID)
	if err != nil {
		return nil, translate(op, err)
	}
	if len(rows) > 0 {
		gone, err := p.executionGone(ctx, instance, executionID, rows[0])
		if err != nil {
			return nil, translate(op, err)
		}
		if gone {
			return []provider.Event{}, nil
		}
	}
	return decodeHistory(op, instance, executionID, rows)
}

// executionGone reports whether a prune has begun removing an execution
// whose rows (first first) were just read. A prune flags the record first
// and deletes it last, so no flag now means the rows were whole; without a
// record, the first row is gone only if a prune finished.
func (p *Provider) executionGone(ctx context.Context, instance string, executionID uint64, first item) (bool, error) {
	pk := keys.InstancePK(instance)
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(pk, keys.ExecSK(executionID)), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#pk, #pr"), ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#pr": attrPruning},
	})
	if err != nil {
		return false, err
	}
	if out.Item != nil {
		_, pruning := out.Item[attrPruning]
		return pruning, nil
	}
	sk, _, err := strAttr(first, attrSK)
	if err != nil {
		return false, err
	}
	out, err = p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(pk, sk), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#pk"), ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil {
		return false, err
	}
	return out.Item == nil, nil
}

// latestExecution returns the highest execution id with a record, or 1,
// and whether that record has the pruning flag.
func (p *Provider) latestExecution(ctx context.Context, instance string) (uint64, bool, error) {
	out, err := p.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 p.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK, "#pr": attrPruning},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(keys.InstancePK(instance)), ":prefix": s(keys.ExecPrefix)},
		ProjectionExpression:      aws.String("#sk, #pr"),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return 0, false, err
	}
	if len(out.Items) == 0 {
		return provider.InitialExecutionID, false, nil
	}
	sk, _, err := strAttr(out.Items[0], attrSK)
	if err != nil {
		return 0, false, err
	}
	_, pruning := out.Items[0][attrPruning]
	id, err := keys.ParseNum20(sk[len(keys.ExecPrefix):])
	return id, pruning, err
}

// AppendWithExecution stores events in an execution's history as given
// (for tests and tools; it creates no instance or execution record) and
// marks the lock row, so that no process uses a history it cached before.
// Execution id 0, event id 0 and an id twice in events
// ([provider.ErrInvalidInput]), or an id stored with other content
// ([provider.ErrDuplicateEvent]), store nothing; events already stored as
// given are passed over, so a retry after an unknown outcome succeeds.
//
// Requests: three Queries (ids stored, control rows), a TransactWriteItems
// per 100 history rows (97 for an ended execution, plus its figures), and
// an UpdateItem of the lock row.
func (p *Provider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []provider.Event) error {
	if executionID == 0 {
		return provider.Permanent(provider.OpAppendWithExecution, provider.ErrInvalidInput, "execution_id must be greater than 0")
	}
	if err := provider.ValidateEvents(provider.OpAppendWithExecution, events); err != nil {
		return err
	}
	encoded, err := encodeEvents(provider.OpAppendWithExecution, instance, executionID, events)
	if err != nil {
		return err
	}
	if len(encoded) == 0 {
		return nil
	}
	if encoded, err = p.unstoredEvents(ctx, instance, executionID, encoded); err != nil {
		return err
	}
	// Events appended to an ended execution count in the record's figures.
	st, err := p.loadState(ctx, instance)
	if err == nil {
		st, err = p.settled(ctx, st)
	}
	if err != nil {
		return translate(provider.OpAppendWithExecution, err)
	}
	var meta *metaRow
	if e := st.execs[executionID]; st.meta != nil && e != nil && !e.pruning && provider.IsTerminalStatus(e.status) {
		m := *st.meta
		meta = &m
	}
	var actions []planAction
	for _, run := range packHistory(instance, executionID, encoded, !p.o.DisablePayloadCompression) {
		actions = append(actions, planAction{put: run.row, eventID: run.first, lastEventID: run.first + uint64(run.events) - 1})
	}
	perTx := maxTransactActions
	if meta != nil {
		perTx -= 3 // the record's figures, its cell, the lock row's check
	}
	for start := 0; start < len(actions); start += perTx {
		chunk := actions[start:min(len(actions), start+perTx)]
		tx := make([]types.TransactWriteItem, len(chunk))
		var next metaRow
		for i, a := range chunk {
			tx[i] = p.transactAction(a)
		}
		if meta != nil {
			next = *meta
			for _, a := range chunk {
				next.events += a.lastEventID - a.eventID + 1
			}
			tx = append(tx, p.figuresUpdate(instance, meta, &next), p.noStagedTurn(instance))
		}
		var cell []types.TransactWriteItem
		done := func() {}
		if meta != nil {
			cell, done = p.takeCell(change(meta, &next))
		}
		err := p.sendFresh(ctx, provider.OpAppendWithExecution, append(tx, cell...))
		done()
		if err != nil {
			switch i := conditionFailedAt(cancelReasons(err)); {
			case i >= len(chunk):
				return provider.Retryable(provider.OpAppendWithExecution, err,
					"instance %q changed while events were appended to it; append again (events stored are passed over)", instance)
			case i >= 0:
				return provider.Permanent(provider.OpAppendWithExecution, provider.ErrDuplicateEvent,
					"event_id %d already exists in execution %d of instance %s", chunk[i].eventID, executionID, instance)
			}
			return translate(provider.OpAppendWithExecution, err)
		}
		if meta != nil {
			meta = &next
		}
	}
	if err := p.markHistoryWritten(ctx, instance); err != nil {
		return translate(provider.OpAppendWithExecution, err)
	}
	return nil
}

// unstoredEvents returns the events not stored yet; one stored with other
// content is [provider.ErrDuplicateEvent].
func (p *Provider) unstoredEvents(ctx context.Context, instance string, executionID uint64, events []encodedEvent) ([]encodedEvent, error) {
	span := planAction{eventID: ^uint64(0)}
	for _, e := range events {
		span.eventID, span.lastEventID = min(span.eventID, e.id), max(span.lastEventID, e.id)
	}
	stored, err := p.storedEvents(ctx, provider.OpAppendWithExecution, instance, executionID, []planAction{span}, true)
	if err != nil {
		return nil, err
	}
	var unstored []encodedEvent
	for _, e := range events {
		data, ok := stored[e.id]
		if !ok {
			unstored = append(unstored, e)
			continue
		}
		if data != e.data {
			return nil, provider.Permanent(provider.OpAppendWithExecution, provider.ErrDuplicateEvent,
				"event_id %d already exists in execution %d of instance %s", e.id, executionID, instance)
		}
	}
	return unstored, nil
}
