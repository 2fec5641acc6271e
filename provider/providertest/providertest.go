// Package providertest is the conformance suite for implementations of
// [provider.Provider] and [provider.Admin].
//
// [Run] executes every behavioural test of duroxide's provider validation
// suite (221 tests in 19 categories, named in Go style: duroxide's
// test_lock_expires_after_timeout is LockExpiration/LockExpiresAfterTimeout)
// plus dynoxide's own checks, as named subtests:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Factory{
//			NewProvider: func(t *testing.T) provider.Provider { return newIsolatedProvider(t) },
//			LockTimeout: time.Second,
//		})
//	}
//
// Run one category or test with -run, e.g. -run 'Conformance/Sessions/'.
//
// What the suite guarantees: a failure is a real contract violation (no false
// positives) provided each provider the factory returns is isolated and the
// machine is not so overloaded that a lease of [Factory.LockTimeout] expires
// between two consecutive calls. Passing is evidence, not proof: run it under
// the race detector, and more than once for providers with distributed state.
// Some tests wait for leases to expire, so the suite takes as long as its
// slowest tests; tests that own their provider run in parallel, so raise
// -parallel (16 is plenty) to keep the wall time to tens of seconds.
//
// The suite depends only on the standard library and package provider.
package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/provider"
)

// Factory supplies the providers under test and describes them.
type Factory struct {
	// NewProvider returns a provider whose state no other call's provider
	// sees (a fresh table, key prefix or in-memory store). The suite calls
	// it once per test and shares the result between the test's goroutines.
	// Register clean-up with t.Cleanup. Required.
	NewProvider func(t *testing.T) provider.Provider

	// LockTimeout is the lock timeout the expiry tests use and wait out.
	// Zero means 5s. Shorter is faster; one second works for local stores.
	LockTimeout time.Duration

	// ShortPollThreshold is the most an empty fetch of a short-polling
	// provider may take. Zero means 100ms; providers behind a network use
	// more.
	ShortPollThreshold time.Duration

	// LongPolling reports that the provider honours pollTimeout by waiting
	// for work. It selects the long-poll variants of the long-polling tests
	// instead of the short-poll ones.
	LongPolling bool

	// CorruptHistory overwrites every stored history event of instance in
	// p with data that cannot be decoded. The corruption tests skip when it
	// is nil.
	CorruptHistory func(t *testing.T, p provider.Provider, instance string)

	// MaxAttemptCount returns the highest attempt count over instance's
	// orchestrator-queue messages in p. The tests that read it skip when it
	// is nil.
	MaxAttemptCount func(t *testing.T, p provider.Provider, instance string) uint32
}

// testTimeout bounds one test, so a provider that hangs fails that test
// instead of stalling the run.
const testTimeout = 2 * time.Minute

// testCase is one named conformance test.
type testCase struct {
	name string
	run  func(t *testing.T, s *suite)
}

// category groups the tests of one duroxide validation module (or one area
// of dynoxide's own checks).
type category struct {
	name  string
	tests []testCase
}

// categories lists every test Run executes, in order.
func categories() []category {
	return []category{
		{"Atomicity", atomicityTests()},
		{"BulkDeletion", bulkDeletionTests()},
		{"Cancellation", cancellationTests()},
		{"CapabilityFiltering", capabilityFilteringTests()},
		{"CustomStatus", customStatusTests()},
		{"Deletion", deletionTests()},
		{"ErrorHandling", errorHandlingTests()},
		{"InstanceCreation", instanceCreationTests()},
		{"InstanceLocking", instanceLockingTests()},
		{"KVStore", kvStoreTests()},
		{"LockExpiration", lockExpirationTests()},
		{"LongPolling", longPollingTests()},
		{"Management", managementTests()},
		{"MultiExecution", multiExecutionTests()},
		{"PoisonMessage", poisonMessageTests()},
		{"Prune", pruneTests()},
		{"QueueSemantics", queueSemanticsTests()},
		{"Sessions", sessionsTests()},
		{"TagFiltering", tagFilteringTests()},
		{"InputValidation", inputValidationTests()},
	}
}

// Run executes the conformance suite against the providers f makes. Every
// test gets its own provider and runs in parallel with the others.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.NewProvider == nil {
		t.Fatal("providertest: Factory.NewProvider is required")
	}
	s := &suite{f: f}
	for _, c := range categories() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range c.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, s)
				})
			}
		})
	}
}

// suite is the state shared by the tests of one Run.
type suite struct {
	f Factory
}

// provider returns a fresh provider for t.
func (s *suite) provider(t *testing.T) provider.Provider {
	t.Helper()
	p := s.f.NewProvider(t)
	if p == nil {
		t.Fatal("providertest: Factory.NewProvider returned nil")
	}
	return p
}

// admin returns p's management capability, or skips t when it has none.
func (s *suite) admin(t *testing.T, p provider.Provider) provider.Admin {
	t.Helper()
	a, ok := provider.AdminOf(p)
	if !ok {
		t.Skip("provider does not implement provider.Admin")
	}
	return a
}

// lockTimeout is the factory's lock timeout, 5s by default.
func (s *suite) lockTimeout() time.Duration {
	if s.f.LockTimeout > 0 {
		return s.f.LockTimeout
	}
	return 5 * time.Second
}

// shortPollThreshold is the factory's short-poll threshold, 100ms by default.
func (s *suite) shortPollThreshold() time.Duration {
	if s.f.ShortPollThreshold > 0 {
		return s.f.ShortPollThreshold
	}
	return 100 * time.Millisecond
}

// corruptHistory corrupts instance's stored history, or skips t.
func (s *suite) corruptHistory(t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	if s.f.CorruptHistory == nil {
		t.Skip("Factory.CorruptHistory is nil")
	}
	s.f.CorruptHistory(t, p, instance)
}

// maxAttemptCount reads instance's highest queue attempt count, or skips t.
func (s *suite) maxAttemptCount(t *testing.T, p provider.Provider, instance string) uint32 {
	t.Helper()
	if s.f.MaxAttemptCount == nil {
		t.Skip("Factory.MaxAttemptCount is nil")
	}
	return s.f.MaxAttemptCount(t, p, instance)
}

// testContext returns a context for one test, cancelled at its end or after
// testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
