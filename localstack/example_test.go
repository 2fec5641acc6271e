package localstack_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/localstack"
)

// ExampleStart starts (or finds) DynamoDB and SQS emulators outside of a
// test, lists the tables, and stops whatever was started.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	em, err := localstack.Start(ctx, func(o *localstack.Options) {
		o.Logger = slog.Default() // progress: installing, starting, falling back
	})
	if err != nil {
		fmt.Println("no emulator:", err)
		return
	}
	defer func() {
		if err := em.Stop(ctx); err != nil {
			fmt.Println("stop:", err)
		}
	}()

	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := em.DynamoDB(cfg).ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s emulator: DynamoDB at %s has %d tables; SQS at %s\n",
		em.Source, em.DynamoDBURL, len(out.TableNames), em.SQSURL)
}
