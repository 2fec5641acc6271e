package testlog_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/duradyn/duradyn/internal/testlog"
)

// fakeT records what New asks of a test.
type fakeT struct {
	testing.TB
	lines    []string
	cleanups []func()
}

func (f *fakeT) Logf(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// TestNew: every level reaches t.Logf as one line, until the test's
// cleanups have run.
func TestNew(t *testing.T) {
	f := &fakeT{}
	l := testlog.New(f)
	l.Debug("locks: polling")
	l.Warn("dynamo: renewal failed; retrying", "instance", "order 1")
	for _, fn := range f.cleanups {
		fn()
	}
	l.Info("after the test")
	want := []string{"debug: locks: polling", `warning: dynamo: renewal failed; retrying instance="order 1"`}
	if !slices.Equal(f.lines, want) {
		t.Fatalf("logged %q, want %q", f.lines, want)
	}
	testlog.New(t).Info("testlog: through the real t.Logf", "ok", true)
}
