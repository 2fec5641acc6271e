package lambdahost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
)

// VisibilityAPI is the part of the SQS client the host calls itself: it
// shortens the visibility timeout of the messages it reports as failed, so
// that SQS delivers them again after a backoff instead of after the
// queue's whole visibility timeout. The SDK's [sqs.Client] satisfies it.
type VisibilityAPI interface {
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Options configure a [Host]. The zero value of every field means its
// documented default.
type Options struct {
	// Provider adjusts the options of the DynamoDB provider, which [New]
	// otherwise takes from the environment as [dynamo.NewFromEnv] does
	// (DURADYN_TABLE, DURADYN_ORCHESTRATOR_QUEUE_URL,
	// DURADYN_WORKER_QUEUE_URL, the SDK's region and credentials); what it
	// sets wins over the environment. ReceiveElsewhere is always set: the
	// event source mappings consume the queues. SweepInterval and
	// IdleSweepInterval default to an hour, not 5 s and 5 min: the
	// scheduled sweep invocations look for the work no signal announces,
	// so an environment's fetches sweep once, at its first invocation,
	// and rarely after.
	Provider func(*dynamo.Options)

	// Runtime adjusts the options of the runtime each invocation runs.
	// The host sets OrchestrationConcurrency and WorkerConcurrency to 4,
	// Logger to Logger, ActivityCancellationGracePeriod to half the
	// runtime's shutdown time, and ShutdownTimeout to StopBefore minus
	// FinishTimeout, which Runtime cannot change.
	Runtime func(*durable.Options)

	// Idle is how long an invocation from a queue goes on once no slot has
	// had work, none is in flight and the provider holds no signal it has
	// not tried: work its own turns make (the next activity of a chain, a
	// timer of a second) is taken by the same invocation when it comes
	// within Idle. Default 250 ms.
	Idle time.Duration

	// SweepAge is how long work must have been eligible for a scheduled
	// sweep invocation to signal it ([Host.HandleSweep]): longer than a
	// signal takes to be served, so that the sweep signals the work whose
	// signal was lost rather than the work queued behind a backlog, whose
	// signal is on its way. Default 10 s.
	SweepAge time.Duration

	// SweepLimit bounds the signals one sweep invocation sends; the next
	// sweep sends the rest. Default 500.
	SweepLimit int

	// StopBefore is how long before an invocation's deadline its runtime
	// stops fetching: enough for a turn in flight to commit or an activity
	// to be abandoned (the runtime's shutdown, StopBefore minus
	// FinishTimeout), then for the host to finish (FinishTimeout). An
	// invocation whose deadline is closer than that at its start does
	// nothing and reports every message as failed. Default 3 s.
	StopBefore time.Duration

	// FinishTimeout bounds what the host does after the runtime stopped:
	// sending the signals its commits posted, sending on the signals that
	// reached it only, and changing the visibility of the messages it
	// reports as failed. Default 1 s; less than StopBefore.
	FinishTimeout time.Duration

	// RetryDelay is how long SQS hides a message the host reports as
	// failed because another process held its instance, on its first
	// receive; it doubles with each receive (SQS's
	// ApproximateReceiveCount) up to MaxRetryDelay. Defaults 1 s and 20 s.
	// A message reported as failed because the invocation's time ran out
	// before a fetch got to it is made visible again at once. A negative
	// RetryDelay leaves failed messages to the queue's visibility timeout.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration

	// SQSClient changes the visibility of failed messages. Default: a
	// client of the SDK's default configuration, with the SQS endpoint of
	// the environment (DURADYN_SQS_ENDPOINT, AWS_ENDPOINT_URL_SQS,
	// AWS_ENDPOINT_URL).
	SQSClient VisibilityAPI

	// Logger receives one line per invocation (what came in, what failed,
	// why the run stopped) and the provider's and runtime's logs, unless
	// Provider or Runtime set loggers of their own. Default: discarded.
	Logger *slog.Logger
}

// Defaults of [Options].
const (
	DefaultIdle       = 250 * time.Millisecond
	DefaultSweepAge   = 10 * time.Second
	DefaultSweepLimit = 500
	// DefaultSweepInterval is the provider's SweepInterval and
	// IdleSweepInterval on Lambda.
	DefaultSweepInterval = time.Hour
	DefaultStopBefore    = 3 * time.Second
	DefaultFinishTimeout = time.Second
	DefaultRetryDelay    = time.Second
	DefaultMaxRetryDelay = 20 * time.Second
	// DefaultConcurrency is the orchestration and worker concurrency of
	// the runtime of each invocation.
	DefaultConcurrency = 4
)

// ErrInvalidOptions is wrapped by the error [New] returns for options it
// cannot use.
var ErrInvalidOptions = errors.New("lambdahost: invalid options")

// resolve applies defaults to a copy of o and validates it.
func (o Options) resolve() (Options, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Idle, DefaultIdle)
	def(&o.StopBefore, DefaultStopBefore)
	def(&o.FinishTimeout, DefaultFinishTimeout)
	def(&o.RetryDelay, DefaultRetryDelay)
	def(&o.MaxRetryDelay, DefaultMaxRetryDelay)
	def(&o.SweepAge, DefaultSweepAge)
	if o.SweepLimit == 0 {
		o.SweepLimit = DefaultSweepLimit
	}
	switch {
	case o.Idle < 0 || o.SweepAge < 0 || o.SweepLimit < 0:
		return o, fmt.Errorf("%w: Idle %v, SweepAge %v and SweepLimit %d must not be negative", ErrInvalidOptions, o.Idle, o.SweepAge, o.SweepLimit)
	case o.FinishTimeout < 0 || o.StopBefore <= o.FinishTimeout:
		return o, fmt.Errorf("%w: StopBefore %v must exceed FinishTimeout %v, which must be positive", ErrInvalidOptions, o.StopBefore, o.FinishTimeout)
	case o.RetryDelay > 0 && o.MaxRetryDelay < o.RetryDelay:
		return o, fmt.Errorf("%w: MaxRetryDelay %v is below RetryDelay %v", ErrInvalidOptions, o.MaxRetryDelay, o.RetryDelay)
	case o.MaxRetryDelay > 12*time.Hour:
		return o, fmt.Errorf("%w: MaxRetryDelay %v is beyond SQS's 12 hours", ErrInvalidOptions, o.MaxRetryDelay)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// shutdownTimeout is the runtime's share of StopBefore.
func (o Options) shutdownTimeout() time.Duration { return o.StopBefore - o.FinishTimeout }

// runtimeOptions are the options of an invocation's runtime.
func (o Options) runtimeOptions(ro *durable.Options) {
	shutdown := o.shutdownTimeout()
	ro.OrchestrationConcurrency = DefaultConcurrency
	ro.WorkerConcurrency = DefaultConcurrency
	ro.Logger = o.Logger
	ro.ActivityCancellationGracePeriod = shutdown / 2
	if o.Runtime != nil {
		o.Runtime(ro)
	}
	ro.ShutdownTimeout = shutdown
	if ro.ActivityCancellationGracePeriod <= 0 || ro.ActivityCancellationGracePeriod > shutdown {
		ro.ActivityCancellationGracePeriod = shutdown / 2
	}
}

// retryDelay is how long SQS should hide a failed message received
// receives times, or 0 to leave it to the queue.
func (o Options) retryDelay(receives int) time.Duration {
	if o.RetryDelay < 0 {
		return 0
	}
	d := o.RetryDelay
	for i := 1; i < receives && d < o.MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, o.MaxRetryDelay)
}
