package crashsoak_test

import (
	"os"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator between the tests of this package and stops
// it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
