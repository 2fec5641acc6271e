package locks

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/provider"
)

// Retries of a request that failed with a transient error (throttling, a
// server error, a timeout), on top of the SDK's own: a locker sends a
// request at most maxAttempts times, pausing baseBackoff, then twice that,
// each pause with up to 50% of random jitter.
const (
	maxAttempts = 4
	baseBackoff = 50 * time.Millisecond
)

// withRetry calls send until it succeeds, fails with a conditional check
// failure (returned as it is, for the caller to read the item it carries),
// fails with an error a retry cannot fix, or maxAttempts calls failed
// transiently. Other errors come back as [*provider.Error] values of op.
// send is called again with the same nonce, so the caller can recognise
// its own earlier write in a conditional check failure after a lost
// response.
func withRetry(ctx context.Context, op string, send func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := send(ctx)
		var failed *types.ConditionalCheckFailedException
		switch {
		case err == nil, errors.As(err, &failed):
			return err
		case ctx.Err() != nil:
			return provider.Permanent(op, ctx.Err(), "%v", err)
		case !transient(err):
			return provider.Permanent(op, err, "%v", err)
		case attempt == maxAttempts:
			return provider.Retryable(op, err, "gave up after %d attempts: %v", attempt, err)
		}
		pause := baseBackoff << (attempt - 1)
		pause += time.Duration(rand.Int64N(int64(pause / 2)))
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return provider.Permanent(op, ctx.Err(), "%v", err)
		}
	}
}

// retryables classifies errors as the SDK's standard retryer does:
// throttling, HTTP 5xx, connection errors and timeouts are transient.
var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// transient reports whether a retry of the request that failed with err
// may succeed.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if retryables.IsErrorRetryable(err) == aws.TrueTernary {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer
}
