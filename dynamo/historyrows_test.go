package dynamo_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// historyRowEvents returns how many events each history row of instance's
// execution 1 holds, in key order.
func historyRowEvents(t *testing.T, env *dynamotest.Env, instance string) []int {
	t.Helper()
	var counts []int
	for _, row := range rowsWithPrefix(t.Context(), t, env, instance, keys.HistoryPrefix(1)) {
		switch events := row["evs"].(type) {
		case *types.AttributeValueMemberL:
			if n, _ := row["nev"].(*types.AttributeValueMemberN); n == nil || n.Value != strconv.Itoa(len(events.Value)) {
				t.Fatalf("row %v holds %d events and counts %v", row["sk"], len(events.Value), row["nev"])
			}
			counts = append(counts, len(events.Value))
		case *types.AttributeValueMemberB: // compressed, counted by nev
			n, _ := row["nev"].(*types.AttributeValueMemberN)
			if n == nil {
				t.Fatalf("compressed row %v has no event count", row["sk"])
			}
			count, err := strconv.Atoi(n.Value)
			if err != nil || count < 2 {
				t.Fatalf("compressed row %v counts %v events", row["sk"], row["nev"])
			}
			counts = append(counts, count)
		default:
			if _, ok := row["ev"]; !ok {
				t.Fatalf("history row %v holds no event", row["sk"])
			}
			counts = append(counts, 1)
		}
	}
	return counts
}

// TestTurnEventsShareHistoryRows: a turn's events with consecutive ids go
// into one history row, up to 32 KB a row, and every reader sees each of
// them: the history, the counts of ExecutionInfo, InstanceStats and
// SystemMetrics.
func TestTurnEventsShareHistoryRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Uncompressed, so that the rows' sizes can be checked here; packing
	// goes by uncompressed sizes either way (payload_internal_test.go).
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) { o.DisablePayloadCompression = true }})

	const small = "packed-small"
	item := startAndFetch(ctx, t, p, small)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(small, 5)), "ack")
	if got := historyRowEvents(t, env, small); !reflect.DeepEqual(got, []int{6}) {
		t.Fatalf("a turn of 6 small events wrote rows of %v events, want one row of 6", got)
	}

	// 40 events of about 2 KB: 32 KB rows of 15 (each event's JSON plus
	// a byte, under the row's keys).
	const large = "packed-large"
	item = startAndFetch(ctx, t, p, large)
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(large)}, Metadata: meta()}
	for id := uint64(2); id <= 40; id++ {
		commit.HistoryDelta = append(commit.HistoryDelta, ev(id, large, provider.ActivityScheduled{Name: "A", Input: strings.Repeat("x", 2000)}))
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack of 40 events")
	rows := rowsWithPrefix(ctx, t, env, large, keys.HistoryPrefix(1))
	total := 0
	for _, row := range rows {
		events, _ := row["evs"].(*types.AttributeValueMemberL)
		size := 0
		if events != nil {
			for _, e := range events.Value {
				size += len(e.(*types.AttributeValueMemberS).Value)
			}
			total += len(events.Value)
		} else {
			total++
		}
		if size > 32*1024 {
			t.Errorf("row %v holds %d bytes of events, more than 32 KB", row["sk"], size)
		}
	}
	if len(rows) != 3 || total != 40 {
		t.Fatalf("40 events of 2 KB in %d rows holding %d events; want 3 rows holding 40", len(rows), total)
	}

	history, err := p.Read(ctx, large)
	must(t, err, "Read")
	if len(history) != 40 {
		t.Fatalf("Read returned %d events, want 40", len(history))
	}
	for i, e := range history {
		if e.EventID != uint64(i+1) || !reflect.DeepEqual(e.Kind, commit.HistoryDelta[i].Kind) {
			t.Fatalf("event %d is %d %T, want %d as written", i, e.EventID, e.Kind, i+1)
		}
	}
	info, err := p.ExecutionInfo(ctx, large, 1)
	must(t, err, "ExecutionInfo")
	stats, err := p.InstanceStats(ctx, large)
	must(t, err, "InstanceStats")
	metrics, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	if info.EventCount != 40 || stats.HistoryEventCount != 40 || metrics.TotalEvents != 46 {
		t.Fatalf("ExecutionInfo counts %d events, InstanceStats %d, SystemMetrics %d; want 40, 40 and 46 (both instances)",
			info.EventCount, stats.HistoryEventCount, metrics.TotalEvents)
	}
}

// TestEventsApartInIDsTakeRowsOfTheirOwn: a row holds consecutive ids
// only, so that its key and its count say which ids it holds.
func TestEventsApartInIDsTakeRowsOfTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "packed-gaps"
	var events []provider.Event
	for _, id := range []uint64{1, 2, 3, 5, 6, 9} {
		events = append(events, ev(id, inst, provider.TimerCreated{FireAtMs: id}))
	}
	must(t, p.AppendWithExecution(ctx, inst, 1, events), "append")
	if got := historyRowEvents(t, env, inst); !reflect.DeepEqual(got, []int{3, 2, 1}) {
		t.Fatalf("ids 1-3, 5-6, 9 were stored in rows of %v events, want [3 2 1]", got)
	}
	history, err := p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution")
	if len(history) != len(events) {
		t.Fatalf("read %d events, want %d", len(history), len(events))
	}
}

// TestEventInsideAHistoryRowIsNotStoredTwice: an event whose id a row holds
// under another event's key is a duplicate, to a turn (one transaction or
// a large turn) and to an append, and nothing of the rejected write is
// stored; an append of the same events again passes them over.
func TestEventInsideAHistoryRowIsNotStoredTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "packed-duplicate"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 3)), "first turn") // events 1-4, one row
	if got := historyRowEvents(t, env, inst); !reflect.DeepEqual(got, []int{4}) {
		t.Fatalf("the first turn wrote rows of %v events, want one of 4", got)
	}

	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "1"}, 0), "enqueue")
	next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || next == nil {
		t.Fatalf("second fetch: %v, %v", next, err)
	}
	repeat := ev(3, inst, provider.ExternalEvent{Name: "e", Data: "1"})
	err = p.AckOrchestrationItem(ctx, next.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{repeat}, Metadata: meta()})
	if !errors.Is(err, provider.ErrDuplicateEvent) {
		t.Fatalf("ack repeating event 3 (inside the row of event 1): %v, want ErrDuplicateEvent", err)
	}
	// A large turn (more writes than one transaction holds) repeating it.
	large := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{repeat}, Metadata: meta()}
	for i := range 120 {
		large.WorkerItems = append(large.WorkerItems, provider.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: uint64(100 + i), Name: "A", Input: "x"})
	}
	err = p.AckOrchestrationItem(ctx, next.LockToken, large)
	if !errors.Is(err, provider.ErrDuplicateEvent) {
		t.Fatalf("large-turn ack repeating event 3: %v, want ErrDuplicateEvent", err)
	}

	stored := []provider.Event{ev(2, inst, provider.ActivityScheduled{Name: "A", Input: "imposter"})}
	if err := p.AppendWithExecution(ctx, inst, 1, stored); !errors.Is(err, provider.ErrDuplicateEvent) {
		t.Fatalf("append of another event 2: %v, want ErrDuplicateEvent", err)
	}
	history, err := p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution")
	if len(history) != 4 {
		t.Fatalf("after the rejected writes the history holds %d events, want 4", len(history))
	}
	// The same events again (a retried append) are passed over; new ones
	// after them are stored.
	again := append(history[1:], ev(5, inst, provider.TimerCreated{FireAtMs: 5}))
	must(t, p.AppendWithExecution(ctx, inst, 1, again), "append of stored events and a new one")
	history, err = p.ReadWithExecution(ctx, inst, 1)
	must(t, err, "ReadWithExecution")
	if len(history) != 5 || history[4].EventID != 5 {
		t.Fatalf("after the append: %d events, want 5 ending with event 5", len(history))
	}
}
