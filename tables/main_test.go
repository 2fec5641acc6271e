package tables_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/localstack"
)

// TestMain stops the emulator the tests share once they end.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// newClient returns a DynamoDB client for the emulator shared by this test
// binary, starting it on first use.
func newClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	e := localstack.ForTest(t)
	cfg, err := e.AWSConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return e.DynamoDB(cfg)
}
