package faults_test

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dynoxide/dynoxide/dynamo"
	"github.com/dynoxide/dynoxide/faults"
	"github.com/dynoxide/dynoxide/queues"
)

// The SDK's clients satisfy the injector's interfaces, which have the same
// method sets as the provider's, so that wrapped clients go where the
// provider wants its clients.
var (
	_ faults.DynamoDB = (*dynamodb.Client)(nil)
	_ dynamo.API      = faults.DynamoDB(nil)
	_ faults.DynamoDB = dynamo.API(nil)
	_ faults.SQS      = (*sqs.Client)(nil)
	_ queues.API      = faults.SQS(nil)
	_ faults.SQS      = queues.API(nil)
)
