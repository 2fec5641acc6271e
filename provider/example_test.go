package provider_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// One orchestration turn and one activity through the contract, as a
// runtime drives them: a turn is fetched under a lock and committed
// atomically with the history it appends and the work it schedules; the
// activity is fetched under a lock of its own and acked with its
// completion, which becomes a message of the orchestration's next turn.
// Any provider behaves the same; the in-memory one needs no set-up.
func Example() {
	ctx := context.Background()
	var p provider.Provider = memprovider.New()
	event := func(id uint64, kind provider.EventKind) provider.Event {
		return provider.Event{EventID: id, InstanceID: "order-1", ExecutionID: 1, DuroxideVersion: "0.1.29", Kind: kind}
	}
	version := "1.0.0"
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}

	check(p.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{
		Instance: "order-1", Orchestration: "Order", Version: &version, Input: `"book"`, ExecutionID: 1,
	}, 0))
	turn, err := p.FetchOrchestrationItem(ctx, 30*time.Second, time.Second, nil)
	check(err)
	fmt.Println("turn 1 of", turn.Instance, "with", len(turn.Messages), "message")
	check(p.AckOrchestrationItem(ctx, turn.LockToken, provider.TurnCommit{
		ExecutionID: 1,
		HistoryDelta: []provider.Event{
			event(1, provider.OrchestrationStarted{Name: "Order", Version: version, Input: `"book"`}),
			event(2, provider.ActivityScheduled{Name: "Reserve", Input: `"book"`}),
		},
		WorkerItems: []provider.ActivityExecuteItem{{Instance: "order-1", ExecutionID: 1, ID: 2, Name: "Reserve", Input: `"book"`}},
		Metadata:    provider.ExecutionMetadata{OrchestrationName: "Order", OrchestrationVersion: version},
	}))

	work, err := p.FetchWorkItem(ctx, 30*time.Second, time.Second, nil, provider.TagFilter{})
	check(err)
	fmt.Println("activity", work.Item.Name, "attempt", work.AttemptCount)
	check(p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{Instance: "order-1", ExecutionID: 1, ID: 2, Result: `"reserved"`}))

	turn, err = p.FetchOrchestrationItem(ctx, 30*time.Second, time.Second, nil)
	check(err)
	fmt.Printf("turn 2 with %d events of history and a %T\n", len(turn.History), turn.Messages[0])
	// Output:
	// turn 1 of order-1 with 1 message
	// activity Reserve attempt 1
	// turn 2 with 2 events of history and a provider.ActivityCompletedItem
}
