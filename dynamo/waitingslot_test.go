package dynamo_test

import (
	"bytes"
	"context"
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

// These tests check a waiting slot's ready entry (slot.go, waitingSlot):
// an activity written unclaimed into the slot over the completion of the
// one before keeps that one's ready entry, and its first claim keeps it
// too when the entry's end covers the claim's lease.

// workerLease is the worker fetches' lease in these tests, the runtime's
// default: the slot stores a second more (entrySlack).
const workerLease = 6 * time.Second

// slotEntry is what the ready index holds of instance's slot: its keys and
// the projected attributes.
func slotEntry(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) [5]string {
	t.Helper()
	row := slotRow(ctx, t, env, instance)
	return [5]string{attrString(row, "rq_pk"), attrString(row, "rq_sk"), attrString(row, "lock_until"), attrString(row, "vis"), attrString(row, "att")}
}

// scheduleNext acks turn with activity id's completion (none for the first
// step) and the scheduling of activity id+2, which no fetch of p waits for.
func scheduleNext(ctx context.Context, t *testing.T, p *dynamo.Provider, turn *provider.OrchestrationItem, inst string, id uint64) {
	t.Helper()
	var history []provider.Event
	if id > 0 {
		history = append(history, sourced(ev(id+1, inst, provider.ActivityCompleted{Result: "ok"}), id))
	}
	next := id + 2
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: append(history, ev(next, inst, provider.ActivityScheduled{Name: "A", Input: "next"})),
		WorkerItems:  []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: next, Name: "A", Input: "next"}},
	}), "the turn scheduling the next activity")
}

// orchestratorAndWorkers returns two providers on one table with queues,
// both on clock, with sweeps an hour apart: p for the turns and workers,
// metered by meter (nil for none), for the activities.
func orchestratorAndWorkers(t *testing.T, clock *faults.Clock, meter *dynamotest.Meter) (p, workers *dynamo.Provider, env *dynamotest.Env) {
	t.Helper()
	opts := func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		o.Now = clock.Now
	}
	p, env = dynamotest.New(t, dynamotest.Config{Queues: true, Options: opts})
	return p, env.NewProvider(t, dynamotest.Config{Meter: meter, Options: opts}), env
}

// completionFetched fetches the turn of activity id's completion, whose
// signal crosses from the workers' process by SQS.
func completionFetched(ctx context.Context, t *testing.T, p *dynamo.Provider, inst string, id uint64) *provider.OrchestrationItem {
	t.Helper()
	turn, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
	if err != nil || turn == nil || len(turn.Messages) != 1 || turn.Messages[0] != provider.WorkItem(completed(inst, id, "ok")) {
		t.Fatalf("the fetch got %+v, %v; want the completion of activity %d", turn, err, id)
	}
	return turn
}

// claimWaiting fetches activity id with workers, checks that it is its
// first attempt and that the slot stores a lease ending between the one
// reported and a second after it.
func claimWaiting(ctx context.Context, t *testing.T, workers *dynamo.Provider, env *dynamotest.Env, inst string, id uint64) *provider.LockedWorkItem {
	t.Helper()
	w, err := workers.FetchWorkItem(ctx, workerLease, 20*time.Second, nil, provider.AnyTag())
	return checkWaitingClaim(ctx, t, env, inst, id, w, err)
}

// checkWaitingClaim checks what claimWaiting checks of a fetch's result.
func checkWaitingClaim(ctx context.Context, t *testing.T, env *dynamotest.Env, inst string, id uint64, w *provider.LockedWorkItem, err error) *provider.LockedWorkItem {
	t.Helper()
	if err != nil || w == nil || w.Item.ID != id {
		t.Fatalf("the workers' fetch got %+v, %v; want activity %d", w, err, id)
	}
	if w.AttemptCount != 1 {
		t.Fatalf("activity %d came as attempt %d, want 1", id, w.AttemptCount)
	}
	row := slotRow(ctx, t, env, inst)
	until, err := strconv.ParseInt(attrString(row, "lock_until"), 10, 64)
	must(t, err, "the slot's lock_until")
	if lease := w.LeaseExpiry.UnixMilli(); until < lease || until > lease+time.Second.Milliseconds() {
		t.Fatalf("activity %d: the slot stores a lease ending %d ms after the one reported; want 0 to 1000", id, until-lease)
	}
	if attrString(row, "tok") != w.LockToken || attrString(row, "sw") != "" {
		t.Fatalf("activity %d: the claimed slot holds token %q and waiting mark %q", id, attrString(row, "tok"), attrString(row, "sw"))
	}
	return w
}

// waitingFourth runs inst's first step through workers and leaves its
// activity 4 waiting in the slot, unclaimed.
func waitingFourth(ctx context.Context, t *testing.T, p, workers *dynamo.Provider, env *dynamotest.Env, inst string) {
	t.Helper()
	turn := startAndFetch(ctx, t, p, inst)
	scheduleNext(ctx, t, p, turn, inst, 0)
	w := claimWaiting(ctx, t, workers, env, inst, 2)
	must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	scheduleNext(ctx, t, p, completionFetched(ctx, t, p, inst, 2), inst, 2)
	if attrString(slotRow(ctx, t, env, inst), "sw") == "" {
		t.Fatalf("%s: activity 4 is not waiting in the slot", inst)
	}
}

// firstWaitingClaim matches the first claim of a waiting slot.
func firstWaitingClaim(op string, body []byte) bool {
	return op == "UpdateItem" && bytes.Contains(body, []byte("AND attribute_exists(#sw)"))
}

// TestWaitingSlotKeepsItsReadyEntry: where the workers run in another
// process, each turn writes the next activity unclaimed into the slot over
// the completion it consumes. The put keeps the slot's ready entry (keys
// and projected attributes), and so does the worker's claim while the
// entry's end covers its lease: neither writes an index entry. A claim the
// entry no longer covers moves it. Each activity comes as its first
// attempt, and each claim is one UpdateItem.
func TestWaitingSlotKeepsItsReadyEntry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	meter := &dynamotest.Meter{}
	p, workers, env := orchestratorAndWorkers(t, clock, meter)
	const inst = "waiting-slot"
	if w, err := workers.FetchWorkItem(ctx, workerLease, 10*time.Millisecond, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", w, err)
	}
	turn := startAndFetch(ctx, t, p, inst)
	scheduleNext(ctx, t, p, turn, inst, 0)
	w := claimWaiting(ctx, t, workers, env, inst, 2)
	kept := slotEntry(ctx, t, env, inst)
	for step, later := range []time.Duration{0, 300 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second} {
		id := w.Item.ID
		must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, id, "ok")), "AckWorkItem")
		turn = completionFetched(ctx, t, p, inst, id)
		clock.Advance(later)
		scheduleNext(ctx, t, p, turn, inst, id)
		if got := slotEntry(ctx, t, env, inst); got != kept {
			t.Fatalf("step %d: the unclaimed activity %d changed the slot's ready entry from %v to %v", step, id+2, kept, got)
		}
		if row := slotRow(ctx, t, env, inst); attrString(row, "tok") != "" || attrString(row, "sw") == "" {
			t.Fatalf("step %d: activity %d is in the slot with token %q, waiting mark %q; want unclaimed, waiting", step, id+2, attrString(row, "tok"), attrString(row, "sw"))
		}
		meter.Reset()
		w = claimWaiting(ctx, t, workers, env, inst, id+2)
		if u := meter.Usage(); u.Total() != 1 || u.Requests["UpdateItem"] != 1 {
			t.Fatalf("step %d: the workers' claim made %v; want one UpdateItem", step, u.Requests)
		}
		got := slotEntry(ctx, t, env, inst)
		if moved := got != kept; moved != (later > time.Second) {
			t.Fatalf("step %d: a claim %v after the last one left the entry %v as %v; want it moved only past the second of slack", step, later, kept, got)
		}
		kept = got
	}
}

// TestWaitingSlotWithoutItsSignalIsFoundAtItsEntrysEnd: a waiting slot's
// signal is lost. The kept entry hides the activity from the index until
// its end; then a process that sweeps finds it there, claims it (its claim
// of the kept entry meets the waiting mark and claims the slot as waiting)
// and gets it as its first attempt.
func TestWaitingSlotWithoutItsSignalIsFoundAtItsEntrysEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, workers, env := orchestratorAndWorkers(t, clock, nil)
	meter := &dynamotest.Meter{}
	// No queue: every fetch sweeps, and no signal reaches it.
	sweeper := env.NewQuietWriter(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "waiting-slot-lost"
	turn := startAndFetch(ctx, t, p, inst)
	scheduleNext(ctx, t, p, turn, inst, 0)
	w := claimWaiting(ctx, t, workers, env, inst, 2)
	must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	turn = completionFetched(ctx, t, p, inst, 2)
	scheduleNext(ctx, t, p, turn, inst, 2)
	if attrString(slotRow(ctx, t, env, inst), "sw") == "" {
		t.Fatal("activity 4 is not waiting in the slot")
	}
	if w, err := sweeper.FetchWorkItem(ctx, workerLease, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("a sweep before the kept entry's end got %+v, %v; want nothing", w, err)
	}
	clock.Advance(workerLease + time.Second)
	meter.Reset()
	got, err := sweeper.FetchWorkItem(ctx, workerLease, 0, nil, provider.AnyTag())
	if err != nil || got == nil || got.Item.ID != 4 || got.AttemptCount != 1 {
		t.Fatalf("a sweep after the kept entry's end got %+v, %v; want activity 4, attempt 1", got, err)
	}
	if u := meter.Usage(); u.Requests["UpdateItem"] != 2 {
		t.Fatalf("the sweeping fetch made %v; want 2 UpdateItems: the claim of the kept entry and the waiting slot's", u.Requests)
	}
	must(t, sweeper.AckWorkItem(ctx, got.LockToken, completed(inst, 4, "ok")), "AckWorkItem of the swept activity")
}

// TestWaitingSlotClaimBelowTheRetryer: the first claim of a waiting slot
// has its response lost, reset or answered 500 below the SDK's retryer,
// which sends it again. The resend meets its own claim (the mark gone, its
// token set) and the fetch gets the activity as attempt 1; its completion
// reaches the instance once.
func TestWaitingSlotClaimBelowTheRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) { o.SweepInterval = time.Hour }})
	tr := faults.NewTransport(nil)
	workers := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
		o.SweepInterval = time.Hour
		o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
	}})
	faulted := []faults.NetFault{faults.LoseResponse(), faults.ResetResponse(), faults.ServerStatus(500, true)}
	for i, fault := range faulted {
		inst := fmt.Sprintf("waiting-resent-%d", i)
		waitingFourth(ctx, t, p, workers, env, inst)
		remove := tr.Add(faults.NetRule{Match: firstWaitingClaim, Count: 1, Fault: fault})
		w := claimWaiting(ctx, t, workers, env, inst, 4)
		remove()
		must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, 4, "ok")), "AckWorkItem of the claim resent")
		last := completionFetched(ctx, t, p, inst, 4)
		must(t, p.AckOrchestrationItem(ctx, last.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta()}), "turn taking the completion")
		if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
			t.Fatalf("%s: after the completion's turn: %+v, %v; want nothing (delivered once)", inst, item, err)
		}
	}
	if n := tr.Faulted("UpdateItem"); n != len(faulted) {
		t.Fatalf("%d waiting claims faulted; want %d", n, len(faulted))
	}
}

// TestWaitingSlotClaimThatNeverAnswers: the first claim of a waiting slot
// is never sent, or lands and is never answered, below the SDK's retryer.
// The fetch gives the claim three quarters of the lease and delivers
// nothing it cannot prove it holds; the activity comes under a later
// claim's lease, as its first attempt (the lost claim delivered nothing),
// and its completion reaches the instance once.
func TestWaitingSlotClaimThatNeverAnswers(t *testing.T) {
	t.Parallel()
	stalls := map[string]faults.NetFault{"unsent": faults.StallRequest(), "unanswered": faults.StallResponse()}
	for name, stall := range stalls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p, env := dynamotest.New(t, dynamotest.Config{Queues: true})
			tr := faults.NewTransport(nil)
			workers := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
				o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
			}})
			inst := "waiting-stalled-" + name
			waitingFourth(ctx, t, p, workers, env, inst)
			remove := tr.Add(faults.NetRule{Count: 1, Fault: stall, Match: firstWaitingClaim})
			sent := time.Now()
			got, err := workers.FetchWorkItem(ctx, workerLease, 20*time.Second, nil, provider.AnyTag())
			remove()
			if tr.Faulted("UpdateItem") != 1 {
				t.Fatalf("the waiting claim was not stalled (fetch: %+v, %v)", got, err)
			}
			var w *provider.LockedWorkItem
			if err != nil {
				// Never sent: the claim's budget ends the fetch with a
				// retryable error, and the next fetch claims the activity.
				if !provider.IsRetryable(err) || got != nil {
					t.Fatalf("the stalled fetch returned %+v, %v; want nothing and a retryable error, or the activity", got, err)
				}
				w = claimWaiting(ctx, t, workers, env, inst, 4)
			} else {
				// Landed, unanswered: the read finds it held with too little
				// lease left; released, the same fetch claims it again.
				w = checkWaitingClaim(ctx, t, env, inst, 4, got, err)
			}
			// The stalled claim's lease ends a lease after it was sent; the
			// one delivered is a later claim's, sent after the stall's budget.
			if fresh := sent.Add(workerLease*3/4 + workerLease); w.LeaseExpiry.Before(fresh) {
				t.Fatalf("activity 4 came with a lease ending %v after the stalled claim was sent; want one sent after the claim's budget (%v at least)", w.LeaseExpiry.Sub(sent), fresh.Sub(sent))
			}
			must(t, workers.AckWorkItem(ctx, w.LockToken, completed(inst, 4, "ok")), "AckWorkItem after the stall")
			last := completionFetched(ctx, t, p, inst, 4)
			must(t, p.AckOrchestrationItem(ctx, last.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta()}), "turn taking the completion")
			if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
				t.Fatalf("after the completion's turn: %+v, %v; want nothing (delivered once)", item, err)
			}
		})
	}
}
