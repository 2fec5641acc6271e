package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/clockskew/skewtest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests put the provider in the situations real AWS produces and
// DynamoDB Local does not (conflicts, throttling, requests delivered late,
// clocks that disagree), each through package faults, and check the
// fencing, classification and discovery rules of docs/design.md §6–§8.

// faultyOn returns a provider on env whose DynamoDB client goes through
// in, with clock as its clock (nil: the real one) and c's other settings.
func faultyOn(t *testing.T, env *dynamotest.Env, in *faults.Injector, clock *faults.Clock, c dynamotest.Config) *dynamo.Provider {
	t.Helper()
	more := c.Options
	c.Options = func(o *dynamo.Options) {
		if more != nil {
			more(o)
		}
		o.Client = in.DynamoDB(o.Client)
		if clock != nil {
			o.Now = clock.Now
		}
	}
	return env.NewProvider(t, c)
}

// faulty is a provider on a fresh table env whose requests pass the
// injector in, seeded seed (short polls, the real clock), with options
// set by opts (such as heldAcks) as well.
func faulty(t *testing.T, seed int64, opts ...func(*dynamo.Options)) (env *dynamotest.Env, in *faults.Injector, p *dynamo.Provider) {
	t.Helper()
	env, in = dynamotest.NewEnv(t, false), faults.New(seed)
	c := dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		for _, opt := range opts {
			opt(o)
		}
	}}
	return env, in, faultyOn(t, env, in, nil, c)
}

// heldAcks lets a request under a lease budget (an ack, a claim) wait at a
// test's gate as long as the test holds it. With the default
// LeaseRequestTimeout the attempt ends after 5 s, as it must, and the
// provider sends the request again past the gate: on a loaded machine the
// test would then look at a moment it no longer holds.
func heldAcks(o *dynamo.Options) { o.LeaseRequestTimeout = time.Minute }

// lockRow reads the lock row of instance directly.
func lockRow(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) map[string]types.AttributeValue {
	t.Helper()
	return instanceRow(ctx, t, env, instance, keys.Lock)
}

// instanceRow reads the row of instance's partition at sort key sk from
// the table (nil when there is none).
func instanceRow(ctx context.Context, t *testing.T, env *dynamotest.Env, instance, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(env.Table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)}, "sk": &types.AttributeValueMemberS{Value: sk}},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read row "+sk)
	return out.Item
}

// isLockCommit picks the large-turn commit: the transaction whose first
// action sets the lock row's turn pointer.
func isLockCommit(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.TransactWriteItemsInput)
	return ok && len(in.TransactItems) > 0 && in.TransactItems[0].Update != nil &&
		strings.Contains(aws.ToString(in.TransactItems[0].Update.UpdateExpression), "#turn = :tid")
}

// isLockPut picks a fetch's lock write.
func isLockPut(r faults.Request) bool {
	in, ok := r.Input.(*dynamodb.PutItemInput)
	if !ok {
		return false
	}
	sk, _ := in.Item["sk"].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == keys.Lock
}

// TestCancelledTransactionIsRetryable: a transaction DynamoDB cancels for a
// conflict or throttling is a retryable error wherever it happens (the SDK
// calls it a client fault), and a retry applies it once.
func TestCancelledTransactionIsRetryable(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"TransactionConflict", "ThrottlingError"} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, false)
			in := faults.New(1)
			p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
			inst := "cancel-" + reason
			item := startAndFetch(ctx, t, p, inst)
			must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 2)), "ack scheduling")
			work := inWorkerRow(ctx, t, p) // its ack is a transaction
			done := provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: work.Item.ID, Result: "r"}

			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.TransactionCanceled(reason, -1)})
			err := p.AckWorkItem(ctx, work.LockToken, done)
			if err == nil || !provider.IsRetryable(err) || errors.Is(err, provider.ErrInvalidLockToken) {
				t.Fatalf("AckWorkItem cancelled by %s: got %v, want a retryable error", reason, err)
			}
			must(t, p.AckWorkItem(ctx, work.LockToken, done), "retried AckWorkItem")

			next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
			must(t, err, "FetchOrchestrationItem")
			if next == nil || len(next.Messages) != 1 {
				t.Fatalf("after the retried ack: got %+v, want exactly one completion", next)
			}
			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.TransactionCanceled(reason, 0)})
			err = p.AbandonOrchestrationItem(ctx, next.LockToken, 0, false)
			if err == nil || !provider.IsRetryable(err) {
				t.Fatalf("AbandonOrchestrationItem cancelled by %s: got %v, want a retryable error", reason, err)
			}
			must(t, p.AbandonOrchestrationItem(ctx, next.LockToken, 0, false), "retried abandon")
		})
	}
}

// TestConflictingSessionRenewals: two activities of one session renew at
// the same moment; both transactions touch the session row, and on AWS one
// is cancelled with TransactionConflict. Both renewals must succeed (an
// error tells the runtime its activity was cancelled).
func TestConflictingSessionRenewals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(2)
	in.SetRealConflicts(true)
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	const inst = "session-renew"
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 2)
	for i := range commit.WorkerItems {
		commit.WorkerItems[i].SessionID = ptr("s1")
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack scheduling")
	sess := &provider.SessionFetchConfig{OwnerID: "w1", LockTimeout: longLock}
	var tokens []string
	for range 2 {
		w, err := p.FetchWorkItem(ctx, longLock, 0, sess, provider.AnyTag())
		if err != nil || w == nil {
			t.Fatalf("FetchWorkItem: %v, %v", w, err)
		}
		tokens = append(tokens, w.LockToken)
	}

	// The first renewal's transaction is applied but its response waits at
	// the gate; meanwhile the second renewal touches the same session row.
	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.HoldResponse(gate)})
	first := make(chan error, 1)
	go func() { first <- p.RenewWorkItemLock(ctx, tokens[0], longLock) }()
	must(t, gate.Wait(ctx, 1), "first renewal at the gate")
	conflicts := make(chan error, 1)
	go func() { conflicts <- p.RenewWorkItemLock(ctx, tokens[1], longLock) }()
	// The second renewal conflicts while the first is in flight, and
	// retries; let the first finish once a conflict was seen.
	for in.Stats().Faults[faults.KindRealConflict] == 0 {
		select {
		case err := <-conflicts:
			t.Fatalf("second renewal finished before any conflict: %v", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	gate.Release()
	must(t, <-first, "first renewal")
	must(t, <-conflicts, "second renewal, which met a conflict")
}

// TestLargeTurnStealInterleavings: a dispatcher whose lease expires while
// it commits a large turn, and another dispatcher that read the expired
// lease just before the commit landed. Exactly one of them may own the
// instance: the commit's turn is applied whole and the other gets nothing;
// and a force delete during the apply leaves no instance behind.
func TestLargeTurnStealInterleavings(t *testing.T) {
	t.Parallel()
	const n = 150 // activities: more than one transaction takes
	const lease = 5 * time.Second
	for _, variant := range []string{"Steal", "ForceDelete"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, false)
			in := faults.New(3)
			clock := faults.NewFakeClock(time.Now())
			a := faultyOn(t, env, in, clock, dynamotest.Config{ShortPoll: true, Options: heldAcks})
			b := faultyOn(t, env, in, clock, dynamotest.Config{ShortPoll: true, Options: heldAcks})
			inst := "steal-" + variant
			must(t, a.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
			item, err := a.FetchOrchestrationItem(ctx, lease, 0, nil)
			if err != nil || item == nil {
				t.Fatalf("FetchOrchestrationItem: %v, %v", item, err)
			}

			commitGate, applyGate, stealGate := faults.NewGate(), faults.NewGate(), faults.NewGate()
			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: isLockCommit, Count: 1, Fault: faults.Hold(commitGate)})
			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Match: func(r faults.Request) bool { return !isLockCommit(r) && !writesMessage(r) }, Count: 1, Fault: faults.Hold(applyGate)})
			acked := make(chan error, 1)
			go func() { acked <- a.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)) }()
			must(t, commitGate.Wait(ctx, 1), "commit at its gate")
			// The commit was stamped before the lease ended; it arrives after.
			clock.Advance(lease + time.Second)

			var bGot *provider.OrchestrationItem
			var bErr error
			fetched := make(chan struct{})
			if variant == "Steal" {
				must(t, b.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "d"}, 0), "enqueue event")
				in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Rate: 1, Match: isLockPut, Count: 1, Fault: faults.Hold(stealGate)})
				go func() {
					defer close(fetched)
					bGot, bErr = b.FetchOrchestrationItem(ctx, lease, 0, nil)
				}()
				must(t, stealGate.Wait(ctx, 1), "steal at its gate")
			}
			commitGate.Release()
			must(t, applyGate.Wait(ctx, 1), "first apply at its gate")
			// The turn is committed and not yet applied. The competing fetch
			// must not take the lock from under it; it may finish the turn
			// itself (the committer's lease is over) and then lock the
			// instance, seeing the whole turn.
			if variant == "Steal" {
				stealGate.Release()
				<-fetched
				must(t, bErr, "competing fetch")
				if bGot != nil && len(bGot.History) != n+1 {
					t.Fatalf("a second dispatcher locked %q with %d events of history while a committed large turn of %d was pending",
						inst, len(bGot.History), n+1)
				}
			} else {
				if _, err := b.DeleteInstancesAtomic(ctx, []string{inst}, true); err != nil {
					t.Fatalf("force delete during the apply: %v", err)
				}
			}
			applyGate.Release()
			err = <-acked

			switch variant {
			case "Steal":
				must(t, err, "large ack")
				history, err := b.Read(ctx, inst)
				must(t, err, "Read")
				if len(history) != n+1 {
					t.Fatalf("history has %d events, want the large turn's %d", len(history), n+1)
				}
				if q := workerRows(ctx, t, b); q != n {
					t.Fatalf("%d activities queued, want %d", q, n)
				}
				next := bGot
				if next == nil {
					next, err = b.FetchOrchestrationItem(ctx, lease, 0, nil)
					must(t, err, "fetch after the turn")
				}
				if next == nil || len(next.History) != n+1 || len(next.Messages) != 1 {
					t.Fatalf("fetch after the turn: got %+v, want the event on top of the whole turn", next)
				}
			case "ForceDelete":
				if !errors.Is(err, provider.ErrInvalidLockToken) {
					t.Fatalf("large ack of a force-deleted instance: got %v, want ErrInvalidLockToken", err)
				}
				if _, err := b.InstanceInfo(ctx, inst); !errors.Is(err, provider.ErrNotFound) {
					t.Fatalf("InstanceInfo after the force delete: got %v, want ErrNotFound (no zombie)", err)
				}
				if history, err := b.Read(ctx, inst); err != nil || len(history) != 0 {
					t.Fatalf("history after the force delete: %d events, %v; want none", len(history), err)
				}
				// The commit took the start out of the pending count; the
				// delete met its row before the apply removed it, and must
				// not take it out again.
				if m := checkMetrics(ctx, t, env, b, "after the force delete"); m.PendingInstances != 0 || m.TotalInstances != 0 {
					t.Fatalf("SystemMetrics after the force delete = %+v; want no instance, none pending", m)
				}
			}
		})
	}
}

// TestFloodOfMessagesToOneInstance: 1,500 events raised to one instance
// while it is locked. Every later fetch succeeds and takes a bounded
// batch, oldest first, reading a bounded number of rows (not the whole
// queue), the lock row stays small, and the turns consume the events in
// order, each once; the rest stay queued. The bounds fail a fetch that
// reads the queue (1,500 rows against 600) and a lock row that lists or
// counts each queued message (tens of KB against 16), well before such a
// row would pass DynamoDB's 400 KB item limit, which took 6,000 events
// and four times the test's requests.
func TestFloodOfMessagesToOneInstance(t *testing.T) {
	t.Parallel()
	const total, senders = 1500, 8
	ctx := t.Context()
	p, env, scans := countingProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "flood"
	// The lock outlives the flood, however slow the emulator is.
	must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "enqueue start")
	item, err := p.FetchOrchestrationItem(ctx, 10*time.Minute, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem: %v, %v", item, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for i := s; i < total; i += senders {
				if err := p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: fmt.Sprint(i)}, 0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("raise: %v", err)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first ack")

	// Each sender raised its events in order: a turn's batch, and the
	// turns one after another, keep each sender's order.
	seen := map[string]bool{}
	lastOf := map[int]int{}
	nextID := uint64(2)
	const turns = 3
	for turn := range turns {
		scans.scanned.Store(0)
		got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		must(t, err, fmt.Sprintf("fetch of turn %d", turn))
		if got == nil || len(got.Messages) == 0 || len(got.Messages) > 100 {
			t.Fatalf("turn %d: got %v, want a bounded batch of events", turn, got)
		}
		// One page of control rows (the history is cached).
		if n := scans.scanned.Load(); n > 600 {
			t.Fatalf("turn %d: the fetch read %d rows for a batch of %d", turn, n, len(got.Messages))
		}
		if size := itemBytes(lockRow(ctx, t, env, inst)); size > 16*1024 {
			t.Fatalf("turn %d: lock row holds %d bytes for a batch of %d", turn, size, len(got.Messages))
		}
		commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta()}
		for _, m := range got.Messages {
			data := m.(provider.ExternalRaisedItem).Data
			if seen[data] {
				t.Fatalf("event %s delivered twice", data)
			}
			seen[data] = true
			var i int
			fmt.Sscan(data, &i)
			if last, ok := lastOf[i%senders]; ok && i <= last {
				t.Fatalf("event %d of sender %d delivered after event %d", i, i%senders, last)
			}
			lastOf[i%senders] = i
			commit.HistoryDelta = append(commit.HistoryDelta, ev(nextID, inst, provider.ExternalEvent{Name: "e", Data: data}))
			nextID++
		}
		must(t, p.AckOrchestrationItem(ctx, got.LockToken, commit), "ack")
	}
	admin, _ := provider.AdminOf(p)
	depths, err := admin.QueueDepths(ctx)
	must(t, err, "QueueDepths")
	if want := total - len(seen); depths.OrchestratorQueue != want {
		t.Fatalf("after %d turns that consumed %d events: %d queued, want %d", turns, len(seen), depths.OrchestratorQueue, want)
	}
}

// TestAttemptsOfUnreadMessagesKept: a fetch of a long queue reads only
// the rows its turn needs (its oldest visible messages), and the lock it
// writes keeps the attempt counts of the messages after them, which it did
// not read: counts that a fetch which read the whole queue would have
// kept. Four turns are abandoned with a delay, each taking the next 45
// visible messages, so that the fourth batch lies past the first page of
// control rows; once the delays are over, the next fetch reads only that
// page.
func TestAttemptsOfUnreadMessagesKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	clock := faults.NewFakeClock(time.Now())
	p := faultyOn(t, env, faults.New(12), clock, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst, total = "unread-attempts", 600
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 0)), "first ack")
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for s := range 8 {
		wg.Go(func() {
			for i := s; i < total; i += 8 {
				errs <- p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: fmt.Sprint(i)}, 0)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "raise")
	}

	const delay = time.Hour
	for turn := range 4 {
		got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil || got == nil || len(got.Messages) != 45 {
			t.Fatalf("fetch %d: %+v, %v; want a batch of 45", turn, got, err)
		}
		must(t, p.AbandonOrchestrationItem(ctx, got.LockToken, delay, false), "abandon with a delay")
	}
	attempts := func() map[string]types.AttributeValue {
		m, _ := lockRow(ctx, t, env, inst)["att"].(*types.AttributeValueMemberM)
		if m == nil {
			t.Fatal("lock row without attempt counts")
		}
		return m.Value
	}
	if n := len(attempts()); n != 4*45 {
		t.Fatalf("after four abandoned turns the lock row counts attempts of %d messages, want %d", n, 4*45)
	}
	clock.Advance(2 * delay)
	got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || got == nil || len(got.Messages) != 45 {
		t.Fatalf("fetch after the delays: %+v, %v; want a batch of 45", got, err)
	}
	if n := len(attempts()); n != 4*45 {
		t.Fatalf("a fetch that read part of the queue left attempt counts of %d messages, want %d (those it did not read dropped)", n, 4*45)
	}
}

// countingProvider is a provider on a new table whose requests go through a
// scanCounter.
func countingProvider(t *testing.T, c dynamotest.Config) (*dynamo.Provider, *dynamotest.Env, *scanCounter) {
	t.Helper()
	counter := &scanCounter{}
	adjust := c.Options
	c.Options = func(o *dynamo.Options) {
		if adjust != nil {
			adjust(o)
		}
		counter.API = o.Client
		o.Client = counter
	}
	p, env := dynamotest.New(t, c)
	return p, env, counter
}

// scanCounter passes requests to a real client and counts the rows its
// Queries of the table (not of an index) read: ScannedCount, what DynamoDB
// bills a Query for.
type scanCounter struct {
	dynamo.API
	// scanned counts the rows and queries the requests that Query the
	// table (not an index); mostSeen is the most such requests under way
	// at once.
	scanned, queries   atomic.Int64
	inFlight, mostSeen atomic.Int64
	// gets counts GetItem requests.
	gets atomic.Int64
}

func (c *scanCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.API.GetItem(ctx, in, optFns...)
}

func (c *scanCounter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if in.IndexName != nil {
		return c.API.Query(ctx, in, optFns...)
	}
	now := c.inFlight.Add(1)
	for {
		seen := c.mostSeen.Load()
		if now <= seen || c.mostSeen.CompareAndSwap(seen, now) {
			break
		}
	}
	out, err := c.API.Query(ctx, in, optFns...)
	c.inFlight.Add(-1)
	if err == nil {
		c.scanned.Add(int64(out.ScannedCount))
		c.queries.Add(1)
	}
	return out, err
}

// itemBytes approximates a row's stored size (names and string values).
func itemBytes(row map[string]types.AttributeValue) int {
	size := 0
	var walk func(types.AttributeValue) int
	walk = func(v types.AttributeValue) int {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			return len(v.Value)
		case *types.AttributeValueMemberN:
			return len(v.Value)
		case *types.AttributeValueMemberM:
			s := 0
			for k, x := range v.Value {
				s += len(k) + walk(x)
			}
			return s
		case *types.AttributeValueMemberL:
			s := 0
			for _, x := range v.Value {
				s += walk(x)
			}
			return s
		}
		return 8
	}
	for k, v := range row {
		size += len(k) + walk(v)
	}
	return size
}

// sameShardIDs returns count instance ids (prefix + number) that fall in
// shard of shards.
func sameShardIDs(prefix string, shard, shards, count int) []string {
	var out []string
	for i := 0; len(out) < count; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if keys.ShardOf(id, shards) == shard {
			out = append(out, id)
		}
	}
	return out
}

// TestRowsNothingCanUseDoNotHideWork: events raised to instances that do
// not exist, an undecodable message and an undecodable activity sit at the
// head of a shard, ahead of real work. Fetches find the real work within a
// few sweeps and never fail because of the bad rows.
func TestRowsNothingCanUseDoNotHideWork(t *testing.T) {
	t.Parallel()
	const shards = 2
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: shards})
	ids := sameShardIDs("orphan", 0, shards, 81)
	orphans, real := ids[:80], ids[80]
	for _, id := range orphans {
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: id, Name: "e", Data: "d"}, 0), "raise to a missing instance")
	}
	// An undecodable message for an instance in the same shard, older than
	// the real work: a newer version's work item, say.
	bad := sameShardIDs("undecodable", 0, shards, 1)[0]
	must(t, p.EnqueueForOrchestrator(ctx, startItem(bad), 0), "start of the undecodable instance")
	corruptQueued(ctx, t, env, bad)
	must(t, p.EnqueueForOrchestrator(ctx, startItem(real), 0), "start of the real instance")

	found := false
	for sweep := 1; sweep <= 4 && !found; sweep++ {
		got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil {
			t.Fatalf("sweep %d: %v (one bad row must not fail a fetch)", sweep, err)
		}
		found = got != nil && got.Instance == real
		if got != nil && !found {
			t.Fatalf("sweep %d locked %q, which has nothing runnable", sweep, got.Instance)
		}
	}
	if !found {
		t.Fatalf("real instance %q not found within 4 sweeps behind %d orphan events", real, len(orphans))
	}
}

// corruptQueued overwrites the work item of every message queued for
// instance with data that does not decode.
func corruptQueued(ctx context.Context, t *testing.T, env *dynamotest.Env, instance string) {
	t.Helper()
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(env.Table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :q)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)}, ":q": &types.AttributeValueMemberS{Value: keys.QueuePrefix},
		},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read queue rows")
	if len(out.Items) == 0 {
		t.Fatalf("no queued message for %q", instance)
	}
	for _, row := range out.Items {
		row["item"] = &types.AttributeValueMemberS{Value: `{"FutureKind":{}}`}
		_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: row})
		must(t, err, "corrupt queue row")
	}
}

// TestUndecodableActivityDoesNotStopWorkers: an activity row that does not
// decode, older than real work, does not fail worker fetches.
func TestUndecodableActivityDoesNotStopWorkers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "bad", ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	_, err := env.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(env.Table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: keys.WorkerPK("bad")}, "sk": &types.AttributeValueMemberS{Value: keys.WorkerSK(1, 1)},
		},
		UpdateExpression:          aws.String("SET #i = :bad"),
		ExpressionAttributeNames:  map[string]string{"#i": "item"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":bad": &types.AttributeValueMemberS{Value: `{"FutureKind":{}}`}},
	})
	must(t, err, "corrupt activity row")
	must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "good", ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	for range 2 {
		w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
		if err != nil {
			t.Fatalf("FetchWorkItem: %v (one bad row must not fail a fetch)", err)
		}
		if w != nil {
			if w.Item.Instance != "good" {
				t.Fatalf("fetched %+v", w.Item)
			}
			return
		}
	}
	t.Fatal("the real activity was not found behind an undecodable one")
}

// TestLongTimerFoundWithoutSignal: a timer 20 minutes out (beyond the
// longest SQS delay, so no signal announces it) on an otherwise idle
// instance, in a shard whose head holds events nothing can use. Once the
// clock passes its fire time, a fetch finds it.
func TestLongTimerFoundWithoutSignal(t *testing.T) {
	t.Parallel()
	const shards = 2
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	clock := faults.NewFakeClock(time.Now())
	p := faultyOn(t, env, faults.New(4), clock, dynamotest.Config{ShortPoll: true, Shards: shards})
	ids := sameShardIDs("timer", 1, shards, 61)
	inst := ids[60]
	item := startAndFetch(ctx, t, p, inst)
	for _, id := range ids[:60] {
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: id, Name: "e", Data: "d"}, 0), "raise to a missing instance")
	}
	fireAt := clock.Now().Add(20 * time.Minute)
	commit := provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.TimerCreated{FireAtMs: uint64(fireAt.UnixMilli())})},
		Metadata:     meta(),
		OrchestratorItems: []provider.WorkItem{provider.TimerFiredItem{
			Instance: inst, ExecutionID: 1, ID: 2, FireAtMs: uint64(fireAt.UnixMilli()),
		}},
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack with a timer")
	for range 3 { // before the fire time: nothing of the real instance
		if got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || (got != nil && got.Instance == inst) {
			t.Fatalf("fetch before the timer fires: %+v, %v", got, err)
		}
	}
	clock.Advance(20*time.Minute + time.Second)
	for sweep := 1; sweep <= 4; sweep++ {
		got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		must(t, err, "fetch after the fire time")
		if got != nil && got.Instance == inst {
			if _, ok := got.Messages[0].(provider.TimerFiredItem); !ok {
				t.Fatalf("got %+v, want the timer", got.Messages)
			}
			return
		}
		if got != nil {
			t.Fatalf("sweep %d locked %q, which has nothing runnable", sweep, got.Instance)
		}
	}
	t.Fatal("a 20-minute timer was not found within 4 sweeps after it fired")
}

// TestClockSkewMeasured: a provider whose clock runs five seconds ahead
// learns so from DynamoDB's responses and says so.
func TestClockSkewMeasured(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	var warnings skewtest.Warnings
	const ahead = 5 * time.Second
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		o.Now = faults.NewClock(nil, ahead).Now
		o.Logger = warnings.Logger()
	}})
	honest := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	if _, _, ok := p.ClockSkew(); ok {
		t.Fatal("ClockSkew before any request: ok, want no estimate")
	}
	for i := range 20 {
		must(t, p.EnqueueForOrchestrator(ctx, startItem(fmt.Sprint("skew-", i)), 0), "enqueue")
		must(t, honest.EnqueueForOrchestrator(ctx, startItem(fmt.Sprint("honest-", i)), 0), "enqueue")
		if _, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := honest.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	skewtest.Check(t, "a clock 5 s ahead", p.ClockSkew, ahead)
	skewtest.Check(t, "an honest clock", honest.ClockSkew, 0)
	if got := warnings.Lines(); len(got) != 1 {
		t.Fatalf("%d skew warnings logged, want exactly 1: %q", len(got), got)
	}
}

// TestSkewedProcessesUnderFaults: two processes whose clocks disagree by
// the documented bound (docs/design.md §9), with throttling, conflicts,
// server errors and lost responses injected, run the same orchestrations
// (start, one activity, complete) with dispatchers that retry as a runtime
// does. Every instance completes, with exactly one event of each kind in
// its history: nothing lost, nothing applied twice.
func TestSkewedProcessesUnderFaults(t *testing.T) {
	t.Parallel()
	const instances = 12
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env := dynamotest.NewEnv(t, true)
	in := faults.New(5)
	in.SetRealConflicts(true)
	for _, r := range []faults.Rule{
		{Rate: 0.02, Fault: faults.Throttle("ThrottlingException")},
		{Rate: 0.02, Fault: faults.ServerError("InternalServerError")},
		{Rate: 0.02, Fault: faults.LostResponse()},
		{Ops: []string{faults.OpTransactWriteItems}, Rate: 0.03, Fault: faults.TransactionCanceled("TransactionConflict", -1)},
	} {
		in.Add(r)
	}
	const skew = 250 * time.Millisecond // half the bound each way
	procs := []*dynamo.Provider{
		faultyOn(t, env, in, faults.NewClock(nil, skew), dynamotest.Config{Queues: true}),
		faultyOn(t, env, in, faults.NewClock(nil, -skew), dynamotest.Config{Queues: true}),
	}
	for i := range instances {
		must(t, retry(ctx, func() error {
			return procs[i%2].EnqueueForOrchestrator(ctx, startItem(fmt.Sprint("skewed-", i)), 0)
		}), "start")
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { orchestrate(ctx, t, p) })
		wg.Go(func() { work(ctx, t, p) })
	}
	observer := procs[0]
	for i := range instances {
		inst := fmt.Sprint("skewed-", i)
		for {
			info, err := observer.InstanceInfo(ctx, inst)
			if err == nil && info.Status == provider.StatusCompleted {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("instance %s did not complete: %v %+v; faults %v", inst, err, info, in.Stats())
			}
			sleepFor(ctx, 20*time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	in.SetEnabled(false)
	for i := range instances {
		inst := fmt.Sprint("skewed-", i)
		h, err := procs[1].Read(context.Background(), inst)
		must(t, err, "Read")
		var kinds []string
		for _, e := range h {
			kinds = append(kinds, e.Kind.EventType())
		}
		if want := "OrchestrationStarted ActivityScheduled ActivityCompleted OrchestrationCompleted"; strings.Join(kinds, " ") != want {
			t.Errorf("history of %s: %v, want %s", inst, kinds, want)
		}
	}
	t.Logf("faults: %v", in.Stats())
}

// retry calls f until it succeeds, fails permanently, or ctx ends: what a
// runtime does with retryable errors.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !provider.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		sleepFor(ctx, 10*time.Millisecond)
	}
}

func sleepFor(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// orchestrate is a minimal orchestration dispatcher: a start schedules one
// activity, its completion completes the orchestration.
func orchestrate(ctx context.Context, t *testing.T, p provider.Provider) {
	for ctx.Err() == nil {
		item, err := p.FetchOrchestrationItem(ctx, 5*time.Second, 200*time.Millisecond, nil)
		if err != nil || item == nil {
			if err != nil && !provider.IsRetryable(err) && ctx.Err() == nil {
				t.Errorf("fetch: %v", err)
				return
			}
			continue
		}
		next := uint64(len(item.History) + 1)
		commit := provider.TurnCommit{ExecutionID: item.ExecutionID, Metadata: meta()}
		for _, m := range item.Messages {
			switch m := m.(type) {
			case provider.StartOrchestrationItem:
				if len(item.History) > 0 {
					continue
				}
				commit.HistoryDelta = append(commit.HistoryDelta, started(item.Instance),
					ev(2, item.Instance, provider.ActivityScheduled{Name: "A", Input: "x"}))
				commit.WorkerItems = append(commit.WorkerItems, provider.ActivityExecuteItem{Instance: item.Instance, ExecutionID: 1, ID: 2, Name: "A", Input: "x"})
				next = 3
			case provider.ActivityCompletedItem:
				e := ev(next, item.Instance, provider.ActivityCompleted{Result: m.Result})
				e.SourceEventID = ptr(m.ID)
				commit.HistoryDelta = append(commit.HistoryDelta, e, ev(next+1, item.Instance, provider.OrchestrationCompleted{Output: m.Result}))
				commit.Metadata.Status, commit.Metadata.Output = provider.StatusCompleted, ptr(m.Result)
			}
		}
		err = retry(ctx, func() error { return p.AckOrchestrationItem(ctx, item.LockToken, commit) })
		if err != nil && ctx.Err() == nil && !errors.Is(err, provider.ErrInvalidLockToken) {
			t.Errorf("ack of %s: %v", item.Instance, err)
		}
	}
}

// work is a minimal worker: every activity completes with "done".
func work(ctx context.Context, t *testing.T, p provider.Provider) {
	for ctx.Err() == nil {
		w, err := p.FetchWorkItem(ctx, 5*time.Second, 200*time.Millisecond, nil, provider.AnyTag())
		if err != nil || w == nil {
			if err != nil && !provider.IsRetryable(err) && ctx.Err() == nil {
				t.Errorf("fetch work: %v", err)
				return
			}
			continue
		}
		done := provider.ActivityCompletedItem{Instance: w.Item.Instance, ExecutionID: w.Item.ExecutionID, ID: w.Item.ID, Result: "done"}
		err = retry(ctx, func() error { return p.AckWorkItem(ctx, w.LockToken, done) })
		if err != nil && ctx.Err() == nil && !errors.Is(err, provider.ErrInvalidLockToken) {
			t.Errorf("ack of activity of %s: %v", w.Item.Instance, err)
		}
	}
}

// TestSubOrchestrationFanOutStartsWithoutContention: a parent starts 200
// children in one turn, and the children's first acks run concurrently.
// No two of them touch one item (on AWS they would cancel each other with
// TransactionConflict), and the parent's tree lists every child.
func TestSubOrchestrationFanOutStartsWithoutContention(t *testing.T) {
	t.Parallel()
	const children, workers = 200, 8
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(6)
	in.SetRealConflicts(true)
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	const parent = "fan-parent"
	item := startAndFetch(ctx, t, p, parent)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(parent)}, Metadata: meta()}
	for i := range children {
		child := fmt.Sprintf("%s::child-%d", parent, i)
		commit.HistoryDelta = append(commit.HistoryDelta, ev(uint64(i+2), parent, provider.SubOrchestrationScheduled{Name: testName, Instance: child, Input: "{}"}))
		start := startItem(child)
		start.ParentInstance, start.ParentID = ptr(parent), ptr(uint64(i+2))
		commit.OrchestratorItems = append(commit.OrchestratorItems, start)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "parent's turn")

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				got, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
				if err != nil {
					errs <- err
					return
				}
				if got == nil {
					return
				}
				m := meta()
				m.ParentInstanceID = parent
				err = p.AckOrchestrationItem(ctx, got.LockToken, provider.TurnCommit{
					ExecutionID: 1, HistoryDelta: []provider.Event{started(got.Instance)}, Metadata: m,
				})
				if err != nil {
					errs <- fmt.Errorf("first ack of %s: %w", got.Instance, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c := in.Stats().Faults[faults.KindRealConflict]; c != 0 {
		t.Fatalf("the children's first acks conflicted %d times: they share an item", c)
	}
	tree, err := provider.GetInstanceTree(ctx, p, parent)
	must(t, err, "GetInstanceTree")
	if len(tree.AllIDs) != children+1 {
		t.Fatalf("tree of the parent: %d instances, want %d", len(tree.AllIDs), children+1)
	}

	// The parent completes; a bulk delete removes the whole tree, larger
	// than one transaction takes.
	in.SetEnabled(false)
	completeByEvent(ctx, t, p, parent, children+2)
	res, err := p.DeleteInstanceBulk(ctx, provider.InstanceFilter{InstanceIDs: []string{parent}})
	must(t, err, "DeleteInstanceBulk")
	if res.InstancesDeleted != children+1 {
		t.Fatalf("DeleteInstanceBulk deleted %d instances, want the tree's %d", res.InstancesDeleted, children+1)
	}
	left, err := p.ListInstances(ctx)
	must(t, err, "ListInstances")
	if len(left) != 0 {
		t.Fatalf("after deleting the tree, %d instances are left", len(left))
	}
}

// TestDeleteFailsWhenATurnStartsAChild: a force delete reads a running
// instance with no children; before it commits, a turn of the instance
// starts a child. The delete fails with ErrTreeChanged instead of leaving
// the child to start under a deleted parent.
func TestDeleteFailsWhenATurnStartsAChild(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := faulty(t, 7)
	const parent = "tree-parent"
	item := startAndFetch(ctx, t, p, parent)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(parent)}, Metadata: meta()}), "first turn")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: parent, Name: "go", Data: "{}"}, 0), "raise")

	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.Hold(gate)})
	deleted := make(chan error, 1)
	go func() {
		_, err := p.DeleteInstancesAtomic(ctx, []string{parent}, true)
		deleted <- err
	}()
	must(t, gate.Wait(ctx, 1), "delete at its gate")
	turn, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || turn == nil {
		t.Fatalf("fetch of the parent: %v, %v", turn, err)
	}
	child := startItem("tree-child")
	child.ParentInstance, child.ParentID = ptr(parent), ptr(uint64(3))
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
		ExecutionID:       1,
		HistoryDelta:      []provider.Event{ev(2, parent, provider.ExternalEvent{Name: "go", Data: "{}"}), ev(3, parent, provider.SubOrchestrationScheduled{Name: testName, Instance: "tree-child", Input: "{}"})},
		Metadata:          meta(),
		OrchestratorItems: []provider.WorkItem{child},
	}), "turn that starts a child")
	gate.Release()
	if err := <-deleted; !errors.Is(err, provider.ErrTreeChanged) {
		t.Fatalf("delete after a turn started a child: got %v, want ErrTreeChanged", err)
	}
	tree, err := provider.GetInstanceTree(ctx, p, parent)
	must(t, err, "GetInstanceTree")
	if len(tree.AllIDs) != 2 {
		t.Fatalf("tree after the failed delete: %v, want the parent and its child", tree.AllIDs)
	}
}

// TestDuplicateCancellationsInOneTurn: a turn that names one cancelled
// activity twice deletes it once (DynamoDB refuses two actions on one item
// in a transaction).
func TestDuplicateCancellationsInOneTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "cancel-twice"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "schedule")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "stop", Data: "{}"}, 0), "raise")
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || next == nil {
		t.Fatalf("fetch: %v, %v", next, err)
	}
	act := provider.ScheduledActivityIdentifier{Instance: inst, ExecutionID: 1, ActivityID: 2}
	must(t, p.AckOrchestrationItem(ctx, next.LockToken, provider.TurnCommit{
		ExecutionID:         1,
		HistoryDelta:        []provider.Event{ev(3, inst, provider.ExternalEvent{Name: "stop", Data: "{}"})},
		Metadata:            meta(),
		CancelledActivities: []provider.ScheduledActivityIdentifier{act, act},
	}), "ack that cancels one activity twice")
	if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch of the cancelled activity: %+v, %v; want nothing", w, err)
	}
}

// TestStagingRowTooLargeIsRejected: a turn too large for one transaction
// that holds an event just under the item limit, of an instance whose id
// is near the key limit: the staging row would exceed 400 KB. The ack fails
// with ErrInvalidInput before anything is written, and the lock is kept.
func TestStagingRowTooLargeIsRejected(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Uncompressed: compressed, the event's row would be small.
	p, _ := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) { o.DisablePayloadCompression = true }})
	inst := strings.Repeat("i", dynamo.MaxIDBytes-10)
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 120)
	// The event row holds the id twice (key and event) and fits MaxItemBytes;
	// its staging row adds the id once more.
	big := strings.Repeat("x", dynamo.MaxItemBytes-2*len(inst)-400)
	commit.HistoryDelta = append(commit.HistoryDelta, ev(200, inst, provider.ExternalEvent{Name: "big", Data: big}))
	err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
	if !errors.Is(err, provider.ErrInvalidInput) {
		t.Fatalf("ack with a row the staged protocol cannot carry: got %v, want ErrInvalidInput", err)
	}
	if h, err := p.Read(ctx, inst); err != nil || len(h) != 0 {
		t.Fatalf("history after the rejected ack: %d events, %v; want none", len(h), err)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 120)), "ack without the large event, on the same lock")
}

// TestSignalledActivityFoundDespiteIndexLag: the ready index has not caught
// up with a new activity (it never will in this test); a fetch woken by the
// activity's signal finds it all the same, by reading the row the signal
// names.
func TestSignalledActivityFoundDespiteIndexLag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	frozen := faults.NewFakeClock(time.Now())
	in := faults.New(8, func(o *faults.Options) { o.Now = frozen.Now })
	in.SetIndexLag(time.Hour, time.Hour, "ready")
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Shards: 1})
	// An empty fetch: the index's view is taken before the activity exists.
	if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", w, err)
	}
	must(t, p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "lagged", ExecutionID: 1, ID: 1, Name: "A", Input: "{}"}), "enqueue")
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if w == nil || w.Item.Instance != "lagged" {
		t.Fatalf("signalled fetch with the index behind: got %+v, want the new activity", w)
	}
	if in.Stats().Faults[faults.KindLaggedQuery] == 0 {
		t.Fatal("no query was served from the lagging index: the test tests nothing")
	}
}

// TestCommittedAckThenCancelledResend: an ack's transaction commits but its
// response is lost; the resend is cancelled (a conflict). The ack may not
// rebuild the transaction (the lock it would check is released): the
// caller's retry resends the same one, which DynamoDB answers as
// committed. The same for a worker ack.
func TestCommittedAckThenCancelledResend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := faulty(t, 9)
	const inst = "lost-then-cancelled"
	lostThenCancelled := func() {
		in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
		in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.TransactionCanceled("TransactionConflict", -1)})
	}
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 2)
	lostThenCancelled()
	err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
	if err == nil || !provider.IsRetryable(err) {
		t.Fatalf("ack whose commit was lost and resend cancelled: got %v, want a retryable error", err)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "retried ack")
	if h, err := p.Read(ctx, inst); err != nil || len(h) != 3 {
		t.Fatalf("history: %d events, %v; want 3", len(h), err)
	}

	w := inWorkerRow(ctx, t, p) // its ack is a transaction
	done := provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}
	lostThenCancelled()
	if err := p.AckWorkItem(ctx, w.LockToken, done); err == nil || !provider.IsRetryable(err) {
		t.Fatalf("worker ack whose commit was lost and resend cancelled: got %v, want a retryable error", err)
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, done), "retried worker ack")
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if next == nil || len(next.Messages) != 1 {
		t.Fatalf("after the retried worker ack: %+v, want exactly one completion", next)
	}
}

// sessionRow reads the record of session directly (nil when there is none).
func sessionRow(ctx context.Context, t *testing.T, env *dynamotest.Env, session string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(env.Table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: keys.SessionPK(session)}, "sk": &types.AttributeValueMemberS{Value: keys.Session}},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read session record")
	return out.Item
}

// TestSessionTouchedOnlyByItsLiveOwner: renewals and acks of a session's
// activity record activity on the session only while the session is the
// fetcher's and its lease is live. A worker whose session lease lapsed, or
// whose session another owner took, still renews and acks its activity,
// but neither keeps the session from going idle nor recreates a record
// that was removed.
func TestSessionTouchedOnlyByItsLiveOwner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	clock := faults.NewFakeClock(time.Now())
	p := faultyOn(t, env, faults.New(10), clock, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst, sid = "session-touch", "s-touch"
	item := startAndFetch(ctx, t, p, inst)
	commit := activities(inst, 3)
	for i := range commit.WorkerItems {
		commit.WorkerItems[i].SessionID = ptr(sid)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack scheduling")
	const lease = time.Second
	fetch := func(owner string) *provider.LockedWorkItem {
		t.Helper()
		w, err := p.FetchWorkItem(ctx, longLock, 0, &provider.SessionFetchConfig{OwnerID: owner, LockTimeout: lease}, provider.AnyTag())
		if err != nil || w == nil {
			t.Fatalf("FetchWorkItem for %s: %+v, %v", owner, w, err)
		}
		return w
	}
	wantLast := func(when string, want time.Time) {
		t.Helper()
		last, _ := sessionRow(ctx, t, env, sid)["last_activity"].(*types.AttributeValueMemberN)
		if last == nil || last.Value != fmt.Sprint(want.UnixMilli()) {
			t.Fatalf("%s: last_activity %v, want %d", when, last, want.UnixMilli())
		}
	}

	first := fetch("w1")
	claimed := clock.Now()
	clock.Advance(2 * lease)
	must(t, p.RenewWorkItemLock(ctx, first.LockToken, longLock), "renewal after the session lease lapsed")
	wantLast("renewal by an owner whose lease lapsed", claimed)

	second := fetch("w2")
	taken := clock.Now()
	clock.Advance(lease / 2)
	must(t, p.RenewWorkItemLock(ctx, first.LockToken, longLock), "renewal after another owner took the session")
	must(t, p.AckWorkItem(ctx, first.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: first.Item.ID, Result: "r"}),
		"ack after another owner took the session")
	wantLast("renewal and ack by the session's former owner", taken)

	must(t, p.AckWorkItem(ctx, second.LockToken, nil), "ack by the live owner")
	wantLast("ack by the live owner", clock.Now())

	third := fetch("w2")
	clock.Advance(lease / 2)
	_, err := env.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(env.Table),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: keys.SessionPK(sid)}, "sk": &types.AttributeValueMemberS{Value: keys.Session}},
	})
	must(t, err, "remove the session record")
	must(t, p.AckWorkItem(ctx, third.LockToken, nil), "ack of an activity whose session record is gone")
	if row := sessionRow(ctx, t, env, sid); row != nil {
		t.Fatalf("after the ack: a session record with %d attributes, want none", len(row))
	}
}

// TestLargeTurnFinishWritesNoHistory: finishing a large turn writes no
// history row. A write of whole history rows after the turn was applied
// (rows read before a concurrent delete, put back after it) would bring
// back rows the delete removed: the test holds such a write, if there is
// one, force-deletes the instance meanwhile, and checks that nothing of
// the instance remains.
func TestLargeTurnFinishWritesNoHistory(t *testing.T) {
	t.Parallel()
	const n = 150 // activities: more than one transaction takes
	ctx := t.Context()
	env, in, a := faulty(t, 11)
	b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	const inst = "finish-after-delete"
	item := startAndFetch(ctx, t, a, inst)

	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpBatchWriteItem}, Rate: 1, Count: 1, Fault: faults.Hold(gate), Match: func(r faults.Request) bool {
		for _, reqs := range r.Input.(*dynamodb.BatchWriteItemInput).RequestItems {
			for _, w := range reqs {
				if w.PutRequest == nil {
					continue
				}
				if sk, _ := w.PutRequest.Item["sk"].(*types.AttributeValueMemberS); strings.HasPrefix(sk.Value, keys.HistPrefix) {
					return true
				}
			}
		}
		return false
	}})
	acked := make(chan error, 1)
	go func() { acked <- a.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)) }()
	select {
	case err := <-acked:
		must(t, err, "large ack")
		if _, err := b.DeleteInstancesAtomic(ctx, []string{inst}, true); err != nil {
			t.Fatalf("force delete: %v", err)
		}
	case <-gate.Arrived():
		if _, err := b.DeleteInstancesAtomic(ctx, []string{inst}, true); err != nil {
			t.Fatalf("force delete while history rows are rewritten: %v", err)
		}
		gate.Release()
		<-acked
	}
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(env.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(inst)}},
		ConsistentRead:            aws.Bool(true),
	})
	must(t, err, "query the deleted instance's partition")
	if len(out.Items) != 0 {
		sk, _ := out.Items[0]["sk"].(*types.AttributeValueMemberS)
		t.Fatalf("%d rows of the deleted instance remain (first %q), want none", len(out.Items), sk.Value)
	}
	if history, err := b.Read(ctx, inst); err != nil || len(history) != 0 {
		t.Fatalf("history after the force delete: %d events, %v; want none", len(history), err)
	}
}

// TestPartialPruneLeavesNoPartialExecution: a prune that fails between two
// of its history batches leaves no execution that readers see with part of
// its history. The execution is either listed with all its events or gone
// (ListExecutions, ExecutionInfo, ReadWithExecution, SystemMetrics agree),
// and a later prune finishes the job.
func TestPartialPruneLeavesNoPartialExecution(t *testing.T) {
	t.Parallel()
	const events = 150 // more than one transaction and several batches take
	ctx := t.Context()
	env, in, p := faulty(t, 12)
	const inst = "partial-prune"

	// Execution 1: many events, continued as new; execution 2: current.
	item := startAndFetch(ctx, t, p, inst)
	first := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
	// Ids two apart: events with consecutive ids would share rows, and the
	// history must take more rows than one transaction holds.
	for k := uint64(2); k <= events; k++ {
		first.HistoryDelta = append(first.HistoryDelta, ev(2*k, inst, provider.TimerCreated{FireAtMs: k}))
	}
	first.Metadata.Status = provider.StatusContinuedAsNew
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, first), "ack execution 1")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ContinueAsNewItem{Instance: inst, Orchestration: testName, Input: "{}", Version: ptr(testVersion)}, 0), "enqueue continue-as-new")
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || next == nil {
		t.Fatalf("FetchOrchestrationItem (continue-as-new): %v, %v", next == nil, err)
	}
	second := ev(1, inst, provider.OrchestrationStarted{Name: testName, Version: testVersion, Input: "{}"})
	second.ExecutionID = 2
	must(t, p.AckOrchestrationItem(ctx, next.LockToken, provider.TurnCommit{ExecutionID: 2, HistoryDelta: []provider.Event{second}, Metadata: meta()}), "ack execution 2")

	// Every BatchWriteItem that deletes history of execution 1 after the
	// first one fails (resends included), until the rule is removed.
	var batches atomic.Int32
	heal := in.Add(faults.Rule{Ops: []string{faults.OpBatchWriteItem}, Rate: 1, Fault: faults.ServerError("InternalServerError"), Match: func(r faults.Request) bool {
		for _, reqs := range r.Input.(*dynamodb.BatchWriteItemInput).RequestItems {
			for _, w := range reqs {
				if w.DeleteRequest == nil {
					continue
				}
				if sk, _ := w.DeleteRequest.Key["sk"].(*types.AttributeValueMemberS); sk != nil && strings.HasPrefix(sk.Value, keys.HistoryPrefix(1)) {
					return batches.Add(1) >= 2
				}
			}
		}
		return false
	}})
	if res, err := p.PruneExecutions(ctx, inst, provider.PruneOptions{KeepLast: 1}); err == nil {
		t.Fatalf("PruneExecutions with a failing second batch: no error (%+v, %d history batches)", res, batches.Load())
	}
	heal()
	if batches.Load() < 2 {
		t.Fatalf("the prune sent %d history batches, want the failing second one", batches.Load())
	}

	// Execution 1 is whole or gone, to every reader.
	ids, err := p.ListExecutions(ctx, inst)
	must(t, err, "ListExecutions")
	listed := slices.Contains(ids, 1)
	history, err := p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution(1)")
	if len(history) != 0 && len(history) != events {
		t.Errorf("after the failed prune ReadWithExecution(1) returns %d events, want %d or none", len(history), events)
	}
	if listed != (len(history) == events) {
		t.Errorf("after the failed prune: execution 1 listed %v (%v), ReadWithExecution(1) returns %d events", listed, ids, len(history))
	}
	info, err := p.ExecutionInfo(ctx, inst, 1)
	switch {
	case err != nil && !errors.Is(err, provider.ErrNotFound):
		t.Fatalf("ExecutionInfo(1): %v", err)
	case err == nil && (info.EventCount != events || !listed):
		t.Errorf("after the failed prune ExecutionInfo(1) counts %d events (listed %v), want %d or not found", info.EventCount, listed, events)
	case err != nil && listed:
		t.Errorf("after the failed prune ExecutionInfo(1) is not found, but ListExecutions lists it")
	}
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	wantExecs, wantEvents := uint64(1), uint64(1)
	if listed {
		wantExecs, wantEvents = 2, events+1
	}
	if m.TotalExecutions != wantExecs || m.TotalEvents != wantEvents {
		t.Errorf("after the failed prune SystemMetrics counts %d executions and %d events, want %d and %d (execution 1 listed %v)",
			m.TotalExecutions, m.TotalEvents, wantExecs, wantEvents, listed)
	}

	// A later prune finishes the job.
	res, err := p.PruneExecutions(ctx, inst, provider.PruneOptions{KeepLast: 1})
	must(t, err, "PruneExecutions again")
	if res.ExecutionsDeleted != 1 {
		t.Errorf("the second prune deleted %d executions, want 1 (execution 1, finished)", res.ExecutionsDeleted)
	}
	ids, err = p.ListExecutions(ctx, inst)
	must(t, err, "ListExecutions after the second prune")
	if !slices.Equal(ids, []uint64{2}) {
		t.Errorf("executions after the second prune: %v, want [2]", ids)
	}
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(env.Table),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(inst)},
			":lo": &types.AttributeValueMemberS{Value: keys.HistoryPrefix(1)},
			":hi": &types.AttributeValueMemberS{Value: keys.HistoryPrefix(1) + "~~"},
		},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "query execution 1's history")
	if len(out.Items) != 0 {
		t.Errorf("%d history rows of execution 1 remain after the second prune", len(out.Items))
	}
	if history, err := p.ReadWithExecution(ctx, inst, 2); err != nil || len(history) != 1 {
		t.Errorf("ReadWithExecution(2) after the prunes: %d events, %v; want 1", len(history), err)
	}
}

// TestCleanupCountsSessionWhoseDeleteLostItsResponse: a cleanup whose
// delete landed but lost its response reports the session as removed; a
// caller that retried the error would otherwise never see it counted (the
// retry finds nothing left to remove).
func TestCleanupCountsSessionWhoseDeleteLostItsResponse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const sid = "s-cleanup"
	env, in, p := expiredOrphanSession(t, 11, sid)
	in.Add(faults.Rule{Match: deletesSession, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	wantSessionRemoved(ctx, t, env, p, sid, "cleanup whose delete lost its response")
}

// TestAppendRetriedAfterUnknownOutcome: an append whose events were
// stored but whose call failed afterwards (here the lock row's history
// mark met a server error) is retried by its caller, as the contract's
// ambiguous outcomes ask; the retry succeeds and stores nothing twice. An
// append of other content under a stored id still fails with
// ErrDuplicateEvent. The conformance suite's AppendRejectsDuplicateEventID
// failed under fault injection on the first append's retry.
func TestAppendRetriedAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(13)
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst = "append-retry"
	item := startAndFetch(ctx, t, p, inst) // a lock row, which the append marks
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 0)), "first ack")
	events := []provider.Event{ev(2, inst, provider.TimerCreated{FireAtMs: 2}), ev(3, inst, provider.TimerCreated{FireAtMs: 3})}
	heal := in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Rate: 1, Fault: faults.ServerError("InternalServerError")})
	err := p.AppendWithExecution(ctx, inst, 1, events)
	heal()
	if !provider.IsRetryable(err) {
		t.Fatalf("append whose history mark failed: %v, want a retryable error", err)
	}
	must(t, p.AppendWithExecution(ctx, inst, 1, events), "retried append")
	history, err := p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution")
	if len(history) != 3 || history[1].EventID != 2 || history[2].EventID != 3 {
		t.Fatalf("history after the retried append: %+v, want events 1, 2, 3", history)
	}
	imposter := []provider.Event{ev(3, inst, provider.TimerCreated{FireAtMs: 99})}
	if err := p.AppendWithExecution(ctx, inst, 1, imposter); !errors.Is(err, provider.ErrDuplicateEvent) {
		t.Fatalf("append of other content under a stored id: %v, want ErrDuplicateEvent", err)
	}
}

// expiredOrphanSession returns a table of its own, an injector seeded with
// seed and a short-polling provider of one shard whose client goes through
// it, on which session sid's one activity ran and its lease has lapsed
// (the provider's clock moved past it): the session is an expired orphan,
// which a cleanup removes.
func expiredOrphanSession(t *testing.T, seed int64, sid string) (*dynamotest.Env, *faults.Injector, *dynamo.Provider) {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	clock := faults.NewFakeClock(time.Now())
	in := faults.New(seed)
	p := faultyOn(t, env, in, clock, dynamotest.Config{ShortPoll: true, Shards: 1})
	const lease = time.Second
	runSessionActivity(t.Context(), t, p, "instance-of-"+sid, sid, lease)
	clock.Advance(2 * lease)
	return env, in, p
}

// wantSessionRemoved runs a cleanup on p, described by what, and fails the
// test unless it reports one session removed and sid's record is gone.
func wantSessionRemoved(ctx context.Context, t *testing.T, env *dynamotest.Env, p *dynamo.Provider, sid, what string) {
	t.Helper()
	n, err := p.CleanupOrphanedSessions(ctx, 0)
	if err != nil || n != 1 {
		t.Fatalf("%s: %d, %v; want 1 session removed", what, n, err)
	}
	if row := sessionRow(ctx, t, env, sid); row != nil {
		t.Fatalf("%s: session record still there: %v", what, row)
	}
}

// runSessionActivity starts instance, schedules one activity of session
// sid, and runs it as owner "w1", whose session lease is lease: the session
// record stays, referenced by no activity.
func runSessionActivity(ctx context.Context, t *testing.T, p provider.Provider, instance, sid string, lease time.Duration) {
	t.Helper()
	item := startAndFetch(ctx, t, p, instance)
	commit := activities(instance, 1)
	commit.WorkerItems[0].SessionID = ptr(sid)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack scheduling")
	w, err := p.FetchWorkItem(ctx, longLock, 0, &provider.SessionFetchConfig{OwnerID: "w1", LockTimeout: lease}, provider.AnyTag())
	if err != nil || w == nil {
		t.Fatalf("FetchWorkItem: %+v, %v", w, err)
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: w.Item.ID, Result: "r"}), "ack")
}

// TestCleanupPassesOverLiveSessions: a cleanup reads each session's lease
// before looking for activities that reference it, so a live session costs
// one GetItem, not a Query of its ready shard (which pages through the
// shard's whole backlog when nothing references the session). Once the
// lease is over, the same cleanup removes the session.
func TestCleanupPassesOverLiveSessions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const sid, lease = "s-live", time.Minute
	runSessionActivity(ctx, t, p, "cleanup-live", sid, lease)

	meter.Reset()
	if n, err := p.CleanupOrphanedSessions(ctx, 0); err != nil || n != 0 {
		t.Fatalf("cleanup with the session's lease live: %d, %v; want 0 removed", n, err)
	}
	used := meter.Usage().Requests
	if used["Query"] != 1 || used["GetItem"] != 1 || used["DeleteItem"] != 0 {
		t.Errorf("cleanup of one live session made %v; want the listing's Query and one GetItem of the lease", used)
	}
	if sessionRow(ctx, t, env, sid) == nil {
		t.Fatal("live session removed")
	}

	clock.Advance(2 * lease)
	if n, err := p.CleanupOrphanedSessions(ctx, 0); err != nil || n != 1 {
		t.Fatalf("cleanup after the lease: %d, %v; want 1 removed", n, err)
	}
	if row := sessionRow(ctx, t, env, sid); row != nil {
		t.Fatalf("expired orphan still there: %v", row)
	}
}

// inWorkerRow fetches the two activities a turn scheduled
// (activities(instance, 2)) and returns the second: the first runs in the
// instance's slot, the second in a worker row, whose ack with a completion
// is a transaction. The first stays locked for longLock.
func inWorkerRow(ctx context.Context, t *testing.T, p provider.Provider) *provider.LockedWorkItem {
	t.Helper()
	var w *provider.LockedWorkItem
	for id := uint64(2); id <= 3; id++ {
		var err error
		if w, err = p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w == nil || w.Item.ID != id {
			t.Fatalf("FetchWorkItem: %+v, %v; want activity %d", w, err, id)
		}
	}
	return w
}

// TestSlotAckRetriedByAnotherProcess: the worker's ack of an activity in
// its instance's slot (one UpdateItem) lands, its response is lost, and
// the provider's resend is throttled: the ack fails retryable. Its retry
// from a process that did not claim the activity finds the slot filled by
// the same token and succeeds; a throttled ack that did not land is
// retryable too. Either way the turn gets the completion exactly once.
func TestSlotAckRetriedByAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, first := faulty(t, 12)
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "slot-ack-retried"
	isAck := func(r faults.Request) bool {
		u, ok := r.Input.(*dynamodb.UpdateItemInput)
		return ok && strings.Contains(aws.ToString(u.UpdateExpression), "#atok")
	}
	item := startAndFetch(ctx, t, first, inst)
	must(t, first.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "turn")
	w, err := first.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	if err != nil || w == nil || w.Item.ID != 2 {
		t.Fatalf("FetchWorkItem: %+v, %v; want activity 2", w, err)
	}
	done := completed(inst, 2, "r")
	// Throttled on every attempt the SDK's retryer makes.
	throttled := in.Add(faults.Rule{Match: isAck, Rate: 1, Fault: faults.Throttle("")})
	if err := first.AckWorkItem(ctx, w.LockToken, done); err == nil || !provider.IsRetryable(err) {
		t.Fatalf("worker ack throttled: got %v, want a retryable error", err)
	}
	throttled()
	in.Add(faults.Rule{Match: isAck, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	throttled = in.Add(faults.Rule{Match: isAck, Rate: 1, Fault: faults.Throttle("")})
	if err := first.AckWorkItem(ctx, w.LockToken, done); err == nil || !provider.IsRetryable(err) {
		t.Fatalf("worker ack that landed, then a throttled resend: got %v, want a retryable error", err)
	}
	throttled()
	must(t, other.AckWorkItem(ctx, w.LockToken, done), "worker ack retried by another process")
	nextTurn(ctx, t, other, inst, done)
}

// TestCommittedAckRetriedByAnotherProcess: an ack commits but its response
// is lost, and the retry comes from a provider that did not fetch the item
// (another process, or this one after a restart: nothing of the first try
// is cached). An orchestration ack's retry reports the commit as done (the
// lock row records the last turn finished). A worker ack's retry cannot
// tell a committed ack from a lost lock and reports ErrInvalidLockToken, as
// provider/doc.go documents; either way nothing is lost or delivered twice:
// exactly one completion reaches the instance.
func TestCommittedAckRetriedByAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, first := faulty(t, 11)
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "retried-elsewhere"
	// The provider resends a transaction whose response was lost; a
	// conflict on the resend makes the ack give up with a retryable error.
	lost := func() {
		in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
		in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 1, Fault: faults.TransactionCanceled("TransactionConflict", -1)})
	}
	item := startAndFetch(ctx, t, first, inst)
	commit := activities(inst, 2)
	lost()
	if err := first.AckOrchestrationItem(ctx, item.LockToken, commit); err == nil || !provider.IsRetryable(err) {
		t.Fatalf("ack whose commit lost its response: got %v, want a retryable error", err)
	}
	must(t, other.AckOrchestrationItem(ctx, item.LockToken, commit), "ack retried by another process")
	if h, err := other.Read(ctx, inst); err != nil || len(h) != 3 {
		t.Fatalf("history: %d events, %v; want 3", len(h), err)
	}

	w := inWorkerRow(ctx, t, first) // its ack is a transaction
	done := provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}
	lost()
	if err := first.AckWorkItem(ctx, w.LockToken, done); err == nil || !provider.IsRetryable(err) {
		t.Fatalf("worker ack whose commit lost its response: got %v, want a retryable error", err)
	}
	if err := other.AckWorkItem(ctx, w.LockToken, done); !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("worker ack retried by another process: got %v, want ErrInvalidLockToken", err)
	}
	next, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if next == nil || len(next.Messages) != 1 {
		t.Fatalf("after the retried worker ack: %+v, want exactly one completion", next)
	}
}

// TestLargeTurnRecordOutlivesSmallTurns: a late ack (or roll-forward) of a
// large turn learns from the lock row that the turn is in, even after later
// turns that fitted one transaction were committed: their own record does
// not replace the large turn's.
func TestLargeTurnRecordOutlivesSmallTurns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "large-then-small"
	item := startAndFetch(ctx, t, p, inst)
	large := activities(inst, 120)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, large), "large turn")

	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "d"}, 0), "raise")
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || next == nil {
		t.Fatalf("fetch the event: %v, %v", next, err)
	}
	small := provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{ev(122, inst, provider.ExternalEvent{Name: "e", Data: "d"})}}
	must(t, p.AckOrchestrationItem(ctx, next.LockToken, small), "small turn")

	// The large turn's ack, retried late by a process with nothing cached.
	must(t, other.AckOrchestrationItem(ctx, item.LockToken, large), "late retry of the large turn's ack")
	if h, err := other.Read(ctx, inst); err != nil || len(h) != 122 {
		t.Fatalf("history: %d events, %v; want 122", len(h), err)
	}
}

// TestDeleteInstanceBulkLimitUnderIndexLag: the instances index still
// lists a root deleted a moment ago. DeleteInstanceBulk with a limit of two
// passes over it and deletes two roots that exist; before, the gone root
// took one of the two places and the call deleted one.
func TestDeleteInstanceBulkLimitUnderIndexLag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	frozen := faults.NewFakeClock(time.Now())
	in := faults.New(11, func(o *faults.Options) { o.Now = frozen.Now })
	p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true, Shards: 1})
	roots := []string{"bulk-lag-a", "bulk-lag-b", "bulk-lag-c"}
	for _, id := range roots {
		item := startAndFetch(ctx, t, p, id)
		done := meta()
		done.Status, done.Output = provider.StatusCompleted, ptr("ok")
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
			ExecutionID:  1,
			HistoryDelta: []provider.Event{started(id), ev(2, id, provider.OrchestrationCompleted{Output: "ok"})},
			Metadata:     done,
		}), "completing "+id)
	}
	// From here the index is seen as it is now, whatever changes.
	in.SetIndexLag(time.Hour, time.Hour, "instances")
	listed, err := p.ListInstances(ctx)
	must(t, err, "ListInstances")
	if len(listed) != len(roots) {
		t.Fatalf("listed %v, want %v", listed, roots)
	}
	if _, err := p.DeleteInstancesAtomic(ctx, roots[:1], false); err != nil {
		t.Fatalf("DeleteInstance %s: %v", roots[0], err)
	}
	res, err := p.DeleteInstanceBulk(ctx, provider.InstanceFilter{Limit: 2})
	must(t, err, "DeleteInstanceBulk")
	if res.InstancesDeleted != 2 {
		t.Fatalf("DeleteInstanceBulk with limit 2, the index still listing the deleted %s: deleted %d instances, want 2", roots[0], res.InstancesDeleted)
	}
	if in.Stats().Faults[faults.KindLaggedQuery] == 0 {
		t.Fatal("no query was served from the lagging index: the test tests nothing")
	}
}

// TestKVReadsReadOnlyKVRows checks that KVValues reads the instance's KV
// rows and nothing else, and KVValue the key's row: an instance with
// a long queue of messages costs them what its KV store costs
// (docs/design.md §5).
func TestKVReadsReadOnlyKVRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _, scans := countingProvider(t, dynamotest.Config{ShortPoll: true})
	const inst, queued = "kv-reads", 300
	item := startAndFetch(ctx, t, p, inst)
	kv := func(id uint64, key, value string) provider.Event {
		return ev(id, inst, provider.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: 7})
	}
	// The execution's writes stay writes until a terminal ack folds them
	// into the store: two KV rows, one a key.
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst), kv(2, "a", "1"), kv(3, "b", "2")}, Metadata: meta()}), "ack setting a and b")
	for i := range queued {
		must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: fmt.Sprint(i)}, time.Hour), "enqueue")
	}

	scans.scanned.Store(0)
	scans.gets.Store(0)
	v, ok, err := p.KVValue(ctx, inst, "b")
	if err != nil || !ok || v != "2" {
		t.Fatalf("KVValue(b) = %q, %v, %v; want 2", v, ok, err)
	}
	if n, gets := scans.scanned.Load(), scans.gets.Load(); n != 0 || gets != 1 {
		t.Errorf("KVValue queried %d rows and made %d GetItem requests; want no Query and one GetItem, with %d messages queued", n, gets, queued)
	}
	scans.scanned.Store(0)
	all, err := p.KVValues(ctx, inst)
	if err != nil || len(all) != 2 || all["a"] != "1" || all["b"] != "2" {
		t.Fatalf("KVValues = %v, %v; want a=1 b=2", all, err)
	}
	if n := scans.scanned.Load(); n != 3 {
		t.Errorf("KVValues read %d rows; want the 2 KV rows and the lock row after them, with %d messages queued", n, queued)
	}
	if _, ok, err := p.KVValue(ctx, inst, "missing"); err != nil || ok {
		t.Errorf("KVValue(missing) = %v, %v; want not found", ok, err)
	}
	if v, ok, err := p.KVValue(ctx, "no-such-instance", "a"); err != nil || ok {
		t.Errorf("KVValue of an unknown instance = %q, %v, %v; want not found", v, ok, err)
	}
}

// TestKVValueCostDoesNotGrowWithTheStore: KVValue reads the key's row, one
// item that holds the stored value and the current execution's write, so
// it costs one read unit whether the store holds two keys or sixty of a KB
// each; KVValues, which reads them all, grows with them.
func TestKVValueCostDoesNotGrowWithTheStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Meter: meter})
	value := strings.Repeat("v", 1000)
	cost := func(inst string, keys int) (requests map[string]int, units float64) {
		t.Helper()
		item := startAndFetch(ctx, t, p, inst)
		delta := []provider.Event{started(inst)}
		for i := range keys {
			delta = append(delta, ev(uint64(2+i), inst, provider.KeyValueSet{Key: fmt.Sprintf("k%03d", i), Value: value, LastUpdatedAtMs: 7}))
		}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: meta()}), "ack setting the keys")
		meter.Reset()
		got, ok, err := p.KVValue(ctx, inst, "k001")
		if err != nil || !ok || got != value {
			t.Fatalf("KVValue(%s, k001) = %d bytes, %v, %v; want the value", inst, len(got), ok, err)
		}
		u := meter.Reset()
		return u.Requests, u.TotalCapacity()
	}
	smallReq, small := cost("kv-cost-small", 2)
	largeReq, large := cost("kv-cost-large", 60)
	for _, r := range []map[string]int{smallReq, largeReq} {
		if len(r) != 1 || r["GetItem"] != 1 {
			t.Errorf("KVValue made %v; want one GetItem", r)
		}
	}
	if small != 1 || large != 1 {
		t.Errorf("KVValue read %v units with 2 keys and %v with 60; want 1 (one item under 4 KB, read consistently)", small, large)
	}
	meter.Reset()
	all, err := p.KVValues(ctx, "kv-cost-large")
	if err != nil || len(all) != 60 {
		t.Fatalf("KVValues = %d keys, %v; want 60", len(all), err)
	}
	if u := meter.Reset(); u.TotalCapacity() <= large {
		t.Errorf("KVValues of 60 keys read %v units, KVValue %v: the comparison shows nothing", u.TotalCapacity(), large)
	}
}

// TestKVValueUnderThrottlingAndLostResponses: a throttled GetItem and one
// whose response was lost are sent again (reads are safe to resend),
// and KVValue returns the value.
func TestKVValueUnderThrottlingAndLostResponses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := faulty(t, 13)
	const inst = "kv-faults"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.KeyValueSet{Key: "a", Value: "1", LastUpdatedAtMs: 7})},
		Metadata:     meta()}), "ack setting a")
	in.Add(faults.Rule{Ops: []string{faults.OpGetItem}, Rate: 1, Count: 1, Fault: faults.Throttle("ProvisionedThroughputExceededException")})
	in.Add(faults.Rule{Ops: []string{faults.OpGetItem}, Rate: 1, Count: 1, Fault: faults.LostResponse()})
	before := in.Stats().Ops[faults.OpGetItem].Requests // the layout check's
	v, ok, err := p.KVValue(ctx, inst, "a")
	if err != nil || !ok || v != "1" {
		t.Fatalf("KVValue(a) = %q, %v, %v; want 1", v, ok, err)
	}
	st := in.Stats()
	if gets := st.Ops[faults.OpGetItem].Requests - before; st.Faults[faults.KindThrottle] != 1 || st.Faults[faults.KindLostResponse] != 1 || gets != 3 {
		t.Errorf("faults %v, %d GetItem requests; want a throttle and a lost response, then the read (3 requests)", st.Faults, gets)
	}
}

// TestConcurrentDeletesOfOneInstance: two force deletes of one running
// instance read it, then commit one after the other. The second meets
// the lock row the first removed; it reads again, finds nothing left,
// and succeeds. Before, it failed with ErrTreeChanged ("a child was
// created after tree traversal") though no turn had run.
func TestConcurrentDeletesOfOneInstance(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, in, p := faulty(t, 9)
	const id = "deleted-twice"
	item := startAndFetch(ctx, t, p, id)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(id)}, Metadata: meta()}), "first turn")

	// Both deletes read the instance, then wait at their commits.
	gate := faults.NewGate()
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 1, Count: 2, Fault: faults.Hold(gate)})
	type result struct {
		res provider.DeleteInstanceResult
		err error
	}
	done := make(chan result, 2)
	for range 2 {
		go func() {
			res, err := p.DeleteInstancesAtomic(ctx, []string{id}, true)
			done <- result{res, err}
		}()
	}
	must(t, gate.Wait(ctx, 2), "both deletes at their gate")
	gate.Release()
	var deleted uint64
	for range 2 {
		r := <-done
		if r.err != nil {
			t.Fatalf("a delete of an instance another delete removed: %v; want success", r.err)
		}
		deleted += r.res.InstancesDeleted
	}
	if deleted != 1 {
		t.Fatalf("the two deletes report %d instances deleted; want 1", deleted)
	}
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	if m.TotalInstances != 0 {
		t.Fatalf("SystemMetrics after the deletes: %+v; want no instance", m)
	}
}
