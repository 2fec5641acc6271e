package linelog_test

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/internal/linelog"
)

func TestLines(t *testing.T) {
	var lines []string
	l := linelog.New(func(line string) { lines = append(lines, line) }, slog.LevelInfo)
	l.Debug("dropped")
	l.Info("queues: ready")
	l.Warn("dynamo: renewal failed; retrying", "pause", time.Second, "error", errors.New("throttled twice"))
	l.With("instance", "order-1").WithGroup("lock").Error("dynamo: lost", "timeout", 30*time.Second)
	want := []string{
		"queues: ready",
		`warning: dynamo: renewal failed; retrying pause=1s error="throttled twice"`,
		"error: dynamo: lost instance=order-1 lock.timeout=30s",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("lines\n%q\nwant\n%q", lines, want)
	}
	var debug []string
	linelog.New(func(line string) { debug = append(debug, line) }, slog.LevelDebug).Debug("locks: polling", "key", "k")
	if !slices.Equal(debug, []string{"debug: locks: polling key=k"}) {
		t.Fatalf("debug lines %q", debug)
	}
}
