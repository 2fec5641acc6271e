package dynamo_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests send writes again after a lost response, as the provider's
// own resends and the SDK's retryer do (the retryer resends unknown to the
// provider, so the repeat meets the first attempt's effect), and check
// that each write counts once: an enqueue delivers its message once, also
// when a turn consumed it between the attempts, which leaves no row for a
// condition to find; a lock or a claim that landed is held.

// writesMessage picks a request that writes an orchestrator message row,
// alone or inside a transaction.
func writesMessage(r faults.Request) bool {
	isMessage := func(it map[string]types.AttributeValue) bool {
		sk, _ := it["sk"].(*types.AttributeValueMemberS)
		return sk != nil && strings.HasPrefix(sk.Value, keys.QueuePrefix)
	}
	switch in := r.Input.(type) {
	case *dynamodb.PutItemInput:
		return isMessage(in.Item)
	case *dynamodb.TransactWriteItemsInput:
		for _, a := range in.TransactItems {
			if a.Put != nil && isMessage(a.Put.Item) {
				return true
			}
		}
	}
	return false
}

// resendSetup returns a table of its own, an injector seeded with seed and
// a short-polling provider of one shard whose client goes through it.
func resendSetup(t *testing.T, seed int64) (*dynamotest.Env, *faults.Injector, *dynamo.Provider) {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(seed)
	return env, in, faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Shards: 1})
}

// waitingInstance starts instance and commits its first turn, which
// schedules nothing: the instance then waits for messages.
func waitingInstance(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	item := startAndFetch(ctx, t, p, instance)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(instance, 0)), "first turn")
}

// consumeEvent fetches instance's next turn, wants it to bring exactly one
// message, the event raised, and commits the turn that records it.
func consumeEvent(ctx context.Context, t *testing.T, p provider.Provider, instance string, raised provider.ExternalRaisedItem) {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != instance || len(item.Messages) != 1 || item.Messages[0] != provider.WorkItem(raised) {
		t.Fatalf("turn: %+v, want instance %s with the one event raised", item, instance)
	}
	commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{
		ev(uint64(len(item.History)+1), instance, provider.ExternalEvent{Name: raised.Name, Data: raised.Data}),
	}}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "turn consuming the event")
}

// wantNoTurn checks that no instance of env has a message left to
// deliver: the sweep of a fetch by another process (which has seen no
// instance locked, and so passes over none) finds no turn.
func wantNoTurn(ctx context.Context, t *testing.T, env *dynamotest.Env) {
	t.Helper()
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	item, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item != nil {
		t.Fatalf("a turn of %s with messages %+v after the event was consumed: the enqueue delivered it twice", item.Instance, item.Messages)
	}
}

// TestEnqueueResentAfterItsMessageWasConsumed: the first attempt of an
// enqueue lands but its response is lost; before the provider sends it
// again, a turn takes the message and deletes its row. The resend must not
// put the message back.
func TestEnqueueResentAfterItsMessageWasConsumed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, p := resendSetup(t, 17)
	const inst = "resent-after-consumed"
	waitingInstance(ctx, t, p, inst)

	gate := faults.NewGate()
	in.Add(faults.Rule{Match: writesMessage, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	in.Add(faults.Rule{Match: writesMessage, Rate: 1, Count: 1, Fault: faults.Hold(gate)})
	raised := provider.ExternalRaisedItem{Instance: inst, Name: "approval", Data: "yes"}
	enqueued := make(chan error, 1)
	go func() { enqueued <- p.EnqueueForOrchestrator(ctx, raised, 0) }()
	select {
	case <-gate.Arrived(): // the first attempt landed; the resend waits
	case err := <-enqueued:
		t.Fatalf("the enqueue returned (%v) without sending its message again after a lost response", err)
	}
	consumeEvent(ctx, t, p, inst, raised)
	gate.Release()
	must(t, <-enqueued, "enqueue")
	wantNoTurn(ctx, t, env)
}

// TestEnqueueResentBySDKRetryer: the SDK's retryer sends a request again
// after a lost response (a network error, a 500) without the provider
// knowing. The enqueue's first attempt landed, so it must report success
// and the message be there once.
func TestEnqueueResentBySDKRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, p := resendSetup(t, 19)
	const inst = "resent-by-sdk"
	waitingInstance(ctx, t, p, inst)

	in.Add(faults.Rule{Match: writesMessage, Rate: 1, Count: 1, Fault: faults.Resend()})
	raised := provider.ExternalRaisedItem{Instance: inst, Name: "approval", Data: "yes"}
	must(t, p.EnqueueForOrchestrator(ctx, raised, 0), "enqueue sent twice by the SDK")
	consumeEvent(ctx, t, p, inst, raised)
	wantNoTurn(ctx, t, env)
}

// TestFetchLockResentBySDKRetryer: the SDK sends a fetch's lock write again
// after it landed. The repeat fails its condition (the version moved on),
// and the row it comes back with holds the fetch's token: the fetch holds
// the lock and returns the turn, where it used to take the failure for
// another dispatcher's win and leave the instance locked by nobody until
// the lease ended.
func TestFetchLockResentBySDKRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := resendSetup(t, 23)
	const inst = "lock-resent-by-sdk"
	waitingInstance(ctx, t, p, inst)
	raised := provider.ExternalRaisedItem{Instance: inst, Name: "approval", Data: "yes"}
	must(t, p.EnqueueForOrchestrator(ctx, raised, 0), "enqueue")

	in.Add(faults.Rule{Match: isLockPut, Rate: 1, Count: 1, Fault: faults.Resend()})
	consumeEvent(ctx, t, p, inst, raised)
	if n := in.Stats().Ops[faults.OpPutItem].Faults[faults.KindResend]; n != 1 {
		t.Fatalf("%d lock writes resent; want 1", n)
	}
}

// isWorkRowKey reports whether k names a row an activity runs in: a
// worker row, or an instance's activity slot.
func isWorkRowKey(k map[string]types.AttributeValue) bool {
	pk, _ := k["pk"].(*types.AttributeValueMemberS)
	sk, _ := k["sk"].(*types.AttributeValueMemberS)
	return pk != nil && strings.HasPrefix(pk.Value, "W#") || sk != nil && sk.Value == keys.SlotSK
}

// isWorkClaim picks an activity's claim: the UpdateItem that sets a token
// on the row the activity runs in.
func isWorkClaim(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.UpdateItemInput)
	return ok && isWorkRowKey(in.Key) && in.UpdateExpression != nil &&
		strings.HasPrefix(*in.UpdateExpression, "SET #tok = :tok")
}

// TestWorkClaimResentBySDKRetryer: the SDK sends an activity's claim again
// after it landed. The repeat fails its condition (the ready key moved),
// and the row it comes back with holds the fetch's token: the fetch
// returns the activity, where it used to pass over it and leave it locked
// by nobody until the lease ended.
func TestWorkClaimResentBySDKRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := resendSetup(t, 29)
	const inst = "claim-resent-by-sdk"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "turn scheduling an activity")

	in.Add(faults.Rule{Match: isWorkClaim, Rate: 1, Count: 1, Fault: faults.Resend()})
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if w == nil || w.Item.Instance != inst || w.Item.Input != "0" {
		t.Fatalf("FetchWorkItem after its claim was sent twice: %+v, want the activity of %s", w, inst)
	}
	if n := in.Stats().Ops[faults.OpUpdateItem].Faults[faults.KindResend]; n != 1 {
		t.Fatalf("%d claims resent; want 1", n)
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}), "ack of the activity")
}

// isWorkAbandon picks an activity's abandon: the UpdateItem that makes a
// worker row visible again.
func isWorkAbandon(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.UpdateItemInput)
	return ok && in.UpdateExpression != nil && strings.HasPrefix(*in.UpdateExpression, "SET #vis = :vis")
}

// deletes returns a matcher of the requests that delete a row whose key
// isRow accepts, alone or inside a transaction.
func deletes(isRow func(key map[string]types.AttributeValue) bool) func(faults.Request) bool {
	return func(r faults.Request) bool {
		switch in := r.Input.(type) {
		case *dynamodb.DeleteItemInput:
			return isRow(in.Key)
		case *dynamodb.TransactWriteItemsInput:
			for _, a := range in.TransactItems {
				if a.Delete != nil && isRow(a.Delete.Key) {
					return true
				}
			}
		}
		return false
	}
}

// deletesWorkRow picks a request that deletes a row an activity runs in.
var deletesWorkRow = deletes(isWorkRowKey)

// deletesSession picks a request that deletes a session record.
var deletesSession = deletes(func(k map[string]types.AttributeValue) bool {
	sk, _ := k["sk"].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == keys.Session
})

// TestWorkAbandonAndAckResentBySDKRetryer: the SDK sends an activity's
// abandon again after it landed, then the ack of the activity (with no
// completion, as for a cancelled one). Both report success, where the
// repeat's failed condition used to report the lock lost.
func TestWorkAbandonAndAckResentBySDKRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := resendSetup(t, 31)
	const inst = "abandon-resent-by-sdk"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "turn scheduling an activity")
	fetch := func() *provider.LockedWorkItem {
		t.Helper()
		w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
		must(t, err, "FetchWorkItem")
		if w == nil || w.Item.Instance != inst {
			t.Fatalf("FetchWorkItem: %+v, want the activity of %s", w, inst)
		}
		return w
	}

	in.Add(faults.Rule{Match: isWorkAbandon, Rate: 1, Count: 1, Fault: faults.Resend()})
	must(t, p.AbandonWorkItem(ctx, fetch().LockToken, 0, false), "abandon sent twice by the SDK")
	in.Add(faults.Rule{Match: deletesWorkRow, Rate: 1, Count: 1, Fault: faults.Resend()})
	must(t, p.AckWorkItem(ctx, fetch().LockToken, nil), "ack sent twice by the SDK")
	if n := in.Stats().Faults[faults.KindResend]; n != 2 {
		t.Fatalf("%d requests resent; want 2", n)
	}
}

// TestSessionCleanupResentBySDKRetryer: the SDK sends a cleanup's delete
// of an expired orphaned session again after it landed. The cleanup counts
// the session it removed, where the repeat's failed condition (no row
// left) used to leave it uncounted.
func TestSessionCleanupResentBySDKRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const sid = "s-cleanup-resent"
	env, in, p := expiredOrphanSession(t, 37, sid)
	in.Add(faults.Rule{Match: deletesSession, Rate: 1, Count: 1, Fault: faults.Resend()})
	wantSessionRemoved(ctx, t, env, p, sid, "cleanup whose delete the SDK sent twice")
	if r := in.Stats().Faults[faults.KindResend]; r != 1 {
		t.Fatalf("%d requests resent; want 1", r)
	}
}

// TestStartCountedOnceBelowTheRetryer: a start's transaction, which puts
// its message and counts it as pending in a counter cell, lands and its
// response is lost, reset or answered with a 500 below the SDK's retryer,
// which sends it again. The start succeeds, and it is counted once: the
// cells agree with the table's queued starts.
func TestStartCountedOnceBelowTheRetryer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, tr, p := leaseSetup(t)
	startTx := func(op string, body []byte) bool {
		return op == "TransactWriteItems" && bytes.Contains(body, []byte(`"np"`))
	}
	for i, fault := range []faults.NetFault{faults.LoseResponse(), faults.ResetResponse(), faults.ServerStatus(500, true)} {
		remove := tr.Add(faults.NetRule{Match: startTx, Count: 1, Fault: fault})
		must(t, p.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("counted-%d", i)), 0), "start whose response was lost")
		remove()
		diff, err := env.CheckMetrics(ctx, p)
		must(t, err, "check metrics")
		if diff != "" {
			t.Fatalf("after start %d: %s", i, diff)
		}
		m, err := p.SystemMetrics(ctx)
		must(t, err, "SystemMetrics")
		if m.PendingInstances != uint64(i+1) {
			t.Fatalf("after %d starts, each resent by the SDK: %d pending; want %d", i+1, m.PendingInstances, i+1)
		}
	}
	if n := tr.Faulted("TransactWriteItems"); n != 3 {
		t.Fatalf("%d start transactions faulted; want 3", n)
	}
}
