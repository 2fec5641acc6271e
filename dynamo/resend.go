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

// Requests whose outcome is unknown (docs/design.md §7). A timeout, a lost
// connection or a 5xx can hide a write DynamoDB carried out. The provider
// makes a second attempt safe in one of three ways:
//
//   - by construction: the write leaves the same state however often it
//     lands (a Put of the same row, a renewal to a later lease);
//   - by a condition that fails once the write landed, read on a resend as
//     "our earlier attempt landed" (an abandon conditioned on the token it
//     removes; a lock write, checked by reading whose token the row holds);
//   - by a ClientRequestToken on a transaction resent unchanged: DynamoDB
//     answers a repeat within ten minutes with the first outcome and does
//     not apply it again (an enqueue's put is such a transaction: putOnce).
//     The input is kept per call (txCache), so that a
//     caller retrying the same call resends it unchanged too. A
//     transaction DynamoDB cancelled has a definite outcome (nothing
//     written): it is built anew, with a fresh clock read and its own
//     token, never resent.

const (
	// maxResends is how many times one call sends a request in all.
	maxResends = 4
	// resendFirstBackoff is the first pause between attempts; it doubles.
	resendFirstBackoff = 20 * time.Millisecond
)

// resend runs send until it succeeds, fails definitely (an error that is
// not retryable, or a cancelled transaction), maxResends attempts were
// made, or ctx ends. resent reports whether an earlier attempt failed with
// an unknown outcome: a failed condition may then be that attempt's own
// effect.
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

// newRequestToken returns a fresh ClientRequestToken, for a transaction
// that only its own call resends.
func newRequestToken() string {
	var b [18]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sendFresh sends a transaction that only its own call resends (see
// pendingTx), and sends it again after a transient cancellation, up to
// maxResends times.
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

// putOnce puts one row with a transaction of its own, for its
// ClientRequestToken: DynamoDB answers a resend of a put that landed (the
// provider's own, or the SDK retryer's, which sends the same token) with
// the first attempt's success and writes nothing. A plain PutItem sent
// again would write the row again, also after another process had
// consumed and deleted it, which no condition on the row can tell from a
// row never written: a queue row would be delivered twice. The
// transaction bills the row twice (2 WRU a KB instead of 1).
func (p *Provider) putOnce(ctx context.Context, op string, put *types.Put) error {
	return p.sendFresh(ctx, op, []types.TransactWriteItem{{Put: put}})
}

// pendingTx is a transaction a call may send more than once. Every input
// built for it has its own request token. It is resent unchanged while its
// outcome may be unknown; once DynamoDB cancelled it, and no earlier
// attempt of it had an unknown outcome, nothing of it was written and the
// next attempt builds it anew (a fresh clock read, a new token). After an
// unknown outcome it is never rebuilt: that attempt may have committed,
// and DynamoDB answers a repeat of a committed request, token and all, with
// success, while a rebuilt one would fail on the lock it released.
type pendingTx struct {
	key       string
	in        *dynamodb.TransactWriteItemsInput
	built     int
	uncertain bool
}

// input returns the transaction to send: the one sent before, or a new one
// made by build.
func (t *pendingTx) input(build func() *dynamodb.TransactWriteItemsInput) *dynamodb.TransactWriteItemsInput {
	if t.in == nil {
		t.in = build()
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", t.key, t.built))
		t.in.ClientRequestToken = aws.String(hex.EncodeToString(sum[:])[:36])
		t.built++
	}
	return t.in
}

// sendPending sends t's transaction, resending it while its outcome is
// unknown, and records what the outcome says (see pendingTx). done reports
// that t is finished with: succeeded, or failed for good.
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
		// Another process used this token for the same call (a retry of
		// an ack whose first attempt was made elsewhere: tokens derive
		// from the call's arguments) with other parameters. DynamoDB
		// applied nothing of this request: build the next one, with the
		// next token, and let the conditions tell what the other
		// attempt did.
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

// maxForeignTokens bounds the tokens one send tries when DynamoDB says
// another process already used them for the same call.
const maxForeignTokens = 8

// txCache keeps the pending transactions of calls whose outcome may be
// unknown (worker acks, abandons), keyed by the call's arguments, so that a
// caller retrying the call resends what it sent.
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

// rebuild lets the pending transaction of callKey be built anew, even
// after an attempt with an unknown outcome. It is for a cancellation in
// which the condition on the call's own lock held: the row was still
// locked by the call's token, so no attempt of the call had committed (a
// resend of a committed transaction is answered with success, not
// evaluated again), and the next attempt may differ.
func (c *txCache) rebuild(callKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.m[callKey]; ok {
		t.in, t.uncertain = nil, false
	}
}

// sendTx sends the pending transaction of callKey (see txCache). Calls
// with one key must not run concurrently (their callers hold one lock
// token, which the provider's callers use one at a time).
func (p *Provider) sendTx(ctx context.Context, op, callKey string, build func() *dynamodb.TransactWriteItemsInput) error {
	done, err := p.sendPending(ctx, op, p.txs.get(callKey), build)
	if done {
		p.txs.drop(callKey)
	}
	return err
}

// resendSafe wraps the DynamoDB client so that the requests that are safe
// to send again whatever became of an earlier attempt (reads, and batch
// writes of fixed rows: puts of whole rows and deletes) are resent on
// transient failures here, once for every caller. Conditional writes and
// transactions pass through: their callers decide (see above). Every
// attempt is bounded as its context says (Provider.attempt).
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
