package providertest

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// errorHandlingTests returns the ErrorHandling category (duroxide module
// error_handling).
func errorHandlingTests() []testCase {
	return []testCase{
		{"InvalidLockTokenOnAck", errorHandlingInvalidLockTokenOnAck},
		{"DuplicateEventIDRejection", errorHandlingDuplicateEventIDRejection},
		{"MissingInstanceMetadata", errorHandlingMissingInstanceMetadata},
		{"CorruptedSerializationData", errorHandlingCorruptedSerializationData},
		{"LockExpirationDuringAck", errorHandlingLockExpirationDuringAck},
		{"ReadCorruptedHistoryReturnsError", errorHandlingReadCorruptedHistoryReturnsError},
		{"ReadWithExecutionCorruptedHistoryReturnsError", errorHandlingReadWithExecutionCorruptedHistoryReturnsError},
	}
}

// errorHandlingInvalidLockTokenOnAck checks that an ack with a token no fetch
// issued fails permanently with an invalid-lock-token error.
func errorHandlingInvalidLockTokenOnAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	err := p.AckOrchestrationItem(ctx, "invalid-token", provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "ack with an unknown token")
	wantMessage(t, err, "ack with an unknown token", "Invalid lock token", "lock_token")
}

// errorHandlingDuplicateEventIDRejection checks that a later ack appending an
// event id the execution already holds fails and leaves history unchanged.
func errorHandlingDuplicateEventIDRejection(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-A"

	// First turn: event 1, without name/version metadata.
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	first := mustFetchOrch(ctx, t, p, 30*time.Second)
	ack(ctx, t, p, first.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
	})

	// Second turn tries to append another event with id 1.
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	second := mustFetchOrch(ctx, t, p, 30*time.Second)
	if second.Instance != inst {
		t.Fatalf("second fetch: got instance %q, want %q", second.Instance, inst)
	}
	err := p.AckOrchestrationItem(ctx, second.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{event(1, inst, provider.InitialExecutionID, provider.ActivityScheduled{
			Name: "Activity", Input: "{}",
		})},
	})
	wantPermanent(t, err, provider.ErrDuplicateEvent, "ack appending event id 1 a second time")

	history := readHistory(ctx, t, p, inst)
	if len(history) != 1 {
		t.Fatalf("history after the rejected ack: got %d events (ids %v), want 1", len(history), eventIDs(history))
	}
	if _, ok := history[0].Kind.(provider.OrchestrationStarted); !ok {
		t.Fatalf("history[0]: got %s, want OrchestrationStarted (the duplicate must not overwrite it)", history[0].Kind.EventType())
	}
}

// errorHandlingMissingInstanceMetadata checks that reading an instance that
// never existed yields an empty history.
func errorHandlingMissingInstanceMetadata(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	history := readHistory(ctx, t, p, "non-existent-instance")
	if len(history) != 0 {
		t.Fatalf("Read of an unknown instance: got %d events, want none", len(history))
	}

	// An instance that exists reads back its history.
	createInstance(ctx, t, p, "existent-instance")
	wantEqual(t, eventIDs(readHistory(ctx, t, p, "existent-instance")), []uint64{1}, "Read of an instance that exists: event ids")
}

// errorHandlingCorruptedSerializationData checks that fetching from an empty
// store succeeds and finds nothing.
func errorHandlingCorruptedSerializationData(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)

	item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
	must(t, err, "FetchOrchestrationItem on an empty store")
	if item != nil {
		t.Fatalf("FetchOrchestrationItem on an empty store: got instance %q, want no item", item.Instance)
	}

	// Once there is work, the fetch returns it.
	enqueueOrch(ctx, t, p, startItem("after-empty"), 0)
	item = mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item.Instance, "after-empty", "FetchOrchestrationItem once a start is queued: instance")
}

// errorHandlingLockExpirationDuringAck checks that an ack after the lock
// timeout has passed fails and commits nothing.
func errorHandlingLockExpirationDuringAck(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-A"
	lockTimeout := s.lockTimeout()

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	if item == nil {
		t.Fatal("FetchOrchestrationItem: want an item, got none")
	}

	sleepPast(ctx, t, lockTimeout)

	err = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})
	wantPermanent(t, err, provider.ErrInvalidLockToken, "ack after the lock expired")

	if h := readHistory(ctx, t, p, inst); len(h) != 0 {
		t.Fatalf("history after the rejected ack: got %d events (ids %v), want none", len(h), eventIDs(h))
	}
}

// errorHandlingReadCorruptedHistoryReturnsError checks that Read fails with a
// corrupt-data error, rather than returning fewer events, once the stored
// history cannot be decoded.
func errorHandlingReadCorruptedHistoryReturnsError(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-read-corrupt"

	createInstance(ctx, t, p, inst)
	if h := readHistory(ctx, t, p, inst); len(h) == 0 {
		t.Fatal("Read before corruption: got no events, want the started event")
	}

	s.corruptHistory(t, p, inst)

	history, err := p.Read(ctx, inst)
	if err == nil {
		t.Fatalf("Read of corrupted history: want an error, got %d events", len(history))
	}
	wantPermanent(t, err, provider.ErrCorruptData, "Read of corrupted history")
}

// errorHandlingReadWithExecutionCorruptedHistoryReturnsError checks that
// ReadWithExecution fails with a corrupt-data error once the stored history
// cannot be decoded.
func errorHandlingReadWithExecutionCorruptedHistoryReturnsError(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "inst-rwe-corrupt"

	createInstance(ctx, t, p, inst)
	h, err := p.ReadWithExecution(ctx, inst, provider.InitialExecutionID)
	must(t, err, "ReadWithExecution before corruption")
	if len(h) == 0 {
		t.Fatal("ReadWithExecution before corruption: got no events, want the started event")
	}

	s.corruptHistory(t, p, inst)

	history, err := p.ReadWithExecution(ctx, inst, provider.InitialExecutionID)
	if err == nil {
		t.Fatalf("ReadWithExecution of corrupted history: want an error, got %d events", len(history))
	}
	wantPermanent(t, err, provider.ErrCorruptData, "ReadWithExecution of corrupted history")
}
