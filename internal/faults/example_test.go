package faults_test

import (
	"context"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/internal/faults"
)

// Example wires one injector into two providers of one table, as two
// processes of a deployment, and makes their traffic unreliable: a tenth
// of the writes throttled, some transactions landing without their
// callers hearing back, the ready index lagging by up to two seconds,
// duplicate wake-up signals and real conflicts between the two. The
// injector is off while the test sets up and checks. It needs a table and
// queues, so it is compiled but not run.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	clock := faults.NewFakeClock(time.Now())
	in := faults.New(42, func(o *faults.Options) { o.Now = clock.Now })
	in.SetEnabled(false)
	in.Add(faults.Rule{Ops: []string{faults.OpPutItem, faults.OpUpdateItem}, Rate: 0.1, Fault: faults.Throttle("")})
	in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Rate: 0.05, Fault: faults.LostResponse()})
	in.Add(faults.Rule{Ops: []string{faults.OpReceiveMessage}, Rate: 0.2, Fault: faults.Duplicate()})
	in.SetIndexLag(0, 2*time.Second, "ready")
	in.SetRealConflicts(true)

	var providers []*dynamo.Provider
	for range 2 {
		p, err := dynamo.New(cfg, func(o *dynamo.Options) {
			o.TableName = "duradyn-test"
			o.OrchestratorQueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-test-orchestrator"
			o.WorkerQueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-test-worker"
			o.Now = clock.Now
			o.Client = in.DynamoDB(dynamodb.NewFromConfig(cfg))
			o.SQSClient = in.SQS(sqs.NewFromConfig(cfg))
		})
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		providers = append(providers, p)
	}

	in.SetEnabled(true)
	// ... run orchestrations on the providers, advancing clock for timers ...
	in.SetEnabled(false)
	log.Printf("%d providers under faults: %v", len(providers), in.Stats())
}
