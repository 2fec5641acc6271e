package locks_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/locks/lockstest"
	"github.com/duradyn/duradyn/tables"
)

// row reads the lock row of key with a consistent read; nil when absent.
func (env *dynamoEnv) row(t *testing.T, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.db.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      &env.table,
		Key:            map[string]types.AttributeValue{tables.AttrPK: &types.AttributeValueMemberS{Value: "K#" + key}, tables.AttrSK: &types.AttributeValueMemberS{Value: "#LOCK"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	return out.Item
}

func attrS(item map[string]types.AttributeValue, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

func attrN(t *testing.T, item map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s = %#v; want a number", name, item[name])
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatalf("attribute %s: %v", name, err)
	}
	return n
}

// TestDynamoRow checks the stored row through a lock's life: held, it
// carries the owner, the lease end, the listing keys and a TTL a retention
// after the lease end; freed, it keeps only the fence and a TTL a retention
// after the release.
func TestDynamoRow(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t, false)
	clock := lockstest.NewFakeClock(time.UnixMilli(1_767_225_600_000))
	l := env.locker(t, withClock(clock), func(o *locks.DynamoOptions) { o.Owner = "owner-1" })
	ctx := t.Context()

	lease, ok, err := l.Acquire(ctx, "report", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if want := clock.Now().UnixMicro() + 1; lease.Fence != want {
		t.Errorf("first fence %d; want the creation time in µs plus one, %d", lease.Fence, want)
	}
	item := env.row(t, "report")
	until := clock.Now().Add(time.Minute)
	if owner, _ := attrS(item, "owner"); owner != "owner-1" {
		t.Errorf("owner %q; want owner-1", owner)
	}
	if got := attrN(t, item, "lease_end"); got != until.UnixMilli() {
		t.Errorf("lease_end %d; want %d", got, until.UnixMilli())
	}
	if got := attrN(t, item, "fence"); got != lease.Fence {
		t.Errorf("fence %d; want %d", got, lease.Fence)
	}
	if got, want := attrN(t, item, tables.AttrExpiresAt), until.Add(locks.Retention).Unix(); got != want {
		t.Errorf("expires_at %d; want %d (a retention after the lease end)", got, want)
	}
	if pk, _ := attrS(item, tables.AttrInstancesPK); len(pk) < 3 || pk[:2] != "K#" {
		t.Errorf("li_pk %q; want K#<shard>", pk)
	}
	if sk, _ := attrS(item, tables.AttrInstancesSK); sk != "0000000"+strconv.FormatInt(until.UnixMilli(), 10)+"#owner-1" {
		t.Errorf("li_sk %q; want the lease end in 20 digits, #, the owner", sk)
	}

	clock.Advance(10 * time.Second)
	if ok, err := l.Release(ctx, "report"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	item = env.row(t, "report")
	for _, name := range []string{"owner", "lease_end", tables.AttrInstancesPK, tables.AttrInstancesSK} {
		if _, ok := item[name]; ok {
			t.Errorf("attribute %s still set after Release", name)
		}
	}
	if got := attrN(t, item, "fence"); got != lease.Fence {
		t.Errorf("fence after Release %d; want %d", got, lease.Fence)
	}
	if got, want := attrN(t, item, tables.AttrExpiresAt), clock.Now().Add(locks.Retention).Unix(); got != want {
		t.Errorf("expires_at after Release %d; want %d (a retention after the release)", got, want)
	}
}

// TestDynamoFencingSurvivesResetAndDeletion: Reset keeps the counter, and a
// row deleted by its TTL is created again with a counter above every token
// the deleted row gave out.
func TestDynamoFencingSurvivesResetAndDeletion(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t, false)
	clock := lockstest.NewFakeClock(time.Now().Truncate(time.Millisecond))
	a := env.locker(t, withClock(clock))
	b := env.locker(t, withClock(clock))
	ctx := t.Context()

	var last int64
	take := func(l locks.Locker, how string) {
		t.Helper()
		lease, ok, err := l.Acquire(ctx, "job", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire after %s = %v, %v", how, ok, err)
		}
		if lease.Fence <= last {
			t.Fatalf("fence %d after %s; want above %d", lease.Fence, how, last)
		}
		last = lease.Fence
	}
	// Many holders within one instant of the clock: the counter moves on
	// by one per holder, faster than the clock here, far slower than one
	// per microsecond on DynamoDB.
	take(a, "the first acquire")
	for i := range 50 {
		l := []locks.Locker{a, b}[i%2]
		if ok, err := l.Reset(ctx, "job"); err != nil || !ok {
			t.Fatalf("Reset = %v, %v", ok, err)
		}
		take(l, "a reset")
	}
	if got := attrN(t, env.row(t, "job"), "fence"); got != last {
		t.Fatalf("stored fence %d; want %d", got, last)
	}

	// Released, the row waits for its TTL; DynamoDB deletes it after
	// expires_at, and not before.
	if ok, err := a.Reset(ctx, "job"); err != nil || !ok {
		t.Fatalf("Reset = %v, %v", ok, err)
	}
	expires := attrN(t, env.row(t, "job"), tables.AttrExpiresAt)
	clock.Advance(time.Unix(expires, 0).Sub(clock.Now()))
	if _, err := env.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &env.table,
		Key:       map[string]types.AttributeValue{tables.AttrPK: &types.AttributeValueMemberS{Value: "K#job"}, tables.AttrSK: &types.AttributeValueMemberS{Value: "#LOCK"}},
	}); err != nil {
		t.Fatalf("DeleteItem, as the TTL does: %v", err)
	}
	take(b, "the row was deleted by its TTL")
	if last <= clock.Now().UnixMicro() {
		t.Fatalf("fence of the re-created row %d; want above the creation time in µs %d", last, clock.Now().UnixMicro())
	}
}

// countingAPI counts the requests a locker sends.
type countingAPI struct {
	locks.API
	updates, queries atomic.Int64
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.API.UpdateItem(ctx, in, optFns...)
}

func (c *countingAPI) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, optFns...)
}

// TestDynamoBlockedAcquireRequests: a blocked Acquire sends one request
// for the try that failed and one for the try after the release notice,
// in another process, woke it: none while it waits.
func TestDynamoBlockedAcquireRequests(t *testing.T) {
	t.Parallel()
	for _, queue := range []bool{false, true} {
		t.Run(map[bool]string{false: "InProcess", true: "SQS"}[queue], func(t *testing.T) {
			t.Parallel()
			env := newDynamoEnv(t, queue)
			clock := lockstest.NewFakeClock(time.Now())
			counter := &countingAPI{API: env.ep.DynamoDB(env.cfg)}
			holder := env.locker(t, withClock(clock), env.withSignals(t))
			waiter := env.locker(t, withClock(clock), env.withSignals(t), func(o *locks.DynamoOptions) { o.Client = counter })
			ctx := t.Context()
			if _, ok, err := holder.Acquire(ctx, "k", time.Hour); err != nil || !ok {
				t.Fatalf("Acquire = %v, %v", ok, err)
			}
			done := make(chan error, 1)
			go func() {
				_, ok, err := waiter.Acquire(ctx, "k", time.Hour, locks.WithWait(time.Hour))
				if err == nil && !ok {
					err = errors.New("not acquired")
				}
				done <- err
			}()
			if err := clock.AwaitPending(ctx, 2); err != nil {
				t.Fatalf("waiter not blocked: %v", err)
			}
			if n := counter.updates.Load(); n != 1 {
				t.Fatalf("%d requests before the wait; want 1", n)
			}
			if ok, err := holder.Release(ctx, "k"); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			if err := <-done; err != nil {
				t.Fatalf("blocked Acquire: %v", err)
			}
			if u, q := counter.updates.Load(), counter.queries.Load(); u != 2 || q != 0 {
				t.Fatalf("waiter sent %d UpdateItem and %d Query; want 2 and 0", u, q)
			}
		})
	}
}

func TestNewDynamoOptions(t *testing.T) {
	cfg := aws.Config{Region: "eu-west-1"}
	for _, tc := range []struct {
		name string
		fn   func(*locks.DynamoOptions)
	}{
		{"no table", func(o *locks.DynamoOptions) {}},
		{"owner not UTF-8", func(o *locks.DynamoOptions) { o.TableName, o.Owner = "t", "\xff" }},
		{"negative skew warning", func(o *locks.DynamoOptions) { o.TableName, o.ClockSkewWarning = "t", -time.Second }},
	} {
		if _, err := locks.NewDynamo(cfg, tc.fn); !errors.Is(err, locks.ErrInvalidOptions) {
			t.Errorf("%s: NewDynamo error %v; want ErrInvalidOptions", tc.name, err)
		}
	}
	l, err := locks.NewDynamo(cfg, func(o *locks.DynamoOptions) { o.TableName = "t" })
	if err != nil {
		t.Fatalf("NewDynamo: %v", err)
	}
	defer l.Close()
	if len(l.Owner()) != 26 {
		t.Errorf("default owner %q; want a random token of 26 characters", l.Owner())
	}
	if _, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Owner = string(make([]byte, locks.MaxOwnerBytes+1)) }); !errors.Is(err, locks.ErrInvalidOptions) {
		t.Errorf("NewMemory with an owner too long: %v; want ErrInvalidOptions", err)
	}
}

// TestDynamoDeclinesOthersNotices: a locker whose Acquire waits for one key
// receives, through SQS, the release notice of another key, which nobody
// in its process waits for, and hands it on to other processes instead of
// keeping it.
func TestDynamoDeclinesOthersNotices(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t, true)
	clock := lockstest.NewFakeClock(time.Now())
	waiterSignals := env.signals(t)
	holder := env.locker(t, withClock(clock), env.withSignals(t))
	waiter := env.locker(t, withClock(clock), func(o *locks.DynamoOptions) { o.Signals = waiterSignals })
	ctx := t.Context()
	for _, key := range []string{"waited-for", "other"} {
		if _, ok, err := holder.Acquire(ctx, key, time.Hour); err != nil || !ok {
			t.Fatalf("Acquire(%q) = %v, %v", key, ok, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, ok, err := waiter.Acquire(ctx, "waited-for", time.Hour, locks.WithWait(time.Hour))
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		done <- err
	}()
	if err := clock.AwaitPending(ctx, 2); err != nil {
		t.Fatalf("waiter not blocked: %v", err)
	}
	// Only the waiter's process polls the queue: it receives the notice.
	if ok, err := holder.Release(ctx, "other"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for waiterSignals.Stats().SignalsDeclined == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the notice of a key nobody waits for was not declined: %+v", waiterSignals.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := clock.Pending(); n != 2 {
		t.Fatalf("%d timers pending; want the waiter's 2, still blocked", n)
	}
	if ok, err := holder.Release(ctx, "waited-for"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked Acquire: %v", err)
	}
}
