package locks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// Retention is how long a lock row stays in the table after its last
// write: its TTL attribute (expires_at) is set that far beyond the end of
// the lease (by Acquire and Extend) or beyond the time of the release (by
// Release and Reset). The row keeps the fencing counter meanwhile; DynamoDB
// deletes it some time after, and a later Acquire creates it afresh (see
// [Dynamo]).
const Retention = 7 * 24 * time.Hour

// Attributes of a lock row (its keys: lockPK, lockSK, shardPK, holderSK).
const (
	attrOwner = "owner"     // the holder's owner token; absent when free
	attrLease = "lease_end" // the holder's lease end, epoch ms; absent when free
	attrFence = "fence"     // the last holder's fencing token
	attrNonce = "op"        // a random nonce of the last write
)

// Dynamo is a [Locker] on the duradyn DynamoDB table: one item per key,
// every change one conditional UpdateItem. Create it with [NewDynamo].
//
// # Fencing tokens
//
// The row's fence attribute counts holders: each Acquire adds one in the
// same conditional write that takes the lock (SET fence =
// if_not_exists(fence, :seed) + 1), so fences grow strictly for each new
// holder, whatever process it runs in. Release and Reset clear the holder
// but keep the row and its counter, so tokens never go back after them.
//
// The row is deleted by DynamoDB's TTL once idle for [Retention]. A row
// created afresh (the first Acquire of a key, or the first after such a
// deletion) seeds its counter with the creation time in epoch
// microseconds. That seed exceeds every token the deleted row gave out:
// a row seeded at time t0 holds t0 (in µs) + n after n acquisitions, and
// DynamoDB writes one item at most about 1,000 times a second, so the
// counter grows by far less than one per microsecond and stays below the
// clock, in µs, of its last write; the deletion happens at least
// Retention (seven days) after that write, so the new seed is larger by
// roughly 6·10^11, more than any clock skew between hosts.
//
// # Unknown outcomes
//
// Each call writes a random nonce with its change. When a response is
// lost and the request is sent again (by the SDK's retryer or by the
// locker's own bounded retries), the resend fails its condition on the
// first send's own write; the item in that failure
// (ReturnValuesOnConditionCheckFailure ALL_OLD) then carries the nonce,
// and the call reports the outcome the first send had. An Acquire that
// still fails with an error has an unknown outcome: the lock may be held
// for the owner until the lease ends, and Release with the same owner frees
// it.
type Dynamo struct {
	o       DynamoOptions
	api     API
	skew    *clockskew.Watch
	blocker blocker
	waiters waitRegistry

	done       chan struct{}      // closed by Close
	closeCtx   context.Context    // cancelled by Close: the parent of the listener's
	closeAll   context.CancelFunc // cancels closeCtx
	closed     bool               // guarded by waiters.mu
	listenStop context.CancelFunc // stops the running listener; guarded by waiters.mu
	wg         sync.WaitGroup     // the listeners
	closeOnce  sync.Once
}

var _ Locker = (*Dynamo)(nil)

// NewDynamo returns a [Dynamo] locker on the table optFns name, with a
// client built from cfg unless [DynamoOptions.Client] is set. It makes no
// request. Call [Dynamo.Close] when done.
func NewDynamo(cfg aws.Config, optFns ...func(*DynamoOptions)) (*Dynamo, error) {
	var o DynamoOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.Client == nil {
		o.Client = dynamodb.NewFromConfig(cfg)
	}
	d := &Dynamo{o: o, api: o.Client, done: make(chan struct{})}
	d.skew = clockskew.New("locks", o.Clock.Now, o.ClockSkewWarning, o.Logger,
		"lease ends are compared by each locker's clock (package doc, Clock skew)")
	d.closeCtx, d.closeAll = context.WithCancel(context.Background())
	d.blocker = blocker{clock: o.Clock, waiters: &d.waiters, done: d.done}
	d.waiters.busy, d.waiters.idle = d.startListenerLocked, d.stopListenerLocked
	return d, nil
}

// ClockSkew returns how far the locker's clock ([DynamoOptions.Clock]) runs
// ahead of DynamoDB's (negative: behind), measured from the Date headers of
// the responses to its requests so far, and the half-width of the interval
// the skew is known to lie in. ok is false before the first response. A
// skew beyond [DynamoOptions.ClockSkewWarning] is logged through
// DynamoOptions.Logger once each time it is first seen.
func (d *Dynamo) ClockSkew() (skew, uncertainty time.Duration, ok bool) {
	return d.skew.Estimate()
}

// Owner returns the locker's owner token.
func (d *Dynamo) Owner() string { return d.o.Owner }

// Close wakes the blocked Acquire calls, stops the listener of release
// notices and waits for it to end. It always returns nil.
func (d *Dynamo) Close() error {
	d.closeOnce.Do(func() {
		d.waiters.mu.Lock()
		d.closed = true
		d.waiters.mu.Unlock()
		close(d.done)
		d.closeAll()
	})
	d.wg.Wait()
	return nil
}

// begin validates a call and checks that the locker is open.
func (d *Dynamo) begin(op, key string, ttl time.Duration, needsTTL bool, optFns []func(*CallOptions)) (call, error) {
	c, err := newCall(op, key, ttl, needsTTL, d.o.Owner, optFns)
	if err != nil {
		return c, err
	}
	select {
	case <-d.done:
		return c, closedError(op)
	default:
		return c, nil
	}
}

// lockRow is the decoded state of a lock row.
type lockRow struct {
	owner   string // "" when free
	untilMs int64
	fence   int64
	nonce   string
}

// liveAt reports whether the row has a holder whose lease has not ended at
// now.
func (r lockRow) liveAt(now time.Time) bool { return r.owner != "" && now.UnixMilli() < r.untilMs }

// decodeRow reads the attributes of a lock row; absent ones stay zero.
func decodeRow(item map[string]types.AttributeValue) (lockRow, error) {
	var r lockRow
	if v, ok := item[attrOwner].(*types.AttributeValueMemberS); ok {
		r.owner = v.Value
	}
	if v, ok := item[attrNonce].(*types.AttributeValueMemberS); ok {
		r.nonce = v.Value
	}
	for name, dst := range map[string]*int64{attrLease: &r.untilMs, attrFence: &r.fence} {
		av, ok := item[name]
		if !ok {
			continue
		}
		v, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return r, fmt.Errorf("attribute %s is a %T, not a number", name, av)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return r, fmt.Errorf("attribute %s: %w", name, err)
		}
		*dst = n
	}
	return r, nil
}

// corrupt returns the error of op for the row of key that cannot be
// decoded.
func corrupt(op, key string, err error) error {
	return provider.Corrupt(op, err, "lock row of %q: %v", key, err)
}

// conditionFailure returns the item of a conditional check failure, and
// whether err is one.
func conditionFailure(err error) (map[string]types.AttributeValue, bool) {
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return failed.Item, true
	}
	return nil, false
}

// Expression attribute names shared by every update.
var attrNames = map[string]string{
	"#o":  attrOwner,
	"#l":  attrLease,
	"#f":  attrFence,
	"#n":  attrNonce,
	"#x":  tables.AttrExpiresAt,
	"#lp": tables.AttrInstancesPK,
	"#ls": tables.AttrInstancesSK,
}

// names returns the entries of attrNames for the placeholders given.
func names(placeholders ...string) map[string]string {
	out := make(map[string]string, len(placeholders))
	for _, p := range placeholders {
		out[p] = attrNames[p]
	}
	return out
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// expiresAt is the TTL attribute's value for a row last active at t: epoch
// seconds, Retention later, rounded up.
func expiresAt(t time.Time) int64 {
	end := t.Add(Retention)
	s := end.Unix()
	if time.Unix(s, 0).Before(end) {
		s++
	}
	return s
}

// key returns the primary key of key's row.
func (d *Dynamo) key(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrPK: str(lockPK(key)), tables.AttrSK: str(lockSK)}
}

// Acquire implements [Locker.Acquire]: one conditional UpdateItem per try.
func (d *Dynamo) Acquire(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (Lease, bool, error) {
	c, err := d.begin(opAcquire, key, ttl, true, optFns)
	if err != nil {
		return Lease{}, false, err
	}
	nonce := newToken()
	return d.blocker.acquire(ctx, c, func(ctx context.Context) (attempt, error) {
		return d.tryAcquire(ctx, c, nonce)
	})
}

// tryAcquire takes c.key if it is free, or recognises that an earlier send
// with the same nonce took it.
func (d *Dynamo) tryAcquire(ctx context.Context, c call, nonce string) (attempt, error) {
	var out *dynamodb.UpdateItemOutput
	var now time.Time
	err := withRetry(ctx, c.op, func(ctx context.Context) error {
		now = d.o.Clock.Now()
		untilMs := now.Add(c.ttl).UnixMilli()
		var err error
		out, err = d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &d.o.TableName,
			Key:                                 d.key(c.key),
			UpdateExpression:                    aws.String("SET #o = :o, #l = :l, #f = if_not_exists(#f, :seed) + :one, #n = :n, #x = :x, #lp = :lp, #ls = :ls"),
			ConditionExpression:                 aws.String("attribute_not_exists(#o) OR #l <= :now"),
			ExpressionAttributeNames:            attrNames,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":o":    str(c.owner),
				":l":    num(untilMs),
				":seed": num(now.UnixMicro()),
				":one":  num(1),
				":n":    str(nonce),
				":x":    num(expiresAt(time.UnixMilli(untilMs))),
				":lp":   str(shardPK(shardOf(c.key, d.o.shards))),
				":ls":   str(holderSK(untilMs, c.owner)),
				":now":  num(now.UnixMilli()),
			},
		}, d.skew.Option)
		return err
	})
	if item, ok := conditionFailure(err); ok {
		row, err := decodeRow(item)
		if err != nil {
			return attempt{}, corrupt(c.op, c.key, err)
		}
		if row.owner == "" || row.untilMs == 0 {
			// The condition cannot fail on such a row.
			return attempt{}, corrupt(c.op, c.key, errors.New("a failed condition returned no holder"))
		}
		if row.nonce == nonce && row.owner == c.owner && row.liveAt(now) {
			// An earlier send of this call took the lock; its response
			// was lost.
			return attempt{acquired: true, lease: row.lease(c.key)}, nil
		}
		return attempt{holderFence: row.fence, holderUntil: time.UnixMilli(row.untilMs)}, nil
	}
	if err != nil {
		return attempt{}, err
	}
	row, err := decodeRow(out.Attributes)
	if err != nil {
		return attempt{}, corrupt(c.op, c.key, err)
	}
	return attempt{acquired: true, lease: row.lease(c.key)}, nil
}

// lease is the [Lease] the row describes.
func (r lockRow) lease(key string) Lease {
	return Lease{Key: key, Owner: r.owner, Fence: r.fence, Until: time.UnixMilli(r.untilMs)}
}

// Release implements [Locker.Release]: one conditional UpdateItem, then a
// release notice.
func (d *Dynamo) Release(ctx context.Context, key string, optFns ...func(*CallOptions)) (bool, error) {
	c, err := d.begin(opRelease, key, 0, false, optFns)
	if err != nil {
		return false, err
	}
	return d.free(ctx, c, "#o = :o AND #l > :now")
}

// Reset implements [Locker.Reset]: one conditional UpdateItem, then a
// release notice.
func (d *Dynamo) Reset(ctx context.Context, key string) (bool, error) {
	c, err := d.begin(opReset, key, 0, false, nil)
	if err != nil {
		return false, err
	}
	return d.free(ctx, c, "attribute_exists(#o) AND #l > :now")
}

// free removes the holder of c.key if condition holds (":o" is c.owner,
// ":now" the time in epoch ms), keeping the fencing counter, and sends the
// release notice.
func (d *Dynamo) free(ctx context.Context, c call, condition string) (bool, error) {
	nonce := newToken()
	var out *dynamodb.UpdateItemOutput
	err := withRetry(ctx, c.op, func(ctx context.Context) error {
		now := d.o.Clock.Now()
		values := map[string]types.AttributeValue{
			":n":   str(nonce),
			":x":   num(expiresAt(now)),
			":now": num(now.UnixMilli()),
		}
		if c.op == opRelease {
			values[":o"] = str(c.owner)
		}
		var err error
		out, err = d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &d.o.TableName,
			Key:                                 d.key(c.key),
			UpdateExpression:                    aws.String("REMOVE #o, #l, #lp, #ls SET #n = :n, #x = :x"),
			ConditionExpression:                 aws.String(condition),
			ExpressionAttributeNames:            names("#o", "#l", "#lp", "#ls", "#n", "#x"),
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, d.skew.Option)
		return err
	})
	item, failed := conditionFailure(err)
	switch {
	case failed:
	case err != nil:
		return false, err
	default:
		item = out.Attributes
	}
	row, err := decodeRow(item)
	if err != nil {
		return false, corrupt(c.op, c.key, err)
	}
	if failed && row.nonce != nonce {
		return false, nil
	}
	// Freed now, or by an earlier send of this call whose response was
	// lost: the row's fence is the freed holder's either way.
	d.notice(ctx, c.key, row.fence)
	return true, nil
}

// Extend implements [Locker.Extend]: one conditional UpdateItem.
func (d *Dynamo) Extend(ctx context.Context, key string, ttl time.Duration, optFns ...func(*CallOptions)) (bool, error) {
	c, err := d.begin(opExtend, key, ttl, true, optFns)
	if err != nil {
		return false, err
	}
	nonce := newToken()
	err = withRetry(ctx, c.op, func(ctx context.Context) error {
		now := d.o.Clock.Now()
		untilMs := now.Add(c.ttl).UnixMilli()
		_, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &d.o.TableName,
			Key:                                 d.key(c.key),
			UpdateExpression:                    aws.String("SET #l = :l, #ls = :ls, #n = :n, #x = :x"),
			ConditionExpression:                 aws.String("#o = :o AND #l > :now"),
			ExpressionAttributeNames:            names("#o", "#l", "#ls", "#n", "#x"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":o":   str(c.owner),
				":l":   num(untilMs),
				":ls":  str(holderSK(untilMs, c.owner)),
				":n":   str(nonce),
				":x":   num(expiresAt(time.UnixMilli(untilMs))),
				":now": num(now.UnixMilli()),
			},
		}, d.skew.Option)
		return err
	})
	if item, ok := conditionFailure(err); ok {
		row, err := decodeRow(item)
		if err != nil {
			return false, corrupt(c.op, c.key, err)
		}
		// An earlier send of this call extended the lease if the row
		// carries its nonce.
		return row.nonce == nonce, nil
	}
	return err == nil, err
}
