package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// instanceCreationTests returns the InstanceCreation category (duroxide
// module instance_creation).
func instanceCreationTests() []testCase {
	return []testCase{
		{"InstanceCreationViaMetadata", instanceCreationViaMetadata},
		{"NoInstanceCreationOnEnqueue", instanceCreationNoInstanceCreationOnEnqueue},
		{"NullVersionHandling", instanceCreationNullVersionHandling},
		{"SubOrchestrationInstanceCreation", instanceCreationSubOrchestrationInstanceCreation},
	}
}

// instanceCreationStarted is event 1 of execution 1 of an orchestration
// called name at version, optionally a child of parent.
func instanceCreationStarted(instance, name, version string, parent *string, parentID *uint64) provider.Event {
	return event(provider.InitialEventID, instance, provider.InitialExecutionID, provider.OrchestrationStarted{
		Name: name, Version: version, Input: "{}", ParentInstance: parent, ParentID: parentID,
	})
}

// instanceCreationMeta is first-turn metadata naming the orchestration and
// its resolved version.
func instanceCreationMeta(name, version string) provider.ExecutionMetadata {
	return provider.ExecutionMetadata{OrchestrationName: name, OrchestrationVersion: version}
}

// instanceCreationWantNoInstance fails t if the provider reports stats for
// instance, which it does exactly when the instance record exists.
func instanceCreationWantNoInstance(ctx context.Context, t *testing.T, p provider.Provider, instance, when string) {
	t.Helper()
	stats, err := p.InstanceStats(ctx, instance)
	must(t, err, "InstanceStats("+instance+")")
	if stats != nil {
		t.Fatalf("%s: instance %q exists (InstanceStats = %+v), want no instance record yet", when, instance, *stats)
	}
}

// instanceCreationWantInstance fails t unless the instance record exists.
func instanceCreationWantInstance(ctx context.Context, t *testing.T, p provider.Provider, instance, when string) {
	t.Helper()
	stats, err := p.InstanceStats(ctx, instance)
	must(t, err, "InstanceStats("+instance+")")
	if stats == nil {
		t.Fatalf("%s: instance %q has no record (InstanceStats = nil), want it created", when, instance)
	}
}

// instanceCreationViaMetadata checks that a first fetch works before the
// instance exists (name from the start message, execution 1, no history)
// and that the first ack's metadata creates it with the resolved version.
func instanceCreationViaMetadata(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-A"

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item.Instance, inst, "first fetch: instance")
	wantEqual(t, item.OrchestrationName, testOrchestration, "first fetch: orchestration name")
	wantEqual(t, item.ExecutionID, provider.InitialExecutionID, "first fetch: execution id")
	if len(item.History) != 0 {
		t.Fatalf("first fetch: got %d history events, want none", len(item.History))
	}

	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{instanceCreationStarted(inst, testOrchestration, "2.0.0", nil, nil)},
		Metadata:     instanceCreationMeta(testOrchestration, "2.0.0"),
	})

	// The next turn sees the stored instance: metadata's version, not the
	// message's 1.0.0, and the history written by the first ack.
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item2 := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item2.Instance, inst, "second fetch: instance")
	wantEqual(t, item2.OrchestrationName, testOrchestration, "second fetch: orchestration name")
	wantEqual(t, item2.Version, "2.0.0", "second fetch: version (from ack metadata)")
	wantEqual(t, item2.ExecutionID, provider.InitialExecutionID, "second fetch: execution id")
	if len(item2.History) != 1 {
		t.Fatalf("second fetch: got %d history events, want 1 (OrchestrationStarted)", len(item2.History))
	}

	ack(ctx, t, p, item2.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
}

// instanceCreationNoInstanceCreationOnEnqueue checks that enqueueing a start
// does not create the instance, that the start can still be fetched, and
// that the ack with metadata creates it.
func instanceCreationNoInstanceCreationOnEnqueue(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-B"

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	instanceCreationWantNoInstance(ctx, t, p, inst, "after enqueueing the start")

	item := fetchOrch(ctx, t, p, 30*time.Second)
	if item == nil {
		t.Fatal("fetch: want the start of a not-yet-created instance, got none")
	}
	wantEqual(t, item.Instance, inst, "fetch: instance")
	instanceCreationWantNoInstance(ctx, t, p, inst, "after fetching the start")

	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(inst, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})
	instanceCreationWantInstance(ctx, t, p, inst, "after the first ack")
}

// instanceCreationNullVersionHandling checks that a start without a version
// is fetchable and that the version set by ack metadata is reported later.
func instanceCreationNullVersionHandling(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const inst = "instance-C"

	start := startItem(inst)
	start.Version = nil
	enqueueOrch(ctx, t, p, start, 0)

	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item.Instance, inst, "first fetch: instance")
	wantEqual(t, item.Version, provider.UnknownVersion, "first fetch: version of a start without one")

	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{instanceCreationStarted(inst, testOrchestration, "3.0.0", nil, nil)},
		Metadata:     instanceCreationMeta(testOrchestration, "3.0.0"),
	})

	enqueueOrch(ctx, t, p, startItem(inst), 0)
	item2 := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, item2.Instance, inst, "second fetch: instance")
	wantEqual(t, item2.Version, "3.0.0", "second fetch: version (from ack metadata)")

	ack(ctx, t, p, item2.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
}

// instanceCreationSubOrchestrationInstanceCreation checks that a child start
// enqueued by its parent's ack is fetchable before the child exists and that
// the child is created, with its version, by its own first ack.
func instanceCreationSubOrchestrationInstanceCreation(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	const (
		parent = "parent-instance"
		child  = "parent-instance::child-instance"
	)

	enqueueOrch(ctx, t, p, startItem(parent), 0)
	parentItem := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, parentItem.Instance, parent, "parent fetch: instance")
	ack(ctx, t, p, parentItem.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{instanceCreationStarted(parent, "ParentOrch", "1.0.0", nil, nil)},
		OrchestratorItems: []provider.WorkItem{provider.StartOrchestrationItem{
			Instance:       child,
			Orchestration:  "ChildOrch",
			Input:          "{}",
			ParentInstance: ptr(parent),
			ParentID:       ptr(uint64(1)),
			ExecutionID:    provider.InitialExecutionID,
		}},
		Metadata: instanceCreationMeta("ParentOrch", "1.0.0"),
	})
	instanceCreationWantNoInstance(ctx, t, p, child, "after the parent's ack enqueued the child start")

	childItem := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, childItem.Instance, child, "child fetch: instance")
	wantEqual(t, childItem.OrchestrationName, "ChildOrch", "child fetch: orchestration name")

	ack(ctx, t, p, childItem.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{instanceCreationStarted(child, "ChildOrch", "1.5.0", ptr(parent), ptr(uint64(1)))},
		Metadata:     instanceCreationMeta("ChildOrch", "1.5.0"),
	})
	instanceCreationWantInstance(ctx, t, p, child, "after the child's first ack")

	enqueueOrch(ctx, t, p, provider.StartOrchestrationItem{
		Instance:      child,
		Orchestration: "ChildOrch",
		Input:         "{}",
		ExecutionID:   provider.InitialExecutionID,
	}, 0)
	childItem2 := mustFetchOrch(ctx, t, p, 30*time.Second)
	wantEqual(t, childItem2.Instance, child, "second child fetch: instance")
	wantEqual(t, childItem2.Version, "1.5.0", "second child fetch: version (from ack metadata)")

	ack(ctx, t, p, childItem2.LockToken, provider.TurnCommit{ExecutionID: provider.InitialExecutionID})
}
