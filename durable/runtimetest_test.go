package durable_test

import (
	"testing"

	"github.com/dynoxide/dynoxide/durable/runtimetest"
	"github.com/dynoxide/dynoxide/provider"
	"github.com/dynoxide/dynoxide/provider/memprovider"
)

// TestRuntimeSuite runs the runtime's end-to-end suite on memprovider.
func TestRuntimeSuite(t *testing.T) {
	runtimetest.Run(t, runtimetest.Factory{
		New:      func(testing.TB) provider.Provider { return memprovider.New() },
		Parallel: true,
	})
}
