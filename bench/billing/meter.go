package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// ErrShadowRead is wrapped by the errors [Meter.Err] returns: a read the
// rules needed (an item image, a table description) failed, so the units of
// the request it served are missing or approximate.
var ErrShadowRead = errors.New("billing: shadow read failed")

// shadowTimeout bounds each read on the shadow client. Shadow reads outlive
// the caller's context (a request the caller cancelled after it reached
// DynamoDB still costs units), but not by much.
const shadowTimeout = 30 * time.Second

// maxErrors bounds how many shadow read failures a Meter keeps.
const maxErrors = 16

// Meter counts DynamoDB and SQS requests made through the clients it is
// installed on, and computes what they cost by DynamoDB's and SQS's billing
// rules (see the package documentation). It is safe for concurrent use: one
// Meter may serve many clients and goroutines.
type Meter struct {
	shadow *dynamodb.Client

	schemaMu sync.Mutex
	schemas  map[string]*tableSchema

	mu           sync.Mutex
	usage        Usage
	parts        Partitions           // usage by partition, [Meter.Partitions]
	tokens       map[string]time.Time // ClientRequestToken of committed transactions
	tokensPruned time.Time            // when tokens was last rid of expired ones
	errs         []error
	lost         int // errors beyond maxErrors
	// class names a written item's class (ClassifyItems); nil for none.
	class func(item map[string]types.AttributeValue) string
}

// NewMeter returns a Meter that reads what the rules need through shadow:
// an unmetered client of the same endpoint as the clients the Meter will be
// installed on (never one with the Meter installed). It reads the key and
// index schema of table with DescribeTable now, and the schema of any other
// table a metered request names on first use.
func NewMeter(ctx context.Context, shadow *dynamodb.Client, table string) (*Meter, error) {
	if shadow == nil {
		return nil, errors.New("billing: new meter: nil shadow client")
	}
	m := &Meter{shadow: shadow, schemas: map[string]*tableSchema{}}
	if _, err := m.schema(ctx, table); err != nil {
		return nil, fmt.Errorf("billing: new meter: %w", err)
	}
	return m, nil
}

// Usage returns a snapshot of what m counted since it was made.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage.clone()
}

// Err returns the failures of reads the rules needed (each wrapping
// [ErrShadowRead]), joined, or nil when there were none. A non-nil Err means
// some request's units are missing or approximate.
func (m *Meter) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := append([]error(nil), m.errs...)
	if m.lost > 0 {
		errs = append(errs, fmt.Errorf("%w: %d more failures", ErrShadowRead, m.lost))
	}
	return errors.Join(errs...)
}

func (m *Meter) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) < maxErrors {
		m.errs = append(m.errs, fmt.Errorf("%w: %w", ErrShadowRead, err))
	} else {
		m.lost++
	}
}

// DynamoDB installs the metering middleware on a DynamoDB client's options:
//
//	db := dynamodb.NewFromConfig(cfg, meter.DynamoDB)
//
// Every operation the client calls is counted once (SDK retries within one
// call are not counted again) and its request units added to the usage.
func (m *Meter) DynamoDB(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BillingMeter", m.handleDynamoDB), middleware.After)
	})
}

func (m *Meter) handleDynamoDB(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if isShadow(ctx) {
		return next.HandleInitialize(ctx, in)
	}
	op := awsmiddleware.GetOperationName(ctx)
	m.count(func(u *Usage) { addCount(&u.DynamoDB, op) })
	var c call
	switch p := in.Parameters.(type) {
	case *dynamodb.PutItemInput:
		c = m.putItem(p)
	case *dynamodb.UpdateItemInput:
		c = m.updateItem(p)
	case *dynamodb.DeleteItemInput:
		c = m.deleteItem(p)
	case *dynamodb.BatchWriteItemInput:
		c = m.batchWriteItem(p)
	case *dynamodb.TransactWriteItemsInput:
		c = m.transactWriteItems(p)
	case *dynamodb.GetItemInput:
		c = m.getItem(p)
	case *dynamodb.BatchGetItemInput:
		c = m.batchGetItem(p)
	case *dynamodb.QueryInput:
		c = m.query(p)
	case *dynamodb.ScanInput:
		c = m.scan(p)
	case *dynamodb.TransactGetItemsInput:
		c = m.transactGetItems(p)
	}
	if c.before != nil {
		c.before(ctx)
	}
	sent := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	m.count(func(u *Usage) { addTime(&u.DynamoDBTime, op, time.Since(sent)) })
	if c.after != nil {
		wru, rru := c.after(ctx, out.Result, err)
		m.count(func(u *Usage) { u.WRU += wru; u.RRU += rru })
		m.addReads(in.Parameters, rru)
	}
	return out, md, err
}

// call is how the meter handles one request: before runs before it is sent
// (to change its input and read item images), after once it returns (to
// compute its units, restore the input and strip from the output what the
// meter asked for and the caller did not). Either may be nil.
type call struct {
	before func(ctx context.Context)
	after  func(ctx context.Context, result any, err error) (wru, rru float64)
}

func (m *Meter) count(f func(*Usage)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.usage)
}

func addTime(times *map[string]time.Duration, op string, d time.Duration) {
	if *times == nil {
		*times = map[string]time.Duration{}
	}
	(*times)[op] += d
}

func addCount(counts *map[string]int, op string) {
	if *counts == nil {
		*counts = map[string]int{}
	}
	(*counts)[op]++
}

// shadowKey marks the contexts of the meter's own reads, so that a meter
// installed on the shadow client by mistake does not count them.
type shadowKey struct{}

func isShadow(ctx context.Context) bool { return ctx.Value(shadowKey{}) != nil }

// shadowContext returns the context for a shadow read made on behalf of a
// request with context ctx: its values without its cancellation, bounded by
// shadowTimeout.
func shadowContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(context.WithoutCancel(ctx), shadowKey{}, true)
	return context.WithTimeout(ctx, shadowTimeout)
}

// schema returns the schema of the named table, describing it on first use.
func (m *Meter) schema(ctx context.Context, table string) (*tableSchema, error) {
	m.schemaMu.Lock()
	s, ok := m.schemas[table]
	m.schemaMu.Unlock()
	if ok {
		return s, nil
	}
	sctx, cancel := shadowContext(ctx)
	defer cancel()
	out, err := m.shadow.DescribeTable(sctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	s = schemaFromDescription(out.Table)
	m.schemaMu.Lock()
	defer m.schemaMu.Unlock()
	if prev, ok := m.schemas[table]; ok {
		return prev, nil
	}
	m.schemas[table] = s
	return s, nil
}

// schemaOrFail is schema for the request path: a failure is recorded and
// reported as nil.
func (m *Meter) schemaOrFail(ctx context.Context, table *string) *tableSchema {
	s, err := m.schema(ctx, deref(table))
	if err != nil {
		m.fail(err)
		return nil
	}
	return s
}
