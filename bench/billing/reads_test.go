package billing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/tables"
)

func TestGetItem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	small := item("pk", "g", "sk", "1", "body", pad(3500))
	large := item("pk", "g", "sk", "2", "body", pad(5000))
	f.put(t, small)
	f.put(t, large)
	for _, c := range []struct {
		what       string
		key        map[string]types.AttributeValue
		consistent bool
		projection *string
		want       float64
	}{
		{"3.5 KB strongly consistent", key("g", "1"), true, nil, rru(itemsize.ItemSize(small))},
		{"3.5 KB eventually consistent", key("g", "1"), false, nil, rru(itemsize.ItemSize(small)) / 2},
		{"5 KB strongly consistent", key("g", "2"), true, nil, rru(itemsize.ItemSize(large))},
		{"5 KB eventually consistent", key("g", "2"), false, nil, rru(itemsize.ItemSize(large)) / 2},
		{"5 KB projected to its key", key("g", "2"), true, aws.String("pk"), 2},
		{"absent item strongly consistent", key("g", "absent"), true, nil, 1},
		{"absent item eventually consistent", key("g", "absent"), false, nil, 0.5},
	} {
		var local float64
		u := f.measure(t, func() {
			out, err := f.db.GetItem(f.ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: c.key,
				ConsistentRead: aws.Bool(c.consistent), ProjectionExpression: c.projection,
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
			if err != nil {
				t.Fatal(err)
			}
			local = reported(out.ConsumedCapacity)
		})
		checkUnits(t, c.what+": meter RRU", u.RRU, c.want)
		checkUnits(t, c.what+": DynamoDB Local", local, c.want)
		if u.WRU != 0 || u.DynamoDB["GetItem"] != 1 {
			t.Errorf("%s: usage %+v, want one GetItem and no write units", c.what, u)
		}
	}
}

func TestQuery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Ten queue rows of 500 and 2,500 bytes, in one partition and in the
	// ready index; "body" is not projected into the index.
	var rows []map[string]types.AttributeValue
	tableBytes, indexBytes := 0, 0
	for i := range 10 {
		n := 500
		if i%2 == 1 {
			n = 2500
		}
		row := item("pk", "q", "sk", fmt.Sprint(i), tables.AttrReadyPK, "ready", tables.AttrReadySK, fmt.Sprintf("%04d", i),
			tables.AttrVis, "v", "body", pad(n))
		f.put(t, row)
		rows = append(rows, row)
		tableBytes += itemsize.ItemSize(row)
		indexBytes += itemsize.ItemSize(readyEntry(row))
	}
	// A filter that matches nothing: the page still evaluated every item.
	nothing := map[string]types.AttributeValue{":p": str("q"), ":r": str("ready"), ":x": str("no such value")}
	for _, c := range []struct {
		what string
		in   dynamodb.QueryInput
		want float64
	}{
		{"table, filtered, strongly consistent", dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"),
			FilterExpression: aws.String("vis = :x"), ConsistentRead: aws.Bool(true)}, rru(tableBytes)},
		{"table, filtered, eventually consistent", dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"),
			FilterExpression: aws.String("vis = :x")}, rru(tableBytes) / 2},
		{"table, limit 3, projected", dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"),
			Limit: aws.Int32(3), ProjectionExpression: aws.String("sk"), ConsistentRead: aws.Bool(true)},
			rru(itemsize.ItemSize(rows[0]) + itemsize.ItemSize(rows[1]) + itemsize.ItemSize(rows[2]))},
		{"table, count", dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"), Select: types.SelectCount,
			ConsistentRead: aws.Bool(true)}, rru(tableBytes)},
		{"ready index, filtered", dynamodb.QueryInput{IndexName: aws.String(tables.IndexReady),
			KeyConditionExpression: aws.String("rq_pk = :r"), FilterExpression: aws.String("vis = :x")}, rru(indexBytes) / 2},
	} {
		in := c.in
		in.TableName = &f.table
		in.ExpressionAttributeValues = map[string]types.AttributeValue{}
		for k, v := range nothing {
			if containsPlaceholder(&in, k) {
				in.ExpressionAttributeValues[k] = v
			}
		}
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
		var local float64
		u := f.measure(t, func() {
			out, err := f.db.Query(f.ctx, &in)
			if err != nil {
				t.Fatal(err)
			}
			local = reported(out.ConsumedCapacity)
		})
		checkUnits(t, c.what+": meter RRU", u.RRU, c.want)
		checkUnits(t, c.what+": DynamoDB Local", local, c.want)
	}
	if got := rru(tableBytes); got != 4 {
		t.Errorf("table query units %v, want 4 (about 15 KB)", got)
	}
}

// containsPlaceholder reports whether one of in's expressions uses the
// value placeholder p (DynamoDB rejects unused ones).
func containsPlaceholder(in *dynamodb.QueryInput, p string) bool {
	return strings.Contains(aws.ToString(in.KeyConditionExpression), p) ||
		strings.Contains(aws.ToString(in.FilterExpression), p)
}

// TestQuery_EmptyPage shows where DynamoDB Local departs from the
// documented minimum: a Query that evaluates no item reports 0 units; a
// read costs at least 1 unit strongly consistent, 0.5 eventually
// consistent, and the meter counts that.
func TestQuery_EmptyPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, consistent := range []bool{true, false} {
		var local float64
		u := f.measure(t, func() {
			out, err := f.db.Query(f.ctx, &dynamodb.QueryInput{TableName: &f.table, KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("empty")}, ConsistentRead: aws.Bool(consistent),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				t.Fatal(err)
			}
			local = reported(out.ConsumedCapacity)
		})
		want := 0.5
		if consistent {
			want = 1
		}
		checkUnits(t, fmt.Sprintf("consistent=%v: meter RRU", consistent), u.RRU, want)
		checkUnits(t, fmt.Sprintf("consistent=%v: DynamoDB Local", consistent), local, 0)
	}
}

// TestBatchGetItem checks that each processed key costs what a GetItem of
// it would, an absent item included. DynamoDB Local reports nothing for
// absent items.
func TestBatchGetItem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	large := item("pk", "bg", "sk", "1", "body", pad(6000))
	f.put(t, large)
	for _, projected := range []bool{false, true} {
		var local float64
		u := f.measure(t, func() {
			ka := types.KeysAndAttributes{Keys: []map[string]types.AttributeValue{key("bg", "1"), key("bg", "absent1"), key("bg", "absent2")},
				ConsistentRead: aws.Bool(true)}
			if projected {
				ka.ProjectionExpression = aws.String("sk")
			}
			out, err := f.db.BatchGetItem(f.ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{f.table: ka},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				t.Fatal(err)
			}
			local = sumReported(out.ConsumedCapacity)
		})
		checkUnits(t, fmt.Sprintf("projected=%v: meter RRU", projected), u.RRU, rru(itemsize.ItemSize(large))+2)
		checkUnits(t, fmt.Sprintf("projected=%v: DynamoDB Local (absent items not counted)", projected), local, rru(itemsize.ItemSize(large)))
	}
}

func TestTransactGetItems(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	large := item("pk", "tg", "sk", "1", "body", pad(6000))
	f.put(t, large)
	var local float64
	u := f.measure(t, func() {
		out, err := f.db.TransactGetItems(f.ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: &f.table, Key: key("tg", "1"), ProjectionExpression: aws.String("sk")}},
			{Get: &types.Get{TableName: &f.table, Key: key("tg", "absent")}},
		}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		local = sumReported(out.ConsumedCapacity)
	})
	want := 2*rru(itemsize.ItemSize(large)) + 2
	checkUnits(t, "meter RRU", u.RRU, want)
	checkUnits(t, "DynamoDB Local", local, want)
}
