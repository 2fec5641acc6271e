package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

// managementInstanceStatus checks [provider.StatusReader] against what
// the history says: unknown, pending, running with a custom status,
// continued as new, completed with its output, failed with its details,
// and ended with an output and a failure too large for a store to keep
// beside the record.
func managementInstanceStatus(t *testing.T, s *suite) {
	ctx := s.context(t)
	p := s.provider(t)
	reader, ok := statusReaderOf(p)
	if !ok {
		t.Skip("the provider does not implement provider.StatusReader (optional)")
	}
	if _, err := reader.InstanceStatus(ctx, "mgmt-status-unknown"); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("InstanceStatus of an unknown instance: err %v; want ErrNotFound", err)
	}

	const inst = "mgmt-status"
	enqueueOrch(ctx, t, p, startItem(inst), 0)
	wantStatus(ctx, t, reader, inst, provider.InstanceStatus{InstanceID: inst, Status: provider.StatusPending}, "before the first turn")

	custom := "half way"
	item := managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  1,
		HistoryDelta: []provider.Event{startedEvent(inst, 1), event(2, inst, 1, provider.CustomStatusUpdated{Status: &custom})},
		Metadata:     startMetadata(),
	})
	running := provider.InstanceStatus{InstanceID: inst, ExecutionID: 1, Status: provider.StatusRunning, CustomStatus: &custom, CustomStatusVersion: 1}
	wantStatus(ctx, t, reader, inst, running, "after the first turn")

	item = managementPoke(ctx, t, p, inst, "end-1")
	can := startMetadata()
	can.Status, can.Output = provider.StatusContinuedAsNew, ptr("next")
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID: 1, HistoryDelta: []provider.Event{event(3, inst, 1, provider.OrchestrationContinuedAsNew{Input: "next"})}, Metadata: can,
	})
	running.Status = provider.StatusContinuedAsNew
	wantStatus(ctx, t, reader, inst, running, "after continue-as-new")

	enqueueOrch(ctx, t, p, provider.ContinueAsNewItem{Instance: inst, Orchestration: testOrchestration, Input: "next", Version: ptr(testVersion)}, 0)
	item = managementFetch(ctx, t, p, inst)
	ack(ctx, t, p, item.LockToken, provider.TurnCommit{
		ExecutionID:  2,
		HistoryDelta: []provider.Event{startedEvent(inst, 2), event(2, inst, 2, provider.OrchestrationCompleted{Output: "done"})},
		Metadata:     provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: ptr("done"), OrchestrationName: testOrchestration, OrchestrationVersion: testVersion},
	})
	running.ExecutionID, running.Status, running.Output = 2, provider.StatusCompleted, ptr("done")
	wantStatus(ctx, t, reader, inst, running, "after the second execution completed")

	statusEnded(ctx, t, p, reader, "mgmt-status-failed", "boom")
	statusEnded(ctx, t, p, reader, "mgmt-status-large", strings.Repeat("large result ", 5000))
}

// statusEnded completes one instance with output and fails another with
// output as its message, in their first turns, and checks their status.
func statusEnded(ctx context.Context, t *testing.T, p provider.Provider, reader provider.StatusReader, inst, output string) {
	t.Helper()
	for _, id := range []string{inst + "-completed", inst + "-failed"} {
		enqueueOrch(ctx, t, p, startItem(id), 0)
		item := managementFetch(ctx, t, p, id)
		end, meta := provider.EventKind(provider.OrchestrationCompleted{Output: output}), startMetadata()
		meta.Status, meta.Output = provider.StatusCompleted, &output
		want := provider.InstanceStatus{InstanceID: id, ExecutionID: 1, Status: provider.StatusCompleted, Output: &output}
		if strings.HasSuffix(id, "-failed") {
			details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: output}
			end, meta.Status = provider.OrchestrationFailed{Details: details}, provider.StatusFailed
			want.Status, want.Output, want.Failure = provider.StatusFailed, nil, details
		}
		ack(ctx, t, p, item.LockToken, provider.TurnCommit{
			ExecutionID: 1, HistoryDelta: []provider.Event{startedEvent(id, 1), event(2, id, 1, end)}, Metadata: meta,
		})
		wantStatus(ctx, t, reader, id, want, "after its first turn ended it")
	}
}

func wantStatus(ctx context.Context, t *testing.T, reader provider.StatusReader, inst string, want provider.InstanceStatus, when string) {
	t.Helper()
	got, err := reader.InstanceStatus(ctx, inst)
	must(t, err, "InstanceStatus "+when)
	wantEqual(t, *got, want, "InstanceStatus of "+inst+" "+when)
}
