package lambdahost_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/examples/orders"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/lambdahost"
)

var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
)

// helloRegistry serves Hello, and the order workflow with it.
func helloRegistry(t *testing.T) *durable.Registry {
	t.Helper()
	reg, err := durable.NewRegistry(append(orders.NewShop().Activities("lambda"), greet, hello, orders.ProcessOrder, orders.ShipOrder)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// newHost builds a host on env, closed when t ends.
func newHost(t *testing.T, env *dynamotest.Env, reg *durable.Registry, optFns ...func(*lambdahost.Options)) *lambdahost.Host {
	t.Helper()
	sqsClient := env.Endpoints.SQS(env.AWS)
	h, err := lambdahost.New(t.Context(), reg, append([]func(*lambdahost.Options){func(o *lambdahost.Options) {
		o.Logger = testlog.New(t)
		o.SQSClient = sqsClient
		o.Provider = func(po *dynamo.Options) {
			po.TableName = env.Table
			po.OrchestratorQueueURL = env.OrchestratorQueueURL
			po.WorkerQueueURL = env.WorkerQueueURL
			po.Shards = 4
			po.Client = env.Endpoints.DynamoDB(env.AWS)
			po.SQSClient = sqsClient
		}
	}}, optFns...)...)
	if err != nil {
		t.Fatalf("lambdahost.New: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// receiveBatch receives up to n messages of the queue at url, waiting up
// to wait for the first, as an event source mapping would, and returns
// them as the records of an SQS event.
func receiveBatch(t *testing.T, c *sqs.Client, url string, n int, wait time.Duration) events.SQSEvent {
	t.Helper()
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: int32(n), WaitTimeSeconds: int32(wait / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive from %s: %v", url, err)
	}
	var ev events.SQSEvent
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + url[strings.LastIndex(url, "/")+1:],
		})
	}
	return ev
}

// failedIDs lists the item identifiers of a response.
func failedIDs(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestQueuesRunTheWork: a deployment's event source mappings invoke the
// function with the signals of both queues; Hello and an order of the
// demo's workflow (fan-out, retries, a sub-orchestration with a timer, an
// external event) complete. The hosts' providers never receive from the
// queues themselves: the mappings alone consume them.
func TestQueuesRunTheWork(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{reg: helloRegistry(t)})
	s.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := hello.Start(ctx, s.client, "hello-1", "world"); err != nil {
		t.Fatal(err)
	}
	order := orders.Order{ID: "order-1", Customer: "Ada", Card: "4242-4242-4242-4242",
		Lines: []orders.Line{{SKU: "KB-87", Qty: 1, PriceCents: 12900}, {SKU: "MOUSE-3", Qty: 2, PriceCents: 4900}}}
	if err := orders.ProcessOrder.Start(ctx, s.client, order.ID, order); err != nil {
		t.Fatal(err)
	}
	if out, err := durable.WaitForOutput[string](ctx, s.client, "hello-1"); err != nil || out != "Hello, world!" {
		t.Fatalf("hello-1 = %q, %v; want Hello, world!", out, err)
	}
	awaitCustomStatus(ctx, t, s.client, order.ID, orders.StatusAwaitingDelivery)
	if err := s.client.RaiseEvent(ctx, order.ID, orders.EventDelivery, orders.Delivery{SignedBy: "Ada"}); err != nil {
		t.Fatal(err)
	}
	rc, err := durable.WaitForOutput[orders.Receipt](ctx, s.client, order.ID)
	if err != nil {
		t.Fatalf("ProcessOrder: %v", err)
	}
	if rc.TotalCents != 22700 || rc.Delivery != "signed by Ada" || rc.AuthCode == "" || rc.Tracking == "" {
		t.Errorf("receipt %+v, want $227.00, signed by Ada, with an auth code and a tracking number", rc)
	}
	st := s.stats()
	t.Logf("hosts: %+v; orchestrator mapping: %+v; worker mapping: %+v", st, s.esm[0].Stats(), s.esm[1].Stats())
	if st.SQSInvocations == 0 || s.esm[0].Stats().Deleted == 0 {
		t.Errorf("no batch reached the function through the orchestrator mapping (%+v, %+v)", st, s.esm[0].Stats())
	}
	if n := s.receives.Load(); n != 0 {
		t.Errorf("the hosts' providers received from the queues %d times, want never", n)
	}
}

// awaitCustomStatus waits until instance id reports custom status want.
func awaitCustomStatus(ctx context.Context, t *testing.T, c *durable.Client, id, want string) {
	t.Helper()
	var v uint64
	for {
		s, err := c.WaitForStatusChange(ctx, id, v)
		if err != nil {
			t.Fatalf("wait for status %q of %s: %v", want, id, err)
		}
		if s.CustomStatus != nil && *s.CustomStatus == want {
			return
		}
		if s.State.IsTerminal() {
			t.Fatalf("%s finished (%v) before reporting %q", id, s.State, want)
		}
		v = s.CustomStatusVersion
	}
}

// TestSignalForAnInstanceLockedElsewhereFails: a batch whose signal names
// an instance another process holds reports that message as failed, with
// its visibility shortened to the retry delay (SQS delivers it again in
// about a second, not after the queue's 30 s); once the lock is gone, the
// same message, delivered again, runs the instance to its end in one
// invocation.
func TestSignalForAnInstanceLockedElsewhereFails(t *testing.T) {
	t.Parallel()
	env := dynamotest.NewEnv(t, true)
	reg := helloRegistry(t)
	h := newHost(t, env, reg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := durable.NewClient(env.NewQuietWriter(t, dynamotest.Config{}))
	other := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		o.OrchestratorQueueURL, o.WorkerQueueURL = "", ""
	}})
	if err := hello.Start(ctx, client, "held", "held"); err != nil {
		t.Fatal(err)
	}
	item, err := other.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
	if err != nil || item == nil || item.Instance != "held" {
		t.Fatalf("the other process's fetch = %+v, %v; want the lock of held", item, err)
	}
	sqsClient := env.Endpoints.SQS(env.AWS)
	sendSignal(t, env, "held")
	batch := receiveBatch(t, sqsClient, env.OrchestratorQueueURL, 10, 5*time.Second)
	if len(batch.Records) != 1 {
		t.Fatalf("received %d messages, want the signal of held", len(batch.Records))
	}
	resp := invokeSQS(ctx, t, h, batch, 15*time.Second)
	if got := failedIDs(resp); len(got) != 1 || got[0] != batch.Records[0].MessageId {
		t.Fatalf("batch item failures %v, want the signal of held (%s)", got, batch.Records[0].MessageId)
	}
	began := time.Now()
	again := receiveBatch(t, sqsClient, env.OrchestratorQueueURL, 10, 10*time.Second)
	if len(again.Records) != 1 || again.Records[0].MessageId != batch.Records[0].MessageId {
		t.Fatalf("within 10 s the queue delivered %d messages, want the failed one again (its visibility timeout is 30 s; the host asked for 1 s)", len(again.Records))
	}
	t.Logf("the failed message came back after %v", time.Since(began).Round(time.Millisecond))
	if err := other.AbandonOrchestrationItem(ctx, item.LockToken, 0, false); err != nil {
		t.Fatal(err)
	}
	if resp := invokeSQS(ctx, t, h, again, 15*time.Second); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v once the lock was gone, want none", failedIDs(resp))
	}
	st, err := client.Status(ctx, "held")
	if err != nil || st.State != durable.StateCompleted {
		t.Fatalf("held is %+v, %v after the invocation; want completed in it (the turn hands Greet to the invocation's own worker slots)", st, err)
	}
}

// sendSignal sends the orchestrator signal of instance, as a client's
// start would, through a provider of the same table.
func sendSignal(t *testing.T, env *dynamotest.Env, instance string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"v": 1, "kind": "orchestrator", "shard": 0,
		"instance_b64": base64.StdEncoding.EncodeToString([]byte(instance))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Endpoints.SQS(env.AWS).SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(env.OrchestratorQueueURL), MessageBody: aws.String(string(body))})
	if err != nil {
		t.Fatal(err)
	}
}

// invokeSQS calls the host as Lambda would, with a deadline d away, and
// fails the test if it returns an error or after its deadline.
func invokeSQS(ctx context.Context, t *testing.T, h *lambdahost.Host, ev events.SQSEvent, d time.Duration) events.SQSEventResponse {
	t.Helper()
	ictx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	deadline, _ := ictx.Deadline()
	resp, err := h.HandleSQS(ictx, ev)
	if err != nil {
		t.Fatalf("HandleSQS: %v", err)
	}
	if late := time.Since(deadline); late > 0 {
		t.Fatalf("HandleSQS returned %v after its deadline", late)
	}
	return resp
}

// TestDeadlineTooClose: an invocation whose deadline is closer than
// StopBefore runs nothing: a batch reports every signal as failed (the
// undecodable body is not one), a sweep fails with ErrDeadlineTooClose.
func TestDeadlineTooClose(t *testing.T) {
	t.Parallel()
	env := dynamotest.NewEnv(t, true)
	h := newHost(t, env, helloRegistry(t))
	sendSignal(t, env, "late")
	batch := receiveBatch(t, env.Endpoints.SQS(env.AWS), env.OrchestratorQueueURL, 10, 5*time.Second)
	batch.Records = append(batch.Records, events.SQSMessage{MessageId: "garbage", Body: "not json", EventSource: "aws:sqs"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // StopBefore is 3 s
	defer cancel()
	resp, err := h.HandleSQS(ctx, batch)
	if err != nil {
		t.Fatalf("HandleSQS: %v", err)
	}
	if got := failedIDs(resp); len(got) != 1 || got[0] != batch.Records[0].MessageId {
		t.Errorf("batch item failures %v, want the signal's message alone", got)
	}
	if _, err := h.HandleSweep(ctx, lambdahost.SweepEvent{}); !errors.Is(err, lambdahost.ErrDeadlineTooClose) {
		t.Errorf("HandleSweep = %v, want ErrDeadlineTooClose", err)
	}
	if st := h.Stats(); st.Failed != 1 || st.Ignored != 1 || st.Records != 2 {
		t.Errorf("stats %+v, want 2 records, 1 failed, 1 ignored", st)
	}
}

// TestInvocationStopsBeforeItsDeadline: an activity that would outlive the
// invocation is cancelled with ErrShutdown StopBefore ahead of the
// deadline and abandoned, its signal sent for a later invocation, and the
// handler returns before the deadline, its signal counted as acted on.
func TestInvocationStopsBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		cause error
	)
	started := make(chan struct{}, 1)
	slow := durable.NewActivity("Slow", func(ctx context.Context, _ string) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		mu.Lock()
		cause = context.Cause(ctx)
		mu.Unlock()
		return "", ctx.Err()
	})
	waits := durable.NewOrchestration("Waits", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return slow.Call(ctx, in).Get(ctx)
	})
	reg, err := durable.NewRegistry(slow, waits)
	if err != nil {
		t.Fatal(err)
	}
	env := dynamotest.NewEnv(t, true)
	h := newHost(t, env, reg)
	client := durable.NewClient(env.NewProvider(t, dynamotest.Config{Queues: true}))
	if err := waits.Start(t.Context(), client, "waits", "x"); err != nil {
		t.Fatal(err)
	}
	sqsClient := env.Endpoints.SQS(env.AWS)
	batch := receiveBatch(t, sqsClient, env.OrchestratorQueueURL, 10, 5*time.Second)
	if len(batch.Records) == 0 {
		t.Fatal("no start signal on the orchestrator queue")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := h.HandleSQS(ctx, batch)
	returned := time.Now()
	if err != nil {
		t.Fatalf("HandleSQS: %v", err)
	}
	if returned.After(deadline) {
		t.Fatalf("HandleSQS returned %v after its deadline", returned.Sub(deadline))
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batch item failures %v, want none: the start was taken", failedIDs(resp))
	}
	select {
	case <-started:
	default:
		t.Fatal("the activity did not start within the invocation")
	}
	mu.Lock()
	got := cause
	mu.Unlock()
	if !errors.Is(got, durable.ErrShutdown) {
		t.Errorf("the activity's context ended with cause %v, want ErrShutdown", got)
	}
	work := receiveBatch(t, sqsClient, env.WorkerQueueURL, 10, 5*time.Second)
	if len(work.Records) == 0 {
		t.Error("the abandoned activity was not signalled on the worker queue for a later invocation")
	}
	t.Logf("returned %v before the deadline; %d worker signals", deadline.Sub(returned).Round(time.Millisecond), len(work.Records))
}

// TestSweepSignalsWorkNoSignalAnnounced: an instance started by a writer
// that sends no signal (as after a lost one) is left alone by a sweep while
// it is younger than SweepAge (its signal may be on its way) and signalled
// by one once it is older; the invocation that signal brings runs it.
func TestSweepSignalsWorkNoSignalAnnounced(t *testing.T) {
	t.Parallel()
	env := dynamotest.NewEnv(t, true)
	patient := newHost(t, env, helloRegistry(t), func(o *lambdahost.Options) { o.SweepAge = time.Hour })
	h := newHost(t, env, helloRegistry(t), func(o *lambdahost.Options) { o.SweepAge = 2 * time.Second })
	client := durable.NewClient(env.NewQuietWriter(t, dynamotest.Config{}))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := hello.Start(ctx, client, "quiet", "sweep"); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	if res, err := patient.HandleSweep(withTimeout(ctx, t, 20*time.Second), lambdahost.SweepEvent{}); err != nil || res.Found != 0 {
		t.Fatalf("a sweep with SweepAge 1h = %+v, %v; want nothing found", res, err)
	}
	time.Sleep(time.Until(written.Add(2 * time.Second))) // SweepAge: the sweep waits for time itself
	if res, err := h.HandleSweep(withTimeout(ctx, t, 20*time.Second), lambdahost.SweepEvent{}); err != nil || res.Signalled != 1 || res.Found != 1 {
		t.Fatalf("sweep = %+v, %v; want one signal, for quiet", res, err)
	}
	batch := receiveBatch(t, env.Endpoints.SQS(env.AWS), env.OrchestratorQueueURL, 10, 5*time.Second)
	if len(batch.Records) != 1 {
		t.Fatalf("%d messages on the orchestrator queue after the sweep, want 1", len(batch.Records))
	}
	if resp := invokeSQS(ctx, t, h, batch, 15*time.Second); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v", failedIDs(resp))
	}
	st, err := client.Status(ctx, "quiet")
	if err != nil || st.State != durable.StateCompleted {
		t.Fatalf("quiet is %+v, %v after the invocation; want completed", st, err)
	}
	if out, err := durable.Output[string](st); err != nil || out != "Hello, sweep!" {
		t.Fatalf("quiet = %q, %v; want Hello, sweep!", out, err)
	}
}

// withTimeout is ctx with a timeout d away, cancelled when t ends.
func withTimeout(ctx context.Context, t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// TestHandleRefusesUnknownEvents: a payload that is neither an SQS batch
// nor a sweep fails with ErrUnknownEvent, and nothing runs.
func TestHandleRefusesUnknownEvents(t *testing.T) {
	t.Parallel()
	h, err := lambdahost.New(t.Context(), helloRegistry(t), func(o *lambdahost.Options) {
		o.Provider = func(po *dynamo.Options) {
			po.TableName = "no-table"
			po.Shards = 1
			po.Client = dynamodb.New(dynamodb.Options{Region: "us-east-1"})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, payload := range []string{`{"foo":1}`, `{"Records":[{"eventSource":"aws:kinesis"}]}`, `[1]`, `{}`} {
		if _, err := h.Handle(t.Context(), json.RawMessage(payload)); !errors.Is(err, lambdahost.ErrUnknownEvent) {
			t.Errorf("Handle(%s) = %v, want ErrUnknownEvent", payload, err)
		}
	}
	if st := h.Stats(); st.SQSInvocations+st.SweepInvocations != 0 {
		t.Errorf("stats %+v: something ran", st)
	}
}
