package providertest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// inputValidationTests returns duradyn's own checks that bad input is
// rejected with a permanent, typed error and loses nothing, and that ids
// and keys of any shape stay distinct.
func inputValidationTests() []testCase {
	return []testCase{
		{"AckRejectsEventIDZero", inputValidationAckRejectsEventIDZero},
		{"AckRejectsDuplicateEventIDInDelta", inputValidationAckRejectsDuplicateEventIDInDelta},
		{"AckRejectsActivityExecuteOnOrchestratorQueue", inputValidationAckRejectsActivityExecuteOnOrchestratorQueue},
		{"EnqueueForOrchestratorRejectsActivityExecute", inputValidationEnqueueRejectsActivityExecute},
		{"AckWorkItemRejectsNonCompletion", inputValidationAckWorkItemRejectsNonCompletion},
		{"AppendRejectsEventIDZero", inputValidationAppendRejectsEventIDZero},
		{"AppendRejectsDuplicateEventID", inputValidationAppendRejectsDuplicateEventID},
		{"HostileInstanceIDsStayDistinct", inputValidationHostileInstanceIDs},
		{"HostileKVKeysStayDistinct", inputValidationHostileKVKeys},
		{"HostileTagsAndSessionsStayDistinct", inputValidationHostileTagsAndSessions},
	}
}

// inputValidationRejectedTurn fetches instance's start turn, expects ack to
// reject commit as permanent invalid input, and checks that nothing was
// lost: the lock is still held (no one else can fetch), and after abandon
// the same start message is delivered again with no history written.
func inputValidationRejectedTurn(t *testing.T, s *suite, commit func(instance string) provider.TurnCommit) {
	ctx := s.context(t)
	p := s.provider(t)
	const instance = "bad-input"
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)

	err := p.AckOrchestrationItem(ctx, item.LockToken, commit(instance))
	wantPermanent(t, err, provider.ErrInvalidInput, "ack with invalid input")

	wantNoOrch(ctx, t, p, "lock must survive a rejected ack")
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "abandon after rejected ack")
	again := mustFetchOrch(ctx, t, p, 30*time.Second)
	if again.Instance != instance || len(again.Messages) != 1 || again.Messages[0].Kind() != provider.KindStartOrchestration {
		t.Fatalf("after a rejected ack: want the start message again, got %q with %v", again.Instance, again.Messages)
	}
	if h := readHistory(ctx, t, p, instance); len(h) != 0 {
		t.Fatalf("rejected ack wrote %d history events", len(h))
	}
	if w := fetchWork(ctx, t, p, 30*time.Second, nil, provider.AnyTag()); w != nil {
		t.Fatalf("rejected ack enqueued worker item %+v", w.Item)
	}
}

// inputValidationAckRejectsEventIDZero: an event id of 0 fails the whole ack.
func inputValidationAckRejectsEventIDZero(t *testing.T, s *suite) {
	inputValidationRejectedTurn(t, s, func(instance string) provider.TurnCommit {
		bad := event(0, instance, 1, provider.OrchestrationCompleted{Output: "x"})
		return provider.TurnCommit{
			ExecutionID:  1,
			HistoryDelta: []provider.Event{startedEvent(instance, 1), bad},
			WorkerItems:  []provider.ActivityExecuteItem{activityItem(instance, 1, 2)},
			Metadata:     startMetadata(),
		}
	})
}

// inputValidationAckRejectsDuplicateEventIDInDelta: one delta naming an event
// id twice fails the whole ack.
func inputValidationAckRejectsDuplicateEventIDInDelta(t *testing.T, s *suite) {
	inputValidationRejectedTurn(t, s, func(instance string) provider.TurnCommit {
		return provider.TurnCommit{
			ExecutionID: 1,
			HistoryDelta: []provider.Event{startedEvent(instance, 1),
				event(2, instance, 1, provider.ActivityScheduled{Name: "A", Input: "1"}),
				event(2, instance, 1, provider.ActivityScheduled{Name: "B", Input: "2"})},
			WorkerItems: []provider.ActivityExecuteItem{activityItem(instance, 1, 2)},
			Metadata:    startMetadata(),
		}
	})
}

// inputValidationAckRejectsActivityExecuteOnOrchestratorQueue: an activity
// among the orchestrator items fails the whole ack.
func inputValidationAckRejectsActivityExecuteOnOrchestratorQueue(t *testing.T, s *suite) {
	inputValidationRejectedTurn(t, s, func(instance string) provider.TurnCommit {
		return provider.TurnCommit{
			ExecutionID:       1,
			HistoryDelta:      []provider.Event{startedEvent(instance, 1)},
			WorkerItems:       []provider.ActivityExecuteItem{activityItem(instance, 1, 2)},
			OrchestratorItems: []provider.WorkItem{activityItem(instance, 1, 3)},
			Metadata:          startMetadata(),
		}
	})
}

// inputValidationEnqueueRejectsActivityExecute: EnqueueForOrchestrator
// refuses an activity, and enqueues nothing.
func inputValidationEnqueueRejectsActivityExecute(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	err := p.EnqueueForOrchestrator(ctx, activityItem("inst", 1, 1), 0)
	wantPermanent(t, err, provider.ErrInvalidInput, "EnqueueForOrchestrator(ActivityExecute)")
	wantMessage(t, err, "EnqueueForOrchestrator(ActivityExecute)", "Invalid work item type")
	wantNoOrch(ctx, t, p, "after a rejected enqueue")
	if w := fetchWork(ctx, t, p, 30*time.Second, nil, provider.AnyTag()); w != nil {
		t.Fatalf("rejected orchestrator enqueue reached the worker queue: %+v", w.Item)
	}
	err = p.EnqueueForOrchestrator(ctx, nil, 0)
	wantPermanent(t, err, provider.ErrInvalidInput, "EnqueueForOrchestrator(nil)")
}

// inputValidationAckWorkItemRejectsNonCompletion: a worker ack whose
// completion is not ActivityCompleted/ActivityFailed fails, keeps the item
// locked, and enqueues nothing; a proper ack with the same token then works.
func inputValidationAckWorkItemRejectsNonCompletion(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	createInstance(ctx, t, p, "inst")
	enqueueWorker(ctx, t, p, activityItem("inst", 1, 2))
	w := mustFetchWork(ctx, t, p, 30*time.Second)

	for _, bad := range []provider.WorkItem{
		provider.TimerFiredItem{Instance: "inst", ExecutionID: 1, ID: 2, FireAtMs: nowMs()},
		provider.StartOrchestrationItem{Instance: "inst", Orchestration: "O", ExecutionID: 1},
		activityItem("inst", 1, 2),
	} {
		err := p.AckWorkItem(ctx, w.LockToken, bad)
		wantPermanent(t, err, provider.ErrInvalidInput, "AckWorkItem(completion="+bad.Kind()+")")
	}
	wantNoOrch(ctx, t, p, "rejected worker acks must enqueue nothing")
	if again := fetchWork(ctx, t, p, 30*time.Second, nil, provider.DefaultOnlyTags()); again != nil {
		t.Fatal("the item must stay locked after a rejected ack")
	}
	must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: "inst", ExecutionID: 1, ID: 2, Result: "ok"}), "ack after rejected acks")
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if len(item.Messages) != 1 || item.Messages[0].Kind() != provider.KindActivityCompleted {
		t.Fatalf("want the one completion, got %v", item.Messages)
	}
}

// inputValidationAppendRejectsEventIDZero: AppendWithExecution refuses event
// id 0 and stores nothing of the batch.
func inputValidationAppendRejectsEventIDZero(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	err := p.AppendWithExecution(ctx, "inst", 1, []provider.Event{startedEvent("inst", 1), event(0, "inst", 1, provider.OrchestrationCompleted{})})
	wantPermanent(t, err, provider.ErrInvalidInput, "append with event id 0")
	h, err := p.ReadWithExecution(ctx, "inst", 1)
	must(t, err, "ReadWithExecution")
	if len(h) != 0 {
		t.Fatalf("rejected append stored %d events", len(h))
	}
}

// inputValidationAppendRejectsDuplicateEventID: appending an id that is
// stored fails and never overwrites the stored event.
func inputValidationAppendRejectsDuplicateEventID(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	must(t, p.AppendWithExecution(ctx, "inst", 1, []provider.Event{startedEvent("inst", 1)}), "first append")
	imposter := event(1, "inst", 1, provider.OrchestrationStarted{Name: "Imposter", Version: "9.9.9", Input: "x"})
	err := p.AppendWithExecution(ctx, "inst", 1, []provider.Event{imposter})
	wantPermanent(t, err, provider.ErrDuplicateEvent, "append of a stored event id")
	h, err := p.ReadWithExecution(ctx, "inst", 1)
	must(t, err, "ReadWithExecution")
	if len(h) != 1 || !reflect.DeepEqual(h[0].Kind, startedEvent("inst", 1).Kind) {
		t.Fatalf("stored event was overwritten or duplicated: %+v", h)
	}
}

// inputValidationHostileIDs are instance ids, keys and names that trip
// naive key encodings: separators, prefixes of each other, unicode, long.
var inputValidationHostileIDs = []string{
	"a", "a#", "a#b", "a##b", "#", "##", "a|b", "a/b", "a\\b", "a b", "a\tb",
	"INST#a", "ñandú-🦤", "日本語", "a\x00b", "00001", "1", "a::sub::2",
	strings.Repeat("x", 1024),
}

// inputValidationHostileInstanceIDs: instances whose ids trip naive key
// encodings each keep their own queue, history and custom status.
func inputValidationHostileInstanceIDs(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	for _, id := range inputValidationHostileIDs {
		createInstance(ctx, t, p, id)
	}
	// Give each instance a second turn whose output names it.
	for _, id := range inputValidationHostileIDs {
		enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: id, Name: "who", Data: id}, 0)
	}
	seen := map[string]bool{}
	for range inputValidationHostileIDs {
		item := mustFetchOrch(ctx, t, p, 30*time.Second)
		if seen[item.Instance] {
			t.Fatalf("instance %q fetched twice", item.Instance)
		}
		seen[item.Instance] = true
		if len(item.Messages) != 1 || item.Messages[0] != (provider.ExternalRaisedItem{Instance: item.Instance, Name: "who", Data: item.Instance}) {
			t.Fatalf("instance %q got messages %+v", item.Instance, item.Messages)
		}
		if len(item.History) != 1 || item.History[0].InstanceID != item.Instance {
			t.Fatalf("instance %q got history %+v", item.Instance, item.History)
		}
		ack(ctx, t, p, item.LockToken, provider.TurnCommit{
			ExecutionID:  1,
			HistoryDelta: []provider.Event{event(2, item.Instance, 1, provider.CustomStatusUpdated{Status: ptr(item.Instance)})},
		})
	}
	for _, id := range inputValidationHostileIDs {
		if !seen[id] {
			t.Fatalf("instance %q was never fetched", id)
		}
		h := readHistory(ctx, t, p, id)
		if len(h) != 2 || h[0].InstanceID != id || h[1].InstanceID != id {
			t.Fatalf("instance %q: history %+v", id, h)
		}
		cs, err := p.CustomStatus(ctx, id, 0)
		must(t, err, "CustomStatus")
		if cs == nil || cs.Status == nil || *cs.Status != id || cs.Version != 1 {
			t.Fatalf("instance %q: custom status %+v", id, cs)
		}
	}
}

// inputValidationHostileKVKeys: KV keys that trip naive key encodings stay
// distinct, and one instance's keys never show in another's.
func inputValidationHostileKVKeys(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	for _, inst := range []string{"kv", "kv#"} {
		enqueueOrch(ctx, t, p, startItem(inst), 0)
		item := mustFetchOrch(ctx, t, p, 30*time.Second)
		delta := []provider.Event{startedEvent(item.Instance, 1)}
		for i, key := range inputValidationHostileIDs {
			delta = append(delta, event(uint64(i+2), item.Instance, 1, provider.KeyValueSet{Key: key, Value: item.Instance + "=" + key}))
		}
		ack(ctx, t, p, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: startMetadata()})
	}
	for _, inst := range []string{"kv", "kv#"} {
		all, err := p.KVValues(ctx, inst)
		must(t, err, "KVValues")
		if len(all) != len(inputValidationHostileIDs) {
			t.Fatalf("instance %q: want %d keys, got %d", inst, len(inputValidationHostileIDs), len(all))
		}
		for _, key := range inputValidationHostileIDs {
			v, ok, err := p.KVValue(ctx, inst, key)
			must(t, err, "KVValue")
			if !ok || v != inst+"="+key || all[key] != v {
				t.Fatalf("instance %q key %q: got %q (ok=%v), all=%q", inst, key, v, ok, all[key])
			}
		}
	}
}

// inputValidationHostileTagsAndSessions: tags and session ids that trip
// naive encodings route only to the filter or owner that names them.
func inputValidationHostileTagsAndSessions(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	tags := []string{"a", "a#", "#a", "ñ"}
	for i, tag := range tags {
		it := activityItem("inst", 1, uint64(i+1))
		it.Tag = ptr(tag)
		enqueueWorker(ctx, t, p, it)
	}
	for i, tag := range tags {
		f, err := provider.OnlyTags(tag)
		must(t, err, "OnlyTags")
		w := awaitWork(ctx, t, p, 30*time.Second, nil, f)
		if w == nil || w.Item.Tag == nil || *w.Item.Tag != tag || w.Item.ID != uint64(i+1) {
			t.Fatalf("filter %v: got %+v", f, w)
		}
		if again := fetchWork(ctx, t, p, 30*time.Second, nil, f); again != nil {
			t.Fatalf("filter %v: second item %+v", f, again.Item)
		}
	}
	for i, sess := range []string{"s", "s#"} {
		it := activityItem("inst", 2, uint64(i+1))
		it.SessionID = ptr(sess)
		enqueueWorker(ctx, t, p, it)
	}
	cfg := func(owner string) *provider.SessionFetchConfig {
		return &provider.SessionFetchConfig{OwnerID: owner, LockTimeout: 30 * time.Second}
	}
	first := awaitWork(ctx, t, p, 30*time.Second, cfg("owner"), provider.DefaultOnlyTags())
	second := awaitWork(ctx, t, p, 30*time.Second, cfg("owner#"), provider.DefaultOnlyTags())
	if first == nil || second == nil || *first.Item.SessionID == *second.Item.SessionID {
		t.Fatalf("two sessions, two owners: got %+v and %+v", first, second)
	}
	// Affinity keeps the owners apart: each gets its own session's next
	// item and never the other's, although the older one is "owner"'s.
	for i, sess := range []*string{first.Item.SessionID, second.Item.SessionID} {
		it := activityItem("inst", 3, uint64(i+1))
		it.SessionID = sess
		enqueueWorker(ctx, t, p, it)
	}
	for _, c := range []struct {
		owner   string
		session string
		id      uint64
	}{{"owner#", *second.Item.SessionID, 2}, {"owner", *first.Item.SessionID, 1}} {
		w := awaitWork(ctx, t, p, 30*time.Second, cfg(c.owner), provider.DefaultOnlyTags())
		if w == nil || w.Item.ExecutionID != 3 || w.Item.ID != c.id || w.Item.SessionID == nil || *w.Item.SessionID != c.session {
			t.Fatalf("owner %q: want activity %d of its session %q, got %+v", c.owner, c.id, c.session, w)
		}
	}
}
