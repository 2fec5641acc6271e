package dynamo_test

import (
	"fmt"
	"testing"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// TestClearOfEveryKeyOverAFullStore: a KeyValuesCleared in an execution
// after the one that stored 150 keys puts a clear on each stored key's row,
// more rows than one transaction takes, so the turn is applied as a large
// turn. Clients read each key as cleared with one item, the key set again
// after the clear reads its new value, and the execution's end leaves that
// key's row alone.
func TestClearOfEveryKeyOverAFullStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst, stored = "kv-clear-full", 150
	in2 := func(id uint64, kind provider.EventKind) provider.Event {
		e := ev(id, inst, kind)
		e.ExecutionID = 2
		return e
	}
	completed := meta()
	completed.Status, completed.Output = provider.StatusCompleted, ptr("done")

	first := startAndFetch(ctx, t, p, inst)
	delta := []provider.Event{started(inst)}
	for i := range stored {
		delta = append(delta, ev(uint64(2+i), inst, provider.KeyValueSet{Key: fmt.Sprintf("k%03d", i), Value: "old", LastUpdatedAtMs: 7}))
	}
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: meta()}), "ack setting the keys")
	end := raiseAndFetch(ctx, t, p, inst, "end")
	must(t, p.AckOrchestrationItem(ctx, end.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(uint64(2+stored), inst, provider.OrchestrationCompleted{Output: "done"})}, Metadata: completed}), "ack ending execution 1")

	clear := raiseAndFetch(ctx, t, p, inst, "clear")
	if len(clear.KVSnapshot) != stored {
		t.Fatalf("snapshot of execution 2 holds %d keys; want the %d execution 1 stored", len(clear.KVSnapshot), stored)
	}
	must(t, p.AckOrchestrationItem(ctx, clear.LockToken, provider.TurnCommit{ExecutionID: 2, HistoryDelta: []provider.Event{
		in2(1, provider.KeyValuesCleared{}),
		in2(2, provider.KeyValueSet{Key: "k000", Value: "new", LastUpdatedAtMs: 9}),
	}}), "ack clearing every key")

	rows := rowsWithPrefix(ctx, t, env, inst, keys.KVRowsPrefix)
	cleared := 0
	for _, row := range rows {
		if _, ok := row["dclr"]; ok {
			cleared++
		}
	}
	if len(rows) != stored || cleared != stored-1 {
		t.Fatalf("%d KV rows, %d with a clear; want %d rows, each stored key but k000 cleared", len(rows), cleared, stored)
	}
	if v, ok, err := p.KVValue(ctx, inst, "k001"); err != nil || ok {
		t.Errorf("KVValue(k001) after the clear = %q, %v, %v; want not found", v, ok, err)
	}
	if v, ok, err := p.KVValue(ctx, inst, "k000"); err != nil || !ok || v != "new" {
		t.Errorf("KVValue(k000) after the clear = %q, %v, %v; want new", v, ok, err)
	}
	if all, err := p.KVValues(ctx, inst); err != nil || len(all) != 1 || all["k000"] != "new" {
		t.Errorf("KVValues after the clear = %v, %v; want k000=new only", all, err)
	}

	done := raiseAndFetch(ctx, t, p, inst, "done")
	if len(done.KVSnapshot) != stored {
		t.Errorf("snapshot during execution 2 holds %d keys; want the store's %d (the execution's writes are not in it)", len(done.KVSnapshot), stored)
	}
	must(t, p.AckOrchestrationItem(ctx, done.LockToken, provider.TurnCommit{ExecutionID: 2,
		HistoryDelta: []provider.Event{in2(3, provider.OrchestrationCompleted{Output: "done"})}, Metadata: completed}), "ack ending execution 2")
	rows = rowsWithPrefix(ctx, t, env, inst, keys.KVRowsPrefix)
	if len(rows) != 1 || rows[0]["k"] == nil {
		t.Fatalf("%d KV rows after execution 2 ended; want k000's alone", len(rows))
	}
	if _, written := rows[0]["dval"]; written {
		t.Errorf("k000's row still holds the execution's write after the merge: %v", rows[0])
	}
	if v, ok, err := p.KVValue(ctx, inst, "k000"); err != nil || !ok || v != "new" {
		t.Errorf("KVValue(k000) after execution 2 ended = %q, %v, %v; want new", v, ok, err)
	}
}
