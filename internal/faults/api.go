package faults

import (
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/queues"
)

// DynamoDB is the part of the DynamoDB client the provider calls,
// [dynamo.API]; the SDK's [dynamodb.Client] satisfies it.
type DynamoDB = dynamo.API

// SQS is the part of the SQS client the wake-up signals use, [queues.API];
// the SDK's [sqs.Client] satisfies it.
type SQS = queues.API

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
	// OpScan is DynamoDB's Scan.
	OpScan = "Scan"
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
	OpScan:               serviceDynamoDB,
	OpTransactWriteItems: serviceDynamoDB,
	OpBatchWriteItem:     serviceDynamoDB,
	OpSendMessageBatch:   serviceSQS,
	OpReceiveMessage:     serviceSQS,
	OpDeleteMessageBatch: serviceSQS,
}
