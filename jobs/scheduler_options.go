package jobs

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/queues"
)

// SchedulerOptions configures a [Scheduler]. Everything has a default.
type SchedulerOptions struct {
	// Clock is the time the scheduler reads (scheduled times, claims,
	// leases) and waits on. Default the system clock. Schedulers sharing
	// a store should have NTP-synchronised clocks: skew makes jobs fire
	// early or late by the skew and shortens or lengthens leases by it.
	// Each scheduled time still fires once, whatever the skew: a claim is
	// a compare-and-swap in the store. [DynamoStore.ClockSkew] tells how
	// far the host's clock is from DynamoDB's.
	Clock Clock

	// Signals, when set, wakes the scheduler as soon as a job becomes due
	// earlier than it knew of: it waits for [queues.Schedule] signals,
	// which the store sends when it is given the same Signals
	// ([DynamoOptions.Signals]). Default nil: the scheduler looks at the
	// store when the earliest next run time it knows of comes, when a
	// run of its own ends, and on [Scheduler.Add] and [Scheduler.Resume]
	// in this process.
	Signals *queues.Signals

	// MaxWait is the longest the scheduler waits without looking at the
	// store, so that it finds jobs no signal told it of: jobs added by a
	// process that runs no scheduler more than [queues.MaxDelay] ahead
	// (their signals are not sent), or whose signal was lost. Default:
	// [queues.MaxDelay] (15 minutes) when Signals is set, no limit
	// otherwise. A negative value means no limit.
	MaxWait time.Duration

	// MaxConcurrent is the most runs of actions at once. Default 10;
	// valid 1 to 10,000. A scheduler at its limit claims nothing more
	// until a run ends.
	MaxConcurrent int

	// Lease is how long a claim of a scheduled time lasts. The scheduler
	// renews the claims of its runs every half lease; a claim not renewed
	// (its scheduler stopped or crashed) is taken over by another
	// scheduler after the lease, which repeats the run. Default 1 minute;
	// valid 1 second to 24 hours.
	Lease time.Duration

	// Owner names this scheduler in its log lines. Default a random
	// 16-character id.
	Owner string

	// Logger receives what the scheduler handles itself: failed runs,
	// store errors it retries, runs another scheduler took over (warnings),
	// runs stopped with the scheduler and jobs due here without an action
	// (info), with attributes such as "scheduler" (Owner), "job" and
	// "error". It is called from several goroutines. Nil (the default)
	// discards them.
	Logger *slog.Logger

	// TracerProvider, when set, receives a span per run of a scheduled
	// time ("jobs.run <name>"), from its claim to the end of the claim,
	// timed on Clock; the action's context carries it. Default nil: no
	// spans.
	TracerProvider trace.TracerProvider

	// MeterProvider, when set, receives the scheduler's metrics: runs by
	// outcome, their duration and their delay after the scheduled time,
	// missed times passed over, claims lost to other schedulers, jobs it
	// cannot run ([Scheduler], Telemetry). Default nil: none.
	MeterProvider metric.MeterProvider
}

// Defaults and limits of [SchedulerOptions].
const (
	DefaultMaxConcurrent = 10
	MaxMaxConcurrent     = 10_000
	DefaultLease         = time.Minute
	MinLease             = time.Second
	MaxLease             = 24 * time.Hour
)

// resolve applies defaults to a copy of o and validates it.
func (o SchedulerOptions) resolve() (SchedulerOptions, error) {
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.MaxWait == 0 && o.Signals != nil {
		o.MaxWait = queues.MaxDelay
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxConcurrent < 1 || o.MaxConcurrent > MaxMaxConcurrent {
		return o, fmt.Errorf("%w: MaxConcurrent %d is outside 1..%d", ErrInvalidOptions, o.MaxConcurrent, MaxMaxConcurrent)
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.Lease < MinLease || o.Lease > MaxLease {
		return o, fmt.Errorf("%w: Lease %v is outside %v..%v", ErrInvalidOptions, o.Lease, MinLease, MaxLease)
	}
	if o.Owner == "" {
		o.Owner = rand.Text()[:16]
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
