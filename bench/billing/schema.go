package billing

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// tableSchema is what the rules need of a table: its key attributes and its
// secondary indexes.
type tableSchema struct {
	partitionKey, sortKey string
	indexes               []secondaryIndex
}

// secondaryIndex is a global or local secondary index: its key attributes
// and what it projects.
type secondaryIndex struct {
	name                  string
	partitionKey, sortKey string
	projection            types.ProjectionType
	include               map[string]bool // INCLUDE projection's non-key attributes
}

// schemaFromDescription reads a table's keys and global secondary indexes
// with [tables.FromDescription], and its local secondary indexes from desc
// (a Schema has none).
func schemaFromDescription(desc *types.TableDescription) *tableSchema {
	s := tables.FromDescription(desc, nil)
	ts := &tableSchema{partitionKey: s.PartitionKey.Name, sortKey: s.SortKey.Name}
	for _, ix := range s.Indexes {
		ts.indexes = append(ts.indexes, newSecondaryIndex(ix.Name, ix.PartitionKey.Name, ix.SortKey.Name, ix.Projection, ix.NonKeyAttributes))
	}
	if desc == nil {
		return ts
	}
	for _, l := range desc.LocalSecondaryIndexes {
		var pk, sk string
		for _, k := range l.KeySchema {
			switch k.KeyType {
			case types.KeyTypeHash:
				pk = deref(k.AttributeName)
			case types.KeyTypeRange:
				sk = deref(k.AttributeName)
			}
		}
		var proj types.ProjectionType
		var nonKey []string
		if l.Projection != nil {
			proj, nonKey = l.Projection.ProjectionType, l.Projection.NonKeyAttributes
		}
		ts.indexes = append(ts.indexes, newSecondaryIndex(deref(l.IndexName), pk, sk, proj, nonKey))
	}
	return ts
}

func newSecondaryIndex(name, pk, sk string, proj types.ProjectionType, nonKey []string) secondaryIndex {
	ix := secondaryIndex{name: name, partitionKey: pk, sortKey: sk, projection: proj}
	if len(nonKey) > 0 {
		ix.include = make(map[string]bool, len(nonKey))
		for _, a := range nonKey {
			ix.include[a] = true
		}
	}
	return ix
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// key returns the table key attributes of item, or nil when item lacks one.
func (s *tableSchema) key(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{}
	for _, name := range []string{s.partitionKey, s.sortKey} {
		if name == "" {
			continue
		}
		v, ok := item[name]
		if !ok {
			return nil
		}
		k[name] = v
	}
	return k
}

// keyString encodes the table key of item; see [keyString].
func (s *tableSchema) keyString(item map[string]types.AttributeValue) (string, bool) {
	return keyString(item, s.partitionKey, s.sortKey)
}

// entry returns the index entry DynamoDB keeps in ix for item: the table's
// key attributes, the index's key attributes and the projected attributes.
// It returns nil when item is nil or lacks an index key attribute (a
// sparse index holds no entry for it).
func (s *tableSchema) entry(ix secondaryIndex, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	if _, ok := item[ix.partitionKey]; !ok {
		return nil
	}
	if ix.sortKey != "" {
		if _, ok := item[ix.sortKey]; !ok {
			return nil
		}
	}
	if ix.projection == types.ProjectionTypeAll {
		return item
	}
	e := map[string]types.AttributeValue{}
	for _, name := range []string{s.partitionKey, s.sortKey, ix.partitionKey, ix.sortKey} {
		if v, ok := item[name]; ok && name != "" {
			e[name] = v
		}
	}
	for name := range ix.include {
		if v, ok := item[name]; ok {
			e[name] = v
		}
	}
	return e
}

// indexWriteUnits returns the write request units the table's secondary
// indexes consume when an item goes from before to after (nil for absent),
// by "Provisioned throughput considerations for global secondary indexes",
// write capacity units
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes),
// for each index:
//
//   - no entry before or after: nothing;
//   - an entry appears (a new item with the index keys, or an update that
//     sets them): one write of the new entry;
//   - an entry disappears (a delete, or an update that removes an index
//     key): one write of the old entry;
//   - an index key changes: two writes, deleting the old entry and putting
//     the new one;
//   - the entry's projected attributes change, its keys do not: one write,
//     of the larger of the old and the new entry (as for UpdateItem; DynamoDB
//     Local agrees);
//   - the entry is unchanged (only attributes outside the projection
//     changed): nothing, as the page says ("if a write to a table does not
//     require a global secondary index update, then no write capacity is
//     consumed from the index").
//
// An entry's size is [itemsize.ItemSize] of the entry. The page's "100 bytes of
// overhead per index item" appears under storage, not under write capacity,
// and DynamoDB Local does not count it in the units it reports (a test
// shows it): the rules here leave it out. Index writes are standard writes,
// also when a transaction causes them: DynamoDB propagates transactional
// changes to its indexes after the transaction commits
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html).
func (s *tableSchema) indexWriteUnits(before, after map[string]types.AttributeValue) float64 {
	units := 0.0
	for _, w := range s.indexWrites("", before, after) {
		units += w.units
	}
	return units
}

func sameIndexKey(ix secondaryIndex, a, b map[string]types.AttributeValue) bool {
	for _, name := range []string{ix.partitionKey, ix.sortKey} {
		if name != "" && !equalValues(a[name], b[name]) {
			return false
		}
	}
	return true
}
