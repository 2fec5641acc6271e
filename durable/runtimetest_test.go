package durable_test

import (
	"testing"

	"github.com/duradyn/duradyn/durable/runtimetest"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// TestRuntimeSuite runs the runtime's end-to-end suite on memprovider.
func TestRuntimeSuite(t *testing.T) {
	runtimetest.Run(t, runtimetest.Factory{
		New:      func(testing.TB) provider.Provider { return memprovider.New() },
		Parallel: true,
	})
}
