package queues

import (
	"fmt"
	"testing"
	"time"
)

// TestAppendSignals: signals already listed, or repeated in add, are
// appended once; past limit the oldest go.
func TestAppendSignals(t *testing.T) {
	vis := time.UnixMilli(1_000)
	a := Signal{Kind: Orchestrator, Instance: "a"}
	b := Signal{Kind: Orchestrator, Instance: "b", VisibleAt: vis}
	bLater := Signal{Kind: Orchestrator, Instance: "b", VisibleAt: vis.Add(time.Millisecond)}
	c := Signal{Kind: Worker, Instance: "a"}
	got := appendSignals([]Signal{a, b}, []Signal{b, c, a, bLater, c}, 10)
	want := []Signal{a, b, c, bLater}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("appendSignals = %v; want %v", got, want)
	}
	if got := appendSignals([]Signal{a, b}, []Signal{c, bLater}, 3); fmt.Sprint(got) != fmt.Sprint([]Signal{b, c, bLater}) {
		t.Errorf("appendSignals past the limit = %v; want the newest three, %v", got, []Signal{b, c, bLater})
	}
}

// BenchmarkAppendSignals adds new signals one at a time to a list kept at
// DefaultMaxPending, as a busy process's deliveries to a waiting fetch do.
func BenchmarkAppendSignals(b *testing.B) {
	news := make([]Signal, 4*DefaultMaxPending)
	for i := range news {
		news[i] = Signal{Kind: Orchestrator, Shard: i % 4, Instance: fmt.Sprintf("inst-%d", i), VisibleAt: time.UnixMilli(int64(i))}
	}
	var list []Signal
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		list = appendSignals(list, news[i%len(news):i%len(news)+1], DefaultMaxPending)
		i++
	}
}
