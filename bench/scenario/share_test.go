package scenario

import (
	"slices"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/report"
)

// TestShareFiguresCompareWithTheLeastPeer: the share is the runtime's rate
// over the endpoint's steps × 4 ÷ its requests an activity, and the CPU is
// compared with the least of the peers', leaving out a peer that measured
// nothing.
func TestShareFiguresCompareWithTheLeastPeer(t *testing.T) {
	hello := report.Result{Activities: 500, Elapsed: 5 * time.Second, CPU: 2 * time.Second,
		DynamoDB: map[string]int{"Query": 1000, "TransactWriteItems": 1500}}
	ceiling := report.Result{Activities: 2000, Elapsed: 20 * time.Second}
	peers := []report.Result{
		{System: PeerSystem("sqlite-memory"), Activities: 500, CPU: 1600 * time.Millisecond},
		{System: PeerSystem("sqlite-file"), Activities: 500, CPU: 1000 * time.Millisecond},
		{System: PeerSystem("monoprocess"), Notes: "FAILED"},
	}
	shareFigures(&hello, ceiling, peers)
	// 100 steps/s × 4 ÷ 5 requests = 80 allowed; 100 run: 125 %.
	want := map[string]float64{ExtraCeilingRate: 100, ExtraAllowedRate: 80, ExtraShare: 125, ExtraPeerCPU: 2, ExtraCPURatio: 2}
	for k, v := range want {
		if got := hello.Extra[k]; got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3, 1, 2 = %v, want 2", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4, 1, 3, 2 = %v, want 2.5", got)
	}
}

// TestSharePeersKeepTheirStoreInProcess: Redis's server runs in a process
// of its own, whose CPU the comparison would leave out.
func TestSharePeersKeepTheirStoreInProcess(t *testing.T) {
	all := []string{"monoprocess", "sqlite-memory", "sqlite-file", "redis"}
	if got, want := inProcessPeers(all), all[:3]; !slices.Equal(got, want) {
		t.Errorf("inProcessPeers(%q) = %q, want %q", all, got, want)
	}
	if all[3] != "redis" {
		t.Errorf("inProcessPeers changed its argument: %q", all)
	}
}
