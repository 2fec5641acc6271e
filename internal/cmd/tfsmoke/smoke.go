package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/provider"
)

// The orchestration the smoke runs: one activity, then completion.
const (
	smokeOrchestration = "TerraformSmoke"
	smokeVersion       = "1.0.0"
	smokeActivity      = "Greet"
	// runtimeVersion is the duroxide version written on the smoke's events.
	runtimeVersion = "0.1.29"

	lockTimeout = 30 * time.Second
	// pollTimeout is how long a fetch may wait for a signal. A fetch that
	// gets none finds the work only by sweeping the table once this has
	// run out, so a fetch that returns work sooner was woken by a signal.
	pollTimeout = 30 * time.Second
)

// node is one provider, standing for one process.
type node struct {
	name string
	p    *dynamo.Provider
	sqs  *watchedSQS
}

// newNode builds a provider from the outputs the way a program would on
// AWS, with its SQS client watched.
func newNode(cfg aws.Config, out outputs, name string, l *logger) (*node, error) {
	w := newWatchedSQS(sqs.NewFromConfig(cfg))
	p, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = out.TableName
		o.OrchestratorQueueURL = out.OrchestratorQueueURL
		o.WorkerQueueURL = out.WorkerQueueURL
		o.SQSClient = w
		o.Logger = l.slog(name)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: dynamo.New: %w", name, err)
	}
	return &node{name: name, p: p, sqs: w}, nil
}

// smoke runs one orchestration through two providers on the Terraform table
// and queues: "client" starts it and runs its activity, "dispatcher" runs
// its turns.
func smoke(ctx context.Context, l *logger, cfg aws.Config, out outputs) (err error) {
	client, err := newNode(cfg, out, "client", l)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.p.Close()) }()
	dispatcher, err := newNode(cfg, out, "dispatcher", l)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dispatcher.p.Close()) }()

	instance := "tfsmoke-" + randomHex()
	l.printf("smoke: two providers (client, dispatcher) on table %s; instance %s", out.TableName, instance)
	orch, err := startTurn(ctx, l, client, dispatcher, out, instance)
	if err != nil {
		return err
	}
	work, err := scheduleActivity(ctx, l, client, dispatcher, out, instance, orch.LockToken)
	if err != nil {
		return err
	}
	output, err := completeInstance(ctx, l, client, dispatcher, instance, work)
	if err != nil {
		return err
	}
	return checkCompleted(ctx, l, client.p, instance, output)
}

// startTurn is turn 1: the dispatcher waits; the client starts the
// instance.
func startTurn(ctx context.Context, l *logger, client, dispatcher *node, out outputs, instance string) (*provider.OrchestrationItem, error) {
	orch, err := wokenFetch(ctx, l, dispatcher, out.OrchestratorQueueURL, pollTimeout,
		"FetchOrchestrationItem",
		func(ctx context.Context) (*provider.OrchestrationItem, error) {
			return dispatcher.p.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, nil)
		},
		"client: EnqueueForOrchestrator(StartOrchestrationItem)",
		func() error {
			return client.p.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{
				Instance:      instance,
				Orchestration: smokeOrchestration,
				Input:         `"terraform"`,
				Version:       aws.String(smokeVersion),
				ExecutionID:   provider.InitialExecutionID,
			}, 0)
		})
	if err != nil {
		return nil, err
	}
	if err := wantTurn(orch, instance, 0, "StartOrchestration"); err != nil {
		return nil, fmt.Errorf("first turn: %w", err)
	}
	return orch, nil
}

// scheduleActivity: the dispatcher's first turn schedules the activity
// while the client waits for it.
func scheduleActivity(ctx context.Context, l *logger, client, dispatcher *node, out outputs, instance, firstTurn string) (*provider.LockedWorkItem, error) {
	work, err := wokenFetch(ctx, l, client, out.WorkerQueueURL, pollTimeout,
		"FetchWorkItem",
		func(ctx context.Context) (*provider.LockedWorkItem, error) {
			return client.p.FetchWorkItem(ctx, lockTimeout, pollTimeout, nil, provider.DefaultOnlyTags())
		},
		"dispatcher: AckOrchestrationItem(OrchestrationStarted, ActivityScheduled; one worker item)",
		func() error {
			return dispatcher.p.AckOrchestrationItem(ctx, firstTurn, provider.TurnCommit{
				ExecutionID: provider.InitialExecutionID,
				HistoryDelta: []provider.Event{
					event(1, instance, nil, provider.OrchestrationStarted{Name: smokeOrchestration, Version: smokeVersion, Input: `"terraform"`}),
					event(2, instance, nil, provider.ActivityScheduled{Name: smokeActivity, Input: `"terraform"`}),
				},
				WorkerItems: []provider.ActivityExecuteItem{{
					Instance: instance, ExecutionID: provider.InitialExecutionID, ID: 2, Name: smokeActivity, Input: `"terraform"`,
				}},
				Metadata: provider.ExecutionMetadata{OrchestrationName: smokeOrchestration, OrchestrationVersion: smokeVersion},
			})
		})
	if err != nil {
		return nil, err
	}
	if work.Item.Instance != instance || work.Item.ID != 2 || work.Item.Name != smokeActivity {
		return nil, fmt.Errorf("FetchWorkItem returned %+v, want activity 2 (%s) of %s", work.Item, smokeActivity, instance)
	}
	return work, nil
}

// completeInstance: the client completes the activity; the dispatcher
// fetches the completion (its signal comes over SQS too) and completes the
// instance. It returns the instance's output.
func completeInstance(ctx context.Context, l *logger, client, dispatcher *node, instance string, work *provider.LockedWorkItem) (string, error) {
	if err := client.p.AckWorkItem(ctx, work.LockToken, provider.ActivityCompletedItem{
		Instance: instance, ExecutionID: provider.InitialExecutionID, ID: 2, Result: `"hello terraform"`,
	}); err != nil {
		return "", fmt.Errorf("client: AckWorkItem: %w", err)
	}
	l.printf("smoke: client: AckWorkItem(ActivityCompletedItem) committed")
	start := time.Now()
	orch, err := dispatcher.p.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, nil)
	if err != nil {
		return "", fmt.Errorf("dispatcher: FetchOrchestrationItem: %w", err)
	}
	if err := wantTurn(orch, instance, 2, "ActivityCompleted"); err != nil {
		return "", fmt.Errorf("completion turn: %w", err)
	}
	l.printf("smoke: dispatcher: FetchOrchestrationItem returned the completion after %v", time.Since(start).Round(time.Millisecond))
	output := `"hello terraform"`
	if err := dispatcher.p.AckOrchestrationItem(ctx, orch.LockToken, provider.TurnCommit{
		ExecutionID: provider.InitialExecutionID,
		HistoryDelta: []provider.Event{
			event(3, instance, aws.Uint64(2), provider.ActivityCompleted{Result: `"hello terraform"`}),
			event(4, instance, nil, provider.OrchestrationCompleted{Output: output}),
		},
		Metadata: provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: &output},
	}); err != nil {
		return "", fmt.Errorf("dispatcher: AckOrchestrationItem(completed): %w", err)
	}
	l.printf("smoke: dispatcher: AckOrchestrationItem(ActivityCompleted, OrchestrationCompleted) committed")
	return output, nil
}

// wokenFetch runs fetch (a fetch of n with pollTimeout) in the background,
// waits until n polls queueURL, then runs commit (a commit of another
// provider that makes work for n), and returns what fetch found. It fails
// unless fetch returned work before pollTimeout ran out and n received a
// message from queueURL after the commit started: the work was found
// through a wake-up signal that crossed SQS.
func wokenFetch[T any](ctx context.Context, l *logger, n *node, queueURL string, pollTimeout time.Duration, fetchName string, fetch func(context.Context) (*T, error), commitName string, commit func() error) (*T, error) {
	type result struct {
		v    *T
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		v, err := fetch(ctx)
		done <- result{v, err, time.Since(start)}
	}()

	l.printf("smoke: %s: %s(pollTimeout %v) waiting", n.name, fetchName, pollTimeout)
	select {
	case <-n.sqs.Polling(queueURL):
	case r := <-done:
		return nil, fmt.Errorf("%s: %s returned before it polled %s (item %v, error %v)", n.name, fetchName, queueURL, r.v != nil, r.err)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %s never polled %s: %w", n.name, fetchName, queueURL, ctx.Err())
	}
	l.printf("smoke: %s: long-polling SQS", n.name)

	received := n.sqs.Received(queueURL)
	if err := commit(); err != nil {
		return nil, fmt.Errorf("%s: %w", commitName, err)
	}
	committed := time.Now()
	l.printf("smoke: %s committed", commitName)

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %s: %w", n.name, fetchName, ctx.Err())
	}
	switch {
	case r.err != nil:
		return nil, fmt.Errorf("%s: %s: %w", n.name, fetchName, r.err)
	case r.v == nil:
		return nil, fmt.Errorf("%s: %s found no work within %v", n.name, fetchName, pollTimeout)
	case r.took >= pollTimeout:
		return nil, fmt.Errorf("%s: %s found the work only after %v, when its poll timeout ran out: no wake-up signal arrived over SQS", n.name, fetchName, r.took.Round(time.Millisecond))
	case n.sqs.Received(queueURL) == received:
		return nil, fmt.Errorf("%s: %s returned work but received no message from %s", n.name, fetchName, queueURL)
	}
	l.printf("smoke: %s: woken over SQS: %s returned the work %v after the commit", n.name, fetchName, time.Since(committed).Round(time.Millisecond))
	return r.v, nil
}

// wantTurn checks a fetched turn: its instance, its history length and the
// kind of its one message.
func wantTurn(item *provider.OrchestrationItem, instance string, historyLen int, kind string) error {
	switch {
	case item == nil:
		return errors.New("no orchestration item")
	case item.Instance != instance:
		return fmt.Errorf("fetched instance %q, want %q", item.Instance, instance)
	case item.HistoryError != nil:
		return fmt.Errorf("history: %w", item.HistoryError)
	case len(item.History) != historyLen:
		return fmt.Errorf("history has %d events, want %d", len(item.History), historyLen)
	case len(item.Messages) != 1 || item.Messages[0].Kind() != kind:
		kinds := make([]string, len(item.Messages))
		for i, m := range item.Messages {
			kinds[i] = m.Kind()
		}
		return fmt.Errorf("messages %v, want one %s", kinds, kind)
	}
	return nil
}

// checkCompleted reads the instance back through p: its history and, through
// the management interface, its status and output.
func checkCompleted(ctx context.Context, l *logger, p *dynamo.Provider, instance, output string) error {
	history, err := p.Read(ctx, instance)
	if err != nil {
		return fmt.Errorf("client: Read: %w", err)
	}
	want := []string{"OrchestrationStarted", "ActivityScheduled", "ActivityCompleted", "OrchestrationCompleted"}
	got := make([]string, len(history))
	for i, e := range history {
		got[i] = e.Kind.EventType()
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("client: Read: history %v, want %v", got, want)
	}
	admin, ok := provider.AdminOf(p)
	if !ok {
		return errors.New("the provider does not implement provider.Admin")
	}
	info, err := admin.InstanceInfo(ctx, instance)
	if err != nil {
		return fmt.Errorf("client: InstanceInfo: %w", err)
	}
	if info.Status != provider.StatusCompleted || info.Output == nil || *info.Output != output {
		return fmt.Errorf("client: InstanceInfo: status %s, output %v; want %s, %s", info.Status, aws.ToString(info.Output), provider.StatusCompleted, output)
	}
	l.printf("smoke: client: Read and InstanceInfo: %d events, status %s, output %s", len(history), info.Status, *info.Output)
	return nil
}

// event builds a history event of the smoke's one execution.
func event(id uint64, instance string, source *uint64, kind provider.EventKind) provider.Event {
	return provider.Event{
		EventID:         id,
		SourceEventID:   source,
		InstanceID:      instance,
		ExecutionID:     provider.InitialExecutionID,
		TimestampMs:     uint64(time.Now().UnixMilli()),
		DuroxideVersion: runtimeVersion,
		Kind:            kind,
	}
}

// randomHex returns 12 random hex digits.
func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
