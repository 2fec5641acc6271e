package console

import (
	"os"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator between the tests and benchmarks of this
// package that need DynamoDB and SQS, and stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
