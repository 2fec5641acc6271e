package durable

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// countingProvider is a memprovider that counts the reads a client makes
// and signals each finished Read, InstanceInfo, CustomStatus and KVValue
// call on polled (dropping signals nobody waits for).
type countingProvider struct {
	*memprovider.Provider
	reads, infos, statuses atomic.Int64
	polled                 chan struct{}
}

func newCountingProvider() *countingProvider {
	return &countingProvider{Provider: memprovider.New(), polled: make(chan struct{}, 1)}
}

func (p *countingProvider) signal() {
	select {
	case p.polled <- struct{}{}:
	default:
	}
}

func (p *countingProvider) Read(ctx context.Context, instance string) ([]provider.Event, error) {
	defer p.signal()
	p.reads.Add(1)
	return p.Provider.Read(ctx, instance)
}

func (p *countingProvider) InstanceInfo(ctx context.Context, instance string) (*provider.InstanceInfo, error) {
	defer p.signal()
	p.infos.Add(1)
	return p.Provider.InstanceInfo(ctx, instance)
}

func (p *countingProvider) InstanceStatus(ctx context.Context, instance string) (*provider.InstanceStatus, error) {
	defer p.signal()
	p.statuses.Add(1)
	return p.Provider.InstanceStatus(ctx, instance)
}

func (p *countingProvider) CustomStatus(ctx context.Context, instance string, lastSeen uint64) (*provider.CustomStatus, error) {
	defer p.signal()
	return p.Provider.CustomStatus(ctx, instance, lastSeen)
}

func (p *countingProvider) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	defer p.signal()
	return p.Provider.KVValue(ctx, instance, key)
}

// plainProvider hides every optional interface of the provider it wraps.
type plainProvider struct{ provider.Provider }

// adminProvider has the management capability of the provider it wraps,
// and no other optional interface.
type adminProvider struct {
	provider.Provider
	provider.Admin
}

// clientFixture is a client over a counting memprovider, plus a stand-in
// for the runtime that commits orchestration turns by hand.
type clientFixture struct {
	t   *testing.T
	ctx context.Context
	mem *countingProvider
	c   *Client
}

// newClientFixture returns a fixture whose client has the management
// capability, or not when admin is false.
func newClientFixture(t *testing.T, admin bool) *clientFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	mem := newCountingProvider()
	var p provider.Provider = mem
	if !admin {
		p = plainProvider{mem}
	}
	return &clientFixture{t: t, ctx: ctx, mem: mem, c: NewClient(p)}
}

// clientKinds names the three provider shapes a client adapts to: with
// StatusReader and Admin, with Admin alone, with neither.
var clientKinds = []string{"StatusReader", "Admin", "Plain"}

// newClientFixtureOf returns a fixture whose client's provider has the
// shape kind names (clientKinds).
func newClientFixtureOf(t *testing.T, kind string) *clientFixture {
	t.Helper()
	f := newClientFixture(t, kind != "Plain")
	if kind == "Admin" {
		f.c = NewClient(adminProvider{plainProvider{f.mem}, f.mem})
	}
	return f
}

// fetch locks the next orchestration item, which must exist.
func (f *clientFixture) fetch() *provider.OrchestrationItem {
	f.t.Helper()
	item, err := f.mem.FetchOrchestrationItem(f.ctx, 30*time.Second, 0, nil)
	if err != nil || item == nil {
		f.t.Fatalf("FetchOrchestrationItem = %v, %v; want an item", item, err)
	}
	return item
}

// commit acks item with kinds appended to execution executionID, as a
// runtime's turn would. On an execution's first turn it sends the
// orchestration name and version metadata when meta has none.
func (f *clientFixture) commit(item *provider.OrchestrationItem, executionID uint64, meta provider.ExecutionMetadata, orch []provider.WorkItem, kinds ...provider.EventKind) {
	f.t.Helper()
	next := uint64(1)
	if executionID == item.ExecutionID {
		next += uint64(len(item.History))
	}
	if next == 1 && meta.OrchestrationName == "" {
		meta.OrchestrationName, meta.OrchestrationVersion = item.OrchestrationName, item.Version
	}
	events := make([]provider.Event, len(kinds))
	for i, k := range kinds {
		events[i] = provider.Event{
			EventID:     next + uint64(i),
			InstanceID:  item.Instance,
			ExecutionID: executionID,
			TimestampMs: uint64(time.Now().UnixMilli()),
			Kind:        k,
		}
	}
	commit := provider.TurnCommit{ExecutionID: executionID, HistoryDelta: events, OrchestratorItems: orch, Metadata: meta}
	if err := f.mem.AckOrchestrationItem(f.ctx, item.LockToken, commit); err != nil {
		f.t.Fatalf("AckOrchestrationItem: %v", err)
	}
}

// turn runs one turn of the instance whose messages are queued.
func (f *clientFixture) turn(meta provider.ExecutionMetadata, kinds ...provider.EventKind) *provider.OrchestrationItem {
	f.t.Helper()
	item := f.fetch()
	f.commit(item, item.ExecutionID, meta, nil, kinds...)
	return item
}

// startRunning starts instance id of "Greet" and commits its first turn
// with extra events after OrchestrationStarted.
func (f *clientFixture) startRunning(id string, extra ...provider.EventKind) {
	f.t.Helper()
	if err := f.c.StartOrchestration(f.ctx, id, "Greet", "world", Version("1.0.0")); err != nil {
		f.t.Fatalf("StartOrchestration: %v", err)
	}
	started := provider.OrchestrationStarted{Name: "Greet", Version: "1.0.0", Input: `"world"`}
	f.turn(provider.ExecutionMetadata{}, append([]provider.EventKind{started}, extra...)...)
}

// step wakes instance id with an external event and commits kinds.
func (f *clientFixture) step(id string, meta provider.ExecutionMetadata, kinds ...provider.EventKind) {
	f.t.Helper()
	if err := f.c.RaiseEvent(f.ctx, id, "wake", nil); err != nil {
		f.t.Fatalf("RaiseEvent: %v", err)
	}
	f.turn(meta, kinds...)
}

// complete ends instance id with output.
func (f *clientFixture) complete(id, output string) {
	f.t.Helper()
	f.step(id, provider.ExecutionMetadata{Status: provider.StatusCompleted, Output: &output},
		provider.OrchestrationCompleted{Output: output})
}

// fail ends instance id with details.
func (f *clientFixture) fail(id string, details provider.ErrorDetails) {
	f.t.Helper()
	msg := details.DisplayMessage()
	f.step(id, provider.ExecutionMetadata{Status: provider.StatusFailed, Output: &msg},
		provider.OrchestrationFailed{Details: details})
}

func (f *clientFixture) status(id string) *Status {
	f.t.Helper()
	s, err := f.c.Status(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Status(%s): %v", id, err)
	}
	return s
}

// drainPolled drops the signals of the provider calls made so far.
func (f *clientFixture) drainPolled() {
	select {
	case <-f.mem.polled:
	default:
	}
}

// waitPolled waits until the client has made a provider call.
func (f *clientFixture) waitPolled() {
	f.t.Helper()
	select {
	case <-f.mem.polled:
	case <-f.ctx.Done():
		f.t.Fatal("the client never polled")
	}
}

type result[T any] struct {
	v   T
	err error
}

// async runs fn in a goroutine and returns a channel with its result.
func async[T any](fn func() (T, error)) <-chan result[T] {
	ch := make(chan result[T], 1)
	go func() {
		v, err := fn()
		ch <- result[T]{v, err}
	}()
	return ch
}

// recv returns the result fn sent, failing the test at its deadline.
func recv[T any](f *clientFixture, ch <-chan result[T]) (T, error) {
	f.t.Helper()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-f.ctx.Done():
		f.t.Fatal("no result before the test deadline")
		panic("unreachable")
	}
}

func ptr[T any](v T) *T { return &v }

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

type greeting struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func TestClientOptionsDefaults(t *testing.T) {
	c := NewClient(memprovider.New())
	if c.opts.PollInitial != 5*time.Millisecond || c.opts.PollMax != 100*time.Millisecond {
		t.Errorf("defaults = %+v; want 5ms, 100ms", c.opts)
	}
	c = NewClient(memprovider.New(), nil, func(o *ClientOptions) {
		o.PollInitial = 20 * time.Millisecond
		o.PollMax = 10 * time.Millisecond
	})
	if c.opts.PollInitial != 20*time.Millisecond || c.opts.PollMax != 20*time.Millisecond {
		t.Errorf("PollMax below PollInitial: got %+v; want both 20ms", c.opts)
	}
	c = NewClient(memprovider.New(), func(o *ClientOptions) { o.PollInitial, o.PollMax = -1, -1 })
	if c.opts.PollInitial != 5*time.Millisecond || c.opts.PollMax != 100*time.Millisecond {
		t.Errorf("negative values = %+v; want defaults", c.opts)
	}
	p := memprovider.New()
	if got := NewClient(p).Provider(); got != p {
		t.Errorf("Provider() = %v; want the provider given", got)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{
		StateNotFound: "NotFound", StateRunning: "Running", StateCompleted: "Completed",
		StateFailed: "Failed", State(9): "State(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q; want %q", int(s), got, want)
		}
	}
	if StateRunning.IsTerminal() || StateNotFound.IsTerminal() || !StateCompleted.IsTerminal() || !StateFailed.IsTerminal() {
		t.Error("IsTerminal: only Completed and Failed are terminal")
	}
}

func TestClientStartEnqueuesStartItem(t *testing.T) {
	f := newClientFixture(t, true)
	if err := f.c.StartOrchestration(f.ctx, "s1", "Greet", map[string]int{"n": 1}, Version("2.0.0")); err != nil {
		t.Fatalf("StartOrchestration: %v", err)
	}
	item := f.fetch()
	want := []provider.WorkItem{provider.StartOrchestrationItem{
		Instance: "s1", Orchestration: "Greet", Input: `{"n":1}`, Version: ptr("2.0.0"), ExecutionID: 1,
	}}
	if !reflect.DeepEqual(item.Messages, want) {
		t.Errorf("queued %#v; want %#v", item.Messages, want)
	}

	// s1 stays locked, so the next fetches return the other instances.
	// Without Version the registry decides; the typed Start goes the same way.
	orch := NewOrchestration("Typed", func(*OrchestrationContext, greeting) (string, error) { return "", nil })
	if err := orch.Start(f.ctx, f.c, "s2", greeting{Text: "hi"}); err != nil {
		t.Fatalf("Orchestration.Start: %v", err)
	}
	if err := f.c.StartOrchestration(f.ctx, "s3", "Raw", Raw("verbatim")); err != nil {
		t.Fatalf("StartOrchestration: %v", err)
	}
	got := map[string]provider.WorkItem{}
	for range 2 {
		item := f.fetch()
		got[item.Instance] = item.Messages[0]
	}
	if want := (provider.StartOrchestrationItem{Instance: "s2", Orchestration: "Typed", Input: `{"text":"hi","count":0}`, ExecutionID: 1}); !reflect.DeepEqual(got["s2"], want) {
		t.Errorf("typed start queued %#v; want %#v", got["s2"], want)
	}
	if want := (provider.StartOrchestrationItem{Instance: "s3", Orchestration: "Raw", Input: "verbatim", ExecutionID: 1}); !reflect.DeepEqual(got["s3"], want) {
		t.Errorf("raw start queued %#v; want %#v", got["s3"], want)
	}
}

func TestClientStatusNotFoundPendingRunning(t *testing.T) {
	f := newClientFixture(t, true)
	if s := f.status("nobody"); s.State != StateNotFound || s.ExecutionID != 0 || s.Instance != "nobody" {
		t.Errorf("unknown instance: %+v; want NotFound, execution 0", s)
	}
	if err := f.c.StartOrchestration(f.ctx, "o1", "Greet", "world"); err != nil {
		t.Fatal(err)
	}
	if s := f.status("o1"); s.State != StatePending || s.State.String() != "Pending" || s.State.IsTerminal() {
		t.Errorf("before the first turn: %v; want Pending", s.State)
	}
	f.turn(provider.ExecutionMetadata{}, provider.OrchestrationStarted{Name: "Greet", Version: "1.0.0", Input: `"world"`})
	s := f.status("o1")
	if s.State != StateRunning || s.ExecutionID != 1 || s.Output != "" || s.Failure != nil || s.CustomStatus != nil {
		t.Errorf("after the first turn: %+v; want Running in execution 1", s)
	}
	if _, err := Output[string](s); err == nil {
		t.Error("Output of a running instance: no error")
	}
	if _, err := Output[string](f.status("nobody")); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Output of an unknown instance: %v; want ErrNotFound", err)
	}
	if _, err := Output[string](nil); err == nil {
		t.Error("Output(nil): no error")
	}
}

func TestClientCompletedOutput(t *testing.T) {
	for _, admin := range []bool{true, false} {
		t.Run(map[bool]string{true: "Admin", false: "NoAdmin"}[admin], func(t *testing.T) {
			f := newClientFixture(t, admin)
			f.startRunning("o1")
			f.complete("o1", `{"text":"hello","count":2}`)

			s := f.status("o1")
			if s.State != StateCompleted || s.Output != `{"text":"hello","count":2}` || s.ExecutionID != 1 {
				t.Fatalf("status %+v; want Completed with the output", s)
			}
			g, err := Output[greeting](s)
			if err != nil || g != (greeting{"hello", 2}) {
				t.Errorf("Output = %+v, %v", g, err)
			}
			raw, err := Output[Raw](s)
			if err != nil || raw != `{"text":"hello","count":2}` {
				t.Errorf("Output[Raw] = %q, %v", raw, err)
			}
			if _, err := Output[int](s); err == nil {
				t.Error("Output[int] of an object: no error")
			}
			g, err = WaitForOutput[greeting](f.ctx, f.c, "o1")
			if err != nil || g != (greeting{"hello", 2}) {
				t.Errorf("WaitForOutput = %+v, %v", g, err)
			}
		})
	}
}

func TestClientFailed(t *testing.T) {
	f := newClientFixture(t, true)
	f.startRunning("o1")
	details := provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: provider.AppOrchestrationFailed}, Message: "boom"}
	f.fail("o1", details)

	s := f.status("o1")
	if s.State != StateFailed || s.Output != "" || !reflect.DeepEqual(s.Failure, provider.ErrorDetails(details)) {
		t.Fatalf("status %+v; want Failed with the details", s)
	}
	_, err := WaitForOutput[string](f.ctx, f.c, "o1")
	var fe *FailureError
	if !errors.As(err, &fe) || fe.Instance != "o1" || !reflect.DeepEqual(fe.Details, provider.ErrorDetails(details)) {
		t.Fatalf("WaitForOutput error = %v; want *FailureError for o1 with the details", err)
	}
	if _, err := Output[string](s); !errors.As(err, &fe) {
		t.Errorf("Output error = %v; want *FailureError", err)
	}
}

func TestClientContinuedAsNewIsRunning(t *testing.T) {
	f := newClientFixture(t, true)
	if err := f.c.StartOrchestration(f.ctx, "o1", "Loop", "0"); err != nil {
		t.Fatal(err)
	}
	next := "1"
	item := f.fetch()
	f.commit(item, 1, provider.ExecutionMetadata{Status: provider.StatusContinuedAsNew, Output: &next},
		[]provider.WorkItem{provider.ContinueAsNewItem{Instance: "o1", Orchestration: "Loop", Input: next}},
		provider.OrchestrationStarted{Name: "Loop", Version: "1.0.0", Input: "0"},
		provider.OrchestrationContinuedAsNew{Input: next})
	if s := f.status("o1"); s.State != StateRunning || s.ExecutionID != 1 {
		t.Fatalf("after continue-as-new: %+v; want Running in execution 1", s)
	}
	if _, err := f.c.WaitForCompletion(shortCtx(t), "o1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForCompletion while continued-as-new: %v; want DeadlineExceeded", err)
	}

	item = f.fetch()
	f.commit(item, 2, provider.ExecutionMetadata{}, nil, provider.OrchestrationStarted{Name: "Loop", Version: "1.0.0", Input: next})
	if s := f.status("o1"); s.State != StateRunning || s.ExecutionID != 2 {
		t.Fatalf("second execution: %+v; want Running in execution 2", s)
	}
	f.complete("o1", `"done"`)
	s, err := f.c.WaitForCompletion(f.ctx, "o1")
	if err != nil || s.State != StateCompleted || s.ExecutionID != 2 {
		t.Fatalf("WaitForCompletion = %+v, %v; want Completed in execution 2", s, err)
	}
}

func TestClientWaitForCompletionHonoursDeadline(t *testing.T) {
	for _, admin := range []bool{true, false} {
		t.Run(map[bool]string{true: "Admin", false: "NoAdmin"}[admin], func(t *testing.T) {
			f := newClientFixture(t, admin)
			f.startRunning("o1")
			start := time.Now()
			_, err := f.c.WaitForCompletion(shortCtx(t), "o1")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("running instance: %v; want DeadlineExceeded", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("returned after %v", d)
			}
			if _, err := f.c.WaitForCompletion(shortCtx(t), "nobody"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("unknown instance: %v; want DeadlineExceeded", err)
			}
			cancelled, cancel := context.WithCancel(f.ctx)
			cancel()
			if _, err := f.c.WaitForCompletion(cancelled, "o1"); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled ctx: %v; want Canceled", err)
			}
		})
	}
}

// WaitForCompletion polls the cheapest read the provider offers:
// InstanceStatus, else InstanceInfo, else the history.
func TestClientWaitForCompletionPollsCheaply(t *testing.T) {
	for _, kind := range clientKinds {
		f := newClientFixtureOf(t, kind)
		f.startRunning("o1")
		f.mem.reads.Store(0)
		if _, err := f.c.WaitForCompletion(shortCtx(t), "o1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: WaitForCompletion: %v; want DeadlineExceeded", kind, err)
		}
		r, i, s := f.mem.reads.Load(), f.mem.infos.Load(), f.mem.statuses.Load()
		if ok := map[string]bool{
			"StatusReader": r == 0 && i == 0 && s >= 2,
			"Admin":        r == 0 && i >= 2 && s == 0,
			"Plain":        r >= 2 && i == 0 && s == 0,
		}[kind]; !ok {
			t.Errorf("%s: %d history reads, %d InstanceInfo calls, %d InstanceStatus calls; want several of the cheapest it has, none of the others", kind, r, i, s)
		}
	}
}

func TestClientWaitForCompletionWakesOnCompletion(t *testing.T) {
	for _, kind := range clientKinds {
		t.Run(kind, func(t *testing.T) {
			f := newClientFixtureOf(t, kind)
			f.startRunning("o1", provider.CustomStatusUpdated{Status: ptr("working")})
			f.drainPolled()
			done := async(func() (*Status, error) { return f.c.WaitForCompletion(f.ctx, "o1") })
			f.waitPolled()
			f.complete("o1", `"ok"`)
			s, err := recv(f, done)
			if err != nil || s.State != StateCompleted || s.Output != `"ok"` {
				t.Fatalf("WaitForCompletion = %+v, %v; want Completed", s, err)
			}
			if s.CustomStatus == nil || *s.CustomStatus != "working" || s.CustomStatusVersion != 1 {
				t.Errorf("custom status %v v%d; want working v1", s.CustomStatus, s.CustomStatusVersion)
			}
		})
	}
}

func TestClientWaitForStatusChange(t *testing.T) {
	for _, admin := range []bool{true, false} {
		t.Run(map[bool]string{true: "Admin", false: "NoAdmin"}[admin], func(t *testing.T) {
			f := newClientFixture(t, admin)
			f.startRunning("o1", provider.CustomStatusUpdated{Status: ptr("step 1")})

			s, err := f.c.WaitForStatusChange(f.ctx, "o1", 0)
			if err != nil || s.State != StateRunning || s.CustomStatus == nil || *s.CustomStatus != "step 1" || s.CustomStatusVersion != 1 {
				t.Fatalf("first change = %+v, %v; want Running, step 1 v1", s, err)
			}
			if _, err := f.c.WaitForStatusChange(shortCtx(t), "o1", 1); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("no change: %v; want DeadlineExceeded", err)
			}

			f.drainPolled()
			changed := async(func() (*Status, error) { return f.c.WaitForStatusChange(f.ctx, "o1", 1) })
			f.waitPolled()
			f.step("o1", provider.ExecutionMetadata{}, provider.CustomStatusUpdated{Status: ptr("step 2")})
			s, err = recv(f, changed)
			if err != nil || s.State != StateRunning || s.CustomStatus == nil || *s.CustomStatus != "step 2" || s.CustomStatusVersion != 2 {
				t.Fatalf("second change = %+v, %v; want Running, step 2 v2", s, err)
			}

			// Clearing is a change too.
			f.step("o1", provider.ExecutionMetadata{}, provider.CustomStatusUpdated{})
			s, err = f.c.WaitForStatusChange(f.ctx, "o1", 2)
			if err != nil || s.CustomStatus != nil || s.CustomStatusVersion != 3 {
				t.Fatalf("cleared = %+v, %v; want nil status v3", s, err)
			}

			// Finishing without a status change ends the wait.
			finished := async(func() (*Status, error) { return f.c.WaitForStatusChange(f.ctx, "o1", 3) })
			f.complete("o1", `"ok"`)
			s, err = recv(f, finished)
			if err != nil || s.State != StateCompleted || s.CustomStatusVersion != 3 {
				t.Fatalf("terminal = %+v, %v; want Completed v3", s, err)
			}
		})
	}
}

func TestClientEventsAndCancelEnqueueItems(t *testing.T) {
	f := newClientFixture(t, true)
	f.startRunning("o1")
	if err := f.c.RaiseEvent(f.ctx, "o1", "approve", map[string]bool{"ok": true}); err != nil {
		t.Fatalf("RaiseEvent: %v", err)
	}
	if err := f.c.EnqueueEvent(f.ctx, "o1", "inbox", Raw("plain")); err != nil {
		t.Fatalf("EnqueueEvent: %v", err)
	}
	if err := f.c.EnqueueEvent(f.ctx, "o1", "inbox", json.RawMessage(`[1,2]`)); err != nil {
		t.Fatalf("EnqueueEvent: %v", err)
	}
	if err := f.c.CancelInstance(f.ctx, "o1", "no longer needed"); err != nil {
		t.Fatalf("CancelInstance: %v", err)
	}
	item := f.fetch()
	want := []provider.WorkItem{
		provider.ExternalRaisedItem{Instance: "o1", Name: "approve", Data: `{"ok":true}`},
		provider.QueueMessageItem{Instance: "o1", Name: "inbox", Data: "plain"},
		provider.QueueMessageItem{Instance: "o1", Name: "inbox", Data: "[1,2]"},
		provider.CancelInstanceItem{Instance: "o1", Reason: "no longer needed"},
	}
	if !reflect.DeepEqual(item.Messages, want) {
		t.Errorf("queued %#v\nwant %#v", item.Messages, want)
	}
}

func TestClientKV(t *testing.T) {
	f := newClientFixture(t, true)
	f.startRunning("o1",
		provider.KeyValueSet{Key: "a", Value: "1", LastUpdatedAtMs: 1},
		provider.KeyValueSet{Key: "b", Value: "", LastUpdatedAtMs: 1})

	if v, ok, err := f.c.KVValue(f.ctx, "o1", "a"); err != nil || !ok || v != "1" {
		t.Errorf(`KVValue(a) = %q, %v, %v; want "1", true`, v, ok, err)
	}
	if v, ok, err := f.c.KVValue(f.ctx, "o1", "b"); err != nil || !ok || v != "" {
		t.Errorf(`KVValue(b) = %q, %v, %v; want "", true`, v, ok, err)
	}
	if _, ok, err := f.c.KVValue(f.ctx, "o1", "missing"); err != nil || ok {
		t.Errorf("KVValue(missing) ok = %v, %v; want false", ok, err)
	}
	if _, ok, err := f.c.KVValue(f.ctx, "nobody", "a"); err != nil || ok {
		t.Errorf("KVValue of an unknown instance: ok = %v, %v; want false", ok, err)
	}
	if all, err := f.c.KVValues(f.ctx, "o1"); err != nil || !reflect.DeepEqual(all, map[string]string{"a": "1", "b": ""}) {
		t.Errorf("KVValues = %v, %v", all, err)
	}
	if all, err := f.c.KVValues(f.ctx, "nobody"); err != nil || len(all) != 0 {
		t.Errorf("KVValues of an unknown instance = %v, %v; want empty", all, err)
	}
	if v, err := f.c.WaitForKVValue(f.ctx, "o1", "a"); err != nil || v != "1" {
		t.Errorf("WaitForKVValue(a) = %q, %v", v, err)
	}
	if _, err := f.c.WaitForKVValue(shortCtx(t), "o1", "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForKVValue(c) before it is set: %v; want DeadlineExceeded", err)
	}

	f.drainPolled()
	got := async(func() (string, error) { return f.c.WaitForKVValue(f.ctx, "o1", "c") })
	f.waitPolled()
	f.step("o1", provider.ExecutionMetadata{}, provider.KeyValueSet{Key: "c", Value: "3", LastUpdatedAtMs: 2})
	if v, err := recv(f, got); err != nil || v != "3" {
		t.Errorf("WaitForKVValue(c) = %q, %v; want 3", v, err)
	}

	stats, err := f.c.Stats(f.ctx, "o1")
	if err != nil || stats == nil || stats.HistoryEventCount != 4 || stats.KVUserKeyCount != 3 || stats.KVTotalValueBytes != 2 {
		t.Errorf("Stats = %+v, %v; want 4 events, 3 keys, 2 value bytes", stats, err)
	}
	if stats, err := f.c.Stats(f.ctx, "nobody"); err != nil || stats != nil {
		t.Errorf("Stats of an unknown instance = %+v, %v; want nil, nil", stats, err)
	}
}

func TestClientManagement(t *testing.T) {
	f := newClientFixture(t, true)
	f.startRunning("running")
	f.startRunning("done")
	f.complete("done", `"ok"`)

	// A sub-orchestration of "parent", as a runtime would start it.
	f.startRunning("parent")
	child := provider.StartOrchestrationItem{Instance: "parent::sub::2", Orchestration: "Child", Input: "{}",
		ParentInstance: ptr("parent"), ParentID: ptr(uint64(2)), ExecutionID: 1}
	if err := f.mem.EnqueueForOrchestrator(f.ctx, child, 0); err != nil {
		t.Fatal(err)
	}
	f.turn(provider.ExecutionMetadata{ParentInstanceID: "parent"}, provider.OrchestrationStarted{
		Name: "Child", Version: "1.0.0", Input: "{}", ParentInstance: ptr("parent"), ParentID: ptr(uint64(2))})

	ids, err := f.c.ListInstances(f.ctx)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"done", "parent", "parent::sub::2", "running"}) {
		t.Errorf("ListInstances = %v, %v", ids, err)
	}
	if ids, err := f.c.ListInstancesByStatus(f.ctx, provider.StatusCompleted); err != nil || !slices.Equal(ids, []string{"done"}) {
		t.Errorf("ListInstancesByStatus(Completed) = %v, %v", ids, err)
	}
	info, err := f.c.InstanceInfo(f.ctx, "done")
	if err != nil || info.Status != provider.StatusCompleted || info.OrchestrationName != "Greet" || info.Output == nil || *info.Output != `"ok"` {
		t.Errorf("InstanceInfo(done) = %+v, %v", info, err)
	}
	if _, err := f.c.InstanceInfo(f.ctx, "nobody"); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("InstanceInfo(nobody): %v; want ErrNotFound", err)
	}
	if ei, err := f.c.ExecutionInfo(f.ctx, "done", 1); err != nil || ei.Status != provider.StatusCompleted || ei.EventCount != 2 {
		t.Errorf("ExecutionInfo(done, 1) = %+v, %v", ei, err)
	}
	if _, err := f.c.ExecutionInfo(f.ctx, "done", 7); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("ExecutionInfo(done, 7): %v; want ErrNotFound", err)
	}
	if execs, err := f.c.ListExecutions(f.ctx, "done"); err != nil || !slices.Equal(execs, []uint64{1}) {
		t.Errorf("ListExecutions(done) = %v, %v", execs, err)
	}
	for _, exec := range []uint64{0, 1} {
		h, err := f.c.History(f.ctx, "done", exec)
		if err != nil || len(h) != 2 || h[0].Kind.EventType() != "OrchestrationStarted" || h[1].Kind != (provider.OrchestrationCompleted{Output: `"ok"`}) {
			t.Errorf("History(done, %d) = %v, %v", exec, h, err)
		}
	}
	if m, err := f.c.SystemMetrics(f.ctx); err != nil || m.TotalInstances != 4 || m.CompletedInstances != 1 || m.RunningInstances != 3 {
		t.Errorf("SystemMetrics = %+v, %v", m, err)
	}
	if err := f.c.RaiseEvent(f.ctx, "running", "ping", nil); err != nil {
		t.Fatal(err)
	}
	if d, err := f.c.QueueDepths(f.ctx); err != nil || d.OrchestratorQueue != 1 || d.WorkerQueue != 0 {
		t.Errorf("QueueDepths = %+v, %v; want 1 orchestrator message", d, err)
	}
	tree, err := f.c.InstanceTree(f.ctx, "parent")
	slices.Sort(tree.AllIDs)
	if err != nil || tree.RootID != "parent" || !slices.Equal(tree.AllIDs, []string{"parent", "parent::sub::2"}) {
		t.Errorf("InstanceTree(parent) = %+v, %v", tree, err)
	}
	if pr, err := f.c.PruneExecutions(f.ctx, "done", provider.PruneOptions{}); err != nil || pr != (provider.PruneResult{InstancesProcessed: 1}) {
		t.Errorf("PruneExecutions(done) = %+v, %v", pr, err)
	}
	if _, err := f.c.PruneExecutions(f.ctx, "nobody", provider.PruneOptions{}); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("PruneExecutions(nobody): %v; want ErrNotFound", err)
	}
	if pr, err := f.c.PruneExecutionsBulk(f.ctx, provider.InstanceFilter{}, provider.PruneOptions{}); err != nil || pr.InstancesProcessed != 4 {
		t.Errorf("PruneExecutionsBulk = %+v, %v; want 4 instances processed", pr, err)
	}

	// Deletion.
	if _, err := f.c.DeleteInstance(f.ctx, "running", false); !errors.Is(err, provider.ErrStillRunning) {
		t.Errorf("DeleteInstance(running): %v; want ErrStillRunning", err)
	}
	if _, err := f.c.DeleteInstance(f.ctx, "parent::sub::2", true); !errors.Is(err, provider.ErrSubOrchestration) {
		t.Errorf("DeleteInstance(child): %v; want ErrSubOrchestration", err)
	}
	if _, err := f.c.DeleteInstance(f.ctx, "nobody", false); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("DeleteInstance(nobody): %v; want ErrNotFound", err)
	}
	res, err := f.c.DeleteInstance(f.ctx, "done", false)
	if err != nil || res.InstancesDeleted != 1 || res.EventsDeleted != 2 {
		t.Errorf("DeleteInstance(done) = %+v, %v", res, err)
	}
	if s := f.status("done"); s.State != StateNotFound {
		t.Errorf("after delete: %v; want NotFound", s.State)
	}
	if res, err := f.c.DeleteInstance(f.ctx, "parent", true); err != nil || res.InstancesDeleted != 2 {
		t.Errorf("DeleteInstance(parent, force) = %+v, %v; want the tree of 2", res, err)
	}
	if res, err := f.c.DeleteInstanceBulk(f.ctx, provider.InstanceFilter{}); err != nil || res.InstancesDeleted != 0 {
		t.Errorf("DeleteInstanceBulk with only a running instance = %+v, %v; want nothing deleted", res, err)
	}
}

func TestClientManagementNotAvailable(t *testing.T) {
	f := newClientFixture(t, false)
	f.startRunning("o1")
	ctx := f.ctx
	c := f.c
	calls := map[string]func() error{
		"ListInstances":         func() error { _, err := c.ListInstances(ctx); return err },
		"ListInstancesByStatus": func() error { _, err := c.ListInstancesByStatus(ctx, provider.StatusRunning); return err },
		"InstanceInfo":          func() error { _, err := c.InstanceInfo(ctx, "o1"); return err },
		"ExecutionInfo":         func() error { _, err := c.ExecutionInfo(ctx, "o1", 1); return err },
		"ListExecutions":        func() error { _, err := c.ListExecutions(ctx, "o1"); return err },
		"History":               func() error { _, err := c.History(ctx, "o1", 0); return err },
		"SystemMetrics":         func() error { _, err := c.SystemMetrics(ctx); return err },
		"QueueDepths":           func() error { _, err := c.QueueDepths(ctx); return err },
		"InstanceTree":          func() error { _, err := c.InstanceTree(ctx, "o1"); return err },
		"DeleteInstance":        func() error { _, err := c.DeleteInstance(ctx, "o1", true); return err },
		"DeleteInstanceBulk":    func() error { _, err := c.DeleteInstanceBulk(ctx, provider.InstanceFilter{}); return err },
		"PruneExecutions":       func() error { _, err := c.PruneExecutions(ctx, "o1", provider.PruneOptions{}); return err },
		"PruneExecutionsBulk": func() error {
			_, err := c.PruneExecutionsBulk(ctx, provider.InstanceFilter{}, provider.PruneOptions{})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrManagementNotAvailable) {
			t.Errorf("%s: %v; want ErrManagementNotAvailable", name, err)
		}
	}
	// The core API still works, and nothing was deleted.
	if s := f.status("o1"); s.State != StateRunning {
		t.Errorf("Status = %v; want Running", s.State)
	}
}

func TestClientRejectsInvalidInput(t *testing.T) {
	f := newClientFixture(t, true)
	ctx, c := f.ctx, f.c
	calls := map[string]func() error{
		"StartOrchestration/id":   func() error { return c.StartOrchestration(ctx, "", "Greet", nil) },
		"StartOrchestration/name": func() error { return c.StartOrchestration(ctx, "o1", "", nil) },
		"StartOrchestration/input": func() error {
			return c.StartOrchestration(ctx, "o1", "Greet", make(chan int))
		},
		"RaiseEvent/id":        func() error { return c.RaiseEvent(ctx, "", "e", nil) },
		"RaiseEvent/name":      func() error { return c.RaiseEvent(ctx, "o1", "", nil) },
		"RaiseEvent/data":      func() error { return c.RaiseEvent(ctx, "o1", "e", func() {}) },
		"EnqueueEvent/id":      func() error { return c.EnqueueEvent(ctx, "", "q", nil) },
		"EnqueueEvent/queue":   func() error { return c.EnqueueEvent(ctx, "o1", "", nil) },
		"CancelInstance/id":    func() error { return c.CancelInstance(ctx, "", "why") },
		"Status/id":            func() error { _, err := c.Status(ctx, ""); return err },
		"WaitForCompletion/id": func() error { _, err := c.WaitForCompletion(ctx, ""); return err },
		"WaitForStatusChange":  func() error { _, err := c.WaitForStatusChange(ctx, "", 0); return err },
		"KVValue/id":           func() error { _, _, err := c.KVValue(ctx, "", "k"); return err },
		"KVValues/id":          func() error { _, err := c.KVValues(ctx, ""); return err },
		"WaitForKVValue/id":    func() error { _, err := c.WaitForKVValue(ctx, "", "k"); return err },
		"Stats/id":             func() error { _, err := c.Stats(ctx, ""); return err },
		"WaitForOutput/id":     func() error { _, err := WaitForOutput[string](ctx, c, ""); return err },
		"Orchestration.Start/id": func() error {
			return NewOrchestration("O", func(*OrchestrationContext, int) (int, error) { return 0, nil }).Start(ctx, c, "", 1)
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, provider.ErrInvalidInput) {
			t.Errorf("%s: %v; want ErrInvalidInput", name, err)
		}
	}
	if d, err := c.QueueDepths(ctx); err != nil || d.OrchestratorQueue != 0 {
		t.Errorf("QueueDepths = %+v, %v; want nothing enqueued", d, err)
	}
}

// failingProvider fails every history read.
type failingProvider struct{ *memprovider.Provider }

var errReadFailed = provider.Permanent(provider.OpRead, provider.ErrCorruptData, "stored event is damaged")

func (failingProvider) Read(context.Context, string) ([]provider.Event, error) {
	return nil, errReadFailed
}

func TestClientPassesProviderErrorsThrough(t *testing.T) {
	c := NewClient(plainProvider{failingProvider{memprovider.New()}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Status(ctx, "o1"); !errors.Is(err, provider.ErrCorruptData) {
		t.Errorf("Status: %v; want ErrCorruptData", err)
	}
	// A wait stops at the first provider error rather than running into ctx.
	var pe *provider.Error
	if _, err := c.WaitForCompletion(ctx, "o1"); !errors.As(err, &pe) || pe != errReadFailed || ctx.Err() != nil {
		t.Errorf("WaitForCompletion: %v; want the provider's error at once", err)
	}
	if _, err := c.WaitForStatusChange(ctx, "o1", 0); !errors.Is(err, provider.ErrCorruptData) {
		t.Errorf("WaitForStatusChange: %v; want ErrCorruptData", err)
	}
}

// TestClientRefusesInvalidUTF8InstanceIDs: a start or an event for an id
// that is not valid UTF-8 is invalid input, and nothing is queued.
func TestClientRefusesInvalidUTF8InstanceIDs(t *testing.T) {
	f := newClientFixture(t, true)
	if err := f.c.StartOrchestration(f.ctx, "bad-\xff", "Greet", "x"); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("StartOrchestration with an invalid UTF-8 id: %v; want ErrInvalidInput", err)
	}
	if err := f.c.RaiseEvent(f.ctx, "bad-\xfe", "go", "x"); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("RaiseEvent with an invalid UTF-8 id: %v; want ErrInvalidInput", err)
	}
	if item, err := f.mem.FetchOrchestrationItem(f.ctx, time.Second, 0, nil); err != nil || item != nil {
		t.Errorf("a fetch after the refused calls: %+v, %v; want nothing queued", item, err)
	}
}
