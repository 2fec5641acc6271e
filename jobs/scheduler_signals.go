package jobs

import (
	"context"
	"time"

	"github.com/duradyn/duradyn/queues"
)

// signalWait is the timeout of one wait for schedule signals; the listener
// waits again at once, so it only bounds how long one Wait call lasts.
const signalWait = 10 * time.Minute

// listen waits for [queues.Schedule] signals until ctx ends and passes
// each wake-up on to the loop through wake (a buffer of one: wake-ups that
// arrive while one is pending coalesce). A [queues.Signals] closed under
// it ends the listening; the loop goes on without signals.
func (s *Scheduler) listen(ctx context.Context, wake chan<- struct{}) {
	for {
		sigs, err := s.o.Signals.Wait(ctx, queues.Schedule, signalWait)
		if len(sigs) > 0 {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.o.Logger.Warn("jobs: schedule signals failed; going on without them", "scheduler", s.o.Owner, "error", err)
			}
			return
		}
	}
}
