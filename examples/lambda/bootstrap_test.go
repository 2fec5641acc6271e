package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/examples/orders"
	"github.com/duradyn/duradyn/internal/lambdasim"
	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator between the tests and stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// buildBootstrap builds this command as Lambda runs it (bootstrap, no RPC
// mode, no cgo) for this machine, and returns its path.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build bootstrap: %v", err)
	}
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-tags", "lambda.norpc", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// logWriter writes the process's output, line by line, to the test's log.
func logWriter(t *testing.T) io.Writer {
	r, w := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			t.Log("bootstrap: " + sc.Text())
		}
	}()
	t.Cleanup(func() {
		w.Close()
		wg.Wait()
	})
	return w
}

// functionEnv is the function's environment on env: what the Terraform
// module sets, plus the emulator's endpoints and static test credentials.
func functionEnv(env *dynamotest.Env) []string {
	return []string{
		"DURADYN_TABLE=" + env.Table,
		"DURADYN_ORCHESTRATOR_QUEUE_URL=" + env.OrchestratorQueueURL,
		"DURADYN_WORKER_QUEUE_URL=" + env.WorkerQueueURL,
		"DURADYN_SHARDS=4",
		"DURADYN_DYNAMODB_ENDPOINT=" + env.Endpoints.DynamoDBURL,
		"DURADYN_SQS_ENDPOINT=" + env.Endpoints.SQSURL,
		"AWS_REGION=" + env.AWS.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

// TestBootstrapThroughTheRuntimeAPI builds bootstrap and runs it as Lambda
// does: a process that takes its invocations from the Runtime API (served
// here) through aws-lambda-go's lambda.Start. The deadline header reaches
// the handler: an invocation too close to its deadline is refused with a
// function error, and every other returns before its deadline. Unknown
// events come back as function errors on /error. Then the event source
// mappings of both queues and the sweep schedule drive the process: Hello
// and an order of the demo's workflow complete.
func TestBootstrapThroughTheRuntimeAPI(t *testing.T) {
	env := dynamotest.NewEnv(t, true) // first: it skips the test when no emulator may run
	bin := buildBootstrap(t)
	sqsClient := env.Endpoints.SQS(env.AWS)
	for _, url := range []string{env.OrchestratorQueueURL, env.WorkerQueueURL} {
		_, err := sqsClient.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "15"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := logWriter(t)
	var procs []*lambdasim.ProcessEnvironment
	var mu sync.Mutex
	fn := &lambdasim.Function{
		Timeout:         10 * time.Second,
		MaxEnvironments: 2,
		New: func(ctx context.Context) (lambdasim.Environment, error) {
			p, err := lambdasim.StartProcess(ctx, bin, functionEnv(env), out)
			if err == nil {
				mu.Lock()
				procs = append(procs, p)
				mu.Unlock()
			}
			return p, err
		},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// The deadline header: 2 s away is less than the host's StopBefore
	// (3 s), so the sweep is refused, by the handler, as a function error.
	proc, err := lambdasim.StartProcess(ctx, bin, functionEnv(env), out)
	if err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = proc.Invoke(ictx, []byte(`{"duradyn":"sweep"}`))
	icancel()
	var fe *lambdasim.FunctionError
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "deadline too close") {
		t.Fatalf("a sweep 2 s from its deadline = %v, want a function error saying the deadline is too close", err)
	}
	ictx, icancel = context.WithTimeout(ctx, 10*time.Second)
	_, err = proc.Invoke(ictx, []byte(`{"hello":"world"}`))
	icancel()
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "unknown event") {
		t.Fatalf("an unknown event = %v, want a function error", err)
	}
	ictx, icancel = context.WithTimeout(ctx, 10*time.Second)
	res, err := proc.Invoke(ictx, []byte(`{"duradyn":"sweep"}`))
	icancel()
	if err != nil || !strings.Contains(string(res), `"signalled":0`) {
		t.Fatalf("a sweep = %s, %v; want nothing to signal", res, err)
	}
	if err := proc.Close(); err != nil {
		t.Fatal(err)
	}

	client := durable.NewClient(env.NewProvider(t, dynamotest.Config{Queues: true}))
	stop := runMappings(t, fn, sqsClient, env)
	if err := client.StartOrchestration(ctx, "hello-1", "Hello", "world"); err != nil {
		t.Fatal(err)
	}
	order := orders.Order{ID: "order-1", Customer: "Ada", Card: "4242-4242-4242-4242",
		Lines: []orders.Line{{SKU: "KB-87", Qty: 1, PriceCents: 12900}}}
	if err := client.StartOrchestration(ctx, order.ID, "ProcessOrder", order); err != nil {
		t.Fatal(err)
	}
	if out, err := durable.WaitForOutput[string](ctx, client, "hello-1"); err != nil || out != "Hello, world!" {
		t.Fatalf("hello-1 = %q, %v; want Hello, world!", out, err)
	}
	awaitCustomStatus(ctx, t, client, order.ID, orders.StatusAwaitingDelivery)
	if err := client.RaiseEvent(ctx, order.ID, orders.EventDelivery, orders.Delivery{SignedBy: "Ada"}); err != nil {
		t.Fatal(err)
	}
	if rc, err := durable.WaitForOutput[orders.Receipt](ctx, client, order.ID); err != nil || rc.Delivery != "signed by Ada" {
		t.Fatalf("order-1 = %+v, %v; want delivered, signed by Ada", rc, err)
	}
	stop()
	recs := fn.Records()
	for _, r := range recs {
		if r.Outcome != lambdasim.Succeeded {
			t.Errorf("invocation %d: %s", r.Seq, r.Outcome)
		} else if r.End.After(r.Deadline) {
			t.Errorf("invocation %d returned %v after its deadline", r.Seq, r.End.Sub(r.Deadline))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var nexts int64
	for _, p := range procs {
		nexts += p.API().Nexts()
	}
	t.Logf("%d invocations in %d processes; %d calls of /invocation/next", len(recs), len(procs), nexts)
	if len(recs) == 0 || nexts < int64(len(recs)) {
		t.Errorf("%d invocations, %d calls of /invocation/next: the processes did not serve them", len(recs), nexts)
	}
}

// runMappings runs an event source mapping per queue, and a sweep every
// 5 s, until the returned stop is called; stop retires the function.
func runMappings(t *testing.T, fn *lambdasim.Function, c *sqs.Client, env *dynamotest.Env) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	for _, url := range []string{env.OrchestratorQueueURL, env.WorkerQueueURL} {
		m := &lambdasim.EventSourceMapping{Function: fn, SQS: c, QueueURL: url, MaximumConcurrency: 2}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil {
				t.Errorf("event source mapping: %v", err)
			}
		}()
	}
	sweeps := &lambdasim.Schedule{Function: fn, Every: 5 * time.Second, Payload: []byte(`{"duradyn":"sweep"}`)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sweeps.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err := fn.Close(); err != nil {
				t.Errorf("close the function: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
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
