package duradyn_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/internal/tablekeys"
)

// stopReasons records the reasons RunUntilIdle logs as it stops.
type stopReasons struct {
	mu      sync.Mutex
	reasons []string
}

func (s *stopReasons) Enabled(context.Context, slog.Level) bool { return true }
func (s *stopReasons) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *stopReasons) WithGroup(string) slog.Handler            { return s }
func (s *stopReasons) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "runtime stopping" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "reason" {
			s.mu.Lock()
			s.reasons = append(s.reasons, a.Value.String())
			s.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestRunUntilIdleInvocations runs a function invoked now and then, as on
// AWS Lambda, on DynamoDB and SQS: each invocation makes a provider and a
// runtime, runs until idle and closes the provider, so nothing runs
// between invocations. The first invocation completes the fan-outs
// started before it and leaves the instance that waits for an event running; the
// event raised between the invocations is what the second one completes;
// a third, with nothing to do, writes nothing. All stop for idleness, well
// before their deadlines.
func TestRunUntilIdleInvocations(t *testing.T) {
	t.Parallel()
	square := durable.NewActivity("Square", func(ctx context.Context, n int) (int, error) { return n * n, nil })
	sumOfSquares := durable.NewOrchestration("SumOfSquares", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		squares, err := durable.AwaitAll(ctx, square.Call(ctx, n), square.Call(ctx, n+1), square.Call(ctx, n+2))
		total := 0
		for _, sq := range squares {
			total += sq
		}
		return total, err
	})
	approval := durable.NewOrchestration("Approval", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return durable.WaitForEvent[string](ctx, "Approved").Get(ctx)
	})
	reg, err := durable.NewRegistry(square, sumOfSquares, approval)
	if err != nil {
		t.Fatal(err)
	}
	env := dynamotest.NewEnv(t, true)
	// Every process on a table uses the table's shard count: the client's
	// starts must land in the shards the invocations' signalled fetches
	// query, or only a sweep finds them.
	const shards = 16
	client := durable.NewClient(env.NewProvider(t, dynamotest.Config{Queues: true, Shards: shards}))
	ctx := t.Context()
	var fanOuts []string
	for i := range 6 {
		id := fmt.Sprint("fan-out-", i)
		if err := sumOfSquares.Start(ctx, client, id, i); err != nil {
			t.Fatal(err)
		}
		fanOuts = append(fanOuts, id)
	}
	if err := approval.Start(ctx, client, "approval", struct{}{}); err != nil {
		t.Fatal(err)
	}

	var stops stopReasons
	invoke := func(m *dynamotest.Meter) {
		t.Helper()
		p := env.NewProvider(t, dynamotest.Config{Queues: true, Shards: shards, Meter: m})
		defer p.Close()
		rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) { o.Logger = slog.New(&stops) })
		if err != nil {
			t.Fatal(err)
		}
		ictx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		began := time.Now()
		if err := rt.RunUntilIdle(ictx, 2*time.Second); err != nil {
			t.Fatalf("RunUntilIdle: %v", err)
		}
		t.Logf("RunUntilIdle took %v", time.Since(began))
	}
	state := func(id string) durable.State {
		t.Helper()
		st, err := client.Status(ctx, id)
		if err != nil {
			t.Fatalf("status %s: %v", id, err)
		}
		return st.State
	}

	invoke(nil)
	for i, id := range fanOuts {
		if got := state(id); got != durable.StateCompleted {
			t.Fatalf("%s is %v after the first invocation, want completed", id, got)
		}
		want := i*i + (i+1)*(i+1) + (i+2)*(i+2)
		if out, err := durable.WaitForOutput[int](ctx, client, id); err != nil || out != want {
			t.Fatalf("%s returned %d, %v; want %d", id, out, err, want)
		}
	}
	if got := state("approval"); got != durable.StateRunning {
		t.Fatalf("approval is %v after the first invocation, want running (no event yet)", got)
	}
	if err := client.RaiseEvent(ctx, "approval", "Approved", "yes"); err != nil {
		t.Fatal(err)
	}
	invoke(nil)
	if got := state("approval"); got != durable.StateCompleted {
		t.Fatalf("approval is %v after the second invocation, want completed", got)
	}
	if out, err := durable.WaitForOutput[string](ctx, client, "approval"); err != nil || out != "yes" {
		t.Fatalf("approval returned %q, %v; want yes", out, err)
	}
	// An invocation with nothing to do writes nothing: it checks the
	// layout (GetItem) and sweeps each queue with a Scan of the ready
	// index, whatever the shards (16 here). Nothing to do includes no
	// wake-up signal left in the queues by the invocations before (a
	// signal that one received and did not delete comes back after the
	// visibility timeout, and costs a Query).
	drainQueues(t, env)
	var empty dynamotest.Meter
	invoke(&empty)
	usage := empty.Usage()
	t.Logf("an invocation with nothing to do: %d DynamoDB requests %v, %.1f capacity units", usage.Total(), usage.Requests, usage.TotalCapacity())
	for op := range usage.Requests {
		if op != "GetItem" && op != "Scan" {
			t.Errorf("an invocation with nothing to do made %s requests (%v), want only GetItem and Scan", op, usage.Requests)
		}
	}
	stops.mu.Lock()
	defer stops.mu.Unlock()
	if len(stops.reasons) != 3 || stops.reasons[0] != "idle" || stops.reasons[1] != "idle" || stops.reasons[2] != "idle" {
		t.Fatalf("the invocations stopped for %q, want idle three times", stops.reasons)
	}
}

// drainQueues deletes the messages of env's wake-up queues and waits until
// they hold none, visible or in flight.
func drainQueues(t *testing.T, env *dynamotest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := env.Endpoints.SQS(env.AWS)
	for _, url := range []string{env.OrchestratorQueueURL, env.WorkerQueueURL} {
		for {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatalf("drain %s: %v", url, err)
			}
			for _, m := range out.Messages {
				if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatalf("drain %s: %v", url, err)
				}
			}
			attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
				sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			}})
			if err != nil {
				t.Fatalf("drain %s: %v", url, err)
			}
			if len(out.Messages) == 0 && attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] == "0" &&
				attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0" {
				break
			}
		}
	}
}

// TestRunUntilIdleWaitsForAFetchFindingWork: a fetch that is finding work
// (sweeping the ready index, or taking an instance it found) counts as
// work, however slow the store: an invocation whose only instance's sweep,
// or lock write, takes three idle periods still runs that instance's turn,
// instead of stopping for idleness halfway through the fetch; so does one
// whose lock write is answered too late to use. The instance
// is started by a process without wake-up queues, so only a sweep finds it.
func TestRunUntilIdleWaitsForAFetchFindingWork(t *testing.T) {
	t.Parallel()
	for name, slow := range map[string]func(inst string) faults.Rule{
		"sweep": func(string) faults.Rule {
			// Every sweep: the process's fetches may sweep at once.
			return faults.Rule{Ops: []string{faults.OpScan}, Match: func(r faults.Request) bool {
				prefix, _ := r.Input.(*dynamodb.ScanInput).ExpressionAttributeValues[":prefix"].(*ddbtypes.AttributeValueMemberS)
				return prefix != nil && prefix.Value == tablekeys.ReadyOrchestratorPrefix
			}}
		},
		"lock write": lockWriteOf,
		// The lock lands but its answer comes after the claim's budget,
		// three quarters of the lease: the fetch releases it and takes
		// the instance again.
		"late lock write": func(inst string) faults.Rule {
			r := lockWriteOf(inst)
			r.Fault = faults.HoldResponse(faults.NewGate())
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runSlowFinding(t, slow)
		})
	}
}

// lockWriteOf picks the first write of inst's lock.
func lockWriteOf(inst string) faults.Rule {
	return faults.Rule{Ops: []string{faults.OpPutItem}, Count: 1, Match: func(r faults.Request) bool {
		pk, _ := r.Input.(*dynamodb.PutItemInput).Item["pk"].(*ddbtypes.AttributeValueMemberS)
		return pk != nil && strings.Contains(pk.Value, inst)
	}}
}

// runSlowFinding runs one invocation with idle 1 s whose request slow
// selects takes 3 s (unless the rule has a fault of its own), and checks
// that it completed the instance.
func runSlowFinding(t *testing.T, slow func(inst string) faults.Rule) {
	done := durable.NewOrchestration("Done", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		return "done", nil
	})
	reg, err := durable.NewRegistry(done)
	if err != nil {
		t.Fatal(err)
	}
	env := dynamotest.NewEnv(t, true)
	client := durable.NewClient(env.NewQuietWriter(t, dynamotest.Config{}))
	ctx := t.Context()
	const inst = "slow-to-find"
	if err := done.Start(ctx, client, inst, struct{}{}); err != nil {
		t.Fatal(err)
	}

	const idle = time.Second
	in := faults.New(61)
	rule := slow(inst)
	rule.Rate = 1
	if rule.Fault == nil {
		rule.Fault = faults.Delay(3 * idle)
	}
	in.Add(rule)
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.Client = in.DynamoDB(o.Client) }})
	defer p.Close()
	var stops stopReasons
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) { o.Logger = slog.New(&stops) })
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.RunUntilIdle(ctx, idle); err != nil {
		t.Fatalf("RunUntilIdle: %v", err)
	}
	if fired := in.Stats().Faults[rule.Fault.Kind()]; fired == 0 {
		t.Fatal("no request was delayed")
	}
	st, err := client.Status(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted {
		t.Fatalf("%s is %v after the invocation (stopped for %q), want completed", inst, st.State, stops.reasons)
	}
}
