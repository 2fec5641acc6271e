package bench_test

import (
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
	t.Parallel()
	env := newEnv(t, false)
	results, err := scenario.ChainPayloadRandom(t.Context(), env, sizes.ChainSteps, sizes.PayloadBytes)
	if err != nil {
		t.Fatal(err)
	}
	name := scenario.ChainPayloadRandomName(sizes.ChainSteps, sizes.PayloadBytes)
	if want := "Chain20PayloadRandom1KB"; name != want {
		t.Errorf("name %q, want %q", name, want)
	}
	compressed, plain := checkChainPayload(t, results, name)
	if saved := plain - compressed; saved <= 0 || saved >= plain/3 {
		t.Errorf("compressed random payloads take %.1f WRU per step, uncompressed %.1f: want a saving above 0 and below a third", compressed, plain)
	}
}
