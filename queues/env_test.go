package queues_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/localstack"
)

// sqsClient returns a client of the test binary's shared SQS emulator.
func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	e := localstack.ForTest(t)
	cfg, err := e.AWSConfig(t.Context())
	if err != nil {
		t.Fatalf("AWSConfig: %v", err)
	}
	return e.SQS(cfg)
}

// newQueue creates a standard queue with a unique name, deleted when the
// test ends, and returns its URL.
func newQueue(t *testing.T, prefix string) string {
	t.Helper()
	e := localstack.ForTest(t)
	return localstack.NewQueue(t, e, localstack.UniqueName(t, prefix))
}
