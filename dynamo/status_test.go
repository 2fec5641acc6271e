package dynamo_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// TestClientStatusIsOneRead: Client.Status on DynamoDB is one GetItem of
// the instance record, whatever the history's length, for a running
// instance with a custom status and for ended ones with their output or
// failure; only an ended execution whose result exceeds the record's copy
// reads its history.
func TestClientStatusIsOneRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Meter: meter})
	client := durable.NewClient(p)
	failure := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "out of stock"}
	large := strings.Repeat("a large output ", 2000)

	for _, events := range []int{3, 1000} {
		for _, c := range []struct {
			name string
			end  provider.EventKind
			want durable.Status
		}{
			{"running", nil, durable.Status{State: durable.StateRunning}},
			{"completed", provider.OrchestrationCompleted{Output: `"done"`}, durable.Status{State: durable.StateCompleted, Output: `"done"`}},
			{"failed", provider.OrchestrationFailed{Details: failure}, durable.Status{State: durable.StateFailed, Failure: failure}},
		} {
			inst := fmt.Sprintf("status-%s-%d", c.name, events)
			custom := "step " + inst
			writeHistory(ctx, t, p, inst, events, custom, c.end)
			meter.Reset()
			got, err := client.Status(ctx, inst)
			must(t, err, "Status")
			u := meter.Reset()
			c.want.Instance, c.want.ExecutionID, c.want.CustomStatusVersion = inst, 1, 1
			gotCustom := got.CustomStatus
			got.CustomStatus = nil
			if !reflect.DeepEqual(*got, c.want) || gotCustom == nil || *gotCustom != custom {
				t.Errorf("%s: Status = %+v with custom status %v; want %+v with %q", inst, *got, gotCustom, c.want, custom)
			}
			if u.Total() != 1 || u.Requests["GetItem"] != 1 {
				t.Errorf("%s (%d events): Status made %v; want one GetItem", inst, events, u.Requests)
			}
		}
	}

	// An output beyond the record's copy is read from the history.
	writeHistory(ctx, t, p, "status-large", 3, "large", provider.OrchestrationCompleted{Output: large})
	meter.Reset()
	got, err := client.Status(ctx, "status-large")
	must(t, err, "Status of an instance with a large output")
	if u := meter.Reset(); got.State != durable.StateCompleted || got.Output != large || u.Requests["Query"] == 0 {
		t.Errorf("large output: state %v, output of %d bytes (want %d), requests %v; want the history read", got.State, len(got.Output), len(large), u.Requests)
	}
}

// writeHistory starts inst and gives it a history of events events in
// turns of at most 100, the first setting custom status, the last ending
// it with end unless end is nil.
func writeHistory(ctx context.Context, t *testing.T, p provider.Provider, inst string, events int, custom string, end provider.EventKind) {
	t.Helper()
	item := startAndFetch(ctx, t, p, inst)
	delta := []provider.Event{started(inst), ev(2, inst, provider.CustomStatusUpdated{Status: &custom})}
	for id := uint64(3); id <= uint64(events); id++ {
		if len(delta) == 100 {
			must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: meta()}), "ack")
			must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "more", Data: "{}"}, 0), "enqueue")
			next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
			must(t, err, "fetch")
			item, delta = next, nil
		}
		delta = append(delta, ev(id, inst, provider.TimerCreated{FireAtMs: 1}))
	}
	m := meta()
	if end != nil {
		delta = append(delta, ev(uint64(events)+1, inst, end))
		m.Status, m.Output = provider.StatusCompleted, ptr("")
		if c, ok := end.(provider.OrchestrationCompleted); ok {
			m.Output = &c.Output
		} else {
			m.Status = provider.StatusFailed
		}
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: m}), "ack")
}
