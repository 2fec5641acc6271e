package locks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/provider"
)

// Update expressions of the locker's writes, as a rule's Match sees them.
const (
	acquireUpdate = "SET #o = :o"
	freeUpdate    = "REMOVE #o"
	extendUpdate  = "SET #l = :l"
)

// onUpdate matches the UpdateItem requests whose update expression starts
// with prefix.
func onUpdate(prefix string) func(faults.Request) bool {
	return func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.UpdateItemInput)
		return ok && in.UpdateExpression != nil && strings.HasPrefix(*in.UpdateExpression, prefix)
	}
}

// faultEnv is a table with two lockers whose requests go through one
// injector.
type faultEnv struct {
	*dynamoEnv
	in   *faults.Injector
	a, b *locks.Dynamo
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	env := newDynamoEnv(t, false)
	in := faults.New(1)
	client := func(o *locks.DynamoOptions) { o.Client = in.DynamoDB(env.ep.DynamoDB(env.cfg)) }
	return &faultEnv{
		dynamoEnv: env,
		in:        in,
		a:         env.locker(t, client, env.withSignals(t)),
		b:         env.locker(t, client, env.withSignals(t)),
	}
}

// requests returns the UpdateItem requests and the faults of kind the
// injector counted.
func (e *faultEnv) requests(kind faults.Kind) (updates, injected int64) {
	s := e.in.Stats().Ops[faults.OpUpdateItem]
	return s.Requests, s.Faults[kind]
}

// TestFaultLostAcquireResponse: the acquire is applied but its response
// lost; the locker's retry fails on its own write and still reports the
// lock acquired, with the stored token. The SDK's own resend after a lost
// response ends the same way.
func TestFaultLostAcquireResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault faults.Fault
		calls int64 // UpdateItem calls by the locker
	}{{faults.LostResponse(), 2}, {faults.Resend(), 1}} {
		fault := tc.fault
		t.Run(fault.Kind().String(), func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t)
			ctx := t.Context()
			e.in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Match: onUpdate(acquireUpdate), Rate: 1, Count: 1, Fault: fault})
			lease, ok, err := e.a.Acquire(ctx, "k", time.Minute)
			if err != nil || !ok {
				t.Fatalf("Acquire after a lost response = %v, %v; want acquired", ok, err)
			}
			if updates, injected := e.requests(fault.Kind()); updates != tc.calls || injected != 1 {
				t.Fatalf("%d calls, %d faults; want %d and 1", updates, injected, tc.calls)
			}
			item := e.row(t, "k")
			if owner, _ := attrS(item, "owner"); owner != e.a.Owner() || attrN(t, item, "fence") != lease.Fence {
				t.Fatalf("row owner %q fence %d; want %q and %d", owner, attrN(t, item, "fence"), e.a.Owner(), lease.Fence)
			}
			if _, ok, err := e.b.Acquire(ctx, "k", time.Minute); err != nil || ok {
				t.Fatalf("Acquire by another locker = %v, %v; want not acquired", ok, err)
			}
			if ok, err := e.a.Release(ctx, "k"); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
		})
	}
}

// TestFaultLostFreeAndExtendResponses: Release, Extend and Reset applied
// with their responses lost still report success.
func TestFaultLostFreeAndExtendResponses(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	ctx := t.Context()
	lost := func(prefix string) {
		e.in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Match: onUpdate(prefix), Rate: 1, Count: 1, Fault: faults.LostResponse()})
	}
	if _, ok, err := e.a.Acquire(ctx, "k", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	lost(extendUpdate)
	if ok, err := e.a.Extend(ctx, "k", time.Hour); err != nil || !ok {
		t.Fatalf("Extend after a lost response = %v, %v; want true", ok, err)
	}
	lost(freeUpdate)
	if ok, err := e.a.Release(ctx, "k"); err != nil || !ok {
		t.Fatalf("Release after a lost response = %v, %v; want true", ok, err)
	}
	if _, ok, err := e.b.Acquire(ctx, "k", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after the release = %v, %v", ok, err)
	}
	lost(freeUpdate)
	if ok, err := e.a.Reset(ctx, "k"); err != nil || !ok {
		t.Fatalf("Reset after a lost response = %v, %v; want true", ok, err)
	}
	if _, injected := e.requests(faults.KindLostResponse); injected != 3 {
		t.Fatalf("%d lost responses; want 3", injected)
	}
	if _, ok := e.row(t, "k")["owner"]; ok {
		t.Fatal("the row still has an owner after Reset")
	}
}

// TestFaultThrottledReleaseRetried: a release throttled after the SDK's
// retries is retried by the locker and succeeds; one throttled on every
// attempt fails with a retryable error and leaves the lock held.
func TestFaultThrottledReleaseRetried(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	ctx := t.Context()
	if _, ok, err := e.a.Acquire(ctx, "k", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	e.in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Match: onUpdate(freeUpdate), Rate: 1, Count: 2, Fault: faults.Throttle("")})
	if ok, err := e.a.Release(ctx, "k"); err != nil || !ok {
		t.Fatalf("Release after two throttles = %v, %v; want true", ok, err)
	}
	if updates, injected := e.requests(faults.KindThrottle); updates != 4 || injected != 2 {
		t.Fatalf("%d requests, %d throttled; want 4 (acquire, 3 releases) and 2", updates, injected)
	}

	if _, ok, err := e.b.Acquire(ctx, "k", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	e.in.Add(faults.Rule{Ops: []string{faults.OpUpdateItem}, Match: onUpdate(freeUpdate), Rate: 1, Fault: faults.ServerError("")})
	ok, err := e.b.Release(ctx, "k")
	var pe *provider.Error
	if ok || !errors.As(err, &pe) || !pe.Retryable || pe.Op != "lock_release" {
		t.Fatalf("Release failing on every attempt = %v, %v; want a retryable lock_release error", ok, err)
	}
	if _, injected := e.requests(faults.KindServerError); injected != 4 {
		t.Fatalf("%d attempts; want 4", injected)
	}
	if _, ok, err := e.a.Acquire(ctx, "k", time.Minute); err != nil || ok {
		t.Fatalf("Acquire while the failed release's holder holds = %v, %v; want not acquired", ok, err)
	}
}

// TestDynamoPermanentError: an error no retry can fix (a missing table)
// is returned at once, as a permanent error.
func TestDynamoPermanentError(t *testing.T) {
	t.Parallel()
	env := newDynamoEnv(t, false)
	counter := &countingAPI{API: env.ep.DynamoDB(env.cfg)}
	l := env.locker(t, func(o *locks.DynamoOptions) { o.TableName, o.Client = env.table+"-missing", counter })
	_, ok, err := l.Acquire(t.Context(), "k", time.Minute)
	if ok || err == nil || provider.IsRetryable(err) {
		t.Fatalf("Acquire on a missing table = %v, %v; want a permanent error", ok, err)
	}
	if n := counter.updates.Load(); n != 1 {
		t.Fatalf("%d requests; want 1", n)
	}
}
