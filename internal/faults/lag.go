package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// SetIndexLag makes queries and scans of the named global secondary indexes
// (every index of the schema when none is named) see the index as it was between
// minLag and maxLag ago, the lag drawn uniformly per query: rows written
// within the lag are missing, rows changed within it show their old
// projected values, rows deleted within it are still there. minLag ==
// maxLag gives a fixed lag; maxLag 0 turns lag off for those indexes and
// forgets what was recorded of them. Time is the injector's clock
// ([Options.Now]).
//
// The model: each query of a lagging index first reads the whole index
// partition it names (a real Query on the partition key alone, all pages),
// which becomes a snapshot dated now; the caller's request is then
// evaluated locally against the newest snapshot of that partition dated
// at or before now minus the lag, or the oldest snapshot when none is that
// old. The injector thus knows an index's past only through the queries
// made of it: a change between two snapshots of a partition appears at
// the time of the later one, and the first query of a partition sees the
// present. A view can thus be older than the drawn lag by up to the time
// between two queries of its partition: changes stay hidden until the
// second query after them at the latest (a partition queried rarely lags
// more; DynamoDB bounds no index's lag either, so code that is correct
// against it tolerates this). A test that wants a row to be missing
// queries the partition once before writing it.
//
// A scan reads the whole index (a real Scan, all pages) and records a
// snapshot of each partition it holds, and an empty one of each partition
// seen before that it no longer holds; it then sees every partition as a
// query of it would, each with a lag of its own. A partition first seen by
// a scan, like one first seen by a query, shows the present. Its rows come
// in the order of the index's partition key, then as a query orders them;
// its filter may name the index's keys.
//
// The local evaluation implements the sort-key part of
// KeyConditionExpression (=, <, <=, >, >=, BETWEEN, begins_with),
// FilterExpression and ProjectionExpression (see the package
// documentation for the syntax), ScanIndexForward, Limit (items evaluated
// before the filter; a LastEvaluatedKey is returned whenever Limit items
// were evaluated), ExclusiveStartKey and LastEvaluatedKey (index keys plus
// table keys), Select (ALL_PROJECTED_ATTRIBUTES, SPECIFIC_ATTRIBUTES,
// COUNT) and ReturnConsumedCapacity (the capacity of the snapshot's reads).
// It does not apply the 1 MB page limit. Each page of a paged query is a
// query of its own, with its own snapshot and lag, as pages of a real
// index see it move. A request it cannot evaluate fails
// with an error naming the expression, whose chain holds [ErrUnsupported]
// and a ValidationException; invalid requests fail with a
// ValidationException as DynamoDB's would. Queries of the table itself
// and of indexes without lag are sent unchanged.
//
// SetIndexLag panics on an index the schema does not have or on lags that
// are negative or in the wrong order.
func (in *Injector) SetIndexLag(minLag, maxLag time.Duration, indexes ...string) {
	if minLag < 0 || maxLag < minLag {
		panic(fmt.Sprintf("faults: SetIndexLag: lag range [%v, %v]", minLag, maxLag))
	}
	if len(indexes) == 0 {
		for _, ix := range in.o.Schema.Indexes {
			indexes = append(indexes, ix.Name)
		}
	}
	for _, name := range indexes {
		if _, ok := in.index(name); !ok {
			panic(fmt.Sprintf("faults: SetIndexLag: the schema has no index %q", name))
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.lag == nil {
		in.lag = map[string]lagRange{}
	}
	for _, name := range indexes {
		if maxLag == 0 {
			delete(in.lag, name)
			for k, s := range in.snapshots {
				if s[0].index == name {
					delete(in.snapshots, k)
				}
			}
			continue
		}
		in.lag[name] = lagRange{minLag, maxLag}
	}
}

// lagRange is the lag of an index.
type lagRange struct{ min, max time.Duration }

// snapshot is the content of one index partition at one time.
type snapshot struct {
	index string
	at    time.Time
	rows  []item // as the index projects them; never modified
}

func (in *Injector) index(name string) (tables.Index, bool) {
	for _, ix := range in.o.Schema.Indexes {
		if ix.Name == name {
			return ix, true
		}
	}
	return tables.Index{}, false
}

// lagOf returns the lag of the index a query or scan names, if it lags.
func (in *Injector) lagOf(indexName *string) (lagRange, bool) {
	if indexName == nil {
		return lagRange{}, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	lr, ok := in.lag[*indexName]
	return lr, ok
}

// laggedQuery serves q from a lagging view of its index.
func (in *Injector) laggedQuery(ctx context.Context, api DynamoDB, q *dynamodb.QueryInput, lr lagRange, optFns []func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	ix, _ := in.index(*q.IndexName)
	plan, err := planQuery(q, ix)
	if err != nil {
		return nil, err
	}
	now := in.o.Now()
	rows, capacity, err := readPartition(ctx, api, q, ix, plan.partition, optFns)
	if err != nil {
		return nil, err
	}
	view := in.remember(snapshot{index: ix.Name, at: now, rows: rows}, partitionKey(aws.ToString(q.TableName), ix.Name, plan.partition), lr)
	out, err := plan.run(view, in.o.Schema, ix)
	if err != nil {
		return nil, err
	}
	if q.ReturnConsumedCapacity != "" && q.ReturnConsumedCapacity != types.ReturnConsumedCapacityNone {
		out.ConsumedCapacity = &types.ConsumedCapacity{TableName: q.TableName, CapacityUnits: aws.Float64(capacity)}
	}
	in.countFault(OpQuery, KindLaggedQuery, 1)
	return out, nil
}

// readPartition reads every row of one index partition.
func readPartition(ctx context.Context, api DynamoDB, q *dynamodb.QueryInput, ix tables.Index, partition types.AttributeValue, optFns []func(*dynamodb.Options)) ([]item, float64, error) {
	in := &dynamodb.QueryInput{
		TableName:                 q.TableName,
		IndexName:                 q.IndexName,
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": ix.PartitionKey.Name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": partition},
		ReturnConsumedCapacity:    q.ReturnConsumedCapacity,
	}
	var rows []item
	var capacity float64
	for {
		page, err := api.Query(ctx, in, optFns...)
		if err != nil {
			return nil, 0, err
		}
		rows = append(rows, page.Items...)
		if page.ConsumedCapacity != nil {
			capacity += aws.ToFloat64(page.ConsumedCapacity.CapacityUnits)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return rows, capacity, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// laggedScan serves s, a scan of a lagging index, from a lagging view of
// each of its partitions: the whole index is read (a real Scan, all
// pages), each partition's rows become that partition's snapshot, dated
// now, as a query of it would record (a partition that a query or scan saw
// before and that is now empty records an empty one), and the scan is
// evaluated against the union of the partitions' views, each lag drawn
// apart.
func (in *Injector) laggedScan(ctx context.Context, api DynamoDB, s *dynamodb.ScanInput, lr lagRange, optFns []func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	ix, _ := in.index(*s.IndexName)
	plan, err := planScan(s, ix)
	if err != nil {
		return nil, err
	}
	now := in.o.Now()
	all := &dynamodb.ScanInput{TableName: s.TableName, IndexName: s.IndexName, ReturnConsumedCapacity: s.ReturnConsumedCapacity}
	byPartition := map[string][]item{}
	var capacity float64
	for {
		page, err := api.Scan(ctx, all, optFns...)
		if err != nil {
			return nil, err
		}
		for _, row := range page.Items {
			key := partitionKey(aws.ToString(s.TableName), ix.Name, row[ix.PartitionKey.Name])
			byPartition[key] = append(byPartition[key], row)
		}
		if page.ConsumedCapacity != nil {
			capacity += aws.ToFloat64(page.ConsumedCapacity.CapacityUnits)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		all.ExclusiveStartKey = page.LastEvaluatedKey
	}
	in.mu.Lock()
	prefix := partitionKey(aws.ToString(s.TableName), ix.Name, nil)
	for key := range in.snapshots {
		if _, ok := byPartition[key]; !ok && strings.HasPrefix(key, prefix) {
			byPartition[key] = nil
		}
	}
	in.mu.Unlock()
	var view []item
	for _, key := range slices.Sorted(maps.Keys(byPartition)) {
		view = append(view, in.remember(snapshot{index: ix.Name, at: now, rows: byPartition[key]}, key, lr)...)
	}
	q, err := plan.run(view, in.o.Schema, ix)
	if err != nil {
		return nil, err
	}
	out := &dynamodb.ScanOutput{Items: q.Items, Count: q.Count, ScannedCount: q.ScannedCount, LastEvaluatedKey: q.LastEvaluatedKey}
	if s.ReturnConsumedCapacity != "" && s.ReturnConsumedCapacity != types.ReturnConsumedCapacityNone {
		out.ConsumedCapacity = &types.ConsumedCapacity{TableName: s.TableName, CapacityUnits: aws.Float64(capacity)}
	}
	in.countFault(OpScan, KindLaggedQuery, 1)
	return out, nil
}

// partitionKey names one partition of a table's index in the injector's
// snapshots; a nil partition gives the prefix of the index's names.
func partitionKey(table, index string, partition types.AttributeValue) string {
	key := table + "\x00" + index + "\x00"
	if partition != nil {
		key += valueKey(partition)
	}
	return key
}

// remember records s, the newest state of the index partition key names
// (partitionKey), and returns the rows of the snapshot a query with a lag
// drawn from lr sees. Snapshots no later query can see are dropped.
func (in *Injector) remember(s snapshot, key string, lr lagRange) []item {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.snapshots == nil {
		in.snapshots = map[string][]snapshot{}
	}
	list := in.snapshots[key]
	// After every snapshot of the same time or older: with equal times,
	// the later query's snapshot is the newer one. Of several with one
	// time only the last can be served (and the first, as the oldest), so
	// a clock that stands still keeps at most two per partition.
	at := datedBy(list, s.at)
	if at >= 2 && list[at-1].at.Equal(s.at) {
		list[at-1] = s
	} else {
		list = slices.Insert(list, at, s)
	}

	lag := lr.min
	if lr.max > lr.min {
		lag += time.Duration(in.rng.Int64N(int64(lr.max-lr.min) + 1))
	}
	// The newest snapshot at least lag old, else the oldest.
	view := max(datedBy(list, s.at.Add(-lag))-1, 0)
	// Later queries look back at most lr.max from a later time: snapshots
	// older than the newest one that is lr.max old can no longer be
	// served.
	if drop := datedBy(list, s.at.Add(-lr.max)) - 1; drop > 0 {
		list = slices.Delete(list, 0, drop)
		view -= drop
	}
	in.snapshots[key] = list
	return list[view].rows
}

// datedBy returns how many snapshots of list (sorted by time) are dated
// at or before t.
func datedBy(list []snapshot, t time.Time) int {
	i, _ := slices.BinarySearchFunc(list, t, func(x snapshot, t time.Time) int {
		if x.at.After(t) {
			return 1
		}
		return -1
	})
	return i
}
