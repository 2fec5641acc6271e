package itemsize_test

import (
	"os"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain stops the emulator the tests share once they end.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
