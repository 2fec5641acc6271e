package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// completedBy is e with source event id source.
func completedBy(e provider.Event, source uint64) provider.Event {
	e.SourceEventID = &source
	return e
}

// storedForm reports how attribute name of row is stored: "string",
// "compressed" (binary) or "absent".
func storedForm(row map[string]types.AttributeValue, name string) string {
	switch row[name].(type) {
	case *types.AttributeValueMemberS:
		return "string"
	case *types.AttributeValueMemberB:
		return "compressed"
	case nil:
		return "absent"
	default:
		return "other"
	}
}

// historyForm is how the events of instance's history rows are stored, one
// storedForm per row.
func historyForm(t *testing.T, env *dynamotest.Env, instance string) []string {
	t.Helper()
	var forms []string
	for _, row := range rowsWithPrefix(t.Context(), t, env, instance, keys.HistoryPrefix(1)) {
		form := storedForm(row, "ev")
		if form == "absent" {
			form = storedForm(row, "evs")
			if _, ok := row["evs"].(*types.AttributeValueMemberL); ok {
				form = "string"
			}
		}
		forms = append(forms, form)
	}
	return forms
}

// chainStep runs a turn of instance that schedules activity id with input,
// the activity (which returns output) and the fetch of the next turn, and
// checks that every payload comes back as it went in. It returns the next
// turn, locked, and the raw rows of the activity and of the completion
// message as stored before each was consumed.
func chainStep(ctx context.Context, t *testing.T, p provider.Provider, env *dynamotest.Env, turn *provider.OrchestrationItem, history []provider.Event, id uint64, input, output string) (next *provider.OrchestrationItem, activity, messageRow map[string]types.AttributeValue) {
	t.Helper()
	inst := turn.Instance
	scheduled := ev(id, inst, provider.ActivityScheduled{Name: "A", Input: input})
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: append(history, scheduled), Metadata: meta(),
		WorkerItems: []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: input}}}
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, commit), "ack the turn")

	activity, _ = activityRow(ctx, t, env, inst, id)

	work, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if work == nil || work.Item.ID != id || work.Item.Input != input {
		t.Fatalf("FetchWorkItem returned %+v, want activity %d with its %d-byte input", work, id, len(input))
	}
	must(t, p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: output}), "AckWorkItem")
	msgs := rowsWithPrefix(ctx, t, env, inst, keys.QueuePrefix)
	if len(msgs) != 1 {
		t.Fatalf("%d queued messages after the activity, want its completion", len(msgs))
	}
	messageRow = msgs[0]

	next, err = p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if next == nil || len(next.Messages) != 1 {
		t.Fatalf("FetchOrchestrationItem returned %+v, want the completion", next)
	}
	if c, ok := next.Messages[0].(provider.ActivityCompletedItem); !ok || c.Result != output {
		t.Fatalf("the completion came back as %T, not with its %d-byte result", next.Messages[0], len(output))
	}
	last := next.History[len(next.History)-1]
	if s, ok := last.Kind.(provider.ActivityScheduled); !ok || s.Input != input {
		t.Fatalf("the history ends with %T, not the activity scheduled with its input", last.Kind)
	}
	return next, activity, messageRow
}

// TestLargePayloadsAreStoredCompressed: a payload of 512 bytes or more that
// compresses is stored compressed in the activity row, the completion
// message and the history rows, and every reader returns it as written;
// small payloads stay strings.
func TestLargePayloadsAreStoredCompressed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst = "payload-compressed"
	input, output := dynamo.HexPayload(1, 2048), dynamo.HexPayload(2, 2048)

	turn := startAndFetch(ctx, t, p, inst)
	turn, activity, message := chainStep(ctx, t, p, env, turn, []provider.Event{started(inst)}, 2, input, output)
	if got := storedForm(activity, "item"); got != "compressed" {
		t.Errorf("the activity row with a 2 KB input stores its item as %s, want compressed", got)
	}
	if got := storedForm(message, "item"); got != "compressed" {
		t.Errorf("the completion with a 2 KB result stores its item as %s, want compressed", got)
	}
	if b, ok := activity["item"].(*types.AttributeValueMemberB); ok && len(b.Value) > 1500 {
		t.Errorf("a 2 KB input of hex digits compressed to %d bytes; want about half", len(b.Value))
	}
	completed := completedBy(ev(3, inst, provider.ActivityCompleted{Result: output}), 2)
	turn, activity, message = chainStep(ctx, t, p, env, turn, []provider.Event{completed}, 4, "small", "small")
	if a, m := storedForm(activity, "item"), storedForm(message, "item"); a != "string" || m != "string" {
		t.Errorf("a small activity and its completion store their items as %s and %s, want strings", a, m)
	}
	must(t, p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completedBy(ev(5, inst, provider.ActivityCompleted{Result: "small"}), 4)}}), "ack the last turn")

	// Rows: events 1-2 (the start and the 2 KB schedule), 3-4 (the 2 KB
	// result and a small schedule), 5 (small).
	if got, want := historyForm(t, env, inst), []string{"compressed", "compressed", "string"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("history rows stored as %v, want %v", got, want)
	}
	history, err := p.Read(ctx, inst)
	must(t, err, "Read")
	if len(history) != 5 {
		t.Fatalf("Read returned %d events, want 5", len(history))
	}
	if s, ok := history[1].Kind.(provider.ActivityScheduled); !ok || s.Input != input {
		t.Errorf("Read: event 2 is %T without its input", history[1].Kind)
	}
	if c, ok := history[2].Kind.(provider.ActivityCompleted); !ok || c.Result != output {
		t.Errorf("Read: event 3 is %T without its result", history[2].Kind)
	}
}

// TestUncompressedAndCompressedPayloadsShareATable: with
// DisablePayloadCompression a provider stores every payload as a string,
// and a provider that compresses reads what it wrote, and the other way
// round, so the option can change while processes share the table.
func TestUncompressedAndCompressedPayloadsShareATable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, false)
	plain := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Shards: 1, Options: func(o *dynamo.Options) { o.DisablePayloadCompression = true }})
	compressing := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	const inst = "payload-mixed"
	input, output := dynamo.HexPayload(3, 2048), dynamo.HexPayload(4, 2048)

	// plain writes the activity and its completion; compressing reads them.
	turn := startAndFetch(ctx, t, plain, inst)
	scheduled := ev(2, inst, provider.ActivityScheduled{Name: "A", Input: input})
	must(t, plain.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{started(inst), scheduled},
		WorkerItems:  []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: input}}}), "plain ack")
	if got := historyForm(t, env, inst); strings.Join(got, ",") != "string" {
		t.Errorf("with compression disabled, history rows stored as %v", got)
	}
	work, err := compressing.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if work == nil || work.Item.Input != input {
		t.Fatalf("a compressing provider fetched %+v, not the plain activity", work)
	}
	must(t, plain.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: output}), "plain AckWorkItem")
	msgs := rowsWithPrefix(ctx, t, env, inst, keys.QueuePrefix)
	if len(msgs) != 1 || storedForm(msgs[0], "item") != "string" {
		t.Fatalf("with compression disabled, the completion is stored as %v", msgs)
	}
	turn, err = compressing.FetchOrchestrationItem(ctx, longLock, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if turn == nil || len(turn.History) != 2 || len(turn.Messages) != 1 {
		t.Fatalf("a compressing provider fetched %+v, not the plain turn", turn)
	}
	if c, ok := turn.Messages[0].(provider.ActivityCompletedItem); !ok || c.Result != output {
		t.Fatalf("the plain completion reads as %T without its result", turn.Messages[0])
	}

	// compressing writes the next step; plain reads it.
	completed := completedBy(ev(3, inst, provider.ActivityCompleted{Result: output}), 2)
	scheduled = ev(4, inst, provider.ActivityScheduled{Name: "A", Input: input})
	must(t, compressing.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{ExecutionID: 1, Metadata: meta(),
		HistoryDelta: []provider.Event{completed, scheduled},
		WorkerItems:  []provider.ActivityExecuteItem{{Instance: inst, ExecutionID: 1, ID: 4, Name: "A", Input: input}}}), "compressing ack")
	if got := historyForm(t, env, inst); strings.Join(got, ",") != "string,compressed" {
		t.Errorf("history rows stored as %v, want a plain row, then a compressed one", got)
	}
	work, err = plain.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag())
	must(t, err, "FetchWorkItem")
	if work == nil || work.Item.ID != 4 || work.Item.Input != input {
		t.Fatalf("a provider that does not compress fetched %+v, not the compressed activity", work)
	}
	history, err := plain.Read(ctx, inst)
	must(t, err, "Read")
	if len(history) != 4 {
		t.Fatalf("Read returned %d events, want 4", len(history))
	}
	if c, ok := history[2].Kind.(provider.ActivityCompleted); !ok || c.Result != output {
		t.Errorf("Read: event 3 is %T without its result", history[2].Kind)
	}
}

// TestItemLimitAppliesToUncompressedPayloads: what fits is decided by a
// payload's uncompressed size, so that a 400 KB input is refused however
// well it compresses, and nothing is written.
func TestItemLimitAppliesToUncompressedPayloads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Shards: 1})
	huge := strings.Repeat("a", dynamo.MaxItemBytes)

	err := p.EnqueueForWorker(ctx, provider.ActivityExecuteItem{Instance: "limit", ExecutionID: 1, ID: 1, Name: "A", Input: huge})
	if !errors.Is(err, provider.ErrInvalidInput) {
		t.Fatalf("EnqueueForWorker of a %d-byte input returned %v, want ErrInvalidInput", len(huge), err)
	}
	start := startItem("limit")
	start.Input = huge
	if err := p.EnqueueForOrchestrator(ctx, start, 0); !errors.Is(err, provider.ErrInvalidInput) {
		t.Fatalf("EnqueueForOrchestrator of a %d-byte input returned %v, want ErrInvalidInput", len(huge), err)
	}
	turn := startAndFetch(ctx, t, p, "limit")
	commit := activities("limit", 1)
	commit.WorkerItems[0].Input = huge
	if err := p.AckOrchestrationItem(ctx, turn.LockToken, commit); !errors.Is(err, provider.ErrInvalidInput) {
		t.Fatalf("a turn scheduling a %d-byte input returned %v, want ErrInvalidInput", len(huge), err)
	}
	if rows := rowsWithPrefix(ctx, t, env, "limit", keys.HistoryPrefix(1)); len(rows) != 0 {
		t.Fatalf("the refused turn wrote %d history rows", len(rows))
	}
	if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, provider.AnyTag()); err != nil || w != nil {
		t.Fatalf("FetchWorkItem after the refusals returned %+v, %v; want nothing queued", w, err)
	}
}
