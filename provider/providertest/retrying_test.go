package providertest_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
	"github.com/duradyn/duradyn/provider/providertest"
)

// flaky fails the first calls of some methods, as a provider under
// injected faults does, and records the arguments of every ack.
type flaky struct {
	*memprovider.Provider
	mu sync.Mutex
	// failures maps a method name to the errors its next calls return,
	// in order; a call with none left goes through.
	failures map[string][]error
	// calls counts the calls of each method.
	calls map[string]int
	// acks holds the token and commit of every AckOrchestrationItem call.
	acks []ackCall
	// polls holds the poll timeout of every FetchOrchestrationItem call.
	polls []time.Duration
}

type ackCall struct {
	token  string
	commit provider.TurnCommit
}

func newFlaky() *flaky {
	return &flaky{Provider: memprovider.New(), failures: map[string][]error{}, calls: map[string]int{}}
}

// fail makes the next n calls of method return err.
func (f *flaky) fail(method string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures[method] = append(f.failures[method], err)
	}
}

// call counts a call of method and returns the error it must fail with.
func (f *flaky) call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if errs := f.failures[method]; len(errs) > 0 {
		f.failures[method] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *flaky) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *flaky) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	f.mu.Lock()
	f.polls = append(f.polls, pollTimeout)
	f.mu.Unlock()
	if err := f.call("FetchOrchestrationItem"); err != nil {
		return nil, err
	}
	return f.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
}

func (f *flaky) AckOrchestrationItem(ctx context.Context, lockToken string, commit provider.TurnCommit) error {
	f.mu.Lock()
	f.acks = append(f.acks, ackCall{lockToken, commit})
	f.mu.Unlock()
	if err := f.call("AckOrchestrationItem"); err != nil {
		return err
	}
	return f.Provider.AckOrchestrationItem(ctx, lockToken, commit)
}

func (f *flaky) ListInstances(ctx context.Context) ([]string, error) {
	if err := f.call("ListInstances"); err != nil {
		return nil, err
	}
	return f.Provider.ListInstances(ctx)
}

func (f *flaky) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	if err := f.call("KVValue"); err != nil {
		return "", false, err
	}
	return f.Provider.KVValue(ctx, instance, key)
}

var (
	errThrottled = provider.Retryable("op", nil, "throttled")
	errBadInput  = provider.Permanent("op", provider.ErrInvalidInput, "bad input")
)

// fastRetries keeps the tests' backoffs short.
var fastRetries = providertest.RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}

func TestRetryingRetriesAckWithSameTokenAndCommit(t *testing.T) {
	ctx := t.Context()
	f := newFlaky()
	p := providertest.Retrying(f, fastRetries)
	start := provider.StartOrchestrationItem{Instance: "i", Orchestration: "O", Input: "{}", ExecutionID: 1}
	if err := p.EnqueueForOrchestrator(ctx, start, 0); err != nil {
		t.Fatal(err)
	}

	f.fail("FetchOrchestrationItem", 2, errThrottled)
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil {
		t.Fatalf("FetchOrchestrationItem after two retryable failures = %v, %v; want the item", item, err)
	}
	if n := f.count("FetchOrchestrationItem"); n != 3 {
		t.Errorf("FetchOrchestrationItem was called %d times, want 3", n)
	}

	commit := provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{{
		EventID: 1, InstanceID: "i", ExecutionID: 1, Kind: provider.OrchestrationStarted{Name: "O", Version: "1", Input: "{}"},
	}}}
	f.fail("AckOrchestrationItem", 3, errThrottled)
	if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); err != nil {
		t.Fatalf("AckOrchestrationItem after three retryable failures: %v", err)
	}
	if len(f.acks) != 4 {
		t.Fatalf("AckOrchestrationItem was called %d times, want 4", len(f.acks))
	}
	for i, a := range f.acks {
		if a.token != item.LockToken || !reflect.DeepEqual(a.commit, commit) {
			t.Errorf("ack %d: token %q and commit %+v, want the first call's", i+1, a.token, a.commit)
		}
	}
	h, err := p.Read(ctx, "i")
	if err != nil || len(h) != 1 {
		t.Fatalf("Read after the retried ack = %d events, %v; want the one committed event", len(h), err)
	}
}

func TestRetryingStopsOnPermanentErrorsAndAfterAttempts(t *testing.T) {
	ctx := t.Context()
	f := newFlaky()
	p := providertest.Retrying(f, fastRetries)

	f.fail("KVValue", 1, errBadInput)
	if _, _, err := p.KVValue(ctx, "i", "k"); !errors.Is(err, provider.ErrInvalidInput) {
		t.Errorf("KVValue with a permanent error: got %v, want it returned", err)
	}
	if n := f.count("KVValue"); n != 1 {
		t.Errorf("a permanent error was retried: %d calls, want 1", n)
	}

	f.fail("ListInstances", 10, errThrottled)
	admin, ok := provider.AdminOf(p)
	if !ok {
		t.Fatal("the wrapper of a provider with Admin has no Admin")
	}
	_, err := admin.ListInstances(ctx)
	if !errors.Is(err, errThrottled) || !provider.IsRetryable(err) {
		t.Errorf("ListInstances failing every time: got %v, want the last retryable error", err)
	}
	if n := f.count("ListInstances"); n != fastRetries.Attempts {
		t.Errorf("ListInstances was called %d times, want %d (the policy's attempts)", n, fastRetries.Attempts)
	}
}

func TestRetryingStopsWhenContextEnds(t *testing.T) {
	f := newFlaky()
	p := providertest.Retrying(f, providertest.RetryPolicy{Attempts: 100, BaseDelay: time.Second, MaxDelay: time.Second})
	f.fail("KVValue", 100, errThrottled)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := p.KVValue(ctx, "i", "k")
	if !errors.Is(err, errThrottled) {
		t.Errorf("KVValue cut off by its context: got %v, want the last error", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("KVValue took %v after its context ended during a 0.5-1s backoff", elapsed)
	}
	if n := f.count("KVValue"); n != 1 {
		t.Errorf("KVValue was called %d times, want 1 (the context ended during the first backoff)", n)
	}
}

func TestRetryingSpendsPollTimeoutAcrossAttempts(t *testing.T) {
	ctx := t.Context()
	f := newFlaky()
	p := providertest.Retrying(f, providertest.RetryPolicy{Attempts: 3, BaseDelay: 200 * time.Millisecond, MaxDelay: 200 * time.Millisecond})
	f.fail("FetchOrchestrationItem", 1, errThrottled)
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 300*time.Millisecond, nil)
	if err != nil || item != nil {
		t.Fatalf("FetchOrchestrationItem of an empty queue = %v, %v; want nothing", item, err)
	}
	// The first attempt failed at once and the backoff took at least
	// 100ms, so the retry may wait for at most the 200ms left.
	if len(f.polls) != 2 || f.polls[0] != 300*time.Millisecond || f.polls[1] > 200*time.Millisecond {
		t.Errorf("poll timeouts passed = %v, want 300ms and then at most the 200ms left of it", f.polls)
	}
}

// adminOnly and describerOnly expose one optional interface of memprovider
// each.
type (
	adminOnly struct {
		provider.Provider
		provider.Admin
	}
	describerOnly struct {
		provider.Provider
		provider.Describer
	}
	providerOnly struct{ provider.Provider }
)

func TestRetryingKeepsExactlyTheOptionalInterfaces(t *testing.T) {
	mem := memprovider.New()
	tests := []struct {
		name                 string
		p                    provider.Provider
		wantAdmin, wantDescr bool
	}{
		{"both", mem, true, true},
		{"admin only", adminOnly{mem, mem}, true, false},
		{"describer only", describerOnly{mem, mem}, false, true},
		{"neither", providerOnly{mem}, false, false},
	}
	for _, tc := range tests {
		w := providertest.Retrying(tc.p, providertest.RetryPolicy{})
		if _, ok := provider.AdminOf(w); ok != tc.wantAdmin {
			t.Errorf("%s: wrapper has Admin = %v, want %v", tc.name, ok, tc.wantAdmin)
		}
		_, ok := w.(provider.Describer)
		if ok != tc.wantDescr {
			t.Errorf("%s: wrapper has Describer = %v, want %v", tc.name, ok, tc.wantDescr)
		}
		if ok && (provider.NameOf(w) != "memprovider" || provider.VersionOf(w) != memprovider.Version) {
			t.Errorf("%s: wrapper describes itself as %s %s, want the wrapped provider's", tc.name, provider.NameOf(w), provider.VersionOf(w))
		}
		if u, ok := w.(interface{ Unwrap() provider.Provider }); !ok || u.Unwrap() != tc.p {
			t.Errorf("%s: Unwrap does not return the wrapped provider", tc.name)
		}
	}
}

func TestRetryingFactoryGivesHooksTheWrappedProvider(t *testing.T) {
	mem := memprovider.New()
	var corrupted, counted provider.Provider
	f := providertest.RetryingFactory(providertest.Factory{
		NewProvider:     func(t *testing.T) provider.Provider { return mem },
		CorruptHistory:  func(t *testing.T, p provider.Provider, instance string) { corrupted = p },
		MaxAttemptCount: func(t *testing.T, p provider.Provider, instance string) uint32 { counted = p; return 0 },
	}, providertest.RetryPolicy{})
	p := f.NewProvider(t)
	if p == provider.Provider(mem) {
		t.Fatal("RetryingFactory's NewProvider returned the provider unwrapped")
	}
	f.CorruptHistory(t, p, "i")
	f.MaxAttemptCount(t, p, "i")
	if corrupted != provider.Provider(mem) || counted != provider.Provider(mem) {
		t.Errorf("hooks got %T and %T, want the provider the factory made", corrupted, counted)
	}
}

// DeleteInstanceBulk fails its next calls part-way, as a provider under
// injected faults can: it deletes one instance and returns that with the
// error.
func (f *flaky) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	if err := f.call("DeleteInstanceBulk"); err != nil {
		one := filter
		one.Limit = 1
		res, derr := f.Provider.DeleteInstanceBulk(ctx, one)
		if derr != nil {
			return res, derr
		}
		return res, err
	}
	return f.Provider.DeleteInstanceBulk(ctx, filter)
}

// completed makes instance a completed root instance of p.
func completed(ctx context.Context, t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	v := "1.0.0"
	if err := p.EnqueueForOrchestrator(ctx, provider.StartOrchestrationItem{Instance: instance, Orchestration: "O", Version: &v, Input: "{}", ExecutionID: 1}, 0); err != nil {
		t.Fatal(err)
	}
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	if err != nil || item == nil || item.Instance != instance {
		t.Fatalf("fetch %s: %+v, %v", instance, item, err)
	}
	out := "done"
	err = p.AckOrchestrationItem(ctx, item.LockToken, provider.TurnCommit{
		ExecutionID: 1,
		HistoryDelta: []provider.Event{
			{EventID: 1, InstanceID: instance, ExecutionID: 1, Kind: provider.OrchestrationStarted{Name: "O", Version: v, Input: "{}"}},
			{EventID: 2, InstanceID: instance, ExecutionID: 1, Kind: provider.OrchestrationCompleted{Output: out}},
		},
		Metadata: provider.ExecutionMetadata{OrchestrationName: "O", OrchestrationVersion: v, Status: provider.StatusCompleted, Output: &out},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A bulk delete that failed part-way is retried for what is left of its
// Limit, and the results of every attempt are added up.
func TestRetryingBulkDeleteCountsPartialAttempts(t *testing.T) {
	ctx := t.Context()
	f := newFlaky()
	for _, id := range []string{"a", "b", "c", "d"} {
		completed(ctx, t, f, id)
	}
	f.fail("DeleteInstanceBulk", 1, errThrottled)
	admin, _ := provider.AdminOf(providertest.Retrying(f, fastRetries))
	res, err := admin.DeleteInstanceBulk(ctx, provider.InstanceFilter{Limit: 3})
	if err != nil || res.InstancesDeleted != 3 {
		t.Fatalf("DeleteInstanceBulk(Limit 3) with a first attempt that deleted 1 and failed: %+v, %v; want 3 deleted", res, err)
	}
	if left, err := f.ListInstances(ctx); err != nil || len(left) != 1 {
		t.Fatalf("instances left: %v, %v; want 1", left, err)
	}
	if n := f.count("DeleteInstanceBulk"); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}
