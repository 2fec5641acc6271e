package dynamo_test

import (
	"context"
	"slices"
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

// Signals for an instance that is locked when they arrive. The message they
// announce cannot be taken until the turn holding the lock ends; the
// process keeps the signal until then instead of dropping it, so the
// message is not left to the next sweep (an hour away in these tests; by
// default up to five minutes in an idle process, five seconds in a busy
// one).

// lockedSignalSetup returns a provider whose first sweep is done and whose
// next one is an hour away.
func lockedSignalSetup(t *testing.T, env *dynamotest.Env, meter *dynamotest.Meter) *dynamo.Provider {
	t.Helper()
	p := env.NewProvider(t, dynamotest.Config{Meter: meter, Options: func(o *dynamo.Options) { o.SweepInterval = time.Hour }})
	if item, err := p.FetchOrchestrationItem(t.Context(), longLock, 10*time.Millisecond, nil); err != nil || item != nil {
		t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
	}
	return p
}

// awaitQueries waits until meter has counted more than n Queries (the
// meter counts a request once its response is in).
func awaitQueries(ctx context.Context, t *testing.T, meter *dynamotest.Meter, n int) {
	t.Helper()
	for meter.Usage().Requests["Query"] <= n {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for a Query: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fetchResult is what a background fetch returned.
type fetchResult struct {
	item *provider.OrchestrationItem
	err  error
}

// awaitOneMessage checks what a waiting fetch returned: instance, with one
// message, want.
func awaitOneMessage(t *testing.T, r fetchResult, instance, want string) {
	t.Helper()
	must(t, r.err, "waiting fetch")
	if r.item == nil || r.item.Instance != instance || len(r.item.Messages) != 1 {
		t.Fatalf("waiting fetch got %+v, want %q with %s", r.item, instance, want)
	}
}

func fetchInBackground(ctx context.Context, p *dynamo.Provider, pollTimeout time.Duration) <-chan fetchResult {
	done := make(chan fetchResult, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
		done <- fetchResult{item, err}
	}()
	return done
}

// TestEventRaisedDuringOwnTurnIsFetchedAfterTheAck: an event is raised to
// an instance while a fetch of the same process holds its turn. The ack
// of that turn hands the event's signal to the waiting fetch, which takes
// the event at once.
func TestEventRaisedDuringOwnTurnIsFetchedAfterTheAck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	p := lockedSignalSetup(t, env, meter)
	const inst = "raised-while-locked"
	first := startAndFetch(ctx, t, p, inst)

	waiting := fetchInBackground(ctx, p, 20*time.Second)
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0), "raise")
	// Whether or not the waiting fetch reads the instance (still locked),
	// the ack below must reach it.
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	awaitOneMessage(t, <-waiting, inst, "the event raised during its first turn")
}

// TestEventRaisedDuringAnotherProcessTurnIsFetchedAtLeaseEnd: the same with
// the turn held by another process, which does not know of the signal. The
// waiting process tries the instance again when the lease it read ends.
func TestEventRaisedDuringAnotherProcessTurnIsFetchedAtLeaseEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	waiter := lockedSignalSetup(t, env, meter)
	holder := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "raised-while-locked-elsewhere"
	must(t, holder.EnqueueForOrchestrator(ctx, startItem(inst), 0), "start")
	first, err := holder.FetchOrchestrationItem(ctx, 3*time.Second, 0, nil)
	if err != nil || first == nil {
		t.Fatalf("holder's fetch: %+v, %v", first, err)
	}
	before := meter.Usage().Requests["Query"]
	waiting := fetchInBackground(ctx, waiter, 20*time.Second)
	must(t, holder.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0), "raise")
	// The waiting process has read the instance while it was locked.
	awaitQueries(ctx, t, meter, before)
	must(t, holder.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	awaitOneMessage(t, <-waiting, inst, "the event raised during the other process's turn")
}

// TestSignalDuringAnotherFetchsTryIsKept: a message arrives for an instance
// while a fetch of the same process is between reading it and locking it.
// The signal reaches another fetch, which passes over the instance (one
// fetch of a process tries an instance at a time) and, finding nothing
// else, returns. The signal is handed back when the first fetch's try
// ends, so the message is taken after that turn instead of at the next
// sweep.
func TestSignalDuringAnotherFetchsTryIsKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	gate := faults.NewGate()
	t.Cleanup(gate.Release)
	in := faults.New(24)
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		o.SweepInterval = time.Hour
		o.Client = in.DynamoDB(o.Client)
	}})
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 10*time.Millisecond, nil); err != nil || item != nil {
		t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
	}
	const inst = "signal-during-try"
	turn := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 2)), "turn scheduling two activities")
	complete := func(id uint64) {
		t.Helper()
		must(t, p.EnqueueForOrchestrator(ctx, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: "r"}, 0), "complete")
	}
	complete(2)

	// The next fetch reads the instance; its lock write is held.
	in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Hold(gate), Match: isLockPut})
	first := fetchInBackground(ctx, p, 0)
	must(t, gate.Wait(ctx, 1), "the first fetch's lock write")
	// The second completion's signal goes to a fetch that passes over the
	// instance, which the first fetch is trying.
	complete(3)
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
		t.Fatalf("fetch while another tries the instance: %+v, %v; want nothing", item, err)
	}
	gate.Release()
	r := <-first
	must(t, r.err, "the first fetch")
	if r.item == nil || len(r.item.Messages) != 1 {
		t.Fatalf("the first fetch got %+v, want the instance with the first completion", r.item)
	}
	must(t, p.AckOrchestrationItem(ctx, r.item.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completedBy(ev(4, inst, provider.ActivityCompleted{Result: "r"}), 2)}}), "turn of the first completion")

	// No sweep is due for an hour: only the signal brings the instance back.
	next, err := p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
	must(t, err, "fetch after the turn")
	if next == nil || next.Instance != inst || len(next.Messages) != 1 {
		t.Fatalf("fetch after the turn got %+v, want %q with the second completion", next, inst)
	}
}

// TestSignalOfAMessageCommittedAfterTheReadIsKept: a completion's message
// is stamped (its visibility time) before a fetch of the same process
// reads the instance, but commits after the read. Its signal reaches
// another waiting fetch while the first holds the turn. The turn did not
// take the message, so the signal is kept for the turn's end, although
// its time is older than the read.
func TestSignalOfAMessageCommittedAfterTheReadIsKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	gate := faults.NewGate()
	t.Cleanup(gate.Release)
	in := faults.New(25)
	clock := faults.NewClock(nil, 0)
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		o.SweepInterval = time.Hour
		o.Client = in.DynamoDB(o.Client)
		o.Now = clock.Now
	}})
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 10*time.Millisecond, nil); err != nil || item != nil {
		t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
	}
	const inst = "committed-after-read"
	turn := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 2)), "turn scheduling two activities")
	complete := func(id uint64) error {
		return p.EnqueueForOrchestrator(ctx, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: "r"}, 0)
	}
	must(t, complete(2), "first completion")

	// The second completion is stamped now; its write is held.
	in.Add(faults.Rule{Rate: 1, Count: 1, Fault: faults.Hold(gate), Match: writesMessage})
	second := make(chan error, 1)
	go func() { second <- complete(3) }()
	must(t, gate.Wait(ctx, 1), "the second completion's write")
	clock.Advance(5 * time.Millisecond) // its stamp is before the read below by the provider's clock

	// A fetch reads and locks the instance with the first completion.
	first, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "fetch")
	if first == nil || len(first.Messages) != 1 {
		t.Fatalf("fetch got %+v, want the instance with the first completion", first)
	}
	// Another fetch waits; the second completion commits and signals it.
	waiting := fetchInBackground(ctx, p, 5*time.Second)
	gate.Release()
	must(t, <-second, "second completion")
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completedBy(ev(4, inst, provider.ActivityCompleted{Result: "r"}), 2)}}), "turn of the first completion")

	// No sweep is due for an hour: only the kept signal brings the instance back.
	awaitOneMessage(t, <-waiting, inst, "the second completion")
}

// TestCopyOfATakenCompletionsSignalMakesNoRequest: two fetches of one
// process wait; an activity's completion wakes both. One takes the
// instance with the completion; the other holds its copy of the signal
// for the turn's end. The signal names the row the worker's ack wrote,
// which the turn took, so the ack of the turn hands nothing back: the
// other fetch makes no request before its poll timeout.
func TestCopyOfATakenCompletionsSignalMakesNoRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	meter := &dynamotest.Meter{}
	p := lockedSignalSetup(t, env, meter)
	const inst = "taken-completion"
	turn := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	work, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	if err != nil || work == nil {
		t.Fatalf("FetchWorkItem: %+v, %v", work, err)
	}

	first := fetchInBackground(ctx, p, 3*time.Second)
	second := fetchInBackground(ctx, p, 3*time.Second)
	// Both wait once each has made its sweep (none is due) and found nothing.
	awaitCondition(t, "both fetches wait", func() bool { return dynamo.WaitingFetches(p, queues.Orchestrator) == 2 })
	must(t, p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}), "AckWorkItem")
	var r fetchResult
	other := second
	select {
	case r = <-first:
	case r = <-second:
		other = first
	}
	must(t, r.err, "fetch")
	if r.item == nil || len(r.item.Messages) != 1 {
		t.Fatalf("fetch got %+v, want the instance with the completion", r.item)
	}
	must(t, p.AckOrchestrationItem(ctx, r.item.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completedBy(ev(3, inst, provider.ActivityCompleted{Result: "r"}), 2)}}), "turn of the completion")
	queries := meter.Usage().Requests["Query"]
	if o := <-other; o.err != nil || o.item != nil {
		t.Fatalf("the other fetch got %+v, %v; want nothing", o.item, o.err)
	}
	if n := meter.Usage().Requests["Query"] - queries; n != 0 {
		t.Fatalf("the other fetch made %d Queries after the turn; want none (its signal's message was taken)", n)
	}
}

// TestEverySignalOfAnInstanceCounts: two signals for one instance reach a
// fetch together, the first naming the message a turn of this process
// took, the second a message written after that turn's read. The second is
// not dropped as a repeat of the first: whether the turn holds the
// instance or is still trying it, the instance comes back once the turn is
// over, and the next fetch takes the second message (with sweeps an hour
// away, only a signal brings it).
func TestEverySignalOfAnInstanceCounts(t *testing.T) {
	t.Parallel()
	for _, during := range []string{"turn", "try"} {
		t.Run(during, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, true)
			gate := faults.NewGate()
			t.Cleanup(gate.Release)
			in := faults.New(26)
			p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
				o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
				o.Client = in.DynamoDB(o.Client)
			}})
			// The messages are written without signals: the test hands them.
			quiet := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
			if item, err := p.FetchOrchestrationItem(ctx, longLock, 10*time.Millisecond, nil); err != nil || item != nil {
				t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
			}
			inst := "signalled-twice-during-" + during
			turn := startAndFetch(ctx, t, p, inst)
			must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 2)), "turn scheduling two activities")
			complete := func(id uint64) queues.Signal {
				t.Helper()
				before := messageSignals(ctx, t, env, inst)
				must(t, quiet.EnqueueForOrchestrator(ctx, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: "r"}, 0), "complete")
				for _, sig := range messageSignals(ctx, t, env, inst) {
					if !slices.Contains(before, sig) {
						return sig
					}
				}
				t.Fatalf("no new message for %s", inst)
				return queues.Signal{}
			}
			took := complete(2)

			var first *provider.OrchestrationItem
			if during == "turn" {
				dynamo.RequeueSignals(p, took)
				item, err := p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
				must(t, err, "fetch of the first completion")
				first = item
				missed := complete(3)
				// A waiting fetch receives both signals while the turn holds the instance.
				waiting := fetchInBackground(ctx, p, 5*time.Second)
				awaitWaiting(ctx, t, p, 1)
				dynamo.RequeueSignals(p, took, missed)
				awaitWaiting(ctx, t, p, 1)
				must(t, p.AckOrchestrationItem(ctx, first.LockToken, completion(inst, 2)), "turn of the first completion")
				awaitOneMessage(t, <-waiting, inst, "the second completion")
				return
			}
			// The first fetch reads the instance; its lock write is held.
			in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Count: 1, Fault: faults.Hold(gate), Match: isLockPut})
			dynamo.RequeueSignals(p, took)
			trying := fetchInBackground(ctx, p, 0)
			must(t, gate.Wait(ctx, 1), "the first fetch's lock write")
			missed := complete(3)
			// Another fetch receives both signals and passes over the instance.
			dynamo.RequeueSignals(p, took, missed)
			if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
				t.Fatalf("fetch while another tries the instance: %+v, %v; want nothing", item, err)
			}
			gate.Release()
			r := <-trying
			must(t, r.err, "the first fetch")
			if r.item == nil || len(r.item.Messages) != 1 {
				t.Fatalf("the first fetch got %+v, want the instance with the first completion", r.item)
			}
			must(t, p.AckOrchestrationItem(ctx, r.item.LockToken, completion(inst, 2)), "turn of the first completion")
			next, err := p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
			must(t, err, "fetch after the turn")
			if next == nil || next.Instance != inst || len(next.Messages) != 1 {
				t.Fatalf("fetch after the turn got %+v, want %q with the second completion", next, inst)
			}
		})
	}
}

// completion is the commit of a turn that takes activity id's completion.
func completion(instance string, id uint64) provider.TurnCommit {
	return provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completedBy(ev(4, instance, provider.ActivityCompleted{Result: "r"}), id)}}
}

// messageSignals returns the signal of each of instance's queued messages,
// as their writer sends it (visible at the message's time).
func messageSignals(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) []queues.Signal {
	t.Helper()
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &env.Table,
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :q)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)}, ":q": &types.AttributeValueMemberS{Value: keys.QueuePrefix}},
	})
	if err != nil {
		t.Fatalf("messages of %s: %v", instance, err)
	}
	var sigs []queues.Signal
	for _, row := range out.Items {
		sk := row["sk"].(*types.AttributeValueMemberS).Value
		visible, _, err := keys.ParseMessageSK(sk)
		if err != nil {
			continue // a slot's row
		}
		sigs = append(sigs, queues.Signal{Kind: queues.Orchestrator, Instance: instance, Work: sk, VisibleAt: time.UnixMilli(visible)})
	}
	return sigs
}

// awaitWaiting waits until n orchestrator fetches of p wait for signals.
func awaitWaiting(ctx context.Context, t *testing.T, p *dynamo.Provider, n int) {
	t.Helper()
	for dynamo.WaitingFetches(p, queues.Orchestrator) != n {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d waiting fetches: %v", n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// TestSweptMessageOfAHeldTurnComesBackAtTheAck: a message written without
// a signal while a turn of this process holds its instance is met by a
// sweep, which passes over the held instance. The sweep counts as the
// message's signal: the ack hands the instance to the process's fetches,
// and a waiting fetch takes the message at once, not at the next sweep (an
// hour away).
func TestSweptMessageOfAHeldTurnComesBackAtTheAck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	quiet := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 10*time.Millisecond, nil); err != nil || item != nil {
		t.Fatalf("first fetch of an empty table: %+v, %v", item, err)
	}
	inst := "swept-during-own-turn"
	turn := startAndFetch(ctx, t, p, inst)
	must(t, quiet.EnqueueForOrchestrator(ctx, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}, 0), "complete")
	// A fetch with no poll timeout sweeps: the instance is held.
	if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || item != nil {
		t.Fatalf("sweeping fetch during the turn: %+v, %v; want nothing", item, err)
	}
	waiting := fetchInBackground(ctx, p, 5*time.Second)
	awaitWaiting(ctx, t, p, 1)
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, activities(inst, 1)), "turn scheduling an activity")
	awaitOneMessage(t, <-waiting, inst, "the completion")
}
