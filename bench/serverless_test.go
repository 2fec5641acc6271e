package bench_test

import (
	"math"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/scenario"
)

// TestServerlessCost runs HelloCities5 and a chain through the Lambda host
// at tiny sizes and checks the figures' consistency: every activity
// completed, requests counted, at least one invocation, GB-seconds in
// proportion to the memory size, and totals that add Lambda's price to
// DynamoDB's and SQS's.
func TestServerlessCost(t *testing.T) {
	t.Parallel()
	env := newEnv(t, false)
	c := sizes.Serverless
	results, err := scenario.ServerlessCost(t.Context(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want HelloCities5 and the chain", len(results))
	}
	for i, want := range []int{5 * c.Instances, c.ChainSteps} {
		r := results[i]
		if r.Scenario != scenario.ServerlessCostName || strings.Contains(r.Notes, "FAILED") || r.Activities != want {
			t.Errorf("%s: scenario %q, %d activities (want %d), notes %q", r.System, r.Scenario, r.Activities, want, r.Notes)
			continue
		}
		if total(r.DynamoDB) == 0 || r.WRU == 0 || r.SQS["ReceiveMessage"] == 0 || r.SQS["DeleteMessageBatch"] == 0 {
			t.Errorf("%s: DynamoDB %v (WRU %v), SQS %v: want the hosts' requests and the mappings' receives and deletes", r.System, r.DynamoDB, r.WRU, r.SQS)
		}
		if r.SQS["ReceiveMessage"] != 0 && r.DynamoDB["Query"] == 0 {
			t.Errorf("%s: no Query: the hosts fetched nothing", r.System)
		}
		perActivity := r.Extra[scenario.ExtraInvocationsPerActivity]
		if perActivity*float64(r.Activities) < 1 || r.Extra[scenario.ExtraColdStarts] < 1 || r.Extra[scenario.ExtraBilledMsPerInvocation] < 1 {
			t.Errorf("%s: %v invocations per activity, %v cold starts, %v billed ms per invocation", r.System, perActivity,
				r.Extra[scenario.ExtraColdStarts], r.Extra[scenario.ExtraBilledMsPerInvocation])
		}
		checkLambdaPrices(t, r.System, r.Extra, r.Dollars/float64(r.Activities)*1e6)
	}
}

// checkLambdaPrices checks that the GB-seconds double with the memory and
// that each total is DynamoDB's and SQS's dollars plus Lambda's.
func checkLambdaPrices(t *testing.T, system string, extra map[string]float64, storesPerMillion float64) {
	t.Helper()
	invocations := extra[scenario.ExtraInvocationsPerActivity]
	small := billing.LambdaMemorySizes[0]
	for _, mb := range billing.LambdaMemorySizes {
		gbs := extra[scenario.ExtraGBSecondsPerActivity(mb)]
		if want := extra[scenario.ExtraGBSecondsPerActivity(small)] * float64(mb) / float64(small); gbs <= 0 || math.Abs(gbs-want) > 1e-9*want {
			t.Errorf("%s: %v GB-s per activity at %d MB, want %v", system, gbs, mb, want)
		}
		lambda := (invocations*billing.LambdaRequestPrice + gbs*billing.LambdaARMGBSecondPrice) * 1e6
		if got, want := extra[scenario.ExtraTotalDollars(mb)], storesPerMillion+lambda; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: $%v per million activities at %d MB, want $%v (DynamoDB and SQS) + $%v (Lambda)", system, got, mb, storesPerMillion, lambda)
		}
	}
}
