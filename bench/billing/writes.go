package billing

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
)

// transactionMultiplier is how many standard units a transactional write or
// read of the same size costs: DynamoDB performs two underlying writes or
// reads of every item, one to prepare the transaction and one to commit it
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling).
const transactionMultiplier = 2

// idempotencyWindow is how long DynamoDB treats a TransactWriteItems call
// with a ClientRequestToken it has seen as a replay of the first
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-apis-txwriteitems-idempotency).
const idempotencyWindow = 10 * time.Minute

func notAskedValues(rv types.ReturnValue) bool { return rv == "" || rv == types.ReturnValueNone }

func notAskedFailureValues(rv types.ReturnValuesOnConditionCheckFailure) bool {
	return rv == "" || rv == types.ReturnValuesOnConditionCheckFailureNone
}

// askOldImage asks a PutItem or DeleteItem for the item it replaces or
// deletes, on success and on a failed condition, where the caller did not
// ask for it (the meter restores the caller's choice and removes what the
// caller did not ask for).
func askOldImage(rv *types.ReturnValue, rvf *types.ReturnValuesOnConditionCheckFailure) {
	if notAskedValues(*rv) {
		*rv = types.ReturnValueAllOld
	}
	if notAskedFailureValues(*rvf) {
		*rvf = types.ReturnValuesOnConditionCheckFailureAllOld
	}
}

// failedWriteUnits is what a standard write whose condition failed costs,
// by "Capacity unit consumption for write operations"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#write-operation-consumption):
// DynamoDB still consumes write units, by the larger of the existing item
// and the new item (newItem, nil for an update or a delete, whose new image
// DynamoDB never made), and 1 unit when no item exists.
func failedWriteUnits(old, newItem map[string]types.AttributeValue) float64 {
	if old == nil {
		return 1
	}
	return writeUnits(max(itemsize.ItemSize(old), itemsize.ItemSize(newItem)))
}

// conditionFailure returns the item image a ConditionalCheckFailedException
// carries (nil for an absent item, or when none was asked for) and whether
// err is one. When strip is set, it removes the image from the error, which
// the caller then sees as it would without the meter.
func conditionFailure(err error, strip bool) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false
	}
	old := ccf.Item
	if strip {
		ccf.Item = nil
	}
	return old, true
}

// failedWrite is what a single-item write that failed with err costs: a
// failed condition by [failedWriteUnits] (the existing item comes with the
// error, removed before the caller sees it unless the caller asked for
// it by rvf), anything else nothing.
func failedWrite(err error, rvf types.ReturnValuesOnConditionCheckFailure, item map[string]types.AttributeValue) float64 {
	if old, ok := conditionFailure(err, notAskedFailureValues(rvf)); ok {
		return failedWriteUnits(old, item)
	}
	return 0
}

// itemWrite is what a single-item write under key that replaced old by cur
// (nil for none) costs: its table write, by the larger of the two, and its
// index writes; each is counted on its partition.
func (m *Meter) itemWrite(ctx context.Context, table *string, key, old, cur map[string]types.AttributeValue) float64 {
	wru := writeUnits(max(itemsize.ItemSize(old), itemsize.ItemSize(cur)))
	return m.addWrites(itemWrites(deref(table), m.schemaOrFail(ctx, table), key, wru, old, cur)...)
}

// failedWriteOn counts the units of a single-item write under key that
// failed on its table partition, and returns them.
func (m *Meter) failedWriteOn(ctx context.Context, table *string, key map[string]types.AttributeValue, units float64) float64 {
	return m.addWrites(partitionWrite{tablePartition(deref(table), m.schemaOrFail(ctx, table), key), units, key})
}

// putItem bills PutItem by its table write, the larger of the item it
// replaces and the new item, and by its index writes. The replaced item
// comes from the request itself: the meter asks for ReturnValues ALL_OLD
// (and ReturnValuesOnConditionCheckFailure ALL_OLD) when the caller did not,
// and removes them from the output (and error) before the caller sees it.
func (m *Meter) putItem(p *dynamodb.PutItemInput) call {
	rv, rvf := p.ReturnValues, p.ReturnValuesOnConditionCheckFailure
	return call{
		before: func(context.Context) {
			askOldImage(&p.ReturnValues, &p.ReturnValuesOnConditionCheckFailure)
		},
		after: func(ctx context.Context, result any, err error) (float64, float64) {
			p.ReturnValues, p.ReturnValuesOnConditionCheckFailure = rv, rvf
			if err != nil {
				return m.failedWriteOn(ctx, p.TableName, p.Item, failedWrite(err, rvf, p.Item)), 0
			}
			out, ok := result.(*dynamodb.PutItemOutput)
			if !ok {
				return 0, 0
			}
			old := out.Attributes
			if notAskedValues(rv) {
				out.Attributes = nil
			}
			return m.itemWrite(ctx, p.TableName, p.Item, old, p.Item), 0
		},
	}
}

// deleteItem bills DeleteItem by the size of the deleted item (1 unit when
// there was none) and its index writes. The deleted item comes from the
// request, as for [Meter.putItem].
func (m *Meter) deleteItem(p *dynamodb.DeleteItemInput) call {
	rv, rvf := p.ReturnValues, p.ReturnValuesOnConditionCheckFailure
	return call{
		before: func(context.Context) {
			askOldImage(&p.ReturnValues, &p.ReturnValuesOnConditionCheckFailure)
		},
		after: func(ctx context.Context, result any, err error) (float64, float64) {
			p.ReturnValues, p.ReturnValuesOnConditionCheckFailure = rv, rvf
			if err != nil {
				return m.failedWriteOn(ctx, p.TableName, p.Key, failedWrite(err, rvf, nil)), 0
			}
			out, ok := result.(*dynamodb.DeleteItemOutput)
			if !ok {
				return 0, 0
			}
			old := out.Attributes
			if notAskedValues(rv) {
				out.Attributes = nil
			}
			return m.itemWrite(ctx, p.TableName, p.Key, old, nil), 0
		},
	}
}

// updateItem bills UpdateItem by the larger of the item before and after the
// update, and by its index writes. One image comes from the request's
// ReturnValues (the meter asks for ALL_OLD when the caller asked for
// nothing, and removes it from the output), the other from a strongly
// consistent GetItem on the shadow client: after the update, or before it
// when the caller asked for ALL_NEW; both when the caller asked for
// UPDATED_OLD or UPDATED_NEW.
func (m *Meter) updateItem(p *dynamodb.UpdateItemInput) call {
	rv, rvf := p.ReturnValues, p.ReturnValuesOnConditionCheckFailure
	oldFromOutput := notAskedValues(rv) || rv == types.ReturnValueAllOld
	newFromOutput := rv == types.ReturnValueAllNew
	var shadowOld map[string]types.AttributeValue
	return call{
		before: func(ctx context.Context) {
			askOldImage(&p.ReturnValues, &p.ReturnValuesOnConditionCheckFailure)
			if !oldFromOutput {
				var err error
				if shadowOld, err = m.shadowGet(ctx, p.TableName, p.Key); err != nil {
					m.fail(err)
				}
			}
		},
		after: func(ctx context.Context, result any, err error) (float64, float64) {
			p.ReturnValues, p.ReturnValuesOnConditionCheckFailure = rv, rvf
			if err != nil {
				return m.failedWriteOn(ctx, p.TableName, p.Key, failedWrite(err, rvf, nil)), 0
			}
			out, ok := result.(*dynamodb.UpdateItemOutput)
			if !ok {
				return 0, 0
			}
			old, cur := shadowOld, out.Attributes
			if oldFromOutput {
				old = out.Attributes
			}
			if notAskedValues(rv) {
				out.Attributes = nil
			}
			if !newFromOutput {
				var err error
				if cur, err = m.shadowGet(ctx, p.TableName, p.Key); err != nil {
					m.fail(err)
				}
			}
			return m.itemWrite(ctx, p.TableName, p.Key, old, cur), 0
		},
	}
}

// batchWriteItem bills each processed put and delete of a BatchWriteItem as
// a PutItem or DeleteItem of its own ("DynamoDB processes each item in the
// batch as an individual PutItem or DeleteItem request"): items left in
// UnprocessedItems cost nothing. The items the batch replaces or deletes
// are read before it, with one BatchGetItem on the shadow client per 100
// keys (BatchWriteItem has no ReturnValues).
func (m *Meter) batchWriteItem(p *dynamodb.BatchWriteItemInput) call {
	type write struct {
		ref  itemRef
		item map[string]types.AttributeValue // nil for a delete
	}
	var writes []write
	var before images
	return call{
		before: func(ctx context.Context) {
			for table, reqs := range p.RequestItems {
				s := m.schemaOrFail(ctx, &table)
				if s == nil {
					continue
				}
				for _, r := range reqs {
					switch {
					case r.PutRequest != nil:
						writes = append(writes, write{itemRef{table, s, s.key(r.PutRequest.Item)}, r.PutRequest.Item})
					case r.DeleteRequest != nil:
						writes = append(writes, write{ref: itemRef{table, s, r.DeleteRequest.Key}})
					}
				}
			}
			refs := make([]itemRef, len(writes))
			for i, w := range writes {
				refs[i] = w.ref
			}
			var err error
			if before, err = m.shadowBatchGet(ctx, refs); err != nil {
				m.fail(err)
			}
		},
		after: func(_ context.Context, result any, err error) (float64, float64) {
			out, ok := result.(*dynamodb.BatchWriteItemOutput)
			if err != nil || !ok {
				return 0, 0
			}
			unprocessed := map[string]bool{}
			for table, reqs := range out.UnprocessedItems {
				for _, r := range reqs {
					var key map[string]types.AttributeValue
					switch {
					case r.PutRequest != nil:
						key = r.PutRequest.Item
					case r.DeleteRequest != nil:
						key = r.DeleteRequest.Key
					}
					if s := m.cachedSchema(table); s != nil {
						if ks, ok := s.keyString(key); ok {
							unprocessed[table+"\x00"+ks] = true
						}
					}
				}
			}
			wru := 0.0
			for _, w := range writes {
				if ks, ok := w.ref.schema.keyString(w.ref.key); ok && unprocessed[w.ref.table+"\x00"+ks] {
					continue
				}
				old := before.get(w.ref)
				units := writeUnits(max(itemsize.ItemSize(old), itemsize.ItemSize(w.item)))
				wru += m.addWrites(itemWrites(w.ref.table, w.ref.schema, w.ref.key, units, old, w.item)...)
			}
			return wru, 0
		},
	}
}

// cachedSchema returns the schema of a table the meter has described, or
// nil.
func (m *Meter) cachedSchema(table string) *tableSchema {
	m.schemaMu.Lock()
	defer m.schemaMu.Unlock()
	return m.schemas[table]
}

// transactAction is one action of a TransactWriteItems request.
type transactAction struct {
	ref  itemRef
	kind string                          // "Put", "Update", "Delete", "ConditionCheck"
	item map[string]types.AttributeValue // the new item of a Put
}

// transactWriteItems bills TransactWriteItems by "Capacity management for
// transactions"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling):
// each action costs twice the write units of the same standard write, the
// prepare and the commit: a Put or an Update by the larger of its item
// before and after, a Delete by the deleted item, a ConditionCheck by the
// checked item (at least 1 unit, so at least 2 in all). DynamoDB's pages
// do not say how a ConditionCheck is billed; measurements of DynamoDB
// published with the dynamodb-conformance suite
// (https://github.com/paritysuite/dynamodb-conformance/pull/67) show it
// billed as a write of 2 units for a small item, which is this rule. Index
// writes are added as standard writes (see [tableSchema.indexWriteUnits]).
//
// Item images come from the shadow client: one BatchGetItem before the
// transaction for every item it names, one after it for the items it
// updated.
//
// A transaction DynamoDB cancels (TransactionCanceledException) reports no
// consumed capacity, and no AWS page says what it costs. The meter bills
// each of its actions as a standard write whose condition failed, at the
// transactional rate: twice [failedWriteUnits] of the item as it was. This
// is an upper bound, chosen so that contention is not free.
//
// A transaction with a ClientRequestToken that committed less than 10
// minutes earlier is a replay: DynamoDB applies nothing and "returns the
// number of read capacity units consumed in reading the item". The meter
// bills it as a transactional read of each item (2 read units per 4 KB).
func (m *Meter) transactWriteItems(p *dynamodb.TransactWriteItemsInput) call {
	var actions []transactAction
	var before images
	token := deref(p.ClientRequestToken)
	replay := false
	return call{
		before: func(ctx context.Context) {
			replay = token != "" && m.tokenCommitted(token)
			for _, it := range p.TransactItems {
				var a transactAction
				var table *string
				var key map[string]types.AttributeValue
				switch {
				case it.Put != nil:
					a.kind, table, a.item = "Put", it.Put.TableName, it.Put.Item
				case it.Update != nil:
					a.kind, table, key = "Update", it.Update.TableName, it.Update.Key
				case it.Delete != nil:
					a.kind, table, key = "Delete", it.Delete.TableName, it.Delete.Key
				case it.ConditionCheck != nil:
					a.kind, table, key = "ConditionCheck", it.ConditionCheck.TableName, it.ConditionCheck.Key
				default:
					continue
				}
				s := m.schemaOrFail(ctx, table)
				if s == nil {
					continue
				}
				if a.item != nil {
					key = s.key(a.item)
				}
				a.ref = itemRef{deref(table), s, key}
				actions = append(actions, a)
			}
			refs := make([]itemRef, len(actions))
			for i, a := range actions {
				refs[i] = a.ref
			}
			var err error
			if before, err = m.shadowBatchGet(ctx, refs); err != nil {
				m.fail(err)
			}
		},
		after: func(ctx context.Context, _ any, err error) (float64, float64) {
			if err != nil {
				var cancelled *types.TransactionCanceledException
				if !errors.As(err, &cancelled) {
					return 0, 0
				}
				return m.cancelledActions(actions, before), 0
			}
			if replay {
				rru := 0.0
				for _, a := range actions {
					rru += transactionMultiplier * readUnits(itemsize.ItemSize(before.get(a.ref)))
				}
				return 0, rru
			}
			if token != "" {
				m.commitToken(token)
			}
			var updated []itemRef
			for _, a := range actions {
				if a.kind == "Update" {
					updated = append(updated, a.ref)
				}
			}
			after := images{}
			if len(updated) > 0 {
				if after, err = m.shadowBatchGet(ctx, updated); err != nil {
					m.fail(err)
				}
			}
			return m.committedActions(actions, before, after), 0
		},
	}
}

// cancelledActions counts the units of a cancelled transaction's actions,
// with the items before it: each a standard write whose condition failed,
// at the transactional rate, on its table partition.
func (m *Meter) cancelledActions(actions []transactAction, before images) float64 {
	wru := 0.0
	for _, a := range actions {
		units := transactionMultiplier * failedWriteUnits(before.get(a.ref), a.item)
		wru += m.addWrites(partitionWrite{tablePartition(a.ref.table, a.ref.schema, a.ref.key), units, a.ref.key})
	}
	return wru
}

// committedActions counts the units of a committed transaction's actions,
// with the items before it and, for its updates, after it: each action
// twice the units of the same standard write on its table partition (a
// ConditionCheck as a write of the item unchanged), its index writes once.
func (m *Meter) committedActions(actions []transactAction, before, after images) float64 {
	wru := 0.0
	for _, a := range actions {
		old := before.get(a.ref)
		var cur map[string]types.AttributeValue
		switch a.kind {
		case "Put":
			cur = a.item
		case "Update":
			cur = after.get(a.ref)
		case "ConditionCheck":
			cur = old
		}
		units := transactionMultiplier * writeUnits(max(itemsize.ItemSize(old), itemsize.ItemSize(cur)))
		wru += m.addWrites(itemWrites(a.ref.table, a.ref.schema, a.ref.key, units, old, cur)...)
	}
	return wru
}

// tokenCommitted reports whether a transaction with this ClientRequestToken
// committed within the idempotency window.
func (m *Meter) tokenCommitted(token string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.tokens[token]
	return ok && time.Since(at) < idempotencyWindow
}

// commitToken records that a transaction with this ClientRequestToken
// committed, and forgets tokens older than the idempotency window.
func (m *Meter) commitToken(token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.tokens == nil {
		m.tokens = map[string]time.Time{}
	}
	if now.Sub(m.tokensPruned) >= idempotencyWindow/10 {
		for t, at := range m.tokens {
			if now.Sub(at) >= idempotencyWindow {
				delete(m.tokens, t)
			}
		}
		m.tokensPruned = now
	}
	m.tokens[token] = now
}
