package tables_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/tables"
)

// ExampleEnsure makes sure the table exists with the expected schema before a
// service starts, creating it on first use. It needs AWS credentials and a
// reachable DynamoDB API, so it is compiled but not run.
func ExampleEnsure() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)

	err = tables.Ensure(ctx, client, "duradyn", func(o *tables.CreateOptions) {
		o.DeletionProtection = true
		o.Tags = map[string]string{"app": "duradyn"}
	})
	var mismatch *tables.MismatchError
	switch {
	case errors.As(err, &mismatch):
		// The table exists but has another shape; Ensure changed nothing.
		for _, d := range mismatch.Differences {
			fmt.Println("table", mismatch.Table, "differs:", d)
		}
		log.Fatal("fix the table, then restart")
	case err != nil:
		log.Fatal(err)
	}
}
