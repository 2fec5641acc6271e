package faults_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/faults"
)

// TestRealConflicts runs two clients on one injector: a transaction of
// the first on item x is held in flight (applied, response held), and
// every write of the second touching x meets the conflict DynamoDB gives.
func TestRealConflicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.in.SetRealConflicts(true)
	first, second := f.in.DynamoDB(f.env.DB), f.in.DynamoDB(f.env.DB)
	g := faults.NewGate()
	f.in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.HoldResponse(g)})

	done := make(chan error, 1)
	go func() {
		_, err := first.TransactWriteItems(t.Context(), f.transaction("c", "x"))
		done <- err
	}()
	<-g.Arrived()

	// A transaction touching x at index 1.
	tx := f.transaction("c", "y")
	tx.TransactItems = append(tx.TransactItems, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(f.env.Table), Key: key("c", "x"),
		UpdateExpression:          aws.String("SET #v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": str("2")},
	}})
	_, err := second.TransactWriteItems(t.Context(), tx)
	wantOpError(t, err, "DynamoDB", "TransactWriteItems")
	if got, want := reasons(t, err), []string{"None", "TransactionConflict"}; !equal(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
	if f.get(t, "c", "y") != nil {
		t.Error("the conflicting transaction wrote c/y")
	}

	// A single-item write on x.
	err = f.put(t, second, row("c", "x", "v", "3"))
	var tce *types.TransactionConflictException
	if !errors.As(err, &tce) {
		t.Errorf("PutItem on an item in a transaction: error %v, want a *types.TransactionConflictException", err)
	}
	wantOpError(t, err, "DynamoDB", "PutItem")

	// A batch touching x and z: x comes back unprocessed, z is written.
	out, err := second.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		f.env.Table: {
			{PutRequest: &types.PutRequest{Item: row("c", "z")}},
			{PutRequest: &types.PutRequest{Item: row("c", "x", "v", "4")}},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if un := out.UnprocessedItems[f.env.Table]; len(un) != 1 || attr(un[0].PutRequest.Item, "sk") != "x" {
		t.Errorf("unprocessed %v, want the write of c/x", out.UnprocessedItems)
	}
	if f.get(t, "c", "z") == nil {
		t.Error("the batch's write of c/z was not applied")
	}

	// A write of another item does not conflict.
	if err := f.put(t, second, row("c", "w")); err != nil {
		t.Errorf("write of an unrelated item: %v", err)
	}

	g.Release()
	if err := <-done; err != nil {
		t.Fatalf("the transaction in flight first: %v", err)
	}
	if _, err := second.TransactWriteItems(t.Context(), tx); err != nil {
		t.Errorf("the transaction once the other one finished: %v", err)
	}
	if got := attr(f.get(t, "c", "x"), "v"); got != "2" {
		t.Errorf("c/x v = %q, want 2", got)
	}
	st := f.in.Stats()
	if n := st.Faults[faults.KindRealConflict]; n != 3 {
		t.Errorf("real conflicts counted %d, want 3 (%v)", n, st)
	}
}

// TestRealConflicts_Off checks that overlapping writes pass when real
// conflicts are off, and that single-item writes never conflict with
// each other.
func TestRealConflicts_Off(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	overlap := func(first, second func() error) {
		t.Helper()
		g := faults.NewGate()
		remove := f.in.Add(faults.Rule{Rate: 1, Count: 1, Fault: faults.HoldResponse(g)})
		defer remove()
		done := make(chan error, 1)
		go func() { done <- first() }()
		<-g.Arrived()
		if err := second(); err != nil {
			t.Errorf("overlapping write: %v", err)
		}
		g.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	tx := func() error {
		_, err := f.db.TransactWriteItems(t.Context(), f.transaction("o", "x"))
		return err
	}
	put := func() error { return f.put(t, f.db, row("o", "x")) }

	overlap(tx, tx) // conflicts off
	f.in.SetRealConflicts(true)
	overlap(put, put)
	if n := f.in.Stats().Faults[faults.KindRealConflict]; n != 0 {
		t.Errorf("real conflicts counted %d", n)
	}
}
