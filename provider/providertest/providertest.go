// Package providertest is the conformance suite for implementations of
// [provider.Provider] and [provider.Admin].
//
// [Run] executes every behavioural test of duroxide's provider validation
// suite (221 tests in 19 categories, named in Go style: duroxide's
// test_lock_expires_after_timeout is LockExpiration/LockExpiresAfterTimeout)
// plus duradyn's own checks, as named subtests:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Factory{
//			NewProvider:     func(t *testing.T) provider.Provider { return newIsolatedProvider(t) },
//			LockTimeout:     time.Second,
//			CorruptHistory:  corruptStoredHistory, // hooks into the provider's storage
//			MaxAttemptCount: maxStoredAttemptCount,
//		})
//	}
//
// Run one category or test with -run, e.g. -run 'Conformance/Sessions/'.
// Each category holds the ports of duroxide's tests followed by duradyn's
// additions to the same area (InputValidation holds additions only).
//
// A provider whose listings and work discovery lag its writes (an
// eventually consistent index) declares by how much in
// [Factory.Convergence]; the checks that a write shows then await it for
// that long, and no longer.
//
// A provider without [provider.Admin], or a factory without one of the
// hooks, declares it in [Factory.Lacks]; the tests that need it then skip.
// Anything missing that is not declared fails the tests that need it, so a
// run without failures has run every test the declarations allow.
//
// What the suite guarantees: a failure is a real contract violation (no false
// positives) provided each provider the factory returns is isolated, the
// provider's clock is within 50ms of the test's, and no single step of a test
// stalls for 30 seconds (the lease the tests hold where expiry is not their
// subject). Observations of leases and delays are counted only when they
// fall inside the window they test, and are repeated when the scheduler
// pushes them out (see [Run]), so load makes the suite slower rather than
// wrong. Passing is evidence, not proof: run it under the race detector, and
// more than once for providers with distributed state. Some tests wait for
// leases to expire, so the suite takes as long as its slowest tests; tests
// that own their provider run in parallel, so raise -parallel (16 is plenty)
// to keep the wall time to tens of seconds.
//
// [Retrying] wraps a provider so that calls failing with retryable errors
// are retried as a runtime would; [RetryingFactory] runs the suite through
// it, for providers tested under injected faults.
//
// The suite depends only on the standard library and package provider.
package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Factory supplies the providers under test and describes them.
type Factory struct {
	// NewProvider returns a provider whose state no other call's provider
	// sees (a fresh table, key prefix or in-memory store). The suite calls
	// it once per test (more often for a test that repeats a timing
	// scenario, see [Run]) and shares the result between the test's
	// goroutines. Register clean-up with t.Cleanup. Required.
	NewProvider func(t *testing.T) provider.Provider

	// LockTimeout is the lock timeout the expiry tests use and wait out.
	// Zero means 5s. Shorter is faster; one second works for local stores.
	LockTimeout time.Duration

	// ShortPollThreshold is the most an empty fetch of a short-polling
	// provider may take. Zero means 100ms; providers behind a network use
	// more. It must be below the 500ms poll timeout the short-poll tests
	// pass, or those tests could not tell a provider that waits for work
	// from one that returns at once; Run fails on a threshold that is not.
	ShortPollThreshold time.Duration

	// LongPolling reports that the provider honours pollTimeout by waiting
	// for work. It selects the long-poll variants of the long-polling tests
	// instead of the short-poll ones.
	LongPolling bool

	// CorruptHistory overwrites every stored history event of instance in
	// p with data that cannot be decoded. The corruption tests need it: when
	// it is nil they skip if Lacks declares [CapCorruptHistory] and fail
	// otherwise.
	CorruptHistory func(t *testing.T, p provider.Provider, instance string)

	// MaxAttemptCount returns the highest attempt count over instance's
	// orchestrator-queue messages in p. The tests that read it skip when it
	// is nil and Lacks declares [CapMaxAttemptCount], and fail when it is
	// nil otherwise.
	MaxAttemptCount func(t *testing.T, p provider.Provider, instance string) uint32

	// Convergence is the longest the provider's listings and work
	// discovery may lag its writes: a provider that answers them from an
	// eventually consistent source (such as a DynamoDB global secondary
	// index) declares how soon every read reflects every earlier write.
	// Zero, for providers whose reads are current, keeps every check
	// exact: an observation right after a write must show it. With a
	// bound B, a check that a listing, gauge or count (ListInstances*,
	// QueueDepths, SystemMetrics, session renewal counts) shows a write,
	// or that work became available (after an enqueue, an abandon, a
	// lease's expiry), reads again until it does, for up to B; a read
	// begun after B must show it, so the check is an eventual-consistency
	// assertion, not a weaker one. Checks that something is not visible
	// or not held stay exact: lag never shows a write early. B also
	// relaxes the order of work whose order only such a source reflects
	// (see the tests). Negative bounds are invalid.
	Convergence time.Duration

	// Lacks declares the capabilities the providers (or this factory) do
	// not have. A test that needs a declared capability skips, naming it;
	// a test that finds a capability missing that Lacks does not declare
	// fails, naming the fix. So a wrapper that drops [provider.Admin], or a
	// factory that forgot a hook, cannot pass the suite by skipping. A
	// declaration must be true: a provider that implements [provider.Admin]
	// while Lacks holds [CapAdmin], or a hook set while Lacks declares it
	// missing, fails the tests. Nil declares nothing missing.
	Lacks []Capability
}

// Capability names a part of the contract, beyond [provider.Provider], that
// some tests need. [Factory.Lacks] lists those a provider does not have.
type Capability string

// The capabilities the suite knows.
const (
	// CapAdmin is the management capability: the provider implements
	// [provider.Admin]. The Deletion, BulkDeletion and Prune tests, most
	// Management tests and some KV, Cancellation and CapabilityFiltering
	// tests need it.
	CapAdmin Capability = "Admin"
	// CapCorruptHistory is [Factory.CorruptHistory], which the corruption
	// tests of ErrorHandling and CapabilityFiltering need.
	CapCorruptHistory Capability = "CorruptHistory"
	// CapMaxAttemptCount is [Factory.MaxAttemptCount], which the
	// deserialization-error tests of CapabilityFiltering read last.
	CapMaxAttemptCount Capability = "MaxAttemptCount"
)

// capabilities lists every Capability, for validating Factory.Lacks.
var capabilities = []Capability{CapAdmin, CapCorruptHistory, CapMaxAttemptCount}

// validate reports what makes f unusable: a missing NewProvider, an unknown
// or contradicted declaration in Lacks, or a short-poll threshold the
// short-poll tests could not fail.
func (f Factory) validate() error {
	var errs []error
	if f.NewProvider == nil {
		errs = append(errs, errors.New("Factory.NewProvider is required"))
	}
	if f.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("Factory.LockTimeout is negative (%v)", f.LockTimeout))
	}
	if f.Convergence < 0 {
		errs = append(errs, fmt.Errorf("Factory.Convergence is negative (%v)", f.Convergence))
	}
	if f.ShortPollThreshold < 0 {
		errs = append(errs, fmt.Errorf("Factory.ShortPollThreshold is negative (%v)", f.ShortPollThreshold))
	}
	if f.ShortPollThreshold >= longPollingPollTimeout {
		errs = append(errs, fmt.Errorf("Factory.ShortPollThreshold %v is not below the %v poll timeout of the short-poll tests, so they could not fail: measure what an empty fetch of the provider takes and set the threshold between that and %v",
			f.ShortPollThreshold, longPollingPollTimeout, longPollingPollTimeout))
	}
	for _, c := range f.Lacks {
		if !slices.Contains(capabilities, c) {
			errs = append(errs, fmt.Errorf("Factory.Lacks holds unknown capability %q (known: %v)", c, capabilities))
		}
	}
	if f.CorruptHistory != nil && f.lacks(CapCorruptHistory) {
		errs = append(errs, errors.New("Factory.CorruptHistory is set but Factory.Lacks declares CapCorruptHistory missing"))
	}
	if f.MaxAttemptCount != nil && f.lacks(CapMaxAttemptCount) {
		errs = append(errs, errors.New("Factory.MaxAttemptCount is set but Factory.Lacks declares CapMaxAttemptCount missing"))
	}
	return errors.Join(errs...)
}

// lacks reports whether f declares c missing.
func (f Factory) lacks(c Capability) bool { return slices.Contains(f.Lacks, c) }

// testTimeout bounds one test, so a provider that hangs fails that test
// instead of stalling the run.
const testTimeout = 2 * time.Minute

// testCase is one named conformance test.
type testCase struct {
	name string
	run  func(t *testing.T, s *suite)
}

// category groups the tests of one duroxide validation module (or one area
// of duradyn's own checks). tests are the ports of duroxide's tests, in
// its order; additions are duradyn's own tests of the same area, which
// close gaps duroxide's suite leaves open. Both run under the category's
// name.
type category struct {
	name      string
	tests     []testCase
	additions []testCase
}

// categories lists every test Run executes, in order.
func categories() []category {
	return []category{
		{name: "Atomicity", tests: atomicityTests()},
		{name: "BulkDeletion", tests: bulkDeletionTests()},
		{name: "Cancellation", tests: cancellationTests()},
		{name: "CapabilityFiltering", tests: capabilityFilteringTests()},
		{name: "CustomStatus", tests: customStatusTests()},
		{name: "Deletion", tests: deletionTests()},
		{name: "ErrorHandling", tests: errorHandlingTests()},
		{name: "InstanceCreation", tests: instanceCreationTests()},
		{name: "InstanceLocking", tests: instanceLockingTests()},
		{name: "KVStore", tests: kvStoreTests(), additions: kvStoreAdditions()},
		{name: "LockExpiration", tests: lockExpirationTests(), additions: lockExpirationAdditions()},
		{name: "LongPolling", tests: longPollingTests()},
		{name: "Management", tests: managementTests(), additions: managementAdditions()},
		{name: "MultiExecution", tests: multiExecutionTests()},
		{name: "PoisonMessage", tests: poisonMessageTests()},
		{name: "Prune", tests: pruneTests()},
		{name: "QueueSemantics", tests: queueSemanticsTests(), additions: queueSemanticsAdditions()},
		{name: "Sessions", tests: sessionsTests()},
		{name: "TagFiltering", tests: tagFilteringTests()},
		{name: "InputValidation", additions: inputValidationTests()},
	}
}

// Run executes the conformance suite against the providers f makes. Every
// test gets its own provider and runs in parallel with the others.
//
// Timing: tests whose subject is a lease or a visibility delay observe it
// only from calls that lie wholly on one side of the instant they test (see
// the timing rule, above the constant longLease). When the scheduler pushes
// an observation across that instant, the test runs its scenario again on a
// fresh provider, a bounded number of times, and fails if no observation
// could be made. Run fails at once on a Factory it cannot use (see
// [Factory.Lacks] and [Factory.ShortPollThreshold]).
func Run(t *testing.T, f Factory) {
	t.Helper()
	if err := f.validate(); err != nil {
		t.Fatalf("providertest: %v", err)
	}
	s := &suite{f: f}
	for _, c := range categories() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range slices.Concat(c.tests, c.additions) {
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

// provider returns a fresh provider for t. It fails t when the provider
// implements [provider.Admin] although the factory declares it missing.
func (s *suite) provider(t *testing.T) provider.Provider {
	t.Helper()
	p := s.f.NewProvider(t)
	if p == nil {
		t.Fatal("providertest: Factory.NewProvider returned nil")
	}
	if _, ok := provider.AdminOf(p); ok && s.f.lacks(CapAdmin) {
		t.Fatalf("providertest: Factory.Lacks declares CapAdmin missing, but the provider (%T) implements provider.Admin: remove CapAdmin from Factory.Lacks", p)
	}
	return p
}

// missingAdmin is the failure of a test that needs provider.Admin from a
// provider without it that the factory did not declare.
const missingAdmin = "provider (%T) does not implement provider.Admin, and Factory.Lacks does not declare CapAdmin: " +
	"a wrapper must forward the optional interfaces of the provider it wraps; declare CapAdmin only for a provider that has no Admin"

// admin returns p's management capability. Without one it skips t when the
// factory declares CapAdmin missing, and fails t otherwise.
func (s *suite) admin(t *testing.T, p provider.Provider) provider.Admin {
	t.Helper()
	a, ok := provider.AdminOf(p)
	if ok {
		return a
	}
	if s.f.lacks(CapAdmin) {
		t.Skip("needs provider.Admin, which Factory.Lacks declares missing (CapAdmin)")
	}
	t.Fatalf(missingAdmin, p)
	return nil
}

// optionalAdmin returns p's management capability for a test that also
// checks through it when it is there. ok is false, and the test goes on
// without those checks, when the factory declares CapAdmin missing; a
// provider without Admin that the factory did not declare fails t.
func (s *suite) optionalAdmin(t *testing.T, p provider.Provider) (a provider.Admin, ok bool) {
	t.Helper()
	if a, ok := provider.AdminOf(p); ok {
		return a, true
	}
	if s.f.lacks(CapAdmin) {
		t.Log("provider.Admin is declared missing (CapAdmin): the checks made through it are left out")
		return nil, false
	}
	t.Fatalf(missingAdmin, p)
	return nil, false
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

// corruptHistory corrupts instance's stored history. Without the hook it
// skips t when the factory declares CapCorruptHistory missing, and fails t
// otherwise.
func (s *suite) corruptHistory(t *testing.T, p provider.Provider, instance string) {
	t.Helper()
	if s.f.CorruptHistory == nil {
		if s.f.lacks(CapCorruptHistory) {
			t.Skip("needs Factory.CorruptHistory, which Factory.Lacks declares missing (CapCorruptHistory)")
		}
		t.Fatal("Factory.CorruptHistory is nil and Factory.Lacks does not declare CapCorruptHistory: set the hook, or declare it missing")
	}
	s.f.CorruptHistory(t, p, instance)
}

// maxAttemptCount reads instance's highest queue attempt count. Without the
// hook it skips t when the factory declares CapMaxAttemptCount missing, and
// fails t otherwise.
func (s *suite) maxAttemptCount(t *testing.T, p provider.Provider, instance string) uint32 {
	t.Helper()
	if s.f.MaxAttemptCount == nil {
		if s.f.lacks(CapMaxAttemptCount) {
			t.Skip("needs Factory.MaxAttemptCount, which Factory.Lacks declares missing (CapMaxAttemptCount)")
		}
		t.Fatal("Factory.MaxAttemptCount is nil and Factory.Lacks does not declare CapMaxAttemptCount: set the hook, or declare it missing")
	}
	return s.f.MaxAttemptCount(t, p, instance)
}

// context returns the context of one test: cancelled at its end or after
// testTimeout, and carrying what the checks that await convergence need
// (see convergenceOf).
func (s *suite) context(t *testing.T) context.Context {
	return context.WithValue(testContext(t), convergenceKey{}, convergence{
		bound:       s.f.Convergence,
		longPolling: s.f.LongPolling,
	})
}

// testContext returns a context for one test, cancelled at its end or after
// testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
