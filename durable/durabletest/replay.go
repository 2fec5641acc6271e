package durabletest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/internal/replay"
	"github.com/duradyn/duradyn/provider"
)

// replayYieldTimeout bounds how long replayed orchestration code may run
// without awaiting.
const replayYieldTimeout = 30 * time.Second

// ReplayError reports an execution whose recorded history today's code does
// not reproduce. It wraps [durable.ErrNondeterminism].
type ReplayError struct {
	// Instance and ExecutionID name the execution replayed.
	Instance    string
	ExecutionID uint64
	// Message describes the mismatch; for mismatches the replay engine
	// finds it is the engine's message ("nondeterministic: schedule
	// mismatch: ...").
	Message string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("replay of instance %s execution %d: %s", e.Instance, e.ExecutionID, e.Message)
}

// Unwrap returns [durable.ErrNondeterminism].
func (e *ReplayError) Unwrap() error { return durable.ErrNondeterminism }

// ReadHistory reads duroxide JSON lines, one [provider.Event] per line, as
// the CLI's "history --json" prints them. Blank lines and lines starting
// with "#" are skipped.
func ReadHistory(r io.Reader) ([]provider.Event, error) {
	var out []provider.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var ev provider.Event
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return nil, fmt.Errorf("durabletest: history line %d: %w", line, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("durabletest: reading history: %w", err)
	}
	return out, nil
}

// WriteHistory writes events as duroxide JSON lines, the format
// [ReadHistory] reads.
func WriteHistory(w io.Writer, events []provider.Event) error {
	var buf bytes.Buffer
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("durabletest: encoding event %d: %w", ev.EventID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ReplayHistory reads duroxide JSON lines from r (see [ReadHistory]) and
// verifies them with [Replay]. A failure is reported with t.Errorf and
// returned.
func ReplayHistory(t testing.TB, reg *durable.Registry, r io.Reader) error {
	t.Helper()
	events, err := ReadHistory(r)
	if err == nil {
		err = Replay(reg, events)
	}
	if err != nil {
		t.Errorf("durabletest: %v", err)
	}
	return err
}

// ReplayJSON is [ReplayHistory] without a testing.TB: it reads duroxide JSON
// lines from r and verifies them with [Replay].
func ReplayJSON(reg *durable.Registry, r io.Reader) error {
	events, err := ReadHistory(r)
	if err != nil {
		return err
	}
	return Replay(reg, events)
}

// Replay verifies recorded history against the orchestrations in reg: it
// replays each execution in events (grouped by instance and execution id,
// in the order they first appear) in verification mode.
//
// The whole execution is handed to the replay engine as persisted history,
// except its terminal event and the cancellations the terminal turn wrote
// (reason "orchestration_terminal..."), which are the stop marker and what
// the replay must reproduce. The execution passes when:
//
//   - the engine finds no nondeterminism: every recorded schedule matches
//     the action the code emits at that point (name, input, tag, session,
//     ...), every completion has its schedule, and every recorded
//     cancellation is still made;
//   - the code emits every recorded schedule before it returns (the engine
//     stops reading history once the code returns, so this is checked by a
//     second replay in which the returned code is held open);
//   - a terminal execution ends with the same terminal event (same outcome
//     and output, failure or continue-as-new input) and the same terminal
//     cancellations; a running one is still running;
//   - the code cancels nothing that history did not cancel.
//
// Recorded failures that did not come from the code (poison,
// infrastructure, a completion that matched no schedule) cannot be
// reproduced by a replay; for them only the schedules are checked. KV
// state is rebuilt from the KV events of the instance's earlier executions
// in events and of the execution itself.
//
// A mismatch is a *[ReplayError], which wraps [durable.ErrNondeterminism].
// An orchestration reg does not hold is an error wrapping neither.
func Replay(reg *durable.Registry, events []provider.Event) error {
	if reg == nil {
		return errors.New("durabletest: Replay needs a registry")
	}
	type key struct {
		instance string
		exec     uint64
	}
	var order []key
	groups := map[key][]provider.Event{}
	for _, ev := range events {
		k := key{ev.InstanceID, ev.ExecutionID}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ev)
	}
	kv := map[string]map[string]provider.KVEntry{}
	var errs []error
	for _, k := range order {
		h := groups[k]
		slices.SortStableFunc(h, func(a, b provider.Event) int {
			switch {
			case a.EventID < b.EventID:
				return -1
			case a.EventID > b.EventID:
				return 1
			}
			return 0
		})
		if kv[k.instance] == nil {
			kv[k.instance] = map[string]provider.KVEntry{}
		}
		// The snapshot an execution starts from holds the KV of the
		// executions before it, never its own writes.
		if err := verifyExecution(reg, k.instance, k.exec, h, maps.Clone(kv[k.instance])); err != nil {
			errs = append(errs, err)
		}
		applyKV(kv[k.instance], h)
	}
	return errors.Join(errs...)
}

// applyKV applies the KV events of history to state.
func applyKV(state map[string]provider.KVEntry, history []provider.Event) {
	for _, ev := range history {
		switch k := ev.Kind.(type) {
		case provider.KeyValueSet:
			state[k.Key] = provider.KVEntry{Value: k.Value, LastUpdatedAtMs: k.LastUpdatedAtMs}
		case provider.KeyValueCleared:
			delete(state, k.Key)
		case provider.KeyValuesCleared:
			clear(state)
		}
	}
}

// isTerminalBreadcrumb reports a cancellation written by a terminal turn.
func isTerminalBreadcrumb(ev provider.Event) bool {
	var reason string
	switch k := ev.Kind.(type) {
	case provider.ActivityCancelRequested:
		reason = k.Reason
	case provider.SubOrchestrationCancelRequested:
		reason = k.Reason
	case provider.ExternalSubscribedCancelled:
		reason = k.Reason
	case provider.QueueSubscriptionCancelled:
		reason = k.Reason
	default:
		return false
	}
	return strings.HasPrefix(reason, replay.ReasonTerminal)
}

// isDroppedFuture reports a cancellation written because the code cancelled
// a future.
func isDroppedFuture(ev provider.Event) bool {
	switch k := ev.Kind.(type) {
	case provider.ActivityCancelRequested:
		return k.Reason == replay.ReasonDroppedFuture
	case provider.SubOrchestrationCancelRequested:
		return k.Reason == replay.ReasonDroppedFuture
	case provider.ExternalSubscribedCancelled:
		return k.Reason == replay.ReasonDroppedFuture
	case provider.QueueSubscriptionCancelled:
		return k.Reason == replay.ReasonDroppedFuture
	}
	return false
}

// reproducible reports whether a recorded terminal failure can come from
// replaying the code: application failures (errors, panics, cancellation,
// limits) and nondeterminism can; poison and infrastructure failures cannot,
// nor can nondeterminism found in a turn's messages (a completion without a
// matching schedule, or of the wrong kind), which history does not record.
func reproducible(terminal *provider.Event) bool {
	if terminal == nil {
		return true
	}
	f, ok := terminal.Kind.(provider.OrchestrationFailed)
	if !ok {
		return true
	}
	switch d := f.Details.(type) {
	case provider.PoisonDetails, provider.InfrastructureDetails:
		return false
	case provider.ConfigurationDetails:
		if d.Message != nil && (strings.HasPrefix(*d.Message, "no matching schedule for ") ||
			strings.HasPrefix(*d.Message, "completion kind mismatch for id=")) {
			return false
		}
	}
	return true
}

// describe renders an event for mismatch messages: its type and its kind's
// JSON fields.
func describe(ev provider.Event) string {
	b, err := json.Marshal(ev.Kind)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return ev.Kind.EventType()
	}
	return ev.Kind.EventType() + " " + string(b)
}

// crumbKey identifies a cancellation breadcrumb regardless of its event id;
// ids maps the schedule ids of a replay to recorded ones.
func crumbKey(ev provider.Event, ids map[uint64]uint64) string {
	src := derefOr(ev.SourceEventID)
	if r, ok := ids[src]; ok {
		src = r
	}
	return fmt.Sprintf("%s(source %d) %s", ev.Kind.EventType(), src, describe(ev))
}

// verifyExecution checks one execution of [Replay]: h is its history sorted
// by event id, kv the KV snapshot it started from.
func verifyExecution(reg *durable.Registry, instance string, exec uint64, h []provider.Event, kv map[string]provider.KVEntry) error {
	fail := func(format string, args ...any) error {
		return &ReplayError{Instance: instance, ExecutionID: exec, Message: fmt.Sprintf(format, args...)}
	}
	if len(h) == 0 {
		return nil
	}
	started, ok := h[0].Kind.(provider.OrchestrationStarted)
	if !ok {
		return fail("corrupted history: first event is %s, not OrchestrationStarted", h[0].Kind.EventType())
	}
	persisted, tail, terminal := splitRecorded(h)
	turnTime := time.UnixMilli(int64(h[len(h)-1].TimestampMs)).UTC()
	input := func(resolve replay.Resolver) replay.Input {
		return replay.Input{
			Item: &provider.OrchestrationItem{
				Instance: instance, OrchestrationName: started.Name, ExecutionID: exec, Version: started.Version,
				History: persisted, KVSnapshot: kv, LockToken: "durabletest-replay", AttemptCount: 1,
			},
			Now:          turnTime,
			Resolve:      resolve,
			YieldTimeout: replayYieldTimeout,
			Callers:      true,
		}
	}
	base := reg.ReplayResolver()
	turn, err := replay.Run(input(base))
	if err != nil {
		return fmt.Errorf("durabletest: replay of instance %s execution %d: %w", instance, exec, err)
	}
	replayedTerminal, crumbs, extra := splitReplayed(turn.Commit.HistoryDelta)
	// A recorded failure the replay reproduces exactly (nondeterminism
	// included) passes.
	if terminal != nil && replayedTerminal != nil && describe(*terminal) == describe(*replayedTerminal) {
		if _, config := turn.Failure.(provider.ConfigurationDetails); config {
			return nil
		}
	}
	if d, ok := turn.Failure.(provider.ConfigurationDetails); ok && turn.Outcome == replay.Failed {
		return fail("%s%s", d.DisplayMessage(), where(turn.Mismatch))
	}
	// Hold the code open after it returns, so that the engine reads the
	// whole history: a recorded schedule the code no longer emits is then
	// reported as the engine's "history schedule but no emitted action".
	held, err := replay.Run(input(holdOpen(base)))
	if err != nil {
		return fmt.Errorf("durabletest: replay of instance %s execution %d: %w", instance, exec, err)
	}
	if d, ok := held.Failure.(provider.ConfigurationDetails); ok && held.Outcome == replay.Failed {
		return fail("%s%s", d.DisplayMessage(), where(held.Mismatch))
	}
	if !reproducible(terminal) {
		return nil
	}
	fresh, ids := newActions(persisted, extra)
	if err := checkDroppedFutures(fail, persisted, extra, ids); err != nil {
		return err
	}
	return compareTerminal(fail, terminal, replayedTerminal, tail, crumbs, extra, fresh, ids)
}

// where names the call of a mismatch and its source line, as a suffix of
// the engine's message (which describes the call and the event); ""
// without one.
func where(m *replay.Mismatch) string {
	switch {
	case m == nil:
		return ""
	case m.Call == "":
		return fmt.Sprintf(" (call #%d)", m.Position+1)
	}
	return fmt.Sprintf(" (call #%d, at %s)", m.Position+1, m.Site)
}

// failFunc builds the *[ReplayError] for a mismatch in the execution
// [verifyExecution] is checking; its steps share it so that every mismatch
// names the same instance and execution.
type failFunc func(format string, args ...any) error

// splitRecorded splits an execution's recorded history into what the replay
// takes as persisted, and the terminal event and terminal cancellations it
// must reproduce (tail, which starts at the first terminal breadcrumb or
// terminal event). It is its own step so that [verifyExecution] reads as
// split, replay, compare.
func splitRecorded(h []provider.Event) (persisted, tail []provider.Event, terminal *provider.Event) {
	for i := range h {
		ev := h[i]
		switch {
		case ev.IsTerminal():
			if terminal == nil {
				terminal = &h[i]
			}
			tail = append(tail, ev)
		case terminal != nil || isTerminalBreadcrumb(ev):
			tail = append(tail, ev)
		default:
			persisted = append(persisted, ev)
		}
	}
	return persisted, tail, terminal
}

// splitReplayed sorts a replay's history delta the way [splitRecorded] sorts
// recorded history: the terminal event the code ends with, the terminal
// cancellations, and everything else the code emitted (extra), so the two
// can be compared piece by piece.
func splitReplayed(delta []provider.Event) (terminal *provider.Event, crumbs, extra []provider.Event) {
	for i, ev := range delta {
		switch {
		case ev.IsTerminal():
			terminal = &delta[i]
		case isTerminalBreadcrumb(ev):
			crumbs = append(crumbs, ev)
		default:
			extra = append(extra, ev)
		}
	}
	return terminal, crumbs, extra
}

// checkDroppedFutures reports a future the code cancels that the recorded
// history did not cancel. It is separate from [compareTerminal] because it
// applies to running executions as well as terminal ones.
func checkDroppedFutures(fail failFunc, persisted, extra []provider.Event, ids map[uint64]uint64) error {
	recordedCrumbs := map[string]bool{}
	for _, ev := range persisted {
		if isDroppedFuture(ev) {
			recordedCrumbs[crumbKey(ev, nil)] = true
		}
	}
	for _, ev := range extra {
		if isDroppedFuture(ev) && !recordedCrumbs[crumbKey(ev, ids)] {
			return fail("cancellation mismatch: the code cancels event %d (%s) but the recorded history does not", derefOr(ev.SourceEventID), describe(ev))
		}
	}
	return nil
}

// compareTerminal checks how the replay ends against how the recorded
// execution ended: still running, the same terminal event, no actions beyond
// the recorded ones, and the same terminal cancellations. It is the last step
// of [verifyExecution], once the replay itself has found no nondeterminism.
func compareTerminal(fail failFunc, terminal, replayedTerminal *provider.Event, tail, crumbs, extra, fresh []provider.Event, ids map[uint64]uint64) error {
	if terminal == nil {
		if replayedTerminal != nil {
			return fail("outcome mismatch: the recorded execution is still running but the code ends it with %s", describe(*replayedTerminal))
		}
		return nil // new actions beyond a running history are new work
	}
	if replayedTerminal == nil {
		what := "waits"
		if len(extra) > 0 {
			names := make([]string, len(extra))
			for i, ev := range extra {
				names[i] = describe(ev)
			}
			what = "emits " + strings.Join(names, ", ")
		}
		return fail("outcome mismatch: history ends with %s but the code %s", describe(*terminal), what)
	}
	if describe(*terminal) != describe(*replayedTerminal) {
		return fail("outcome mismatch: history ends with %s but the code ends with %s", describe(*terminal), describe(*replayedTerminal))
	}
	if len(fresh) > 0 {
		return fail("the code emits %s beyond the recorded history", describe(fresh[0]))
	}
	want, got := crumbKeys(tail, nil), crumbKeys(crumbs, ids)
	if !slices.Equal(want, got) {
		return fail("terminal cancellations mismatch: history has %v, the code makes %v", want, got)
	}
	return nil
}

// actionKey identifies a schedule or side-effect event by what the engine
// matches of it (timer fire times and KV timestamps depend on the turn's
// time); "" for other events.
func actionKey(ev provider.Event) string {
	switch k := ev.Kind.(type) {
	case provider.TimerCreated:
		return "TimerCreated"
	case provider.KeyValueSet:
		return fmt.Sprintf("KeyValueSet %q=%q", k.Key, k.Value)
	case provider.ActivityScheduled, provider.ExternalSubscribed, provider.QueueSubscribed,
		provider.SubOrchestrationScheduled, provider.OrchestrationChained, provider.CustomStatusUpdated,
		provider.KeyValueCleared, provider.KeyValuesCleared:
		return describe(ev)
	}
	return ""
}

// newActions returns the schedules and side effects of a terminal replay's
// delta that history does not hold, and maps the ids of those it does hold
// to the recorded ids. The engine stops reading history as soon as the code
// returns, so the actions the code emitted in its last turn are recorded
// again, in order, under new ids: the delta starts with the last recorded
// ones (the second replay has checked that every recorded action is
// emitted). What follows them is new.
func newActions(persisted, extra []provider.Event) ([]provider.Event, map[uint64]uint64) {
	var recorded []provider.Event
	var emitted []provider.Event
	for _, ev := range persisted {
		if actionKey(ev) != "" {
			recorded = append(recorded, ev)
		}
	}
	for _, ev := range extra {
		if actionKey(ev) != "" {
			emitted = append(emitted, ev)
		}
	}
	same := func(a, b []provider.Event) bool {
		return slices.EqualFunc(a, b, func(x, y provider.Event) bool { return actionKey(x) == actionKey(y) })
	}
	for k := min(len(recorded), len(emitted)); k > 0; k-- {
		tail := recorded[len(recorded)-k:]
		if same(tail, emitted[:k]) {
			ids := map[uint64]uint64{}
			for i := range k {
				ids[emitted[i].EventID] = tail[i].EventID
			}
			return emitted[k:], ids
		}
	}
	return emitted, nil
}

// crumbKeys lists the distinct terminal breadcrumbs among events, sorted.
func crumbKeys(events []provider.Event, ids map[uint64]uint64) []string {
	var out []string
	for _, ev := range events {
		if isTerminalBreadcrumb(ev) {
			out = append(out, crumbKey(ev, ids))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// holdOpen wraps the handlers resolve returns so that the orchestration
// code, once it returns, stays blocked instead of ending the run.
func holdOpen(resolve replay.Resolver) replay.Resolver {
	return func(name string, version *string) (replay.Handler, string, error) {
		h, v, err := resolve(name, version)
		if err != nil {
			return nil, v, err
		}
		return func(c *replay.Context, input string) (string, error) {
			out, err := h(c, input)
			c.Await(&replay.Future{}) // never resolves; unwound when the turn ends
			return out, err
		}, v, nil
	}
}
