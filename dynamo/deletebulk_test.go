package dynamo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// TestDeleteInstanceBulkTreeWithQueuedStarts: a bulk delete takes a tree
// larger than one transaction in parts. Each part's transaction removes
// the metadata and lock rows of its instances and their queued starts
// (which leave the pending count with them): a part of children that have
// all run and have a start queued again holds three rows each, and must
// be split further, not fail the delete as too large.
func TestDeleteInstanceBulkTreeWithQueuedStarts(t *testing.T) {
	t.Parallel()
	const parent, children = "bulk-parent", 60
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	item := startAndFetch(ctx, t, p, parent)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(parent)}, Metadata: meta()}
	childStart := func(i int) provider.StartOrchestrationItem {
		start := startItem(fmt.Sprintf("%s::child-%02d", parent, i))
		start.ParentInstance, start.ParentID = ptr(parent), ptr(uint64(i+2))
		return start
	}
	for i := range children {
		start := childStart(i)
		commit.HistoryDelta = append(commit.HistoryDelta, ev(uint64(i+2), parent, provider.SubOrchestrationScheduled{Name: testName, Instance: start.Instance, Input: "{}"}))
		commit.OrchestratorItems = append(commit.OrchestratorItems, start)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "parent's turn")
	for range children {
		got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil || got == nil {
			t.Fatalf("fetch of a child's first turn: %+v, %v", got, err)
		}
		m := meta()
		m.ParentInstanceID = parent
		must(t, p.AckOrchestrationItem(ctx, got.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(got.Instance)}, Metadata: m}), "child's first turn")
	}
	completeByEvent(ctx, t, p, parent, children+2)
	// Every child gets its start again (a resent start), queued.
	for i := range children {
		must(t, p.EnqueueForOrchestrator(ctx, childStart(i), 0), "start sent again")
	}

	res, err := p.DeleteInstanceBulk(ctx, provider.InstanceFilter{InstanceIDs: []string{parent}})
	if err != nil {
		t.Fatalf("DeleteInstanceBulk of a tree of %d with a start queued for each child: %v", children+1, err)
	}
	if res.InstancesDeleted != children+1 || res.QueueMessagesDeleted < children {
		t.Errorf("DeleteInstanceBulk = %+v; want the tree's %d instances and its %d queued starts", res, children+1, children)
	}
	for i := range children {
		for _, prefix := range []string{keys.Meta, keys.Lock, keys.QueuePrefix} {
			if rows := rowsWithPrefix(ctx, t, env, childStart(i).Instance, prefix); len(rows) != 0 {
				t.Fatalf("child %d keeps %d %s rows after the delete: %v", i, len(rows), prefix, rows)
			}
		}
	}
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	if m.PendingInstances != 0 || m.TotalInstances != 0 {
		t.Errorf("SystemMetrics after the delete: %d pending, %d instances; want none", m.PendingInstances, m.TotalInstances)
	}
}

// completeByEvent raises an event to instance, fetches its turn and
// completes the instance with "ok" as event id.
func completeByEvent(ctx context.Context, t *testing.T, p provider.Provider, instance string, id uint64) {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: instance, Name: "done", Data: "{}"}, 0), "raise")
	last, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || last == nil || last.Instance != instance {
		t.Fatalf("fetch of %s: %+v, %v", instance, last, err)
	}
	done := meta()
	done.Status, done.Output = provider.StatusCompleted, ptr("ok")
	must(t, p.AckOrchestrationItem(ctx, last.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(id, instance, provider.OrchestrationCompleted{Output: "ok"})}, Metadata: done}), "completing "+instance)
}
