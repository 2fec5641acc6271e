package duradyn_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/runtimetest"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/providertest"
	"github.com/duradyn/duradyn/tables"
)

// suiteTimeout bounds each wait of the runtime's suite on DynamoDB Local
// (see runtimeFactory).
const suiteTimeout = 5 * time.Minute

// runtimeFactory runs the runtime's suite on DynamoDB providers configured
// by c, each test on a fresh table (and queues).
func runtimeFactory(c dynamotest.Config) runtimetest.Factory {
	return runtimetest.Factory{
		New: func(t testing.TB) provider.Provider {
			p, _ := dynamotest.New(t, c)
			return p
		},
		Options: func(o *durable.Options) {
			// Requests to an emulator shared by parallel tests take tens of
			// milliseconds: leases long enough that a busy turn keeps its
			// lock, polls spaced so idle slots do not flood the emulator.
			o.OrchestratorLockTimeout = 10 * time.Second
			o.OrchestratorLockRenewalBuffer = 3 * time.Second
			// Activities keep the lease the suite was tuned with (the
			// default is 6 s since crash recovery was made faster).
			o.WorkerLockTimeout = 30 * time.Second
			if c.ShortPoll {
				// Each idle slot sweeps every MinPollInterval, and the
				// sixteen tests' idle slots share one emulator. Alone on
				// a cold emulator the suite took about 120 s at the
				// default 100 ms, 93 s at 250 ms (the emulator's JVM
				// used 124 s of CPU), 75 s at 500 ms (101 s) and 89 s
				// at 1 s (116 s): below 500 ms the sweeps crowd out the
				// work, above it the work waits for them.
				o.MinPollInterval = 500 * time.Millisecond
			}
		},
		// Leases tests ask for (down to a second) are tripled: a request
		// to the shared emulator can take hundreds of milliseconds.
		LeaseScale: 3,
		// Waits detect a hang, they do not time the provider. The heaviest
		// test (600 timers in one fan-in: about 220 requests, 40 of them
		// transactions of up to 100 actions, which DynamoDB Local runs
		// slowly) takes 25-45 s alone; beside two other make test runs on
		// two cores (load average about 13) it took over 2 minutes.
		Timeout:  suiteTimeout,
		Parallel: true,
	}
}

// TestRuntimeValidation runs the runtime's end-to-end suite on the DynamoDB
// provider in its two configurations: with SQS wake-up queues (long
// polling), and without (short polling) for the categories of
// shortPollCategories.
func TestRuntimeValidation(t *testing.T) {
	t.Run("LongPoll", func(t *testing.T) {
		runtimetest.Run(t, runtimeFactory(dynamotest.Config{Queues: true}))
	})
	t.Run("ShortPoll", func(t *testing.T) {
		f := runtimeFactory(dynamotest.Config{ShortPoll: true})
		f.Categories = shortPollCategories
		runtimetest.Run(t, f)
	})
}

// shortPollCategories are the runtime suite's categories the short-polling
// configuration runs. It differs from LongPoll in how a fetch finds work
// (a sweep at each poll instead of a wake-up message) and in nothing a
// turn writes or a read returns. These categories wait on every kind of
// wake-up: new instances and activities, sub-orchestrations, timers,
// external events, continue-as-new, sessions, tag and version filters,
// cancellations and expired leases. The others (KV, Management, Retry,
// Errors, Scenarios, status and system calls) check what turns record and
// reads return; LongPoll and the run under faults cover them, and here
// they doubled the package's longest suite.
var shortPollCategories = []string{
	"Samples", "Composition", "Timers", "ContinueAsNew", "Cancellation", "ExternalEvents",
	"Reliability", "Sessions", "Tags", "Versioning", "Poison",
}

// TestRuntimeValidationWithFaults runs the runtime's suite, with SQS
// wake-up queues, with the faults
// of TestValidationWithFaults injected into every request of the runtimes'
// providers: throttling, conflicts, 5xx, lost responses, lagging indexes.
// The runtimes meet every fault; the tests' client retries, as an
// application would. Every orchestration must end with the result of a
// fault-free run. The tests that count exact deliveries
// (runtimetest.ExactDelivery) are left out: TestRuntimeValidation/LongPoll
// runs them on this configuration without faults.
func TestRuntimeValidationWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the runtime suite under fault injection takes minutes")
	}
	var seed atomic.Int64
	factory := func(c dynamotest.Config) runtimetest.Factory {
		c.Options = func(o *dynamo.Options) {
			in := faults.New(seed.Add(1))
			in.SetRealConflicts(true)
			in.SetIndexLag(0, indexLag, tables.IndexReady, tables.IndexInstances)
			for _, r := range faultRules() {
				in.Add(r)
			}
			o.Client = in.DynamoDB(o.Client)
			if o.SQSClient != nil {
				o.SQSClient = in.SQS(o.SQSClient)
			}
		}
		f := runtimeFactory(c)
		// TestRuntimeValidation runs the tests that count exact
		// deliveries on this configuration without faults.
		f.Redelivers = true
		f.ClientProvider = func(p provider.Provider) provider.Provider {
			return providertest.Retrying(p, providertest.RetryPolicy{})
		}
		f.Timeout = suiteTimeout
		f.Convergence = indexLag + 500*time.Millisecond
		return f
	}
	// One configuration: the faults act on requests both configurations
	// share; short polling runs the suite fault-free above, and the
	// provider's conformance suite under faults (TestValidationWithFaults).
	// Both would double the longest test of the package.
	t.Run("LongPoll", func(t *testing.T) {
		runtimetest.Run(t, factory(dynamotest.Config{Queues: true}))
	})
}
