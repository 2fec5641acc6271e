// Package capacity asks DynamoDB requests to report the capacity units
// they consume and sums them, for the provider's metrics and test meters.
package capacity

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Ask makes a request report its consumed capacity (TOTAL, at no cost)
// unless it says otherwise.
func Ask(params any) {
	set := func(rc *types.ReturnConsumedCapacity) {
		if *rc == "" {
			*rc = types.ReturnConsumedCapacityTotal
		}
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.BatchGetItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.PutItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.UpdateItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.DeleteItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.QueryInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.ScanInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.TransactWriteItemsInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.BatchWriteItemInput:
		set(&in.ReturnConsumedCapacity)
	}
}

// Consumed sums the capacity units a DynamoDB output reports.
func Consumed(result any) float64 {
	one := func(c *types.ConsumedCapacity) float64 {
		if c == nil || c.CapacityUnits == nil {
			return 0
		}
		return *c.CapacityUnits
	}
	many := func(cs []types.ConsumedCapacity) float64 {
		total := 0.0
		for i := range cs {
			total += one(&cs[i])
		}
		return total
	}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.TransactWriteItemsOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		return many(out.ConsumedCapacity)
	}
	return 0
}
