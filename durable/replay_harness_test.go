package durable

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// The replay-engine tests run one turn of an orchestration over a history
// written as duroxide JSON lines, without a provider.

const (
	testInstance = "test-instance"
	testOrch     = "TestOrch"
	testVersion  = "1.0.0"
)

// testTurnTime is the wall clock of every replayed turn.
var testTurnTime = time.UnixMilli(1_700_000_000_000).UTC()

// historyJSON parses duroxide JSON lines (blank lines and lines starting
// with # ignored). Missing header fields default to the test instance,
// execution 1 and the engine's replay version.
func historyJSON(t testing.TB, lines string) []provider.Event {
	t.Helper()
	var out []provider.Event
	sc := bufio.NewScanner(strings.NewReader(lines))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		for k, v := range map[string]string{
			"source_event_id": "null", "instance_id": `"` + testInstance + `"`, "execution_id": "1",
			"timestamp_ms": "0", "duroxide_version": `"` + replay.Version + `"`,
		} {
			if _, ok := fields[k]; !ok {
				fields[k] = json.RawMessage(v)
			}
		}
		full, _ := json.Marshal(fields)
		var ev provider.Event
		if err := json.Unmarshal(full, &ev); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// messagesJSONL parses work items written as duroxide JSON lines.
func messagesJSONL(t testing.TB, lines string) []provider.WorkItem {
	t.Helper()
	var out []provider.WorkItem
	for _, line := range strings.Split(lines, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		item, err := provider.UnmarshalWorkItem([]byte(line))
		if err != nil {
			t.Fatalf("message %q: %v", line, err)
		}
		out = append(out, item)
	}
	return out
}

// replayTurn runs one turn of orch (registered as TestOrch 1.0.0 unless
// history names another) over history and msgs.
func replayTurn(t testing.TB, orch func(ctx *OrchestrationContext, input string) (string, error), history []provider.Event, msgs []provider.WorkItem, optFns ...func(*replay.Input)) *replay.Turn {
	t.Helper()
	reg, err := NewRegistry(OrchestrationFunc(testOrch, orch, Version(testVersion)))
	if err != nil {
		t.Fatal(err)
	}
	item := &provider.OrchestrationItem{
		Instance: testInstance, OrchestrationName: testOrch, ExecutionID: 1, Version: testVersion,
		History: history, Messages: msgs, LockToken: "token", AttemptCount: 1,
	}
	if len(history) > 0 {
		item.ExecutionID = history[0].ExecutionID
	}
	in := replay.Input{Item: item, Now: testTurnTime, Resolve: reg.resolve, YieldTimeout: 10 * time.Second}
	for _, fn := range optFns {
		fn(&in)
	}
	turn, err := replay.Run(in)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return turn
}

// deltaTypes lists the event types of a turn's delta.
func deltaTypes(turn *replay.Turn) []string {
	out := make([]string, len(turn.Commit.HistoryDelta))
	for i, ev := range turn.Commit.HistoryDelta {
		out[i] = ev.Kind.EventType()
	}
	return out
}

// failureMessage returns the display message of a failed turn, or "".
func failureMessage(turn *replay.Turn) string {
	if turn.Failure == nil {
		return ""
	}
	return turn.Failure.DisplayMessage()
}

func TestReplayHarnessHelloWorld(t *testing.T) {
	orch := func(ctx *OrchestrationContext, input string) (string, error) {
		out, err := CallActivity[Raw](ctx, "Greet", Raw(input)).Get(ctx)
		return string(out), err
	}
	// First turn: start and schedule.
	turn := replayTurn(t, orch, nil, messagesJSONL(t, `{"StartOrchestration":{"instance":"test-instance","orchestration":"TestOrch","input":"Rust","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`))
	if got := strings.Join(deltaTypes(turn), ","); got != "OrchestrationStarted,ActivityScheduled" {
		t.Fatalf("delta %s", got)
	}
	if turn.Outcome != replay.Continue || len(turn.Commit.WorkerItems) != 1 || turn.Commit.WorkerItems[0].ID != 2 {
		t.Fatalf("turn %+v", turn)
	}
	// Second turn: the completion.
	history := historyJSON(t, `
{"event_id":1,"type":"OrchestrationStarted","name":"TestOrch","version":"1.0.0","input":"Rust","parent_instance":null,"parent_id":null}
{"event_id":2,"type":"ActivityScheduled","name":"Greet","input":"Rust"}
`)
	turn = replayTurn(t, orch, history, messagesJSONL(t, `{"ActivityCompleted":{"instance":"test-instance","execution_id":1,"id":2,"result":"Hello, Rust!"}}`))
	if got := strings.Join(deltaTypes(turn), ","); got != "ActivityCompleted,OrchestrationCompleted" {
		t.Fatalf("delta %s", got)
	}
	if turn.Outcome != replay.Completed || turn.Output != "Hello, Rust!" {
		t.Fatalf("outcome %v output %q", turn.Outcome, turn.Output)
	}
	if ev := turn.Commit.HistoryDelta[0]; ev.EventID != 3 || *ev.SourceEventID != 2 {
		t.Fatalf("completion event %+v", ev)
	}
}
