package lambdasim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Schedule simulates an EventBridge Scheduler schedule whose target is the
// function: every Every, it invokes the function asynchronously with
// Payload, whether or not the previous invocation has ended (the
// function's MaxEnvironments bounds them), as Scheduler does.
type Schedule struct {
	// Function is invoked.
	Function *Function
	// Every is the schedule's rate. Required.
	Every time.Duration
	// Payload is the schedule's input.
	Payload []byte

	invocations, failures atomic.Int64
}

// ScheduleStats counts a schedule's invocations.
type ScheduleStats struct {
	// Invocations counts the invocations that ended; Failures, those
	// that failed (an error, a kill, a timeout).
	Invocations, Failures int64
}

// Stats returns the schedule's counters.
func (s *Schedule) Stats() ScheduleStats {
	return ScheduleStats{Invocations: s.invocations.Load(), Failures: s.failures.Load()}
}

// Run invokes the function every Every until ctx ends, then waits for the
// invocations under way.
func (s *Schedule) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(s.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = s.Fire(ctx)
			}()
		}
	}
}

// Fire invokes the function once with the schedule's payload, as a tick
// does, and returns its response. ctx bounds only the wait for an
// environment.
func (s *Schedule) Fire(ctx context.Context) ([]byte, error) {
	out, err := s.Function.Invoke(ctx, s.Payload)
	if ctx.Err() != nil && err == ctx.Err() {
		return nil, err
	}
	s.invocations.Add(1)
	if err != nil {
		s.failures.Add(1)
	}
	return out, err
}
