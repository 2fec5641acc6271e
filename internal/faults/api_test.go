package faults_test

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/internal/faults"
)

// The SDK's clients satisfy the injector's interfaces (the provider's own),
// so that wrapped clients go where the provider wants its clients.
var (
	_ faults.DynamoDB = (*dynamodb.Client)(nil)
	_ faults.SQS      = (*sqs.Client)(nil)
)
