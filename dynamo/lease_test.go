package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// These tests inject faults into the HTTP transport of the provider's
// DynamoDB client, below the SDK's retryer (which keeps its defaults: the
// provider must send lease-critical requests once, whatever the retryer
// would do), and check what the provider promises about leases: a renewal
// that landed is reported as landed, a claim's lease counts from before
// its request, and a renewal that cannot be confirmed fails before the
// lease ends.

// leaseSetup returns a table of its own and a short-polling provider of
// one shard whose client sends through a fault-injecting transport.
func leaseSetup(t *testing.T) (*dynamotest.Env, *faults.Transport, *dynamo.Provider) {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	tr := faults.NewTransport(nil)
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Shards: 1, Options: func(o *dynamo.Options) {
		o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
	}})
	return env, tr, p
}

// leasedLock is one kind of lock the tests take and renew.
type leasedLock struct {
	name string
	// claimOp and isClaim pick the request that wins the lock.
	claimOp string
	isClaim func(body []byte) bool
	// take enqueues work for instance and locks it for lockTimeout.
	take func(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, lockTimeout time.Duration) (token string, expiry time.Time)
	// renew renews the lock.
	renew func(ctx context.Context, p *dynamo.Provider, token string, extendFor time.Duration) error
	// row is the key of the lock's row.
	row func(instance string) map[string]types.AttributeValue
}

var leasedLocks = []leasedLock{
	{
		name:    "orchestration",
		claimOp: "PutItem",
		isClaim: func(body []byte) bool { return bytes.Contains(body, []byte(`"`+keys.Lock+`"`)) },
		take: func(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, lockTimeout time.Duration) (string, time.Time) {
			t.Helper()
			must(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0), "EnqueueForOrchestrator")
			item, err := p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
			if err != nil || item == nil {
				t.Fatalf("FetchOrchestrationItem = %+v, %v; want the instance's turn", item, err)
			}
			return item.LockToken, item.LeaseExpiry
		},
		renew: func(ctx context.Context, p *dynamo.Provider, token string, extendFor time.Duration) error {
			return p.RenewOrchestrationItemLock(ctx, token, extendFor)
		},
		row: func(instance string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"pk": str(keys.InstancePK(instance)), "sk": str(keys.Lock)}
		},
	},
	{
		// A turn's first activity runs in its instance's slot.
		name:    "activity",
		claimOp: "UpdateItem",
		isClaim: func(body []byte) bool { return bytes.Contains(body, []byte(`":seen"`)) },
		take:    takeActivity(1),
		renew:   renewActivity,
		row: func(instance string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"pk": str(keys.InstancePK(instance)), "sk": str(keys.SlotSK)}
		},
	},
	{
		// The turn's second activity runs in a worker row.
		name:    "activity in a worker row",
		claimOp: "UpdateItem",
		isClaim: func(body []byte) bool {
			return bytes.Contains(body, []byte(`":seen"`)) && bytes.Contains(body, []byte(`"`+keys.WorkerSK(1, 3)+`"`))
		},
		take:  takeActivity(2),
		renew: renewActivity,
		row: func(instance string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"pk": str(keys.WorkerPK(instance)), "sk": str(keys.WorkerSK(1, 3))}
		},
	},
}

// takeActivity starts instance with a turn that schedules n activities and
// fetches them in order; it returns the last one's token and expiry.
func takeActivity(n int) func(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, lockTimeout time.Duration) (string, time.Time) {
	return func(ctx context.Context, t *testing.T, p *dynamo.Provider, instance string, lockTimeout time.Duration) (string, time.Time) {
		t.Helper()
		item := startAndFetch(ctx, t, p, instance)
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(instance, n)), "turn scheduling the activities")
		var work *provider.LockedWorkItem
		for i := range n {
			var err error
			work, err = p.FetchWorkItem(ctx, lockTimeout, 0, nil, provider.AnyTag())
			if err != nil || work == nil || work.Item.ID != uint64(2+i) {
				t.Fatalf("FetchWorkItem = %+v, %v; want activity %d", work, err, 2+i)
			}
		}
		return work.LockToken, work.LeaseExpiry
	}
}

// renewActivity renews the lease of an activity's lock token.
func renewActivity(ctx context.Context, p *dynamo.Provider, token string, extendFor time.Duration) error {
	return p.RenewWorkItemLock(ctx, token, extendFor)
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// storedLease reads the lease end and token of a lock's row, bypassing the
// faults.
func storedLease(ctx context.Context, t *testing.T, env *dynamotest.Env, row map[string]types.AttributeValue) (until time.Time, token string) {
	t.Helper()
	out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Table), Key: row, ConsistentRead: aws.Bool(true)})
	must(t, err, "GetItem of the lock row")
	if tok, ok := out.Item["tok"].(*types.AttributeValueMemberS); ok {
		token = tok.Value
	}
	if u, ok := out.Item["lock_until"].(*types.AttributeValueMemberN); ok {
		ms, err := strconv.ParseInt(u.Value, 10, 64)
		must(t, err, "lock_until")
		until = time.UnixMilli(ms)
	}
	return until, token
}

// renewsOf picks the renewal requests of token.
func renewsOf(token string) func(string, []byte) bool {
	return func(op string, body []byte) bool {
		return bytes.Contains(body, []byte(token)) && bytes.Contains(body, []byte(":until"))
	}
}

// TestRenewalWhoseResponseIsLostLands: a renewal that DynamoDB applied but
// whose response the network lost (once, or on every attempt, or answered
// slower than any attempt waits) returns success, and the lease is
// extended. The SDK's retryer sends none of its attempts again: one
// request landed, and a read learned it.
func TestRenewalWhoseResponseIsLostLands(t *testing.T) {
	t.Parallel()
	faultsOf := map[string]func(token string) faults.NetRule{
		"lost once": func(tok string) faults.NetRule {
			return faults.NetRule{Match: renewsOf(tok), Count: 1, Fault: faults.LoseResponse()}
		},
		"lost on every attempt": func(tok string) faults.NetRule {
			return faults.NetRule{Match: renewsOf(tok), Fault: faults.ResetResponse()}
		},
		"slow on every attempt": func(tok string) faults.NetRule {
			return faults.NetRule{Match: renewsOf(tok), Fault: faults.SlowResponse(dynamo.DefaultLeaseRequestTimeout + time.Second)}
		},
	}
	for _, lk := range leasedLocks {
		for name, rule := range faultsOf {
			t.Run(lk.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				env, tr, p := leaseSetup(t)
				const inst = "renewal-lost"
				token, _ := lk.take(ctx, t, p, inst, longLock)
				tr.Add(rule(token))
				sent := tr.Sent(faults.OpUpdateItem) + tr.Sent(faults.OpTransactWriteItems)
				called := time.Now().Truncate(time.Millisecond) // leases are stored in ms
				must(t, lk.renew(ctx, p, token, time.Hour), "renewal")
				if n := tr.Sent(faults.OpUpdateItem) + tr.Sent(faults.OpTransactWriteItems) - sent; n != 1 {
					t.Errorf("the renewal sent %d write requests; want 1 (no resend by the SDK's retryer, none needed once a read found it landed)", n)
				}
				until, holder := storedLease(ctx, t, env, lk.row(inst))
				if holder != token || until.Before(called.Add(time.Hour)) {
					t.Fatalf("lock row holds %q until %v; want %q until at least %v", holder, until, token, called.Add(time.Hour))
				}
			})
		}
	}
}

// TestClaimLeaseCountsFromBeforeItsRequest: a claim whose response takes
// 4 s returns a lease expiry 4 s nearer than a fast claim's, counted from
// before the request was sent.
func TestClaimLeaseCountsFromBeforeItsRequest(t *testing.T) {
	t.Parallel()
	const slow = 4 * time.Second
	for _, lk := range leasedLocks {
		t.Run(lk.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			_, tr, p := leaseSetup(t)
			fastBefore := time.Now()
			_, fastExpiry := lk.take(ctx, t, p, "claim-fast", longLock)
			if fastExpiry.Before(fastBefore.Add(longLock)) || fastExpiry.After(time.Now().Add(longLock)) {
				t.Fatalf("fast claim: expiry %v; want the lock timeout after a time within the fetch", fastExpiry)
			}
			tr.Add(faults.NetRule{Ops: []string{lk.claimOp}, Match: func(_ string, body []byte) bool { return lk.isClaim(body) }, Count: 1, Fault: faults.SlowResponse(slow)})
			_, slowExpiry := lk.take(ctx, t, p, "claim-slow", longLock)
			returned := time.Now()
			if tr.Faulted(lk.claimOp) != 1 {
				t.Fatalf("the claim's response was not slowed")
			}
			// Milliseconds are rounded up once.
			if left := slowExpiry.Sub(returned); left > longLock-slow+time.Millisecond {
				t.Errorf("slow claim: %v of the lease left when the fetch returned; want at most %v (the lease counts from before the request)", left, longLock-slow)
			}
		})
	}
}

// TestRenewalThatNeverAnswersFailsBeforeTheLeaseEnds: a renewal whose
// requests are never answered (never sent, or sent and applied but not
// answered, and the reads that would learn of them not answered either)
// returns a lost-lock error before the lease it renews ends.
func TestRenewalThatNeverAnswersFailsBeforeTheLeaseEnds(t *testing.T) {
	t.Parallel()
	const lockTimeout = 4 * time.Second
	stalls := map[string]faults.NetFault{"unsent": faults.StallRequest(), "unanswered": faults.StallResponse()}
	for _, lk := range leasedLocks {
		for name, stall := range stalls {
			t.Run(lk.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				_, tr, p := leaseSetup(t)
				token, expiry := lk.take(ctx, t, p, "renewal-stalled", lockTimeout)
				tr.Add(faults.NetRule{Match: renewsOf(token), Fault: stall})
				tr.Add(faults.NetRule{Ops: []string{faults.OpGetItem}, Fault: faults.StallRequest()})
				err := lk.renew(ctx, p, token, time.Minute)
				if now := time.Now(); !now.Before(expiry) {
					t.Errorf("the renewal returned at %v, %v after the lease it renews ended", now, now.Sub(expiry))
				}
				if !errors.Is(err, provider.ErrInvalidLockToken) {
					t.Fatalf("renewal: %v; want a lost-lock error (%v)", err, provider.ErrInvalidLockToken)
				}
				if tr.Faulted(faults.OpGetItem) == 0 {
					t.Errorf("the renewal reported the lock lost without trying to read whether an attempt landed")
				}
			})
		}
	}
}

// TestLateClaimIsReleasedAndTakenAgain: a claim that lands but comes back
// with less than a quarter of its lease left is released, and the fetch
// that made it takes the same work again with a fresh lease, instead of
// leaving it to the next sweep. The claim's response is slower than its
// attempt may wait (three quarters of the lease), so a read learns that it
// landed. The work is written without a wake-up signal, so the fetch's
// first sweep finds it, and the next sweep is a minute away.
func TestLateClaimIsReleasedAndTakenAgain(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second
	const pollTimeout = 30 * time.Second
	for _, lk := range leasedLocks[:2] {
		t.Run(lk.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, true)
			tr := faults.NewTransport(nil)
			p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
				o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
				o.SweepInterval = time.Minute
			}})
			quiet := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
			const inst = "late-claim"
			must(t, quiet.EnqueueForOrchestrator(ctx, startItem(inst), 0), "EnqueueForOrchestrator")
			if lk.claimOp != faults.OpPutItem {
				item, err := quiet.FetchOrchestrationItem(ctx, longLock, 0, nil)
				if err != nil || item == nil {
					t.Fatalf("FetchOrchestrationItem = %+v, %v; want the instance's first turn", item, err)
				}
				must(t, quiet.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "turn scheduling the activity")
			}
			// Past the claim's budget: its attempt gives up, a read finds it.
			tr.Add(faults.NetRule{Ops: []string{lk.claimOp}, Match: func(_ string, body []byte) bool { return lk.isClaim(body) }, Count: 1, Fault: faults.SlowResponse(lockTimeout)})
			var token string
			var attempts uint32
			var expiry time.Time
			if lk.claimOp == faults.OpPutItem {
				item, err := p.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, nil)
				if err != nil || item == nil {
					t.Fatalf("FetchOrchestrationItem = %+v, %v; want the instance's turn, taken again after the late claim", item, err)
				}
				token, attempts, expiry = item.LockToken, item.AttemptCount, item.LeaseExpiry
			} else {
				work, err := p.FetchWorkItem(ctx, lockTimeout, pollTimeout, nil, provider.AnyTag())
				if err != nil || work == nil {
					t.Fatalf("FetchWorkItem = %+v, %v; want the activity, taken again after the late claim", work, err)
				}
				token, attempts, expiry = work.LockToken, work.AttemptCount, work.LeaseExpiry
			}
			if tr.Faulted(lk.claimOp) != 1 {
				t.Fatalf("the claim's response was not slowed")
			}
			if attempts != 1 {
				t.Errorf("attempt count %d; want 1: the released claim delivered nothing", attempts)
			}
			if left := time.Until(expiry); left < lockTimeout/4 {
				t.Errorf("%v of the lease left when the fetch returned; want at least a quarter of %v", left, lockTimeout)
			}
			if until, holder := storedLease(ctx, t, env, lk.row(inst)); holder != token || until.Before(expiry) {
				t.Errorf("lock row holds %q until %v; want the returned %q until at least %v", holder, until, token, expiry)
			}
		})
	}
}
