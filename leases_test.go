package duradyn_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
)

// Two runtimes share one table while the network below their DynamoDB
// clients' retryers loses, delays or never answers lease-critical
// requests. At-least-once delivery lets an activity run again after its
// worker lost its lease; it never lets two runs of one activity overlap in
// time. Each run records when it started and ended, and the test checks
// the intervals.

// runLog records the runs of each activity.
type runLog struct {
	mu   sync.Mutex
	runs map[string][][2]time.Time // by instance and activity id
}

func (l *runLog) record(key string, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[key] = append(l.runs[key], [2]time.Time{start, end})
}

// overlaps returns a line for each pair of runs of one activity that
// overlap, and counts the activities run more than once.
func (l *runLog) overlaps() (lines []string, repeated int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, runs := range l.runs {
		slices.SortFunc(runs, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		if len(runs) > 1 {
			repeated++
		}
		for i := 1; i < len(runs); i++ {
			if runs[i][0].Before(runs[i-1][1]) {
				lines = append(lines, fmt.Sprintf("%s: run %d started %v before run %d ended", key, i+1, runs[i-1][1].Sub(runs[i][0]), i))
			}
		}
	}
	return lines, repeated
}

// leaseSteps are the activity and orchestration of the test: a step, then
// a fan-out of two. The first runs of the first step and of one of the
// fanned-out ones outlive their leases unless renewals keep them, so that
// losing a lease is exercised.
func leaseSteps(log *runLog, lease time.Duration) (durable.Activity[string, string], durable.Orchestration[string, string]) {
	step := durable.NewActivity("LeaseStep", func(ctx context.Context, in string) (string, error) {
		info, _ := durable.ActivityInfoFrom(ctx)
		start := time.Now()
		defer func() { log.record(fmt.Sprintf("%s/%d", info.Instance, info.ID), start, time.Now()) }()
		d := 50 * time.Millisecond
		if info.Attempt == 1 && info.ID%2 == 0 {
			d = 2 * lease
		}
		select {
		case <-time.After(d):
			return in + "!", nil
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	})
	flow := durable.NewOrchestration("LeaseFlow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := step.Call(ctx, in+"-a").Get(ctx)
		if err != nil {
			return "", err
		}
		outs, err := durable.AwaitAll(ctx, step.Call(ctx, a+"-1"), step.Call(ctx, a+"-2"))
		return strings.Join(outs, "|"), err
	})
	return step, flow
}

// Requests that win or keep a lease, by their bodies: claims of an
// orchestration lock (a PutItem of the lock row) or of an activity (an
// UpdateItem conditioned on the ready key seen), renewals, and acks (the
// transactions that commit a turn or an activity's result).
var (
	isClaim = func(op string, body []byte) bool {
		return (op == faults.OpPutItem && bytes.Contains(body, []byte(`"#LOCK"`))) ||
			(op == faults.OpUpdateItem && bytes.Contains(body, []byte(`":seen"`)))
	}
	isRenewal = func(op string, body []byte) bool { return bytes.Contains(body, []byte("SET #until = :until")) }
	isAck     = func(op string, body []byte) bool {
		return op == faults.OpTransactWriteItems && bytes.Contains(body, []byte(`"lock_`))
	}
)

// TestLeasesUnderLostAndStalledResponses runs instances on two runtimes
// sharing one table, in two networks: one loses the response of every
// third claim, ack and renewal; in the other every third claim is answered
// 4 s late and renewals are never answered. Every instance completes with
// the right output, and no activity's runs overlap in time.
func TestLeasesUnderLostAndStalledResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two runtimes under injected network faults take a minute")
	}
	t.Parallel() // it waits on leases and stalls, beside TestCrashRecovery
	networks := map[string]struct {
		rules []faults.NetRule
		// renewed: renewals land, so no activity loses its lease; else
		// every first run that outlives its lease is stopped and run again.
		renewed bool
	}{
		"lost responses": {rules: []faults.NetRule{
			{Match: isClaim, Every: 3, Fault: faults.LoseResponse()},
			{Match: isAck, Every: 3, Fault: faults.LoseResponse()},
			{Match: isRenewal, Every: 3, Fault: faults.ResetResponse()},
		}, renewed: true},
		"stalled claims and renewals": {rules: []faults.NetRule{
			{Match: isClaim, Every: 3, Fault: faults.SlowResponse(4 * time.Second)},
			{Match: isRenewal, Fault: faults.StallRequest()},
		}},
	}
	for name, n := range networks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repeated := runLeaseNetwork(t, n.rules)
			if !n.renewed && repeated == 0 {
				t.Errorf("no activity ran twice although no renewal was answered: no lease was lost")
			}
		})
	}
}

// runLeaseNetwork runs the instances through the faults of rules, checks
// their outputs and runs, and returns how many activities ran more than
// once.
func runLeaseNetwork(t *testing.T, rules []faults.NetRule) int {
	const (
		instances = 8
		lease     = 4 * time.Second
	)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	env := dynamotest.NewEnv(t, true)
	tr := faults.NewTransport(nil)
	log := &runLog{runs: map[string][][2]time.Time{}}
	step, flow := leaseSteps(log, lease)
	var client *durable.Client
	for i := range 2 {
		p := env.NewProvider(t, dynamotest.Config{Queues: true, Options: func(o *dynamo.Options) {
			o.Client = env.Endpoints.DynamoDB(env.AWS, func(do *dynamodb.Options) { do.HTTPClient = tr.HTTPClient() })
		}})
		reg, err := durable.NewRegistry(step, flow)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
			o.Logger = slog.New(slog.DiscardHandler)
			o.RuntimeID = fmt.Sprint("lease-", i)
			o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = lease, lease/2
			o.LongPollTimeout = 2 * time.Second
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
		client = rt.Client()
	}
	for _, r := range rules {
		tr.Add(r)
	}
	for i := range instances {
		if err := flow.Start(ctx, client, fmt.Sprint("lease-", i), fmt.Sprint("i", i)); err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	for i := range instances {
		id := fmt.Sprint("lease-", i)
		out, err := durable.WaitForOutput[string](ctx, client, id)
		a := fmt.Sprintf("i%d-a!", i)
		if want := a + "-1!|" + a + "-2!"; err != nil || out != want {
			t.Errorf("%s: output %q, %v; want %q", id, out, err, want)
		}
	}
	tr.SetEnabled(false)
	lines, repeated := log.overlaps()
	for _, l := range lines {
		t.Errorf("overlapping runs: %s", l)
	}
	t.Logf("%d of %d activities ran more than once; faults: %d claims (PutItem %d, UpdateItem %d), %d transactions",
		repeated, 3*instances, tr.Faulted(faults.OpPutItem)+tr.Faulted(faults.OpUpdateItem),
		tr.Faulted(faults.OpPutItem), tr.Faulted(faults.OpUpdateItem), tr.Faulted(faults.OpTransactWriteItems))
	if tr.Faulted(faults.OpUpdateItem) == 0 {
		t.Errorf("no claim or renewal met a fault: the test exercised nothing")
	}
	return repeated
}
