package locks_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/queues"
)

// A lock guards a job: whoever acquires it runs the job and hands the
// fencing token to what the job writes to.
func ExampleNewMemory() {
	ctx := context.Background()
	l, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Owner = "scheduler-1" })
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, ok, err := l.Acquire(ctx, "job:nightly-report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acquired:", ok, "by", lease.Owner, "fence", lease.Fence)

	// Not reentrant: the same owner does not acquire it twice.
	_, ok, _ = l.Acquire(ctx, "job:nightly-report", time.Minute)
	fmt.Println("acquired again:", ok)

	released, _ := l.Release(ctx, "job:nightly-report")
	fmt.Println("released:", released)
	lease, _, _ = l.Acquire(ctx, "job:nightly-report", time.Minute)
	fmt.Println("next fence:", lease.Fence)
	// Output:
	// acquired: true by scheduler-1 fence 1
	// acquired again: false
	// released: true
	// next fence: 2
}

// Two lockers on one store behave as two processes: a blocked Acquire in
// one takes the lock as soon as the other releases it.
func ExampleNewMemoryStore() {
	ctx := context.Background()
	store := locks.NewMemoryStore()
	newLocker := func(owner string) *locks.Memory {
		l, err := locks.NewMemory(func(o *locks.MemoryOptions) { o.Owner, o.Store = owner, store })
		if err != nil {
			log.Fatal(err)
		}
		return l
	}
	first, second := newLocker("first"), newLocker("second")
	defer first.Close()
	defer second.Close()

	if _, ok, _ := first.Acquire(ctx, "k", time.Hour); !ok {
		log.Fatal("not acquired")
	}
	done := make(chan locks.Lease)
	go func() {
		lease, _, err := second.Acquire(ctx, "k", time.Hour, locks.WithWait(time.Minute))
		if err != nil {
			log.Fatal(err)
		}
		done <- lease
	}()
	if _, err := first.Release(ctx, "k"); err != nil {
		log.Fatal(err)
	}
	lease := <-done
	fmt.Println(lease.Owner, lease.Fence)
	// Output: second 2
}

// A locker on the duradyn table, whose release notices reach the lockers
// of other processes through the orchestrator queue. It needs AWS
// credentials, a table and a queue, so it is compiled but not run.
func ExampleNewDynamo() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	signals, err := queues.New(sqs.NewFromConfig(cfg), func(o *queues.Options) {
		o.OrchestratorQueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-orchestrator"
	})
	if err != nil {
		log.Fatal(err)
	}
	defer signals.Close()
	l, err := locks.NewDynamo(cfg, func(o *locks.DynamoOptions) {
		o.TableName = "duradyn"
		o.Signals = signals
	})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// Wait up to 30 s for the lock; renew the lease while the work runs.
	lease, ok, err := l.Acquire(ctx, "job:invoices", time.Minute, locks.WithWait(30*time.Second))
	if err != nil || !ok {
		log.Fatalf("not acquired: %v", err)
	}
	if ok, err := l.Extend(ctx, "job:invoices", time.Minute); err != nil || !ok {
		log.Fatalf("lease lost: %v", err)
	}
	log.Printf("running with fence %d", lease.Fence)
	if _, err := l.Release(ctx, "job:invoices"); err != nil {
		log.Print(err)
	}

	// What a "locks list" command prints.
	holders, err := l.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range holders {
		fmt.Printf("%s\t%s\t%s\n", h.Key, h.Owner, h.Until.Format(time.RFC3339))
	}
}

// Reset frees a lock whose holder crashed, without waiting for its lease to
// end; the next holder still gets a larger fencing token.
func ExampleMemory_Reset() {
	ctx := context.Background()
	l, err := locks.NewMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	crashed, _, _ := l.Acquire(ctx, "k", time.Hour, locks.WithOwner("crashed-worker"))
	removed, _ := l.Reset(ctx, "k")
	next, _, _ := l.Acquire(ctx, "k", time.Hour)
	fmt.Println(removed, next.Fence > crashed.Fence)
	// Output: true true
}

// Instrument wraps any locker: every call becomes a span and counts in the
// metrics locks.operations and locks.operation.duration, by operation and
// result.
func ExampleInstrument() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	memory, err := locks.NewMemory()
	if err != nil {
		log.Fatal(err)
	}
	l, err := locks.Instrument(memory, func(o *locks.TelemetryOptions) { o.MeterProvider = mp })
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	_, _, _ = l.Acquire(ctx, "job:nightly-report", time.Minute)
	_, _, _ = l.Acquire(ctx, "job:nightly-report", time.Minute) // not reentrant: not acquired

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				result, _ := p.Attributes.Value("locks.result")
				fmt.Println(m.Name, result.AsString(), p.Value)
			}
		}
	}
	// Unordered output:
	// locks.operations acquired 1
	// locks.operations not_acquired 1
}
