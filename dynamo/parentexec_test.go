package dynamo_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/legacystart"
	"github.com/duradyn/duradyn/provider"
)

// A fan-out's children complete on DynamoDB without one request for the
// parent's history or execution records: each child's start records the
// execution that scheduled it. The parent is kept locked while the
// children complete, so that its own turns read nothing meanwhile.
func TestFanOutChildCompletionsQueryNoParentHistory(t *testing.T) {
	t.Parallel()
	const n = 100
	if reads := peChildCompletions(t, n, false); reads != 0 {
		t.Fatalf("the children's completions made %d requests for the parent's history; want none", reads)
	}
}

// A child whose start does not record the parent's execution (written by
// another tool) looks it up: its completion reads the parent's history,
// which the count above would see.
func TestChildStartWithoutParentExecutionQueriesParentHistory(t *testing.T) {
	t.Parallel()
	const n = 5
	if reads := peChildCompletions(t, n, true); reads < n {
		t.Fatalf("the children's completions made %d requests for the parent's history; want at least one per child (%d)", reads, n)
	}
}

// peChildCompletions runs a parent that fans out to n children waiting
// for an event, holds the parent's lock, lets the children complete on a
// metered runtime, then releases the parent and checks its result. It
// returns the requests for the parent's history that the children's
// completions made. With strip, the children's starts do not record the
// parent's execution.
func peChildCompletions(t *testing.T, n int, strip bool) int64 {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const parent = "fan-out"
	env := dynamotest.NewEnv(t, true)
	setup := env.NewProvider(t, dynamotest.Config{Queues: true})
	client := durable.NewClient(setup)

	// The parent's fan-out and the children's first turns, on a runtime
	// that then stops.
	var first provider.Provider = setup
	if strip {
		first = &peStripStarts{Provider: setup}
	}
	rt := peRuntime(t, first, n)
	if err := client.StartOrchestration(ctx, parent, "PeParent", n); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := client.WaitForSubscription(ctx, peChild(parent, i), "go"); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	lock := peLockInstance(ctx, t, client, setup, parent)

	// The children's completions, metered.
	meter := &dynamotest.Meter{}
	hist := &peHistoryReads{pk: keys.InstancePK(parent)}
	measured := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
		o.Client = env.Endpoints.DynamoDB(env.AWS, meter.Attach, hist.attach)
	}})
	rt = peRuntime(t, measured, n)
	defer func() {
		if err := rt.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	for i := range n {
		if err := client.RaiseEvent(ctx, peChild(parent, i), "go", i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if st, err := client.WaitForCompletion(ctx, peChild(parent, i)); err != nil || st.State != durable.StateCompleted {
			t.Fatalf("child %d: %+v, %v; want completed", i, st, err)
		}
	}
	during, usage := hist.reads.Load(), meter.Usage()
	t.Logf("%d child completions: %d requests (%v), %.1f capacity units, %d requests for the parent's history",
		n, usage.Total(), usage.Requests, usage.TotalCapacity(), during)

	// The parent takes the results in its execution.
	if err := setup.AbandonOrchestrationItem(ctx, lock, 0, true); err != nil {
		t.Fatal(err)
	}
	st, err := client.WaitForCompletion(ctx, parent)
	if err != nil || st.State != durable.StateCompleted || st.Output != strconv.Itoa(n*(n-1)) {
		t.Fatalf("parent: %+v, %v; want completed with %d", st, err, n*(n-1))
	}
	if hist.reads.Load() == during {
		t.Fatal("the parent's own turns read its history without a request the count saw")
	}
	return during
}

// peRuntime starts a runtime of the fan-out's orchestrations on p.
func peRuntime(t *testing.T, p provider.Provider, n int) *durable.Runtime {
	t.Helper()
	child := durable.NewOrchestration("PeChild", func(ctx *durable.OrchestrationContext, i int) (int, error) {
		v, err := durable.WaitForEvent[int](ctx, "go").Get(ctx)
		return 2 * v, err
	})
	parent := durable.NewOrchestration("PeParent", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		fs := make([]durable.Future[int], n)
		for i := range fs {
			fs[i] = child.CallSub(ctx, i, durable.WithInstanceID(peChild(ctx.InstanceID(), i)))
		}
		got, err := durable.AwaitAll(ctx, fs...)
		sum := 0
		for i, v := range got {
			if v != 2*i {
				return 0, fmt.Errorf("child %d answered %d, want %d", i, v, 2*i)
			}
			sum += v
		}
		return sum, err
	})
	reg, err := durable.NewRegistry(child, parent)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		// Requests to the emulator take tens of milliseconds: a lease that
		// a turn of n schedules keeps.
		o.OrchestratorLockTimeout = 10*time.Second + time.Duration(n)*100*time.Millisecond
		o.OrchestratorLockRenewalBuffer = 3 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return rt
}

func peChild(parent string, i int) string { return parent + "-child-" + strconv.Itoa(i) }

// peLockInstance takes the lock of instance, idle and the only instance
// with work once an event is raised to it, and returns its token.
func peLockInstance(ctx context.Context, t *testing.T, client *durable.Client, p provider.Provider, instance string) string {
	t.Helper()
	if err := client.RaiseEvent(ctx, instance, "unawaited", 0); err != nil {
		t.Fatal(err)
	}
	item, err := p.FetchOrchestrationItem(ctx, 10*time.Minute, 30*time.Second, nil)
	if err != nil || item == nil || item.Instance != instance {
		t.Fatalf("fetch: %+v, %v; want %s", item, err, instance)
	}
	return item.LockToken
}

// peStripStarts is a provider whose turns' child starts do not record the
// parent's execution, as a start written by another tool.
type peStripStarts struct{ *dynamo.Provider }

func (p *peStripStarts) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	return p.Provider.AckOrchestrationItem(ctx, lockToken, legacystart.Strip(commit))
}

// peHistoryReads counts, through an SDK middleware, the requests that
// read the history rows or execution records of partition pk.
type peHistoryReads struct {
	pk    string
	reads atomic.Int64
}

func (m *peHistoryReads) attach(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ParentHistoryReads",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if m.readsHistory(in.Parameters) {
					m.reads.Add(1)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

func (m *peHistoryReads) readsHistory(params any) bool {
	switch in := params.(type) {
	case *dynamodb.QueryInput:
		if peString(in.ExpressionAttributeValues[":pk"]) != m.pk {
			return false
		}
		for name, v := range in.ExpressionAttributeValues {
			if name != ":pk" && peHistoryKey(peString(v)) {
				return true
			}
		}
	case *dynamodb.GetItemInput:
		return peString(in.Key["pk"]) == m.pk && peHistoryKey(peString(in.Key["sk"]))
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				if peString(k["pk"]) == m.pk && peHistoryKey(peString(k["sk"])) {
					return true
				}
			}
		}
	}
	return false
}

// peHistoryKey reports a sort key (or key bound) of a history row or an
// execution record.
func peHistoryKey(sk string) bool {
	return strings.HasPrefix(sk, keys.HistPrefix) || strings.HasPrefix(sk, keys.ExecPrefix)
}

func peString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
