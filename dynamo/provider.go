package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/metric"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// Version is the version [Provider.Version] reports.
const Version = "0.1.0"

// Compile-time checks that *Provider implements the contract.
var (
	_ provider.Provider  = (*Provider)(nil)
	_ provider.Admin     = (*Provider)(nil)
	_ provider.Describer = (*Provider)(nil)
)

// Provider is the DynamoDB + SQS [provider.Provider], also
// [provider.Admin] and [provider.Describer]. Create it with [New]; it is
// safe for concurrent use, and processes may share one table and queues.
type Provider struct {
	o          Options
	db         API
	skew       *clockskew.Watch
	skewGauges metric.Registration // nil without Options.MeterProvider
	table      *string
	signals    *queues.Signals

	// turns keeps what each fetch learned, so that the ack is one request.
	turns turnCache
	// hints remembers instance locks and session owners seen recently, so
	// that sweeps skip work held elsewhere.
	hints hints
	cells cellPicker
	waits lockWaits // lockwait.go
	// history and kv cache what this process last knew, so that its
	// fetches and acks read neither (historycache.go, kvcache.go).
	history    historyCache
	kv         kvCache
	sweeps     *sweepSchedules
	scanSweeps scanGate
	leases     workLeases // ends of the activity leases held
	handoffs   handoffs   // handoff.go
	kept       keptLocks  // kept.go
	txs        txCache    // transactions of unknown outcome (resend.go)
	layout     layoutCheck
	// spread draws the first of n candidates in a contended shard
	// (contention.go).
	spread func(n int) int

	seqMu    sync.Mutex
	seqLast  int64
	seqOwner string
}

// newProvider returns a provider on resolved options.
func newProvider(o Options, signals *queues.Signals) *Provider {
	var b [6]byte
	rand.Read(b[:])
	skew := newClockWatch(o)
	p := &Provider{
		o:        o,
		skew:     skew,
		table:    aws.String(o.TableName),
		signals:  signals,
		turns:    newTurnCache(),
		hints:    newHints(),
		sweeps:   &sweepSchedules{base: o.SweepInterval, max: o.IdleSweepInterval},
		seqOwner: hex.EncodeToString(b[:]),
		spread:   mrand.IntN,
	}
	p.db = resendSafe{API: instrumentedDynamoDB{api: o.Client, opt: skew.Option}, p: p}
	return p
}

// Name returns "dynamo".
func (p *Provider) Name() string { return "dynamo" }

// Version returns [Version].
func (p *Provider) Version() string { return Version }

// Close stops the signal pollers and releases the instance locks this
// process kept after its acks (docs/design.md §6, kept locks), so that
// other processes need not wait for their leases. Calls in flight fail;
// the provider must not be used afterwards. Nothing is lost: all state is
// in DynamoDB.
func (p *Provider) Close() error {
	p.waits.close()
	ctx, cancel := context.WithTimeout(context.Background(), keptReleaseBudget)
	defer cancel()
	p.ReleaseKeptLocks(ctx)
	var err error
	if p.skewGauges != nil {
		err = p.skewGauges.Unregister()
	}
	return errors.Join(err, p.signals.Close())
}

// nowMs reads the clock in epoch milliseconds.
func (p *Provider) nowMs() int64 { return p.o.Now().UnixMilli() }

// jitter returns a duration drawn uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + mrand.N(d/2+1)
}

// durMs converts d to milliseconds, rounding up; negative is 0.
func durMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// nextSeq returns a queue sequence (docs/design.md §3): enqueue time in
// microseconds, increasing in this process, then its random suffix.
func (p *Provider) nextSeq() string {
	p.seqMu.Lock()
	defer p.seqMu.Unlock()
	us := p.o.Now().UnixMicro()
	if us <= p.seqLast {
		us = p.seqLast + 1
	}
	p.seqLast = us
	return keys.Num20(uint64(us)) + p.seqOwner
}

// readySK is the ready-index sort key of a row that becomes eligible at
// atMs: eligible rows are exactly those with rq_sk < readyBound(now).
func readySK(atMs int64, seq string) string {
	return keys.Num20(uint64(max(atMs, 0))) + "#" + seq
}

// readyAt is the time in ms a ready-index sort key (readySK) says its row
// became eligible; ok is false for a key that is not one.
func readyAt(rqSK string) (atMs int64, ok bool) {
	if len(rqSK) < 20 {
		return 0, false
	}
	at, err := keys.ParseNum20(rqSK[:20])
	return int64(at), err == nil
}

// readySeq is the enqueue sequence of a ready-index sort key, "" for a key
// that is not one; a claim moves the key's time and keeps it.
func readySeq(rqSK string) string {
	if len(rqSK) < 21 {
		return ""
	}
	return rqSK[21:]
}

// readyBound is the exclusive rq_sk bound of rows eligible at nowMs.
func readyBound(nowMs int64) string { return keys.Num20(uint64(nowMs + 1)) }

// translate turns an SDK error into a [*provider.Error] for op, by the
// table of docs/design.md §7. Call sites that give a failed condition a
// meaning of their own inspect [cancelReasons] first.
func translate(op string, err error) *provider.Error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, context.Canceled) {
		return provider.Permanent(op, err, "context done: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Also net/http's own timeouts: only the caller can tell them
		// apart, and a timeout is worth a retry.
		return provider.Retryable(op, err, "deadline exceeded: %v", err)
	}
	if reasons := cancelReasons(err); reasons != nil {
		switch classifyCancellation(reasons) {
		case cancelInvalid:
			return provider.Permanent(op, provider.ErrInvalidInput, "DynamoDB rejected the transaction (%v): %v", reasons, err)
		case cancelCondition:
			return provider.Permanent(op, err, "transaction cancelled by a failed condition (%v): %v", reasons, err)
		default:
			return provider.Retryable(op, err, "transaction cancelled (%v): %v", reasons, err)
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
			"InternalServerError", "TransactionConflictException", "TransactionInProgressException",
			"ServiceUnavailable", "LimitExceededException":
			return provider.Retryable(op, err, "%v", err)
		case "ResourceNotFoundException", "ValidationException", "AccessDeniedException",
			"UnrecognizedClientException", "MissingAuthenticationTokenException":
			return provider.Permanent(op, err, "%v", err)
		}
		if api.ErrorFault() == smithy.FaultClient {
			return provider.Permanent(op, err, "%v", err)
		}
	}
	return provider.Retryable(op, err, "%v", err)
}

// cancelClass is what the reasons of a cancelled transaction say about it.
type cancelClass int

const (
	// cancelTransient: conflicts, throttling or no reason; may succeed
	// when sent again.
	cancelTransient cancelClass = iota
	// cancelCondition: a condition failed; definite.
	cancelCondition
	// cancelInvalid: an action is invalid (too large, two on one item).
	cancelInvalid
)

// classifyCancellation classifies a TransactionCanceledException (which
// the SDK does not retry): a failed condition wins, then a validation
// error; the rest is transient.
func classifyCancellation(reasons []string) cancelClass {
	class := cancelTransient
	for _, r := range reasons {
		switch r {
		case "ConditionalCheckFailed":
			return cancelCondition
		case "ValidationError", "ItemCollectionSizeLimitExceeded":
			class = cancelInvalid
		}
	}
	return class
}

// conditionFailedAt returns the index of the first action of a cancelled
// transaction whose condition failed, or -1.
func conditionFailedAt(reasons []string) int {
	for i, r := range reasons {
		if r == "ConditionalCheckFailed" {
			return i
		}
	}
	return -1
}

// conditionFailed reports whether err is a failed condition of a
// single-item write.
func conditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// heldItem returns the row a failed condition came back with when it
// holds token, else nil. The token is new to each write, so such a row is
// an earlier attempt of this write that landed (an SDK resend; §7).
func heldItem(err error, token string) item {
	row := failedConditionItem(err)
	if held, _, _ := strAttr(row, attrToken); held != token {
		return nil
	}
	return row
}

// failedConditionItem returns the row (ALL_OLD) a failed condition of a
// single-item write came back with, or nil.
func failedConditionItem(err error) item {
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		return nil
	}
	return cf.Item
}

// cancelReasons returns the per-action reason codes of a cancelled
// transaction, or nil when err is not one.
func cancelReasons(err error) []string {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil
	}
	codes := make([]string, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	return codes
}

// queryAll runs a Query to its last page.
func (p *Provider) queryAll(ctx context.Context, in *dynamodb.QueryInput) ([]item, error) {
	in.TableName = p.table
	var out []item
	for {
		page, err := p.db.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// queryPartition returns the rows of partition pk with sort key in
// [from, to), consistently, in order; projection limits the attributes.
func (p *Provider) queryPartition(ctx context.Context, pk, from, to string, projection ...string) ([]item, error) {
	rows, _, err := p.queryRange(ctx, partitionRange{pk: pk, from: from, to: to, projection: projection})
	return rows, err
}

// partitionRange is a consistent, ordered read of partition pk's rows with
// sort key in [from, to).
type partitionRange struct {
	pk, from, to string
	projection   []string
	// firstPage, when not zero, limits the first page only.
	firstPage int32
	// enough sees each page's rows and stops the read by returning true.
	enough func(page []item) bool
}

// queryRange reads r; complete is false when r.enough stopped it early.
func (p *Provider) queryRange(ctx context.Context, r partitionRange) (rows []item, complete bool, err error) {
	in := &dynamodb.QueryInput{
		TableName:                 p.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(r.pk), ":from": s(r.from), ":to": s(r.to)},
		ConsistentRead:            aws.Bool(true),
	}
	if r.firstPage > 0 {
		in.Limit = aws.Int32(r.firstPage)
	}
	in.ProjectionExpression = projectionExpr(in.ExpressionAttributeNames, r.projection)
	for {
		page, err := p.db.Query(ctx, in)
		if err != nil {
			return nil, false, err
		}
		items := page.Items
		// BETWEEN is inclusive; the range's end is not.
		for len(items) > 0 {
			if last, _, _ := strAttr(items[len(items)-1], attrSK); last < r.to {
				break
			}
			items = items[:len(items)-1]
		}
		rows = append(rows, items...)
		if len(page.LastEvaluatedKey) == 0 {
			return rows, true, nil
		}
		if r.enough != nil && r.enough(items) {
			return rows, false, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = nil
	}
}

// projectionExpr returns the expression projecting the named attributes,
// adding aliases to names; nil (all) when projection is empty.
func projectionExpr(names map[string]string, projection []string) *string {
	if len(projection) == 0 {
		return nil
	}
	expr := ""
	for i, name := range projection {
		alias := fmt.Sprintf("#p%d", i)
		names[alias] = name
		if i > 0 {
			expr += ","
		}
		expr += alias
	}
	return aws.String(expr)
}

// prefixEnd is the smallest string greater than every string starting with
// prefix (prefix's last byte incremented; prefixes here end in '#').
func prefixEnd(prefix string) string {
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
}
