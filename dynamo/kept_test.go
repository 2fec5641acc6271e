package dynamo_test

import (
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

// These tests check kept locks (kept.go): a turn that hands its activity to
// a waiting fetch of its process keeps the instance locked for that
// process, and the next turn's fetch takes that lock without writing it.

// completionTurn is the turn that takes activity id's completion and
// schedules nothing.
func completionTurn(instance string, id uint64) provider.TurnCommit {
	return provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		sourced(ev(id+1, instance, provider.ActivityCompleted{Result: "ok"}), id),
	}}
}

// wantCompletedOnce fails t unless instance's history is its start, its
// activity scheduled and that activity completed once.
func wantCompletedOnce(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	events, err := p.Read(ctx, instance)
	must(t, err, "Read")
	if len(events) != 3 {
		t.Fatalf("the history holds %d events, want 3: started, scheduled, completed once", len(events))
	}
}

// keptWithCompletion makes two processes on one table and a fake clock,
// runs instance's first turn on p, which hands its activity and keeps the
// lock, and acks the activity: its completion waits in the slot.
func keptWithCompletion(t *testing.T, instance string) (p, other *dynamo.Provider, env *dynamotest.Env, clock *faults.Clock) {
	t.Helper()
	ctx := t.Context()
	clock = faults.NewFakeClock(time.Now())
	cfg := dynamotest.Config{Options: func(o *dynamo.Options) { o.Now = clock.Now }}
	p, env = dynamotest.New(t, cfg)
	other = env.NewProvider(t, cfg)
	w := handedToSlot(ctx, t, p, env, instance)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(instance, 2, "ok")), "AckWorkItem")
	return p, other, env, clock
}

// TestAnotherProcessWaitsForAKeptLock: another process does not take the
// completion while the kept lease lasts, and takes it, as a first attempt,
// once it is over. The process that kept the lock then cannot use it.
func TestAnotherProcessWaitsForAKeptLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "kept-wait"
	p, other, _, clock := keptWithCompletion(t, inst)
	if got, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || got != nil {
		t.Fatalf("another process got %+v, %v while the kept lease lasts; want nothing", got, err)
	}
	clock.Advance(longLock + time.Second)
	turn := nextTurn(ctx, t, other, inst, completed(inst, 2, "ok"))
	if turn.AttemptCount != 1 {
		t.Fatalf("the completion's attempt count is %d, want 1", turn.AttemptCount)
	}
	if got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || got != nil {
		t.Fatalf("the process that kept the lock got %+v, %v while another holds it; want nothing", got, err)
	}
	must(t, other.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)), "the other process's ack")
}

// TestKeptLockNearItsEndIsWrittenAgain: with less than a quarter of the
// kept lease left, the fetch writes the lock row anew, over its own live
// lock, and returns a whole lease.
func TestKeptLockNearItsEndIsWrittenAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "kept-late"
	w := handedToSlot(ctx, t, p, env, inst)
	kept, err := strconv.ParseInt(attrString(lockRow(ctx, t, env, inst), "lock_until"), 10, 64)
	must(t, err, "the kept lease's end")
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	clock.Advance(time.UnixMilli(kept).Sub(clock.Now()) - longLock/8)
	meter.Reset()
	turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
	if n := meter.Usage().Requests["PutItem"]; n != 1 {
		t.Fatalf("the fetch made %d PutItems, want 1", n)
	}
	if want := clock.Now().Add(longLock); turn.LeaseExpiry.Before(want) {
		t.Fatalf("the lease ends at %v, want at least %v", turn.LeaseExpiry, want)
	}
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)), "ack")
}

// TestKeptTurnAckedByAnotherProcessIsRefused: only the process that took a
// turn under a kept lock knows its batch, so another process's ack of it is
// refused and changes nothing; the taker's ack then consumes the
// completion once.
func TestKeptTurnAckedByAnotherProcessIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "kept-foreign-ack"
	p, other, env, clock := keptWithCompletion(t, inst)
	turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
	if _, listed := lockRow(ctx, t, env, inst)["batch"]; listed {
		t.Fatal("the lock row lists a batch: the fetch wrote the lock, so the turn was not taken under the kept lock")
	}
	if err := other.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("another process's ack: %v, want ErrInvalidLockToken", err)
	}
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)), "the taker's ack")
	clock.Advance(2 * longLock)
	if got, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || got != nil {
		t.Fatalf("after the ack another process got %+v, %v; want nothing left", got, err)
	}
	wantCompletedOnce(ctx, t, p, inst)
}

// TestReleasingKeptLocks: a process that stops (Close), or whose runtime
// stops between invocations (ReleaseKeptLocks, as the Lambda host calls
// it), gives up the locks it kept, so another process takes the completion
// at once instead of after the kept lease.
func TestReleasingKeptLocks(t *testing.T) {
	t.Parallel()
	for name, release := range map[string]func(*dynamo.Provider) error{
		"Close":            (*dynamo.Provider).Close,
		"ReleaseKeptLocks": func(p *dynamo.Provider) error { p.ReleaseKeptLocks(t.Context()); return nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p, env := dynamotest.New(t, dynamotest.Config{})
			other := env.NewProvider(t, dynamotest.Config{})
			inst := "kept-release-" + name
			w := handedToSlot(ctx, t, p, env, inst)
			must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
			must(t, release(p), name)
			// The kept lease is 30 s: without the release the fetch finds
			// the instance locked.
			turn := nextTurn(ctx, t, other, inst, completed(inst, 2, "ok"))
			must(t, other.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)), "ack")
		})
	}
}

// TestKeptTurnCommittedLargeIsFinishedWhole: a turn taken under a kept lock
// commits a large turn and its committer dies before the apply ends.
// Another process finishes it once the lease is over, consuming the
// completion the turn took, though the lock row never listed it.
func TestKeptTurnCommittedLargeIsFinishedWhole(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	env := dynamotest.NewEnv(t, false)
	in := faults.New(17)
	a := faultyOn(t, env, in, clock, dynamotest.Config{})
	b := faultyOn(t, env, in, clock, dynamotest.Config{})
	const inst = "kept-large"
	w := handedToSlot(ctx, t, a, env, inst)
	must(t, a.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
	turn := nextTurn(ctx, t, a, inst, completed(inst, 2, "ok"))
	if _, listed := lockRow(ctx, t, env, inst)["batch"]; listed {
		t.Fatal("the lock row lists a batch: the turn was not taken under the kept lock")
	}
	commit := completionTurn(inst, 2)
	for i := range 110 { // more than a transaction takes
		commit.OrchestratorItems = append(commit.OrchestratorItems, provider.ExternalRaisedItem{Instance: fmt.Sprintf("kept-other-%03d", i), Name: "e", Data: "{}"})
	}
	stop := in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: appliesStageRow(1), Fault: faults.ServerError("InternalServerError")})
	if err := a.AckOrchestrationItem(ctx, turn.LockToken, commit); err == nil {
		t.Fatal("ack whose second apply fails: got nil, want an error")
	}
	stop()
	must(t, a.Close(), "close the committer")
	clock.Advance(2 * longLock)
	// b's fetches finish the turn (and park the events for instances that
	// do not exist).
	deadline := time.Now().Add(30 * time.Second)
	for _, pending := lockRow(ctx, t, env, inst)["turn"]; pending; _, pending = lockRow(ctx, t, env, inst)["turn"] {
		if time.Now().After(deadline) {
			t.Fatal("the committed turn was not finished within 30 s")
		}
		got, err := b.FetchOrchestrationItem(ctx, longLock, 0, nil)
		must(t, err, "fetch by the other process")
		if got != nil {
			must(t, b.AbandonOrchestrationItem(ctx, got.LockToken, time.Hour, true), "abandon "+got.Instance)
		}
	}
	if slot := slotRow(ctx, t, env, inst); slot != nil {
		t.Fatalf("the slot is still there after the turn that consumed its completion: %v", slot)
	}
	wantCompletedOnce(ctx, t, b, inst)
}

// TestTurnWithOtherWorkOutstandingReleasesItsLock: a turn that hands one
// of two activities to its process releases the lock as usual, since the
// other's completion may come from anywhere; one that hands its only
// activity keeps it.
func TestTurnWithOtherWorkOutstandingReleasesItsLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{})
	const fan, chain = "kept-fan", "kept-chain"
	handedToSlot(ctx, t, p, env, chain)
	if tok := attrString(lockRow(ctx, t, env, chain), "tok"); tok == "" {
		t.Fatal("the chain's lock row holds no token after its ack; want it kept")
	}
	turn := startAndFetch(ctx, t, p, fan)
	done := waitingWorkerFetch(ctx, t, p)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(fan, 2)), "the fan-out's turn")
	if r := <-done; r.err != nil || r.w == nil || r.w.Item.ID != 2 {
		t.Fatalf("the waiting fetch got %+v, %v; want activity 2", r.w, r.err)
	}
	if tok := attrString(lockRow(ctx, t, env, fan), "tok"); tok != "" {
		t.Fatalf("the fan-out's lock row holds token %q after its ack; want it released", tok)
	}
}

// TestKeptLockOfAnAckWhoseResponseWasLost: the ack that keeps the lock
// lands and its response is lost, above the SDK's retryer and below it;
// the provider's resend learns it landed, and the next fetch takes the
// turn under the lock the landed transaction kept, without writing.
func TestKeptLockOfAnAckWhoseResponseWasLost(t *testing.T) {
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
			env := dynamotest.NewEnv(t, false)
			in, tr := faults.New(19), faults.NewTransport(nil)
			meter := &dynamotest.Meter{}
			p := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) {
				o.Client = in.DynamoDB(env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() }))
			}})
			const inst = "kept-lost"
			turn := startAndFetch(ctx, t, p, inst)
			done := waitingWorkerFetch(ctx, t, p)
			lose(in, tr)
			must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "the ack whose response is lost")
			lost := tr.Faulted("TransactWriteItems")
			for _, n := range in.Stats().Ops[faults.OpTransactWriteItems].Faults {
				lost += int(n)
			}
			if lost != 1 {
				t.Fatalf("%d responses lost, want 1", lost)
			}
			r := <-done
			if r.err != nil || r.w == nil || r.w.Item.ID != 2 {
				t.Fatalf("the waiting fetch got %+v, %v; want activity 2", r.w, r.err)
			}
			must(t, p.AckWorkItem(ctx, r.w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
			meter.Reset()
			next := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
			if n := meter.Usage().Requests["PutItem"]; n != 0 {
				t.Fatalf("the fetch made %d PutItems, want none: the kept lock was not used", n)
			}
			must(t, p.AckOrchestrationItem(ctx, next.LockToken, completionTurn(inst, 2)), "the next turn's ack")
			wantCompletedOnce(ctx, t, p, inst)
		})
	}
}

// TestKeptLockOfARenewedTurn: a turn taken under a kept lock renews its
// lease (each renewal moves the lock row's version on) and hands its next
// activity on, keeping the lock again. The process knows the lock it kept
// whatever the version: the next completion's fetch takes it at once,
// without writing the lock row, rather than waiting for the lease as if
// another process held it.
func TestKeptLockOfARenewedTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Meter: meter})
	const inst = "kept-renewed"
	w := handedToSlot(ctx, t, p, env, inst)
	must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem of activity 2")
	turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
	must(t, p.RenewOrchestrationItemLock(ctx, turn.LockToken, longLock), "renewal")
	done := waitingWorkerFetch(ctx, t, p)
	scheduleNext(ctx, t, p, turn, inst, 2)
	r := <-done
	if r.err != nil || r.w == nil || r.w.Item.ID != 4 {
		t.Fatalf("the waiting fetch got %+v, %v; want activity 4, handed", r.w, r.err)
	}
	must(t, p.AckWorkItem(ctx, r.w.LockToken, completed(inst, 4, "ok")), "AckWorkItem of activity 4")
	meter.Reset()
	last := nextTurn(ctx, t, p, inst, completed(inst, 4, "ok"))
	if n := meter.Usage().Requests["PutItem"]; n != 0 {
		t.Fatalf("the fetch made %d PutItems; want none (the turn taken under the kept lock)", n)
	}
	must(t, p.AckOrchestrationItem(ctx, last.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta()}), "the last turn's ack")
}

// TestSignalOfAKeptInstanceStaysInTheProcess: with wake-up queues, the
// completion of a handed activity, whose instance's lock the process keeps,
// is signalled in the process only, even with no fetch waiting: no other
// process could take the instance before the kept lease ends. The next
// fetch takes it; one left unused is marked as reaching this process alone,
// so that it is sent on (queues.Signals.Decline) rather than lost.
func TestSignalOfAKeptInstanceStaysInTheProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	for _, taken := range []bool{true, false} {
		inst := fmt.Sprintf("kept-signal-%v", taken)
		w := handedToSlot(ctx, t, p, env, inst)
		must(t, dynamo.FlushSignals(ctx, p), "flush")
		before := dynamo.SignalStats(p)
		must(t, p.AckWorkItem(ctx, w.LockToken, completed(inst, 2, "ok")), "AckWorkItem")
		must(t, dynamo.FlushSignals(ctx, p), "flush")
		if st := dynamo.SignalStats(p); st.MessagesSent != before.MessagesSent || st.SignalsKeptLocal != before.SignalsKeptLocal+1 {
			t.Fatalf("%s: %d messages sent and %d signals kept in the process by the completion; want 0 and 1",
				inst, st.MessagesSent-before.MessagesSent, st.SignalsKeptLocal-before.SignalsKeptLocal)
		}
		if !taken {
			kept, _ := p.TakeUnusedSignals()
			if len(kept) != 1 || kept[0].Instance != inst || !kept[0].Unsent() {
				t.Fatalf("%s: unused signals %+v; want the completion's, marked as this process's alone", inst, kept)
			}
			continue
		}
		turn := nextTurn(ctx, t, p, inst, completed(inst, 2, "ok"))
		must(t, p.AckOrchestrationItem(ctx, turn.LockToken, completionTurn(inst, 2)), "the completion's turn")
		wantCompletedOnce(ctx, t, p, inst)
	}
}
