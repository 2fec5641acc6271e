// Package testlog gives tests a [*slog.Logger] that writes through the
// test's log (t.Logf), for the Logger options of the library's packages.
package testlog

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/duradyn/duradyn/internal/linelog"
)

// New returns a logger that writes each record, of every level from Debug
// up, through t.Logf as one line in the form of [linelog.New]: "warning:
// dynamo: renewal failed; retrying pause=1s error=...". Records logged once
// t's cleanups have run (by a goroutine that outlives the test) are
// dropped instead of making t.Logf panic. It is safe for concurrent use.
func New(t testing.TB) *slog.Logger {
	var (
		mu   sync.Mutex
		done bool
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
	})
	return linelog.New(func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf("%s", line)
		}
	}, slog.LevelDebug)
}
