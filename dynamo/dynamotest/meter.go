package dynamotest

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Meter counts DynamoDB requests per operation, and the capacity units
// they consumed, through an SDK middleware on the provider's client. It
// asks every request for its consumed capacity (ReturnConsumedCapacity
// TOTAL). A nil *Meter counts nothing. It is safe for concurrent use.
type Meter struct {
	mu       sync.Mutex
	requests map[string]int
	capacity map[string]float64
}

// Usage is a snapshot of a [Meter].
type Usage struct {
	// Requests counts calls per operation name (GetItem, Query, ...).
	Requests map[string]int
	// Capacity sums consumed read and write capacity units per operation.
	Capacity map[string]float64
}

// Total is the number of requests of all operations.
func (u Usage) Total() int {
	total := 0
	for _, c := range u.Requests {
		total += c
	}
	return total
}

// TotalCapacity is the capacity units consumed by all operations.
func (u Usage) TotalCapacity() float64 {
	total := 0.0
	for _, c := range u.Capacity {
		total += c
	}
	return total
}

// Usage returns what m counted since it was made or last reset.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Usage{Requests: maps.Clone(m.requests), Capacity: maps.Clone(m.capacity)}
}

// Reset sets every count to zero and returns what was counted.
func (m *Meter) Reset() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := Usage{Requests: m.requests, Capacity: m.capacity}
	m.requests, m.capacity = nil, nil
	return u
}

// Attach installs the meter on a DynamoDB client's options.
func (m *Meter) Attach(o *dynamodb.Options) { m.attach(o) }

func (m *Meter) attach(o *dynamodb.Options) {
	if m == nil {
		return
	}
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("DynoxideMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				m.record(awsmiddleware.GetOperationName(ctx), out.Result)
				return out, md, err
			}), middleware.After)
	})
}

func (m *Meter) record(op string, result any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.requests == nil {
		m.requests, m.capacity = map[string]int{}, map[string]float64{}
	}
	m.requests[op]++
	m.capacity[op] += consumed(result)
}

// askCapacity sets ReturnConsumedCapacity on the inputs that take it.
func askCapacity(params any) {
	total := types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = total
	}
}

// consumed sums the capacity units an output reports.
func consumed(result any) float64 {
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
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.TransactWriteItemsOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		return many(out.ConsumedCapacity)
	}
	return 0
}
