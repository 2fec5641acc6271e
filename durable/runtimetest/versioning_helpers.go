package runtimetest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// Helpers of the Versioning and Scenarios categories.

// verConst is an orchestration returning out.
func verConst(name, out string, opts ...durable.Option) durable.Definition {
	return durable.OrchestrationFunc(name, func(*durable.OrchestrationContext, string) (string, error) { return out, nil }, opts...)
}

// verPrefix is an orchestration returning prefix + its input.
func verPrefix(name, prefix string, opts ...durable.Option) durable.Definition {
	return durable.OrchestrationFunc(name, func(_ *durable.OrchestrationContext, in string) (string, error) { return prefix + in, nil }, opts...)
}

// verAct calls activity name with a plain-string input and result.
func verAct(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) (string, error) {
	out, err := durable.CallActivity[durable.Raw](ctx, name, durable.Raw(in), opts...).Get(ctx)
	return string(out), err
}

// verSub calls sub-orchestration name with a plain-string input and result.
func verSub(ctx *durable.OrchestrationContext, name, in string, opts ...durable.Option) (string, error) {
	out, err := durable.CallSubOrchestration[durable.Raw](ctx, name, durable.Raw(in), opts...).Get(ctx)
	return string(out), err
}

// verWait waits for external event name's plain-string payload.
func verWait(ctx *durable.OrchestrationContext, name string) (string, error) {
	out, err := durable.WaitForEvent[durable.Raw](ctx, name).Get(ctx)
	return string(out), err
}

// verDequeue dequeues a plain-string message from queue name.
func verDequeue(ctx *durable.OrchestrationContext, name string) (string, error) {
	out, err := durable.Dequeue[durable.Raw](ctx, name).Get(ctx)
	return string(out), err
}

// verWant fails the test unless got == want.
func (h *H) verWant(what, got, want string) {
	h.Helper()
	if got != want {
		h.Fatalf("%s = %q; want %q", what, got, want)
	}
}

// verStore is the provider for the test's own reads and writes: the
// client's (which retries where the factory makes runtimes meet faults).
func verStore(h *H) provider.Provider { return h.Client.Provider() }

// verExecution returns one execution's history, read from the provider.
func verExecution(h *H, id string, execution uint64) []provider.Event {
	h.Helper()
	events, err := verStore(h).ReadWithExecution(h.Ctx(), id, execution)
	if err != nil {
		h.Fatalf("read %s execution %d: %v", id, execution, err)
	}
	return events
}

// verStarted returns the OrchestrationStarted event of events.
func verStarted(h *H, events []provider.Event) (provider.Event, provider.OrchestrationStarted) {
	h.Helper()
	for _, ev := range events {
		if k, ok := ev.Kind.(provider.OrchestrationStarted); ok {
			return ev, k
		}
	}
	h.Fatalf("no OrchestrationStarted in %v", EventTypes(events))
	return provider.Event{}, provider.OrchestrationStarted{}
}

// verLast returns the type of the last event of events.
func verLast(events []provider.Event) string {
	if len(events) == 0 {
		return ""
	}
	return events[len(events)-1].Kind.EventType()
}

// verSemver parses v, failing the test on error.
func verSemver(h *H, v string) provider.SemVer {
	h.Helper()
	s, err := provider.ParseSemVer(v)
	if err != nil {
		h.Fatal(err)
	}
	return s
}

// verRange returns the options of a runtime that replays versions min..max.
func verRange(h *H, minV, maxV string) func(*durable.Options) {
	r := provider.SemverRange{Min: verSemver(h, minV), Max: verSemver(h, maxV)}
	return func(o *durable.Options) { o.SupportedReplayVersions = []provider.SemverRange{r} }
}

// verSeedTurn commits one turn of an instance directly with the provider,
// as an older (or other) runtime would have: it enqueues trigger, locks the
// instance without a capability filter and acks commit. Run it before any
// runtime that could take the instance is started.
func verSeedTurn(h *H, trigger provider.WorkItem, commit provider.TurnCommit) {
	h.Helper()
	ctx, p := h.Ctx(), verStore(h)
	if err := p.EnqueueForOrchestrator(ctx, trigger, 0); err != nil {
		h.Fatalf("seed: enqueue: %v", err)
	}
	var others []string
	defer func() {
		for _, tok := range others {
			_ = p.AbandonOrchestrationItem(context.Background(), tok, 0, true)
		}
	}()
	for {
		item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 100*time.Millisecond, nil)
		if err != nil {
			h.Fatalf("seed: fetch: %v", err)
		}
		if item == nil {
			continue
		}
		if item.Instance != trigger.TargetInstance() {
			others = append(others, item.LockToken)
			continue
		}
		if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); err != nil {
			h.Fatalf("seed: ack: %v", err)
		}
		return
	}
}

// verEvent builds a history event stamped with runtime version stamp.
func verEvent(id string, execution, eventID uint64, stamp string, kind provider.EventKind) provider.Event {
	return provider.Event{
		EventID: eventID, InstanceID: id, ExecutionID: execution,
		TimestampMs: uint64(time.Now().UnixMilli()), DuroxideVersion: stamp, Kind: kind,
	}
}

// verSeedPinned creates instance id of orchestration name as a runtime of
// version pinned would have: its OrchestrationStarted (version 1.0.0,
// input "{}") stamped pinned, the execution pinned to it, and a queued
// "ping" event so the instance stays fetchable.
func verSeedPinned(h *H, id, name, pinned string) {
	h.Helper()
	v := verSemver(h, pinned)
	version := "1.0.0"
	verSeedTurn(h,
		provider.StartOrchestrationItem{Instance: id, Orchestration: name, Input: "{}", Version: &version, ExecutionID: 1},
		provider.TurnCommit{
			ExecutionID:       1,
			HistoryDelta:      []provider.Event{verEvent(id, 1, 1, pinned, provider.OrchestrationStarted{Name: name, Version: version, Input: "{}"})},
			OrchestratorItems: []provider.WorkItem{provider.ExternalRaisedItem{Instance: id, Name: "ping", Data: "{}"}},
			Metadata:          provider.ExecutionMetadata{OrchestrationName: name, OrchestrationVersion: version, PinnedDuroxideVersion: &v},
		})
}

// verProvider wraps the test's provider to watch (and bend) what runtimes
// see: it counts orchestration fetches, records abandons, can ignore the
// capability filter (a provider that does not honour it) and can report
// one instance's history as undecodable.
type verProvider struct {
	provider.Provider
	bypassFilter bool
	corrupt      string

	mu       sync.Mutex
	fetches  int
	tokens   map[string]string // lock token → instance
	abandons map[string][]verAbandon
}

type verAbandon struct {
	delay         time.Duration
	ignoreAttempt bool
}

func newVerProvider(p provider.Provider) *verProvider {
	return &verProvider{Provider: p, tokens: map[string]string{}, abandons: map[string][]verAbandon{}}
}

func (p *verProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	if p.bypassFilter {
		filter = nil
	}
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.fetches++
	}
	if item != nil {
		p.tokens[item.LockToken] = item.Instance
		if item.Instance == p.corrupt {
			item.History = nil
			item.HistoryError = fmt.Errorf("%w: event type FutureEventKind", provider.ErrCorruptData)
		}
	}
	return item, err
}

func (p *verProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	p.mu.Lock()
	if inst, ok := p.tokens[lockToken]; ok {
		p.abandons[inst] = append(p.abandons[inst], verAbandon{delay, ignoreAttempt})
	}
	p.mu.Unlock()
	return p.Provider.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
}

// fetchCount returns how many fetches have returned without error.
func (p *verProvider) fetchCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetches
}

// abandonsOf returns the abandons of id's items.
func (p *verProvider) abandonsOf(id string) []verAbandon {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.abandons[id])
}

// verStop shuts rt down now (a node going away in a rolling deployment).
func verStop(h *H, rt *durable.Runtime) {
	h.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		h.Fatalf("Shutdown: %v", err)
	}
}

// verAwaitFetches waits until p has served n more fetches than now: every
// runtime on p has looked at the queue several times since.
func verAwaitFetches(h *H, p *verProvider, n int) {
	h.Helper()
	base := p.fetchCount()
	h.WaitFor(fmt.Sprintf("%d fetches", n), func() bool { return p.fetchCount() >= base+n })
}

// verExpectUntouched checks that seeded instance id was never run: it is
// Running with its one seeded event.
func verExpectUntouched(h *H, id string) {
	h.Helper()
	st, err := h.Client.Status(h.Ctx(), id)
	if err != nil {
		h.Fatal(err)
	}
	if st.State != durable.StateRunning {
		h.Fatalf("%s is %v; want Running (never fetched)", id, st.State)
	}
	hist, err := verStore(h).Read(h.Ctx(), id)
	if err != nil {
		h.Fatal(err)
	}
	if len(hist) != 1 {
		h.Fatalf("%s history %v; want only the seeded OrchestrationStarted", id, EventTypes(hist))
	}
}

// verShortPoll makes empty fetches return quickly, so that waits counting
// fetches stay short.
func verShortPoll(o *durable.Options) { o.LongPollTimeout = 50 * time.Millisecond }

// verLogs records a runtime's log records.
type verLogs struct {
	mu   sync.Mutex
	recs []verRecord
}

type verRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

type verLogHandler struct {
	logs  *verLogs
	attrs []slog.Attr
}

func (l *verLogs) logger() *slog.Logger { return slog.New(verLogHandler{logs: l}) }

func (l *verLogs) find(match func(verRecord) bool) (verRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if match(r) {
			return r, true
		}
	}
	return verRecord{}, false
}

func (verLogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h verLogHandler) Handle(_ context.Context, r slog.Record) error {
	rec := verRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.logs.mu.Lock()
	h.logs.recs = append(h.logs.recs, rec)
	h.logs.mu.Unlock()
	return nil
}

func (h verLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return verLogHandler{logs: h.logs, attrs: append(slices.Clone(h.attrs), attrs...)}
}

func (h verLogHandler) WithGroup(string) slog.Handler { return h }

// verCalls records what orchestration code saw, from any goroutine.
type verCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *verCalls) add(s string) {
	c.mu.Lock()
	c.calls = append(c.calls, s)
	c.mu.Unlock()
}

func (c *verCalls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}
