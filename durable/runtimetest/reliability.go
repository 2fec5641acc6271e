package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// Reliability: duplicate deliveries, crashes and restarts, lost and failed
// acks, lock timeouts and renewals (reliability_tests.rs,
// recovery_tests.rs, worker_reliability_test.rs, lock_timeout_tests.rs),
// and the fault-injection cases of duradyn's own crash-recovery plan.
//
// A crash is a runtime stopped with Shutdown, or a turn whose ack the
// fault wrapper holds while its lock lapses (a paused process); a second
// runtime on the same provider takes over.
var reliabilityTests = []Test{
	// reliability_tests.rs
	{"external_duplicate_workitems_dedup", externalDuplicateWorkitemsDedup},
	{"timer_duplicate_workitems_dedup", timerDuplicateWorkitemsDedup},
	{"activity_duplicate_completion_workitems_dedup", activityDuplicateCompletionWorkitemsDedup},
	{"crash_after_dequeue_before_append_completion", crashAfterDequeueBeforeAppendCompletion},
	{"crash_after_append_before_ack_timer", crashAfterAppendBeforeAckTimer},
	// timer_tests.rs's copy is in Timers (a shutdown); this one crashes the
	// turn that dequeued the firing.
	{"timer_recovery_after_crash_before_fire", timerRecoveryAfterCrashBeforeFire},
	// recovery_tests.rs
	{"recovery_across_restart_sqlite_provider", recoveryAcrossRestartSqliteProvider},
	{"recovery_across_restart_sqlite_memory", recoveryAcrossRestartSqliteMemory},
	{"recovery_multiple_orchestrations_sqlite_provider", recoveryMultipleOrchestrationsSqliteProvider},
	// worker_reliability_test.rs
	{"activity_reliability_after_crash_before_completion_enqueue", activityReliabilityAfterCrashBeforeCompletionEnqueue},
	{"multiple_activities_reliability_after_crash", multipleActivitiesReliabilityAfterCrash},
	{"worker_abandon_on_ack_failure_enables_retry", workerAbandonOnAckFailureEnablesRetry},
	// lock_timeout_tests.rs
	{"default_lock_timeouts", defaultLockTimeouts},
	{"custom_lock_timeout_configuration", customLockTimeoutConfiguration},
	{"orchestration_with_custom_timeout_completes", orchestrationWithCustomTimeoutCompletes},
	{"very_short_lock_timeout_works", veryShortLockTimeoutWorks},
	{"long_running_activity_with_lock_renewal", longRunningActivityWithLockRenewal},
	{"short_activity_no_renewal_needed", shortActivityNoRenewalNeeded},
	{"lock_renewal_short_timeout", lockRenewalShortTimeout},
	{"custom_renewal_buffer", customRenewalBuffer},
	{"concurrent_activities_with_renewal", concurrentActivitiesWithRenewal},
	{"orchestrator_lock_renewal_buffer_defaults", orchestratorLockRenewalBufferDefaults},
	{"orchestration_lock_renewal_prevents_expiration", orchestrationLockRenewalPreventsExpiration},
	// duradyn's own fault-injection cases
	{"fault_orchestration_ack_lost_after_commit", faultOrchestrationAckLostAfterCommit},
	{"fault_orchestration_ack_retryable_failures", faultOrchestrationAckRetryableFailures},
	{"fault_orchestration_ack_permanent_failure", faultOrchestrationAckPermanentFailure},
	{"fault_fetch_failures_retried", faultFetchFailuresRetried},
	{"fault_activity_lock_stolen_cancels_and_retries", faultActivityLockStolenCancelsAndRetries},
	{"fault_turn_held_past_lock_loses_ack", faultTurnHeldPastLockLosesAck},
	{"fault_activity_renewal_transient_failure_not_lost", faultActivityRenewalTransientFailureNotLost},
}

// relShortOrchLocks gives orchestration turns a 2 s lease renewed every
// second, so a lapsed lock is taken over quickly.
func relShortOrchLocks(o *durable.Options) {
	o.OrchestratorLockTimeout = 2 * time.Second
	o.OrchestratorLockRenewalBuffer = time.Second
}

// relSingleSlot runs one orchestration turn at a time.
func relSingleSlot(o *durable.Options) { o.OrchestrationConcurrency = 1 }

func waitEvtOrch() durable.Definition {
	return durable.OrchestrationFunc("WaitEvt", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.WaitForEvent[durable.Raw](ctx, "Evt").Get(ctx)
		return string(v), err
	})
}

func oneTimerOrch(d time.Duration) durable.Definition {
	return durable.OrchestrationFunc("OneTimer", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if err := ctx.Sleep(d); err != nil {
			return "", err
		}
		return "t", nil
	})
}

// relEnqueue puts item on the orchestrator queue twice, as a duplicated
// delivery.
func relEnqueueTwice(h *H, item provider.WorkItem) {
	h.Helper()
	for range 2 {
		if err := h.P.EnqueueForOrchestrator(h.Ctx(), item, 0); err != nil {
			h.Fatalf("enqueue: %v", err)
		}
	}
}

func countExternal(events []provider.Event, name string) int {
	n := 0
	for _, ev := range events {
		if k, ok := ev.Kind.(provider.ExternalEvent); ok && k.Name == name {
			n++
		}
	}
	return n
}

// The duplicates must reach one turn: a runtime polling at once would take
// the first alone, complete, and drain the second unrecorded. So they are
// enqueued while no runtime runs.
func externalDuplicateWorkitemsDedup(h *H) {
	rt := h.Serve(waitEvtOrch())
	const id = "inst-ext-dup"
	h.Start("WaitEvt", id, durable.Raw(""))
	h.AwaitEvent(id, "ExternalSubscribed")
	relShutdown(h, rt)
	relEnqueueTwice(h, provider.ExternalRaisedItem{Instance: id, Name: "Evt", Data: "ok"})
	h.Serve(waitEvtOrch())
	if out := h.Completed(id); out != "ok" {
		h.Errorf("output %q", out)
	}
	// Both raised events are recorded (for audit); only one is delivered.
	if n := countExternal(h.History(id), "Evt"); n != 2 {
		h.Errorf("%d ExternalEvents; want 2", n)
	}
}

func timerDuplicateWorkitemsDedup(h *H) {
	h.Serve(oneTimerOrch(100 * time.Millisecond))
	const id = "inst-timer-dup"
	h.Start("OneTimer", id, durable.Raw(""))
	ev := h.AwaitEvent(id, "TimerCreated")
	relEnqueueTwice(h, provider.TimerFiredItem{Instance: id, ExecutionID: 1, ID: ev.EventID, FireAtMs: ev.Kind.(provider.TimerCreated).FireAtMs})
	if out := h.Completed(id); out != "t" {
		h.Errorf("output %q", out)
	}
	if n := Count(h.History(id), "TimerFired"); n != 1 {
		h.Errorf("%d TimerFired; want 1", n)
	}
}

func activityDuplicateCompletionWorkitemsDedup(h *H) {
	release := make(chan struct{})
	h.Serve(
		durable.OrchestrationFunc("OneSlowAct", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relCall(ctx, "SlowEcho", "x")
		}),
		// The original sleeps 200 ms so the injected completions arrive
		// first; this activity waits for them instead.
		durable.ActivityFunc("SlowEcho", func(ctx context.Context, in string) (string, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return in, nil
		}),
	)
	const id = "inst-act-dup"
	h.Start("OneSlowAct", id, durable.Raw(""))
	ev := h.AwaitEvent(id, "ActivityScheduled")
	relEnqueueTwice(h, provider.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: ev.EventID, Result: "x"})
	out := h.Completed(id)
	close(release)
	if out != "x" {
		h.Errorf("output %q", out)
	}
	n := 0
	for _, e := range h.History(id) {
		if _, ok := e.Kind.(provider.ActivityCompleted); ok && e.SourceEventID != nil && *e.SourceEventID == ev.EventID {
			n++
		}
	}
	if n != 1 {
		h.Errorf("%d ActivityCompleted for id %d; want 1", n, ev.EventID)
	}
}

// relHeldTakeover holds the next ack of id with its lock lapsing, waits
// for the held turn, starts a second runtime for reg and returns the
// hold; the caller releases it once the second runtime has taken over.
func relHeldTakeover(h *H, fp *FaultProvider, id string, reg *durable.Registry, trigger func(), match ...func(Call) bool) *Hold {
	h.Helper()
	opts := HoldOptions{ExpireLock: true}
	if len(match) > 0 {
		opts.Match = match[0]
	}
	hold := fp.HoldAck(id, opts)
	h.Cleanup(hold.Release)
	trigger()
	relAwait(h, "the turn to reach its ack", hold.Reached())
	h.Runtime(reg, relShortOrchLocks)
	return hold
}

// relLostAck releases hold and checks that its late ack was refused.
func relLostAck(h *H, hold *Hold) {
	h.Helper()
	hold.Release()
	relAwait(h, "the held ack", hold.Done())
	if err := hold.Err(); !errors.Is(err, provider.ErrInvalidLockToken) {
		h.Errorf("late ack of the crashed turn: %v; want ErrInvalidLockToken", err)
	}
}

// The original enqueues the event twice to stand for a redelivery. Here the
// runtime that dequeued the events also pauses before its commit (append)
// until its lock lapses, and a second runtime processes the same messages.
func crashAfterDequeueBeforeAppendCompletion(h *H) {
	fp := relFaults(h)
	reg := h.Registry(waitEvtOrch())
	h.Runtime(reg, relShortOrchLocks, relSingleSlot)
	const id = "inst-crash-before-append"
	h.Start("WaitEvt", id, durable.Raw(""))
	h.AwaitEvent(id, "ExternalSubscribed")
	hold := relHeldTakeover(h, fp, id, reg, func() {
		relEnqueueTwice(h, provider.ExternalRaisedItem{Instance: id, Name: "Evt", Data: "ok"})
	})
	if out := h.Completed(id); out != "ok" {
		h.Errorf("output %q", out)
	}
	relLostAck(h, hold)
	if n := countExternal(h.History(id), "Evt"); n != 2 {
		h.Errorf("%d ExternalEvents; want 2 (one per raised event, none from the redelivery)", n)
	}
}

// duradyn commits a turn's history and its dequeue atomically, so "append
// done, ack not" is a commit whose response is lost: the runtime sees an
// error after the provider committed. The fired timer is also delivered
// twice, as in the original.
func crashAfterAppendBeforeAckTimer(h *H) {
	fp := relFaults(h)
	h.Runtime(h.Registry(oneTimerOrch(50 * time.Millisecond)))
	fp.Inject(Fault{Op: provider.OpAckOrchestrationItem, Mode: LoseResponse, Times: 1, Match: func(c Call) bool {
		return hasEvent(c.Commit.HistoryDelta, "TimerFired")
	}})
	const id = "inst-crash-after-append"
	h.Start("OneTimer", id, durable.Raw(""))
	ev := h.AwaitEvent(id, "TimerCreated")
	relEnqueueTwice(h, provider.TimerFiredItem{Instance: id, ExecutionID: 1, ID: ev.EventID, FireAtMs: ev.Kind.(provider.TimerCreated).FireAtMs})
	if out := h.Completed(id); out != "t" {
		h.Errorf("output %q", out)
	}
	if n := fp.Injected(provider.OpAckOrchestrationItem); n != 1 {
		h.Errorf("%d lost ack responses; want 1", n)
	}
	if n := Count(h.History(id), "TimerFired"); n != 1 {
		h.Errorf("%d TimerFired; want 1", n)
	}
}

func hasEvent(events []provider.Event, typ string) bool {
	return Count(events, typ) > 0
}

func timerRecoveryAfterCrashBeforeFire(h *H) {
	fp := relFaults(h)
	var posts atomic.Int32
	reg := h.Registry(
		durable.OrchestrationFunc("TimerRecoveryTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if err := ctx.Sleep(200 * time.Millisecond); err != nil {
				return "", err
			}
			return relCall(ctx, "PostTimer", "done")
		}),
		durable.ActivityFunc("PostTimer", func(ctx context.Context, in string) (string, error) {
			posts.Add(1)
			return "Timer fired, then: " + in, nil
		}),
	)
	h.Runtime(reg, relShortOrchLocks, relSingleSlot)
	const id = "timer-recovery-instance"
	// The held turn is the one that dequeued the firing.
	hold := relHeldTakeover(h, fp, id, reg, func() { h.Start("TimerRecoveryTest", id, durable.Raw("")) },
		func(c Call) bool { return hasEvent(c.Commit.HistoryDelta, "TimerFired") })
	if out := h.Completed(id); out != "Timer fired, then: done" {
		h.Errorf("output %q", out)
	}
	relLostAck(h, hold)
	hist := h.History(id)
	if Count(hist, "TimerFired") != 1 || Count(hist, "ActivityScheduled") != 1 || posts.Load() != 1 {
		h.Errorf("history %v, PostTimer ran %d times; want one firing and one run", EventTypes(hist), posts.Load())
	}
}

func countScheduled(events []provider.Event, name, input string) int {
	n := 0
	for _, ev := range events {
		if k, ok := ev.Kind.(provider.ActivityScheduled); ok && k.Name == name && k.Input == input {
			n++
		}
	}
	return n
}

func recoveryDefs() []durable.Definition {
	return []durable.Definition{
		durable.OrchestrationFunc("RecoveryTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			var out strings.Builder
			step := func(s string) error {
				r, err := relCall(ctx, "Step", s)
				out.WriteString(r)
				return err
			}
			for _, s := range []string{"1", "2"} {
				if err := step(s); err != nil {
					return "", err
				}
			}
			if _, err := durable.WaitForEvent[durable.Raw](ctx, "Resume").Get(ctx); err != nil {
				return "", err
			}
			for _, s := range []string{"3", "4"} {
				if err := step(s); err != nil {
					return "", err
				}
			}
			return out.String(), nil
		}),
		durable.ActivityFunc("Step", func(ctx context.Context, in string) (string, error) { return in, nil }),
	}
}

// recoveryStageOne runs RecoveryTest on h's provider until it waits for
// Resume, then stops the runtime.
func recoveryStageOne(h *H, id string) {
	h.Helper()
	rt := h.Runtime(h.Registry(recoveryDefs()...))
	h.Start("RecoveryTest", id, durable.Raw(""))
	h.AwaitEvent(id, "ExternalSubscribed")
	hist := h.History(id)
	if countScheduled(hist, "Step", "1") != 1 || countScheduled(hist, "Step", "2") != 1 || countScheduled(hist, "Step", "3") != 0 {
		h.Fatalf("before the restart: %v", EventTypes(hist))
	}
	relShutdown(h, rt)
}

// relShutdown stops rt (a crash, for the next runtime).
func relShutdown(h *H, rt *durable.Runtime) {
	h.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		h.Fatalf("shutdown: %v", err)
	}
}

// recoveryStageTwo restarts on h's provider, starts the instance again (a
// duplicate start the runtime ignores, as in the original), resumes it and
// checks it finishes each step once.
func recoveryStageTwo(h *H, id string) {
	h.Helper()
	h.Runtime(h.Registry(recoveryDefs()...))
	h.Start("RecoveryTest", id, durable.Raw(""))
	h.AwaitSubscription(id, "Resume")
	if err := h.Client.RaiseEvent(h.Ctx(), id, "Resume", durable.Raw("go")); err != nil {
		h.Fatalf("raise: %v", err)
	}
	if out := h.Completed(id); out != "1234" {
		h.Errorf("output %q; want 1234", out)
	}
	hist := h.History(id)
	for _, s := range []string{"1", "2", "3", "4"} {
		if n := countScheduled(hist, "Step", s); n != 1 {
			h.Errorf("Step %s scheduled %d times; want 1", s, n)
		}
	}
}

func recoveryAcrossRestartSqliteProvider(h *H) {
	const id = "inst-recover-sqlite-1"
	recoveryStageOne(h, id)
	recoveryStageTwo(h, id)
}

// The original restarts on a second, empty in-memory store: the instance
// starts over there and the first store keeps only what ran before. Here
// the second store is a fresh provider from the factory.
func recoveryAcrossRestartSqliteMemory(h *H) {
	const id = "inst-recover-mem-1"
	recoveryStageOne(h, id)
	first := h.P
	h2 := newHarness(h.T, h.f)
	recoveryStageTwo(h2, id)
	hist, err := first.Read(h.Ctx(), id)
	if err != nil {
		h.Fatalf("read first store: %v", err)
	}
	if countScheduled(hist, "Step", "3") != 0 || countScheduled(hist, "Step", "4") != 0 {
		h.Errorf("first store ran past the restart: %v", EventTypes(hist))
	}
}

func recoveryMultipleOrchestrationsSqliteProvider(h *H) {
	echo := func(ctx context.Context, in string) (string, error) { return in, nil }
	defs := []durable.Definition{
		durable.ActivityFunc("Echo", echo),
		durable.ActivityFunc("Upper", func(ctx context.Context, in string) (string, error) { return strings.ToUpper(in), nil }),
		durable.ActivityFunc("Add", func(ctx context.Context, in string) (string, error) {
			var a, b int
			_, _ = fmt.Sscanf(in, "%d,%d", &a, &b)
			return fmt.Sprint(a + b), nil
		}),
		durable.OrchestrationFunc("EchoWait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if _, err := relCall(ctx, "Echo", in); err != nil {
				return "", err
			}
			if err := ctx.Sleep(500 * time.Millisecond); err != nil {
				return "", err
			}
			if _, err := relCall(ctx, "Echo", in); err != nil {
				return "", err
			}
			return "done:" + in, nil
		}),
		durable.OrchestrationFunc("UpperOnly", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			up, err := relCall(ctx, "Upper", in)
			return "upper:" + up, err
		}),
		durable.OrchestrationFunc("WaitEvent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if _, err := durable.WaitForEvent[durable.Raw](ctx, "Go").Get(ctx); err != nil {
				return "", err
			}
			e, err := relCall(ctx, "Echo", in)
			return "acked:" + e, err
		}),
		durable.OrchestrationFunc("ComputeSum", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			s, err := relCall(ctx, "Add", in)
			return "sum=" + s, err
		}),
		durable.OrchestrationFunc("TwoTimers", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			for range 2 {
				if err := ctx.Sleep(300 * time.Millisecond); err != nil {
					return "", err
				}
			}
			if _, err := relCall(ctx, "Echo", in); err != nil {
				return "", err
			}
			return "twodone:" + in, nil
		}),
	}
	cases := []struct{ id, name, in, want string }{
		{"inst-echo-wait", "EchoWait", "i1", "done:i1"},
		{"inst-upper", "UpperOnly", "hi", "upper:HI"},
		{"inst-wait", "WaitEvent", "evt", "acked:evt"},
		{"inst-sum", "ComputeSum", "2,3", "sum=5"},
		{"inst-2timers", "TwoTimers", "z", "twodone:z"},
	}
	rt1 := h.Runtime(h.Registry(defs...))
	for _, c := range cases {
		h.Start(c.name, c.id, durable.Raw(c.in))
	}
	h.AwaitEvent("inst-echo-wait", "TimerCreated")
	h.AwaitEvent("inst-upper", "ActivityScheduled")
	h.AwaitEvent("inst-wait", "ExternalSubscribed")
	h.AwaitEvent("inst-sum", "ActivityScheduled")
	h.AwaitEvent("inst-2timers", "TimerCreated")
	relShutdown(h, rt1)
	h.Runtime(h.Registry(defs...))
	if err := h.Client.RaiseEvent(h.Ctx(), "inst-wait", "Go", durable.Raw("ok")); err != nil {
		h.Fatalf("raise: %v", err)
	}
	for _, c := range cases {
		if out := h.Completed(c.id); out != c.want {
			h.Errorf("%s: output %q; want %q", c.id, out, c.want)
		}
	}
}

// The original's activity may finish before the crash; here the first
// runtime's activity blocks until the runtime shuts down, so the crash
// always falls between the activity's start and its completion's enqueue.
func activityReliabilityAfterCrashBeforeCompletionEnqueue(h *H) {
	orch := durable.OrchestrationFunc("ActivityReliabilityTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		r, err := relCall(ctx, "TestActivity", in)
		if err != nil {
			return "", err
		}
		return "Activity result: " + r, nil
	})
	started := make(chan struct{}, 1)
	rt1 := h.Runtime(h.Registry(orch, durable.ActivityFunc("TestActivity", func(ctx context.Context, in string) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})))
	const id = "inst-activity-reliability"
	h.Start("ActivityReliabilityTest", id, durable.Raw("test-data"))
	relAwait(h, "the activity to start", started)
	if hist := h.History(id); !hasEvent(hist, "ActivityScheduled") || hasEvent(hist, "ActivityCompleted") {
		h.Fatalf("before the crash: %v", EventTypes(hist))
	}
	relShutdown(h, rt1)
	h.Runtime(h.Registry(orch, durable.ActivityFunc("TestActivity", func(ctx context.Context, in string) (string, error) {
		return "Processed: " + in, nil
	})))
	if out := h.Completed(id); out != "Activity result: Processed: test-data" {
		h.Errorf("output %q", out)
	}
	hist := h.History(id)
	if Count(hist, "ActivityScheduled") != 1 || Count(hist, "ActivityCompleted") != 1 {
		h.Errorf("history %v; want one schedule and one completion", EventTypes(hist))
	}
}

func multipleActivitiesReliabilityAfterCrash(h *H) {
	orch := durable.OrchestrationFunc("MultiActivityTest", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		var fs []durable.Future[durable.Raw]
		for _, t := range []string{"task1", "task2", "task3"} {
			fs = append(fs, durable.CallActivity[durable.Raw](ctx, "TestActivity", durable.Raw(t)))
		}
		outs, err := durable.AwaitAll(ctx, fs...)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("All activities completed: %v", outs), nil
	})
	var started atomic.Int32
	rt1 := h.Runtime(h.Registry(orch, durable.ActivityFunc("TestActivity", func(ctx context.Context, in string) (string, error) {
		started.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	})))
	const id = "inst-multi-activity-reliability"
	h.Start("MultiActivityTest", id, durable.Raw(""))
	h.WaitFor("3 activities scheduled and one running", func() bool {
		return Count(h.history(id), "ActivityScheduled") == 3 && started.Load() > 0
	})
	relShutdown(h, rt1)
	if n := Count(h.History(id), "ActivityCompleted"); n != 0 {
		h.Fatalf("%d activities completed before the crash", n)
	}
	h.Runtime(h.Registry(orch, durable.ActivityFunc("TestActivity", func(ctx context.Context, in string) (string, error) {
		return "Processed: " + in, nil
	})))
	if out := h.Completed(id); out != "All activities completed: [Processed: task1 Processed: task2 Processed: task3]" {
		h.Errorf("output %q", out)
	}
	if n := Count(h.History(id), "ActivityCompleted"); n != 3 {
		h.Errorf("%d ActivityCompleted; want 3", n)
	}
}

// The original's ack commits and then reports a permanent error; the
// runtime abandons (harmlessly) and the orchestration completes. A second
// instance's ack fails before committing: the abandon makes the activity
// run again well before its 30 s lock would expire.
func workerAbandonOnAckFailureEnablesRetry(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("AckFailOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return relCall(ctx, "CountingActivity", "{}")
		}),
		durable.ActivityFunc("CountingActivity", func(ctx context.Context, in string) (string, error) {
			runs.Add(1)
			return "done", nil
		}),
	), func(o *durable.Options) {
		o.WorkerLockTimeout = 30 * time.Second
		o.WorkerLockRenewalBuffer = 5 * time.Second
	})

	fp.Inject(Fault{Op: provider.OpAckWorkItem, Mode: LoseResponse, Permanent: true, Times: 1})
	h.Start("AckFailOrch", "ack-fail-test", durable.Raw(""))
	if out := h.Completed("ack-fail-test"); out != "done" {
		h.Errorf("output %q", out)
	}
	if runs.Load() < 1 {
		h.Errorf("activity never ran")
	}

	runs.Store(0)
	fp.Inject(Fault{Op: provider.OpAckWorkItem, Mode: FailPermanent, Times: 1})
	h.Start("AckFailOrch", "ack-fail-retry", durable.Raw(""))
	if out := h.Completed("ack-fail-retry"); out != "done" {
		h.Errorf("output %q", out)
	}
	if n := runs.Load(); n != 2 {
		h.Errorf("activity ran %d times; want 2 (the failed ack, then the retry)", n)
	}
	if n := Count(h.History("ack-fail-retry"), "ActivityCompleted"); n != 1 {
		h.Errorf("%d ActivityCompleted; want 1", n)
	}
}

// lockOrch schedules activity name with input "data".
func lockOrch(name string) durable.Definition {
	return durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return relCall(ctx, name, "data")
	})
}

// relObserveLocks starts a runtime with opts on a fault wrapper and returns
// the lock timeouts it fetches orchestration and work items with.
func relObserveLocks(h *H, opts func(*durable.Options)) (orch, work time.Duration) {
	h.Helper()
	fp := relFaults(h)
	rt := h.Runtime(h.Registry(), opts)
	h.WaitFor("both dispatchers to fetch", func() bool {
		return fp.Calls(provider.OpFetchOrchestrationItem) > 0 && fp.Calls(provider.OpFetchWorkItem) > 0
	})
	relShutdown(h, rt)
	return fp.LockTimeout(provider.OpFetchOrchestrationItem), fp.LockTimeout(provider.OpFetchWorkItem)
}

// relBufferBound reports whether NewRuntime accepts the lock timeout set by
// set: buffers are unexported, so a default buffer shows through the
// validation that it is below its lock timeout.
func relAccepts(h *H, set func(*durable.Options)) bool {
	_, err := durable.NewRuntime(h.P, h.Registry(), Defaults, set)
	return err == nil
}

// Options defaults are unexported: they show in the lock timeouts a runtime
// fetches with, and the renewal buffer in what NewRuntime accepts (a
// buffer must be below its lock timeout).
func defaultLockTimeouts(h *H) {
	orch, work := relObserveLocks(h, func(o *durable.Options) {
		o.OrchestratorLockTimeout, o.WorkerLockTimeout = 0, 0
		o.OrchestratorLockRenewalBuffer, o.WorkerLockRenewalBuffer = 0, 0
	})
	if orch != 5*time.Second || work != durable.DefaultWorkerLockTimeout {
		h.Errorf("fetch lock timeouts %v / %v; want 5s / %v", orch, work, durable.DefaultWorkerLockTimeout)
	}
	if relAccepts(h, func(o *durable.Options) { o.WorkerLockTimeout = 5 * time.Second }) ||
		!relAccepts(h, func(o *durable.Options) { o.WorkerLockTimeout = 5*time.Second + time.Millisecond }) {
		h.Errorf("default worker lock renewal buffer is not 5s")
	}
}

func customLockTimeoutConfiguration(h *H) {
	orch, work := relObserveLocks(h, func(o *durable.Options) {
		o.OrchestratorLockTimeout, o.WorkerLockTimeout = 10*time.Second, 120*time.Second
		o.OrchestratorLockRenewalBuffer, o.WorkerLockRenewalBuffer = 0, 0
	})
	if orch != h.Lease(10*time.Second) || work != h.Lease(120*time.Second) {
		h.Errorf("fetch lock timeouts %v / %v; want 10s / 120s", orch, work)
	}
	// The original's short options (1 s / 5 s) keep the default buffers,
	// which duradyn rejects (a buffer must be below its lock timeout).
	if relAccepts(h, func(o *durable.Options) { o.OrchestratorLockTimeout, o.WorkerLockTimeout = time.Second, 5*time.Second }) {
		h.Errorf("NewRuntime accepted lock timeouts not above their default renewal buffers")
	}
	h2 := newHarness(h.T, h.f)
	orch, work = relObserveLocks(h2, func(o *durable.Options) {
		o.OrchestratorLockTimeout, o.WorkerLockTimeout = time.Second, 5*time.Second
		o.OrchestratorLockRenewalBuffer, o.WorkerLockRenewalBuffer = 500*time.Millisecond, time.Second
	})
	if orch != h.Lease(time.Second) || work != h.Lease(5*time.Second) {
		h.Errorf("short fetch lock timeouts %v / %v; want 1s / 5s", orch, work)
	}
}

func orchestratorLockRenewalBufferDefaults(h *H) {
	if relAccepts(h, func(o *durable.Options) { o.OrchestratorLockTimeout = 2 * time.Second }) ||
		!relAccepts(h, func(o *durable.Options) { o.OrchestratorLockTimeout = 2*time.Second + time.Millisecond }) {
		h.Errorf("default orchestrator lock renewal buffer is not 2s")
	}
	if !relAccepts(h, func(o *durable.Options) {
		o.OrchestratorLockTimeout = 6 * time.Second
		o.OrchestratorLockRenewalBuffer = 5 * time.Second
	}) {
		h.Errorf("custom orchestrator lock renewal buffer of 5s refused")
	}
}

func orchestrationWithCustomTimeoutCompletes(h *H) {
	h.Runtime(h.Registry(lockOrch("TestActivity"), durable.ActivityFunc("TestActivity", func(ctx context.Context, in string) (string, error) {
		return "processed: " + in, nil
	})), func(o *durable.Options) {
		o.OrchestratorLockTimeout, o.WorkerLockTimeout = 60*time.Second, 60*time.Second
	})
	h.Start("TestOrch", "inst-custom-timeout", durable.Raw(""))
	if out := h.Completed("inst-custom-timeout"); out != "processed: data" {
		h.Errorf("output %q", out)
	}
}

func veryShortLockTimeoutWorks(h *H) {
	h.Runtime(h.Registry(lockOrch("FastActivity"), durable.ActivityFunc("FastActivity", func(ctx context.Context, in string) (string, error) {
		return "processed: " + in, nil
	})), func(o *durable.Options) {
		o.OrchestratorLockTimeout, o.WorkerLockTimeout = time.Second, time.Second
		o.OrchestratorLockRenewalBuffer, o.WorkerLockRenewalBuffer = 500*time.Millisecond, 500*time.Millisecond
	})
	h.Start("TestOrch", "inst-short-timeout", durable.Raw(""))
	if out := h.Completed("inst-short-timeout"); out != "processed: data" {
		h.Errorf("output %q", out)
	}
}

// renewingActivity runs until its own lock was renewed renewals times (the
// originals sleep past the lock timeout instead), then returns prefix+in.
func renewingActivity(fp *FaultProvider, name, prefix string, renewals int, runs *atomic.Int32) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, in string) (string, error) {
		runs.Add(1)
		info, _ := durable.ActivityInfoFrom(ctx)
		for fp.WorkRenewals(info.Instance, info.ID) < renewals {
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-time.After(10 * time.Millisecond):
			}
		}
		return prefix + in, nil
	})
}

// renewalCase runs TestOrch over an activity that outlives its worker lock
// thanks to renewals, and checks it ran once and acked.
func renewalCase(h *H, id, name, prefix string, renewals int, opts func(*durable.Options)) {
	h.Helper()
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(lockOrch(name), renewingActivity(fp, name, prefix, renewals, &runs)), opts)
	h.Start("TestOrch", id, durable.Raw(""))
	if out := h.Completed(id); out != prefix+"data" {
		h.Errorf("output %q", out)
	}
	if n := runs.Load(); n != 1 {
		h.Errorf("activity ran %d times; want 1 (its lock never lapsed)", n)
	}
	for _, err := range fp.Results(provider.OpAckWorkItem) {
		if err != nil {
			h.Errorf("activity ack: %v", err)
		}
	}
}

// Lock 2 s renewed every second; the activity runs through 3 renewals.
func longRunningActivityWithLockRenewal(h *H) {
	renewalCase(h, "inst-long-activity-renewal", "LongActivity", "completed: ", 3, func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
	})
}

func shortActivityNoRenewalNeeded(h *H) {
	renewalCase(h, "inst-quick-activity", "QuickActivity", "quick: ", 0, func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 3*time.Second, time.Second
	})
}

// A lock under 15 s is renewed at half its length (the buffer is ignored).
func lockRenewalShortTimeout(h *H) {
	renewalCase(h, "inst-short-timeout-renewal", "MediumActivity", "medium: ", 3, func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
	})
}

// The buffer counts only for locks of 15 s or more: a 16 s lock with a
// 15 s buffer renews every second, so two renewals come quickly.
func customRenewalBuffer(h *H) {
	renewalCase(h, "inst-custom-buffer", "LongActivity", "done: ", 2, func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 16*time.Second, 15*time.Second
	})
}

func concurrentActivitiesWithRenewal(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("TestOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			var fs []durable.Future[durable.Raw]
			for _, t := range []string{"task1", "task2", "task3"} {
				fs = append(fs, durable.CallActivity[durable.Raw](ctx, "LongActivity", durable.Raw(t)))
			}
			outs, err := durable.AwaitAll(ctx, fs...)
			return fmt.Sprintf("%s, %s, %s", outs[0], outs[1], outs[2]), err
		}),
		renewingActivity(fp, "LongActivity", "completed-", 3, &runs),
	), func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
		o.WorkerConcurrency = 3
	})
	h.Start("TestOrch", "inst-concurrent-renewal", durable.Raw(""))
	out := h.Completed("inst-concurrent-renewal")
	for _, want := range []string{"completed-task1", "completed-task2", "completed-task3"} {
		if !strings.Contains(out, want) {
			h.Errorf("output %q lacks %s", out, want)
		}
	}
	if n := runs.Load(); n != 3 {
		h.Errorf("activities ran %d times; want 3", n)
	}
}

// duroxide delays the turn with a test hook; here the fault wrapper holds
// the turn's ack (the renewal goroutine runs until the ack returns) until
// the 2 s lock was renewed three times, so the turn outlives its lock.
func orchestrationLockRenewalPreventsExpiration(h *H) {
	fp := relFaults(h)
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("RenewalTestOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := relCall(ctx, "QuickActivity", "{}")
			return "completed: " + r, err
		}),
		durable.ActivityFunc("QuickActivity", func(context.Context, string) (string, error) { return "done", nil }),
	), relShortOrchLocks, relSingleSlot)
	const id = "lock-renewal-e2e"
	hold := fp.HoldAck(id, HoldOptions{ReleaseAfterRenewals: 3})
	h.Cleanup(hold.Release)
	h.Start("RenewalTestOrch", id, durable.Raw(""))
	if out := h.Completed(id); out != "completed: done" {
		h.Errorf("output %q", out)
	}
	relAwait(h, "the held ack", hold.Done())
	if err := hold.Err(); err != nil {
		h.Errorf("ack after a turn longer than its lock: %v; want success (renewed)", err)
	}
	if n := hold.Renewals(); n < 3 {
		h.Errorf("%d renewals during the hold; want 3", n)
	}
	if n := Count(h.History(id), "ActivityScheduled"); n != 1 {
		h.Errorf("%d ActivityScheduled; want 1", n)
	}
}

// Shared orchestration for the fault cases: one activity, then a result.
func faultDefs(runs *atomic.Int32) []durable.Definition {
	return []durable.Definition{
		durable.OrchestrationFunc("FaultOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := relCall(ctx, "FaultActivity", in)
			return "result:" + r, err
		}),
		durable.ActivityFunc("FaultActivity", func(ctx context.Context, in string) (string, error) {
			runs.Add(1)
			return in, nil
		}),
	}
}

// The provider commits the first turn but its response is lost: the
// runtime retries the ack, which fails (the lock is gone), and drops the
// turn. Nothing is committed twice.
func faultOrchestrationAckLostAfterCommit(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(faultDefs(&runs)...))
	fp.Inject(Fault{Op: provider.OpAckOrchestrationItem, Mode: LoseResponse, Times: 1})
	h.Start("FaultOrch", "fault-ack-lost", durable.Raw("x"))
	if out := h.Completed("fault-ack-lost"); out != "result:x" {
		h.Errorf("output %q", out)
	}
	hist := h.History("fault-ack-lost")
	if Count(hist, "OrchestrationStarted") != 1 || Count(hist, "ActivityScheduled") != 1 || runs.Load() != 1 {
		h.Errorf("history %v, %d runs; want each step once", EventTypes(hist), runs.Load())
	}
}

// Six retryable failures exhaust the runtime's ack retries (1 + 5); the
// turn is abandoned and runs again.
func faultOrchestrationAckRetryableFailures(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(faultDefs(&runs)...))
	fp.Inject(Fault{Op: provider.OpAckOrchestrationItem, Mode: FailRetryable, Times: 6})
	h.Start("FaultOrch", "fault-ack-retry", durable.Raw("x"))
	if out := h.Completed("fault-ack-retry"); out != "result:x" {
		h.Errorf("output %q", out)
	}
	if n := fp.Injected(provider.OpAckOrchestrationItem); n != 6 {
		h.Errorf("%d injected ack failures; want 6", n)
	}
	if fp.Calls(provider.OpAbandonOrchestrationItem) < 1 {
		h.Errorf("turn not abandoned after the retries ran out")
	}
	if Count(h.History("fault-ack-retry"), "ActivityScheduled") != 1 || runs.Load() != 1 {
		h.Errorf("activity scheduled or run more than once")
	}
}

// A permanent ack failure fails the orchestration with infrastructure
// details, acked on the same lock.
func faultOrchestrationAckPermanentFailure(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(faultDefs(&runs)...))
	fp.Inject(Fault{Op: provider.OpAckOrchestrationItem, Mode: FailPermanent, Times: 1, Match: func(c Call) bool {
		return !hasEvent(c.Commit.HistoryDelta, "OrchestrationFailed")
	}})
	h.Start("FaultOrch", "fault-ack-permanent", durable.Raw("x"))
	d, ok := h.Failed("fault-ack-permanent").(provider.InfrastructureDetails)
	if !ok || d.Operation != provider.OpAckOrchestrationItem {
		h.Errorf("failure %#v; want infrastructure details of %s", d, provider.OpAckOrchestrationItem)
	}
}

func faultFetchFailuresRetried(h *H) {
	fp := relFaults(h)
	fp.Inject(Fault{Op: provider.OpFetchOrchestrationItem, Mode: FailRetryable, Times: 3})
	fp.Inject(Fault{Op: provider.OpFetchWorkItem, Mode: FailPermanent, Times: 3})
	var runs atomic.Int32
	h.Runtime(h.Registry(faultDefs(&runs)...))
	h.Start("FaultOrch", "fault-fetch", durable.Raw("x"))
	if out := h.Completed("fault-fetch"); out != "result:x" {
		h.Errorf("output %q", out)
	}
	if fp.Injected(provider.OpFetchOrchestrationItem) != 3 || fp.Injected(provider.OpFetchWorkItem) != 3 {
		h.Errorf("injected fetch failures %d / %d; want 3 / 3",
			fp.Injected(provider.OpFetchOrchestrationItem), fp.Injected(provider.OpFetchWorkItem))
	}
}

// The first delivery's lock is lost to another node during the run: its
// renewal fails, the activity is cancelled, its result dropped, and the
// redelivery completes the orchestration.
func faultActivityLockStolenCancelsAndRetries(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	cancelled := make(chan error, 1)
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("FaultOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := relCall(ctx, "FaultActivity", in)
			return "result:" + r, err
		}),
		durable.ActivityFunc("FaultActivity", func(ctx context.Context, in string) (string, error) {
			if runs.Add(1) == 1 {
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return "first", nil
			}
			return in, nil
		}),
	), func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
		o.ActivityCancellationGracePeriod = 5 * time.Second
	})
	fp.Inject(Fault{Op: provider.OpRenewWorkItemLock, Mode: StealLock, Times: 1})
	h.Start("FaultOrch", "fault-lock-stolen", durable.Raw("x"))
	if out := h.Completed("fault-lock-stolen"); out != "result:x" {
		h.Errorf("output %q; want the redelivery's result", out)
	}
	// The redelivery may complete the orchestration before the first run's
	// goroutine has seen its cancellation: the steal and the renewal's
	// failure are ordered, the two runs are not.
	select {
	case cause := <-cancelled:
		if !errors.Is(cause, durable.ErrActivityCancelled) {
			h.Errorf("first run cancelled with %v; want ErrActivityCancelled", cause)
		}
	case <-h.Ctx().Done():
		h.Errorf("first run was not cancelled")
	}
	if n := runs.Load(); n != 2 {
		h.Errorf("activity ran %d times; want 2", n)
	}
}

// Crash recovery (b): a turn held past its lock while a second runtime
// takes the instance over; the first ack fails with ErrInvalidLockToken
// and the history holds one copy of each event.
func faultTurnHeldPastLockLosesAck(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	reg := h.Registry(faultDefs(&runs)...)
	h.Runtime(reg, relShortOrchLocks, relSingleSlot)
	const id = "fault-held-turn"
	hold := relHeldTakeover(h, fp, id, reg, func() { h.Start("FaultOrch", id, durable.Raw("x")) })
	if out := h.Completed(id); out != "result:x" {
		h.Errorf("output %q", out)
	}
	relLostAck(h, hold)
	hist := h.History(id)
	for _, typ := range []string{"OrchestrationStarted", "ActivityScheduled", "ActivityCompleted", "OrchestrationCompleted"} {
		if n := Count(hist, typ); n != 1 {
			h.Errorf("%d %s; want 1 (history %v)", n, typ, EventTypes(hist))
		}
	}
	if n := runs.Load(); n != 1 {
		h.Errorf("activity ran %d times; want 1", n)
	}
}

// A renewal that fails transiently, its lock still held, proves nothing:
// the runtime retries it and keeps the lease, and the activity runs once
// and completes. (duroxide cancels the activity and lets it run again; the
// item is not lost there either.)
func faultActivityRenewalTransientFailureNotLost(h *H) {
	fp := relFaults(h)
	var runs atomic.Int32
	h.Runtime(h.Registry(
		durable.OrchestrationFunc("FaultOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := relCall(ctx, "FaultActivity", in)
			return "result:" + r, err
		}),
		// Returns once a renewal after the failed one landed.
		renewingActivity(fp, "FaultActivity", "", 1, &runs),
	), func(o *durable.Options) {
		o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
	})
	fp.Inject(Fault{Op: provider.OpRenewWorkItemLock, Mode: FailRetryable, Times: 1})
	h.Start("FaultOrch", "fault-renew-transient", durable.Raw("x"))
	if out := h.Completed("fault-renew-transient"); out != "result:x" {
		h.Errorf("output %q", out)
	}
	if n := fp.Injected(provider.OpRenewWorkItemLock); n != 1 {
		h.Errorf("%d renewals failed; want the one injected", n)
	}
	if n := runs.Load(); n != 1 {
		h.Errorf("activity ran %d times; want 1: a transient renewal failure is retried, and the lease kept", n)
	}
}
