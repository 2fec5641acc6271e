package determinism_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/duradyn/duradyn/cmd/durablevet/determinism"
)

// TestAnalyzer checks every rule of the statements, clocks, randomness and
// map ranges, the negative cases and the ignore directive against the want
// comments of testdata/src/orch. The tree is GOPATH-style, outside any
// module, so calls into package other are not followed.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "orch")
}

// TestRuntimeNotChecked checks that the runtime package, which implements
// the deterministic primitives with goroutines and channels, is not
// reported.
func TestRuntimeNotChecked(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "github.com/duradyn/duradyn/durable")
}

// shopPackages are the directories of the packages of the fixture module
// testdata/shop, the module of the rules that need one: calls across its
// packages, environment and file access, package-level state and
// ContinueAsNew. Its go.mod replaces the runtime with a stand-in and adds a
// second module, example.com/vendorlib.
var shopPackages = []string{"clock", "billing", "calls", "osaccess", "globals", "atomics", "continueasnew", "maprange"}

// shopRun holds the errors of the one analysistest run over the fixture
// module, which the tests below share: loading it from source is most of a
// run's cost.
var shopRun struct {
	once sync.Once
	errs []string
}

// recorder is an analysistest.Testing that keeps the errors.
type recorder struct {
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// checkShop runs the analyzer over every package of the fixture module once,
// checking its want comments, and fails t with the errors that concern the
// files of the packages in dirs, or no file of a known package (a load
// error, say).
func checkShop(t *testing.T, dirs ...string) {
	t.Helper()
	root := filepath.Join(analysistest.TestData(), "shop")
	shopRun.once.Do(func() {
		r := &recorder{}
		analysistest.Run(r, root, determinism.Analyzer, "./...")
		shopRun.errs = r.errs
	})
	in := func(e string, dirs []string) bool {
		for _, d := range dirs {
			if strings.Contains(e, filepath.Join(root, d)+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	for _, e := range shopRun.errs {
		if in(e, dirs) || !in(e, shopPackages) {
			t.Error(e)
		}
	}
}

// TestHelperFactsAcrossPackages checks the facts exported for the helpers
// of packages clock and billing: each names the construct, the chain of
// calls that reaches it (across two packages for billing.Due) and its file
// and line; deterministic helpers, a helper whose construct a directive
// suppresses and orchestrations get none.
func TestHelperFactsAcrossPackages(t *testing.T) {
	checkShop(t, "clock", "billing")
}

// TestCallsIntoOtherPackages checks that a call of a helper of another
// package of the module that reaches a construct is reported at the
// orchestration's call site, naming the chain, also from a helper of the
// orchestration's package; and that calls of deterministic helpers, of
// orchestrations of other packages and of another module's functions, and
// calls under a directive, are not.
func TestCallsIntoOtherPackages(t *testing.T) {
	checkShop(t, "calls")
}

// TestEnvironmentAndFileAccess checks the reports of os.Getenv,
// os.LookupEnv, os.Environ and the other environment reads, and of file
// system access through os, io/ioutil and path/filepath, in an
// orchestration and not in an activity.
func TestEnvironmentAndFileAccess(t *testing.T) {
	checkShop(t, "osaccess")
}

// TestPackageLevelWrites checks the reports of assignments, increments,
// range assignments, delete and clear on package-level variables (through
// fields, elements and pointers, of this package and another), and that
// reads, locals and shadowing locals are not reported.
func TestPackageLevelWrites(t *testing.T) {
	checkShop(t, "globals")
}

// TestAtomicOnPackageLevelState checks the reports of sync/atomic functions
// on a package-level variable and of methods of atomic types held in
// package-level variables, and that atomics on local state are not
// reported.
func TestAtomicOnPackageLevelState(t *testing.T) {
	checkShop(t, "atomics")
}

// TestDiscardedContinueAsNew checks the report of a ContinueAsNew whose
// error is dropped (call statement, assignment or declaration to _, defer,
// and in a function that is not an orchestration) and that a returned or
// checked error, or a call under a directive, is not reported.
func TestDiscardedContinueAsNew(t *testing.T) {
	checkShop(t, "continueasnew")
}

// TestOrderIndependentMapRange checks the documented false positive: a sum
// over a map's values is reported like any map range, and the
// //durablevet:ignore directive above the range silences it.
func TestOrderIndependentMapRange(t *testing.T) {
	checkShop(t, "maprange")
}
