package scenario

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"math"
	"slices"
	"testing"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/tables"
)

func TestShardSpreadSumsIndexWritesByShard(t *testing.T) {
	part := func(index, key string) billing.Partition {
		return billing.Partition{Element: billing.Element{Table: "t", Index: index}, Key: key}
	}
	p := billing.Partitions{Writes: map[billing.Partition]float64{
		part(tables.IndexReady, "O#0"):     40,
		part(tables.IndexReady, "W#0"):     40,
		part(tables.IndexInstances, "L#0"): 20, // shard 0: 100
		part(tables.IndexReady, "O#1"):     60, // shard 1: 60
		part(tables.IndexReady, "W#2"):     140,
		part(tables.IndexReady, "O#3"):     100,
		part("", "I#a"):                    1000, // the table: not an index shard
		part(tables.IndexReady, "O#9"):     500,  // beyond the shard count
	}}
	s := shardSpread(p, 4)
	if want := []float64{100, 60, 140, 100}; !slices.Equal(s.perShard, want) {
		t.Errorf("per shard %v, want %v", s.perShard, want)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"mean", s.mean, 100}, {"max", s.maxDev, 40}, {"min", s.minDev, -40}, {"mean |deviation|", s.meanAbsDev, 20}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s := shardSpread(billing.Partitions{}, 4); s.mean != 0 || s.maxDev != 0 || len(s.perShard) != 4 {
		t.Errorf("no writes: %+v, want zeros", s)
	}
}

func TestPartitionKindsNameWhereWritesLand(t *testing.T) {
	for _, c := range []struct {
		index, key, want string
	}{
		{"", "I#order-1", ExtraWCUInstance},
		{"", "W#order-1", ExtraWCUWorkerRows},
		{"", "#METRICS", ExtraWCUMetrics},
		{"", "S#session", ExtraWCUTableOther},
		{tables.IndexReady, "O#3", ExtraWCUReadyOrch},
		{tables.IndexReady, "W#3", ExtraWCUReadyWorker},
		{tables.IndexInstances, "L#3", ExtraWCUInstancesIx},
	} {
		got := partitionKind(billing.Partition{Element: billing.Element{Table: "t", Index: c.index}, Key: c.key})
		if got != c.want {
			t.Errorf("%q %q: %q, want %q", c.index, c.key, got, c.want)
		}
	}
}

// TestRandomFillerCompressesOnlyByItsEncoding checks what makes
// Chain1000PayloadRandom1KB differ from Chain1000Payload1KB: DEFLATE at the
// provider's level takes about half off the hex filler, and off the random
// filler only what base64 adds (2 of every 8 bits a character). That is
// still more than the eighth the provider asks before it stores a payload
// compressed, so such payloads are stored compressed, at about 0.8 of their
// size; the random bytes themselves do not deflate at all.
func TestRandomFillerCompressesOnlyByItsEncoding(t *testing.T) {
	deflated := func(s string) float64 {
		var b bytes.Buffer
		w, err := flate.NewWriter(&b, flate.BestSpeed)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return float64(b.Len()) / float64(len(s))
	}
	random, hex := randomFiller(7, 1024), filler(7, 1024)
	if len(random) != 1024 || randomFiller(7, 1024) != random || randomFiller(8, 1024) == random {
		t.Fatalf("random filler of %d characters, or not the same for a seed and different across seeds", len(random))
	}
	raw, err := base64.StdEncoding.DecodeString(random)
	if err != nil || len(raw) != 768 {
		t.Fatalf("random filler decodes to %d bytes (%v), want 768", len(raw), err)
	}
	if r := deflated(string(raw)); r < 1 {
		t.Errorf("the random bytes deflate to %.2f of their size, want no gain", r)
	}
	if r := deflated(random); r < 0.75 || r > 0.85 {
		t.Errorf("random filler deflates to %.2f of its size, want 0.75 to 0.85 (base64's 6 bits a character)", r)
	}
	if r := deflated(hex); r > 0.6 {
		t.Errorf("hex filler deflates to %.2f of its size, want at most 0.6", r)
	}
}
