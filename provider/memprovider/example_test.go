package memprovider_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// ExampleNew enqueues the start of an orchestration and fetches the turn a
// dispatcher would run.
func ExampleNew() {
	ctx := context.Background()
	p := memprovider.New()

	version := "1.0.0"
	err := p.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{
		Instance:      "order-1",
		Orchestration: "ProcessOrder",
		Input:         `{"id":1}`,
		Version:       &version,
		ExecutionID:   provider.InitialExecutionID,
	}, 0)
	if err != nil {
		fmt.Println("enqueue:", err)
		return
	}

	item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
	if err != nil || item == nil {
		fmt.Println("fetch:", item, err)
		return
	}
	fmt.Println(item.Instance, item.OrchestrationName, item.Version, item.ExecutionID)
	fmt.Println(item.Messages[0].Kind(), "attempt", item.AttemptCount)
	// Output:
	// order-1 ProcessOrder 1.0.0 1
	// StartOrchestration attempt 1
}
