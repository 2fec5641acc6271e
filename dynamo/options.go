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

// API is the part of [dynamodb.Client] the provider calls: the Terraform
// module's least-privilege IAM policy is checked against it.
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
	// index, never the table (docs/design.md §8).
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	// TransactWriteItems is [dynamodb.Client.TransactWriteItems].
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// BatchWriteItem is [dynamodb.Client.BatchWriteItem].
	BatchWriteItem(ctx context.Context, params *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Options configures a [Provider]; only TableName is required.
type Options struct {
	// TableName is the DynamoDB table, of the shape of
	// [github.com/duradyn/duradyn/tables.Default]. Required.
	TableName string

	// OrchestratorQueueURL and WorkerQueueURL are the SQS standard queues
	// that carry wake-up signals between processes. Default "": signals stay
	// in this process, and other processes find work by sweeping.
	OrchestratorQueueURL string
	WorkerQueueURL       string

	// ReceiveElsewhere leaves receiving to an SQS event source mapping of a
	// Lambda function (package lambdahost), which hands the signals to
	// [Provider.DeliverSignals]. Default false: fetches poll the queues.
	ReceiveElsewhere bool

	// Shards is the number of ready index partitions per queue; every
	// process on a table must use the same value. Default 16; valid 1-256.
	Shards int

	// ShortPoll makes a fetch with no work return at once, ignoring
	// pollTimeout. Default false: fetches wait up to pollTimeout for work.
	// Each fetch then sweeps the ready index, so an idle runtime pays a
	// request per slot at each of its polls: about 2,390 DynamoDB requests
	// a minute with default runtime options, against 4.8 with wake-up
	// queues (docs/performance.md).
	ShortPoll bool

	// DisablePayloadCompression stores payloads as strings. Default false:
	// payloads of 512 bytes or more are DEFLATE-compressed when that saves
	// an eighth (docs/design.md §3, payloads). Limits apply to the
	// uncompressed size. Readers accept both forms; set it while versions
	// that cannot read compressed payloads still share the table.
	DisablePayloadCompression bool

	// SweepInterval and IdleSweepInterval schedule the sweeps of the ready
	// index for a kind with a wake-up queue: the process's fetches share one
	// sweep per interval, which doubles up to IdleSweepInterval and falls
	// back at any sign of work, so unsignalled work is found within
	// SweepInterval in a busy process (docs/design.md §8, Sweeps). Kinds
	// without a queue, ShortPoll and fetches with no poll timeout sweep at
	// every fetch. Defaults [DefaultSweepInterval] (5 s) and
	// [DefaultIdleSweepInterval] (5 min), the latter at least the former.
	SweepInterval     time.Duration
	IdleSweepInterval time.Duration

	// Now is the clock for leases, visibility times and timestamps. Default
	// [time.Now]. Keep hosts NTP-synchronised: skew shifts leases as much.
	Now func() time.Time

	// ClockSkewWarning is the skew against DynamoDB's clock
	// ([Provider.ClockSkew]) above which Logger gets a warning. Default
	// [DefaultClockSkewWarning]; tolerances in docs/design.md §9.
	ClockSkewWarning time.Duration

	// Logger receives as warnings the problems the provider and its queues
	// handle themselves (an unsent signal, an early lease expiry, clock
	// skew), with attributes such as "instance" and "error". Default nil.
	Logger *slog.Logger

	// RequestTimeout bounds each HTTP attempt of the DynamoDB client [New]
	// builds ([BoundClient]); a given Client, HTTP client or retryer is used
	// as it is. Default [DefaultRequestTimeout] (10 s).
	RequestTimeout time.Duration

	// LeaseRequestTimeout bounds each attempt of a request a lease depends
	// on (claims, renewals, turn commits, worker acks, reads after a lost
	// answer), capped by the lease; the provider, not the SDK, retries them
	// (docs/design.md §6). Default [DefaultLeaseRequestTimeout] (5 s).
	LeaseRequestTimeout time.Duration

	// Client overrides the DynamoDB client built from the aws.Config given
	// to [New]. Tests use it to count or fail requests.
	Client API

	// SQSClient overrides the SQS client built from the aws.Config.
	SQSClient queues.API

	// MaxLongPoll caps the WaitTimeSeconds of one SQS receive; see
	// [queues.Options.MaxLongPoll]. Default 20 s.
	MaxLongPoll time.Duration

	// TracerProvider, when set, receives a client span per DynamoDB and SQS
	// request, also on given clients, with the semantic conventions'
	// attributes (docs/runtime.md §6). Default nil: no spans.
	TracerProvider trace.TracerProvider

	// MeterProvider, when set, receives the request and clock skew metrics
	// (docs/runtime.md §6), and DynamoDB requests ask for
	// ReturnConsumedCapacity TOTAL unless they say otherwise. Default nil.
	MeterProvider metric.MeterProvider
}

// Defaults and limits of [Options].
const (
	DefaultShards              = 16
	MaxShards                  = 256
	DefaultRequestTimeout      = 10 * time.Second
	DefaultLeaseRequestTimeout = 5 * time.Second
)

// MaxIDBytes is the longest instance or session id (a 2,048-byte key less
// a two-byte prefix); longer ids fail with [provider.ErrInvalidInput].
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

// ErrInvalidOptions is wrapped by the error [New] returns for bad options.
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
// built from cfg (the SDK's default chain applies) unless given in Options.
// It makes no request. Call [Provider.Close] when done.
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

// BoundClient returns the options [New] gives the DynamoDB client it builds,
// for other clients of the table: requestTimeout per HTTP attempt and at
// most 3 attempts with backoff up to 1 s, unless cfg sets its own timed HTTP
// client or retryer. Without them an unanswered request waits for ever.
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
