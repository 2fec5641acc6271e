package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// customStatusTests returns the CustomStatus category.
func customStatusTests() []testCase {
	return []testCase{
		{"CustomStatusSet", customStatusSet},
		{"CustomStatusClear", customStatusClear},
		{"CustomStatusNonePreserves", customStatusNonePreserves},
		{"CustomStatusVersionIncrements", customStatusVersionIncrements},
		{"CustomStatusPollingNoChange", customStatusPollingNoChange},
		{"CustomStatusNonexistentInstance", customStatusNonexistentInstance},
		{"CustomStatusDefaultOnNewInstance", customStatusDefaultOnNewInstance},
	}
}

// customStatusEvent is a CustomStatusUpdated event of execution 1; a nil
// status clears the custom status.
func customStatusEvent(id uint64, instance string, status *string) provider.Event {
	return event(id, instance, provider.InitialExecutionID, provider.CustomStatusUpdated{Status: status})
}

// customStatusTurn runs one turn of a started instance: it enqueues an
// external event, fetches the instance and acks execution 1 with delta and
// empty metadata.
func customStatusTurn(ctx context.Context, t *testing.T, p provider.Provider, instance string, delta ...provider.Event) {
	t.Helper()
	enqueueOrch(ctx, t, p, provider.ExternalRaisedItem{Instance: instance, Name: "poke", Data: "{}"}, 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("fetched instance %q, want %q", item.Instance, instance)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: delta,
	})
}

// customStatusGet reads the custom status newer than lastSeen and fails t on
// error.
func customStatusGet(ctx context.Context, t *testing.T, p provider.Provider, instance string, lastSeen uint64) *provider.CustomStatus {
	t.Helper()
	cs, err := p.CustomStatus(ctx, instance, lastSeen)
	must(t, err, "CustomStatus")
	return cs
}

// customStatusWant fails t unless the custom status of instance read with
// lastSeen 0 has the given value (nil = cleared) and version.
func customStatusWant(ctx context.Context, t *testing.T, p provider.Provider, instance string, status *string, version uint64, why string) {
	t.Helper()
	cs := customStatusGet(ctx, t, p, instance, 0)
	if cs == nil {
		t.Fatalf("%s: CustomStatus(%q, 0) = nil, want version %d", why, instance, version)
	}
	switch {
	case status == nil && cs.Status != nil:
		t.Fatalf("%s: status = %q, want cleared (nil)", why, *cs.Status)
	case status != nil && cs.Status == nil:
		t.Fatalf("%s: status = nil, want %q", why, *status)
	case status != nil && *cs.Status != *status:
		t.Fatalf("%s: status = %q, want %q", why, *cs.Status, *status)
	}
	if cs.Version != version {
		t.Fatalf("%s: version = %d, want %d", why, cs.Version, version)
	}
}

// customStatusSet checks that an ack holding CustomStatusUpdated with a
// value stores it at version 1.
func customStatusSet(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-set"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(100, inst, ptr("progress")))
	customStatusWant(ctx, t, p, inst, ptr("progress"), 1, "after setting")
}

// customStatusClear checks that CustomStatusUpdated without a value clears
// the status and still bumps the version.
func customStatusClear(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-clear"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(100, inst, ptr("temp")))
	customStatusWant(ctx, t, p, inst, ptr("temp"), 1, "after setting")
	customStatusTurn(ctx, t, p, inst, customStatusEvent(101, inst, nil))
	customStatusWant(ctx, t, p, inst, nil, 2, "after set and clear")
}

// customStatusNonePreserves checks that an ack without CustomStatusUpdated
// leaves value and version unchanged.
func customStatusNonePreserves(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-noop"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(100, inst, ptr("keep-me")))
	customStatusTurn(ctx, t, p, inst)
	customStatusWant(ctx, t, p, inst, ptr("keep-me"), 1, "after an ack without a custom-status event")
}

// customStatusVersionIncrements checks that every ack that sets or clears
// the status bumps the version by one.
func customStatusVersionIncrements(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-ver"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(100, inst, ptr("a")))
	customStatusWant(ctx, t, p, inst, ptr("a"), 1, "after the first set")
	customStatusTurn(ctx, t, p, inst, customStatusEvent(101, inst, ptr("b")))
	customStatusWant(ctx, t, p, inst, ptr("b"), 2, "after the second set")
	customStatusTurn(ctx, t, p, inst, customStatusEvent(102, inst, nil))
	customStatusWant(ctx, t, p, inst, nil, 3, "after the clear")
}

// customStatusPollingNoChange checks that reading with the current version
// as last seen returns nil, and with 0 returns the status.
func customStatusPollingNoChange(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-poll"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(100, inst, ptr("v1")))
	if cs := customStatusGet(ctx, t, p, inst, 1); cs != nil {
		t.Fatalf("CustomStatus(%q, 1) at version 1: want nil (no change), got version %d", inst, cs.Version)
	}
	customStatusWant(ctx, t, p, inst, ptr("v1"), 1, "CustomStatus with last seen 0")
}

// customStatusNonexistentInstance checks that an unknown instance has no
// custom status and no error.
func customStatusNonexistentInstance(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-exists"
	createInstance(ctx, t, p, inst)
	customStatusTurn(ctx, t, p, inst, customStatusEvent(2, inst, ptr("set")))

	if cs := customStatusGet(ctx, t, p, "does-not-exist", 0); cs != nil {
		t.Fatalf("CustomStatus of an unknown instance: want nil, got version %d", cs.Version)
	}
	customStatusWant(ctx, t, p, inst, ptr("set"), 1, "an instance that exists, beside the unknown one")
}

// customStatusDefaultOnNewInstance checks that a new instance starts at
// version 0, so a read with last seen 0 returns nil.
func customStatusDefaultOnNewInstance(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "cs-default"
	createInstance(ctx, t, p, inst)
	if cs := customStatusGet(ctx, t, p, inst, 0); cs != nil {
		t.Fatalf("CustomStatus(%q, 0) of a new instance: want nil (version 0), got version %d", inst, cs.Version)
	}
}
