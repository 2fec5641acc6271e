package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/queues"
)

// API is the part of the DynamoDB client the provider calls; the SDK's
// [dynamodb.Client] satisfies it. It lists every DynamoDB operation the
// provider uses, so the least-privilege IAM policy of the Terraform module
// is checked against it.
type API interface {
	// GetItem is [dynamodb.Client.GetItem].
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	// PutItem is [dynamodb.Client.PutItem].
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	// UpdateItem is [dynamodb.Client.UpdateItem].
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	// DeleteItem is [dynamodb.Client.DeleteItem].
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// Query is [dynamodb.Client.Query].
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	// Scan is [dynamodb.Client.Scan]. The provider scans only the ready
	// index, never the table: a sweep reads one page while the index is
	// small (docs/design.md §8), and QueueDepths reads it to its end.
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	// TransactWriteItems is [dynamodb.Client.TransactWriteItems].
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// BatchWriteItem is [dynamodb.Client.BatchWriteItem].
	BatchWriteItem(ctx context.Context, params *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Options configures a [Provider]. TableName is required; everything else
// has a default.
type Options struct {
	// TableName is the DynamoDB table, created with the shape of
	// [github.com/duradyn/duradyn/tables.Default] (by the Terraform module
	// or tables.Ensure). Required.
	TableName string

	// OrchestratorQueueURL and WorkerQueueURL are the SQS standard queues
	// that carry wake-up signals between processes. Default "": signals stay
	// inside this process (dispatchers of other processes then find work by
	// sweeping the table when their pollTimeout runs out, or at once with
	// ShortPoll).
	OrchestratorQueueURL string
	WorkerQueueURL       string

	// ReceiveElsewhere leaves the wake-up queues to another consumer, an
	// SQS event source mapping that invokes an AWS Lambda function with
	// their messages (package lambdahost): fetches never receive from SQS,
	// and the function hands them the signals it is given
	// ([Provider.DeliverSignals]). Sending is unchanged. Default false: the
	// provider polls the queues while its fetches wait.
	ReceiveElsewhere bool

	// Shards is the number of partitions of the ready index per queue. It is
	// part of the stored data's layout: every process on one table must use
	// the same value. Default 16; valid 1 to 256.
	Shards int

	// ShortPoll makes fetches look at the table once and return at once
	// when there is no work, ignoring pollTimeout. Default false: fetches
	// wait up to pollTimeout for a signal (from this process or SQS) and
	// return as soon as work is committed.
	ShortPoll bool

	// DisablePayloadCompression stores every payload (a message's or an
	// activity's JSON, a history row's events) as a string. Default false:
	// payloads of 512 bytes or more are stored DEFLATE-compressed in a
	// binary attribute when that saves an eighth or more, which cuts the
	// write and read units every copy of them costs (docs/design.md §3,
	// payloads). Limits are unchanged either way: they apply to a payload's
	// uncompressed size. Readers accept both forms, so the option can
	// change at any time; set it while processes of a version that cannot
	// read compressed payloads still share the table.
	DisablePayloadCompression bool

	// SweepInterval and IdleSweepInterval schedule the sweeps of the ready
	// index (one Scan of a small index, else one Query per shard) of a kind
	// that has a wake-up queue: the
	// process's fetches of that kind share one sweep per interval, which
	// doubles after each sweep up to IdleSweepInterval and falls back to
	// SweepInterval whenever a fetch gets work. Work that no signal
	// announces (a lost signal, an expired lease) is thus found within
	// SweepInterval in a busy process and within IdleSweepInterval in an
	// idle one. Work whose holder died is found sooner: a worker sweep
	// that shows another process's lease brings the next sweep forward to
	// the lease's end and keeps the process at SweepInterval, and an
	// instance found locked elsewhere is tried again when its lease ends
	// (docs/runtime.md §3, "Crash recovery"). Kinds without a queue,
	// ShortPoll and fetches with no poll timeout sweep at every fetch.
	// Defaults [DefaultSweepInterval] (5 s) and [DefaultIdleSweepInterval]
	// (5 min); IdleSweepInterval is at least SweepInterval.
	SweepInterval     time.Duration
	IdleSweepInterval time.Duration

	// Now is the clock for leases, visibility times and timestamps.
	// Default [time.Now]. Hosts sharing a table should be NTP-synchronised:
	// skew shortens or lengthens leases by the skew.
	Now func() time.Time

	// ClockSkewWarning is the clock skew against DynamoDB's clock (see
	// [Provider.ClockSkew]) above which the provider logs a warning through
	// Logger. Default [DefaultClockSkewWarning]. docs/design.md §9 lists what
	// each guarantee tolerates.
	ClockSkewWarning time.Duration

	// Logger receives, as warnings, the problems the provider handles
	// itself (a signal that could not be sent, a lease that expired before
	// the fetch returned, a clock skew beyond ClockSkewWarning), with
	// attributes such as "instance" and "error"; the queues the provider
	// polls log to it too. Nil (the default) discards them.
	Logger *slog.Logger

	// RequestTimeout bounds each HTTP attempt of the DynamoDB client [New]
	// builds (an http.Client timeout), whose retryer makes at most 3
	// attempts with backoff of at most 1 s; a client given in Client, or
	// an HTTP client or retryer set in the aws.Config, is used as it is.
	// Without a timeout, a request to an endpoint that never answers waits
	// for ever. Default [DefaultRequestTimeout] (10 s).
	RequestTimeout time.Duration

	// LeaseRequestTimeout bounds each attempt of a request whose outcome
	// a lease depends on: claims, renewals, turn commits and worker acks,
	// and the reads that learn what such a request did when its answer
	// was lost. Those are sent once by the SDK, whatever its retryer,
	// under this deadline, which the lease may shorten (a renewal's is at
	// most half the time left until 250 ms before the lease ends; a claim
	// may wait three quarters of its lease instead), and
	// retried by the provider with fresh clock reads (docs/design.md §6).
	// Default [DefaultLeaseRequestTimeout] (5 s).
	LeaseRequestTimeout time.Duration

	// Client overrides the DynamoDB client built from the aws.Config given
	// to [New]. Tests use it to count or fail requests.
	Client API

	// SQSClient overrides the SQS client built from the aws.Config given to
	// [New].
	SQSClient queues.API

	// MaxLongPoll caps the WaitTimeSeconds of one SQS receive; see
	// [queues.Options.MaxLongPoll]. Default 20 s.
	MaxLongPoll time.Duration

	// TracerProvider, when set, receives a client span per DynamoDB and SQS
	// request (an SDK middleware added to every call, on the clients New
	// builds and on Client and SQSClient alike), a child of the span in the
	// call's context, with the semantic conventions' attributes
	// (rpc.system aws-api, rpc.service, rpc.method, db.system dynamodb,
	// aws.dynamodb.table_names, aws.request_id). Default nil: no spans.
	TracerProvider trace.TracerProvider

	// MeterProvider, when set, receives the metrics dynamo.aws.requests,
	// dynamo.dynamodb.consumed_capacity, rpc.client.call.duration and the
	// gauges dynamo.clock.skew and dynamo.clock.skew.uncertainty
	// ([Provider.ClockSkew]). With
	// it set, every DynamoDB request that does not say otherwise asks for
	// its consumed capacity (ReturnConsumedCapacity TOTAL). Default nil: no
	// metrics, and requests are sent as they are.
	MeterProvider metric.MeterProvider
}

// Defaults and limits of [Options].
const (
	DefaultShards              = 16
	MaxShards                  = 256
	DefaultRequestTimeout      = 10 * time.Second
	DefaultLeaseRequestTimeout = 5 * time.Second
)

// MaxIDBytes is the longest instance id and session id the provider
// stores: each is a partition key after a two-byte prefix, and DynamoDB
// limits partition keys to 2,048 bytes. Longer ids fail with
// [provider.ErrInvalidInput].
const MaxIDBytes = 2046

// checkIDs fails when an instance id or session id is too long to be a key.
func checkIDs(op string, instance string, session *string) error {
	if len(instance) > MaxIDBytes {
		return provider.Permanent(op, provider.ErrInvalidInput, "instance id is %d bytes; at most %d are allowed", len(instance), MaxIDBytes)
	}
	if session != nil && len(*session) > MaxIDBytes {
		return provider.Permanent(op, provider.ErrInvalidInput, "session id is %d bytes; at most %d are allowed", len(*session), MaxIDBytes)
	}
	return nil
}

// ErrInvalidOptions is wrapped by the error [New] returns for options it
// cannot use.
var ErrInvalidOptions = errors.New("dynamo: invalid options")

// resolve applies defaults to a copy of o and validates it.
func (o Options) resolve() (Options, error) {
	if o.TableName == "" {
		return o, fmt.Errorf("%w: TableName is required", ErrInvalidOptions)
	}
	if o.Shards == 0 {
		o.Shards = DefaultShards
	}
	if o.Shards < 1 || o.Shards > MaxShards {
		return o, fmt.Errorf("%w: Shards %d is outside 1..%d", ErrInvalidOptions, o.Shards, MaxShards)
	}
	if o.OrchestratorQueueURL != "" && o.OrchestratorQueueURL == o.WorkerQueueURL {
		return o, fmt.Errorf("%w: OrchestratorQueueURL and WorkerQueueURL must differ", ErrInvalidOptions)
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.IdleSweepInterval == 0 {
		o.IdleSweepInterval = max(DefaultIdleSweepInterval, o.SweepInterval)
	}
	if o.SweepInterval < 0 || o.IdleSweepInterval < o.SweepInterval {
		return o, fmt.Errorf("%w: SweepInterval %v and IdleSweepInterval %v: both must be positive, IdleSweepInterval at least SweepInterval", ErrInvalidOptions, o.SweepInterval, o.IdleSweepInterval)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.LeaseRequestTimeout == 0 {
		o.LeaseRequestTimeout = DefaultLeaseRequestTimeout
	}
	if o.RequestTimeout < 0 || o.LeaseRequestTimeout < 0 {
		return o, fmt.Errorf("%w: RequestTimeout %v and LeaseRequestTimeout %v must be positive", ErrInvalidOptions, o.RequestTimeout, o.LeaseRequestTimeout)
	}
	warn, err := clockskew.Warning(o.ClockSkewWarning)
	if err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	o.ClockSkewWarning = warn
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// New returns a provider on the table and queues optFns name, with clients
// built from cfg (the SDK's default chain: AWS_ENDPOINT_URL*, profiles and
// roles all apply) unless Options.Client and Options.SQSClient are given. It
// makes no request. Call [Provider.Close] when done.
func New(cfg aws.Config, optFns ...func(*Options)) (*Provider, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.Client == nil {
		o.Client = dynamodb.NewFromConfig(cfg, BoundClient(cfg, o.RequestTimeout))
	}
	if o.SQSClient == nil && (o.OrchestratorQueueURL != "" || o.WorkerQueueURL != "") {
		o.SQSClient = sqs.NewFromConfig(cfg)
	}
	tel, err := newAWSTelemetry(o.TracerProvider, o.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("dynamo: telemetry: %w", err)
	}
	if tel != nil {
		o.Client = instrumentedDynamoDB{api: o.Client, opt: tel.dynamoOpt}
		if o.SQSClient != nil {
			o.SQSClient = instrumentedSQS{api: o.SQSClient, opt: tel.sqsOpt}
		}
	}
	signals, err := queues.New(o.SQSClient, func(q *queues.Options) {
		q.OrchestratorQueueURL = o.OrchestratorQueueURL
		q.WorkerQueueURL = o.WorkerQueueURL
		q.ReceiveElsewhere = o.ReceiveElsewhere
		q.Logger = o.Logger
		q.Now = o.Now
		if o.MaxLongPoll != 0 {
			q.MaxLongPoll = o.MaxLongPoll
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	p := newProvider(o, signals)
	if o.MeterProvider != nil {
		if p.skewGauges, err = observeClockSkew(o.MeterProvider, p.skew); err != nil {
			return nil, errors.Join(fmt.Errorf("dynamo: telemetry: %w", err), signals.Close())
		}
	}
	return p, nil
}

// BoundClient returns the options [New] gives the DynamoDB client it builds
// from cfg, for other clients of the same table (a command line, a
// script): an HTTP timeout of requestTimeout per attempt and a retryer of
// at most 3 attempts with backoff of at most 1 s, unless cfg sets its own
// HTTP client with a timeout, or its own retryer. Without them a request
// to an endpoint that never answers waits for ever.
func BoundClient(cfg aws.Config, requestTimeout time.Duration) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { boundClient(o, cfg, requestTimeout) }
}

func boundClient(o *dynamodb.Options, cfg aws.Config, timeout time.Duration) {
	if cfg.Retryer == nil {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.MaxBackoff = time.Second
		})
	}
	switch hc := cfg.HTTPClient.(type) {
	case nil:
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(timeout)
	case *awshttp.BuildableClient:
		if hc.GetTimeout() == 0 {
			o.HTTPClient = hc.WithTimeout(timeout)
		}
	case *http.Client:
		if hc.Timeout == 0 {
			c := *hc
			c.Timeout = timeout
			o.HTTPClient = &c
		}
	}
}
