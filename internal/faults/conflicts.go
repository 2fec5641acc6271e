package faults

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SetRealConflicts turns on or off the detection of real conflicts between
// writes in flight through the DynamoDB wrappers of this injector (off in
// a new injector). A write is in flight from just before it is sent until
// its caller has the answer (a response held by [HoldResponse] included).
// With detection on, as DynamoDB does for two in-flight writes touching
// one item (same table, same key):
//
//   - a TransactWriteItems that touches (by Put, Update, Delete or
//     ConditionCheck) an item some write in flight touches fails, unsent,
//     with a TransactionCanceledException whose reason is
//     "TransactionConflict" at each such action and "None" elsewhere;
//   - a PutItem, UpdateItem or DeleteItem on an item a transaction in
//     flight touches fails, unsent, with a TransactionConflictException;
//   - the put and delete requests of a BatchWriteItem on such items are
//     not sent and come back in UnprocessedItems.
//
// Single-item writes do not conflict with each other (DynamoDB orders
// them). The write that was in flight first goes on unharmed. Each
// conflict counts as [KindRealConflict]. Without concurrency, none fires.
func (in *Injector) SetRealConflicts(on bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.realConflicts = on
}

// flight counts the writes in flight on one item.
type flight struct {
	writes       int // all writes, transactions included
	transactions int
}

// itemKey identifies an item across tables: the table name and the
// values of the schema's key attributes. A key attribute the item lacks
// counts as absent (DynamoDB would reject such a write anyway).
func (in *Injector) itemKey(table *string, it item) string {
	var b strings.Builder
	b.WriteString(aws.ToString(table))
	for _, name := range []string{in.o.Schema.PartitionKey.Name, in.o.Schema.SortKey.Name} {
		if name == "" {
			continue
		}
		b.WriteByte(0)
		b.WriteString(valueKey(it[name]))
	}
	return b.String()
}

// valueKey encodes a key attribute's value so that equal values, and only
// those, encode alike.
func valueKey(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		if r, ok := new(big.Rat).SetString(v.Value); ok {
			return "N" + r.RatString()
		}
		return "N" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	case nil:
		return "-"
	}
	return fmt.Sprintf("%T%v", v, v)
}

// transactionKeys returns the item key of each action of a transaction.
func (in *Injector) transactionKeys(input *dynamodb.TransactWriteItemsInput) []string {
	keys := make([]string, len(input.TransactItems))
	for i, a := range input.TransactItems {
		switch {
		case a.Put != nil:
			keys[i] = in.itemKey(a.Put.TableName, a.Put.Item)
		case a.Update != nil:
			keys[i] = in.itemKey(a.Update.TableName, a.Update.Key)
		case a.Delete != nil:
			keys[i] = in.itemKey(a.Delete.TableName, a.Delete.Key)
		case a.ConditionCheck != nil:
			keys[i] = in.itemKey(a.ConditionCheck.TableName, a.ConditionCheck.Key)
		}
	}
	return keys
}

// admitTransaction admits a transaction touching the items keys (one per
// action) or fails it with the cancellation DynamoDB gives when another
// write on one of them is in flight.
func (in *Injector) admitTransaction(keys []string) (func(), error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.realConflicts {
		return func() {}, nil
	}
	codes := make([]string, len(keys))
	conflict := false
	for i, k := range keys {
		codes[i] = "None"
		if f := in.inflight[k]; f != nil && f.writes > 0 {
			codes[i] = "TransactionConflict"
			conflict = true
		}
	}
	if conflict {
		in.stats.fault(OpTransactWriteItems, KindRealConflict, 1)
		return nil, transactionCanceledError(codes)
	}
	return in.enterLocked(keys, true), nil
}

// admitWrite admits a single-item write on the item key, or fails it with
// the TransactionConflictException DynamoDB gives when a transaction on
// the item is in flight.
func (in *Injector) admitWrite(op, key string) (func(), error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.realConflicts {
		return func() {}, nil
	}
	if f := in.inflight[key]; f != nil && f.transactions > 0 {
		in.stats.fault(op, KindRealConflict, 1)
		return nil, transactionConflictError(op)
	}
	return in.enterLocked([]string{key}, false), nil
}

// admitBatch admits the writes of a batch on the items keys that no
// transaction in flight touches and reports which ones it refused.
func (in *Injector) admitBatch(keys []string) (done func(), refused []bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	refused = make([]bool, len(keys))
	if !in.realConflicts {
		return func() {}, refused
	}
	var admitted []string
	for i, k := range keys {
		if f := in.inflight[k]; f != nil && f.transactions > 0 {
			refused[i] = true
			in.stats.fault(OpBatchWriteItem, KindRealConflict, 1)
			continue
		}
		admitted = append(admitted, k)
	}
	return in.enterLocked(admitted, false), refused
}

// enterLocked records writes in flight on keys and returns the function
// that ends them. The caller holds in.mu.
func (in *Injector) enterLocked(keys []string, transaction bool) func() {
	if in.inflight == nil {
		in.inflight = map[string]*flight{}
	}
	for _, k := range keys {
		f := in.inflight[k]
		if f == nil {
			f = &flight{}
			in.inflight[k] = f
		}
		f.writes++
		if transaction {
			f.transactions++
		}
	}
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, k := range keys {
			f := in.inflight[k]
			f.writes--
			if transaction {
				f.transactions--
			}
			if f.writes == 0 {
				delete(in.inflight, k)
			}
		}
	}
}

// cancelTransaction is the error of a [TransactionCanceled] fault for the
// transaction input.
func (in *Injector) cancelTransaction(f transactionCanceled, input any) error {
	tx, _ := input.(*dynamodb.TransactWriteItemsInput)
	n := 0
	if tx != nil {
		n = len(tx.TransactItems)
	}
	if n == 0 {
		return validationError(OpTransactWriteItems, "1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null", false)
	}
	index := f.index
	if index == -1 {
		in.mu.Lock()
		index = in.rng.IntN(n)
		in.mu.Unlock()
	}
	if index >= n {
		return opError(serviceDynamoDB, OpTransactWriteItems, fmt.Errorf("faults: TransactionCanceled at index %d of a transaction of %d actions", index, n))
	}
	codes := make([]string, n)
	for i := range codes {
		codes[i] = "None"
	}
	codes[index] = f.reason
	return transactionCanceledError(codes)
}
