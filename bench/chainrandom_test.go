package bench_test

import (
	"strings"
	"testing"

	"github.com/duradyn/duradyn/bench/scenario"
)

// TestChainPayloadRandom runs the chain with random base64 payloads on
// DynamoDBSQS and on its uncompressed variant, and checks each step's
// figures: every KB of input and output written at least twice, and
// compression saving something but less than a third of what storing
// them uncompressed writes (the hex payloads of TestChainPayload save
// more than that: scenario.TestRandomFillerCompressesOnlyByItsEncoding
// shows why).
func TestChainPayloadRandom(t *testing.T) {
	env := newEnv(t, false)
	results, err := scenario.ChainPayloadRandom(t.Context(), env, sizes.ChainSteps, sizes.PayloadBytes)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	if len(rs) != 2 {
		t.Errorf("results on %d systems, want %s and %s only", len(rs), scenario.DynamoDBSQS, scenario.DynamoDBSQSUncompressed)
	}
	name := scenario.ChainPayloadRandomName(sizes.ChainSteps, sizes.PayloadBytes)
	if want := "Chain20PayloadRandom1KB"; name != want {
		t.Errorf("name %q, want %q", name, want)
	}
	perStep := map[string]float64{}
	for _, system := range []string{scenario.DynamoDBSQS, scenario.DynamoDBSQSUncompressed} {
		r, ok := rs[system]
		switch {
		case !ok:
			t.Fatalf("%s: no result", system)
		case r.Scenario != name:
			t.Errorf("%s: scenario %q, want %q", system, r.Scenario, name)
		case strings.Contains(r.Notes, "FAILED") || r.Activities != sizes.ChainSteps:
			t.Fatalf("%s: %d activities (%s), want %d", system, r.Activities, r.Notes, sizes.ChainSteps)
		}
		checkTimes(t, r, true)
		if r.Dollars <= 0 || r.SQS == nil {
			t.Errorf("%s: $%v, SQS requests %v: want a price with SQS counted", system, r.Dollars, r.SQS)
		}
		perStep[system] = r.Extra[scenario.ExtraWRULast]
		if floor := 4 * float64(sizes.PayloadBytes) / 1024; perStep[system] < floor {
			t.Errorf("%s: %.1f WRU per step with %d-byte payloads, want at least %.0f", system, perStep[system], sizes.PayloadBytes, floor)
		}
	}
	compressed, plain := perStep[scenario.DynamoDBSQS], perStep[scenario.DynamoDBSQSUncompressed]
	t.Logf("WRU per step in the last tenth: %.1f compressed, %.1f uncompressed", compressed, plain)
	if saved := plain - compressed; saved <= 0 || saved >= plain/3 {
		t.Errorf("compressed random payloads take %.1f WRU per step, uncompressed %.1f: want a saving above 0 and below a third", compressed, plain)
	}
}
