package dynamo_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
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

// onEmptyGet is a client that calls hook once, after the first GetItem
// that finds no item, before returning its answer.
type onEmptyGet struct {
	dynamo.API
	mu   sync.Mutex
	hook func() // nil until armed, and once called
}

func (c *onEmptyGet) arm(hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = hook
}

func (c *onEmptyGet) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.API.GetItem(ctx, in, optFns...)
	if err == nil && out.Item == nil {
		c.mu.Lock()
		hook := c.hook
		c.hook = nil
		c.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	return out, err
}

// TestInstanceStatusWhenTheFirstTurnCommitsMeanwhile: the first turn of an
// instance commits between InstanceStatus's read of the record (none yet)
// and its look for a queued start; the status is read again, output
// included, instead of being taken from the start's look.
func TestInstanceStatusWhenTheFirstTurnCommitsMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var client *onEmptyGet
	p, _ := dynamotest.New(t, dynamotest.Config{Options: func(o *dynamo.Options) {
		client = &onEmptyGet{API: o.Client}
		o.Client = client
	}})
	const inst = "first-turn-meanwhile"
	item := startAndFetch(ctx, t, p, inst)
	m := meta()
	m.Status, m.Output = provider.StatusCompleted, ptr("out")
	committed := false
	client.arm(func() {
		committed = true
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
			ExecutionID: 1, HistoryDelta: []provider.Event{started(inst), ev(2, inst, provider.OrchestrationCompleted{Output: "out"})}, Metadata: m,
		}), "ack")
	})
	st, err := p.InstanceStatus(ctx, inst)
	must(t, err, "InstanceStatus")
	if !committed {
		t.Fatal("the turn was not committed between the reads: the test did not test the race")
	}
	if st.Status != provider.StatusCompleted || st.Output == nil || *st.Output != "out" {
		t.Fatalf("status %+v (output %v); want Completed with output \"out\"", st, st.Output)
	}
}
