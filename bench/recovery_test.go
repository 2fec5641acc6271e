package bench_test

import (
	"testing"

	"github.com/duradyn/duradyn/bench/scenario"
)

// TestRecovery runs the Recovery scenario at its tiny size: one worker
// process killed, and a short activity's renewals. It checks the figures
// are there and plausible, not how fast recovery was (the test of package
// internal/crashsoak asserts that).
func TestRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a worker command and runs worker processes")
	}
	env := newEnv(t, false)
	results, err := scenario.Recovery(t.Context(), env, sizes.Recovery)
	if err != nil {
		t.Fatal(err)
	}
	rs := bySystem(t, results)
	r, ok := rs[scenario.DynamoDBSQS]
	if !ok || len(rs) != 1 {
		t.Fatalf("results for %v, want %s alone", results, scenario.DynamoDBSQS)
	}
	if len(r.Latencies) == 0 || r.Extra[scenario.ExtraRecoveryItems] != float64(len(r.Latencies)) {
		t.Errorf("%d latencies, %v items", len(r.Latencies), r.Extra[scenario.ExtraRecoveryItems])
	}
	if p50, p99, worst := r.Extra[scenario.ExtraRecoveryP50], r.Extra[scenario.ExtraRecoveryP99], r.Extra[scenario.ExtraRecoveryMax]; !(0 < p50 && p50 <= p99 && p99 <= worst) {
		t.Errorf("recovery p50 %v, p99 %v, max %v: want 0 < p50 <= p99 <= max", p50, p99, worst)
	}
	// The short activity runs 10 s: the default 6 s lease is renewed every
	// 3 s, a write each.
	if n := r.Extra[scenario.ExtraRenewalsPerMinute]; n <= 0 {
		t.Errorf("%v renewals a minute of an activity running past its lease, want some", n)
	}
	if w := r.Extra[scenario.ExtraRenewalWRUPerMinute]; w < r.Extra[scenario.ExtraRenewalsPerMinute] {
		t.Errorf("%v WRU a minute for %v renewals: want at least one unit each", w, r.Extra[scenario.ExtraRenewalsPerMinute])
	}
	if _, ok := r.Extra[scenario.ExtraWatcherPerMinute]; !ok {
		t.Errorf("no %q", scenario.ExtraWatcherPerMinute)
	}
}
