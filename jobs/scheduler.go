package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler fires the scheduled times of the jobs in a [Store], each
// exactly once across any number of schedulers sharing the store (in one
// process or many).
//
// # Jobs and actions
//
// A job's Name names its action: a function registered with
// [Scheduler.Handle], called once per scheduled time with a [Fire]. Every
// scheduler sharing a store should register the actions of all its jobs: a
// scheduler leaves alone the due jobs whose action it does not know (and
// logs them once), for a scheduler that knows it. [StartOrchestration]
// makes an action that starts a durable orchestration, exactly once per
// scheduled time.
//
// A job's trigger ([TriggerCron], [TriggerInterval], [TriggerDate]) gives
// its scheduled times; its misfire policy ([IfMissed], with its threshold)
// decides what happens to times it missed, after an outage say. A time is
// missed when it is found due later than the threshold, counted in whole
// seconds (a threshold of 0 still allows a sub-second delay). [Skip] runs
// no missed time and moves on to the first time that is not missed;
// [RunOnce] runs once for the missed times, then moves on likewise;
// [RunAll] runs each, oldest first. Due times that are not missed run one
// by one whatever the policy.
//
// # Claims
//
// A scheduled time T of a job (status scheduled, next_run_time T) runs
// only after a scheduler claims it with one [Store.CompareAndSwap]:
//
//	expected  status = scheduled, next_run_time = T
//	changes   status = running, last_scheduled_time = T, last_run_time = C,
//	          next_run_time = C + Lease
//
// where C is the claim time. While the job runs, next_run_time holds the
// end of the claim's lease. Only one compare-and-swap can win T, so T runs
// once. The scheduler renews the lease every half lease (expected: status
// running, last_scheduled_time T, the lease end it holds). When the action
// returns, one more compare-and-swap (expected the same) ends the claim:
// status back to scheduled and next_run_time the job's next scheduled time
// after T, per its misfire policy as it stood at C (so any scheduler
// computes the same time). A run that failed keeps the schedule (the error
// is logged); when the trigger has no next time the job stays with status
// scheduled and no next run time after a successful run (a date job that
// fired), or gets status failed after a failed one.
//
// A missed time that the policy does not run is passed over by one
// compare-and-swap (expected status scheduled and next_run_time T) that
// moves next_run_time on without a claim.
//
// # Crashes
//
// A scheduler that stops (its Run's context ended) or crashes between a
// claim and the end of the claim leaves the job running with an expired
// lease. Any scheduler then finds it due (its next_run_time, the lease
// end, has passed), takes the claim over (expected: status running,
// last_scheduled_time T and the old lease end; changes: a new lease end)
// and runs T again, with [Fire.Repeat] set. A Go action therefore runs at
// least once per scheduled time, and more than once only after such a
// crash or stop, or when a run outlived its lease because its scheduler
// could not renew it. An action made by [StartOrchestration] starts the
// instance [InstanceID] of the job and T, so a repeated run starts nothing
// new: exactly once.
//
// # Requests
//
// Per scheduled time fired, in the common case: one [Store.Query] of due
// jobs (Filter{Status: scheduled or running, NextRunTimeLTE: now}), one
// compare-and-swap to claim, one Query of the earliest next run time (Limit
// 1) to know how long to wait, one compare-and-swap when the action
// returns, and one per half lease the action runs longer. While no job is
// due, the scheduler makes no request: it waits until the earliest next
// run time it knows of, a [queues.Schedule] signal, an Add or Resume in
// this process, or [SchedulerOptions.MaxWait].
//
// # Telemetry
//
// With [SchedulerOptions.TracerProvider] set, each run of a scheduled time
// is a span "jobs.run <name>" (attributes jobs.job.id, jobs.job.name,
// jobs.scheduled_time, jobs.repeat, jobs.scheduler.owner, and at its end
// jobs.outcome), from the claim of the scheduled time (or its take-over) to
// the end of the claim; the action's context carries it, and a failed run
// sets its status to Error.
// With [SchedulerOptions.MeterProvider] set, the scheduler records, each
// with the attribute jobs.job.name (never the job's id, so that series stay
// few however many jobs there are):
//
//	jobs.runs          counter    runs that ended, by jobs.outcome: succeeded,
//	                              failed (with error.type), stopped (the
//	                              scheduler stopped; the run is repeated
//	                              elsewhere) or lost (another scheduler took
//	                              the claim over)
//	jobs.run.duration  histogram  seconds from a run's claim to the end of the
//	                              claim, by jobs.outcome
//	jobs.run.delay     histogram  seconds from the scheduled time to its claim
//	                              (or take-over)
//	jobs.passed_over   counter    missed times the misfire policy did not run
//	jobs.claims.lost   counter    claims and take-overs another scheduler won:
//	                              with n schedulers on a store, up to n-1 a
//	                              scheduled time, each one compare-and-swap
//	jobs.unrunnable    counter    jobs given status failed because they cannot
//	                              run (an invalid trigger, a running job
//	                              without its claim)
//
// Times are read on [SchedulerOptions.Clock]. Telemetry makes no request.
//
// A Scheduler is safe for concurrent use. Its Run runs at most once at a
// time; Add, Pause, Resume and Remove work with or without Run.
type Scheduler struct {
	store Store
	o     SchedulerOptions
	tel   *telemetry

	mu      sync.Mutex
	actions map[string]Action
	hint    time.Time // earliest next run time this process wrote since the loop last looked; zero for none

	kick    chan struct{} // an Add or Resume here noted a next run time
	running atomic.Bool
}

// Action runs a job's scheduled time. Its context ends when the scheduler
// stops, or when another scheduler took the claim over; an error it returns
// is logged, and the job keeps its schedule.
type Action func(ctx context.Context, fire Fire) error

// Fire is one run of a job's scheduled time.
type Fire struct {
	// Job is the job as claimed: status running, LastScheduledTime the
	// scheduled time, NextRunTime the end of the claim's lease.
	Job Job
	// ScheduledTime is the scheduled time this run is for, UTC.
	ScheduledTime time.Time
	// Repeat reports that another scheduler claimed this scheduled time
	// before and did not finish it: it stopped or crashed, perhaps after
	// running the action.
	Repeat bool
}

// ErrSchedulerRunning is returned by [Scheduler.Run] when the scheduler runs
// already.
var ErrSchedulerRunning = errors.New("jobs: scheduler already running")

// NewScheduler returns a scheduler of the jobs in store, configured by
// optFns. It makes no request; an option out of its range fails with an
// error wrapping [ErrInvalidOptions].
func NewScheduler(store Store, optFns ...func(*SchedulerOptions)) (*Scheduler, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOptions)
	}
	var o SchedulerOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(o.TracerProvider, o.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("jobs: telemetry: %w", err)
	}
	return &Scheduler{
		store:   store,
		o:       o,
		tel:     tel,
		actions: make(map[string]Action),
		kick:    make(chan struct{}, 1),
	}, nil
}

// Handle registers action under name: jobs whose Name is name run it. An
// empty name, a nil action or a name registered already fail with an error
// wrapping [ErrInvalidOptions].
func (s *Scheduler) Handle(name string, action Action) error {
	if name == "" || action == nil {
		return fmt.Errorf("%w: action %q: empty name or nil action", ErrInvalidOptions, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.actions[name]; ok {
		return fmt.Errorf("%w: action %q registered twice", ErrInvalidOptions, name)
	}
	s.actions[name] = action
	return nil
}

// action returns the action registered under name, nil for none.
func (s *Scheduler) action(name string) Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actions[name]
}

// Add stores a new job and schedules it; it returns the job as stored.
//
// job.Name must name an action registered with [Scheduler.Handle], and
// job.TriggerType and TriggerArgs a valid trigger ([SetTrigger] sets them).
// The first scheduled time is job.NextRunTime when set, else the trigger's
// first time at or after now (an interval trigger without a start gets
// now plus one period as its start, written into its arguments). Status
// may be empty or scheduled (the job is scheduled) or paused (stored
// paused, without a next run time, until [Scheduler.Resume]). Anything
// else, or a job the store refuses (see [ErrInvalidJob]), fails with an
// error wrapping [ErrInvalidJob] and writes nothing; an existing id fails
// with one wrapping [ErrJobExists].
//
// Cost: one [Store.Create].
func (s *Scheduler) Add(ctx context.Context, job Job) (Job, error) {
	if _, err := normalJob(job); err != nil {
		return Job{}, err
	}
	if s.action(job.Name) == nil {
		return Job{}, invalid(string(FieldName), job.Name, "no action registered under this name")
	}
	now := s.now()
	args, err := startedArgs(job.TriggerType, job.TriggerArgs, now)
	if err != nil {
		return Job{}, err
	}
	trig, err := ParseTrigger(job.TriggerType, args)
	if err != nil {
		return Job{}, err
	}
	job.TriggerArgs = args
	switch job.Status {
	case "", StatusScheduled:
		job.Status = StatusScheduled
		if job.NextRunTime == nil {
			first, ok := trig.first(now)
			if !ok {
				return Job{}, invalid(string(FieldTriggerArgs), string(args), "no scheduled time a store can hold")
			}
			job.NextRunTime = &first
		}
	case StatusPaused:
		job.NextRunTime = nil
	default:
		return Job{}, invalid(string(FieldStatus), string(job.Status), "a job is added scheduled or paused")
	}
	job.LastRunTime, job.LastScheduledTime = nil, nil
	stored, err := s.store.Create(ctx, job)
	if err != nil {
		return Job{}, err
	}
	s.note(stored.NextRunTime)
	s.wake()
	return stored, nil
}

// startedArgs returns the trigger arguments args of triggerType with an
// interval trigger's missing start set to now plus one period; others as
// they are.
func startedArgs(triggerType string, args json.RawMessage, now time.Time) (json.RawMessage, error) {
	if triggerType != TriggerInterval {
		return args, nil
	}
	var a IntervalArgs
	if err := decodeArgs(triggerType, args, &a); err != nil {
		return nil, err
	}
	if a.Start != nil {
		return args, nil
	}
	if _, err := a.trigger(); err != nil {
		return nil, err
	}
	start := now.Add(time.Duration(a.EverySeconds) * time.Second)
	a.Start = &start
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(a); err != nil {
		return nil, invalid(string(FieldTriggerArgs), string(args), err.Error())
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// Pause stops the job with id from firing: status paused, next run time
// cleared (whatever the job's state: a paused job's missed times are not
// made up after [Scheduler.Resume]). A run in progress goes on to its end.
// It returns the job as paused, or an error wrapping [ErrJobNotFound].
//
// Cost: one [Store.Update].
func (s *Scheduler) Pause(ctx context.Context, id string) (Job, error) {
	return s.store.Update(ctx, id, Changes{FieldStatus: StatusPaused, FieldNextRunTime: nil})
}

// Resume schedules the paused job with id again, from its trigger's first
// time at or after now (for a date trigger: its date, missed or not, which
// the misfire policy then decides on). A job that is not paused is left as
// it is. It returns the job as it is afterwards, or an error wrapping
// [ErrJobNotFound]; a job whose stored trigger is invalid fails with one
// wrapping [ErrInvalidJob].
//
// Cost: one [Store.Get] and one [Store.CompareAndSwap] (expected: status
// paused).
func (s *Scheduler) Resume(ctx context.Context, id string) (Job, error) {
	job, err := s.store.Get(ctx, id)
	if err != nil || job.Status != StatusPaused {
		return job, err
	}
	trig, err := ParseTrigger(job.TriggerType, job.TriggerArgs)
	if err != nil {
		return job, err
	}
	first, ok := trig.first(s.now())
	if !ok {
		return job, invalid(string(FieldTriggerArgs), string(job.TriggerArgs), "no scheduled time a store can hold")
	}
	_, job, err = s.store.CompareAndSwap(ctx, id,
		Changes{FieldStatus: StatusPaused},
		Changes{FieldStatus: StatusScheduled, FieldNextRunTime: first})
	if err != nil {
		return job, err
	}
	s.note(job.NextRunTime)
	s.wake()
	return job, nil
}

// Remove deletes the job with id and reports whether it existed. A run in
// progress goes on to its end; its claim is then found gone and dropped.
//
// Cost: one [Store.Delete].
func (s *Scheduler) Remove(ctx context.Context, id string) (bool, error) {
	return s.store.Delete(ctx, id)
}

// now returns the clock's time as stores keep it: UTC, to the millisecond.
func (s *Scheduler) now() time.Time {
	return fromMillis(s.o.Clock.Now().UnixMilli())
}

// note records that this process gave a job the next run time next (nil:
// none), so that the loop waits no longer than that, whatever a store's
// index that lags says.
func (s *Scheduler) note(next *time.Time) {
	if next == nil {
		return
	}
	s.mu.Lock()
	if s.hint.IsZero() || next.Before(s.hint) {
		s.hint = *next
	}
	s.mu.Unlock()
}

// wake makes the loop take what note recorded into account.
func (s *Scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
