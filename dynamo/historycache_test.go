package dynamo_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// raiseAndFetch raises an event to instance through p and fetches the
// turn it makes with p.
func raiseAndFetch(ctx context.Context, t *testing.T, p *dynamo.Provider, instance, name string) *provider.OrchestrationItem {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: instance, Name: name, Data: "{}"}, 0), "raise "+name)
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "fetch after "+name)
	if item == nil || item.Instance != instance {
		t.Fatalf("fetch after %s: got %+v, want %s", name, item, instance)
	}
	return item
}

// ackEvent acks item's turn with one ExternalRaised event (next id after
// its history).
func ackEvent(ctx context.Context, t *testing.T, p *dynamo.Provider, item *provider.OrchestrationItem, name string) {
	t.Helper()
	id := uint64(len(item.History) + 1)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID:  item.ExecutionID,
		HistoryDelta: []provider.Event{ev(id, item.Instance, provider.ExternalEvent{Name: name, Data: "{}"})},
		Metadata:     meta(),
	}), "ack "+name)
}

// checkHistory compares a fetched history with the stored one.
func checkHistory(ctx context.Context, t *testing.T, p *dynamo.Provider, item *provider.OrchestrationItem, wantLen int) {
	t.Helper()
	stored, err := p.Read(ctx, item.Instance)
	must(t, err, "Read")
	if len(item.History) != wantLen || !reflect.DeepEqual(item.History, stored) {
		t.Fatalf("fetched history (%d events) differs from the stored one (%d events), want %d:\n%+v\n%+v", len(item.History), len(stored), wantLen, item.History, stored)
	}
}

// TestFetchAfterOwnAckReadsNoHistory: the fetch that follows this
// process's ack of an instance's previous turn takes the history that ack
// left from memory: one Query (the control rows) where it made two, and
// the same events as stored.
func TestFetchAfterOwnAckReadsNoHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Meter: meter})
	const inst = "cached-history"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	meter.Reset()
	second := raiseAndFetch(ctx, t, p, inst, "a")
	if q := meter.Usage().Requests["Query"]; q != 1 {
		t.Fatalf("the fetch after this process's ack made %d Queries; want 1 (the control rows)", q)
	}
	checkHistory(ctx, t, p, second, 1)
	ackEvent(ctx, t, p, second, "a")
	third := raiseAndFetch(ctx, t, p, inst, "b")
	checkHistory(ctx, t, p, third, 2)
}

// TestCachedHistorySeesOtherWriters: what another process writes to the
// history between two turns of this one (its own turn, an append) is in
// this process's next fetch.
func TestCachedHistorySeesOtherWriters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	const inst = "shared-history"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")

	// Another process runs the next turn.
	theirs := raiseAndFetch(ctx, t, other, inst, "theirs")
	ackEvent(ctx, t, other, theirs, "theirs")
	mine := raiseAndFetch(ctx, t, p, inst, "mine")
	checkHistory(ctx, t, p, mine, 2)
	ackEvent(ctx, t, p, mine, "mine")

	// Another process appends outside turns.
	must(t, other.AppendWithExecution(ctx, inst, 1, []provider.Event{ev(4, inst, provider.ExternalEvent{Name: "appended", Data: "{}"})}), "append")
	after := raiseAndFetch(ctx, t, p, inst, "after")
	checkHistory(ctx, t, p, after, 4)
}

// TestCachedHistoryAfterLargeTurn: a turn too large for one transaction
// (staged) leaves no cached history; the next fetch reads it.
func TestCachedHistoryAfterLargeTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "large-then-cached"
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, activities(inst, 120)), "large turn")
	next := raiseAndFetch(ctx, t, p, inst, "a")
	checkHistory(ctx, t, p, next, 121)
}

// TestFirstTurnReadsNoHistory: the fetch of a new instance's first turn
// (no instance record, no execution record, no history mark) reads the
// control rows and writes the lock, with no history Query: there is no
// history to read.
func TestFirstTurnReadsNoHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Meter: meter})
	const inst = "first-turn"
	must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")
	meter.Reset()
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil || item.Instance != inst || len(item.History) != 0 {
		t.Fatalf("FetchOrchestrationItem: %+v, want the first turn of %s with no history", item, inst)
	}
	if u := meter.Usage(); u.Requests["Query"] != 1 || u.Total() != 2 {
		t.Fatalf("the first turn's fetch made %v; want one Query (the control rows) and the lock write", u.Requests)
	}
}

// appendedHistory is a history of two events that AppendWithExecution
// stores for instance outside turns.
func appendedHistory(instance string) []provider.Event {
	return []provider.Event{started(instance), ev(2, instance, provider.ExternalEvent{Name: "appended", Data: "{}"})}
}

// checkAppended fails t unless item holds the two events of
// appendedHistory.
func checkAppended(t *testing.T, item *provider.OrchestrationItem) {
	t.Helper()
	if item == nil {
		t.Fatal("no turn fetched")
	}
	if len(item.History) != 2 || item.History[0].EventID != 1 || item.History[1].EventID != 2 || item.ExecutionID != 1 {
		t.Fatalf("fetched execution %d with history %+v, want the two appended events", item.ExecutionID, item.History)
	}
}

// TestHistoryAppendedBeforeTheFirstTurnIsFetched: an append to an
// instance that has no rows yet leaves a history mark (it creates the lock
// row for it), so the first fetch reads the appended history.
func TestHistoryAppendedBeforeTheFirstTurnIsFetched(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, _ := dynamotest.New(t, dynamotest.Config{})
	const inst = "appended-first"
	must(t, p.AppendWithExecution(ctx, inst, 1, appendedHistory(inst)), "AppendWithExecution")
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "next", Data: "{}"}, 0), "raise")
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	checkAppended(t, item)
}

// TestHistoryAppendedDuringAFirstFetchIsNotMissed: an append that lands
// after a first turn's fetch read the control rows (nothing there: no
// history to read) and before its lock write makes that write fail, and
// the fetch that follows reads the appended history.
func TestHistoryAppendedDuringAFirstFetchIsNotMissed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	in := faults.New(41)
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) { o.Client = in.DynamoDB(o.Client) }})
	other := env.NewProvider(t, dynamotest.Config{})
	const inst = "appended-during"
	must(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")

	gate := faults.NewGate()
	t.Cleanup(gate.Release)
	in.Add(faults.Rule{Ops: []string{faults.OpPutItem}, Match: isLockPut, Rate: 1, Count: 1, Fault: faults.Hold(gate)})
	type fetched struct {
		item *provider.OrchestrationItem
		err  error
	}
	first := make(chan fetched, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		first <- fetched{item, err}
	}()
	must(t, gate.Wait(ctx, 1), "the first fetch's lock write is held")
	must(t, other.AppendWithExecution(ctx, inst, 1, appendedHistory(inst)), "AppendWithExecution")
	gate.Release()

	got := <-first
	must(t, got.err, "the held fetch")
	if got.item == nil {
		got.item, got.err = p.FetchOrchestrationItem(ctx, longLock, 10*time.Second, nil)
		must(t, got.err, "the next fetch")
	}
	checkAppended(t, got.item)
}

// historyQueries records where each history Query of a provider starts
// (its range's lower key), through an injector rule that never fires.
type historyQueries struct {
	mu    sync.Mutex
	froms []string
}

func (h *historyQueries) rule() faults.Rule {
	return faults.Rule{Ops: []string{faults.OpQuery}, Rate: 1, Fault: faults.Throttle(""), Match: func(r faults.Request) bool {
		from, _ := r.Input.(*dynamodb.QueryInput).ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS)
		if from != nil && strings.HasPrefix(from.Value, keys.HistPrefix) {
			h.mu.Lock()
			h.froms = append(h.froms, from.Value)
			h.mu.Unlock()
		}
		return false
	}}
}

// take returns the starts recorded since the last take.
func (h *historyQueries) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	froms := h.froms
	h.froms = nil
	return froms
}

// sharedInstance makes two providers of one new table, as two processes:
// p, whose history Queries are recorded, and other. p runs instance's
// first two turns, so that its cache holds events 1 and 2.
func sharedInstance(t *testing.T, instance string) (p *dynamo.Provider, queries *historyQueries, other *dynamo.Provider, env *dynamotest.Env) {
	t.Helper()
	ctx := t.Context()
	env = dynamotest.NewEnv(t, false)
	in := faults.New(7)
	queries = &historyQueries{}
	in.Add(queries.rule())
	p = env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) { o.Client = in.DynamoDB(o.Client) }})
	other = env.NewProvider(t, dynamotest.Config{ShortPoll: true})
	first := startAndFetch(ctx, t, p, instance)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(instance)}, Metadata: meta()}), "first turn")
	ackEvent(ctx, t, p, raiseAndFetch(ctx, t, p, instance, "mine"), "mine")
	return p, queries, other, env
}

// TestFetchReadsOnlyTheHistoryAfterItsCache: when other processes ran an
// instance's turns since this process's ack, this process's next fetch
// reads only the rows those turns added, starting after the events it
// holds, and hands out the history as stored.
func TestFetchReadsOnlyTheHistoryAfterItsCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "history-after-cache"
	p, queries, other, _ := sharedInstance(t, inst)

	for round, foreign := range []int{1, 3} { // turns of the other process in between
		for i := range foreign {
			name := fmt.Sprintf("theirs-%d-%d", round, i)
			ackEvent(ctx, t, other, raiseAndFetch(ctx, t, other, inst, name), name)
		}
		stored, err := other.Read(ctx, inst)
		must(t, err, "Read")
		held := len(stored) - foreign // each of their turns added one event
		queries.take()
		item := raiseAndFetch(ctx, t, p, inst, fmt.Sprintf("mine-%d", round))
		want := keys.HistorySK(1, uint64(held+1))
		if got := queries.take(); len(got) != 1 || got[0] != want {
			t.Fatalf("round %d: the fetch's history Queries started at %q; want one, at %q (after the %d events this process held)", round, got, want, held)
		}
		checkHistory(ctx, t, p, item, len(stored))
		ackEvent(ctx, t, p, item, fmt.Sprintf("mine-%d", round))
	}
}

// TestFetchReadsTheWholeHistoryWhenItsCacheMayNotBeItsStart: a large turn
// of another process, or the instance deleted and started again, leaves
// the events this process holds no proof of being the history's start:
// its next fetch reads the whole history.
func TestFetchReadsTheWholeHistoryWhenItsCacheMayNotBeItsStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		other func(ctx context.Context, t *testing.T, other *dynamo.Provider, inst string)
	}{
		{"large turn", func(ctx context.Context, t *testing.T, other *dynamo.Provider, inst string) {
			theirs := raiseAndFetch(ctx, t, other, inst, "large")
			commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta()}
			for i := range 120 {
				id := uint64(len(theirs.History) + 1 + i)
				commit.HistoryDelta = append(commit.HistoryDelta, ev(id, inst, provider.ActivityScheduled{Name: "A", Input: fmt.Sprint(i)}))
				commit.WorkerItems = append(commit.WorkerItems, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: fmt.Sprint(i)})
			}
			must(t, other.AckOrchestrationItem(ctx, theirs.LockToken, commit), "large turn (120 activity rows: more than one transaction holds)")
		}},
		{"deleted and started again", func(ctx context.Context, t *testing.T, other *dynamo.Provider, inst string) {
			_, err := other.DeleteInstancesAtomic(ctx, []string{inst}, true)
			must(t, err, "DeleteInstancesAtomic")
			again := startAndFetch(ctx, t, other, inst)
			commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}
			for i := range 4 {
				commit.HistoryDelta = append(commit.HistoryDelta, ev(uint64(i+2), inst, provider.ExternalEvent{Name: fmt.Sprintf("again-%d", i), Data: "{}"}))
			}
			must(t, other.AckOrchestrationItem(ctx, again.LockToken, commit), "first turn again")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			const inst = "history-not-after-cache"
			p, queries, other, _ := sharedInstance(t, inst)
			c.other(ctx, t, other, inst)
			queries.take()
			item := raiseAndFetch(ctx, t, p, inst, "after")
			if got := queries.take(); len(got) == 0 || got[0] != keys.HistoryPrefix(1) {
				t.Fatalf("the fetch's history Queries started at %q; want the whole history first (%q)", got, keys.HistoryPrefix(1))
			}
			stored, err := p.Read(ctx, inst)
			must(t, err, "Read")
			checkHistory(ctx, t, p, item, len(stored))
		})
	}
}

// TestFetchReadsTheWholeHistoryWhenTheRowsAfterItsCacheFallShort: rows
// after the cached events that hold fewer events than the lock row says
// the last turn left (here another process's row is gone, as if a read
// raced its commit) are not used: the fetch reads the whole history
// instead, as any fetch that meets a short history does.
func TestFetchReadsTheWholeHistoryWhenTheRowsAfterItsCacheFallShort(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inst = "history-after-cache-short"
	p, queries, other, env := sharedInstance(t, inst)
	ackEvent(ctx, t, other, raiseAndFetch(ctx, t, other, inst, "theirs"), "theirs") // event 3
	_, err := env.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &env.Table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: keys.InstancePK(inst)},
		"sk": &types.AttributeValueMemberS{Value: keys.HistorySK(1, 3)},
	}})
	must(t, err, "DeleteItem")
	queries.take()
	item := raiseAndFetch(ctx, t, p, inst, "after")
	got := queries.take()
	if len(got) < 2 || got[0] != keys.HistorySK(1, 3) || got[1] != keys.HistoryPrefix(1) {
		t.Fatalf("the fetch's history Queries started at %q; want the rows after its cache (%q), then the whole history (%q)", got, keys.HistorySK(1, 3), keys.HistoryPrefix(1))
	}
	checkHistory(ctx, t, p, item, 2)
}
