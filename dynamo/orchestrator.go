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
// Requests: one TransactWriteItems putting the message (with a
// ClientRequestToken; for a start, beside the update of a counter cell
// that counts it as pending), then the wake-up signal. The provider's
// first call checks the table's layout before ([Provider.CheckLayout]: one
// GetItem, and a PutItem on a new table): a provider of another shard
// count would key the message for a shard the table's fetches do not
// watch, so a mismatch fails the call with [ErrLayoutMismatch], nothing
// written.
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
	// The key is this call's own (its seq is new), so a failed condition
	// means that an earlier attempt of the call landed. A start is counted
	// in the same transaction (SystemMetrics' pending figure); the
	// transaction's ClientRequestToken keeps a resend from counting it
	// twice (putOnce).
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

// delayedMessages rewrites, for an abandon with a delay, at most limit of
// st's messages visible at now so that they become visible at visibleAt;
// later ones keep theirs.
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
		out = append(out, types.TransactWriteItem{Put: &types.Put{
			TableName:                p.table,
			Item:                     row,
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}})
	}
	return out
}

// heldTurn returns what is known of the turn lockToken holds: this
// process's fetch, else the stored lock row (one Query). nil means the
// token holds no lock (expiry is not checked here).
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
// delay hides the instance's currently visible messages for that long;
// ignoreAttempt decrements the attempt count of all its messages (floor
// 0). A token that holds no lock fails with [provider.ErrInvalidLockToken].
//
// Requests: one TransactWriteItems (the lock row, conditioned on the
// token, and with a delay the visible message rows).
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	turn, err := p.heldTurn(ctx, provider.OpAbandonOrchestrationItem, lockToken)
	if err != nil {
		return err
	}
	st := turn.st
	if st.lock.turn != "" {
		// This lock's large turn is committed; it cannot be abandoned, only
		// finished.
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
// Requests: a Query for the latest execution record, then the history
// Query (paged); two Queries more when a large turn is pending (its
// staging rows, and the history again: historyView). It writes nothing.
func (p *Provider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	return p.readLatest(ctx, provider.OpRead, instance)
}

// readLatest reads and decodes the latest execution's history. The latest
// record is the current execution's, which no prune selects: a record read
// without the pruning flag keeps its history whole while it is read. One
// with the flag reads as no history.
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
// of the execution record (and of the first row, for a history stored
// without a record).
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return p.readHistory(ctx, provider.OpReadWithExecution, instance, executionID)
}

// readHistory reads and decodes one execution's history: none for an
// execution a prune is removing.
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
// whose history rows, first among them first, were just read: its record
// has the pruning flag, or it is gone with the first row. The record is
// read after the rows: a prune sets the flag before it deletes a row and
// deletes the record last, so a record without the flag now had none when
// the rows were read, and they were whole. Without a record the history
// was stored without one (AppendWithExecution; no prune selects it) unless
// a prune finished since the rows were read, and then it took the first
// row too.
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
// (for tests and tools; it creates no instance or execution record), and
// marks the instance's lock row, if any, so that no process uses a history
// it cached before. Requests: two Queries for the ids stored, one Query of
// the control rows, TransactWriteItems of up to 100 history rows (events
// with consecutive ids packed as a turn packs them; with an execution that
// has a terminal status, 97 and the update of the instance record's
// figures, of its counter cell and a check of its lock row), and one
// UpdateItem of the lock row.
// Execution id 0, event id 0, an id twice in events (all
// [provider.ErrInvalidInput]) and an id already stored with other content
// ([provider.ErrDuplicateEvent]) are rejected, and then nothing is stored;
// events already stored as given are passed over, so that a retry of an
// append whose outcome was unknown succeeds.
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
	// Events appended to an execution with a terminal status count in the
	// instance record's figures (metrics.go): each transaction adds its
	// own, conditioned on the record as read.
	st, err := p.loadState(ctx, instance)
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
	// Histories cached by the processes that run the instance must not
	// be used from now on (historycache.go).
	if err := p.markHistoryWritten(ctx, instance); err != nil {
		return translate(provider.OpAppendWithExecution, err)
	}
	return nil
}

// unstoredEvents returns the events among events that are not stored yet.
// An event stored with the same JSON was stored by an earlier attempt of
// this append, whose outcome its caller could not know (a lost response,
// or a failure after the write such as the lock row's mark): a retry
// succeeds instead of failing on it. An event stored with other content
// fails the append with [provider.ErrDuplicateEvent].
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
