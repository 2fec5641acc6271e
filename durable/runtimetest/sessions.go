package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// Sessions: activities pinned to a session run on the worker that owns it
// (session_e2e_tests.rs, scenarios/sessions.rs).
var sessionTests = []Test{
	{"test_session_activity_basic_e2e", testSessionActivityBasicE2E},
	{"test_session_id_visible_in_activity_context", testSessionIDVisibleInActivityContext},
	{"test_mixed_session_and_regular_activities", testMixedSessionAndRegularActivities},
	{"test_multiple_sessions_in_orchestration", testMultipleSessionsInOrchestration},
	{"test_session_activity_typed", testSessionActivityTyped},
	{"test_session_with_worker_node_id_completes", testSessionWithWorkerNodeIDCompletes},
	{"test_session_worker_node_id_multiple_sessions_parallel", testSessionWorkerNodeIDMultipleSessionsParallel},
	{"test_ephemeral_session_still_works", testEphemeralSessionStillWorks},
	{"test_session_with_worker_node_id_activity_context_has_session_id", testSessionWithWorkerNodeIDActivityContextHasSessionID},
	{"test_two_slots_serve_same_session_concurrently", testTwoSlotsServeSameSessionConcurrently},
	{"test_ephemeral_same_session_serialized", testEphemeralSameSessionSerialized},
	{"test_session_fan_out_fan_in", testSessionFanOutFanIn},
	{"test_session_fan_out_mixed_with_regular", testSessionFanOutMixedWithRegular},
	{"test_fan_out_multiple_per_session_mixed", testFanOutMultiplePerSessionMixed},
	{"test_session_survives_continue_as_new", testSessionSurvivesContinueAsNew},
	{"test_session_continue_as_new_versioned_upgrade", testSessionContinueAsNewVersionedUpgrade},
	{"test_session_idle_timeout_must_exceed_worker_renewal_interval", testSessionIdleTimeoutMustExceedWorkerRenewalInterval},
	{"test_max_sessions_per_runtime_enforced", testMaxSessionsPerRuntimeEnforced},
	{"test_same_session_shares_one_slot", testSameSessionSharesOneSlot},
	{"test_session_cap_blocks_then_unblocks", testSessionCapBlocksThenUnblocks},
	{"test_multi_worker_complex_orchestration", testMultiWorkerComplexOrchestration},
	{"test_multi_worker_heterogeneous_config", testMultiWorkerHeterogeneousConfig},
	// scenarios/sessions.rs
	{"durable_copilot_sdk_scaled_out_multi_conversation", durableCopilotSDKScaledOutMultiConversation},
}

// sessCall calls activity name on session with a plain-string input.
func sessCall(ctx *durable.OrchestrationContext, name, in, session string) (string, error) {
	return relCall(ctx, name, in, durable.OnSession(session))
}

// sessFuture schedules activity name, on session unless it is "".
func sessFuture(ctx *durable.OrchestrationContext, name, in, session string) durable.Future[durable.Raw] {
	var opts []durable.Option
	if session != "" {
		opts = append(opts, durable.OnSession(session))
	}
	return durable.CallActivity[durable.Raw](ctx, name, durable.Raw(in), opts...)
}

// sessJoin awaits fs and joins their results with sep.
func sessJoin(ctx *durable.OrchestrationContext, sep string, fs ...durable.Future[durable.Raw]) (string, error) {
	outs, err := durable.AwaitAll(ctx, fs...)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = string(o)
	}
	return strings.Join(parts, sep), nil
}

// sessPrefix returns an activity returning prefix+input.
func sessPrefix(name, prefix string) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, in string) (string, error) { return prefix + in, nil })
}

// sessSeq is an orchestration calling name on each (input, session) pair in
// turn and joining the results with "|".
func sessSeq(orch string, steps ...[3]string) durable.Definition {
	return durable.OrchestrationFunc(orch, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		var out []string
		for _, s := range steps {
			r, err := durable.CallActivity[durable.Raw](ctx, s[0], durable.Raw(s[1]), sessOpts(s[2])...).Get(ctx)
			if err != nil {
				return "", err
			}
			out = append(out, string(r))
		}
		return strings.Join(out, "|"), nil
	})
}

func sessOpts(session string) []durable.Option {
	if session == "" {
		return nil
	}
	return []durable.Option{durable.OnSession(session)}
}

// sessRun starts orch as id and checks its output.
func sessRun(h *H, orch, id, want string) {
	h.Helper()
	h.Start(orch, id, durable.Raw(""))
	if out := h.Completed(id); out != want {
		h.Errorf("%s: output %q; want %q", id, out, want)
	}
}

func nodeID(id string) func(*durable.Options) {
	return func(o *durable.Options) { o.WorkerNodeID = id }
}

func workers(n int) func(*durable.Options) {
	return func(o *durable.Options) { o.WorkerConcurrency = n }
}

func testSessionActivityBasicE2E(h *H) {
	h.Serve(sessPrefix("Echo", "echo:"), sessSeq("SessionOrch", [3]string{"Echo", "hello", "my-session-1"}, [3]string{"Echo", "world", "my-session-1"}))
	sessRun(h, "SessionOrch", "test-session-basic", "echo:hello|echo:world")
}

// sessionSeer is an activity recording whether it saw session want.
func sessionSeer(name, want string, seen *atomic.Bool) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, in string) (string, error) {
		if info, ok := durable.ActivityInfoFrom(ctx); ok && info.SessionID != nil && *info.SessionID == want {
			seen.Store(true)
		}
		return "ok", nil
	})
}

func testSessionIDVisibleInActivityContext(h *H) {
	var seen atomic.Bool
	h.Serve(sessionSeer("CheckSession", "ctx-test-session", &seen),
		durable.OrchestrationFunc("CheckSessionOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			_, err := sessCall(ctx, "CheckSession", "input", "ctx-test-session")
			return "done", err
		}))
	sessRun(h, "CheckSessionOrch", "test-ctx-session", "done")
	if !seen.Load() {
		h.Errorf("activity did not see its session id")
	}
}

func testMixedSessionAndRegularActivities(h *H) {
	h.Serve(sessPrefix("SessionTask", "session:"), sessPrefix("RegularTask", "regular:"),
		sessSeq("MixedOrch", [3]string{"RegularTask", "a", ""}, [3]string{"SessionTask", "b", "sess-1"}, [3]string{"RegularTask", "c", ""}))
	sessRun(h, "MixedOrch", "test-mixed", "regular:a|session:b|regular:c")
}

func testMultipleSessionsInOrchestration(h *H) {
	h.Serve(sessPrefix("Task", ""),
		sessSeq("MultiSessionOrch", [3]string{"Task", "a", "session-A"}, [3]string{"Task", "b", "session-B"}, [3]string{"Task", "c", "session-A"}))
	sessRun(h, "MultiSessionOrch", "test-multi-session", "a|b|c")
}

func testSessionActivityTyped(h *H) {
	type doubleInput struct {
		Value int `json:"value"`
	}
	double := durable.NewActivity("Double", func(ctx context.Context, in doubleInput) (int, error) { return in.Value * 2, nil })
	h.Serve(double, durable.OrchestrationFunc("TypedSessionOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		r, err := double.Call(ctx, doubleInput{Value: 21}, durable.OnSession("typed-sess")).Get(ctx)
		return fmt.Sprint(r), err
	}))
	sessRun(h, "TypedSessionOrch", "test-typed-session", "42")
}

func testSessionWithWorkerNodeIDCompletes(h *H) {
	h.Runtime(h.Registry(sessPrefix("Work", "done:"),
		sessSeq("StableOrch", [3]string{"Work", "a", "stable-sess"}, [3]string{"Work", "b", "stable-sess"}, [3]string{"Work", "c", "stable-sess"})),
		workers(4), nodeID("stable-pod-1"))
	sessRun(h, "StableOrch", "test-stable-node", "done:a|done:b|done:c")
}

func testSessionWorkerNodeIDMultipleSessionsParallel(h *H) {
	var count atomic.Int32
	h.Runtime(h.Registry(
		durable.ActivityFunc("Count", func(ctx context.Context, in string) (string, error) {
			count.Add(1)
			return "counted", nil
		}),
		durable.OrchestrationFunc("ParallelSessions", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return sessJoin(ctx, "|", sessFuture(ctx, "Count", "x", "sess-1"), sessFuture(ctx, "Count", "y", "sess-2"), sessFuture(ctx, "Count", "z", "sess-3"))
		})), workers(4), nodeID("multi-sess-pod"))
	sessRun(h, "ParallelSessions", "test-parallel-sess", "counted|counted|counted")
	if n := count.Load(); n < 3 {
		h.Errorf("%d session activities ran; want 3", n)
	}
}

func testEphemeralSessionStillWorks(h *H) {
	h.Runtime(h.Registry(sessPrefix("Echo", ""), sessSeq("EphemeralOrch", [3]string{"Echo", "ephemeral-val", "eph-sess"})),
		workers(1), nodeID(""))
	sessRun(h, "EphemeralOrch", "test-ephemeral", "ephemeral-val")
}

func testSessionWithWorkerNodeIDActivityContextHasSessionID(h *H) {
	var seen atomic.Bool
	h.Runtime(h.Registry(sessionSeer("CheckSess", "my-session", &seen),
		durable.OrchestrationFunc("NodeIdSessionOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			_, err := sessCall(ctx, "CheckSess", "", "my-session")
			return "done", err
		})), workers(2), nodeID("k8s-pod-name"))
	sessRun(h, "NodeIdSessionOrch", "test-node-ctx", "done")
	if !seen.Load() {
		h.Errorf("activity saw no session id my-session (not the worker node id)")
	}
}

// inFlight tracks how many tracked activities run at once.
type inFlight struct {
	cur, peak atomic.Int32
}

func (f *inFlight) enter() int32 {
	n := f.cur.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			return n
		}
	}
}

func (f *inFlight) leave() { f.cur.Add(-1) }

// trackedActivity counts itself in f, then waits: until wait returns true
// (polled), or for hold when wait is nil. hold is a window in which a
// forbidden overlap would show, not a synchronisation.
func trackedActivity(name, prefix string, f *inFlight, wait func() bool, hold time.Duration) durable.Definition {
	return durable.ActivityFunc(name, func(ctx context.Context, in string) (string, error) {
		f.enter()
		defer f.leave()
		if wait == nil {
			select {
			case <-time.After(hold):
			case <-ctx.Done():
			}
		}
		for wait != nil && !wait() {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		return prefix + in, nil
	})
}

func sameSessionPair(orch string) durable.Definition {
	return durable.OrchestrationFunc(orch, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return sessJoin(ctx, "|", sessFuture(ctx, "SlowTask", "a", "same-session"), sessFuture(ctx, "FastTask", "b", "same-session"))
	})
}

// The original sleeps and hopes both overlap; here each activity waits
// until both are in flight, which only happens if two slots serve the
// session at once.
func testTwoSlotsServeSameSessionConcurrently(h *H) {
	var f inFlight
	both := func() bool { return f.peak.Load() >= 2 }
	h.Runtime(h.Registry(trackedActivity("SlowTask", "slow:", &f, both, 0), trackedActivity("FastTask", "fast:", &f, both, 0),
		sameSessionPair("ConcurrentSessionOrch")), workers(2), nodeID("my-node"))
	sessRun(h, "ConcurrentSessionOrch", "test-concurrent-session", "slow:a|fast:b")
	if p := f.peak.Load(); p != 2 {
		h.Errorf("peak concurrency %d; want 2", p)
	}
}

func testEphemeralSameSessionSerialized(h *H) {
	var f inFlight
	h.Runtime(h.Registry(trackedActivity("SlowTask", "slow:", &f, nil, 300*time.Millisecond), trackedActivity("FastTask", "fast:", &f, nil, 100*time.Millisecond),
		sameSessionPair("SerialSessionOrch")), workers(2), nodeID(""))
	sessRun(h, "SerialSessionOrch", "test-serial-session", "slow:a|fast:b")
	if p := f.peak.Load(); p != 1 {
		h.Errorf("peak concurrency %d; want 1 (one slot owns the session)", p)
	}
}

func testSessionFanOutFanIn(h *H) {
	h.Runtime(h.Registry(sessPrefix("Process", "processed:"),
		durable.OrchestrationFunc("FanOutOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			var fs []durable.Future[durable.Raw]
			for i := range 3 {
				fs = append(fs, sessFuture(ctx, "Process", fmt.Sprint(i), fmt.Sprintf("session-%d", i)))
			}
			return sessJoin(ctx, "|", fs...)
		})), workers(4), nodeID("fan-pod"))
	sessRun(h, "FanOutOrch", "test-fan-out", "processed:0|processed:1|processed:2")
}

func testSessionFanOutMixedWithRegular(h *H) {
	h.Serve(sessPrefix("SessionWork", "sess:"), sessPrefix("RegularWork", "reg:"),
		durable.OrchestrationFunc("MixedFanOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return sessJoin(ctx, "|", sessFuture(ctx, "SessionWork", "a", "s1"), sessFuture(ctx, "RegularWork", "b", ""),
				sessFuture(ctx, "SessionWork", "c", "s2"), sessFuture(ctx, "RegularWork", "d", ""))
		}))
	sessRun(h, "MixedFanOrch", "test-mixed-fan", "sess:a|reg:b|sess:c|reg:d")
}

func testFanOutMultiplePerSessionMixed(h *H) {
	h.Runtime(h.Registry(sessPrefix("Tag", "tag:"),
		durable.OrchestrationFunc("MultiMixOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return sessJoin(ctx, "|", sessFuture(ctx, "Tag", "s1-a", "session-1"), sessFuture(ctx, "Tag", "s1-b", "session-1"),
				sessFuture(ctx, "Tag", "s2-a", "session-2"), sessFuture(ctx, "Tag", "s2-b", "session-2"),
				sessFuture(ctx, "Tag", "no-sess-a", ""), sessFuture(ctx, "Tag", "no-sess-b", ""))
		})), workers(4), nodeID("mix-pod"))
	sessRun(h, "MultiMixOrch", "test-multi-mix", "tag:s1-a|tag:s1-b|tag:s2-a|tag:s2-b|tag:no-sess-a|tag:no-sess-b")
}

func singleSlots(o *durable.Options) { o.WorkerConcurrency, o.OrchestrationConcurrency = 1, 1 }

func testSessionSurvivesContinueAsNew(h *H) {
	h.Runtime(h.Registry(sessPrefix("Track", "tracked:"),
		durable.OrchestrationFunc("SessionCAN", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			iteration := 0
			_, _ = fmt.Sscan(in, &iteration)
			r, err := sessCall(ctx, "Track", fmt.Sprintf("iter-%d", iteration), "persistent-session")
			if err != nil {
				return "", err
			}
			if iteration == 0 {
				return "", ctx.ContinueAsNew(durable.Raw("1"))
			}
			return r, nil
		})), singleSlots, nodeID("can-pod"))
	sessRun(h, "SessionCAN", "test-session-can", "tracked:iter-1")
}

func testSessionContinueAsNewVersionedUpgrade(h *H) {
	reg := h.Registry(sessPrefix("Work", "done:"),
		durable.OrchestrationFunc("UpgradeSession", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := sessCall(ctx, "Work", "from-v1", "upgrade-session")
			if err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew(durable.Raw(r), durable.Version("2.0.0"))
		}),
		durable.OrchestrationFunc("UpgradeSession", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			r, err := sessCall(ctx, "Work", "from-v2", "upgrade-session")
			return in + "+" + r, err
		}, durable.Version("2.0.0")))
	reg.SetVersionPolicy("UpgradeSession", durable.Exact("1.0.0"))
	h.Runtime(reg, singleSlots, nodeID("upgrade-pod"))
	sessRun(h, "UpgradeSession", "test-session-can-ver", "done:from-v1+done:from-v2")
}

// duroxide panics at start; NewRuntime returns an error.
func testSessionIdleTimeoutMustExceedWorkerRenewalInterval(h *H) {
	_, err := durable.NewRuntime(h.P, h.Registry(), func(o *durable.Options) {
		o.SessionIdleTimeout = 25 * time.Second
		o.WorkerLockTimeout = 30 * time.Second
		o.WorkerLockRenewalBuffer = 5 * time.Second
	})
	if !errors.Is(err, provider.ErrInvalidInput) || !strings.Contains(err.Error(), "SessionIdleTimeout") {
		h.Errorf("NewRuntime: %v; want an invalid-input error naming SessionIdleTimeout", err)
	}
}

func capOne(o *durable.Options) {
	o.WorkerConcurrency, o.MaxSessionsPerRuntime, o.OrchestrationConcurrency = 2, 1, 1
}

func twoSessions(orch, activity, a, b string) durable.Definition {
	return durable.OrchestrationFunc(orch, func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return sessJoin(ctx, "|", sessFuture(ctx, activity, "a", a), sessFuture(ctx, activity, "b", b))
	})
}

func testMaxSessionsPerRuntimeEnforced(h *H) {
	var f inFlight
	h.Runtime(h.Registry(trackedActivity("SlowSession", "", &f, nil, 200*time.Millisecond), twoSessions("TwoSessions", "SlowSession", "session-A", "session-B")), capOne)
	sessRun(h, "TwoSessions", "test-max-sessions", "a|b")
	if p := f.peak.Load(); p != 1 {
		h.Errorf("peak concurrency %d; want 1 (one session at a time)", p)
	}
}

// Both activities share the one allowed session: the orchestration must
// not deadlock on the cap.
func testSameSessionSharesOneSlot(h *H) {
	var f inFlight
	h.Runtime(h.Registry(trackedActivity("SlowSame", "", &f, nil, 50*time.Millisecond), twoSessions("SameSessionFanOut", "SlowSame", "shared-session", "shared-session")), capOne)
	sessRun(h, "SameSessionFanOut", "test-same-session-slot", "a|b")
}

func testSessionCapBlocksThenUnblocks(h *H) {
	var mu sync.Mutex
	var log []string
	logged := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(log, s)
	}
	release := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	h.Runtime(h.Registry(
		durable.ActivityFunc("Tracked", func(ctx context.Context, in string) (string, error) {
			mu.Lock()
			log = append(log, in+"-started")
			mu.Unlock()
			select {
			case <-release[in]:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			mu.Lock()
			log = append(log, in+"-finished")
			mu.Unlock()
			return "result-" + in, nil
		}),
		durable.OrchestrationFunc("BlockUnblock", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return sessJoin(ctx, "|", sessFuture(ctx, "Tracked", "A", "session-A"), sessFuture(ctx, "Tracked", "B", "session-B"))
		})), capOne)
	const id = "test-block-unblock"
	h.Start("BlockUnblock", id, durable.Raw(""))
	var first, second string
	h.WaitFor("an activity to start", func() bool {
		switch {
		case logged("A-started"):
			first, second = "A", "B"
		case logged("B-started"):
			first, second = "B", "A"
		}
		return first != ""
	})
	// A window in which the second activity would start if the cap leaked.
	time.Sleep(200 * time.Millisecond)
	if logged(second + "-started") {
		h.Fatalf("%s started while %s held the only session", second, first)
	}
	close(release[first])
	h.WaitFor(second+" to start", func() bool { return logged(second + "-started") })
	close(release[second])
	if out := h.Completed(id); out != "result-A|result-B" {
		h.Errorf("output %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Index(log, first+"-finished") > slices.Index(log, second+"-started") {
		h.Errorf("%s started before %s finished: %v", second, first, log)
	}
}

func testMultiWorkerComplexOrchestration(h *H) {
	runs := &sessionRuns{attempts: map[string]map[uint32]int{}}
	defs := func(counter *atomic.Int32) *durable.Registry {
		return h.Registry(multiWorkerOrch(),
			durable.ActivityFunc("SessionWork", func(ctx context.Context, in string) (string, error) {
				counter.Add(1)
				info, _ := durable.ActivityInfoFrom(ctx)
				runs.record(in, info)
				if info.SessionID == nil {
					return "", errors.New("SessionWork without a session id")
				}
				return "session-result:" + in, nil
			}),
			sessPrefix("PlainWork", "plain-result:"))
	}
	var a, b atomic.Int32
	opts := func(node string) func(*durable.Options) {
		return func(o *durable.Options) {
			o.WorkerConcurrency, o.OrchestrationConcurrency, o.MaxSessionsPerRuntime = 2, 2, 4
			o.WorkerNodeID = node
		}
	}
	h.Runtime(defs(&a), opts("node-A"))
	h.Runtime(defs(&b), opts("node-B"))
	h.Start("MultiWorkerOrch", "multi-worker-complex", durable.Raw("0|"))
	out := h.Completed("multi-worker-complex")
	parts := strings.Split(out, ";")
	sessionResults := 0
	for _, p := range parts {
		if strings.Contains(p, "session-result:") {
			sessionResults++
		}
	}
	if len(parts) != 6 || sessionResults != 5 || !strings.Contains(out, "plain-result:d") {
		h.Errorf("output %q; want 6 results, 5 from sessions, plain-result:d", out)
	}
	runs.check(h, a.Load(), b.Load())
}

// multiWorkerOrch runs four activities at once, three of them in two
// sessions, continues as new with their results, then runs one more in
// each session.
func multiWorkerOrch() durable.Definition {
	return durable.OrchestrationFunc("MultiWorkerOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		cycle, prev, _ := strings.Cut(in, "|")
		switch cycle {
		case "0":
			outs, err := durable.AwaitAll(ctx, sessFuture(ctx, "SessionWork", "a", "sess-alpha"), sessFuture(ctx, "SessionWork", "b", "sess-alpha"),
				sessFuture(ctx, "SessionWork", "c", "sess-beta"), sessFuture(ctx, "PlainWork", "d", ""))
			if err != nil {
				return "", err
			}
			parts := make([]string, len(outs))
			for i, o := range outs {
				parts[i] = string(o)
			}
			return "", ctx.ContinueAsNew(durable.Raw("1|" + strings.Join(parts, ";")))
		case "1":
			r1, err := sessCall(ctx, "SessionWork", "e", "sess-alpha")
			if err != nil {
				return "", err
			}
			r2, err := sessCall(ctx, "SessionWork", "f", "sess-beta")
			return prev + ";" + r1 + ";" + r2, err
		}
		return "unexpected cycle " + cycle, nil
	})
}

// sessionRuns records the runs of session activities: each run, for the
// failure message, and the runs of each delivery of each activity.
type sessionRuns struct {
	mu       sync.Mutex
	runs     []string
	attempts map[string]map[uint32]int
}

func (r *sessionRuns) record(in string, info durable.ActivityInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, fmt.Sprintf("%s exec %d id %d attempt %d on %s", in, info.ExecutionID, info.ID, info.Attempt, info.WorkerID))
	activity := fmt.Sprintf("exec %d id %d", info.ExecutionID, info.ID)
	if r.attempts[activity] == nil {
		r.attempts[activity] = map[uint32]int{}
	}
	r.attempts[activity][info.Attempt]++
}

// check fails h unless five session activities ran, each delivery once,
// a and b runs on the two nodes. Under injected faults a lost lock may
// correctly redeliver an activity; each delivery still runs once.
func (r *sessionRuns) check(h *H, a, b int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	twice := false
	for _, byAttempt := range r.attempts {
		for _, n := range byAttempt {
			twice = twice || n > 1
		}
	}
	if n := a + b; len(r.attempts) != 5 || twice || (n != 5 && !h.Redelivers()) {
		h.Errorf("%d runs of %d session activities (A=%d B=%d); want 5 activities, each delivery run once, no redelivery without faults: %v",
			n, len(r.attempts), a, b, r.runs)
	}
}

// The original sleeps 800 ms per activity so the unconstrained worker
// picks some up; here an activity on the constrained worker waits until
// the other worker ran one, which it must, as the constrained worker can
// hold only one session.
func testMultiWorkerHeterogeneousConfig(h *H) {
	var a, b atomic.Int32
	orch := durable.OrchestrationFunc("HeteroOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return sessJoin(ctx, "|", sessFuture(ctx, "Work", "1", "sess-X"), sessFuture(ctx, "Work", "2", "sess-Y"), sessFuture(ctx, "Work", "3", "sess-Z"))
	})
	work := func(mine *atomic.Int32, waitFor *atomic.Int32) durable.Definition {
		return durable.ActivityFunc("Work", func(ctx context.Context, in string) (string, error) {
			mine.Add(1)
			for waitFor != nil && waitFor.Load() == 0 {
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			return "done:" + in, nil
		})
	}
	h.Runtime(h.Registry(orch, work(&a, &b)), func(o *durable.Options) {
		o.WorkerConcurrency, o.OrchestrationConcurrency = 2, 2
		o.WorkerNodeID, o.MaxSessionsPerRuntime = "constrained-node", 1
		o.SessionLockTimeout, o.SessionLockRenewalBuffer, o.SessionIdleTimeout = 5*time.Second, time.Second, 30*time.Second
	})
	h.Runtime(h.Registry(orch, work(&b, nil)), func(o *durable.Options) {
		o.WorkerConcurrency, o.OrchestrationConcurrency = 2, 2
		o.WorkerNodeID, o.MaxSessionsPerRuntime = "unconstrained-node", 10
		o.SessionLockTimeout, o.SessionLockRenewalBuffer, o.SessionIdleTimeout = 30*time.Second, 5*time.Second, 60*time.Second
	})
	h.Start("HeteroOrch", "hetero-test", durable.Raw(""))
	out := h.Completed("hetero-test")
	parts := strings.Split(out, "|")
	for _, p := range parts {
		if !strings.HasPrefix(p, "done:") {
			h.Errorf("result %q", p)
		}
	}
	if len(parts) != 3 || a.Load()+b.Load() != 3 || b.Load() < 1 {
		h.Errorf("output %q, A=%d B=%d; want 3 results, at least one on B", out, a.Load(), b.Load())
	}
}

// copilotSessions is one worker's in-memory conversation state, the
// non-durable state sessions keep on one worker.
type copilotSessions struct {
	mu       sync.Mutex
	messages map[string][]string
	creates  int
}

type copilotTurn struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
	Seconds int    `json:"seconds,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// copilotFleet is the state the scaled-out copilot test shares between its
// workers' activities and its final checks: which worker ran each session,
// and each worker's conversations.
type copilotFleet struct {
	amu        sync.Mutex
	assignment map[string]string
	mgrs       map[string]*copilotSessions
}

func durableCopilotSDKScaledOutMultiConversation(h *H) {
	f := &copilotFleet{
		assignment: map[string]string{},
		mgrs:       map[string]*copilotSessions{"worker-A": {messages: map[string][]string{}}, "worker-B": {messages: map[string][]string{}}},
	}
	orch := copilotTurnOrchestration()
	for _, w := range []struct{ worker, node string }{{"worker-A", "pod-worker-a"}, {"worker-B", "pod-worker-b"}} {
		h.Runtime(h.Registry(orch, f.agentTurn(w.worker)), func(o *durable.Options) {
			o.WorkerConcurrency, o.OrchestrationConcurrency, o.MaxSessionsPerRuntime = 2, 2, 4
			o.WorkerNodeID = w.node
		})
	}
	convs := []struct{ id, prompt string }{
		{"conv-1", "Hello, what is Rust?"},
		{"conv-2", "Explain async/await"},
		{"conv-3", "Deploy my app and check back in 30s"},
		{"conv-4", "Run the test suite and check back later"},
	}
	for _, c := range convs {
		h.Start("durable-turn", c.id, durable.Raw(fmt.Sprintf("session-%s|%s|0|You are a helpful coding assistant.", c.id, c.prompt)))
	}
	results := map[string]string{}
	for _, c := range convs {
		results[c.id] = h.Completed(c.id)
	}
	checkCopilotResults(h, results)
	f.checkSessionsPinned(h)
}

// copilotTurnOrchestration is the "durable-turn" orchestration: one agent
// turn in the conversation's session, then either its reply or a durable
// sleep and a continue-as-new into the next turn. It captures no test state,
// so both workers register the same definition.
func copilotTurnOrchestration() durable.Definition {
	return durable.OrchestrationFunc("durable-turn", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		parts := strings.SplitN(in, "|", 4)
		session := parts[0]
		iteration := 0
		_, _ = fmt.Sscan(parts[2], &iteration)
		res, err := sessCall(ctx, "runAgentTurn", in, session)
		if err != nil {
			return "", err
		}
		var t copilotTurn
		if err := json.Unmarshal([]byte(res), &t); err != nil {
			return "", fmt.Errorf("parse turn result: %w", err)
		}
		switch t.Type {
		case "completed":
			return t.Content, nil
		case "wait":
			if err := ctx.Sleep(time.Duration(t.Seconds) * 100 * time.Millisecond); err != nil {
				return "", err
			}
			next := fmt.Sprintf("%s|%s|%d|%s", session, "The wait is complete. Continue with your task.", iteration+1, parts[3])
			return "", ctx.ContinueAsNew(durable.Raw(next))
		}
		return "", errors.New(t.Message)
	})
}

// agentTurn is worker's "runAgentTurn" activity: it records which worker ran
// the session and appends the turn to that worker's in-memory conversation,
// the non-durable state a session must keep on one worker.
func (f *copilotFleet) agentTurn(worker string) durable.Definition {
	mgr := f.mgrs[worker]
	return durable.ActivityFunc("runAgentTurn", func(ctx context.Context, in string) (string, error) {
		parts := strings.SplitN(in, "|", 4)
		session, prompt := parts[0], parts[1]
		iteration := 0
		_, _ = fmt.Sscan(parts[2], &iteration)
		if info, _ := durable.ActivityInfoFrom(ctx); info.SessionID == nil || *info.SessionID != session {
			return "", fmt.Errorf("activity for %s ran without its session id", session)
		}
		f.amu.Lock()
		f.assignment[session] = worker
		f.amu.Unlock()
		mgr.mu.Lock()
		msgs, ok := mgr.messages[session]
		if !ok {
			mgr.creates++
		}
		msgs = append(msgs, "user:"+prompt)
		resp := fmt.Sprintf("[%s] Reply to '%s' (turn %d, history=%d)", worker, prompt, iteration, len(msgs))
		mgr.messages[session] = append(msgs, "assistant:"+resp)
		mgr.mu.Unlock()
		t := copilotTurn{Type: "completed", Content: resp}
		if iteration == 0 && strings.Contains(prompt, "check back") {
			t = copilotTurn{Type: "wait", Seconds: 1, Reason: "Checking deployment status", Content: resp}
		}
		b, err := json.Marshal(t)
		return string(b), err
	})
}

// checkCopilotResults checks each conversation's output: the plain ones end
// on their first turn, the "check back" ones on the turn after the wait.
func checkCopilotResults(h *H, results map[string]string) {
	for _, id := range []string{"conv-1", "conv-2"} {
		if out := results[id]; !strings.Contains(out, "Reply to") || !strings.Contains(out, "turn 0") {
			h.Errorf("%s: output %q; want a turn 0 reply", id, out)
		}
	}
	for _, id := range []string{"conv-3", "conv-4"} {
		if out := results[id]; !strings.Contains(out, "turn 1") || !strings.Contains(out, "The wait is complete") {
			h.Errorf("%s: output %q; want the turn 1 continuation", id, out)
		}
	}
}

// checkSessionsPinned checks the point of the test: each session was
// created on one worker only, and the two-turn conversations kept both
// turns' messages on that worker.
func (f *copilotFleet) checkSessionsPinned(h *H) {
	f.amu.Lock()
	defer f.amu.Unlock()
	total := 0
	for w, m := range f.mgrs {
		m.mu.Lock()
		if m.creates != len(m.messages) {
			h.Errorf("%s created %d sessions for %d conversations: a session moved", w, m.creates, len(m.messages))
		}
		total += len(m.messages)
		m.mu.Unlock()
	}
	if total != 4 {
		h.Errorf("%d sessions across the workers; want 4 (each on one worker)", total)
	}
	for _, id := range []string{"conv-3", "conv-4"} {
		sid := "session-" + id
		m := f.mgrs[f.assignment[sid]]
		m.mu.Lock()
		if n := len(m.messages[sid]); n < 4 {
			h.Errorf("%s has %d messages on %s; want 4 (two turns on one worker)", sid, n, f.assignment[sid])
		}
		m.mu.Unlock()
	}
}
