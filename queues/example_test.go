package queues_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/queues"
)

// ExampleNew wires signals to two SQS queues: the provider notifies after
// each commit, and an idle dispatcher waits for a signal before it looks in
// DynamoDB again.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	signals, err := queues.New(sqs.NewFromConfig(cfg), func(o *queues.Options) {
		o.OrchestratorQueueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/duradyn-orchestrator"
		o.WorkerQueueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/duradyn-worker"
		o.Logger = slog.Default()
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer signals.Close()

	// Provider side, after the DynamoDB commit of a turn that started an
	// activity and a 30-second timer:
	err = signals.Notify(ctx,
		queues.Signal{Kind: queues.Worker, Shard: 3},
		queues.Signal{Kind: queues.Orchestrator, Shard: 3, Instance: "order-1", VisibleAt: time.Now().Add(30 * time.Second)},
	)
	if err != nil {
		// The work is committed; at worst it waits for a poll timeout.
		log.Printf("wake-up not sent: %v", err)
	}

	// Dispatcher side, after a DynamoDB lookup found nothing:
	sigs, err := signals.Wait(ctx, queues.Orchestrator, 20*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sig := range sigs {
		fmt.Println("look in shard", sig.Shard, "for", sig.Instance)
	}
}

// ExampleSignals_Wait shows in-process signals: without queue URLs nothing
// leaves the process, and no SQS client is needed.
func ExampleSignals_Wait() {
	signals, err := queues.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer signals.Close()

	ctx := context.Background()
	woken := make(chan []queues.Signal)
	go func() {
		sigs, _ := signals.Wait(ctx, queues.Worker, time.Minute)
		woken <- sigs
	}()
	_ = signals.Notify(ctx, queues.Signal{Kind: queues.Worker, Shard: 2})
	sigs := <-woken
	fmt.Println(len(sigs), sigs[0].Kind, sigs[0].Shard)
	fmt.Printf("%+v\n", signals.Stats())
	// Output:
	// 1 worker 2
	// {SendMessageBatchRequests:0 ReceiveMessageRequests:0 DeleteMessageBatchRequests:0 MessagesSent:0 MessagesReceived:0 MessagesFromSelf:0 SignalsDeferred:0 SignalsBeyondMaxDelay:0 SignalsDeclined:0 SignalsDeclinedTooOften:0 SignalsDropped:0 SignalsKeptLocal:0 SignalsReturned:0 Errors:0}
}
