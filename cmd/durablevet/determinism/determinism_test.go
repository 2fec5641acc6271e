package determinism_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/duradyn/duradyn/cmd/durablevet/determinism"
)

// TestAnalyzer checks every rule, the negative cases and the ignore
// directive against the want comments of testdata/src/orch.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "orch")
}

// TestRuntimeNotChecked checks that the runtime package, which implements
// the deterministic primitives with goroutines and channels, is not
// reported.
func TestRuntimeNotChecked(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "github.com/duradyn/duradyn/durable")
}
