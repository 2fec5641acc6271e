package billing_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/tables"
)

// TestPartitions_WritesLandOnTheirPartitions runs a put, an update that
// moves an item's ready-index entry to another key, a transaction, a failed
// conditional put and a batch write, and checks the units the meter counts
// on each partition key value of the table and its indexes: transactional
// table writes twice, index writes once on the entry's own partition (the
// moved entry's old and new ones), a failed write on its item's partition.
// Their sums are the usage's units.
func TestPartitions_WritesLandOnTheirPartitions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	table := func(key string) billing.Partition {
		return billing.Partition{Element: billing.Element{Table: f.table}, Key: key}
	}
	ready := func(key string) billing.Partition {
		return billing.Partition{Element: billing.Element{Table: f.table, Index: tables.IndexReady}, Key: key}
	}
	instances := func(key string) billing.Partition {
		return billing.Partition{Element: billing.Element{Table: f.table, Index: tables.IndexInstances}, Key: key}
	}
	before, usage := f.meter.Partitions(), f.meter.Usage()

	f.write(t, &dynamodb.PutItemInput{TableName: &f.table, Item: item("pk", "I#a", "sk", "x", tables.AttrReadyPK, "O#3", tables.AttrReadySK, "1")})
	f.write(t, &dynamodb.UpdateItemInput{TableName: &f.table, Key: key("I#a", "x"),
		UpdateExpression:          aws.String("SET #rq = :k"),
		ExpressionAttributeNames:  map[string]string{"#rq": tables.AttrReadyPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": str("O#5")}})
	f.write(t, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &f.table, Item: item("pk", "W#a", "sk", "1", tables.AttrReadyPK, "W#7", tables.AttrReadySK, "2")}},
		{Delete: &types.Delete{TableName: &f.table, Key: key("I#a", "x")}},
	}})
	_, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: item("pk", "I#b", "sk", "y"),
		ConditionExpression: aws.String("attribute_exists(pk)")})
	if ccf := (*types.ConditionalCheckFailedException)(nil); !errors.As(err, &ccf) {
		t.Fatalf("conditional put: %v, want a failed condition", err)
	}
	f.write(t, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{f.table: {
		{PutRequest: &types.PutRequest{Item: item("pk", "I#c", "sk", "1", tables.AttrInstancesPK, "L#2", tables.AttrInstancesSK, "1")}},
	}}})
	if _, err := f.db.Query(f.ctx, &dynamodb.QueryInput{TableName: &f.table, IndexName: aws.String(tables.IndexReady),
		KeyConditionExpression:    aws.String("rq_pk = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": str("W#7")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.GetItem(f.ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: key("W#a", "1"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if err := f.meter.Err(); err != nil {
		t.Fatalf("meter: %v", err)
	}

	got, used := f.meter.Partitions().Sub(before), f.meter.Usage().Sub(usage)
	want := map[billing.Partition]float64{
		table("I#a"):     1 + 1 + 2, // put, update, transactional delete
		ready("O#3"):     1 + 1,     // entry put, then moved away
		ready("O#5"):     1 + 1,     // entry moved in, then deleted
		table("W#a"):     2,         // transactional put
		ready("W#7"):     1,
		table("I#b"):     1, // failed condition on an absent item
		table("I#c"):     1,
		instances("L#2"): 1,
	}
	if !maps.Equal(got.Writes, want) {
		t.Errorf("writes by partition:\n got %v\nwant %v", got.Writes, want)
	}
	wantReads := map[billing.Element]float64{{Table: f.table, Index: tables.IndexReady}: 0.5, {Table: f.table}: 1}
	if !maps.Equal(got.Reads, wantReads) {
		t.Errorf("reads by element: got %v, want %v", got.Reads, wantReads)
	}
	checkUnits(t, "sum of partition writes", sumUnits(got.Writes), used.WRU)
	checkUnits(t, "sum of element reads", sumUnits(got.Reads), used.RRU)
	byElement := got.ElementWrites()
	checkUnits(t, "table writes", byElement[billing.Element{Table: f.table}], 8)
	checkUnits(t, "ready writes", byElement[billing.Element{Table: f.table, Index: tables.IndexReady}], 5)
}

// TestPartitions_CancelledTransaction checks that a cancelled transaction's
// units, billed as failed writes, land on the partitions of its items.
func TestPartitions_CancelledTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.put(t, item("pk", "I#d", "sk", "1", "body", pad(1500)))
	before := f.meter.Partitions()
	_, err := f.db.TransactWriteItems(f.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &f.table, Item: item("pk", "I#e", "sk", "1")}},
		{ConditionCheck: &types.ConditionCheck{TableName: &f.table, Key: key("I#d", "1"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if tc := (*types.TransactionCanceledException)(nil); !errors.As(err, &tc) {
		t.Fatalf("transaction: %v, want it cancelled", err)
	}
	got := f.meter.Partitions().Sub(before)
	want := map[billing.Partition]float64{
		{Element: billing.Element{Table: f.table}, Key: "I#e"}: 2, // no item: 1, twice
		{Element: billing.Element{Table: f.table}, Key: "I#d"}: 4, // a 1.5 KB item: 2, twice
	}
	if !maps.Equal(got.Writes, want) {
		t.Errorf("writes by partition: got %v, want %v", got.Writes, want)
	}
}

// write sends a metered write request and fails the test on an error.
func (f *fixture) write(t *testing.T, in any) {
	t.Helper()
	var err error
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		_, err = f.db.PutItem(f.ctx, in)
	case *dynamodb.UpdateItemInput:
		_, err = f.db.UpdateItem(f.ctx, in)
	case *dynamodb.TransactWriteItemsInput:
		_, err = f.db.TransactWriteItems(f.ctx, in)
	case *dynamodb.BatchWriteItemInput:
		_, err = f.db.BatchWriteItem(f.ctx, in)
	default:
		t.Fatalf("write: %T is not a write", in)
	}
	if err != nil {
		t.Fatalf("%T: %v", in, err)
	}
}

func sumUnits[K comparable](m map[K]float64) float64 {
	total := 0.0
	for _, u := range m {
		total += u
	}
	return total
}

// TestClassifyItems_WritesByItemClass classifies items by partition key
// prefix and runs a put, a transaction and a failed conditional put: each
// item's table writes count under its class, its index writes under the
// class and the index, and the classes sum to the usage's units.
func TestClassifyItems_WritesByItemClass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.meter.ClassifyItems(func(it map[string]types.AttributeValue) string {
		pk, _ := it["pk"].(*types.AttributeValueMemberS)
		if pk == nil || len(pk.Value) < 2 {
			return "other"
		}
		return pk.Value[:2]
	})
	usage := f.meter.Usage()
	f.write(t, &dynamodb.PutItemInput{TableName: &f.table, Item: item("pk", "I#a", "sk", "x", tables.AttrReadyPK, "O#3", tables.AttrReadySK, "1")})
	f.write(t, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &f.table, Item: item("pk", "W#a", "sk", "1", tables.AttrReadyPK, "W#7", tables.AttrReadySK, "2")}},
		{Delete: &types.Delete{TableName: &f.table, Key: key("I#a", "x")}},
	}})
	_, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: item("pk", "S#b", "sk", "y"),
		ConditionExpression: aws.String("attribute_exists(pk)")})
	if ccf := (*types.ConditionalCheckFailedException)(nil); !errors.As(err, &ccf) {
		t.Fatalf("conditional put: %v, want a failed condition", err)
	}
	if err := f.meter.Err(); err != nil {
		t.Fatalf("meter: %v", err)
	}
	used := f.meter.Usage().Sub(usage)
	want := map[string]float64{
		"I#":                         1 + 2, // put, transactional delete
		"I# in " + tables.IndexReady: 1 + 1, // entry put, then deleted
		"W#":                         2,     // transactional put
		"W# in " + tables.IndexReady: 1,
		"S#":                         1, // failed condition
	}
	if !maps.Equal(used.WRUByItem, want) {
		t.Errorf("writes by item class:\n got %v\nwant %v", used.WRUByItem, want)
	}
	checkUnits(t, "sum of item classes", sumUnits(used.WRUByItem), used.WRU)
}
