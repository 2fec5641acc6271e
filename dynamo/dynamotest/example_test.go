package dynamotest_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// A test gets a provider on a table (and wake-up queues) of its own on the
// shared emulator, both deleted when it ends, with a meter of the requests
// it makes; another process of the same deployment is another provider of
// the same environment.
func ExampleNew() {
	testStartTakenElsewhere := func(t *testing.T) {
		meter := &dynamotest.Meter{}
		p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Meter: meter})
		other := env.NewProvider(t, dynamotest.Config{Queues: true})
		start := provider.StartOrchestrationItem{Instance: "order-1", Orchestration: "Order", Input: "{}", ExecutionID: 1}
		if err := p.EnqueueForOrchestrator(t.Context(), start, 0); err != nil {
			t.Fatal(err)
		}
		item, err := other.FetchOrchestrationItem(t.Context(), 30*time.Second, 5*time.Second, nil)
		if err != nil || item == nil {
			t.Fatalf("the other process fetched %v, %v; want order-1's first turn", item, err)
		}
		t.Logf("the enqueue made %v", meter.Usage().Requests)
	}
	_ = testStartTakenElsewhere // in a _test.go file: func TestStartTakenElsewhere(t *testing.T) { ... }
}
