package queues_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain runs the tests against the shared emulator, stops it, and then
// fails the run if any goroutine is left but those of idle connections: an
// emulator that outlives the binary (one make test shares between
// binaries) may keep them alive, as fauxqs does.
func TestMain(m *testing.M) {
	code := localstack.Main(m)
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores the goroutines of idle HTTP connections, which the
// shared SDK HTTP client keeps open while tests run; they end when the
// emulator or the idle timeout closes them.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}
}
