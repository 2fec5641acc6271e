package providertest_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
	"github.com/duradyn/duradyn/provider/providertest"
)

// An implementation runs the whole suite from one test in its own package.
// Here the in-memory provider stands in for the implementation under test:
// each call of NewProvider returns a fresh, isolated store.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		providertest.Run(t, providertest.Factory{
			NewProvider: func(t *testing.T) provider.Provider { return memprovider.New() },
			LockTimeout: time.Second,
			LongPolling: true,
			// The hooks reach into the provider's storage; without them,
			// the corruption tests skip only because this says so.
			Lacks: []providertest.Capability{providertest.CapCorruptHistory, providertest.CapMaxAttemptCount},
		})
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { ... }
}

// A provider without the management capability, tested through a wrapper
// that retries as a runtime does: the factory declares what is missing, so
// the tests that need it skip instead of failing, and RetryingFactory wraps
// every provider it makes.
func ExampleRetryingFactory() {
	type withoutAdmin struct{ provider.Provider }
	testConformance := func(t *testing.T) {
		providertest.Run(t, providertest.RetryingFactory(providertest.Factory{
			NewProvider: func(t *testing.T) provider.Provider { return withoutAdmin{memprovider.New()} },
			LockTimeout: time.Second,
			LongPolling: true,
			Lacks: []providertest.Capability{
				providertest.CapAdmin, providertest.CapCorruptHistory, providertest.CapMaxAttemptCount,
			},
		}, providertest.RetryPolicy{}))
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { ... }
}
