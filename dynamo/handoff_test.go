package dynamo_test

import (
	"context"
	"errors"
	"strconv"
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
	"github.com/duradyn/duradyn/queues"
)

// These tests check activities handed to a waiting worker fetch
// (handoff.go): the turn that schedules a chain's next activity writes it
// claimed for a fetch of its process that waits, and the fetch returns it
// without a request of its own.

// workFetchResult is what a worker fetch run in the background returned.
type workFetchResult struct {
	w   *provider.LockedWorkItem
	err error
}

// waitingWorkerFetch starts a worker fetch on p that waits up to 20 s, and
// returns once it waits for a signal.
func waitingWorkerFetch(ctx context.Context, t *testing.T, p *dynamo.Provider) <-chan workFetchResult {
	t.Helper()
	done := make(chan workFetchResult, 1)
	before := dynamo.WaitingFetches(p, queues.Worker)
	go func() {
		w, err := p.FetchWorkItem(ctx, longLock, 20*time.Second, nil, provider.AnyTag())
		done <- workFetchResult{w, err}
	}()
	awaitCondition(t, "the worker fetch waits", func() bool { return dynamo.WaitingFetches(p, queues.Worker) > before })
	return done
}

// workerRow reads the worker row of activity id of instance (execution 1).
func workerRow(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string, id uint64) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(env.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: keys.WorkerPK(instance)},
			"sk": &types.AttributeValueMemberS{Value: keys.WorkerSK(1, id)},
		},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read worker row")
	return out.Item
}

// slotRow reads the activity slot of instance (dynamo's slot.go).
func slotRow(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(env.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)},
			"sk": &types.AttributeValueMemberS{Value: keys.SlotSK},
		},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read the activity slot")
	return out.Item
}

// activityRow reads the row activity id of instance runs in: the
// instance's slot if the slot holds it, else its worker row. work is the
// row's sort key, as a signal names it.
func activityRow(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string, id uint64) (row map[string]types.AttributeValue, work string) {
	t.Helper()
	if slot := slotRow(ctx, t, env, instance); attrString(slot, "slot") == "run" && attrString(slot, "sa") == strconv.FormatUint(id, 10) {
		return slot, keys.SlotSK
	}
	return workerRow(ctx, t, env, instance, id), keys.WorkerSK(1, id)
}

// attrString returns the string or number attribute name of row ("" when
// absent).
func attrString(row map[string]types.AttributeValue, name string) string {
	switch v := row[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

// TestTurnHandsItsActivityToAWaitingFetch: a turn schedules a chain's next
// activity while a worker fetch of the same process waits. The turn's
// transaction writes it claimed for that fetch into the instance's empty
// activity slot (no worker row), and the fetch returns it with no request
// of its own: the turn's one TransactWriteItems is all the step's dispatch
// costs. The worker's ack turns the slot into the completion with one
// UpdateItem, and the next turn takes it as its message.
func TestTurnHandsItsActivityToAWaitingFetch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Meter: meter})
	const inst = "handed"
	turn := startAndFetch(ctx, t, p, inst)
	done := waitingWorkerFetch(ctx, t, p)

	meter.Reset()
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.Instance != inst || r.w.Item.ID != 2 || r.w.AttemptCount != 1 {
		t.Fatalf("the waiting fetch got %+v, want activity 2 of %q, attempt 1", r.w, inst)
	}
	if u := meter.Usage(); u.Total() != 1 || u.Requests["TransactWriteItems"] != 1 {
		t.Fatalf("the turn and the fetch made %v, want the turn's TransactWriteItems alone", u.Requests)
	}
	if row := workerRow(ctx, t, env, inst, 2); row != nil {
		t.Fatalf("a handed activity has a worker row too: %v", row)
	}
	row := slotRow(ctx, t, env, inst)
	if got := attrString(row, "tok"); got != r.w.LockToken {
		t.Fatalf("the slot holds token %q, want the fetch's %q", got, r.w.LockToken)
	}
	if got := attrString(row, "att"); got != "1" {
		t.Fatalf("the slot counts %q attempts, want 1", got)
	}

	// It is locked as any claimed row: renewable, not fetchable by
	// others, and its ack delivers the completion.
	must(t, p.RenewWorkItemLock(ctx, r.w.LockToken, longLock), "RenewWorkItemLock")
	if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("a second fetch got %+v, %v; want nothing (the row is locked)", w, err)
	}
	meter.Reset()
	must(t, p.AckWorkItem(ctx, r.w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "ok"}), "AckWorkItem")
	if u := meter.Usage(); u.Total() != 1 || u.Requests["UpdateItem"] != 1 {
		t.Fatalf("the ack of a handed activity made %v, want one UpdateItem", u.Requests)
	}
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if next == nil || len(next.Messages) != 1 {
		t.Fatalf("the completion's turn: %+v, want one message", next)
	}
	if c, ok := next.Messages[0].(provider.ActivityCompletedItem); !ok || c.ID != 2 || c.Result != "ok" {
		t.Fatalf("the completion's turn took %#v, want activity 2's completion", next.Messages[0])
	}
}

// TestTurnHandsNothingWithoutAWaitingFetch: with no worker fetch waiting,
// the activity is written unclaimed, in the instance's slot, and a later
// fetch claims it.
func TestTurnHandsNothingWithoutAWaitingFetch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true})
	const inst = "not-handed"
	turn := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	row := slotRow(ctx, t, env, inst)
	if tok, att, sa := attrString(row, "tok"), attrString(row, "att"), attrString(row, "sa"); tok != "" || att != "0" || sa != "2" {
		t.Fatalf("with nobody waiting the slot holds activity %q, token %q and %q attempts, want activity 2, no token, 0 attempts", sa, tok, att)
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if w == nil || w.Item.ID != 2 || w.AttemptCount != 1 {
		t.Fatalf("FetchWorkItem: %+v, want activity 2, attempt 1", w)
	}
}

// handoffRig is a provider whose DynamoDB requests go through an
// injector, with instance inst started and its first turn fetched, and a
// worker fetch (run with fetchCtx) waiting.
type handoffRig struct {
	p       *dynamo.Provider
	env     *dynamotest.Env
	in      *faults.Injector
	inst    string
	turn    *provider.OrchestrationItem
	fetched <-chan workFetchResult
}

func newHandoffRig(ctx, fetchCtx context.Context, t *testing.T, seed int64, inst string) *handoffRig {
	t.Helper()
	r := &handoffRig{in: faults.New(seed), inst: inst}
	r.p, r.env = dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		heldAcks(o)
		o.Client = r.in.DynamoDB(o.Client)
	}})
	r.turn = startAndFetch(ctx, t, r.p, inst)
	r.fetched = waitingWorkerFetch(fetchCtx, t, r.p)
	return r
}

// holdTurn acks the turn, scheduling one activity, in the background, and
// returns once its transaction is held at the gate it returns; acked
// reports the ack's outcome after the gate is released.
func (r *handoffRig) holdTurn(ctx context.Context, t *testing.T) (gate *faults.Gate, acked <-chan error) {
	t.Helper()
	gate = faults.NewGate()
	t.Cleanup(gate.Release)
	r.in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.Hold(gate)})
	done := make(chan error, 1)
	go func() { done <- r.p.AckOrchestrationItem(ctx, r.turn.LockToken, activities(r.inst, 1)) }()
	must(t, gate.Wait(ctx, 1), "the turn's transaction is held")
	return gate, done
}

// TestHandedActivityOfAFetchThatLeftGoesBack: the fetch a turn reserved
// leaves (its context ends) while the turn's transaction is in flight.
// The committed row is handed back at once, its attempt not counted, and
// the next fetch takes it as a first attempt.
func TestHandedActivityOfAFetchThatLeftGoesBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fctx, leave := context.WithCancel(ctx)
	r := newHandoffRig(ctx, fctx, t, 31, "handed-left")
	gate, acked := r.holdTurn(ctx, t)
	leave()
	got := <-r.fetched
	if got.w != nil || !errors.Is(got.err, context.Canceled) {
		t.Fatalf("the fetch that left returned %+v, %v; want nothing and its context's error", got.w, got.err)
	}
	gate.Release()
	must(t, <-acked, "AckOrchestrationItem")

	p, env, inst := r.p, r.env, r.inst
	row := slotRow(ctx, t, env, inst)
	if tok, att := attrString(row, "tok"), attrString(row, "att"); row == nil || tok != "" || att != "0" {
		t.Fatalf("after the handback the slot holds token %q and %q attempts (%v), want none", tok, att, row)
	}
	// Its completion may now come from anywhere: the turn keeps no lock.
	if tok := attrString(lockRow(ctx, t, env, inst), "tok"); tok != "" {
		t.Fatalf("after the handback the lock row holds token %q, want the lock released", tok)
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if w == nil || w.Item.ID != 2 || w.AttemptCount != 1 {
		t.Fatalf("FetchWorkItem after the handback: %+v, want activity 2, attempt 1", w)
	}
}

// TestFetchWokenDuringTheTurnGetsItsActivity: the reserved fetch is woken
// by another signal while the turn's transaction is in flight. It waits
// for the turn's outcome and returns the handed activity; the signal that
// woke it stays for the next fetch.
func TestFetchWokenDuringTheTurnGetsItsActivity(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rig := newHandoffRig(ctx, ctx, t, 32, "handed-woken")
	p, inst, done := rig.p, rig.inst, rig.fetched
	gate, acked := rig.holdTurn(ctx, t)
	// Another activity, enqueued by a client: its signal wakes the fetch.
	must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "other", ExecutionID: 1, ID: 7, Name: "A"}), "EnqueueForWorker")
	awaitCondition(t, "the fetch is woken", func() bool { return dynamo.WaitingFetches(p, queues.Worker) == 0 })
	select {
	case r := <-done:
		t.Fatalf("the reserved fetch returned %+v, %v before the turn's outcome", r.w, r.err)
	default:
	}
	gate.Release()
	must(t, <-acked, "AckOrchestrationItem")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.Instance != inst || r.w.Item.ID != 2 {
		t.Fatalf("the woken fetch got %+v, want activity 2 of %q", r.w, inst)
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem of the other activity")
	if w == nil || w.Item.Instance != "other" {
		t.Fatalf("the next fetch got %+v, want the client's activity", w)
	}
}

// TestFailedTurnReleasesTheReservedFetch: the turn's ack fails, and the
// fetch it reserved goes on waiting; the retried ack of the same commit
// gets the activity to it as a first attempt. A cancelled transaction
// (a conflict) wrote nothing, so the retry hands the activity anew. When
// every response is lost the transaction committed, claiming the row for
// the fetch, with the ack's outcome unknown: the fetch is released at once,
// and the retry, learning the commit is in, hands the row back, so that
// the waiting fetch claims it.
func TestFailedTurnReleasesTheReservedFetch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		seed  int64
		fault faults.Rule
	}{
		{"conflict", 33, faults.Rule{Count: 1, Fault: faults.TransactionCanceled("TransactionConflict", 0)}},
		{"every response lost", 34, faults.Rule{Fault: faults.LostResponse()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rig := newHandoffRig(ctx, ctx, t, c.seed, "handed-failed")
			c.fault.Ops, c.fault.Rate = []string{faults.OpTransactWriteItems}, 1
			commit := activities(rig.inst, 1)
			remove := rig.in.Add(c.fault)
			err := rig.p.AckOrchestrationItem(ctx, rig.turn.LockToken, commit)
			remove()
			if err == nil {
				t.Fatal("the failed turn's ack succeeded")
			}
			select {
			case r := <-rig.fetched:
				t.Fatalf("the fetch returned %+v, %v after an ack that failed", r.w, r.err)
			default:
			}
			if n := dynamo.WaitingFetches(rig.p, queues.Worker); n != 1 {
				t.Fatalf("%d worker fetches wait after the failed ack, want the one still waiting", n)
			}
			must(t, rig.p.AckOrchestrationItem(ctx, rig.turn.LockToken, commit), "retried ack")
			r := <-rig.fetched
			must(t, r.err, "FetchWorkItem")
			if r.w == nil || r.w.Item.ID != 2 || r.w.AttemptCount != 1 {
				t.Fatalf("the fetch got %+v, want activity 2, attempt 1 (a handed claim that was not delivered is not an attempt)", r.w)
			}
		})
	}
}

// TestHandedActivityOutlivesItsProcess: the process a turn handed the
// activity to stops without acking it. Another process takes the activity
// once the handed lease ends, as a second attempt.
func TestHandedActivityOutlivesItsProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	other := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "handed-lost"
	handed := handedToSlot(ctx, t, p, env, inst)

	if w, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("another process got %+v, %v while the lease lasts; want nothing", w, err)
	}
	clock.Advance(longLock + time.Second)
	w, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem after the lease")
	if w == nil || w.Item.ID != 2 || w.AttemptCount != 2 {
		t.Fatalf("after the lease another process got %+v, want activity 2, attempt 2", w)
	}
	if err := p.AckWorkItem(ctx, handed.LockToken, nil); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("the first holder's empty ack after its lease: %v, want ErrInvalidLockToken", err)
	}
	if err := p.AckWorkItem(ctx, handed.LockToken, completed(inst, 2, "late")); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("the first holder's ack after its lease: %v, want ErrInvalidLockToken", err)
	}
	must(t, other.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "the second holder's ack")
	nextTurn(ctx, t, other, inst, completed(inst, 2, "ok"))
}
