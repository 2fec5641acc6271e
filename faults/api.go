package faults

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DynamoDB is the part of the DynamoDB client the provider calls, with the
// same method set as the provider's own client interface, so that values
// convert between the two. The SDK's [dynamodb.Client] satisfies it.
type DynamoDB interface {
	// GetItem is [dynamodb.Client.GetItem].
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	// PutItem is [dynamodb.Client.PutItem].
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	// UpdateItem is [dynamodb.Client.UpdateItem].
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	// DeleteItem is [dynamodb.Client.DeleteItem].
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// Query is [dynamodb.Client.Query].
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	// TransactWriteItems is [dynamodb.Client.TransactWriteItems].
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// BatchWriteItem is [dynamodb.Client.BatchWriteItem].
	BatchWriteItem(ctx context.Context, params *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// SQS is the part of the SQS client the wake-up signals use, with the same
// method set as their client interface. The SDK's [sqs.Client] satisfies it.
type SQS interface {
	// SendMessageBatch is [sqs.Client.SendMessageBatch].
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	// ReceiveMessage is [sqs.Client.ReceiveMessage].
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	// DeleteMessageBatch is [sqs.Client.DeleteMessageBatch].
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// Operation names, as the SDK names them: the values [Rule.Ops] and
// [Request.Op] hold and the keys of [Stats.Ops].
const (
	// OpGetItem is DynamoDB's GetItem.
	OpGetItem = "GetItem"
	// OpPutItem is DynamoDB's PutItem.
	OpPutItem = "PutItem"
	// OpUpdateItem is DynamoDB's UpdateItem.
	OpUpdateItem = "UpdateItem"
	// OpDeleteItem is DynamoDB's DeleteItem.
	OpDeleteItem = "DeleteItem"
	// OpQuery is DynamoDB's Query.
	OpQuery = "Query"
	// OpTransactWriteItems is DynamoDB's TransactWriteItems.
	OpTransactWriteItems = "TransactWriteItems"
	// OpBatchWriteItem is DynamoDB's BatchWriteItem.
	OpBatchWriteItem = "BatchWriteItem"
	// OpSendMessageBatch is SQS's SendMessageBatch.
	OpSendMessageBatch = "SendMessageBatch"
	// OpReceiveMessage is SQS's ReceiveMessage.
	OpReceiveMessage = "ReceiveMessage"
	// OpDeleteMessageBatch is SQS's DeleteMessageBatch.
	OpDeleteMessageBatch = "DeleteMessageBatch"
)

// Service IDs, as the SDK puts them in [smithy.OperationError].
const (
	serviceDynamoDB = "DynamoDB"
	serviceSQS      = "SQS"
)

// serviceOf maps every operation the wrappers serve to its service.
var serviceOf = map[string]string{
	OpGetItem:            serviceDynamoDB,
	OpPutItem:            serviceDynamoDB,
	OpUpdateItem:         serviceDynamoDB,
	OpDeleteItem:         serviceDynamoDB,
	OpQuery:              serviceDynamoDB,
	OpTransactWriteItems: serviceDynamoDB,
	OpBatchWriteItem:     serviceDynamoDB,
	OpSendMessageBatch:   serviceSQS,
	OpReceiveMessage:     serviceSQS,
	OpDeleteMessageBatch: serviceSQS,
}
