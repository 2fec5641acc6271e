package dynamo_test

import (
	"context"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/provider"
)

// ExampleNew connects to a table and queues provisioned by the Terraform
// module (its outputs table_name, orchestrator_queue_url and
// worker_queue_url) and starts an orchestration. It needs AWS credentials,
// so it is compiled but not run.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	p, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = "duradyn"
		o.OrchestratorQueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-orchestrator"
		o.WorkerQueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-worker"
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	err = p.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{
		Instance: "order-1", Orchestration: "ProcessOrder", Input: "{}", ExecutionID: 1,
	}, 0)
	if err != nil {
		log.Fatal(err)
	}
	// A dispatcher: wait up to 20 s for a turn.
	item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 20*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	if item != nil {
		log.Printf("turn of %s with %d messages", item.Instance, len(item.Messages))
	}
}

// ExampleNewFromEnv builds a worker's provider from the environment the
// duradyn command reads (DURADYN_TABLE, the queue URLs, the endpoints, and
// the SDK's region and credentials), so that one set of exported variables
// serves both. It needs a table, so it is compiled but not run.
func ExampleNewFromEnv() {
	ctx := context.Background()
	p, err := dynamo.NewFromEnv(ctx, func(o *dynamo.Options) {
		o.RequestTimeout = 5 * time.Second // options set here win over the environment
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	log.Printf("provider %s on the table of DURADYN_TABLE", p.Name())
}
