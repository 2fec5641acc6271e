package jobs

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Retries of a compare-and-swap whose outcome is unknown (paused in real
// time, not on the scheduler's clock: they wait for the network), and the
// bound of the writes that end a claim after Run's context ended.
const (
	swapAttempts  = 3
	swapPause     = 100 * time.Millisecond
	finishTimeout = 10 * time.Second
)

// claim is a scheduled time a scheduler holds.
type claim struct {
	job       Job       // as claimed: status running, next run time the lease end
	scheduled time.Time // the scheduled time claimed
	trig      Trigger   // the job's trigger
	repeat    bool      // taken over from a scheduler that did not finish it
	at        time.Time // when the claim (or take-over) was made, on the scheduler's clock
}

// process deals with one due job: it claims its scheduled time and starts
// the run, passes over a missed time, or takes over an expired claim. It
// reports whether it changed the job, and whether the job is due again at
// once.
func (l *loop) process(job Job, action Action, now time.Time) (changed, due bool) {
	s := l.s
	trig, err := ParseTrigger(job.TriggerType, job.TriggerArgs)
	if err != nil {
		return l.fail(job, err), false
	}
	if job.Status == StatusRunning {
		return l.takeOver(job, trig, action, now), false
	}
	scheduled := *job.NextRunTime
	expected := Changes{FieldStatus: StatusScheduled, FieldNextRunTime: scheduled}
	d := decideMisfire(trig, scheduled, now, time.Duration(job.MisfireThresholdSeconds)*time.Second, job.IfMissed)
	if !d.run {
		next := optionalTime(d.next, d.hasNext)
		applied, _, err := s.swap(l.ctx, job.ID, expected, Changes{FieldNextRunTime: timeOrNil(next)})
		if err != nil || !applied {
			l.logSwap("pass over missed time", job.ID, scheduled, err)
			return false, false
		}
		s.tel.passedOver.Add(l.ctx, 1, metric.WithAttributes(attrJobName.String(job.Name)))
		s.o.Logger.Warn("jobs: scheduled time missed by more than the misfire threshold; passed over", "scheduler", s.o.Owner, "job", job.ID, "scheduled", scheduled, "misfire_threshold_seconds", job.MisfireThresholdSeconds, "if_missed", string(job.IfMissed))
		s.note(next)
		return true, next != nil && !next.After(now)
	}
	applied, claimed, err := s.swap(l.ctx, job.ID, expected, Changes{
		FieldStatus:            StatusRunning,
		FieldNextRunTime:       now.Add(s.o.Lease),
		FieldLastScheduledTime: scheduled,
		FieldLastRunTime:       now,
	})
	if err != nil || !applied {
		l.lostClaim(job, err)
		l.logSwap("claim", job.ID, scheduled, err)
		return false, false
	}
	l.start(claim{job: claimed, scheduled: scheduled, trig: trig, at: now}, action)
	return true, false
}

// takeOver claims the scheduled time of a running job whose lease ended
// and runs it again.
func (l *loop) takeOver(job Job, trig Trigger, action Action, now time.Time) bool {
	s := l.s
	if job.LastScheduledTime == nil || job.LastRunTime == nil {
		return l.fail(job, invalid(string(FieldLastScheduledTime), "", "a running job without the claim it runs"))
	}
	scheduled := *job.LastScheduledTime
	applied, claimed, err := s.swap(l.ctx, job.ID,
		Changes{FieldStatus: StatusRunning, FieldLastScheduledTime: scheduled, FieldNextRunTime: *job.NextRunTime},
		Changes{FieldNextRunTime: now.Add(s.o.Lease)})
	if err != nil || !applied {
		l.lostClaim(job, err)
		l.logSwap("take over", job.ID, scheduled, err)
		return false
	}
	s.o.Logger.Warn("jobs: a claim expired unfinished; running it again", "scheduler", s.o.Owner, "job", job.ID, "scheduled", scheduled)
	l.start(claim{job: claimed, scheduled: scheduled, trig: trig, repeat: true, at: now}, action)
	return true
}

// fail gives a job the scheduler cannot run (its trigger is invalid, it
// runs without a claim) status failed and no next run time, so that it is
// not due on every pass; it reports whether it did.
func (l *loop) fail(job Job, reason error) bool {
	applied, _, err := l.s.swap(l.ctx, job.ID,
		Changes{FieldStatus: job.Status, FieldNextRunTime: timeOrNil(job.NextRunTime)},
		Changes{FieldStatus: StatusFailed, FieldNextRunTime: nil})
	if err != nil || !applied {
		l.logSwap("fail", job.ID, time.Time{}, err)
		return false
	}
	l.s.tel.unrunnable.Add(l.ctx, 1, metric.WithAttributes(attrJobName.String(job.Name)))
	l.s.o.Logger.Warn("jobs: job cannot run; its status is now failed", "scheduler", l.s.o.Owner, "job", job.ID, "reason", reason)
	return true
}

// lostClaim counts a claim or take-over of job that did not apply for
// want of an error (err nil): another scheduler changed the job first.
func (l *loop) lostClaim(job Job, err error) {
	if err == nil {
		l.s.tel.claimsLost.Add(l.ctx, 1, metric.WithAttributes(attrJobName.String(job.Name)))
	}
}

// logSwap logs a compare-and-swap that failed or lost; losing a claim to
// another scheduler is the common case and not logged. A zero scheduled
// time is left out.
func (l *loop) logSwap(what, id string, scheduled time.Time, err error) {
	if err != nil && l.ctx.Err() == nil {
		args := []any{"scheduler", l.s.o.Owner, "operation", what, "job", id}
		if !scheduled.IsZero() {
			args = append(args, "scheduled", scheduled)
		}
		l.s.o.Logger.Warn("jobs: updating a job failed", append(args, "error", err)...)
	}
}

// fire runs the action of a claim, renewing its lease meanwhile, and ends
// the claim. When ctx ends (the scheduler stops) and the action returns a
// context error, the claim is left to expire: another scheduler repeats
// the run.
func (s *Scheduler) fire(ctx context.Context, c claim, action Action) {
	ctx, tel := s.tel.startRun(ctx, c, s.o.Owner, s.now)
	outcome := outcomeSucceeded
	var err error
	defer func() { tel.end(outcome, err) }()
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	renewCtx, stopRenewing := context.WithCancel(runCtx)
	renewed := make(chan leaseState, 1)
	go func() { renewed <- s.renew(renewCtx, c, cancelRun) }()

	err = action(runCtx, Fire{Job: c.job, ScheduledTime: c.scheduled, Repeat: c.repeat})
	stopRenewing()
	lease := <-renewed
	switch {
	case lease.lost:
		outcome = outcomeLost
		return
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		outcome = outcomeStopped
		s.o.Logger.Info("jobs: run stopped with the scheduler; another scheduler runs it again after the lease", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled, "error", err)
		return
	case err != nil:
		outcome = outcomeFailed
		s.o.Logger.Warn("jobs: run failed", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled, "error", err)
	}
	d := decideMisfire(c.trig, c.scheduled, *c.job.LastRunTime, time.Duration(c.job.MisfireThresholdSeconds)*time.Second, c.job.IfMissed)
	next := optionalTime(d.next, d.hasNext)
	status := StatusScheduled
	if err != nil && next == nil {
		status = StatusFailed
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	applied, _, serr := s.swap(fctx, c.job.ID,
		Changes{FieldStatus: StatusRunning, FieldLastScheduledTime: c.scheduled, FieldNextRunTime: lease.end},
		Changes{FieldStatus: status, FieldNextRunTime: timeOrNil(next)})
	switch {
	case serr != nil && !errors.Is(serr, ErrJobNotFound):
		s.o.Logger.Warn("jobs: run ended but ending its claim failed; another scheduler runs it again after the lease", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled, "error", serr)
	case !applied:
		s.o.Logger.Info("jobs: run ended but its claim was gone (paused, removed or taken over)", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled)
	default:
		s.note(next)
	}
}

// leaseState is a claim's lease when its renewal stopped.
type leaseState struct {
	end  time.Time // the lease end the job holds
	lost bool      // another scheduler took the claim over
}

// renew renews the lease of c every half lease until ctx ends, and returns
// the lease end it left. When it finds the claim taken over by another
// scheduler it calls cancelRun and reports the claim lost; when it finds
// the job paused, removed or otherwise changed, it stops renewing and lets
// the run go on.
func (s *Scheduler) renew(ctx context.Context, c claim, cancelRun func()) leaseState {
	end := *c.job.NextRunTime
	at := end.Add(-s.o.Lease / 2)
	for {
		timer, stop := s.o.Clock.Timer(at)
		select {
		case <-ctx.Done():
			stop()
			return leaseState{end: end}
		case <-timer:
		}
		newEnd := s.now().Add(s.o.Lease)
		applied, job, err := s.swap(ctx, c.job.ID,
			Changes{FieldStatus: StatusRunning, FieldLastScheduledTime: c.scheduled, FieldNextRunTime: end},
			Changes{FieldNextRunTime: newEnd})
		switch {
		case err != nil && ctx.Err() != nil:
			return leaseState{end: end}
		case errors.Is(err, ErrJobNotFound):
			return leaseState{end: end}
		case err != nil:
			s.o.Logger.Warn("jobs: renewing the lease of a run failed", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled, "error", err)
			at = s.now().Add(s.o.Lease / 10)
		case applied:
			end = newEnd
			at = end.Add(-s.o.Lease / 2)
		case job.Status == StatusRunning && job.LastScheduledTime != nil && job.LastScheduledTime.Equal(c.scheduled):
			s.o.Logger.Warn("jobs: another scheduler took the claim over; cancelling the run", "scheduler", s.o.Owner, "job", c.job.ID, "scheduled", c.scheduled)
			cancelRun()
			return leaseState{end: end, lost: true}
		default:
			return leaseState{end: end}
		}
	}
}

// swap is [Store.CompareAndSwap] for an outcome that may be unknown: a call
// that fails (other than with [ErrJobNotFound] or [ErrInvalidJob]) is made
// again, up to swapAttempts calls swapPause apart, and a later call that
// finds the job already holding changes (the earlier call applied, its
// answer lost) reports applied.
func (s *Scheduler) swap(ctx context.Context, id string, expected, changes Changes) (bool, Job, error) {
	var err error
	for attempt := range swapAttempts {
		if attempt > 0 {
			t := time.NewTimer(swapPause << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return false, Job{}, errors.Join(err, ctx.Err())
			case <-t.C:
			}
		}
		var applied bool
		var job Job
		applied, job, err = s.store.CompareAndSwap(ctx, id, expected, changes)
		switch {
		case err == nil:
			return applied || (attempt > 0 && holdsChanges(job, changes)), job, nil
		case errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrInvalidJob) || ctx.Err() != nil:
			return false, Job{}, err
		}
	}
	return false, Job{}, err
}

// holdsChanges reports whether job holds each of the status and time
// changes the scheduler writes.
func holdsChanges(job Job, changes Changes) bool {
	for field, value := range changes {
		var held bool
		switch field {
		case FieldStatus:
			held = job.Status == value
		case FieldNextRunTime:
			held = sameTimeValue(job.NextRunTime, value)
		case FieldLastRunTime:
			held = sameTimeValue(job.LastRunTime, value)
		case FieldLastScheduledTime:
			held = sameTimeValue(job.LastScheduledTime, value)
		}
		if !held {
			return false
		}
	}
	return true
}

// sameTimeValue reports whether t holds value: a time.Time, or nil for
// none.
func sameTimeValue(t *time.Time, value any) bool {
	want, ok := value.(time.Time)
	if !ok {
		return t == nil
	}
	return t != nil && t.Equal(want)
}

// optionalTime returns &t when ok, else nil.
func optionalTime(t time.Time, ok bool) *time.Time {
	if !ok {
		return nil
	}
	return &t
}

// timeOrNil returns a time change: *t, or nil for none.
func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}
