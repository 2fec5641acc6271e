package faults_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
)

// netFixture is one test's table and transport.
type netFixture struct {
	env *dynamotest.Env
	tr  *faults.Transport
}

func newNetFixture(t *testing.T, queues bool) *netFixture {
	t.Helper()
	env := dynamotest.NewEnv(t, queues)
	// An own base, so that the test can close its idle connections.
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return &netFixture{env: env, tr: faults.NewTransport(base)}
}

// client returns a DynamoDB client that sends through the transport, with
// at most attempts attempts per call (0: the SDK's default retryer).
func (f *netFixture) client(attempts int) *dynamodb.Client {
	return f.env.Endpoints.DynamoDB(f.env.AWS, func(o *dynamodb.Options) {
		o.HTTPClient = f.tr.HTTPClient()
		if attempts > 0 {
			o.RetryMaxAttempts = attempts
		}
	})
}

// put writes item pk/"s" with attribute v, only if it is absent when
// conditioned.
func (f *netFixture) put(ctx context.Context, db *dynamodb.Client, pk, v string, conditioned bool) error {
	in := &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: row(pk, "s", "v", v)}
	if conditioned {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	}
	_, err := db.PutItem(ctx, in)
	return err
}

// getVia reads item pk/"s" through db.
func (f *netFixture) getVia(ctx context.Context, db *dynamodb.Client, pk string) error {
	_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.env.Table), Key: key(pk, "s")})
	return err
}

// stored reads item pk/"s" consistently, past the transport; nil when
// absent.
func (f *netFixture) stored(t *testing.T, pk string) map[string]types.AttributeValue {
	t.Helper()
	return (&fixture{env: f.env}).get(t, pk, "s")
}

// wantCounts checks the transport's counts of op.
func wantCounts(t *testing.T, tr *faults.Transport, op string, sent, faulted int) {
	t.Helper()
	if got := tr.Sent(op); got != sent {
		t.Errorf("Sent(%q) = %d, want %d", op, got, sent)
	}
	if got := tr.Faulted(op); got != faulted {
		t.Errorf("Faulted(%q) = %d, want %d", op, got, faulted)
	}
}

// wantStatus checks that err is the SDK's error for an HTTP response with
// status and code, carrying the injected request ID. (The SDK parses
// ServiceUnavailable, which DynamoDB does not model, with an unknown fault.)
func wantStatus(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v has no *awshttp.ResponseError", err)
	}
	if re.HTTPStatusCode() != status || re.ServiceRequestID() != "injected-by-faults" {
		t.Errorf("status %d, request ID %q; want %d, injected-by-faults", re.HTTPStatusCode(), re.ServiceRequestID(), status)
	}
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != code {
		t.Errorf("error %v: want an API error with code %s", err, code)
	}
}

// A lost or reset response fails the call (with the SDK making one attempt)
// with the network error, though the write took effect.
func TestTransportLoseResponseOneAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault faults.NetFault
		check func(*net.OpError) bool
	}{
		{"lose", faults.LoseResponse(), func(oe *net.OpError) bool { return oe.Timeout() }},
		{"reset", faults.ResetResponse(), func(oe *net.OpError) bool {
			return errors.Is(oe, syscall.ECONNRESET) && strings.Contains(oe.Error(), "connection reset by peer")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newNetFixture(t, false)
			f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: tc.fault})
			err := f.put(t.Context(), f.client(1), "lost", "1", false)
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "read" || !tc.check(oe) {
				t.Fatalf("error %v: want a read *net.OpError of a %s", err, tc.fault)
			}
			if !retry.NewStandard().IsErrorRetryable(err) {
				t.Errorf("the SDK's retryer does not retry %v", err)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("error %v looks like the caller's context ended", err)
			}
			if f.stored(t, "lost") == nil {
				t.Error("the item is absent: the write was not applied")
			}
			wantCounts(t, f.tr, "PutItem", 1, 1)
		})
	}
}

// With its default retryer, the SDK resends a write whose response was
// lost: the transport sees both attempts, and the call succeeds.
func TestTransportLoseResponseRetriedBySDK(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Every: 1, Count: 1, Fault: faults.LoseResponse()})
	if err := f.put(t.Context(), f.client(0), "retried", "1", false); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if attr(f.stored(t, "retried"), "v") != "1" {
		t.Error("the item was not written")
	}
	wantCounts(t, f.tr, "PutItem", 2, 1)
}

// A conditioned create whose response was lost fails its condition on the
// SDK's retry: its own first attempt created the item.
func TestTransportLoseResponseRetriedConditionFails(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Count: 1, Fault: faults.LoseResponse()})
	err := f.put(t.Context(), f.client(0), "create", "1", true)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("PutItem: %v, want a ConditionalCheckFailedException", err)
	}
	if attr(f.stored(t, "create"), "v") != "1" {
		t.Error("the item was not written")
	}
	wantCounts(t, f.tr, "PutItem", 2, 1)
}

// A stalled response ends only with the caller's context, after the write
// took effect.
func TestTransportStallResponse(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: faults.StallResponse()})
	applied := func() bool { return f.stored(t, "stalled") != nil }
	err := cutWhen(t, func(ctx context.Context) error { return f.put(ctx, f.client(0), "stalled", "1", false) }, applied)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PutItem: %v, want context.Canceled", err)
	}
	wantCounts(t, f.tr, "PutItem", 1, 1)
}

// A stalled request ends only with the caller's context, unsent.
func TestTransportStallRequest(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: faults.StallRequest()})
	picked := func() bool { return f.tr.Faulted("PutItem") == 1 }
	err := cutWhen(t, func(ctx context.Context) error { return f.put(ctx, f.client(0), "unsent", "1", false) }, picked)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PutItem: %v, want context.Canceled", err)
	}
	if f.stored(t, "unsent") != nil {
		t.Error("the item was written by a request never sent")
	}
	wantCounts(t, f.tr, "PutItem", 0, 1)
}

// A slow response arrives after its delay, and a delayed request is sent
// after it; a call cancelled before then fails, after the write took effect
// (slow response) or unsent (delayed request).
func TestTransportSlowResponseAndDelayRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		fault   func(time.Duration) faults.NetFault
		applied bool // whether a call cancelled during its delay was applied
	}{
		{"slow response", faults.SlowResponse, true},
		{"delayed request", faults.DelayRequest, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newNetFixture(t, false)
			remove := f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: c.fault(200 * time.Millisecond)})
			start := time.Now()
			if err := f.put(t.Context(), f.client(0), "on-time", "1", false); err != nil {
				t.Fatalf("PutItem: %v", err)
			}
			if took := time.Since(start); took < 200*time.Millisecond {
				t.Errorf("PutItem took %v, want at least 200ms", took)
			}
			if f.stored(t, "on-time") == nil {
				t.Error("the item of the call that waited is absent")
			}
			// A delay no run outlasts: the call ends only by its cancellation,
			// made once the write is seen (slow response) or the fault picked
			// (delayed request).
			remove()
			f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: c.fault(time.Hour)})
			ready := func() bool { return f.tr.Faulted("PutItem") == 2 }
			if c.applied {
				ready = func() bool { return f.stored(t, "cut") != nil }
			}
			err := cutWhen(t, func(ctx context.Context) error { return f.put(ctx, f.client(0), "cut", "1", false) }, ready)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("PutItem cancelled during its delay: %v, want context.Canceled", err)
			}
			if got := f.stored(t, "cut") != nil; got != c.applied {
				t.Errorf("the item of the cancelled call written: %v, want %v", got, c.applied)
			}
			sent := 1
			if c.applied {
				sent = 2
			}
			wantCounts(t, f.tr, "PutItem", sent, 2)
		})
	}
}

// cutWhen runs call, awaits ready, then cancels the call's context and
// returns its error. The call returning before ready holds fails the test:
// the fault under test must hold the call until its cancellation.
func cutWhen(t *testing.T, call func(context.Context) error, ready func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case err := <-done:
			t.Fatalf("the call returned before its cancellation: %v", err)
		case <-tick.C:
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the call returned before its cancellation: %v", err)
	default:
	}
	cancel()
	return <-done
}

// Injected 500 and 503 responses reach the SDK as the service's errors,
// after applying the write or not.
func TestTransportServerStatus(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	remove := f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: faults.ServerStatus(500, false)})
	err := f.put(t.Context(), f.client(1), "500", "1", false)
	wantStatus(t, err, 500, "InternalServerError")
	var ise *types.InternalServerError
	if !errors.As(err, &ise) {
		t.Errorf("error %v: want DynamoDB's modelled *types.InternalServerError", err)
	}
	if f.stored(t, "500") != nil {
		t.Error("the item of a request never sent was written")
	}
	wantCounts(t, f.tr, "PutItem", 0, 1)
	remove()

	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Fault: faults.ServerStatus(503, true)})
	wantStatus(t, f.put(t.Context(), f.client(1), "503", "1", false), 503, "ServiceUnavailable")
	if f.stored(t, "503") == nil {
		t.Error("the item is absent: the write was not applied")
	}
	wantCounts(t, f.tr, "PutItem", 1, 2)
}

// The SDK's default retryer retries an injected 500.
func TestTransportServerStatusRetriedBySDK(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"PutItem"}, Count: 1, Fault: faults.ServerStatus(500, false)})
	if err := f.put(t.Context(), f.client(0), "k", "1", false); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	wantCounts(t, f.tr, "PutItem", 1, 1)
}

// failures makes n GetItem calls of key pk through db and returns the
// numbers (from 1) of those that failed.
func (f *netFixture) failures(t *testing.T, db *dynamodb.Client, pk string, n int) []int {
	t.Helper()
	var failed []int
	for i := 1; i <= n; i++ {
		if err := f.getVia(t.Context(), db, pk); err != nil {
			wantStatus(t, err, 500, "InternalServerError")
			failed = append(failed, i)
		}
	}
	return failed
}

// Every counts only the requests that meet Ops and Match.
func TestTransportNetRuleEvery(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	db := f.client(1)
	f.tr.Add(faults.NetRule{
		Ops:   []string{"GetItem"},
		Match: func(_ string, body []byte) bool { return bytes.Contains(body, []byte(`"every-hit"`)) },
		Every: 3,
		Fault: faults.ServerStatus(500, false),
	})
	var failed []int
	for i := 1; i <= 10; i++ {
		if got := f.failures(t, db, "every-hit", 1); len(got) > 0 {
			failed = append(failed, i)
		}
		if got := f.failures(t, db, "every-miss", 1); len(got) > 0 {
			t.Errorf("request %d of a key the rule does not match failed", i)
		}
	}
	if !slices.Equal(failed, []int{3, 6, 9}) {
		t.Errorf("requests %v failed, want [3 6 9]", failed)
	}
	wantCounts(t, f.tr, "GetItem", 17, 3)
}

// Count caps the requests a rule picks.
func TestTransportNetRuleCount(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"GetItem"}, Count: 2, Fault: faults.ServerStatus(500, false)})
	if failed := f.failures(t, f.client(1), "k", 5); !slices.Equal(failed, []int{1, 2}) {
		t.Errorf("requests %v failed, want [1 2]", failed)
	}
	wantCounts(t, f.tr, "GetItem", 3, 2)
}

// Match sees the operation and the JSON body, and requests whose body was
// read still reach the service intact.
func TestTransportNetRuleMatchBody(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	var (
		mu  sync.Mutex
		ops []string
	)
	f.tr.Add(faults.NetRule{
		Ops: []string{"PutItem"},
		Match: func(op string, body []byte) bool {
			mu.Lock()
			ops = append(ops, op)
			mu.Unlock()
			return bytes.Contains(body, []byte(`"match-me"`))
		},
		Fault: faults.ServerStatus(500, true),
	})
	db := f.client(1)
	wantStatus(t, f.put(t.Context(), db, "match-me", "matched", false), 500, "InternalServerError")
	if err := f.put(t.Context(), db, "other", "passed", false); err != nil {
		t.Fatalf("PutItem of a key the rule does not match: %v", err)
	}
	if v := attr(f.stored(t, "match-me"), "v"); v != "matched" {
		t.Errorf("matched item has v %q, want matched", v)
	}
	if v := attr(f.stored(t, "other"), "v"); v != "passed" {
		t.Errorf("other item has v %q, want passed", v)
	}
	if !slices.Equal(ops, []string{"PutItem", "PutItem"}) {
		t.Errorf("Match saw operations %v, want two PutItem", ops)
	}
	wantCounts(t, f.tr, "PutItem", 2, 1)
}

// The first rule that picks a request applies; rules after it do not count
// it.
func TestTransportNetRuleOrder(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"GetItem"}, Every: 2, Fault: faults.ServerStatus(503, false)})
	f.tr.Add(faults.NetRule{Ops: []string{"GetItem"}, Every: 2, Fault: faults.ServerStatus(500, false)})
	db := f.client(1)
	// Request 1: the first rule's 1st (skipped), the second's 1st (skipped).
	// Request 2: the first rule's 2nd (503). Request 3: the first's 3rd
	// (skipped), the second's 2nd (500).
	if err := f.getVia(t.Context(), db, "k"); err != nil {
		t.Fatalf("request 1: %v", err)
	}
	wantStatus(t, f.getVia(t.Context(), db, "k"), 503, "ServiceUnavailable")
	wantStatus(t, f.getVia(t.Context(), db, "k"), 500, "InternalServerError")
	wantCounts(t, f.tr, "GetItem", 1, 2)
}

// remove stops a rule, and calling it twice is harmless.
func TestTransportNetRuleRemove(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	remove := f.tr.Add(faults.NetRule{Fault: faults.ServerStatus(500, false)})
	db := f.client(1)
	wantStatus(t, f.getVia(t.Context(), db, "k"), 500, "InternalServerError")
	remove()
	remove()
	if err := f.getVia(t.Context(), db, "k"); err != nil {
		t.Fatalf("GetItem after remove: %v", err)
	}
	wantCounts(t, f.tr, "GetItem", 1, 1)
}

// A disabled transport passes every request, and counts none.
func TestTransportSetEnabled(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Fault: faults.ServerStatus(500, false)})
	db := f.client(1)
	f.tr.SetEnabled(false)
	if err := f.put(t.Context(), db, "k", "1", false); err != nil {
		t.Fatalf("PutItem while disabled: %v", err)
	}
	if err := f.getVia(t.Context(), db, "k"); err != nil {
		t.Fatalf("GetItem while disabled: %v", err)
	}
	wantCounts(t, f.tr, "PutItem", 0, 0)
	wantCounts(t, f.tr, "GetItem", 0, 0)
	f.tr.SetEnabled(true)
	wantStatus(t, f.getVia(t.Context(), db, "k"), 500, "InternalServerError")
	wantCounts(t, f.tr, "GetItem", 0, 1)
}

// Concurrent requests, rule changes and reads of the counts are safe, and
// Every picks exactly half of the requests.
func TestTransportConcurrent(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, false)
	f.tr.Add(faults.NetRule{Ops: []string{"GetItem"}, Every: 2, Fault: faults.ServerStatus(500, false)})
	db := f.client(1)
	const n = 32
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	for range n {
		wg.Go(func() {
			// A rule that never matches, added and removed meanwhile.
			remove := f.tr.Add(faults.NetRule{Match: func(string, []byte) bool { return false }, Fault: faults.StallRequest()})
			defer remove()
			err := f.getVia(t.Context(), db, "k")
			_ = f.tr.Sent("GetItem") + f.tr.Faulted("GetItem")
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != n/2 {
		t.Errorf("%d requests failed, want %d", failed, n/2)
	}
	wantCounts(t, f.tr, "GetItem", n/2, n/2)
}

// SQS's JSON protocol names operations as DynamoDB's does: a message whose
// response was lost was sent.
func TestTransportSQS(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, true)
	f.tr.Add(faults.NetRule{Ops: []string{"SendMessage"}, Fault: faults.LoseResponse()})
	client := f.env.Endpoints.SQS(f.env.AWS, func(o *sqs.Options) {
		o.HTTPClient = f.tr.HTTPClient()
		o.RetryMaxAttempts = 1
	})
	queue := f.env.OrchestratorQueueURL
	_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String("lost")})
	var oe *net.OpError
	if !errors.As(err, &oe) || !oe.Timeout() {
		t.Fatalf("SendMessage: %v, want a timeout *net.OpError", err)
	}
	out, err := f.env.Endpoints.SQS(f.env.AWS).ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue), WaitTimeSeconds: 5,
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "lost" {
		t.Errorf("received %d messages, want the one sent", len(out.Messages))
	}
	wantCounts(t, f.tr, "SendMessage", 1, 1)
}

// roundTripFunc is a base transport made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A request without X-Amz-Target has operation "", and a body a Match read
// reaches the base transport whole, with its length and GetBody.
func TestTransportBodyAndNoTarget(t *testing.T) {
	t.Parallel()
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(req.Body)
		if err != nil || string(body) != `{"a":1}` || req.ContentLength != int64(len(body)) {
			t.Errorf("base got body %q (length %d, error %v)", body, req.ContentLength, err)
		}
		again, _ := req.GetBody()
		if b, _ := io.ReadAll(again); string(b) != `{"a":1}` {
			t.Errorf("GetBody gives %q", b)
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	tr := faults.NewTransport(base)
	var seen []string
	tr.Add(faults.NetRule{Match: func(op string, body []byte) bool {
		seen = append(seen, op+" "+string(body))
		return false
	}, Fault: faults.StallRequest()})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://example.invalid/", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	_ = resp.Body.Close()
	if !slices.Equal(seen, []string{` {"a":1}`}) {
		t.Errorf("Match saw %q", seen)
	}
	wantCounts(t, tr, "", 1, 0)
}
