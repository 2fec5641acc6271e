package billing_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/tables"
)

// TestTransactWriteItems_Puts checks that ten transactional puts of 1- and
// 3-unit items cost twice the sum of their units, 40, and records what
// DynamoDB Local reports for them: 8, which is why the meter computes
// transactions instead of trusting the emulator.
func TestTransactWriteItems_Puts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var actions []types.TransactWriteItem
	sum := 0.0
	for i := range 10 {
		n := 500
		if i%2 == 1 {
			n = 2500
		}
		it := item("pk", "t", "sk", fmt.Sprint(i), "body", pad(n))
		sum += wru(itemsize.ItemSize(it))
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: &f.table, Item: it}})
	}
	var local float64
	u := f.measure(t, func() {
		out, err := f.db.TransactWriteItems(f.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		if err != nil {
			t.Fatal(err)
		}
		local = sumReported(out.ConsumedCapacity)
	})
	checkUnits(t, "sum of units", sum, 20)
	checkUnits(t, "meter WRU", u.WRU, 2*sum)
	checkUnits(t, "DynamoDB Local (under-counts)", local, 8)
}

// TestTransactWriteItems_Mixed checks each kind of action, and that index
// writes are added once, as standard writes.
func TestTransactWriteItems_Mixed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	checked := item("pk", "m", "sk", "check", "body", pad(1500))
	toUpdate := item("pk", "m", "sk", "update", tables.AttrReadyPK, "r", tables.AttrReadySK, "1", "body", pad(100))
	toDelete := item("pk", "m", "sk", "delete", "body", pad(2500))
	for _, it := range []map[string]types.AttributeValue{checked, toUpdate, toDelete} {
		f.put(t, it)
	}
	newRow := item("pk", "m", "sk", "put", tables.AttrReadyPK, "r", tables.AttrReadySK, "2", tables.AttrVis, "v")
	updated := item("pk", "m", "sk", "update", tables.AttrReadyPK, "r", tables.AttrReadySK, "3", "body", pad(100))
	token := rand.Text() // 26 characters; DynamoDB allows 36
	in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token), TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &f.table, Key: key("m", "check"), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &types.Put{TableName: &f.table, Item: newRow}},
		{Update: &types.Update{TableName: &f.table, Key: key("m", "update"), UpdateExpression: aws.String("SET rq_sk = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": str("3")}}},
		{Delete: &types.Delete{TableName: &f.table, Key: key("m", "delete")}},
	}}
	table := wru(itemsize.ItemSize(checked)) + wru(itemsize.ItemSize(newRow)) +
		wru(itemsize.ItemSize(updated)) + wru(itemsize.ItemSize(toDelete))
	index := wru(itemsize.ItemSize(readyEntry(newRow))) + // new entry
		wru(itemsize.ItemSize(readyEntry(toUpdate))) + wru(itemsize.ItemSize(readyEntry(updated))) // moved entry
	u := f.measure(t, func() {
		if _, err := f.db.TransactWriteItems(f.ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	checkUnits(t, "table units", table, 2+1+1+3)
	checkUnits(t, "meter WRU", u.WRU, 2*table+index)

	// The same transaction again with the same token is a replay: DynamoDB
	// reads the items instead of writing them, 2 read units per 4 KB each.
	u = f.measure(t, func() {
		if _, err := f.db.TransactWriteItems(f.ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	checkUnits(t, "replay WRU", u.WRU, 0)
	checkUnits(t, "replay RRU", u.RRU, 4*2)
}

// TestTransactWriteItems_Cancelled checks the bill of a cancelled
// transaction: each action as a failed conditional write, doubled.
func TestTransactWriteItems_Cancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	existing := item("pk", "x", "sk", "1", "body", pad(2500))
	f.put(t, existing)
	u := f.measure(t, func() {
		_, err := f.db.TransactWriteItems(f.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: &f.table, Key: key("x", "1"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Put: &types.Put{TableName: &f.table, Item: item("pk", "x", "sk", "2")}},
		}})
		var cancelled *types.TransactionCanceledException
		if !errors.As(err, &cancelled) {
			t.Fatalf("got %v, want TransactionCanceledException", err)
		}
	})
	checkUnits(t, "meter WRU", u.WRU, 2*wru(itemsize.ItemSize(existing))+2*1)
}
