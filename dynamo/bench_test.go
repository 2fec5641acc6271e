package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// The benchmarks below measure what the hot path costs on DynamoDB, per
// operation: besides the time against the emulator (which says nothing about
// DynamoDB's latency), each reports
//
//   - requests/op: DynamoDB requests (the budgets of docs/design.md §5);
//   - capacity/op: consumed read and write capacity units, as the service
//     reports them with ReturnConsumedCapacity TOTAL;
//   - <SDK operation>/op: the requests of each SDK operation (Query/op,
//     PutItem/op, TransactWriteItems/op, ...).
//
// Capacity is what the endpoint reports, not computed here. DynamoDB Local,
// the embedded emulator, reports it for single-item writes and reads as
// DynamoDB bills them (index writes included), but under-reports
// TransactWriteItems: it does not add up the transaction's actions (ten
// puts of 1- and 3-unit items come back as 8 units, where DynamoDB bills
// twice the sum, 40). capacity/op of the acks and the round trip is
// therefore a floor against it; run against DynamoDB itself
// (DURADYN_DYNAMODB_ENDPOINT and DURADYN_SQS_ENDPOINT) for billing
// figures.
//
// Every iteration works on a fresh instance. What an operation needs first
// (a queued start, a held lock, a locked activity) is prepared with the
// timer stopped and its requests not counted; so is clean-up that keeps the
// next iteration's signals unambiguous. The provider has no SQS queues: a
// commit's wake-up signal reaches the fetch through the process, so fetches
// are the signalled kind (no sweep of the ready index) and SQS requests,
// which are not DynamoDB's, do not blur the counts. Run them with
// `make bench` (20 iterations each).

const (
	benchOrchestration = "ProcessOrder"
	benchVersion       = "1.0.0"
	benchRuntime       = "0.1.29"
	benchActivity      = "ChargeCard"
	benchLock          = 30 * time.Second
	// benchActivityID is the event id of the ActivityScheduled event (the
	// OrchestrationStarted is event 1).
	benchActivityID uint64 = 2
)

// benchEnv is one benchmark's provider on a fresh table, its meter, and the
// usage counted for the measured operations.
type benchEnv struct {
	b        *testing.B
	ctx      context.Context
	p        *dynamo.Provider
	meter    *dynamotest.Meter
	requests map[string]int
	capacity float64
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(b, dynamotest.Config{Meter: meter})
	return &benchEnv{b: b, ctx: b.Context(), p: p, meter: meter, requests: map[string]int{}}
}

// run times measure once per iteration on a fresh instance id. prepare and
// settle, when not nil, run before and after it with the timer stopped and
// their requests not counted. It then reports the metrics.
func (e *benchEnv) run(prepare, measure, settle func(instance string)) {
	b := e.b
	for i := 0; b.Loop(); i++ {
		instance := fmt.Sprintf("order-%06d", i)
		b.StopTimer()
		if prepare != nil {
			prepare(instance)
		}
		e.meter.Reset()
		b.StartTimer()
		measure(instance)
		b.StopTimer()
		e.add(e.meter.Reset())
		if settle != nil {
			settle(instance)
		}
		b.StartTimer()
	}
	e.report()
}

// add counts u as usage of the measured operations.
func (e *benchEnv) add(u dynamotest.Usage) {
	for op, c := range u.Requests {
		e.requests[op] += c
	}
	e.capacity += u.TotalCapacity()
}

// report divides the counted usage by the iterations.
func (e *benchEnv) report() {
	n := float64(e.b.N)
	if n == 0 {
		return
	}
	total := 0
	for op, c := range e.requests {
		total += c
		e.b.ReportMetric(float64(c)/n, op+"/op")
	}
	e.b.ReportMetric(float64(total)/n, "requests/op")
	e.b.ReportMetric(e.capacity/n, "capacity/op")
}

// benchEvent is a history event of the first execution of instance, as the
// runtime writes it.
func benchEvent(instance string, id uint64, source *uint64, kind provider.EventKind) provider.Event {
	return provider.Event{
		EventID:         id,
		SourceEventID:   source,
		InstanceID:      instance,
		ExecutionID:     provider.InitialExecutionID,
		TimestampMs:     uint64(time.Now().UnixMilli()),
		DuroxideVersion: benchRuntime,
		Kind:            kind,
	}
}

// benchStart is the message that starts instance.
func benchStart(instance string) provider.StartOrchestrationItem {
	version := benchVersion
	return provider.StartOrchestrationItem{
		Instance:      instance,
		Orchestration: benchOrchestration,
		Input:         `{"order":"` + instance + `","amount":42}`,
		Version:       &version,
		ExecutionID:   provider.InitialExecutionID,
	}
}

// benchActivityItem is the activity the first turn of instance schedules.
func benchActivityItem(instance string) provider.ActivityExecuteItem {
	return provider.ActivityExecuteItem{
		Instance:    instance,
		ExecutionID: provider.InitialExecutionID,
		ID:          benchActivityID,
		Name:        benchActivity,
		Input:       `{"amount":42}`,
	}
}

// benchScheduleTurn is the first turn of instance: started, one activity
// scheduled, the instance running.
func benchScheduleTurn(instance string) provider.TurnCommit {
	start := benchStart(instance)
	act := benchActivityItem(instance)
	pinned, err := provider.ParseSemVer(benchRuntime)
	if err != nil {
		panic(fmt.Sprintf("benchmark runtime version: %v", err))
	}
	return provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			benchEvent(instance, provider.InitialEventID, nil, provider.OrchestrationStarted{
				Name: benchOrchestration, Version: benchVersion, Input: start.Input,
			}),
			benchEvent(instance, benchActivityID, nil, provider.ActivityScheduled{Name: act.Name, Input: act.Input}),
		},
		WorkerItems: []provider.ActivityExecuteItem{act},
		Metadata: provider.ExecutionMetadata{
			Status:                provider.StatusRunning,
			OrchestrationName:     benchOrchestration,
			OrchestrationVersion:  benchVersion,
			PinnedDuroxideVersion: &pinned,
		},
	}
}

// benchCompletion is the worker's result of instance's activity.
func benchCompletion(instance string) provider.ActivityCompletedItem {
	return provider.ActivityCompletedItem{
		Instance: instance, ExecutionID: provider.InitialExecutionID, ID: benchActivityID, Result: `{"charged":true}`,
	}
}

// benchCompleteTurn is the second turn of instance: the activity's result
// recorded and the orchestration completed.
func benchCompleteTurn(instance string) provider.TurnCommit {
	source := benchActivityID
	output := `{"status":"paid"}`
	return provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			benchEvent(instance, benchActivityID+1, &source, provider.ActivityCompleted{Result: benchCompletion(instance).Result}),
			benchEvent(instance, benchActivityID+2, nil, provider.OrchestrationCompleted{Output: output}),
		},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: &output},
	}
}

// enqueueStart queues the start of instance.
func (e *benchEnv) enqueueStart(instance string) {
	e.b.Helper()
	if err := e.p.EnqueueForOrchestrator(e.ctx, benchStart(instance), 0); err != nil {
		e.b.Fatalf("EnqueueForOrchestrator(%s): %v", instance, err)
	}
}

// fetchOrch fetches the signalled turn of instance without waiting.
func (e *benchEnv) fetchOrch(instance string) *provider.OrchestrationItem {
	e.b.Helper()
	item, err := e.p.FetchOrchestrationItem(e.ctx, benchLock, 0, nil)
	if err != nil {
		e.b.Fatalf("FetchOrchestrationItem: %v", err)
	}
	if item == nil || item.Instance != instance {
		e.b.Fatalf("FetchOrchestrationItem: got %+v, want a turn of %q", item, instance)
	}
	return item
}

// ackOrch commits a turn.
func (e *benchEnv) ackOrch(token string, commit provider.TurnCommit) {
	e.b.Helper()
	if err := e.p.AckOrchestrationItem(e.ctx, token, commit); err != nil {
		e.b.Fatalf("AckOrchestrationItem: %v", err)
	}
}

// fetchWork fetches the signalled activity of instance without waiting.
func (e *benchEnv) fetchWork(instance string) *provider.LockedWorkItem {
	e.b.Helper()
	work, err := e.p.FetchWorkItem(e.ctx, benchLock, 0, nil, provider.DefaultOnlyTags())
	if err != nil {
		e.b.Fatalf("FetchWorkItem: %v", err)
	}
	if work == nil || work.Item.Instance != instance {
		e.b.Fatalf("FetchWorkItem: got %+v, want the activity of %q", work, instance)
	}
	return work
}

// ackWork finishes a locked activity; completion nil drops it.
func (e *benchEnv) ackWork(token string, completion provider.WorkItem) {
	e.b.Helper()
	if err := e.p.AckWorkItem(e.ctx, token, completion); err != nil {
		e.b.Fatalf("AckWorkItem: %v", err)
	}
}

// scheduled starts instance and commits its first turn: its activity is
// queued and signalled.
func (e *benchEnv) scheduled(instance string) {
	e.b.Helper()
	e.enqueueStart(instance)
	e.ackOrch(e.fetchOrch(instance).LockToken, benchScheduleTurn(instance))
}

// completeInstance fetches the turn of instance that the activity's result
// woke and completes the orchestration.
func (e *benchEnv) completeInstance(instance string) {
	e.b.Helper()
	e.ackOrch(e.fetchOrch(instance).LockToken, benchCompleteTurn(instance))
}

// BenchmarkEnqueueForOrchestrator measures queueing a start message
// (design: one PutItem).
func BenchmarkEnqueueForOrchestrator(b *testing.B) {
	e := newBenchEnv(b)
	e.run(nil, e.enqueueStart, nil)
}

// BenchmarkFetchOrchestrationItem measures a signalled fetch of a queued
// start with a poll timeout of 0 (design: Query of the control rows,
// conditional PutItem of the lock row, Query of the history: 3).
func BenchmarkFetchOrchestrationItem(b *testing.B) {
	e := newBenchEnv(b)
	e.run(e.enqueueStart, func(instance string) { e.fetchOrch(instance) }, nil)
}

// BenchmarkAckOrchestrationItem measures committing a first turn that
// records the start and schedules one activity, fetched by the same
// provider (design: one TransactWriteItems).
func BenchmarkAckOrchestrationItem(b *testing.B) {
	e := newBenchEnv(b)
	var token string
	e.run(func(instance string) {
		e.enqueueStart(instance)
		token = e.fetchOrch(instance).LockToken
	}, func(instance string) {
		e.ackOrch(token, benchScheduleTurn(instance))
	}, nil)
}

// BenchmarkRenewOrchestrationItemLock measures extending a held instance
// lock (design: one UpdateItem).
func BenchmarkRenewOrchestrationItemLock(b *testing.B) {
	e := newBenchEnv(b)
	var token string
	e.run(func(instance string) {
		e.enqueueStart(instance)
		token = e.fetchOrch(instance).LockToken
	}, func(string) {
		if err := e.p.RenewOrchestrationItemLock(e.ctx, token, benchLock); err != nil {
			b.Fatalf("RenewOrchestrationItemLock: %v", err)
		}
	}, nil)
}

// BenchmarkFetchWorkItem measures a signalled fetch of an activity that a
// turn scheduled, with a poll timeout of 0 (design: Query of one shard of
// the ready index, conditional UpdateItem of the row: 2).
func BenchmarkFetchWorkItem(b *testing.B) {
	e := newBenchEnv(b)
	var work *provider.LockedWorkItem
	e.run(e.scheduled, func(instance string) {
		work = e.fetchWork(instance)
	}, func(string) {
		e.ackWork(work.LockToken, nil)
	})
}

// BenchmarkAckWorkItem measures finishing an activity with its
// ActivityCompletedItem (design: one TransactWriteItems deleting the
// worker row and queueing the completion).
func BenchmarkAckWorkItem(b *testing.B) {
	e := newBenchEnv(b)
	var token string
	e.run(func(instance string) {
		e.scheduled(instance)
		token = e.fetchWork(instance).LockToken
	}, func(instance string) {
		e.ackWork(token, benchCompletion(instance))
	}, e.completeInstance)
}

// BenchmarkRenewWorkItemLock measures extending the lock of an activity
// without a session (design: one UpdateItem).
func BenchmarkRenewWorkItemLock(b *testing.B) {
	e := newBenchEnv(b)
	var token string
	e.run(func(instance string) {
		e.scheduled(instance)
		token = e.fetchWork(instance).LockToken
	}, func(string) {
		if err := e.p.RenewWorkItemLock(e.ctx, token, benchLock); err != nil {
			b.Fatalf("RenewWorkItemLock: %v", err)
		}
	}, func(string) {
		e.ackWork(token, nil)
	})
}

// BenchmarkRead measures reading the history (four events) of a completed
// instance (design: 1–2 requests: the latest execution, then its history).
func BenchmarkRead(b *testing.B) {
	e := newBenchEnv(b)
	e.run(func(instance string) {
		e.scheduled(instance)
		e.ackWork(e.fetchWork(instance).LockToken, benchCompletion(instance))
		e.completeInstance(instance)
	}, func(instance string) {
		history, err := e.p.Read(e.ctx, instance)
		if err != nil {
			b.Fatalf("Read(%s): %v", instance, err)
		}
		if len(history) != 4 {
			b.Fatalf("Read(%s): %d events, want 4", instance, len(history))
		}
	}, nil)
}

// BenchmarkActivityRoundTrip measures one orchestration that calls one
// activity, from its queued start to its completion: the first turn
// (fetch, ack scheduling the activity), the worker (fetch, ack with the
// result) and the completion turn (fetch, ack completing the
// orchestration). Design: 3+1 + 2+1 + 3+1 = 11 requests per round trip.
func BenchmarkActivityRoundTrip(b *testing.B) {
	e := newBenchEnv(b)
	e.run(e.enqueueStart, func(instance string) {
		e.ackOrch(e.fetchOrch(instance).LockToken, benchScheduleTurn(instance))
		e.ackWork(e.fetchWork(instance).LockToken, benchCompletion(instance))
		e.completeInstance(instance)
	}, nil)
}

// BenchmarkKVValue measures a client's read of one key of an instance whose
// store holds 40 keys of a KB (design: 1 request, a consistent GetItem of
// the key's row: 1 RRU whatever the store holds).
func BenchmarkKVValue(b *testing.B) {
	e := newBenchEnv(b)
	value := strings.Repeat("v", 1000)
	e.run(func(instance string) {
		e.enqueueStart(instance)
		commit := benchScheduleTurn(instance)
		commit.HistoryDelta = commit.HistoryDelta[:1] // OrchestrationStarted alone
		for i := range 40 {
			commit.HistoryDelta = append(commit.HistoryDelta, benchEvent(instance, uint64(2+i), nil,
				provider.KeyValueSet{Key: fmt.Sprintf("key-%02d", i), Value: value, LastUpdatedAtMs: 1}))
		}
		e.ackOrch(e.fetchOrch(instance).LockToken, commit)
	}, func(instance string) {
		got, ok, err := e.p.KVValue(e.ctx, instance, "key-07")
		if err != nil || !ok || got != value {
			b.Fatalf("KVValue(%s, key-07) = %d bytes, %v, %v; want the value", instance, len(got), ok, err)
		}
	}, nil)
}
