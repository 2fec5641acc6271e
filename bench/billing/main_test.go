package billing_test

import (
	"os"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
