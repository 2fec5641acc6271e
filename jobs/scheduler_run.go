package jobs

import (
	"context"
	"sync"
	"time"
)

// Sizes and pauses of the scheduler's loop.
const (
	// duePageSize is the most due jobs one Query of a pass reads.
	duePageSize = 100
	// errorPause is how long the loop waits, on its clock, after a pass
	// that failed or made no progress while jobs looked due.
	errorPause = time.Second
)

// activeStatuses are the statuses of the jobs a scheduler looks at:
// scheduled jobs and running ones, whose next run time is their lease end.
var activeStatuses = []Status{StatusScheduled, StatusRunning}

// Run fires the scheduler's due jobs until ctx ends, then cancels the
// contexts of the runs in progress, waits for them to return and returns
// nil. A run that returns a context error then leaves its claim to expire
// (another scheduler runs it again); any other ends its claim. No goroutine of it is
// left then. A second Run while one runs fails with
// [ErrSchedulerRunning].
//
// Run only fails with that: store errors are logged through
// [SchedulerOptions.Logger] and retried after a pause.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrSchedulerRunning
	}
	defer s.running.Store(false)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	signals := make(chan struct{}, 1)
	if s.o.Signals != nil {
		wg.Go(func() { s.listen(ctx, signals) })
	}
	l := &loop{
		s:        s,
		ctx:      ctx,
		wg:       &wg,
		inFlight: make(map[string]bool),
		passedBy: make(map[string]bool),
		done:     make(chan string, s.o.MaxConcurrent),
		unknown:  make(map[string]bool),
	}
	l.run(signals)
	return nil
}

// loop is the state of one Run, owned by its goroutine.
type loop struct {
	s        *Scheduler
	ctx      context.Context
	wg       *sync.WaitGroup
	inFlight map[string]bool // ids of the jobs this Run runs
	passedBy map[string]bool // ids of due jobs the last pass left because they ran here
	done     chan string     // ids of runs that ended
	unknown  map[string]bool // due jobs without an action here, logged once
}

// passResult is what a pass found out.
type passResult struct {
	// again asks for another pass at once.
	again bool
	// blocked reports due jobs left for want of a free run.
	blocked bool
	// next is when to look at the store again; zero when no job has a
	// next run time.
	next time.Time
}

// run is Run's loop: a pass over the due jobs, then a wait until the next
// run time, a signal, a kick or the end of a run.
func (l *loop) run(signals <-chan struct{}) {
	look := true
	var res passResult
	var lastLook time.Time
	for l.ctx.Err() == nil {
		if look {
			lastLook = l.s.now()
			res = l.pass(lastLook)
			if res.again {
				continue
			}
		}
		look = false
		var timer <-chan time.Time
		stop := func() {}
		if !res.blocked {
			at := l.s.wakeAt(res.next, lastLook)
			if !at.IsZero() && !at.After(l.s.now()) {
				look = true
				continue
			}
			if !at.IsZero() {
				timer, stop = l.s.o.Clock.Timer(at)
			}
		}
		select {
		case <-l.ctx.Done():
		case <-timer:
			look = true
		case <-signals:
			look = !res.blocked
		case <-l.s.kick:
		case id := <-l.done:
			delete(l.inFlight, id)
			// A run that ended after the last pass saw its job due again
			// (and left it) leaves it to be looked at now.
			look = res.blocked || l.passedBy[id]
		}
		stop()
	}
}

// wakeAt returns when the loop should look at the store again: at next
// (the earliest next run time the store showed; zero for none), or earlier
// at a next run time this process wrote since, or at lastLook plus
// MaxWait; zero for never.
func (s *Scheduler) wakeAt(next, lastLook time.Time) time.Time {
	s.mu.Lock()
	hint := s.hint
	s.mu.Unlock()
	at := next
	if !hint.IsZero() && (at.IsZero() || hint.Before(at)) {
		at = hint
	}
	if s.o.MaxWait > 0 {
		if limit := lastLook.Add(s.o.MaxWait); at.IsZero() || limit.Before(at) {
			at = limit
		}
	}
	return at
}

// consumeHint forgets the next run times noted up to now: the pass at now
// looks at them.
func (s *Scheduler) consumeHint(now time.Time) {
	s.mu.Lock()
	if !s.hint.After(now) {
		s.hint = time.Time{}
	}
	s.mu.Unlock()
}

// pass claims what is due at now and finds the next run time: one Query
// of due jobs (more pages when one is full of jobs left alone), a
// compare-and-swap per due job, and one Query of the earliest next run
// time.
func (l *loop) pass(now time.Time) passResult {
	s := l.s
	s.consumeHint(now)
	l.drain()
	clear(l.passedBy)
	progress, dueAgain := false, false
	left := 0 // due jobs left due, first in the store's order
	for {
		page, err := s.store.Query(l.ctx, Filter{Status: activeStatuses, NextRunTimeLTE: &now, Limit: duePageSize, Offset: left})
		if err != nil {
			return l.failed("query due jobs", err, now)
		}
		for _, job := range page {
			if len(l.inFlight) >= s.o.MaxConcurrent {
				return passResult{blocked: true}
			}
			action := s.action(job.Name)
			if l.inFlight[job.ID] || action == nil {
				if l.inFlight[job.ID] {
					l.passedBy[job.ID] = true
				} else if !l.unknown[job.ID] {
					l.unknown[job.ID] = true
					s.o.Logger.Info("jobs: job is due but its action is not registered here; left to other schedulers", "scheduler", s.o.Owner, "job", job.ID, "action", job.Name)
				}
				left++
				continue
			}
			changed, due := l.process(job, action, now)
			progress = progress || changed
			dueAgain = dueAgain || due
			if !changed {
				left++
			}
		}
		if len(page) < duePageSize {
			break
		}
	}
	if dueAgain {
		return passResult{again: true}
	}
	earliest, err := s.store.Query(l.ctx, Filter{Status: activeStatuses, Limit: 1, Offset: left})
	if err != nil {
		return l.failed("query the next run time", err, now)
	}
	if len(earliest) == 0 || earliest[0].NextRunTime == nil {
		return passResult{}
	}
	next := *earliest[0].NextRunTime
	if !next.After(s.now()) {
		if progress {
			return passResult{again: true}
		}
		// Due, yet nothing to do: a claim that failed, or an index that
		// lags. Look again after a pause rather than at once.
		return passResult{next: now.Add(errorPause)}
	}
	return passResult{next: next}
}

// drain takes note of the runs that ended.
func (l *loop) drain() {
	for {
		select {
		case id := <-l.done:
			delete(l.inFlight, id)
		default:
			return
		}
	}
}

// failed logs a store error of a pass and asks to look again after a
// pause.
func (l *loop) failed(what string, err error, now time.Time) passResult {
	if l.ctx.Err() == nil {
		l.s.o.Logger.Warn("jobs: reading the jobs failed; retrying after a pause", "scheduler", l.s.o.Owner, "operation", what, "error", err)
	}
	return passResult{next: now.Add(errorPause)}
}

// start runs a claimed scheduled time in a goroutine of its own.
func (l *loop) start(c claim, action Action) {
	l.inFlight[c.job.ID] = true
	l.wg.Go(func() {
		l.s.fire(l.ctx, c, action)
		l.done <- c.job.ID
	})
}
