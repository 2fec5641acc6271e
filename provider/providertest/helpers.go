package providertest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/provider"
)

// This file holds the helpers shared by every category. Category files use
// these rather than writing their own variants.

const (
	// testOrchestration and testVersion are the name and version the
	// helpers give instances.
	testOrchestration = "TestOrch"
	testVersion       = "1.0.0"
	// runtimeVersion is the duroxide_version written on test events.
	runtimeVersion = "0.1.29"
)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// nowMs is the current time in epoch milliseconds.
func nowMs() uint64 { return uint64(time.Now().UnixMilli()) }

// event builds a history event.
func event(id uint64, instance string, executionID uint64, kind provider.EventKind) provider.Event {
	return provider.Event{
		EventID:         id,
		InstanceID:      instance,
		ExecutionID:     executionID,
		TimestampMs:     nowMs(),
		DuroxideVersion: runtimeVersion,
		Kind:            kind,
	}
}

// completion builds a history event with a source event id.
func completion(id, source uint64, instance string, executionID uint64, kind provider.EventKind) provider.Event {
	e := event(id, instance, executionID, kind)
	e.SourceEventID = &source
	return e
}

// startedEvent is event 1 of an execution of testOrchestration.
func startedEvent(instance string, executionID uint64) provider.Event {
	return event(provider.InitialEventID, instance, executionID, provider.OrchestrationStarted{
		Name: testOrchestration, Version: testVersion, Input: "{}",
	})
}

// startItem is the start message for instance.
func startItem(instance string) provider.StartOrchestrationItem {
	return provider.StartOrchestrationItem{
		Instance:      instance,
		Orchestration: testOrchestration,
		Input:         "{}",
		Version:       ptr(testVersion),
		ExecutionID:   provider.InitialExecutionID,
	}
}

// activityItem is a worker-queue item for activity id of an execution.
func activityItem(instance string, executionID, id uint64) provider.ActivityExecuteItem {
	return provider.ActivityExecuteItem{
		Instance:    instance,
		ExecutionID: executionID,
		ID:          id,
		Name:        "TestActivity",
		Input:       "{}",
	}
}

// startMetadata is the metadata of an execution's first turn.
func startMetadata() provider.ExecutionMetadata {
	return provider.ExecutionMetadata{OrchestrationName: testOrchestration, OrchestrationVersion: testVersion}
}

// must fails t if err is not nil.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// enqueueOrch enqueues item on the orchestrator queue.
func enqueueOrch(ctx context.Context, t *testing.T, p provider.Provider, item provider.WorkItem, delay time.Duration) {
	t.Helper()
	must(t, p.EnqueueForOrchestrator(ctx, item, delay), "EnqueueForOrchestrator("+item.Kind()+")")
}

// enqueueWorker enqueues item on the worker queue.
func enqueueWorker(ctx context.Context, t *testing.T, p provider.Provider, item provider.ActivityExecuteItem) {
	t.Helper()
	must(t, p.EnqueueForWorker(ctx, item), "EnqueueForWorker")
}

// fetchOrch fetches an orchestration item without waiting; nil when there
// is none. Errors fail t.
func fetchOrch(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
	must(t, err, "FetchOrchestrationItem")
	return item
}

// mustFetchOrch fetches an orchestration item and fails t when there is none.
func mustFetchOrch(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.OrchestrationItem {
	t.Helper()
	item := fetchOrch(ctx, t, p, lockTimeout)
	if item == nil {
		t.Fatal("FetchOrchestrationItem: want an item, got none")
	}
	return item
}

// wantNoOrch fails t if an orchestration item can be fetched.
func wantNoOrch(ctx context.Context, t *testing.T, p provider.Provider, why string) {
	t.Helper()
	if item := fetchOrch(ctx, t, p, 30*time.Second); item != nil {
		t.Fatalf("%s: want no orchestration item, got instance %q with %d messages", why, item.Instance, len(item.Messages))
	}
}

// fetchWork fetches a work item without waiting; nil when there is none.
func fetchWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) *provider.LockedWorkItem {
	t.Helper()
	item, err := p.FetchWorkItem(ctx, lockTimeout, 0, session, tags)
	must(t, err, "FetchWorkItem")
	return item
}

// mustFetchWork fetches an untagged, session-less work item and fails t when
// there is none.
func mustFetchWork(ctx context.Context, t *testing.T, p provider.Provider, lockTimeout time.Duration) *provider.LockedWorkItem {
	t.Helper()
	item := fetchWork(ctx, t, p, lockTimeout, nil, provider.DefaultOnlyTags())
	if item == nil {
		t.Fatal("FetchWorkItem: want an item, got none")
	}
	return item
}

// ack acknowledges an orchestration item and fails t on error.
func ack(ctx context.Context, t *testing.T, p provider.Provider, token string, commit provider.TurnCommit) {
	t.Helper()
	must(t, p.AckOrchestrationItem(ctx, token, commit), "AckOrchestrationItem")
}

// createInstance starts instance: it enqueues a start, fetches it and acks
// the first turn with OrchestrationStarted and start metadata. The instance
// is left running with an empty queue.
func createInstance(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	enqueueOrch(ctx, t, p, startItem(instance), 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("createInstance: fetched %q, want %q", item.Instance, instance)
	}
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID)},
		Metadata:     startMetadata(),
	})
}

// completeInstance starts instance and completes it in one turn with status
// (Completed or Failed) and output.
func completeInstance(ctx context.Context, t *testing.T, p provider.Provider, instance, parent, status string) {
	t.Helper()
	start := startItem(instance)
	if parent != "" {
		start.ParentInstance = &parent
	}
	enqueueOrch(ctx, t, p, start, 0)
	item := mustFetchOrch(ctx, t, p, 30*time.Second)
	if item.Instance != instance {
		t.Fatalf("completeInstance: fetched %q, want %q", item.Instance, instance)
	}
	var last provider.EventKind = provider.OrchestrationCompleted{Output: "done"}
	if status == provider.StatusFailed {
		last = provider.OrchestrationFailed{Details: provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "failed"}}
	}
	meta := startMetadata()
	meta.ParentInstanceID = parent
	meta.Status = status
	meta.Output = ptr("done")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  provider.InitialExecutionID,
		HistoryDelta: []provider.Event{startedEvent(instance, provider.InitialExecutionID), event(2, instance, provider.InitialExecutionID, last)},
		Metadata:     meta,
	})
}

// wantErr fails t unless err is a non-nil error that matches target (when
// target is not nil) and carries a *provider.Error.
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: want an error, got nil", what)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("%s: want an error matching %v, got %v", what, target, err)
	}
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: want a *provider.Error in the chain, got %T: %v", what, err, err)
	}
}

// wantPermanent fails t unless err is a permanent provider error (matching
// target when target is not nil).
func wantPermanent(t *testing.T, err, target error, what string) {
	t.Helper()
	wantErr(t, err, target, what)
	if provider.IsRetryable(err) {
		t.Fatalf("%s: want a permanent error, got a retryable one: %v", what, err)
	}
}

// wantMessage fails t unless err's text contains one of subs.
func wantMessage(t *testing.T, err error, what string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if strings.Contains(err.Error(), s) {
			return
		}
	}
	t.Fatalf("%s: error %q contains none of %q", what, err, subs)
}

// readHistory reads instance's latest history and fails t on error.
func readHistory(ctx context.Context, t *testing.T, p provider.Provider, instance string) []provider.Event {
	t.Helper()
	h, err := p.Read(ctx, instance)
	must(t, err, "Read("+instance+")")
	return h
}

// eventIDs returns the event ids of history, in order.
func eventIDs(history []provider.Event) []uint64 {
	ids := make([]uint64, len(history))
	for i, e := range history {
		ids[i] = e.EventID
	}
	return ids
}

// wantEqual fails t unless got deep-equals want.
func wantEqual[T any](t *testing.T, got, want T, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}

// sleepPast sleeps until d has passed plus a margin, for tests whose
// subject is a lease or visibility time running out.
func sleepPast(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d + 100*time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		t.Fatalf("context done while waiting %v: %v", d, ctx.Err())
	}
}
