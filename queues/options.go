package queues

import (
	"fmt"
	"log/slog"
	"time"
)

// MaxDelay is the longest delay SQS accepts for one message (DelaySeconds
// 900). [Signals.Notify] keeps a signal whose VisibleAt lies further in the
// future in memory until it is within MaxDelay, then sends it; if the
// process stops before, the dispatchers' periodic sweep of DynamoDB finds
// that work instead.
const MaxDelay = 15 * time.Minute

// maxLongPoll is the largest WaitTimeSeconds SQS accepts.
const maxLongPoll = 20 * time.Second

// Options configures [Signals]. The zero value is valid: both kinds are then
// in-process only, and [New] accepts a nil [API].
type Options struct {
	// OrchestratorQueueURL is the SQS standard queue that carries
	// orchestrator signals between processes. Default "": orchestrator
	// signals stay in this process, and waiters make no SQS requests.
	OrchestratorQueueURL string

	// WorkerQueueURL is the SQS standard queue that carries worker signals
	// between processes. Default "": worker signals stay in this process,
	// and waiters make no SQS requests. It must differ from
	// OrchestratorQueueURL (one poller would otherwise consume the other
	// kind's signals).
	WorkerQueueURL string

	// ReceiveElsewhere leaves receiving to another consumer of the queues,
	// such as an SQS event source mapping that invokes an AWS Lambda
	// function with the messages: [Signals.Wait] never receives from SQS,
	// and signals of other processes reach the waiters through
	// [Signals.Deliver] only. Sending is unchanged. Default false.
	ReceiveElsewhere bool

	// MaxLongPoll caps the WaitTimeSeconds of one ReceiveMessage request.
	// It is truncated to whole seconds. Default 20 s, the SQS maximum;
	// valid 1 s to 20 s.
	MaxLongPoll time.Duration

	// ErrorBackoff is how long a poller pauses after a failed
	// ReceiveMessage before it polls again (waiters keep waiting in-process
	// meanwhile). Default 1 s; must not be negative.
	ErrorBackoff time.Duration

	// MaxPending bounds the signals kept per kind for the next [Signals.Wait]
	// when they arrive while nobody waits (the oldest are dropped first).
	// Default [DefaultMaxPending]; must not be negative.
	MaxPending int

	// MaxDeferred bounds the signals more than [MaxDelay] away that this
	// process keeps in memory until they are within it (see
	// [Signals.Notify]). Default 10,000; must not be negative.
	MaxDeferred int

	// MaxPosted bounds the posted messages ([Signals.Post]) that wait to be
	// sent; a post beyond it drops its messages. Default 10,000; must not be
	// negative.
	MaxPosted int

	// Logger receives, as warnings, the problems the background pollers
	// handle themselves: failed receives and deletes, undecodable messages,
	// posted signals that could not be sent, with attributes such as
	// "queue" and "error". It is called from several goroutines. Nil (the
	// default) discards them.
	Logger *slog.Logger

	// Now is the clock used to turn [Signal.VisibleAt] into a delay.
	// Default [time.Now].
	Now func() time.Time
}

// DefaultMaxPending is the default of [Options.MaxPending].
const DefaultMaxPending = 100

// resolve applies defaults to a copy of o and validates it.
func (o Options) resolve() (Options, error) {
	if o.MaxLongPoll == 0 {
		o.MaxLongPoll = maxLongPoll
	}
	o.MaxLongPoll = o.MaxLongPoll.Truncate(time.Second)
	if o.MaxLongPoll < time.Second || o.MaxLongPoll > maxLongPoll {
		return o, fmt.Errorf("queues: MaxLongPoll %v out of range 1s..20s", o.MaxLongPoll)
	}
	if o.ErrorBackoff < 0 {
		return o, fmt.Errorf("queues: negative ErrorBackoff %v", o.ErrorBackoff)
	}
	if o.ErrorBackoff == 0 {
		o.ErrorBackoff = time.Second
	}
	if o.MaxPending < 0 {
		return o, fmt.Errorf("queues: negative MaxPending %d", o.MaxPending)
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxDeferred < 0 {
		return o, fmt.Errorf("queues: negative MaxDeferred %d", o.MaxDeferred)
	}
	if o.MaxDeferred == 0 {
		o.MaxDeferred = 10_000
	}
	if o.MaxPosted < 0 {
		return o, fmt.Errorf("queues: negative MaxPosted %d", o.MaxPosted)
	}
	if o.MaxPosted == 0 {
		o.MaxPosted = 10_000
	}
	if o.OrchestratorQueueURL != "" && o.OrchestratorQueueURL == o.WorkerQueueURL {
		return o, fmt.Errorf("queues: orchestrator and worker signals need different queues, both are %q", o.WorkerQueueURL)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}
