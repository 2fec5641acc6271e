package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests check the activity slot (slot.go): a handed activity lives
// in its instance's partition while it runs, and the worker's ack turns it
// into the completion with one conditional UpdateItem.

// handedToSlot starts instance on p, commits its first turn scheduling
// activity 2 while a worker fetch waits, and returns the handed activity.
func handedToSlot(ctx context.Context, t *testing.T, p *dynamo.Provider, env *dynamotest.Env, instance string) *provider.LockedWorkItem {
	t.Helper()
	turn := startAndFetch(ctx, t, p, instance)
	done := waitingWorkerFetch(ctx, t, p)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(instance, 1)), "turn scheduling an activity")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.ID != 2 {
		t.Fatalf("the waiting fetch got %+v, want activity 2", r.w)
	}
	if tok := attrString(slotRow(ctx, t, env, instance), "tok"); tok != r.w.LockToken {
		t.Fatalf("the slot holds token %q, want the handed activity's", tok)
	}
	return r.w
}

// completed is activity id's completion of instance.
func completed(instance string, id uint64, result string) provider.ActivityCompletedItem {
	return provider.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: id, Result: result}
}

// nextTurn fetches the next turn, which must be instance's with messages
// want, in order.
func nextTurn(ctx context.Context, t *testing.T, p provider.Provider, instance string, want ...provider.WorkItem) *provider.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != instance || len(item.Messages) != len(want) {
		t.Fatalf("turn: %+v; want instance %s with %d messages", item, instance, len(want))
	}
	for i, m := range item.Messages {
		if m != want[i] {
			t.Fatalf("message %d of the turn is %#v, want %#v", i, m, want[i])
		}
	}
	return item
}

// TestHandedActivityAckBelowTheRetryer: the worker's ack of a handed
// activity, one UpdateItem, lands and its response is lost, reset,
// answered with a 500 or stalled past the attempt's deadline
// (LeaseRequestTimeout, as for every ack) below the SDK's retryer; the
// request is sent again. The repeat finds the slot already filled by this
// token: the ack succeeds and the next turn takes the completion once.
func TestHandedActivityAckBelowTheRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	tr := faults.NewTransport(nil)
	p := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
	}})
	fill := func(op string, body []byte) bool { return op == "UpdateItem" && bytes.Contains(body, []byte(`"atok"`)) }
	stalled := faults.SlowResponse(dynamo.DefaultLeaseRequestTimeout + time.Second)
	for i, fault := range []faults.NetFault{faults.LoseResponse(), faults.ResetResponse(), faults.ServerStatus(500, true), stalled} {
		inst := fmt.Sprintf("slot-resent-%d", i)
		w := handedToSlot(ctx, t, p, env, inst)
		remove := tr.Add(faults.NetRule{Match: fill, Count: 1, Fault: fault})
		must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "the ack whose response was lost")
		remove()
		turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
		must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta()}), "turn taking the completion")
		if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
			t.Fatalf("after the completion's turn: %+v, %v; want nothing (delivered once)", item, err)
		}
	}
	if n := tr.Faulted("UpdateItem"); n != 4 {
		t.Fatalf("%d slot acks faulted; want 4", n)
	}
}

// TestCancelledSlotActivityLosesItsLock: a turn cancels the activity the
// slot runs. The slot is deleted in the turn's transaction, so the
// worker's renewal and ack fail with ErrInvalidLockToken and no completion
// reaches the instance.
func TestCancelledSlotActivityLosesItsLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true})
	const inst = "slot-cancelled"
	w := handedToSlot(ctx, t, p, env, inst)
	turn := raiseAndFetch(ctx, t, p, inst, "stop")
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
		ExecutionID: 1, Metadata: meta(),
		HistoryDelta:        []provider.Event{ev(3, inst, provider.ExternalEvent{Name: "stop", Data: "{}"})},
		CancelledActivities: []provider.ScheduledActivityIdentifier{{Instance: inst, ExecutionID: 1, ActivityID: 2}},
	}), "turn cancelling the activity")
	if row := slotRow(ctx, t, env, inst); row != nil {
		t.Fatalf("the slot outlived the cancellation of its activity: %v", row)
	}
	if err := p.RenewWorkItemLock(ctx, w.LockToken, longLock); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("renewal of the cancelled activity: %v, want ErrInvalidLockToken", err)
	}
	if err := p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "late")); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("ack of the cancelled activity: %v, want ErrInvalidLockToken", err)
	}
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
		t.Fatalf("after the cancellation: %+v, %v; want no turn", item, err)
	}
}

// TestBusySlotHandsTheNextActivityInAWorkerRow: while the slot runs one
// activity, a turn hands another to a waiting fetch in a worker row of its
// own; both completions reach the instance, in the order of the acks.
func TestBusySlotHandsTheNextActivityInAWorkerRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true})
	const inst = "slot-busy"
	first := handedToSlot(ctx, t, p, env, inst)
	turn := raiseAndFetch(ctx, t, p, inst, "more")
	done := waitingWorkerFetch(ctx, t, p)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
		ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{
			ev(3, inst, provider.ExternalEvent{Name: "more", Data: "{}"}),
			ev(4, inst, provider.ActivityScheduled{Name: "A", Input: "second"}),
		},
		WorkerItems: []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: 4, Name: "A", Input: "second"}},
	}), "turn scheduling a second activity")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.ID != 4 {
		t.Fatalf("the waiting fetch got %+v, want activity 4", r.w)
	}
	if tok := attrString(workerRow(ctx, t, env, inst, 4), "tok"); tok != r.w.LockToken {
		t.Fatalf("activity 4's worker row holds token %q, want the handed one's", tok)
	}
	if tok := attrString(slotRow(ctx, t, env, inst), "tok"); tok != first.LockToken {
		t.Fatalf("the slot holds token %q, want activity 2's still", tok)
	}
	must(t, p.AckWorkItem(ctx, r.w.LockToken, completed(inst, 4, "second")), "ack of activity 4")
	must(t, p.AckWorkItem(ctx, first.LockToken, completed(inst, 2, "first")), "ack of activity 2")
	nextTurn(ctx, t, p, inst, completed(inst, 4, "second"), completed(inst, 2, "first"))
}

// TestSlotCompletionKeepsItsPlaceInTheQueue: the slot's key sorts before
// every message, but its completion is delivered in the order of its ack
// among the instance's other messages.
func TestSlotCompletionKeepsItsPlaceInTheQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "slot-order"
	w := handedToSlot(ctx, t, p, env, inst)
	before := provider.ExternalRaisedItem{Instance: inst, Name: "before", Data: "{}"}
	after := provider.ExternalRaisedItem{Instance: inst, Name: "after", Data: "{}"}
	must(t, p.EnqueueForOrchestrator(ctx, before, 0), "raise the first event")
	clock.Advance(time.Millisecond)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	clock.Advance(time.Millisecond)
	must(t, p.EnqueueForOrchestrator(ctx, after, 0), "raise the second event")
	clock.Advance(time.Millisecond)
	nextTurn(ctx, t, p, inst, before, completed(inst, 2, "ok"), after)
}

// TestAbandonedSlotActivityIsClaimedAgain: a worker abandons the slot's
// activity; a later fetch claims the slot as any activity row, and its
// ack fills it.
func TestAbandonedSlotActivityIsClaimedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true})
	const inst = "slot-abandoned"
	w := handedToSlot(ctx, t, p, env, inst)
	must(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false), "AbandonWorkItem")
	again, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if again == nil || again.Item.ID != 2 || again.AttemptCount != 2 {
		t.Fatalf("the fetch after the abandon got %+v, want activity 2, attempt 2", again)
	}
	if err := p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "stale")); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("the abandoned token's ack: %v, want ErrInvalidLockToken", err)
	}
	must(t, p.AckWorkItem(ctx, again.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
}

// TestChainOfHandedActivitiesCostsThreeRequestsAStep: in a chain run by
// one process, each turn writes the next activity over the completion it
// took (the slot is reused) and keeps the instance's lock (kept.go), and
// each completion's signal reaches the next fetch: a step is the fetch's
// Query, the turn's transaction and the worker's UpdateItem, with no lock
// write and no sweep (sweeps are an hour apart here).
func TestChainOfHandedActivitiesCostsThreeRequestsAStep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	const inst = "slot-chain"
	w := handedToSlot(ctx, t, p, env, inst)
	for step := uint64(2); step < 10; step += 2 { // step: the activity id
		meter.Reset()
		var turn *provider.OrchestrationItem
		turn, w = handNextInSlot(ctx, t, p, inst, w)
		u := meter.Usage()
		if u.Total() != 3 || u.Requests["UpdateItem"] != 1 || u.Requests["TransactWriteItems"] != 1 || u.Requests["Query"] != 1 {
			t.Fatalf("step %d made %v; want 3 requests: Query, TransactWriteItems, UpdateItem", step, u.Requests)
		}
		if tok := attrString(lockRow(ctx, t, env, inst), "tok"); tok == "" || tok == turn.LockToken {
			t.Fatalf("step %d: the lock row holds token %q after the ack, want a kept lock's", step, tok)
		}
		if tok := attrString(slotRow(ctx, t, env, inst), "tok"); tok != w.LockToken {
			t.Fatalf("step %d: the slot holds token %q, want the next activity's", step, tok)
		}
	}
}

// handNextInSlot acks w, the handed activity in instance's slot, fetches
// the turn its completion brings and commits it scheduling the next
// activity, which it hands to a waiting worker fetch; it returns the turn
// and that activity.
func handNextInSlot(ctx context.Context, t *testing.T, p *dynamo.Provider, inst string, w *provider.LockedWorkItem) (*provider.OrchestrationItem, *provider.LockedWorkItem) {
	t.Helper()
	step := w.Item.ID
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, step, "ok")), "AckWorkItem")
	turn, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
	must(t, err, "FetchOrchestrationItem")
	if turn == nil || len(turn.Messages) != 1 || turn.Messages[0] != provider.WorkItem(completed(inst, step, "ok")) {
		t.Fatalf("step %d: the fetch got %+v; want the completion of activity %d", step, turn, step)
	}
	done := waitingWorkerFetch(ctx, t, p)
	next := step + 2
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
		ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{
			sourced(ev(step+1, inst, provider.ActivityCompleted{Result: "ok"}), step),
			ev(next, inst, provider.ActivityScheduled{Name: "A", Input: "next"}),
		},
		WorkerItems: []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: next, Name: "A", Input: "next"}},
	}), "the turn scheduling the next activity")
	r := <-done
	must(t, r.err, "FetchWorkItem")
	if r.w == nil || r.w.Item.ID != next {
		t.Fatalf("step %d: the waiting fetch got %+v, want activity %d", step, r.w, next)
	}
	return turn, r.w
}

// TestHandedSlotKeepsItsReadyEntry: an activity handed in the slot over
// the completion of the one before keeps the slot's ready entry (its keys
// and the attributes the index projects) while the entry's time still
// covers the new lease (handed at once, or a moment later), so the
// turn's put writes no index entry; once the
// lease would outlast it, the entry moves. The stored lease never ends
// before the one the fetch reports, and at most a quarter of the lease
// (at most a second) after it.
func TestHandedSlotKeepsItsReadyEntry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		o.Now = clock.Now
	}})
	const inst = "slot-entry"
	entryOf := func(w *provider.LockedWorkItem) [5]string {
		t.Helper()
		row := slotRow(ctx, t, env, inst)
		until, err := strconv.ParseInt(attrString(row, "lock_until"), 10, 64)
		must(t, err, "the slot's lock_until")
		if lease := w.LeaseExpiry.UnixMilli(); until < lease || until > lease+time.Second.Milliseconds() {
			t.Fatalf("the slot stores a lease ending %d ms after the one reported; want 0 to 1000", until-lease)
		}
		return [5]string{attrString(row, "rq_pk"), attrString(row, "rq_sk"), attrString(row, "lock_until"), attrString(row, "vis"), attrString(row, "att")}
	}
	w := handedToSlot(ctx, t, p, env, inst)
	first := entryOf(w)
	for _, later := range []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond} {
		clock.Advance(later)
		_, w = handNextInSlot(ctx, t, p, inst, w)
		if got := entryOf(w); got != first {
			t.Fatalf("activity %d handed %v after the one before changed the slot's ready entry from %v to %v", w.Item.ID, later, first, got)
		}
	}
	clock.Advance(2 * time.Second)
	_, w = handNextInSlot(ctx, t, p, inst, w)
	if got := entryOf(w); got[1] == first[1] {
		t.Fatalf("activity %d handed 2 s later kept the ready key %q, which its lease outlasts", w.Item.ID, got[1])
	}
}

// TestChainWithWorkersElsewhereUsesTheSlot: where the workers run in
// another process (as on Lambda or ECS), no fetch of the turn's process
// waits, so the turn writes the activity into the slot unclaimed. The
// worker's process claims it there with one UpdateItem, from the signal,
// and fills it with another: 2 requests a step, no transaction.
func TestChainWithWorkersElsewhereUsesTheSlot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	hour := func(o *dynamo.Options) { o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour }
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: hour})
	meter := &dynamotest.Meter{}
	workers := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: hour})
	const inst = "slot-elsewhere"
	// The workers' first fetch sweeps the empty queue once.
	if w, err := workers.FetchWorkItem(ctx, longLock, 10*time.Millisecond, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", w, err)
	}
	turn := startAndFetch(ctx, t, p, inst)
	for step := uint64(2); step < 10; step += 2 { // step: the activity id
		var history []provider.Event
		if step > 2 {
			history = append(history, sourced(ev(step-1, inst, provider.ActivityCompleted{Result: "ok"}), step-2))
		}
		must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
			HistoryDelta: append(history, ev(step, inst, provider.ActivityScheduled{Name: "A", Input: "next"})),
			WorkerItems:  []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: step, Name: "A", Input: "next"}},
		}), "the turn scheduling the activity")
		if row := slotRow(ctx, t, env, inst); attrString(row, "sa") != strconv.FormatUint(step, 10) || attrString(row, "tok") != "" {
			t.Fatalf("step %d: the slot holds activity %q, token %q; want activity %d, unclaimed", step, attrString(row, "sa"), attrString(row, "tok"), step)
		}
		meter.Reset()
		w, err := workers.FetchWorkItem(ctx, longLock, 20*time.Second, nil, provider.AnyTag())
		if err != nil || w == nil || w.Item.ID != step {
			t.Fatalf("step %d: the workers' fetch got %+v, %v; want activity %d", step, w, err, step)
		}
		must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, step, "ok")), "AckWorkItem")
		if u := meter.Usage(); u.Total() != 2 || u.Requests["UpdateItem"] != 2 {
			t.Fatalf("step %d: the workers made %v; want 2 UpdateItems, the claim and the ack", step, u.Requests)
		}
		// The completion's signal crosses by SQS.
		turn, err = p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
		if err != nil || turn == nil || len(turn.Messages) != 1 || turn.Messages[0] != provider.WorkItem(completed(inst, step, "ok")) {
			t.Fatalf("step %d: the fetch got %+v, %v; want the completion of activity %d", step, turn, err, step)
		}
	}
}

// sourced is e answering the event of id source.
func sourced(e provider.Event, source uint64) provider.Event {
	e.SourceEventID = &source
	return e
}

// TestAbandonedTurnKeepsTheSlotsCompletion: a turn that took the slot's
// completion is abandoned with a delay, which rewrites its messages; the
// slot stays a completion and the next turn, after the delay, takes it.
func TestAbandonedTurnKeepsTheSlotsCompletion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "slot-turn-abandoned"
	w := handedToSlot(ctx, t, p, env, inst)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
	must(t, p.AbandonOrchestrationItem(ctx, turn.LockToken, time.Minute, false), "AbandonOrchestrationItem")
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
		t.Fatalf("during the abandon's delay: %+v, %v; want no turn", item, err)
	}
	clock.Advance(time.Minute + time.Second)
	again := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
	if again.AttemptCount != 2 {
		t.Fatalf("the turn after the abandon counts attempt %d, want 2", again.AttemptCount)
	}
}

// TestDoneSlotOfADeadProcessIsTakenOver: a process acks its handed
// activity, filling the slot, and its completion's signal never leaves it
// (its sends to SQS fail, as when it dies first). With queues the slot's
// ready entry stays in the worker queue at the activity's lease's end, so
// no orchestrator sweep sees it; when the lease ends, another process's
// worker sweep tries to claim it, finds it done, and hands the instance to
// its own orchestrator fetches, whose turn takes the completion.
func TestDoneSlotOfADeadProcessIsTakenOver(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	mute := faults.New(1)
	mute.Add(faults.Rule{Ops: []string{faults.OpSendMessageBatch}, Rate: 1, Fault: faults.Throttle("")})
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.Now = clock.Now
		o.SQSClient = mute.SQS(o.SQSClient)
	}})
	other := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "slot-done-orphaned"
	w := handedToSlot(ctx, t, p, env, inst)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	if item, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
		t.Fatalf("another process's fetch before the lease's end: %+v, %v; want nothing", item, err)
	}
	clock.Advance(longLock + time.Second)
	if got, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || got != nil {
		t.Fatalf("a worker fetch after the lease: %+v, %v; want nothing (the slot holds a completion)", got, err)
	}
	nextTurn(ctx, t, other, inst, completed(inst, 2, "ok"))
}

// TestDoneSlotWithoutQueuesIsSwept: without SQS, signals stay in their
// process and other processes find work by sweeping, so the ack moves the
// slot's ready entry to the orchestrator queue: another process's
// orchestrator fetch takes the completion at once, not at the lease's end.
func TestDoneSlotWithoutQueuesIsSwept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{})
	other := env.NewProvider(t, dynamotest.Config{})
	const inst = "slot-done-swept"
	w := handedToSlot(ctx, t, p, env, inst)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	must(t, p.Close(), "Close") // which gives up the lock p kept
	nextTurn(ctx, t, other, inst, completed(inst, 2, "ok"))
}

// TestKeptSlotEntryOfAnAckWhoseResponseWasLost: with SQS (without, the
// worker's ack moves the done slot's entry to the orchestrator queue, and
// the next handed activity's entry is new), the turn that hands the next
// activity in the slot, keeping the slot's ready entry, has its
// transaction's response lost above and below the SDK's retryer. The
// resend lands once: the waiting fetch gets the activity, the entry is
// the one before, and another process cannot claim the slot until the
// stored lease is over, then takes it as a second attempt.
func TestKeptSlotEntryOfAnAckWhoseResponseWasLost(t *testing.T) {
	t.Parallel()
	for name, lose := range map[string]func(*faults.Injector, *faults.Transport){
		"above the retryer": func(in *faults.Injector, _ *faults.Transport) {
			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
		},
		"below the retryer": func(_ *faults.Injector, tr *faults.Transport) {
			tr.Add(faults.NetRule{Ops: []string{"TransactWriteItems"}, Count: 1, Fault: faults.LoseResponse()})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, true)
			clock := faults.NewFakeClock(time.Now())
			in, tr := faults.New(23), faults.NewTransport(nil)
			p := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
				o.Client = in.DynamoDB(env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() }))
				o.Now = clock.Now
			}})
			other := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
			const inst = "slot-entry-lost"
			w := handedToSlot(ctx, t, p, env, inst)
			before := attrString(slotRow(ctx, t, env, inst), "rq_sk")
			must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
			turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
			done := waitingWorkerFetch(ctx, t, p)
			lose(in, tr)
			must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
				ExecutionID: 1, Metadata: meta(),
				HistoryDelta: []provider.Event{
					sourced(ev(3, inst, provider.ActivityCompleted{Result: "ok"}), 2),
					ev(4, inst, provider.ActivityScheduled{Name: "A", Input: "next"}),
				},
				WorkerItems: []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: 4, Name: "A", Input: "next"}},
			}), "the turn whose response is lost")
			lost := tr.Faulted("TransactWriteItems")
			for _, n := range in.Stats().Ops[faults.OpTransactWriteItems].Faults {
				lost += int(n)
			}
			if lost != 1 {
				t.Fatalf("%d responses lost, want 1", lost)
			}
			r := <-done
			if r.err != nil || r.w == nil || r.w.Item.ID != 4 {
				t.Fatalf("the waiting fetch got %+v, %v; want activity 4", r.w, r.err)
			}
			row := slotRow(ctx, t, env, inst)
			if got := attrString(row, "rq_sk"); got != before {
				t.Fatalf("the slot's ready key moved from %q to %q", before, got)
			}
			stored, err := strconv.ParseInt(attrString(row, "lock_until"), 10, 64)
			must(t, err, "the slot's lock_until")
			if stored < r.w.LeaseExpiry.UnixMilli() {
				t.Fatalf("the slot stores a lease ending %d ms before the reported one", r.w.LeaseExpiry.UnixMilli()-stored)
			}
			clock.Advance(time.Duration(stored-1-clock.Now().UnixMilli()) * time.Millisecond)
			if got, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || got != nil {
				t.Fatalf("another process got %+v, %v before the stored lease ended; want nothing", got, err)
			}
			clock.Advance(2 * time.Millisecond)
			got, err := other.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
			must(t, err, "FetchWorkItem after the stored lease")
			if got == nil || got.Item.ID != 4 || got.AttemptCount != 2 {
				t.Fatalf("another process got %+v after the stored lease; want activity 4, attempt 2", got)
			}
		})
	}
}
