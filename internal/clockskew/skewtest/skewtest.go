// Package skewtest checks the clock-skew measure of package clockskew in
// the tests of the packages that keep one (dynamo, locks, jobs).
package skewtest

import (
	"context"
	"fmt"
	"log/slog"
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
// its [Warnings.Logger] as the component's Logger. It is safe for
// concurrent use; its zero value is ready to use.
type Warnings struct {
	mu    sync.Mutex
	lines []string
}

// Logger returns a logger that keeps the records that are clock-skew
// warnings (their message holds "this process's clock is") and drops the
// others.
func (w *Warnings) Logger() *slog.Logger {
	return slog.New(warningsHandler{w: w})
}

// Lines returns the warnings kept so far, each as its message followed by
// its attributes (" key=value" each).
func (w *Warnings) Lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// warningsHandler is the handler of [Warnings.Logger].
type warningsHandler struct {
	w     *Warnings
	attrs []slog.Attr
}

func (warningsHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h warningsHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "this process's clock is") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.w.lines = append(h.w.lines, b.String())
	return nil
}

func (h warningsHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)
	return h
}

func (h warningsHandler) WithGroup(string) slog.Handler { return h }
