package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/duradyn/duradyn/durable/internal/replay"
)

// Names of the built-in activities, served by every runtime.
const (
	syscallNewGUID    = SyscallPrefix + "new_guid"
	syscallUTCNowMs   = SyscallPrefix + "utc_now_ms"
	syscallGetKVValue = SyscallPrefix + "get_kv_value"
)

// OrchestrationContext is what orchestration code uses to do anything
// durable. The code is re-run from the start on any turn its runtime does
// not resume from the last one (Options.ExecutionCacheSize) and must make
// the same calls in the same order each time: no goroutines, channels,
// select, clocks, randomness or map iteration of its own (cmd/durablevet
// reports them). Use the context's equivalents instead.
type OrchestrationContext struct {
	rc     *replay.Context
	logger *slog.Logger
	// reg is the registry the code was resolved from; nil when the code
	// runs outside one.
	reg *Registry
}

func newOrchestrationContext(rc *replay.Context) *OrchestrationContext {
	return &OrchestrationContext{rc: rc}
}

// InstanceID returns the instance id.
func (c *OrchestrationContext) InstanceID() string { return c.rc.Instance() }

// ExecutionID returns the execution id: 1, plus one per continue-as-new.
func (c *OrchestrationContext) ExecutionID() uint64 { return c.rc.ExecutionID() }

// Name returns the orchestration name.
func (c *OrchestrationContext) Name() string { return c.rc.Name() }

// Version returns the version this execution runs.
func (c *OrchestrationContext) Version() string { return c.rc.Version() }

// IsReplaying reports whether the code is re-executing recorded history.
func (c *OrchestrationContext) IsReplaying() bool { return c.rc.IsReplaying() }

// Now returns the time of the last history event applied before the code
// now running: deterministic, the same on every replay, and free.
func (c *OrchestrationContext) Now() time.Time { return c.rc.Now() }

// Logger returns a logger whose records carry the instance, execution and
// orchestration, and are dropped while the code replays.
func (c *OrchestrationContext) Logger() *slog.Logger {
	if c.logger == nil {
		base := slog.New(slog.DiscardHandler)
		if env, ok := c.rc.Env().(*turnEnv); ok && env.logger != nil {
			base = env.logger
		}
		c.logger = slog.New(replayFilter{base.Handler(), c.rc}).With(
			"instance_id", c.InstanceID(), "execution_id", c.ExecutionID(),
			"orchestration_name", c.Name(), "orchestration_version", c.Version())
	}
	return c.logger
}

// CallActivity schedules the activity name, which may be registered by any
// process sharing the provider. Options: [WithTag], [OnSession],
// [WithRetry]. An activity registered with [ActivityFunc] takes and returns
// wire payloads: call it with Out [Raw] and a Raw input, or the call fails
// with an [*UntypedActivityError].
func CallActivity[Out any](ctx *OrchestrationContext, name string, in any, opts ...Option) Future[Out] {
	if err := checkUntypedCall[Out](ctx, name, in); err != nil {
		return failedFuture[Out](ctx, err)
	}
	o := applyOptions(opts)
	input, err := encode(in)
	if err != nil {
		return failedFuture[Out](ctx, fmt.Errorf("activity %s: %w", name, err))
	}
	if o.retry != nil {
		return retryActivity[Out](ctx, name, input, o)
	}
	return scheduleActivity[Out](ctx, name, input, o)
}

func scheduleActivity[Out any](ctx *OrchestrationContext, name, input string, o options) Future[Out] {
	f := ctx.rc.Emit(replay.Action{Kind: replay.KindActivity, Name: name, Input: input, SessionID: o.session, Tag: o.tag})
	return wireFuture[Out](ctx, f, "activity", name)
}

// CreateTimer returns a future that resolves once d has passed.
func (c *OrchestrationContext) CreateTimer(d time.Duration) Future[struct{}] {
	fireAt := c.rc.TurnTime().Add(max(d, 0))
	f := c.rc.Emit(replay.Action{Kind: replay.KindTimer, FireAtMs: uint64(fireAt.UnixMilli())})
	return &future[struct{}]{f: f, ctx: c, result: func(f *replay.Future) (struct{}, error) {
		_, _, err := f.Result()
		return struct{}{}, err
	}}
}

// Sleep waits for d.
func (c *OrchestrationContext) Sleep(d time.Duration) error {
	_, err := c.CreateTimer(d).Get(c)
	return err
}

// WaitForEvent returns a future for the next event raised to the instance
// under name ([Client.RaiseEvent]) after this wait is recorded in history,
// at the end of the turn that makes it. An event that arrives while no
// wait of its name is recorded is dropped (duroxide's rule), so a client
// should raise only once [Client.WaitForSubscription] returns. For
// messages that must not be lost whatever the timing, use [Dequeue], with
// [Client.EnqueueEvent] on the client's side: queued messages wait until
// they are taken.
func WaitForEvent[T any](ctx *OrchestrationContext, name string) Future[T] {
	f := ctx.rc.Emit(replay.Action{Kind: replay.KindExternal, Name: name})
	return wireFuture[T](ctx, f, "event", name)
}

// Dequeue returns a future for the next message enqueued to the instance's
// queue name; messages wait in the queue until dequeued, even across
// continue-as-new.
func Dequeue[T any](ctx *OrchestrationContext, queue string) Future[T] {
	f := ctx.rc.Emit(replay.Action{Kind: replay.KindQueue, Name: queue})
	return wireFuture[T](ctx, f, "queue", queue)
}

// CallSubOrchestration starts orchestration name as a child and returns a
// future for its output. Options: [WithInstanceID], [Version].
func CallSubOrchestration[Out any](ctx *OrchestrationContext, name string, in any, opts ...Option) Future[Out] {
	o := applyOptions(opts)
	input, err := encode(in)
	if err != nil {
		return failedFuture[Out](ctx, fmt.Errorf("sub-orchestration %s: %w", name, err))
	}
	f := ctx.rc.Emit(replay.Action{Kind: replay.KindSubOrchestration, Name: name, Input: input, Instance: o.instanceID, Version: o.version})
	return wireFuture[Out](ctx, f, "sub-orchestration", name)
}

// StartOrchestration starts instanceID of orchestration name, detached: it
// has no parent and nothing waits for it. Options: [Version].
func (c *OrchestrationContext) StartOrchestration(name, instanceID string, in any, opts ...Option) error {
	o := applyOptions(opts)
	input, err := encode(in)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.rc.Emit(replay.Action{Kind: replay.KindChained, Name: name, Instance: instanceID, Input: input, Version: o.version})
	return nil
}

// ContinueAsNew ends this execution once the orchestration returns and
// starts a new one with input in; return the error it gives. Options:
// [Version] (default: the registry's policy).
func (c *OrchestrationContext) ContinueAsNew(in any, opts ...Option) error {
	o := applyOptions(opts)
	input, err := encode(in)
	if err != nil {
		return fmt.Errorf("continue as new: %w", err)
	}
	c.rc.Emit(replay.Action{Kind: replay.KindContinueAsNew, Input: input, Version: o.version})
	return &ContinueAsNewError{Input: input}
}

// SetCustomStatus sets the instance's custom status, which clients read.
func (c *OrchestrationContext) SetCustomStatus(status string) {
	c.rc.Emit(replay.Action{Kind: replay.KindCustomStatus, Status: &status})
}

// ClearCustomStatus clears the custom status.
func (c *OrchestrationContext) ClearCustomStatus() {
	c.rc.Emit(replay.Action{Kind: replay.KindCustomStatus})
}

// CustomStatus returns the current custom status.
func (c *OrchestrationContext) CustomStatus() (string, bool) { return c.rc.CustomStatus() }

// NewGUID returns a future for a random UUID, recorded in history.
func (c *OrchestrationContext) NewGUID() Future[string] {
	f := c.rc.Emit(replay.Action{Kind: replay.KindActivity, Name: syscallNewGUID})
	return Map(wireFuture[Raw](c, f, "activity", syscallNewGUID), func(s Raw) (string, error) { return string(s), nil })
}

// UTCNow returns a future for the worker's clock, recorded in history.
func (c *OrchestrationContext) UTCNow() Future[time.Time] {
	f := c.rc.Emit(replay.Action{Kind: replay.KindActivity, Name: syscallUTCNowMs})
	return Map(wireFuture[Raw](c, f, "activity", syscallUTCNowMs), func(s Raw) (time.Time, error) {
		ms, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("utc_now_ms result %q: %w", s, err)
		}
		return time.UnixMilli(int64(ms)).UTC(), nil
	})
}

// ValueFromInstance returns a future for the value of key in another
// instance's KV store (nil when unset), read by a worker and recorded.
func ValueFromInstance(ctx *OrchestrationContext, instanceID, key string) Future[*string] {
	input, _ := json.Marshal(map[string]string{"instance_id": instanceID, "key": key})
	f := ctx.rc.Emit(replay.Action{Kind: replay.KindActivity, Name: syscallGetKVValue, Input: string(input)})
	return wireFuture[*string](ctx, f, "activity", syscallGetKVValue)
}

// KV returns the orchestration's key-value store: values persisted with the
// turn and readable by clients and other orchestrations.
func (c *OrchestrationContext) KV() KV { return KV{c} }

// KV is an orchestration's key-value store. Reads are local; writes are
// recorded in history.
type KV struct{ c *OrchestrationContext }

// Set sets key to value, updated at the time of the turn that runs the Set
// first (replays of it keep that time).
func (kv KV) Set(key, value string) {
	kv.c.rc.Emit(replay.Action{Kind: replay.KindKVSet, Key: key, Value: value})
}

// Delete removes key.
func (kv KV) Delete(key string) { kv.c.rc.Emit(replay.Action{Kind: replay.KindKVClear, Key: key}) }

// Clear removes every key.
func (kv KV) Clear() { kv.c.rc.Emit(replay.Action{Kind: replay.KindKVClearAll}) }

// Get returns the value of key.
func (kv KV) Get(key string) (string, bool) {
	e, ok := kv.c.rc.KV()[key]
	return e.Value, ok
}

// All returns a copy of every key and value.
func (kv KV) All() map[string]string {
	out := make(map[string]string, len(kv.c.rc.KV()))
	for k, e := range kv.c.rc.KV() {
		out[k] = e.Value
	}
	return out
}

// Keys returns the keys, sorted.
func (kv KV) Keys() []string { return slices.Sorted(maps.Keys(kv.c.rc.KV())) }

// Len returns the number of keys.
func (kv KV) Len() int { return len(kv.c.rc.KV()) }

// PruneUpdatedBefore deletes the keys last set before t and returns how
// many it deleted.
func (kv KV) PruneUpdatedBefore(t time.Time) int {
	cutoff := uint64(t.UnixMilli())
	n := 0
	for _, k := range kv.Keys() {
		if kv.c.rc.KV()[k].LastUpdatedAtMs < cutoff {
			kv.Delete(k)
			n++
		}
	}
	return n
}

// replayFilter drops records while the orchestration replays.
type replayFilter struct {
	slog.Handler
	rc *replay.Context
}

func (h replayFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return !h.rc.IsReplaying() && h.Handler.Enabled(ctx, l)
}

func (h replayFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return replayFilter{h.Handler.WithAttrs(attrs), h.rc}
}

func (h replayFilter) WithGroup(name string) slog.Handler {
	return replayFilter{h.Handler.WithGroup(name), h.rc}
}

// turnEnv is what a runtime hands its orchestrations' contexts.
type turnEnv struct {
	logger *slog.Logger
}
