package billing_test

import (
	"os"
	"testing"

	"github.com/dynoxide/dynoxide/localstack"
)

func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
