package providertest_test

import (
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/provider"
	"github.com/dynoxide/dynoxide/provider/memprovider"
	"github.com/dynoxide/dynoxide/provider/providertest"
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
		})
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { ... }
}
