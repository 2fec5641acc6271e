package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// tornQueries shows rows as they were before a transaction to the next
// Query of their partition, as a Query that runs while the transaction
// commits can on AWS: a Query is read-committed across items, so it may
// see some of a transaction's writes and not others. DynamoDB Local
// applies a transaction at once and never shows this.
type tornQueries struct {
	dynamo.API
	mu    sync.Mutex
	stale map[string][]map[string]types.AttributeValue // by pk
}

// showNext makes the next Query of row's partition whose range holds row
// return it in place of the row the table holds, or of its absence.
func (c *tornQueries) showNext(row map[string]types.AttributeValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pk := row["pk"].(*types.AttributeValueMemberS).Value
	if c.stale == nil {
		c.stale = map[string][]map[string]types.AttributeValue{}
	}
	c.stale[pk] = append(c.stale[pk], row)
}

// hideNext makes the next Query of partition pk whose range holds sort
// key sk return no row there, as if the row were not written yet.
func (c *tornQueries) hideNext(pk, sk string) {
	c.showNext(map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
		hiddenRow: &types.AttributeValueMemberBOOL{Value: true},
	})
}

// hiddenRow marks a row showNext is given that hides the table's row.
const hiddenRow = "hidden by the test"

func (c *tornQueries) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.API.Query(ctx, in, optFns...)
	if err != nil || in.IndexName != nil || in.ExclusiveStartKey != nil {
		return out, err
	}
	pk, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS)
	from, okFrom := in.ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS)
	to, okTo := in.ExpressionAttributeValues[":to"].(*types.AttributeValueMemberS)
	if !ok || !okFrom || !okTo {
		return out, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stale[pk.Value]) == 0 {
		return out, err
	}
	var kept []map[string]types.AttributeValue
	for _, row := range c.stale[pk.Value] {
		sk := row["sk"].(*types.AttributeValueMemberS).Value
		if sk < from.Value || sk > to.Value {
			kept = append(kept, row)
			continue
		}
		out.Items = slices.DeleteFunc(out.Items, func(r map[string]types.AttributeValue) bool {
			return r["sk"].(*types.AttributeValueMemberS).Value == sk
		})
		if _, hidden := row[hiddenRow]; !hidden {
			out.Items = append(out.Items, row)
		}
	}
	c.stale[pk.Value] = kept
	slices.SortFunc(out.Items, func(a, b map[string]types.AttributeValue) int {
		return strings.Compare(a["sk"].(*types.AttributeValueMemberS).Value, b["sk"].(*types.AttributeValueMemberS).Value)
	})
	return out, err
}

// rowsWithPrefix reads instance's rows whose sort key starts with prefix
// from the table.
func rowsWithPrefix(ctx context.Context, t *testing.T, env *dynamotest.Env, instance, prefix string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(env.Table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":     &types.AttributeValueMemberS{Value: keys.InstancePK(instance)},
			":prefix": &types.AttributeValueMemberS{Value: prefix},
		},
		ConsistentRead: aws.Bool(true),
	})
	must(t, err, "read rows "+prefix)
	return out.Items
}

// tornProvider is a provider on a fresh table whose Queries go through a
// tornQueries.
func tornProvider(t *testing.T) (*dynamo.Provider, *dynamotest.Env, *tornQueries) {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	p, torn := tornOn(t, env)
	return p, env, torn
}

// tornPair is two providers on a fresh table env, as two processes: p,
// and other, whose Queries go through torn.
func tornPair(t *testing.T) (env *dynamotest.Env, p, other *dynamo.Provider, torn *tornQueries) {
	t.Helper()
	env = dynamotest.NewEnv(t, false)
	other, torn = tornOn(t, env)
	return env, env.NewProvider(t, dynamotest.Config{ShortPoll: true}), other, torn
}

// tornOn is a provider on env whose Queries go through a tornQueries.
func tornOn(t *testing.T, env *dynamotest.Env) (*dynamo.Provider, *tornQueries) {
	t.Helper()
	torn := &tornQueries{}
	return env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		torn.API = o.Client
		o.Client = torn
	}}), torn
}

// raisedData returns the data of the ExternalRaised messages of item.
func raisedData(item *provider.OrchestrationItem) []string {
	var data []string
	for _, m := range item.Messages {
		if e, ok := m.(provider.ExternalRaisedItem); ok {
			data = append(data, e.Data)
		}
	}
	return data
}

// TestConsumedMessageInATornReadIsNotConsumedTwice: a fetch whose Query
// ran while the previous turn committed can see that turn's lock release
// and still see a message the turn consumed. The turn that takes it again
// must not commit, whether it fits one transaction or is a large turn: its
// ack fails as a lost lock, releases the instance, and the message is in no
// later batch, so an event is delivered once.
func TestConsumedMessageInATornReadIsNotConsumedTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// activities scheduled by the third turn: 120 make it a large turn.
		activities int
	}{{"one transaction", 0}, {"large turn", 120}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tornReadTurn(t, tc.activities)
		})
	}
}

func tornReadTurn(t *testing.T, activities int) {
	ctx := t.Context()
	p, env, torn := tornProvider(t)
	const inst = "torn-read"
	// thirdTurn delivers data as events from event 3 on, then schedules
	// the activities.
	thirdTurn := func(data ...string) provider.TurnCommit {
		commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta()}
		id := uint64(3)
		for _, d := range data {
			commit.HistoryDelta = append(commit.HistoryDelta, ev(id, inst, provider.ExternalEvent{Name: "e", Data: d}))
			id++
		}
		for i := range activities {
			commit.HistoryDelta = append(commit.HistoryDelta, ev(id, inst, provider.ActivityScheduled{Name: "A", Input: fmt.Sprint(i)}))
			commit.WorkerItems = append(commit.WorkerItems, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: fmt.Sprint(i)})
			id++
		}
		return commit
	}

	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first ack")

	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "once"}, 0), "raise once")
	rows := rowsWithPrefix(ctx, t, env, inst, keys.QueuePrefix)
	if len(rows) != 1 {
		t.Fatalf("%d message rows, want 1", len(rows))
	}
	second, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "second fetch")
	if got := raisedData(second); !slices.Equal(got, []string{"once"}) {
		t.Fatalf("second turn's events %v, want [once]", got)
	}
	must(t, p.AckOrchestrationItem(ctx, second.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(2, inst, provider.ExternalEvent{Name: "e", Data: "once"})}, Metadata: meta()}), "second ack")

	// The next fetch's Query sees the second turn's release but not its
	// delete of the message.
	torn.showNext(rows[0])
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "next"}, 0), "raise next")
	third, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "third fetch")
	if third == nil {
		t.Fatal("third fetch found nothing")
	}
	if got := raisedData(third); slices.Contains(got, "once") {
		err := p.AckOrchestrationItem(ctx, third.LockToken, thirdTurn(got...))
		if err == nil {
			t.Fatalf("the ack of a batch %v holding a message an earlier turn consumed succeeded: the event was delivered twice", got)
		}
		if !errors.Is(err, provider.ErrInvalidLockToken) {
			t.Fatalf("ack of a batch holding a consumed message: %v, want an error wrapping ErrInvalidLockToken", err)
		}
		// The instance is released at once, without a lease to wait out.
		if third, err = p.FetchOrchestrationItem(ctx, longLock, 0, nil); err != nil || third == nil {
			t.Fatalf("fetch after the refused ack: %v, %v; want the instance again", third, err)
		}
		if third.AttemptCount != 1 {
			t.Errorf("attempt count %d after the refused ack, want 1: the turn was not the messages' fault", third.AttemptCount)
		}
	}
	if got := raisedData(third); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("third turn's events %v, want [next]", got)
	}
	must(t, p.AckOrchestrationItem(ctx, third.LockToken, thirdTurn("next")), "third ack")
	history, err := p.Read(ctx, inst)
	must(t, err, "Read")
	if want := 3 + activities; len(history) != want {
		t.Fatalf("history holds %d events, want %d", len(history), want)
	}
}

// TestInstanceRecordInATornReadIsNotWrittenBack: a fetch whose Query ran
// while the previous turn committed can see that turn's lock release and
// the instance record as it was before the turn. A turn planned on it must
// not write the record back: here it would give a new custom status the
// version the previous one has, and a client that saw that version would
// never see the new status.
func TestInstanceRecordInATornReadIsNotWrittenBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		activities int
	}{{"one transaction", 0}, {"large turn", 120}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p, env, torn := tornProvider(t)
			const inst = "torn-meta"
			status := func(id uint64, s string) provider.Event {
				return ev(id, inst, provider.CustomStatusUpdated{Status: &s})
			}
			first := startAndFetch(ctx, t, p, inst)
			must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
				HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first ack")
			before := instanceRow(ctx, t, env, inst, keys.Meta)

			second := raiseAndFetch(ctx, t, p, inst, "a")
			must(t, p.AckOrchestrationItem(ctx, second.LockToken, provider.TurnCommit{ExecutionID: 1,
				HistoryDelta: []provider.Event{ev(2, inst, provider.ExternalEvent{Name: "e", Data: "a"}), status(3, "a")}, Metadata: meta()}), "second ack")
			seen, err := p.CustomStatus(ctx, inst, 0)
			if err != nil || seen == nil || *seen.Status != "a" {
				t.Fatalf("CustomStatus after the second turn: %+v, %v; want a", seen, err)
			}

			// The next fetch's Query sees the record as it was before the
			// second turn.
			torn.showNext(before)
			third := raiseAndFetch(ctx, t, p, inst, "b")
			thirdTurn := func() provider.TurnCommit {
				commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
					HistoryDelta: []provider.Event{ev(4, inst, provider.ExternalEvent{Name: "e", Data: "b"}), status(5, "b")}}
				for i := range tc.activities {
					id := uint64(6 + i)
					commit.HistoryDelta = append(commit.HistoryDelta, ev(id, inst, provider.ActivityScheduled{Name: "A", Input: fmt.Sprint(i)}))
					commit.WorkerItems = append(commit.WorkerItems, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: fmt.Sprint(i)})
				}
				return commit
			}
			if err := p.AckOrchestrationItem(ctx, third.LockToken, thirdTurn()); err != nil {
				if !errors.Is(err, provider.ErrInvalidLockToken) {
					t.Fatalf("ack of a turn planned on an old instance record: %v, want an error wrapping ErrInvalidLockToken", err)
				}
				// Released at once: fetched again, on the record as it is.
				again, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
				if err != nil || again == nil {
					t.Fatalf("fetch after the refused ack: %v, %v; want the instance again", again, err)
				}
				must(t, p.AckOrchestrationItem(ctx, again.LockToken, thirdTurn()), "third ack, again")
			}
			next, err := p.CustomStatus(ctx, inst, seen.Version)
			if err != nil || next == nil || *next.Status != "b" {
				t.Fatalf("CustomStatus after version %d: %+v, %v; want b with a later version", seen.Version, next, err)
			}
		})
	}
}

// TestKVRowsInATornReadAreReadAgain: a turn that ends the execution folds
// the delta into the store from the KV rows its process knows; a process
// that does not know them (it ran no turn of the instance) reads them
// under the lock, and a Query that runs while the previous turn's
// transaction is still making its rows visible can see a row as it was
// before that turn. Planned on the old row, the turn would store the key's
// older value. The lock row's digest of the KV state shows the read was
// torn, and the rows are read again.
func TestKVRowsInATornReadAreReadAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, p, other, torn := tornPair(t)
	const inst = "torn-kv"
	set := func(id uint64, value string) provider.Event {
		return ev(id, inst, provider.KeyValueSet{Key: "k", Value: value, LastUpdatedAtMs: id})
	}
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst), set(2, "v1")}, Metadata: meta()}), "first ack")
	before := rowsWithPrefix(ctx, t, env, inst, keys.KVRowsPrefix)
	if len(before) != 1 {
		t.Fatalf("%d KV rows, want 1", len(before))
	}
	second := raiseAndFetch(ctx, t, p, inst, "a")
	must(t, p.AckOrchestrationItem(ctx, second.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(3, inst, provider.ExternalEvent{Name: "e", Data: "a"}), set(4, "v2")}, Metadata: meta()}), "second ack")

	// The other process's read of the KV rows sees the key as it was
	// before the second turn.
	torn.showNext(before[0])
	third := raiseAndFetch(ctx, t, other, inst, "b")
	done := meta()
	done.Status, done.Output = provider.StatusCompleted, ptr("done")
	must(t, other.AckOrchestrationItem(ctx, third.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(5, inst, provider.ExternalEvent{Name: "e", Data: "b"}),
			ev(6, inst, provider.OrchestrationCompleted{Output: "done"})}, Metadata: done}), "third ack")
	if v, ok, err := p.KVValue(ctx, inst, "k"); err != nil || !ok || v != "v2" {
		t.Fatalf("KVValue(k) = %q, %v, %v; want v2, which the second turn set", v, ok, err)
	}
}

// TestKVRowsEditedOutsideTurnsDoNotStopTheInstance: KV rows changed by
// hand never match the digest the last turn recorded. A process that reads
// them (to plan a turn that writes KV) reads them a few times, then plans
// the turn on them, and the turn's ack records their digest, so that the
// next process to read them reads them once.
func TestKVRowsEditedOutsideTurnsDoNotStopTheInstance(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env, _ := countingProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "edited-kv"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.KeyValueSet{Key: "k", Value: "v1", LastUpdatedAtMs: 2})}, Metadata: meta()}), "first ack")
	row := rowsWithPrefix(ctx, t, env, inst, keys.KVRowsPrefix)[0]
	row["dval"] = &types.AttributeValueMemberS{Value: "by hand"} // the execution's write of k
	_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: row})
	must(t, err, "edit the KV row")

	for turn, data := range []string{"a", "b"} {
		// A process of its own for each turn: none knows the rows.
		scans := &scanCounter{}
		q := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
			scans.API = o.Client
			o.Client = scans
		}})
		must(t, q.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: data}, 0), "raise")
		item, err := q.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil || item == nil {
			t.Fatalf("turn %d: fetch: %v, %v; want the instance", turn, item, err)
		}
		before := scans.queries.Load()
		key := fmt.Sprintf("k%d", turn)
		must(t, q.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1,
			HistoryDelta: []provider.Event{ev(uint64(3+2*turn), inst, provider.ExternalEvent{Name: "e", Data: data}),
				ev(uint64(4+2*turn), inst, provider.KeyValueSet{Key: key, Value: data, LastUpdatedAtMs: 9})}, Metadata: meta()}), "ack")
		reads := scans.queries.Load() - before
		switch {
		case turn == 0 && reads < 2:
			t.Errorf("turn %d: the ack made %d Queries; want the rows read again", turn, reads)
		case turn == 1 && reads != 1:
			t.Errorf("turn %d: the ack made %d Queries; want 1, the last ack having recorded the rows' digest", turn, reads)
		}
	}
	if v, _, err := p.KVValue(ctx, inst, "k"); err != nil || v != "by hand" {
		t.Errorf("KVValue(k) = %q, %v; want the value edited in", v, err)
	}
	if all, err := p.KVValues(ctx, inst); err != nil || len(all) != 3 || all["k0"] != "a" || all["k1"] != "b" {
		t.Errorf("KVValues = %v, %v; want k, k0 and k1", all, err)
	}
}

// TestHistoryInATornReadIsReadAgain: a fetch reads the history after it
// has locked the instance, but a Query that runs while the previous turn's
// transaction is still making its rows visible can miss the newest
// events. A turn replayed on the shorter history would write event ids
// that exist, which fails the orchestration with a duplicate event. The
// lock row records where the last turn left the history, and the fetch of
// another process (which has no cached history) reads it again.
func TestHistoryInATornReadIsReadAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, p, other, torn := tornPair(t)
	const inst = "torn-history"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first ack")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "a"}, 0), "raise a")
	second, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || second == nil {
		t.Fatalf("second fetch: %v, %v", second, err)
	}
	must(t, p.AckOrchestrationItem(ctx, second.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(2, inst, provider.ExternalEvent{Name: "e", Data: "a"}), ev(3, inst, provider.TimerCreated{FireAtMs: 1})}, Metadata: meta()}), "second ack")

	// The other process's history Query misses the second turn's last
	// event.
	torn.hideNext(keys.InstancePK(inst), keys.HistorySK(1, 3))
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "b"}, 0), "raise b")
	third, err := other.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || third == nil {
		t.Fatalf("third fetch: %v, %v", third, err)
	}
	if n := len(third.History); n != 3 {
		t.Fatalf("the third turn's history holds %d events, want 3", n)
	}
	must(t, other.AckOrchestrationItem(ctx, third.LockToken, provider.TurnCommit{ExecutionID: 1,
		HistoryDelta: []provider.Event{ev(4, inst, provider.ExternalEvent{Name: "e", Data: "b"})}, Metadata: meta()}), "third ack")
}
