package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	"github.com/duradyn/duradyn/internal/linelog"
	"github.com/duradyn/duradyn/provider"
)

// SystemMetrics from counter cells (docs/design.md §5, dynamo/metrics.go):
// every write of an instance record moves the instance's contribution in
// its cell in the same transaction. The tests below drive every writer of
// a record (small and large turns, deletes, prunes, appends) with faults
// injected and compare SystemMetrics with a scan of the table.

// life is how one test instance runs: its executions (all but the last
// continue as new), how its last one ends, and events per turn beyond the
// start and the end.
type life struct {
	execs  int
	status string
	extra  int
}

// lifeOf picks a varied life for instance i.
func lifeOf(i int) life {
	l := life{execs: 1 + i%3, status: provider.StatusCompleted, extra: i % 4}
	if i%5 == 0 {
		l.status = provider.StatusFailed
	}
	return l
}

// evx is event id of execution exec of instance.
func evx(id uint64, instance string, exec uint64, kind provider.EventKind) provider.Event {
	e := ev(id, instance, kind)
	e.ExecutionID = exec
	return e
}

// lifeTurn is the commit that runs execution exec of instance l whole:
// its start, extra events, and its end (continue-as-new, or l's status).
func lifeTurn(instance string, exec uint64, l life) provider.TurnCommit {
	m := meta()
	delta := []provider.Event{evx(1, instance, exec, provider.OrchestrationStarted{Name: testName, Version: testVersion, Input: "{}"})}
	for k := range l.extra {
		delta = append(delta, evx(uint64(2+k), instance, exec, provider.ExternalEvent{Name: "e", Data: "x"}))
	}
	end := uint64(len(delta) + 1)
	commit := provider.TurnCommit{ExecutionID: exec, Metadata: m}
	switch {
	case exec < uint64(l.execs):
		delta = append(delta, evx(end, instance, exec, provider.OrchestrationContinuedAsNew{Input: "{}"}))
		commit.Metadata.Status = provider.StatusContinuedAsNew
		commit.Metadata.Output = ptr("{}")
		commit.OrchestratorItems = []provider.WorkItem{provider.ContinueAsNewItem{Instance: instance, Orchestration: testName, Input: "{}", Version: ptr(testVersion)}}
	case l.status == provider.StatusFailed:
		details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "boom"}
		delta = append(delta, evx(end, instance, exec, provider.OrchestrationFailed{Details: details}))
		commit.Metadata.Status = provider.StatusFailed
		commit.Metadata.Output = ptr("boom")
	default:
		delta = append(delta, evx(end, instance, exec, provider.OrchestrationCompleted{Output: "done"}))
		commit.Metadata.Status = provider.StatusCompleted
		commit.Metadata.Output = ptr("done")
	}
	commit.HistoryDelta = delta
	return commit
}

// runLives starts instances and runs each through its life with
// dispatchers on the given providers. As the runtime does, a dispatcher
// decides a turn from what it fetched (the history of the current
// execution), acks a retryable failure again with the same commit, and
// leaves a lost lock to the next fetch.
func runLives(ctx context.Context, t *testing.T, lives map[string]life, ps ...*dynamo.Provider) {
	t.Helper()
	for id := range lives {
		must(t, retry(ctx, func() error { return ps[0].EnqueueForOrchestrator(ctx, startItem(id), 0) }), "enqueue start of "+id)
	}
	var mu sync.Mutex
	ended := map[string]bool{}
	remaining := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(lives) - len(ended)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		p := ps[i%len(ps)]
		wg.Go(func() {
			for remaining() > 0 && ctx.Err() == nil {
				item, err := p.FetchOrchestrationItem(ctx, longLock, 200*time.Millisecond, nil)
				if err != nil || item == nil {
					continue
				}
				l := lives[item.Instance]
				exec := item.ExecutionID
				if n := len(item.History); n > 0 {
					if _, ok := item.History[n-1].Kind.(provider.OrchestrationContinuedAsNew); !ok {
						errs <- fmt.Errorf("%s fetched after its end: %+v", item.Instance, item.Messages)
						cancel()
						return
					}
					exec++
				}
				// The same commit each time, as the runtime resends it.
				commit := lifeTurn(item.Instance, exec, l)
				err = retry(ctx, func() error { return p.AckOrchestrationItem(ctx, item.LockToken, commit) })
				switch {
				case errors.Is(err, provider.ErrInvalidLockToken):
					continue // fetched again
				case err != nil:
					errs <- fmt.Errorf("ack of %s execution %d: %w", item.Instance, exec, err)
					cancel()
					return
				}
				if exec == uint64(l.execs) {
					mu.Lock()
					ended[item.Instance] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := remaining(); n > 0 {
		t.Fatalf("%d instances did not end: %v", n, ctx.Err())
	}
}

// checkMetrics fails t when p's SystemMetrics differ from the table.
func checkMetrics(ctx context.Context, t *testing.T, env *dynamotest.Env, p *dynamo.Provider, when string) provider.SystemMetrics {
	t.Helper()
	diff, err := env.CheckMetrics(ctx, p)
	must(t, err, "check metrics "+when)
	if diff != "" {
		t.Fatalf("%s: %s", when, diff)
	}
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics "+when)
	return m
}

// TestSystemMetricsCostDoesNotGrowWithEndedInstances: SystemMetrics reads
// the cells alone, so its requests are the same with 4 or 16 ended
// instances, and its answer is the table's, instances that continued as
// new, failed and run included.
func TestSystemMetricsCostDoesNotGrowWithEndedInstances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Meter: meter, ShortPoll: true})
	running := "metrics-running"
	item := startAndFetch(ctx, t, p, running)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(running, 1)), "ack of the running instance")

	requests := func() int {
		meter.Reset()
		checkMetrics(ctx, t, env, p, "with the running instance")
		meter.Reset()
		_, err := p.SystemMetrics(ctx)
		must(t, err, "SystemMetrics")
		return meter.Usage().Total()
	}
	lives := map[string]life{}
	for i := range 4 {
		lives[fmt.Sprintf("metrics-a-%d", i)] = lifeOf(i)
	}
	runLives(ctx, t, lives, p)
	small := requests()
	for i := 4; i < 16; i++ {
		lives[fmt.Sprintf("metrics-b-%d", i)] = lifeOf(i)
	}
	delete(lives, "metrics-a-0")
	for i := 1; i < 4; i++ {
		delete(lives, fmt.Sprintf("metrics-a-%d", i))
	}
	runLives(ctx, t, lives, p)
	large := requests()
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	if m.TotalInstances != 17 || m.RunningInstances != 1 || m.CompletedInstances+m.FailedInstances != 16 {
		t.Fatalf("SystemMetrics = %+v; want 17 instances, 1 running, 16 ended", m)
	}
	// One Query of the cells.
	if want := 1; small != want || large != want {
		t.Fatalf("SystemMetrics made %d requests with 4 ended instances and %d with 16; want %d both times", small, large, want)
	}
}

// TestSystemMetricsCellsUnderFaults: instances run to their ends on two
// providers while transactions are resent after lost responses, lose their
// responses, meet real conflicts (many instances end at once, on 32 cells)
// and throttling; then every instance is pruned twice at once and a third
// of them deleted twice at once, under the same faults. The cells move by
// exactly what the records hold: SystemMetrics equals the table's counts
// after each phase.
func TestSystemMetricsCellsUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, a, b := cellsUnderFaults(t, 11)

	lives := map[string]life{}
	ids := []string{}
	for i := range 40 {
		id := fmt.Sprintf("cells-%02d", i)
		lives[id] = lifeOf(i)
		ids = append(ids, id)
	}
	runLives(ctx, t, lives, a, b)
	in.SetEnabled(false)
	m := checkMetrics(ctx, t, env, a, "after the instances ended")
	if m.TotalInstances != 40 || m.RunningInstances != 0 {
		t.Fatalf("SystemMetrics = %+v; want 40 ended instances", m)
	}
	if st := in.Stats(); st.Faults[faults.KindResend] == 0 || st.Faults[faults.KindLostResponse] == 0 {
		t.Fatalf("transactions met no resend or no lost response: %v", st)
	}
	in.SetEnabled(true)

	var wg sync.WaitGroup
	for i, id := range ids {
		for _, p := range []*dynamo.Provider{a, b} {
			wg.Go(func() {
				// Retryable failures (conflicts that outlasted the
				// provider's own resends) are retried, as a caller does.
				err := retry(ctx, func() error {
					_, err := p.PruneExecutions(ctx, id, provider.PruneOptions{KeepLast: 1})
					return err
				})
				if err != nil && !errors.Is(err, provider.ErrNotFound) {
					t.Errorf("prune %s: %v", id, err)
				}
				if i%3 == 0 {
					err := retry(ctx, func() error {
						_, err := p.DeleteInstancesAtomic(ctx, []string{id}, false)
						return err
					})
					if err != nil {
						t.Errorf("delete %s: %v", id, err)
					}
				}
			})
		}
	}
	wg.Wait()
	in.SetEnabled(false)
	m = checkMetrics(ctx, t, env, a, "after the prunes and deletes")
	if want := uint64(40 - 14); m.TotalInstances != want || m.TotalExecutions != want {
		t.Fatalf("SystemMetrics = %+v; want %d instances with one execution each", m, want)
	}
}

// cellsUnderFaults is a fresh table with two providers on it whose
// transactions, seeded seed, are resent after lost responses, lose their
// responses, meet real conflicts and throttling.
func cellsUnderFaults(t *testing.T, seed int64) (*dynamotest.Env, *faults.Injector, *dynamo.Provider, *dynamo.Provider) {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(seed)
	in.SetRealConflicts(true)
	a := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	b := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
	tx := []string{faults.OpTransactWriteItems}
	in.Add(faults.Rule{Ops: tx, Rate: 0.15, Fault: faults.Resend()})
	in.Add(faults.Rule{Ops: tx, Rate: 0.1, Fault: faults.LostResponse()})
	in.Add(faults.Rule{Ops: tx, Rate: 0.05, Fault: faults.Throttle("ThrottlingException")})
	return env, in, a, b
}

// TestSystemMetricsTurnRacingPrune: a prune that commits between a turn's
// fetch and its ack changes the figures the turn planned on; the ack fails
// as a stale read instead of writing the old figures back, and the turn
// fetched again ends the instance with the right ones.
func TestSystemMetricsTurnRacingPrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "race-prune"
	l := life{execs: 3, status: provider.StatusCompleted, extra: 2}
	item := startAndFetch(ctx, t, p, inst)
	for exec := uint64(1); exec < 3; exec++ {
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, lifeTurn(inst, exec, l)), fmt.Sprint("ack of execution ", exec))
		next, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		if err != nil || next == nil {
			t.Fatalf("fetch of execution %d: %v, %v", exec+1, next, err)
		}
		item = next
	}
	// The last execution's turn is fetched; a prune commits now.
	res, err := p.PruneExecutions(ctx, inst, provider.PruneOptions{KeepLast: 1})
	must(t, err, "prune")
	if res.ExecutionsDeleted != 1 {
		t.Fatalf("prune deleted %d executions, want 1 (execution 1; 2 is current, kept)", res.ExecutionsDeleted)
	}
	err = p.AckOrchestrationItem(ctx, item.LockToken, lifeTurn(inst, 3, l))
	if !errors.Is(err, provider.ErrInvalidLockToken) {
		t.Fatalf("ack planned before the prune = %v; want ErrInvalidLockToken (a stale read)", err)
	}
	again, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || again == nil {
		t.Fatalf("fetch after the stale read: %v, %v", again, err)
	}
	must(t, p.AckOrchestrationItem(ctx, again.LockToken, lifeTurn(inst, 3, l)), "ack fetched again")
	m := checkMetrics(ctx, t, env, p, "after the turn that raced a prune")
	if m.CompletedInstances != 1 || m.TotalExecutions != 2 || m.TotalEvents != 2*4 {
		t.Fatalf("SystemMetrics = %+v; want one completed instance with 2 executions of 4 events", m)
	}
}

// TestSystemMetricsLargeTurnEndsInstance: a turn too large for one
// transaction that ends its instance adds the instance to its cell in the
// commit, once: when the commit's response is lost once (sent again with
// its ClientRequestToken inside the ack) and when every attempt's is (the
// ack fails, and the ack sent again finishes the committed turn).
func TestSystemMetricsLargeTurnEndsInstance(t *testing.T) {
	t.Parallel()
	for _, lost := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d lost", lost), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := dynamotest.NewEnv(t, false)
			in := faults.New(5)
			p := faultyOn(t, env, in, nil, dynamotest.Config{ShortPoll: true})
			inst := fmt.Sprintf("large-end-%d", lost)
			item := startAndFetch(ctx, t, p, inst)
			commit := activities(inst, 150)
			end := uint64(len(commit.HistoryDelta) + 1)
			commit.HistoryDelta = append(commit.HistoryDelta, ev(end, inst, provider.OrchestrationCompleted{Output: "done"}))
			commit.Metadata.Status, commit.Metadata.Output = provider.StatusCompleted, ptr("done")
			in.Add(faults.Rule{Ops: []string{faults.OpTransactWriteItems}, Match: isLockCommit, Rate: 1, Count: lost, Fault: faults.LostResponse()})
			err := p.AckOrchestrationItem(ctx, item.LockToken, commit)
			switch {
			case lost == 1:
				must(t, err, "ack whose commit lost one response")
			case err == nil || !provider.IsRetryable(err):
				t.Fatalf("ack whose commit lost every response = %v; want a retryable error", err)
			default:
				must(t, retry(ctx, func() error { return p.AckOrchestrationItem(ctx, item.LockToken, commit) }), "ack again")
			}
			if n := in.Stats().Faults[faults.KindLostResponse]; n != int64(lost) {
				t.Fatalf("%d responses lost, want %d", n, lost)
			}
			m := checkMetrics(ctx, t, env, p, "after the large turn")
			if m.CompletedInstances != 1 || m.TotalEvents != end {
				t.Fatalf("SystemMetrics = %+v; want one completed instance with %d events", m, end)
			}
		})
	}
}

// TestSystemMetricsAppendToEndedExecution: events appended outside turns
// to an execution that has ended count in its instance's figures; those
// appended to a running one are read with it.
func TestSystemMetricsAppendToEndedExecution(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	runLives(ctx, t, map[string]life{"append-ended": {execs: 2, status: provider.StatusCompleted}}, p)
	extra := []provider.Event{
		evx(3, "append-ended", 1, provider.ExternalEvent{Name: "late", Data: "1"}),
		evx(4, "append-ended", 1, provider.ExternalEvent{Name: "late", Data: "2"}),
	}
	must(t, p.AppendWithExecution(ctx, "append-ended", 1, extra), "append to ended execution 1")
	// Again, as a retry of an append whose outcome was unknown: nothing new.
	must(t, p.AppendWithExecution(ctx, "append-ended", 1, extra), "append again")
	m := checkMetrics(ctx, t, env, p, "after the appends")
	if m.TotalEvents != 2+2+2 {
		t.Fatalf("SystemMetrics counts %d events; want 6 (two executions of 2, and 2 appended)", m.TotalEvents)
	}
}

// TestSystemMetricsWithIndexLag: an instance that ended while the
// instances index still lists it as running is counted once (from its
// cell), and one the index does not list yet is not counted.
func TestSystemMetricsWithIndexLag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, p := faulty(t, 7)
	const inst = "lagged"
	item := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(inst, 1)), "first turn")
	if _, err := p.SystemMetrics(ctx); err != nil { // the index as it is now
		t.Fatal(err)
	}
	in.SetIndexLag(time.Hour, time.Hour)
	// Snapshot the index partitions while the instance runs.
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics while running")
	if m.RunningInstances != 1 {
		t.Fatalf("SystemMetrics while running = %+v; want 1 running", m)
	}
	must(t, p.EnqueueForOrchestrator(ctx, provider.ExternalRaisedItem{Instance: inst, Name: "e", Data: "x"}, 0), "raise")
	item, err = p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("fetch: %v, %v", item, err)
	}
	commit := provider.TurnCommit{ExecutionID: 1, Metadata: meta(), HistoryDelta: []provider.Event{ev(3, inst, provider.OrchestrationCompleted{Output: "x"})}}
	commit.Metadata.Status, commit.Metadata.Output = provider.StatusCompleted, ptr("x")
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "ending turn")
	m, err = p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics with the index lagging")
	if m.TotalInstances != 1 || m.CompletedInstances != 1 || m.RunningInstances != 0 || m.TotalEvents != 3 {
		t.Fatalf("SystemMetrics with the index lagging = %+v; want the instance once, completed, with 3 events", m)
	}
	in.SetIndexLag(0, 0)
	checkMetrics(ctx, t, env, p, "without lag")
}

// TestSystemMetricsCellsAreOnePartition: the cells are small items of one
// partition, read by one consistent Query; the ends of 40 instances spread
// over them (each transaction picks a cell).
func TestSystemMetricsCellsAreOnePartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	lives := map[string]life{}
	for i := range 40 {
		lives[fmt.Sprintf("spread-%02d", i)] = life{execs: 1, status: provider.StatusCompleted}
	}
	runLives(ctx, t, lives, p)
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(env.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.MetricsPK}},
		ConsistentRead:            aws.Bool(true),
	})
	must(t, err, "query the cells")
	if len(out.Items) < 10 || len(out.Items) > keys.MetricsCells {
		t.Fatalf("40 ended instances went to %d cells; want them spread over up to %d", len(out.Items), keys.MetricsCells)
	}
	checkMetrics(ctx, t, env, p, "40 completed")
}

// TestSystemMetricsRecordCreatedAfterExecutions: a turn acked without an
// orchestration name writes its execution record and no instance record;
// the turn that creates the record later counts that execution.
func TestSystemMetricsRecordCreatedAfterExecutions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, env := dynamotest.New(t, dynamotest.Config{ShortPoll: true})
	const inst = "nameless-first"
	item := startAndFetch(ctx, t, p, inst)
	// Execution 1 runs and continues as new without a name.
	first := lifeTurn(inst, 1, life{execs: 2, extra: 1})
	first.Metadata.OrchestrationName, first.Metadata.OrchestrationVersion = "", ""
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, first), "ack without a name")
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("fetch: %v, %v", item, err)
	}
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, lifeTurn(inst, 2, life{execs: 2, status: provider.StatusCompleted})), "ack that names and ends it")
	m := checkMetrics(ctx, t, env, p, "after the record was created")
	if m.CompletedInstances != 1 || m.TotalExecutions != 2 || m.TotalEvents != 3+2 {
		t.Fatalf("SystemMetrics = %+v; want one completed instance, 2 executions of 5 events", m)
	}
}

// TestSystemMetricsCountsQueuedStarts: SystemMetrics counts the queued
// starts no turn has taken (PendingInstances). A start is counted in the
// transaction that queues it, a client's enqueue or a turn's, and
// uncounted in the one that consumes it (a turn) or deletes it (a
// delete), while transactions are resent, lose their responses, conflict
// and throttle, and while two providers delete pending instances that
// turns race to take. The cells agree with the table's queued starts
// after each phase.
func TestSystemMetricsCountsQueuedStarts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	env, in, a, b := cellsUnderFaults(t, 17)

	// Starts from both providers at once.
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		p := []*dynamo.Provider{a, b}[i%2]
		wg.Go(func() {
			if err := retry(ctx, func() error { return p.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("pend-%02d", i)), 0) }); err != nil {
				t.Errorf("start %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	in.SetEnabled(false)
	// A start whose transaction landed but whose caller saw a retryable
	// failure is queued again by the retry: at least n.
	first := checkMetrics(ctx, t, env, a, "after the starts")
	if first.PendingInstances < n || first.TotalInstances != 0 {
		t.Fatalf("SystemMetrics after %d starts = %+v; want at least %d pending, no instance", n, first, n)
	}
	if st := in.Stats(); st.Faults[faults.KindResend] == 0 || st.Faults[faults.KindLostResponse] == 0 {
		t.Fatalf("the starts met no resend or no lost response: %v", st)
	}
	in.SetEnabled(true)

	// A turn that consumes a start and queues three.
	item, err := a.FetchOrchestrationItem(ctx, longLock, 5*time.Second, nil)
	if err != nil || item == nil {
		t.Fatalf("fetch: %+v, %v", item, err)
	}
	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(item.Instance)}, Metadata: meta()}
	for k := range 3 {
		commit.OrchestratorItems = append(commit.OrchestratorItems, startItem(fmt.Sprintf("%s-child-%d", item.Instance, k)))
	}
	must(t, retry(ctx, func() error { return a.AckOrchestrationItem(ctx, item.LockToken, commit) }), "ack with three starts")
	in.SetEnabled(false)
	taken := uint64(0)
	for _, w := range item.Messages {
		if _, ok := w.(provider.StartOrchestrationItem); ok {
			taken++
		}
	}
	if m := checkMetrics(ctx, t, env, a, "after a turn took a start and queued three"); m.PendingInstances != first.PendingInstances+3-taken || m.TotalInstances != 1 {
		t.Fatalf("SystemMetrics = %+v; want %d pending, 1 instance", m, first.PendingInstances+3-taken)
	}
	in.SetEnabled(true)

	// Both providers delete every pending instance at once while turns
	// on both take starts. (A delete that read an instance's control rows
	// before its first turn committed, and its other rows after, deleted
	// the new record without uncounting it: TotalInstances drifted by
	// one.)
	racePendingDeletes(ctx, t, a, b, n)
	in.SetEnabled(false)
	checkMetrics(ctx, t, env, a, "after turns raced deletes of pending instances")
}

// racePendingDeletes deletes the pending instances pend-00 … on both
// providers at once while a fetch loop on each takes turns, until the
// deletes are done and no start is left to take.
func racePendingDeletes(ctx context.Context, t *testing.T, a, b *dynamo.Provider, n int) {
	t.Helper()
	var deleting sync.WaitGroup
	for i := range n {
		for _, p := range []*dynamo.Provider{a, b} {
			deleting.Go(func() {
				err := retry(ctx, func() error {
					_, err := p.DeleteInstancesAtomic(ctx, []string{fmt.Sprintf("pend-%02d", i)}, true)
					return err
				})
				if err != nil {
					t.Errorf("delete pend-%02d: %v", i, err)
				}
			})
		}
	}
	deletesDone := make(chan struct{})
	go func() { deleting.Wait(); close(deletesDone) }()
	var turning sync.WaitGroup
	for _, p := range []*dynamo.Provider{a, b} {
		turning.Go(func() {
			for {
				item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
				if err != nil && !provider.IsRetryable(err) {
					t.Errorf("fetch: %v", err)
					return
				}
				if item == nil {
					select {
					case <-deletesDone:
						return
					default:
						continue
					}
				}
				done := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(item.Instance)}, Metadata: meta()}
				// A delete may take the instance from under the turn.
				err = retry(ctx, func() error { return p.AckOrchestrationItem(ctx, item.LockToken, done) })
				if err != nil && !errors.Is(err, provider.ErrInvalidLockToken) {
					t.Errorf("ack %s: %v", item.Instance, err)
				}
			}
		})
	}
	turning.Wait()
}

// TestSystemMetricsWarnsOfNegativeCells: a figure whose cells sum below
// zero (a change applied twice) is reported as 0, and the provider says
// so in a warning rather than hiding it.
func TestSystemMetricsWarnsOfNegativeCells(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var mu sync.Mutex
	var warnings []string
	env := dynamotest.NewEnv(t, false)
	p := env.NewProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
		o.Logger = linelog.New(func(line string) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, line)
		}, slog.LevelWarn)
	}})
	_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: keys.MetricsPK}, "sk": &types.AttributeValueMemberS{Value: keys.MetricsCellSK(3)},
		"np": &types.AttributeValueMemberN{Value: "-1"},
	}})
	must(t, err, "write a cell")
	m, err := p.SystemMetrics(ctx)
	must(t, err, "SystemMetrics")
	if m.PendingInstances != 0 {
		t.Fatalf("PendingInstances = %d with cells summing to -1; want 0", m.PendingInstances)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "pending=-1") {
		t.Fatalf("warnings = %q; want one naming pending=-1", warnings)
	}
}
