package dynamotest

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/duradyn/duradyn/dynamo/internal/capacity"
)

// Meter counts DynamoDB requests and consumed capacity per operation,
// through an SDK middleware. A nil *Meter counts nothing. It is safe for
// concurrent use.
type Meter struct {
	mu       sync.Mutex
	requests map[string]int
	capacity map[string]float64
}

// Usage is a snapshot of a [Meter].
type Usage struct {
	Requests map[string]int     // calls per operation (GetItem, Query, ...)
	Capacity map[string]float64 // capacity units consumed per operation
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
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("DuradynMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				capacity.Ask(in.Parameters)
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
	m.capacity[op] += capacity.Consumed(result)
}
