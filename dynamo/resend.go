package dynamo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Unknown outcomes (docs/design.md §7): a timeout or 5xx can hide a write
// that landed. A resend is safe by construction (same effect however often
// it lands), by a condition read as "our earlier attempt landed", or by a
// ClientRequestToken on a transaction resent unchanged (inputs kept per
// call: txCache). A cancelled transaction wrote nothing and is built anew.

// A call sends a request at most maxResends times, pausing between
// attempts from resendFirstBackoff, doubling.
const (
	maxResends         = 4
	resendFirstBackoff = 20 * time.Millisecond
)

// resend runs send until it succeeds, fails definitely (not retryable, or
// a cancelled transaction), has made maxResends attempts, or ctx ends.
// resent reports an earlier unknown outcome, whose effect may fail a condition.
func (p *Provider) resend(ctx context.Context, op string, send func() error) (resent bool, err error) {
	backoff := resendFirstBackoff
	for attempt := 1; ; attempt++ {
		err = send()
		if err == nil || cancelReasons(err) != nil || !translate(op, err).Retryable || attempt == maxResends {
			return attempt > 1, err
		}
		if sleepCtx(ctx, jitter(backoff)) != nil {
			return attempt > 1, err
		}
		backoff *= 2
	}
}

// newRequestToken returns a fresh ClientRequestToken.
func newRequestToken() string {
	var b [18]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sendFresh sends a transaction only this call resends (pendingTx), again
// after a transient cancellation, up to maxResends times.
func (p *Provider) sendFresh(ctx context.Context, op string, actions []types.TransactWriteItem) error {
	t := &pendingTx{key: newRequestToken()}
	backoff := resendFirstBackoff
	for attempt := 1; ; attempt++ {
		done, err := p.sendPending(ctx, op, t, func() *dynamodb.TransactWriteItemsInput {
			return &dynamodb.TransactWriteItemsInput{TransactItems: actions}
		})
		reasons := cancelReasons(err)
		if done || reasons == nil || classifyCancellation(reasons) != cancelTransient || attempt == maxResends {
			return err
		}
		if sleepCtx(ctx, jitter(backoff)) != nil {
			return err
		}
		backoff *= 2
	}
}

// putOnce puts one row in a transaction of its own, for its
// ClientRequestToken: a resend of a put that landed writes nothing, where a
// PutItem resent could queue again a row already consumed (docs/design.md
// §7). The row is billed twice (2 WRU a KB).
func (p *Provider) putOnce(ctx context.Context, op string, put *types.Put) error {
	return p.sendFresh(ctx, op, []types.TransactWriteItem{{Put: put}})
}

// pendingTx is a transaction a call may send more than once, each input
// built with its own token. After an unknown outcome it is only resent
// unchanged: a committed repeat is answered with success, a rebuilt one
// would fail on the lock it released. A cancellation with no unknown
// outcome before wrote nothing: the next attempt is built anew.
type pendingTx struct {
	key       string
	in        *dynamodb.TransactWriteItemsInput
	built     int
	uncertain bool
}

// input returns the input sent before, or a new one from build.
func (t *pendingTx) input(build func() *dynamodb.TransactWriteItemsInput) *dynamodb.TransactWriteItemsInput {
	if t.in == nil {
		t.in = build()
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", t.key, t.built))
		t.in.ClientRequestToken = aws.String(hex.EncodeToString(sum[:])[:36])
		t.built++
	}
	return t.in
}

// sendPending sends t's transaction, resent while its outcome is unknown
// (pendingTx). done reports that t succeeded or failed for good.
func (p *Provider) sendPending(ctx context.Context, op string, t *pendingTx, build func() *dynamodb.TransactWriteItemsInput) (done bool, err error) {
	for range maxForeignTokens {
		in := t.input(build)
		resent := false
		resent, err = p.resend(ctx, op, func() error {
			_, err := p.db.TransactWriteItems(ctx, in)
			return err
		})
		if resent {
			t.uncertain = true
		}
		var mismatch *types.IdempotentParameterMismatchException
		if !errors.As(err, &mismatch) || t.uncertain {
			break
		}
		// Another process sent this token (tokens derive from the call's
		// arguments) with other parameters; nothing was applied: try the
		// next token and let the conditions tell what that attempt did.
		t.in = nil
	}
	switch {
	case err == nil:
		return true, nil
	case cancelReasons(err) != nil:
		if !t.uncertain {
			t.in = nil
		}
		return false, err
	case translate(op, err).Retryable:
		t.uncertain = true
		return false, err
	}
	return true, err
}

// maxForeignTokens bounds the tokens a send tries that others already used.
const maxForeignTokens = 8

// txCache keeps pending transactions by call arguments, so that a caller
// retrying a call (worker ack, abandon) resends what it sent.
type txCache struct {
	mu sync.Mutex
	m  map[string]*pendingTx
}

// get returns the pending transaction of callKey.
func (c *txCache) get(callKey string) *pendingTx {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.m[callKey]; ok {
		return t
	}
	if c.m == nil || len(c.m) > maxCachedTurns {
		c.m = map[string]*pendingTx{} // a bound; forgotten calls start afresh
	}
	t := &pendingTx{key: callKey}
	c.m[callKey] = t
	return t
}

// drop forgets callKey's transaction.
func (c *txCache) drop(callKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, callKey)
}

// rebuild lets callKey's transaction be built anew even after an unknown
// outcome: for a cancellation whose condition on the call's own lock held,
// which proves no attempt committed (a committed repeat answers success).
func (c *txCache) rebuild(callKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.m[callKey]; ok {
		t.in, t.uncertain = nil, false
	}
}

// sendTx sends callKey's pending transaction (txCache). Calls of one key
// must not run concurrently (they hold one lock token, used one at a time).
func (p *Provider) sendTx(ctx context.Context, op, callKey string, build func() *dynamodb.TransactWriteItemsInput) error {
	done, err := p.sendPending(ctx, op, p.txs.get(callKey), build)
	if done {
		p.txs.drop(callKey)
	}
	return err
}

// resendSafe wraps the client so that requests safe to repeat (reads,
// batch writes of fixed rows) are resent on transient failures for every
// caller; conditional writes and transactions get one attempt here.
type resendSafe struct {
	API
	p *Provider
}

// call sends one attempt of a request through send, bounded by p.attempt.
func call[In, Out any](p *Provider, ctx context.Context, in In, optFns []func(*dynamodb.Options),
	send func(context.Context, In, ...func(*dynamodb.Options)) (Out, error)) (Out, error) {
	ctx, cancel, optFns := p.attempt(ctx, optFns)
	defer cancel()
	return send(ctx, in, optFns...)
}

// callResent is call, resent on transient failures.
func callResent[In, Out any](p *Provider, op string, ctx context.Context, in In, optFns []func(*dynamodb.Options),
	send func(context.Context, In, ...func(*dynamodb.Options)) (Out, error)) (out Out, err error) {
	_, err = p.resend(ctx, op, func() error {
		out, err = call(p, ctx, in, optFns, send)
		return err
	})
	return out, err
}

// Query is [API.Query], resent on transient failures.
func (r resendSafe) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return callResent(r.p, "query", ctx, in, optFns, r.API.Query)
}

// Scan is [API.Scan], resent on transient failures.
func (r resendSafe) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return callResent(r.p, "scan", ctx, in, optFns, r.API.Scan)
}

// GetItem is [API.GetItem], resent on transient failures.
func (r resendSafe) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return callResent(r.p, "get_item", ctx, in, optFns, r.API.GetItem)
}

// BatchWriteItem is [API.BatchWriteItem], resent on transient failures.
func (r resendSafe) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return callResent(r.p, "batch_write_item", ctx, in, optFns, r.API.BatchWriteItem)
}

// PutItem is [API.PutItem], one attempt.
func (r resendSafe) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return call(r.p, ctx, in, optFns, r.API.PutItem)
}

// UpdateItem is [API.UpdateItem], one attempt.
func (r resendSafe) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return call(r.p, ctx, in, optFns, r.API.UpdateItem)
}

// DeleteItem is [API.DeleteItem], one attempt.
func (r resendSafe) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return call(r.p, ctx, in, optFns, r.API.DeleteItem)
}

// TransactWriteItems is [API.TransactWriteItems], one attempt.
func (r resendSafe) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return call(r.p, ctx, in, optFns, r.API.TransactWriteItems)
}
