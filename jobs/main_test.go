package jobs_test

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
