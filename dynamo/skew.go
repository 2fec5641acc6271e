package dynamo

import (
	"context"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// DefaultClockSkewWarning is the default of [Options.ClockSkewWarning].
const DefaultClockSkewWarning = time.Second

// clockWatch wraps the DynamoDB client and measures how far the provider's
// clock (Options.Now) is from DynamoDB's, from the Date header of each
// response. The header has whole seconds, so each response bounds the skew
// to an interval about a second wide plus the round trip; the intervals of
// successive responses are intersected, which narrows the estimate to tens
// of milliseconds after a few dozen requests. An empty intersection means
// the skew changed (the clock was stepped): the estimate starts again.
type clockWatch struct {
	API
	now  func() time.Time
	logf func(string, ...any)
	warn time.Duration

	mu sync.Mutex
	// lo and hi bound local − server time; valid once samples > 0.
	lo, hi  time.Duration
	samples int
	warned  bool
}

// observe records one response: the local clock read before sending and
// after receiving it, and its metadata.
func (c *clockWatch) observe(sent, received time.Time, md middleware.Metadata) {
	server, ok := awsmiddleware.GetServerTime(md)
	if !ok {
		return
	}
	lo, hi := sent.Sub(server)-time.Second, received.Sub(server)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples > 0 && lo <= c.hi && hi >= c.lo {
		lo, hi = max(lo, c.lo), min(hi, c.hi)
	}
	c.lo, c.hi = lo, hi
	c.samples++
	beyond := lo > c.warn || hi < -c.warn
	if beyond && !c.warned {
		c.logf("dynamo: this process's clock is %v from DynamoDB's (± %v); leases, visibility times and timers assume under %v of skew between processes (docs/design.md §9)",
			(lo+hi)/2, (hi-lo)/2, c.warn)
	}
	c.warned = beyond
}

// estimate returns the skew's best estimate and its uncertainty.
func (c *clockWatch) estimate() (skew, uncertainty time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == 0 {
		return 0, 0, false
	}
	return (c.lo + c.hi) / 2, (c.hi - c.lo) / 2, true
}

// ClockSkew returns how far this process's clock (Options.Now) runs ahead
// of DynamoDB's (negative: behind), measured from the Date headers of the
// responses seen so far, and the half-width of the interval the skew is
// known to lie in. ok is false before the first response that carried a
// Date header. A skew beyond [Options.ClockSkewWarning] is logged once
// through Options.Logf each time it is first seen.
func (p *Provider) ClockSkew() (skew, uncertainty time.Duration, ok bool) {
	return p.clock.estimate()
}

func (c *clockWatch) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	sent := c.now()
	out, err := c.API.GetItem(ctx, in, optFns...)
	if err == nil {
		c.observe(sent, c.now(), out.ResultMetadata)
	}
	return out, err
}

func (c *clockWatch) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	sent := c.now()
	out, err := c.API.PutItem(ctx, in, optFns...)
	if err == nil {
		c.observe(sent, c.now(), out.ResultMetadata)
	}
	return out, err
}

func (c *clockWatch) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	sent := c.now()
	out, err := c.API.UpdateItem(ctx, in, optFns...)
	if err == nil {
		c.observe(sent, c.now(), out.ResultMetadata)
	}
	return out, err
}

func (c *clockWatch) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	sent := c.now()
	out, err := c.API.Scan(ctx, in, optFns...)
	if err == nil {
		c.observe(sent, c.now(), out.ResultMetadata)
	}
	return out, err
}

func (c *clockWatch) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	sent := c.now()
	out, err := c.API.Query(ctx, in, optFns...)
	if err == nil {
		c.observe(sent, c.now(), out.ResultMetadata)
	}
	return out, err
}
