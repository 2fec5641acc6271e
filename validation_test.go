package dynoxide_test

import (
	"os"
	"testing"

	"github.com/dynoxide/dynoxide/dynamo/dynamotest"
	"github.com/dynoxide/dynoxide/localstack"
	"github.com/dynoxide/dynoxide/provider/providertest"
)

// TestMain shares one emulator (DynamoDB + SQS) between the tests of this
// binary and stops it afterwards; see package localstack for how it is
// found or started.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// TestValidation runs the whole conformance suite against the DynamoDB
// provider in its two configurations, one after the other (the suite has
// tests with 200 ms windows, which a shared emulator under twice the load
// can miss), each test on a fresh table:
//
//   - LongPoll: SQS wake-up queues; fetches wait up to pollTimeout and
//     return as soon as work is committed.
//   - ShortPoll: no queues; fetches look at the table once and return.
func TestValidation(t *testing.T) {
	t.Run("LongPoll", func(t *testing.T) {
		providertest.Run(t, dynamotest.Factory(dynamotest.Config{Queues: true}))
	})
	t.Run("ShortPoll", func(t *testing.T) {
		providertest.Run(t, dynamotest.Factory(dynamotest.Config{ShortPoll: true}))
	})
}
