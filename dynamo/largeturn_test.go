package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// appliesStageRow picks the apply of a large turn's staging row n.
func appliesStageRow(n int) func(faults.Request) bool {
	suffix := "#" + keys.Num20(uint64(n))
	return func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.TransactWriteItemsInput)
		if !ok {
			return false
		}
		for _, a := range in.TransactItems {
			if a.Delete == nil {
				continue
			}
			if sk, ok := a.Delete.Key["sk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, keys.StagePrefix) && strings.HasSuffix(sk.Value, suffix) {
				return true
			}
		}
		return false
	}
}

// TestForceDeleteDuringALargeTurnThatStartsChildren: a turn starts more
// children than its commit can link, so their starts and links are staged.
// A force delete of the parent that comes after the staged starts of some
// children are applied, and before their links are, must not leave those
// children behind: no instance may remain once the delete and the turn are
// over.
func TestForceDeleteDuringALargeTurnThatStartsChildren(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const children = 120 // more links than a commit holds
	env := dynamotest.NewEnv(t, false)
	in := faults.New(11)
	a := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Options: heldAcks})
	b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Options: heldAcks})
	const parent = "large-parent"
	item := startAndFetch(ctx, t, a, parent)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(parent)}, Metadata: meta()}
	for i := range children {
		id := uint64(i + 2)
		child := fmt.Sprintf("%s::sub::%d", parent, id)
		commit.HistoryDelta = append(commit.HistoryDelta, ev(id, parent, provider.SubOrchestrationScheduled{Name: testName, Instance: child, Input: "{}"}))
		start := startItem(child)
		start.ParentInstance, start.ParentID = ptr(parent), ptr(id)
		commit.OrchestratorItems = append(commit.OrchestratorItems, start)
	}

	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: appliesStageRow(1), Count: 1, Fault: faults.Hold(gate)})
	acked := make(chan error, 1)
	go func() { acked <- a.AckOrchestrationItem(ctx, item.LockToken, commit) }()
	must(t, gate.Wait(ctx, 1), "second staging row's apply at its gate")
	// Committed, the first staging row applied: some children's starts are
	// queued, the links of none written yet.
	_, derr := b.DeleteInstancesAtomic(ctx, []string{parent}, true)
	gate.Release()
	aerr := <-acked
	t.Logf("delete: %v; ack: %v", derr, aerr)

	if aerr != nil && !errors.Is(aerr, provider.ErrInvalidLockToken) {
		t.Fatalf("ack of the large turn: %v", aerr)
	}
	left, err := env.ScanMetrics(ctx)
	must(t, err, "scan the table")
	if derr == nil {
		// Deleted: the whole tree, or the children no one will delete
		// stay behind, started under a parent that is gone.
		if left.TotalInstances != 0 || left.PendingInstances != 0 {
			t.Fatalf("after a force delete of the parent: %d instances and %d queued starts left; want none", left.TotalInstances, left.PendingInstances)
		}
	} else {
		// Refused: the tree stays whole, every child linked to its parent.
		kids, err := b.ListChildren(ctx, parent)
		must(t, err, "ListChildren")
		if len(kids) != children {
			t.Fatalf("after a refused delete (%v): the parent lists %d children; want %d", derr, len(kids), children)
		}
	}
	checkMetrics(ctx, t, env, b, "after the delete")
}

// TestLargeTurnWhoseCommitterDiesMidApplyIsFinished: a committed large turn
// whose committer dies after applying some of its staging rows is finished
// by another process, whatever the rows applied: here the first row holds
// the turn's history and most of its activities, the second the rest, a
// few events for instances that do not exist, the instance's own timer and
// the delete of the consumed start (staged last, commitRecords). Until the
// turn is finished the instance must stay where a sweep finds it, so that
// another process's fetch finishes it once the lease is over.
//
// The turn is made large by activities, not by events for other
// instances: each of those leaves a message the other process must read
// and park before its sweep reaches the turn, and on a loaded machine a
// hundred of them outlast any deadline the test could state.
func TestLargeTurnWhoseCommitterDiesMidApplyIsFinished(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const acts = 110 // more than a transaction takes
	const others = 3 // events for instances that do not exist
	// The lease must outlast the committer's staging and commit: a commit
	// past it is refused (fenced), and no turn would be left to finish. A
	// loaded machine took more than 2 s to get there.
	const lease = 10 * time.Second
	env := dynamotest.NewEnv(t, false)
	in := faults.New(13)
	a := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	const inst = "dies-mid-apply"
	must(t, a.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
	item, err := a.FetchOrchestrationItem(ctx, lease, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem: %v, %v", item, err)
	}
	fireAt := uint64(time.Now().Add(lease).UnixMilli())
	commit := activities(inst, acts)
	timerID := uint64(acts + 2)
	commit.HistoryDelta = append(commit.HistoryDelta, ev(timerID, inst, provider.TimerCreated{FireAtMs: fireAt}))
	for i := range others {
		commit.OrchestratorItems = append(commit.OrchestratorItems, provider.ExternalRaisedItem{Instance: fmt.Sprintf("other-%03d", i), Name: "e", Data: "{}"})
	}
	commit.OrchestratorItems = append(commit.OrchestratorItems, provider.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: timerID, FireAtMs: fireAt})

	// The committer dies before the second row's apply: every attempt of
	// it fails, and the ack is not retried.
	stop := in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: appliesStageRow(1), Fault: faults.ServerError("InternalServerError")})
	if err := a.AckOrchestrationItem(ctx, item.LockToken, commit); err == nil {
		t.Fatal("ack whose second apply fails: got nil, want an error")
	}
	stop()
	must(t, a.Close(), "close the committer")
	if !turnPending(ctx, t, env, inst) {
		t.Fatalf("the ack did not commit its turn before failing (its lease of %v ran out first?): nothing to finish", lease)
	}
	// The rows split as the test means: the second, not applied, holds
	// the timer and the start's delete, so the start alone is queued.
	if msgs := rowsWithPrefix(ctx, t, env, inst, keys.QueuePrefix); len(msgs) != 1 || !isKind(msgs[0], provider.KindStartOrchestration) {
		t.Fatalf("the instance's messages between the applies: %d; want its start alone", len(msgs))
	}

	// Another process's fetches finish the turn once a's lease is over; the
	// events for instances that do not exist go out of the way.
	finished := func() bool {
		row := lockRow(ctx, t, env, inst)
		_, pending := row["turn"]
		_, done := row["tdone"]
		return done && !pending
	}
	deadline := time.Now().Add(lease + 30*time.Second)
	for !finished() {
		if time.Now().After(deadline) {
			t.Fatalf("the committed turn was not finished within %v of its committer's death", lease+30*time.Second)
		}
		got, err := b.FetchOrchestrationItem(ctx, longLock, 0, nil)
		must(t, err, "fetch by the other process")
		if got != nil {
			must(t, b.AbandonOrchestrationItem(ctx, got.LockToken, time.Hour, true), "abandon "+got.Instance)
		}
	}
	// Finished whole: the instance's timer is queued, its start consumed.
	if msgs := rowsWithPrefix(ctx, t, env, inst, keys.QueuePrefix); len(msgs) != 1 || !isKind(msgs[0], provider.KindTimerFired) {
		t.Fatalf("the instance has %d messages after the turn; want its timer alone", len(msgs))
	}
	if q := workerRows(ctx, t, b); q != acts {
		t.Fatalf("%d activities queued after the turn; want %d", q, acts)
	}
}

// isKind reports whether message row m is of kind k.
func isKind(m map[string]types.AttributeValue, k string) bool {
	kind, _ := m["kind"].(*types.AttributeValueMemberS)
	return kind != nil && kind.Value == k
}

// turnPending reports whether inst's lock row points at a committed large
// turn not yet finished.
func turnPending(ctx context.Context, t *testing.T, env *dynamotest.Env, inst string) bool {
	t.Helper()
	_, pending := lockRow(ctx, t, env, inst)["turn"]
	return pending
}

// finishesTurn picks the transaction that finishes a large turn: the last
// staging row's apply, which releases the lock.
func finishesTurn(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.TransactWriteItemsInput)
	if !ok || len(in.TransactItems) == 0 || in.TransactItems[0].Update == nil {
		return false
	}
	u := in.TransactItems[0].Update
	sk, _ := u.Key["sk"].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == keys.Lock && aws.ToString(u.ConditionExpression) == "#turn = :tid"
}

// pendingEndedTurn leaves instance inst with two executions, the second
// ended by a large turn whose committer died at its last staging row, the
// one that finishes the turn. It returns a live provider on the table.
func pendingEndedTurn(t *testing.T, inst string) (*dynamotest.Env, *dynamo.Provider) {
	t.Helper()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(17)
	a := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	first := startAndFetch(ctx, t, a, inst)
	must(t, a.AckOrchestrationItem(ctx, first.LockToken, lifeTurn(inst, 1, life{execs: 2})), "first execution continues as new")
	second, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || second == nil {
		t.Fatalf("fetch of the second execution: %v, %v", second, err)
	}
	commit := activities(inst, 150)
	commit.ExecutionID = 2
	for i := range commit.HistoryDelta {
		commit.HistoryDelta[i].ExecutionID = 2
	}
	for i := range commit.WorkerItems {
		commit.WorkerItems[i].ExecutionID = 2
	}
	end := uint64(len(commit.HistoryDelta) + 1)
	commit.HistoryDelta = append(commit.HistoryDelta, evx(end, inst, 2, provider.OrchestrationCompleted{Output: "done"}))
	commit.Metadata.Status, commit.Metadata.Output = provider.StatusCompleted, ptr("done")

	stop := in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: finishesTurn, Fault: faults.ServerError("InternalServerError")})
	if err := a.AckOrchestrationItem(ctx, second.LockToken, commit); err == nil {
		t.Fatal("ack whose release fails: got nil, want an error")
	}
	stop()
	must(t, a.Close(), "close the committer")
	return env, b
}

// TestPruneFinishesAPendingLargeTurn: a prune of the first execution of
// pendingEndedTurn's instance is not refused for the pending turn.
func TestPruneFinishesAPendingLargeTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "prune-pending"
	env, b := pendingEndedTurn(t, inst)
	res, err := b.PruneExecutions(ctx, inst, provider.PruneOptions{KeepLast: 1})
	must(t, err, "PruneExecutions")
	if res.ExecutionsDeleted != 1 {
		t.Fatalf("PruneExecutions deleted %d executions; want the first", res.ExecutionsDeleted)
	}
	checkMetrics(ctx, t, env, b, "after the prune")
}

// TestAppendFinishesAPendingLargeTurn: events appended to the ended
// execution of pendingEndedTurn's instance are stored, not refused for the
// pending turn.
func TestAppendFinishesAPendingLargeTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "append-pending"
	env, b := pendingEndedTurn(t, inst)
	before, err := b.ReadWithExecution(ctx, inst, 2)
	must(t, err, "ReadWithExecution")
	next := uint64(len(before) + 1)
	must(t, b.AppendWithExecution(ctx, inst, 2, []provider.Event{evx(next, inst, 2, provider.ExternalEvent{Name: "late", Data: "{}"})}), "AppendWithExecution")
	after, err := b.ReadWithExecution(ctx, inst, 2)
	must(t, err, "ReadWithExecution")
	if len(after) != len(before)+1 {
		t.Fatalf("execution 2 has %d events after the append; want %d", len(after), len(before)+1)
	}
	checkMetrics(ctx, t, env, b, "after the append")
}

// TestLargeTurnCommitterDeathAtEachStep: the committer of a turn of 150
// activities dies at each step of the large-turn protocol in turn (its
// requests of that step fail, and it never acks again). Another process
// then finds the instance without a signal: before the commit it takes
// the message again, the turn never made; from the commit on it finishes
// the turn, whole (the second row's apply is the last, which releases the
// lock: no step lies between the applies and the release).
func TestLargeTurnCommitterDeathAtEachStep(t *testing.T) {
	t.Parallel()
	const n = 150
	const lease = 10 * time.Second // outlasts staging and commit on a loaded machine (see above)
	stages := func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.BatchWriteItemInput)
		if !ok {
			return false
		}
		for _, reqs := range in.RequestItems {
			for _, w := range reqs {
				if w.PutRequest == nil {
					continue
				}
				if sk, ok := w.PutRequest.Item["sk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, keys.StagePrefix) {
					return true
				}
			}
		}
		return false
	}
	steps := []struct {
		name      string
		op        string
		match     func(faults.Request) bool
		committed bool
	}{
		{"Stage", faults.OpBatchWriteItem, stages, false},
		{"Commit", faults.OpTransactWriteItems, isLockCommit, false},
		{"FirstApply", faults.OpTransactWriteItems, appliesStageRow(0), true},
		{"SecondApply", faults.OpTransactWriteItems, appliesStageRow(1), true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, false)
			in := faults.New(19)
			a := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
			b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
			inst := "dies-at-" + step.name
			must(t, a.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
			item, err := a.FetchOrchestrationItem(ctx, lease, 0, nil)
			if err != nil || item == nil {
				t.Fatalf("FetchOrchestrationItem: %v, %v", item, err)
			}
			stop := in.Add(faults.Rule{Ops: []string{step.op}, Rate: 1, Match: step.match, Fault: faults.ServerError("InternalServerError")})
			if err := a.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)); err == nil {
				t.Fatal("ack whose step fails: got nil, want an error")
			}
			stop()
			must(t, a.Close(), "close the committer")
			if step.committed && !turnPending(ctx, t, env, inst) {
				t.Fatalf("the ack did not commit its turn before failing (its lease of %v ran out first?): nothing to finish", lease)
			}

			deadline := time.Now().Add(lease + 30*time.Second)
			for {
				if time.Now().After(deadline) {
					t.Fatalf("no other process took the instance within %v of its committer's death", lease+30*time.Second)
				}
				got, err := b.FetchOrchestrationItem(ctx, longLock, 0, nil)
				must(t, err, "fetch by the other process")
				if step.committed && got == nil && workerRows(ctx, t, b) == n {
					break // finished: the consumed start gone, every activity queued
				}
				if got == nil {
					continue
				}
				if step.committed {
					t.Fatalf("fetched %q with %d messages after its committed turn", got.Instance, len(got.Messages))
				}
				if len(got.History) != 0 || len(got.Messages) != 1 {
					t.Fatalf("fetch after a turn that never committed: %d events, %d messages; want none and the start", len(got.History), len(got.Messages))
				}
				must(t, b.AckOrchestrationItem(ctx, got.LockToken, activities(inst, n)), "the turn again, by the other process")
				break
			}
			turnIsWhole(ctx, t, env, b, inst, n)
		})
	}
}

// TestLargeTurnLastApplyResponseLost: the response to the last staging
// row's apply, which also releases the lock, is lost below the SDK's
// retryer; the resend meets the turn finished. The ack succeeds and the
// turn is in, whole.
func TestLargeTurnLastApplyResponseLost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const n = 150
	env := dynamotest.NewEnv(t, false)
	in := faults.New(23)
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	const inst = "last-apply-lost"
	item := startAndFetch(ctx, t, p, inst)
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Match: finishesTurn, Fault: faults.LostResponse()})
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)), "ack whose last apply lost its response")
	if lost := in.Stats().Faults[faults.KindLostResponse]; lost != 1 {
		t.Fatalf("%d responses lost; want 1", lost)
	}
	turnIsWhole(ctx, t, env, p, inst, n)
}

// turnIsWhole checks that inst's turn of n activities (activities) is in
// and finished: its history, its activities queued, the lock row free of
// it, and the counter cells as the table.
func turnIsWhole(ctx context.Context, t *testing.T, env *dynamotest.Env, p *dynamo.Provider, inst string, n int) {
	t.Helper()
	history, err := p.Read(ctx, inst)
	must(t, err, "Read")
	if len(history) != n+1 {
		t.Fatalf("history has %d events; want the turn's %d", len(history), n+1)
	}
	if q := workerRows(ctx, t, p); q != n {
		t.Fatalf("%d activities queued; want %d", q, n)
	}
	if _, pending := lockRow(ctx, t, env, inst)["turn"]; pending {
		t.Fatal("the lock row still holds the turn")
	}
	checkMetrics(ctx, t, env, p, "after the turn")
}
