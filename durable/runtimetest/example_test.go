package runtimetest_test

import (
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/runtimetest"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// A provider's tests run the runtime's end-to-end suite from one test:
// every test gets a fresh provider from New and starts its runtimes on it.
// Here the in-memory provider stands in for the provider under test; a
// provider whose requests are slow next to the suite's short leases
// scales them and lengthens the runtimes' timeouts.
func ExampleRun() {
	testRuntime := func(t *testing.T) {
		runtimetest.Run(t, runtimetest.Factory{
			New:        func(testing.TB) provider.Provider { return memprovider.New() },
			LeaseScale: 2,
			Options: func(o *durable.Options) {
				o.ShutdownTimeout = 20 * time.Second
			},
			Parallel: true,
		})
	}
	_ = testRuntime // in a _test.go file: func TestRuntime(t *testing.T) { ... }
}
