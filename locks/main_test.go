package locks_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/localstack"
)

// idleConnections are the goroutines of HTTP connections kept alive to an
// emulator that outlives the binary (one make test shares between
// binaries): they end when the emulator or the idle timeout closes them.
var idleConnections = []goleak.Option{
	goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
}

// TestMain runs the tests against one shared emulator, stops it, and then
// fails the run if any goroutine is left.
func TestMain(m *testing.M) {
	code := localstack.Main(m)
	if code == 0 {
		if err := goleak.Find(idleConnections...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
