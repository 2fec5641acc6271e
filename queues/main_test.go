package queues_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain runs the tests against the shared emulator, stops it, and then
// fails the run if any goroutine is left.
func TestMain(m *testing.M) {
	code := localstack.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores the goroutines of idle HTTP connections, which the
// shared SDK HTTP client keeps open while tests run.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}
}
