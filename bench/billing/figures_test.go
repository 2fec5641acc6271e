package billing_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/tables"
)

// TestFigures_DuradynTable records what typical writes to the duradyn
// table cost by the rules.
func TestFigures_DuradynTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A 1 KB queue row that enters the ready index with a 1 KB projected
	// work item: 1 unit for the table, 1 for the index entry.
	base := item("pk", "w#inst", "sk", "work#1", tables.AttrReadyPK, "ready#0", tables.AttrReadySK, "00000001",
		tables.AttrVis, "1700000000", tables.AttrItem, "")
	row := item("pk", "w#inst", "sk", "work#1", tables.AttrReadyPK, "ready#0", tables.AttrReadySK, "00000001",
		tables.AttrVis, "1700000000", tables.AttrItem, pad(1024-itemsize.ItemSize(base)))
	u := f.measure(t, func() {
		if _, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: row}); err != nil {
			t.Fatal(err)
		}
	})
	checkUnits(t, "1 KB queue row, item projected into the ready index", u.WRU, 2)
	t.Logf("PutItem of a %d-byte queue row (index entry %d bytes): %v WRU, $%.9f", itemsize.ItemSize(row), itemsize.ItemSize(readyEntry(row)), u.WRU, u.Dollars())

	// The same 1 KB as an item outside both indexes (a history event).
	event := item("pk", "h#inst", "sk", "e#1", "body", "")
	event["body"] = pad(1024 - itemsize.ItemSize(event))
	u = f.measure(t, func() {
		if _, err := f.db.TransactWriteItems(f.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: &f.table, Item: event}}}}); err != nil {
			t.Fatal(err)
		}
	})
	checkUnits(t, "1 KB event in a transaction", u.WRU, 2)
	t.Logf("TransactWriteItems putting one %d-byte event: %v WRU, $%.9f", itemsize.ItemSize(event), u.WRU, u.Dollars())
}
