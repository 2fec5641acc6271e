// Package skewtest checks the clock-skew measure of package clockskew in
// the tests of the packages that keep one (dynamo, locks, jobs).
package skewtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Slack is how far outside its interval an estimate may put the true skew:
// the clocks a test shifts are read a little apart from the requests.
const Slack = 100 * time.Millisecond

// Check fails t unless the estimate of a ClockSkew method holds want
// within its interval (give or take [Slack]) and that interval is at most a
// second wide each way.
func Check(t testing.TB, what string, clockSkew func() (skew, uncertainty time.Duration, ok bool), want time.Duration) {
	t.Helper()
	skew, within, ok := clockSkew()
	if !ok || skew-within > want+Slack || skew+within < want-Slack || within > time.Second {
		t.Fatalf("ClockSkew of %s: %v ± %v (ok %v), want %v within the interval", what, skew, within, ok, want)
	}
}

// Warnings keeps the clock-skew warnings of what a component logs: pass
// its Logf as the component's. It is safe for concurrent use.
type Warnings struct {
	mu    sync.Mutex
	lines []string
}

// Logf keeps a line that is a clock-skew warning and drops the others.
func (w *Warnings) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.Contains(line, "this process's clock is") {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, line)
}

// Lines returns the warnings kept so far.
func (w *Warnings) Lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}
