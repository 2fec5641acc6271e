package lambdahost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/queues"
)

// ErrUnknownEvent is wrapped by the error [Host.Handle] returns for a
// payload that is neither an SQS batch nor a sweep.
var ErrUnknownEvent = errors.New("lambdahost: unknown event")

// Host serves the invocations of one Lambda execution environment: SQS
// batches of wake-up signals from the event source mappings of the two
// queues ([Host.HandleSQS]) and scheduled sweeps ([Host.HandleSweep]).
// It holds the provider for the environment's life (its history cache,
// clock-skew measure and layout check outlive invocations) and runs a
// runtime per invocation, which it shuts down before the invocation
// returns: nothing of it runs while the environment is frozen. Invocations
// are served one at a time. Create it with [New], once per environment,
// outside the handler.
type Host struct {
	o   Options
	p   *dynamo.Provider
	reg *durable.Registry
	vis VisibilityAPI
	// queues maps the name of each wake-up queue to its kind and URL.
	queues map[string]queueRef

	mu    sync.Mutex // one invocation at a time
	stats counters
}

// queueRef is one wake-up queue.
type queueRef struct {
	kind queues.Kind
	url  string
}

// New builds the host of an execution environment: the DynamoDB provider,
// configured by the environment as [dynamo.NewFromEnv] does and adjusted
// by [Options.Provider], which receives from the event source mappings
// (dynamo.Options.ReceiveElsewhere), and the registry every invocation's
// runtime serves. It makes at most one request (the table's layout, when
// DURADYN_SHARDS is not set). Close it when done (a test; Lambda freezes
// and ends environments without telling them).
func New(ctx context.Context, reg *durable.Registry, optFns ...func(*Options)) (*Host, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: New needs a registry", ErrInvalidOptions)
	}
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	p, err := dynamo.NewFromEnv(ctx, func(po *dynamo.Options) {
		po.Logger = o.Logger
		po.SweepInterval, po.IdleSweepInterval = DefaultSweepInterval, DefaultSweepInterval
		if o.Provider != nil {
			o.Provider(po)
		}
		po.ReceiveElsewhere = true
	})
	if err != nil {
		return nil, fmt.Errorf("lambdahost: provider: %w", err)
	}
	h := &Host{o: o, p: p, reg: reg, vis: o.SQSClient, queues: map[string]queueRef{}}
	orchestrator, worker := p.QueueURLs()
	for _, q := range []queueRef{{queues.Orchestrator, orchestrator}, {queues.Worker, worker}} {
		if q.url != "" {
			h.queues[queueName(q.url)] = q
		}
	}
	if h.vis == nil && o.RetryDelay > 0 && len(h.queues) > 0 {
		if h.vis, err = defaultSQSClient(ctx); err != nil {
			return nil, errors.Join(err, p.Close())
		}
	}
	return h, nil
}

// defaultSQSClient is an SQS client of the SDK's default configuration,
// on the endpoint the environment names, if any.
func defaultSQSClient(ctx context.Context) (*sqs.Client, error) {
	env, err := dynamo.ReadEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("lambdahost: %w", err)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("lambdahost: AWS configuration: %w", err)
	}
	return sqs.NewFromConfig(cfg, func(so *sqs.Options) {
		if env.SQSEndpoint != "" {
			so.BaseEndpoint = aws.String(env.SQSEndpoint)
		}
	}), nil
}

// queueName is the last element of a queue URL or ARN: the queue's name,
// which the URL (…/ACCOUNT/NAME) and the ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)
// of one queue share.
func queueName(urlOrARN string) string {
	if i := strings.LastIndexAny(urlOrARN, "/:"); i >= 0 {
		return urlOrARN[i+1:]
	}
	return urlOrARN
}

// Provider returns the host's provider: a client of the same table, for
// instance, may share it.
func (h *Host) Provider() *dynamo.Provider { return h.p }

// Close closes the provider, after the invocation in progress if any.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p.Close()
}

// sweepMarker is the payload of the scheduled sweep invocations the
// Terraform module's schedule sends.
const sweepMarker = "sweep"

// SweepEvent is the payload of a scheduled sweep invocation:
// {"duradyn":"sweep"}. [Host.Handle] also takes an EventBridge scheduled
// event (detail-type "Scheduled Event") for one.
type SweepEvent struct {
	Duradyn string `json:"duradyn"`
}

// eventShape holds what tells the payloads Handle takes apart.
type eventShape struct {
	Records []struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
	Duradyn    string `json:"duradyn"`
	DetailType string `json:"detail-type"`
}

// Handle is the function's handler, for [lambda.Start]: an SQS batch
// (records with eventSource "aws:sqs") goes to [Host.HandleSQS] and
// returns its [events.SQSEventResponse]; a sweep ({"duradyn":"sweep"}, or
// an EventBridge scheduled event) goes to [Host.HandleSweep] and returns
// its [SweepResult]. Any other payload fails with an error wrapping
// [ErrUnknownEvent].
func (h *Host) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var shape eventShape
	if err := json.Unmarshal(payload, &shape); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownEvent, err)
	}
	switch {
	case len(shape.Records) > 0:
		for _, r := range shape.Records {
			if r.EventSource != "aws:sqs" {
				return nil, fmt.Errorf("%w: a record from %q", ErrUnknownEvent, r.EventSource)
			}
		}
		var event events.SQSEvent
		if err := json.Unmarshal(payload, &event); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnknownEvent, err)
		}
		return h.HandleSQS(ctx, event)
	case shape.Duradyn == sweepMarker || shape.DetailType == "Scheduled Event":
		return h.HandleSweep(ctx, SweepEvent{Duradyn: sweepMarker})
	}
	return nil, fmt.Errorf("%w: neither SQS records nor a sweep", ErrUnknownEvent)
}

// Start builds the host with [New] and serves invocations through
// aws-lambda-go's [lambda.Start]: the main function of a Lambda function
// (the provided.al2023 runtime runs it as bootstrap). It returns only when
// New fails; lambda.Start never returns.
func Start(reg *durable.Registry, optFns ...func(*Options)) error {
	h, err := New(context.Background(), reg, optFns...)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}

// Stats counts what a [Host] has done since [New].
type Stats struct {
	// SQSInvocations and SweepInvocations count the invocations served.
	SQSInvocations, SweepInvocations int64
	// Records counts the SQS records received; Failed, those reported
	// as failed (batch item failures), of which Held named an instance
	// another process held; Ignored, those whose body was no signal for a
	// runtime (undecodable, or a lock's or a job's).
	Records, Failed, Held, Ignored int64
	// StoppedAtDeadline counts the runs stopped before their deadline with
	// work still about, rather than for idleness.
	StoppedAtDeadline int64
}

type counters struct {
	sqs, sweeps, records, failed, held, ignored, deadline atomic.Int64
}

// Stats returns the counters accumulated since [New].
func (h *Host) Stats() Stats {
	c := &h.stats
	return Stats{
		SQSInvocations:    c.sqs.Load(),
		SweepInvocations:  c.sweeps.Load(),
		Records:           c.records.Load(),
		Failed:            c.failed.Load(),
		Held:              c.held.Load(),
		Ignored:           c.ignored.Load(),
		StoppedAtDeadline: c.deadline.Load(),
	}
}
