package dynamo_test

import (
	"fmt"
	"sync"
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
	"github.com/duradyn/duradyn/queues"
)

// sweptOnce returns a provider with wake-up queues, one shard and sweeps
// an hour apart (metered by meter when it is not nil), after the worker
// fetch that makes its only sweep: what its fetches find later, signals
// led them to.
func sweptOnce(t *testing.T, meter *dynamotest.Meter) *dynamo.Provider {
	t.Helper()
	p, _ := dynamotest.New(t, dynamotest.Config{Queues: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	if got, err := p.FetchWorkItem(t.Context(), longLock, 10*time.Millisecond, nil, provider.AnyTag()); err != nil || got != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", got, err)
	}
	return p
}

// TestSignalForHeldWorkMakesNoRequest: a signal reaches every waiting
// fetch of a process. One that names an activity this process holds, or
// has just acked, announces nothing new: the fetch that receives it after
// another took the activity makes no request for it (before, a Query of
// the shard and a read of the row). An abandoned activity's signal is not
// stale: the next fetch takes the activity again.
func TestSignalForHeldWorkMakesNoRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	// Every request counted below is one a signal caused.
	p := sweptOnce(t, meter)
	const inst = "held-work"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "ack scheduling")
	w, err := p.FetchWorkItem(ctx, longLock, 5*time.Second, nil, provider.AnyTag())
	if err != nil || w == nil {
		t.Fatalf("FetchWorkItem: %+v, %v", w, err)
	}
	// The turn's first activity runs in the instance's slot.
	sig := queues.Signal{Kind: queues.Worker, Shard: 0, Instance: inst, Work: keys.SlotSK}

	noRequestFor := func(when string) {
		t.Helper()
		meter.Reset()
		dynamo.RequeueSignals(p, sig)
		if got, err := p.FetchWorkItem(ctx, longLock, 200*time.Millisecond, nil, provider.AnyTag()); err != nil || got != nil {
			t.Fatalf("fetch with a signal for an activity %s: %+v, %v; want nothing", when, got, err)
		}
		if used := meter.Usage(); used.Total() != 0 {
			t.Errorf("a signal for an activity %s cost %v; want no request", when, used.Requests)
		}
	}
	noRequestFor("this process holds")

	must(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false), "abandon")
	dynamo.RequeueSignals(p, sig)
	again, err := p.FetchWorkItem(ctx, longLock, 5*time.Second, nil, provider.AnyTag())
	if err != nil || again == nil || again.Item.ID != w.Item.ID || again.AttemptCount != 2 {
		t.Fatalf("fetch after the abandon: %+v, %v; want activity %d again, attempt 2", again, err, w.Item.ID)
	}
	must(t, p.AckWorkItem(ctx, again.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: again.Item.ID, Result: "r"}), "ack")
	noRequestFor("this process acked")
}

// TestSignalForWorkEnqueuedAgainIsNotStale: an instance deleted and
// started again under its name schedules activities with the identities
// of the old ones. A signal for one of them, arriving while this process
// still remembers acking the old one, announces new work: its claim names
// the new enqueue. The fetch must take it at once, not drop the signal as
// stale and leave the activity to a sweep an interval later.
func TestSignalForWorkEnqueuedAgainIsNotStale(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p := sweptOnce(t, nil)
	const inst = "enqueued-again"
	run := func(what string) {
		t.Helper()
		item := startAndFetch(ctx, t, p, inst)
		// No worker fetch waits: the turn signals the activity instead
		// of handing it over.
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), what+": ack scheduling")
		w, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, nil, provider.AnyTag())
		if err != nil || w == nil || w.Item.ID != 2 || w.AttemptCount != 1 {
			t.Fatalf("%s: fetch: %+v, %v; want activity 2, attempt 1", what, w, err)
		}
		must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}), what+": ack")
	}
	run("first instance")
	if _, err := p.DeleteInstancesAtomic(ctx, []string{inst}, true); err != nil {
		t.Fatalf("delete: %v", err)
	}
	run("instance started again")
}

// TestShardBacklogNeedsNoSweep: the activities of a fan-out share one
// shard of the ready index. With sweeps an hour apart, one fetcher takes
// them all one after another, each fetch led by the signal the fetch
// before it handed on, even when the signals the process keeps filled up
// with signals naming rows (what a sweep hands the process's other
// fetches) that the fetcher then took: those went stale, and the shard's
// own signal, crowded out of the list, had been lost with them.
func TestShardBacklogNeedsNoSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p := sweptOnce(t, nil)
	const inst, n = "backlog", 120
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)), "ack scheduling")
	// A full list of signals naming the rows after the first.
	var named []queues.Signal
	for id := uint64(3); len(named) < queues.DefaultMaxPending; id++ {
		named = append(named, queues.Signal{Kind: queues.Worker, Shard: 0, Instance: inst, Work: keys.WorkerSK(1, id)})
	}
	dynamo.RequeueSignals(p, named...)
	seen := map[uint64]bool{}
	for i := range n {
		w, err := p.FetchWorkItem(ctx, longLock, 2*time.Second, nil, provider.AnyTag())
		if err != nil || w == nil {
			t.Fatalf("fetch %d of %d: %+v, %v; want an activity (the process lost track of its backlog)", i+1, n, w, err)
		}
		if seen[w.Item.ID] {
			t.Fatalf("fetch %d: activity %d again", i+1, w.Item.ID)
		}
		seen[w.Item.ID] = true
		must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}), "ack")
	}
}

// TestInstanceBacklogNeedsNoSweep: instances with messages whose signals
// were lost (a writer without queues here; a crash on AWS) are found by a
// sweep. One sweep saw them all and handed the process more signals than
// it keeps; with sweeps an hour apart, the process went on taking
// instances only while those lasted, then waited for the next sweep. Now
// a sweep that handed signals on is followed by another as soon as the
// process runs out of them, and the backlog is taken without a wait, also
// when the ready index lags (it then shows instances the process has just
// taken, which the sweeps must pass over). With two fetches at once, the
// next sweep waits until neither holds signals: a fetch that found the
// list empty because the other had just taken it swept again, one sweep
// every few turns for as long as the backlog lasted.
func TestInstanceBacklogNeedsNoSweep(t *testing.T) {
	t.Parallel()
	for _, fetchers := range []int{1, 2} {
		for _, lag := range []time.Duration{0, 300 * time.Millisecond} {
			t.Run(fmt.Sprintf("%d fetchers, index lag %v", fetchers, lag), func(t *testing.T) {
				t.Parallel()
				testInstanceBacklog(t, fetchers, lag)
			})
		}
	}
}

func testInstanceBacklog(t *testing.T, fetchers int, lag time.Duration) {
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	const n = 2*queues.DefaultMaxPending + 30
	for i := range n {
		must(t, writer.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("lost-%03d", i)), 0), "enqueue")
	}
	in := faults.New(7)
	if lag > 0 {
		in.SetIndexLag(lag/2, lag, "ready")
	}
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(o.Client)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		// Rows a sweep hands on must have been eligible for a while (a
		// younger row's signal may be on its way): this process's clock
		// is ahead, so every row is old enough.
		o.Now = func() time.Time { return time.Now().Add(time.Minute) }
	}})
	var (
		mu    sync.Mutex
		seen  = map[string]bool{}
		taken int
	)
	// next counts a fetch to make, or reports that all n are made.
	next := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if taken == n {
			return false
		}
		taken++
		return true
	}
	errs := make(chan error, fetchers)
	for range fetchers {
		go func() {
			errs <- func() error {
				for next() {
					// The poll timeout only bounds a failure: a process
					// that lost track of the backlog waits for the hourly
					// sweep, past any timeout; one that kept it answers as
					// soon as the other fetch's sweep hands work on, which
					// on a loaded machine can take seconds.
					item, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
					if err != nil || item == nil {
						return fmt.Errorf("a fetch with instances left: %+v, %v; want an instance (the process lost track of the backlog its sweep saw)", item, err)
					}
					mu.Lock()
					again := seen[item.Instance]
					seen[item.Instance] = true
					mu.Unlock()
					if again {
						return fmt.Errorf("instance %s fetched twice", item.Instance)
					}
					done := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(item.Instance)}, Metadata: meta()}
					if err := p.AckOrchestrationItem(ctx, item.LockToken, done); err != nil {
						return fmt.Errorf("ack of %s: %w", item.Instance, err)
					}
				}
				return nil
			}()
		}()
	}
	for range fetchers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A first turn is 3 requests (control rows, lock, commit); the sweeps
	// come on top, one for every sweepHandLimit instances and a Scan that
	// found the index too large: not one per fetch. Two fetches also try
	// some instances the other has just taken (a read of its control
	// rows each).
	used := meter.Usage()
	t.Logf("requests: %v", used.Requests)
	if lag == 0 {
		if extra := used.Total() - 3*n; extra > 2*(n/50+1)+n/20*(fetchers-1) {
			t.Errorf("%d requests for %d first turns: %d beyond their 3 each; want a sweep per 50 instances at most (%v)", used.Total(), n, extra, used.Requests)
		}
	}
}

// TestBacklogBehindOneInstancesPage: a sweep whose page of the ready index
// shows only the instance it takes (one instance's many messages fill it)
// hands nothing on, but the shard holds more: the next fetch sweeps at
// once. Before, the backlog was recorded only when the sweep handed
// signals on, and the other instances waited for the next interval.
func TestBacklogBehindOneInstancesPage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	must(t, writer.EnqueueForOrchestrator(ctx, startItem("busy"), 0), "enqueue")
	for i := range 59 {
		must(t, writer.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: "busy", Name: "e", Data: fmt.Sprint(i)}, 0), "raise")
	}
	// More rows than a sweep's Scan reads: the sweeps query the shard, a
	// page at a time.
	for i := range 160 {
		must(t, writer.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("later-%03d", i)), 0), "enqueue")
	}
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		o.Now = func() time.Time { return time.Now().Add(time.Minute) } // every row old enough to hand on
	}})
	// busy's messages take two turns (a turn takes at most 45); the third
	// fetch at the latest takes another instance.
	for turn := 1; ; turn++ {
		// The poll timeout only bounds a failure: a process that lost track
		// of the backlog waits for the hourly sweep.
		item, err := p.FetchOrchestrationItem(ctx, longLock, 20*time.Second, nil)
		if err != nil || item == nil {
			t.Fatalf("fetch %d with instances left: %+v, %v; want an instance (the process lost track of the backlog)", turn, item, err)
		}
		if item.Instance != "busy" {
			return
		}
		if turn > 2 {
			t.Fatalf("fetch %d took busy again", turn)
		}
		history := []provider.Event{ev(uint64(turn), "busy", provider.ExternalEvent{Name: "e", Data: "x"})}
		if turn == 1 {
			history[0] = started("busy")
		}
		done := provider.TurnCommit{ExecutionID: 1, HistoryDelta: history, Metadata: meta()}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, done), "ack")
	}
}

// TestSignalForConsumedMessageMakesNoRequest: an orchestrator signal
// reaches every waiting fetch of a process. One that names a message this
// process's ack has consumed announces nothing new: a fetch that receives it
// after another took the instance makes no request for it (before, a
// Query of the instance's control rows, which found nothing to do; with 8
// orchestration slots, a third more such Queries than turns). A message
// of an abandoned turn is not consumed: its signal leads to it again.
func TestSignalForConsumedMessageMakesNoRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Queues: true, Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		// One sweep an hour: every request counted below is one a
		// signal caused.
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
	}})
	// The first fetch sweeps; none after it does.
	if got, err := p.FetchOrchestrationItem(ctx, longLock, 10*time.Millisecond, nil); err != nil || got != nil {
		t.Fatalf("fetch of an empty queue: %+v, %v", got, err)
	}
	// signalOf is the signal of instance's one queued message.
	signalOf := func(instance string) queues.Signal {
		t.Helper()
		out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &env.Table,
			KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :q)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.InstancePK(instance)}, ":q": &types.AttributeValueMemberS{Value: keys.QueuePrefix}},
		})
		if err != nil || len(out.Items) != 1 {
			t.Fatalf("messages of %s: %v, %v; want one", instance, out, err)
		}
		sk := out.Items[0]["sk"].(*types.AttributeValueMemberS).Value
		return queues.Signal{Kind: queues.Orchestrator, Shard: 0, Instance: instance, Work: sk}
	}

	must(t, p.EnqueueForOrchestrator(ctx, startItem("consumed"), 0), "enqueue")
	sig := signalOf("consumed")
	item, err := p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem: %+v, %v", item, err)
	}
	done := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(item.Instance)}, Metadata: meta()}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, done), "ack")
	meter.Reset()
	dynamo.RequeueSignals(p, sig)
	if got, err := p.FetchOrchestrationItem(ctx, longLock, 200*time.Millisecond, nil); err != nil || got != nil {
		t.Fatalf("fetch with a signal for a consumed message: %+v, %v; want nothing", got, err)
	}
	if used := meter.Usage(); used.Total() != 0 {
		t.Errorf("a signal for a message this process consumed cost %v; want no request", used.Requests)
	}

	must(t, p.EnqueueForOrchestrator(ctx, startItem("abandoned"), 0), "enqueue")
	sig = signalOf("abandoned")
	item, err = p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem: %+v, %v", item, err)
	}
	must(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "abandon")
	dynamo.RequeueSignals(p, sig)
	again, err := p.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
	if err != nil || again == nil || again.Instance != "abandoned" {
		t.Fatalf("fetch after the abandon: %+v, %v; want instance abandoned again", again, err)
	}
}

// TestSweepPassesOverRowsItFoundGone: a lagging ready index can show
// messages consumed longer ago than this process remembers its acks
// (ackedWorkMs): DynamoDB bounds no index's lag, and the injector's view
// of a partition queried rarely is as old as its previous query. A sweep
// whose page of the index held only such rows tried each, found nothing,
// and left the backlog behind them to the next sweep an interval later;
// with sweeps an hour apart, the fetch returned nothing beside 130
// instances with work. Now the rows a consistent read found gone are
// passed over by the sweeps that follow, and a sweep that took nothing
// from a shard holding more rows than it read is followed by another at
// once, which reads past them.
func TestSweepPassesOverRowsItFoundGone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	// More than a sweep's Scan reads: sweeps query the shard by pages.
	const n = 230
	for i := range n {
		must(t, writer.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("gone-%03d", i)), 0), "enqueue")
	}
	// The index as the first sweep saw it, for the whole test.
	in := faults.New(7)
	in.SetIndexLag(time.Hour, time.Hour, "ready")
	// A minute ahead, so that every row is old enough for a sweep to hand
	// on (handOutAge), and still: what the process remembers ends when the
	// test moves the clock, not when a loaded machine has taken 10 s.
	clock := faults.NewFakeClock(time.Now().Add(time.Minute))
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(o.Client)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		o.Now = clock.Now
	}})
	seen := map[string]bool{}
	take := func(what string) {
		t.Helper()
		item, err := p.FetchOrchestrationItem(ctx, longLock, 30*time.Second, nil)
		if err != nil || item == nil {
			t.Fatalf("%s: %+v, %v; want an instance (%d of %d taken)", what, item, err, len(seen), n)
		}
		if seen[item.Instance] {
			t.Fatalf("%s: instance %s again", what, item.Instance)
		}
		seen[item.Instance] = true
		done := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(item.Instance)}, Metadata: meta()}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, done), "ack")
	}
	// The first sweep takes one instance and hands on 50, the oldest: a
	// page of the index.
	for i := range 1 + 50 {
		take(fmt.Sprintf("fetch %d", i+1))
	}
	// Long enough that this process no longer knows those messages are
	// consumed; the index still shows them.
	clock.Advance(11 * time.Second)
	for i := len(seen); i < n; i++ {
		take(fmt.Sprintf("fetch %d, past the rows consumed", i+1))
	}
}

// TestWorkerSweepPassesOverRowsGone: the worker's counterpart of
// TestSweepPassesOverRowsItFoundGone. A fan-out whose signals were lost
// is found by a sweep, and the fetches after it follow the backlog from
// row to row; a lagging ready index shows the rows this process has just
// acked among those still waiting. The fetches must not claim what they
// acked (a failed conditional write each, a write unit billed), and once
// this process no longer remembers those acks (ackedWorkMs), a claim that
// finds its row gone marks it so, and the fetches go on past it instead
// of leaving the backlog to the next sweep an interval later.
func TestWorkerSweepPassesOverRowsGone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env := dynamotest.NewEnv(t, true)
	writer := env.NewQuietWriter(t, dynamotest.Config{Shards: 1})
	// More than a sweep's Scan reads: sweeps query the shard by pages.
	const inst, n = "gone-work", 230
	item := startAndFetch(ctx, t, writer, inst)
	must(t, writer.AckOrchestrationItem(ctx, item.LockToken, activities(inst, n)), "ack scheduling")
	// The index as the first sweep saw it, for the whole test.
	in := faults.New(7)
	in.SetIndexLag(time.Hour, time.Hour, "ready")
	// The provider's clock stands still but when moved on below: what it
	// remembers of its acks does not depend on how fast the machine runs.
	// It is a minute ahead, so that every row is old enough for a sweep to
	// hand on (handOutAge).
	clock := faults.NewFakeClock(time.Now().Add(time.Minute))
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Shards: 1, Meter: meter, Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(o.Client)
		o.SweepInterval, o.IdleSweepInterval = time.Hour, time.Hour
		o.Now = clock.Now
	}})
	seen := map[uint64]bool{}
	take := func(what string) {
		t.Helper()
		w, err := p.FetchWorkItem(ctx, longLock, 30*time.Second, nil, provider.AnyTag())
		if err != nil || w == nil {
			t.Fatalf("%s: %+v, %v; want an activity (%d of %d taken)", what, w, err, len(seen), n)
		}
		if seen[w.Item.ID] {
			t.Fatalf("%s: activity %d again", what, w.Item.ID)
		}
		seen[w.Item.ID] = true
		must(t, p.AckWorkItem(ctx, w.LockToken, provider.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.Item.ID, Result: "r"}), "ack")
	}
	const first = 60 // past the first page of the index the sweep read
	for i := range first {
		take(fmt.Sprintf("fetch %d", i+1))
	}
	// One claim per activity: none of a row this process acked.
	if claims := meter.Usage().Requests["UpdateItem"]; claims != first {
		t.Errorf("%d claims for %d activities; want one each (%v)", claims, first, meter.Usage().Requests)
	}
	// Long enough that this process no longer knows those rows are gone;
	// the index still shows them.
	clock.Advance(11 * time.Second)
	for i := len(seen); i < n; i++ {
		take(fmt.Sprintf("fetch %d, past the rows acked", i+1))
	}
	// Each of the rows acked before is claimed once more, and found gone;
	// the rows acked after are passed over.
	if claims := meter.Usage().Requests["UpdateItem"]; claims != n+first {
		t.Errorf("%d claims for %d activities; want one each and one more for each of the %d acked before the clock moved on (%v)", claims, n, first, meter.Usage().Requests)
	}
	t.Logf("requests: %v", meter.Usage().Requests)
}
