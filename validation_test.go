package duradyn_test

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider/providertest"
	"github.com/duradyn/duradyn/tables"
)

// TestMain shares one emulator (DynamoDB + SQS) between the tests of this
// binary and stops it afterwards; see package localstack for how it is
// found or started.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// TestValidation runs the whole conformance suite against the DynamoDB
// provider in its two configurations, one after the other (so that one
// emulator serves one suite at a time), each test on a fresh table:
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

// faultRate is the share of requests that fail in TestValidationWithFaults,
// spread over the kinds of failure below.
const faultRate = 0.1

// faultRules are the failures TestValidationWithFaults injects: what AWS
// produces under load, at faultRate in all. Each is either absorbed by the
// provider or surfaces as a retryable error that the suite's calls retry
// (providertest.Retrying), as a runtime would.
func faultRules() []faults.Rule {
	each := faultRate / 6
	return []faults.Rule{
		{Rate: each / 2, Fault: faults.Throttle("ProvisionedThroughputExceededException")},
		{Rate: each / 2, Fault: faults.Throttle("ThrottlingException")},
		{Rate: each, Fault: faults.ServerError("InternalServerError")},
		{Ops: []string{faults.OpTransactWriteItems}, Rate: each, Fault: faults.TransactionCanceled("TransactionConflict", -1)},
		{Ops: []string{faults.OpTransactWriteItems}, Rate: each / 2, Fault: faults.TransactionCanceled("ThrottlingError", -1)},
		{Rate: each / 2, Fault: faults.TimeoutBefore()},
		{Rate: each, Fault: faults.LostResponse()},
		// The SDK's retryer sends a request again after a lost response
		// or a 5xx, unknown to the provider: the repeat meets the first
		// attempt's effect.
		{Rate: each / 2, Fault: faults.Resend()},
		{Ops: []string{faults.OpReceiveMessage}, Rate: 0.05, Fault: faults.Duplicate()},
	}
}

// indexLag is the most the secondary indexes lag the table in
// TestValidationWithFaults (DynamoDB's propagation under load).
const indexLag = 2 * time.Second

// clockSkew is the largest offset TestValidationWithFaults gives a
// provider's clock: well inside the bound docs/design.md §9 documents, and
// inside the suite's margins, which compare the provider's leases with the
// test's own clock.
const clockSkew = 20 * time.Millisecond

// TestValidationWithFaults runs the conformance suite in both
// configurations with faults injected into every DynamoDB and SQS request
// (see faultRules), real transaction conflicts between concurrent writes,
// both indexes served up to indexLag late, and each provider's clock
// skewed by up to clockSkew. The suite's calls
// retry retryable errors: every fault must be absorbed or surface as a
// retryable error, and nothing may be lost or applied twice.
func TestValidationWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the suite under fault injection takes a minute")
	}
	var (
		mu        sync.Mutex
		injectors []*faults.Injector
		seed      atomic.Int64
	)
	factory := func(c dynamotest.Config) providertest.Factory {
		c.Options = func(o *dynamo.Options) {
			n := seed.Add(1)
			in := faults.New(n)
			in.SetRealConflicts(true)
			in.SetIndexLag(0, indexLag, tables.IndexReady, tables.IndexInstances)
			for _, r := range faultRules() {
				in.Add(r)
			}
			skew := time.Duration(n%5-2) * clockSkew / 2
			o.Now = faults.NewClock(nil, skew).Now
			o.Client = in.DynamoDB(o.Client)
			if o.SQSClient != nil {
				o.SQSClient = in.SQS(o.SQSClient)
			}
			mu.Lock()
			injectors = append(injectors, in)
			mu.Unlock()
		}
		f := providertest.RetryingFactory(dynamotest.Factory(c), providertest.RetryPolicy{})
		// The indexes lag: listings and discovery converge within the lag,
		// plus the time between two looks at a partition.
		f.Convergence = indexLag + 500*time.Millisecond
		return f
	}
	t.Run("LongPoll", func(t *testing.T) {
		providertest.Run(t, factory(dynamotest.Config{Queues: true}))
	})
	t.Run("ShortPoll", func(t *testing.T) {
		providertest.Run(t, factory(dynamotest.Config{ShortPoll: true}))
	})
	// Both runs are over (t.Run waits for their parallel tests): the
	// faults must have been injected at about the rate asked for.
	var requests, injected int64
	byKind := map[faults.Kind]int64{}
	for _, in := range injectors {
		s := in.Stats()
		requests += s.Requests
		for k, v := range s.Faults {
			byKind[k] += v
			injected += v
		}
	}
	t.Logf("faults injected: %d in %d requests: %v", injected, requests, byKind)
	if float64(injected) < faultRate/2*float64(requests) {
		t.Errorf("only %d faults in %d requests: the injection is not working", injected, requests)
	}
}
