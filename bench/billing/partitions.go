package billing

import (
	"encoding/base64"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
)

// Element is a table or one of its secondary indexes: each has its own
// partitions and its own per-partition throughput limits.
type Element struct {
	// Table is the table's name.
	Table string
	// Index is the secondary index's name, "" for the table itself.
	Index string
}

// Partition is one partition key value of a table or of one of its
// secondary indexes. DynamoDB keeps the items of one key value in one
// partition unless it splits them by sort key, so a key value is the unit
// its per-partition throughput limits (1,000 write and 3,000 read units a
// second) apply to.
type Partition struct {
	Element
	// Key is the partition key's value: a string's text, a number's digits,
	// a binary's bytes in standard base64. It is "" when the meter could not
	// tell the key (the table's schema could not be read).
	Key string
}

// Partitions is what a [Meter] counted by where it landed: the write units
// each partition key value consumed, and the read units of each table and
// index. Every write unit of [Usage.WRU] is in Writes and every read unit of
// [Usage.RRU] in Reads, so their sums match the usage's.
//
// A partition's write units are counted as DynamoDB consumes them from the
// partition's capacity: a transactional write twice (prepare and commit),
// as billed; an index entry's write once, on the index partition of the
// entry's key (an update that moves an entry to another index key writes
// the old key's partition and the new one's); a write whose condition
// failed on the item's partition.
//
// Reads are by element only: a Query's partition is in its key condition,
// which the meter does not parse. A BatchGetItem or TransactGetItems over
// several tables counts under the Element of none (empty Table).
type Partitions struct {
	// Writes are the write units consumed, by partition key value.
	Writes map[Partition]float64
	// Reads are the read units consumed, by table and index.
	Reads map[Element]float64
}

// Sub returns p - q, for measuring an interval: take a [Meter.Partitions]
// snapshot before and after, and subtract. Entries whose difference is zero
// are left out.
func (p Partitions) Sub(q Partitions) Partitions {
	return Partitions{Writes: subUnits(p.Writes, q.Writes), Reads: subUnits(p.Reads, q.Reads)}
}

func subUnits[K comparable](a, b map[K]float64) map[K]float64 {
	d := maps.Clone(a)
	for k, v := range b {
		if d == nil {
			d = map[K]float64{}
		}
		d[k] -= v
	}
	maps.DeleteFunc(d, func(_ K, v float64) bool { return v == 0 })
	return d
}

// ElementWrites returns the write units of each table and index: the sum
// of their partitions' writes.
func (p Partitions) ElementWrites() map[Element]float64 {
	out := map[Element]float64{}
	for part, u := range p.Writes {
		out[part.Element] += u
	}
	return out
}

// clone returns a deep copy of p.
func (p Partitions) clone() Partitions {
	return Partitions{Writes: maps.Clone(p.Writes), Reads: maps.Clone(p.Reads)}
}

// Partitions returns a snapshot of what m counted by partition since it was
// made.
func (m *Meter) Partitions() Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts.clone()
}

// partitionWrite is write units consumed on one partition, for the write
// of item (its key attributes at least).
type partitionWrite struct {
	part  Partition
	units float64
	item  map[string]types.AttributeValue
}

// addWrites adds writes to m's partition counts and returns their units.
func (m *Meter) addWrites(writes ...partitionWrite) float64 {
	total := 0.0
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts.Writes == nil {
		m.parts.Writes = map[Partition]float64{}
	}
	for _, w := range writes {
		if w.units != 0 {
			m.parts.Writes[w.part] += w.units
			total += w.units
			m.classifyWrite(w)
		}
	}
	return total
}

// ClassifyItems makes m count write units by item class as well
// ([Usage.WRUByItem]): class names the class of a written item from its
// attributes (its key at least). Call it before the meter counts.
func (m *Meter) ClassifyItems(class func(item map[string]types.AttributeValue) string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.class = class
}

// classifyWrite adds w to its item class's units; m.mu is held.
func (m *Meter) classifyWrite(w partitionWrite) {
	if m.class == nil {
		return
	}
	label := m.class(w.item)
	if w.part.Index != "" {
		label += " in " + w.part.Index
	}
	if m.usage.WRUByItem == nil {
		m.usage.WRUByItem = map[string]float64{}
	}
	m.usage.WRUByItem[label] += w.units
}

// addReads adds the read units of the request with input params to its
// element's count.
func (m *Meter) addReads(params any, units float64) {
	if units == 0 {
		return
	}
	e := readElement(params)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts.Reads == nil {
		m.parts.Reads = map[Element]float64{}
	}
	m.parts.Reads[e] += units
}

// readElement is the table or index a request reads: a Query's or Scan's
// index, else the table; for a request over several tables, the Element of
// none. A TransactWriteItems reads when DynamoDB answers a replay.
func readElement(params any) Element {
	var tables []*string
	switch p := params.(type) {
	case *dynamodb.QueryInput:
		return Element{Table: deref(p.TableName), Index: deref(p.IndexName)}
	case *dynamodb.ScanInput:
		return Element{Table: deref(p.TableName), Index: deref(p.IndexName)}
	case *dynamodb.GetItemInput:
		return Element{Table: deref(p.TableName)}
	case *dynamodb.BatchGetItemInput:
		for t := range p.RequestItems {
			tables = append(tables, &t)
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range p.TransactItems {
			if it.Get != nil {
				tables = append(tables, it.Get.TableName)
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range p.TransactItems {
			tables = append(tables, itemsize.ActionTable(it))
		}
	}
	one := ""
	for i, t := range tables {
		if i > 0 && deref(t) != one {
			return Element{}
		}
		one = deref(t)
	}
	return Element{Table: one}
}

// keyText is the text of a partition key value, by [Partition.Key].
func keyText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value)
	}
	return ""
}

// tablePartition is the table partition of an item with key attributes in
// item (the item itself or its key); s may be nil, when the table's schema
// could not be read: the key is then unknown.
func tablePartition(table string, s *tableSchema, item map[string]types.AttributeValue) Partition {
	p := Partition{Element: Element{Table: table}}
	if s != nil {
		p.Key = keyText(item[s.partitionKey])
	}
	return p
}

// itemWrites is one item's write going from old to cur (nil for absent)
// under key: tableUnits on its table partition, and the index writes
// [tableSchema.indexWrites] gives, on theirs. s may be nil (no index writes
// known).
func itemWrites(table string, s *tableSchema, key map[string]types.AttributeValue, tableUnits float64, old, cur map[string]types.AttributeValue) []partitionWrite {
	writes := []partitionWrite{{tablePartition(table, s, key), tableUnits, key}}
	if s != nil {
		for _, w := range s.indexWrites(table, old, cur) {
			w.item = key
			writes = append(writes, w)
		}
	}
	return writes
}

// indexWrites returns the writes the table's secondary indexes take when an
// item goes from before to after (nil for absent), each on the partition of
// the index entry it writes, by the rules of [tableSchema.indexWriteUnits].
func (s *tableSchema) indexWrites(table string, before, after map[string]types.AttributeValue) []partitionWrite {
	var writes []partitionWrite
	for _, ix := range s.indexes {
		old, cur := s.entry(ix, before), s.entry(ix, after)
		on := func(e map[string]types.AttributeValue, units float64) {
			writes = append(writes, partitionWrite{part: Partition{Element{table, ix.name}, keyText(e[ix.partitionKey])}, units: units})
		}
		switch {
		case old == nil && cur == nil:
		case old == nil:
			on(cur, writeUnits(itemsize.ItemSize(cur)))
		case cur == nil:
			on(old, writeUnits(itemsize.ItemSize(old)))
		case !sameIndexKey(ix, old, cur):
			on(old, writeUnits(itemsize.ItemSize(old)))
			on(cur, writeUnits(itemsize.ItemSize(cur)))
		case equalItems(old, cur):
		default:
			on(cur, writeUnits(max(itemsize.ItemSize(old), itemsize.ItemSize(cur))))
		}
	}
	return writes
}
