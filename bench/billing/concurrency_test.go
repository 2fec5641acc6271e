package billing_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/tables"
)

// TestMeter_Concurrent checks that one meter shared by goroutines writing
// and reading distinct items counts every request and unit.
func TestMeter_Concurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const workers = 4
	perWorker := 20
	if testing.Short() {
		perWorker = 5
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var wantWRU float64
	for w := range workers {
		for i := range perWorker {
			it := item("pk", fmt.Sprint("c", w), "sk", fmt.Sprint(i), tables.AttrReadyPK, "r", tables.AttrReadySK, fmt.Sprint(w, "-", i), "body", pad(1500))
			wantWRU += wru(itemsize.ItemSize(it)) + wru(itemsize.ItemSize(readyEntry(it)))
		}
	}
	u := f.measure(t, func() {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					it := item("pk", fmt.Sprint("c", w), "sk", fmt.Sprint(i), tables.AttrReadyPK, "r", tables.AttrReadySK, fmt.Sprint(w, "-", i), "body", pad(1500))
					if _, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: it}); err != nil {
						errs <- err
						return
					}
					if _, err := f.db.GetItem(f.ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: key(fmt.Sprint("c", w), fmt.Sprint(i))}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
	n := workers * perWorker
	if u.DynamoDB["PutItem"] != n || u.DynamoDB["GetItem"] != n {
		t.Errorf("requests %v, want %d PutItem and %d GetItem", u.DynamoDB, n, n)
	}
	checkUnits(t, "WRU", u.WRU, wantWRU)
	checkUnits(t, "RRU", u.RRU, float64(n)*0.5)
}
