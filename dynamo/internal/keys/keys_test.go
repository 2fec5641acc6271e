package keys

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// hostile are ids and keys chosen to break naive encodings: separators,
// prefixes of one another, unicode, NUL and long strings.
var hostile = []string{
	"", "a", "a#", "a#b", "a##b", "#", "##", "#META", "#LOCK", "H#1", "a|b", "a/b", "a b",
	"ñandú-🦤", "日本語", "a\x00b", "00001", "1", "a::sub::2", strings.Repeat("x", 1024),
}

func TestKeysAreInjective(t *testing.T) {
	builders := map[string]func(string) string{
		"InstancePK": InstancePK, "WorkerPK": WorkerPK, "SessionPK": SessionPK,
		"KVSK": KVSK, "ChildSK": ChildSK, "QueueSK": QueueSK,
	}
	for name, build := range builders {
		seen := map[string]string{}
		for _, v := range hostile {
			k := build(v)
			if prev, dup := seen[k]; dup {
				t.Errorf("%s(%q) and %s(%q) are both %q", name, prev, name, v, k)
			}
			seen[k] = v
		}
	}
	// Different item kinds of one partition never share a sort key.
	kinds := map[string]bool{}
	for _, v := range hostile {
		for _, k := range []string{KVSK(v), ChildSK(v), QueueSK(v)} {
			if kinds[k] {
				t.Errorf("sort key %q is built for two kinds or values", k)
			}
			kinds[k] = true
		}
	}
	for _, fixed := range []string{Meta, Lock, ExecSK(1), HistorySK(1, 1)} {
		if kinds[fixed] {
			t.Errorf("fixed sort key %q collides with a built one", fixed)
		}
	}
}

func TestInstanceFromPKRoundTrips(t *testing.T) {
	for _, v := range hostile {
		got, err := InstanceFromPK(InstancePK(v))
		if err != nil || got != v {
			t.Errorf("InstanceFromPK(InstancePK(%q)) = %q, %v", v, got, err)
		}
	}
	if _, err := InstanceFromPK("W#a"); !errors.Is(err, ErrBadKey) {
		t.Errorf("worker key parsed as instance key: %v", err)
	}
}

func TestHistoryKeysSortNumerically(t *testing.T) {
	ids := []uint64{math.MaxUint64, 10, 2, 1, 99999, 100}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = HistorySK(3, id)
	}
	slices.Sort(keys)
	slices.Sort(ids)
	for i, k := range keys {
		exec, ev, err := ParseHistorySK(k)
		if err != nil || exec != 3 || ev != ids[i] {
			t.Fatalf("key %d = %q parses to (%d, %d, %v), want (3, %d)", i, k, exec, ev, err, ids[i])
		}
		if !strings.HasPrefix(k, HistoryPrefix(3)) || strings.HasPrefix(k, HistoryPrefix(30)) {
			t.Fatalf("%q is not in exactly execution 3's range", k)
		}
	}
	for _, bad := range []string{"H#1#2", "#Q#x", "H#" + Num20(1) + "#" + Num20(2) + "x", "H#" + strings.Repeat("9", 20) + "#" + Num20(1)} {
		if _, _, err := ParseHistorySK(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseHistorySK(%q) = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestControlRangeHoldsControlRowsOnly(t *testing.T) {
	control := []string{Meta, Lock, ExecSK(1), QueueSK("x"), KVSK("k")}
	for _, sk := range control {
		if sk >= ControlEnd {
			t.Errorf("control row %q is outside sk < %q", sk, ControlEnd)
		}
	}
	for _, sk := range []string{HistorySK(1, 1), ChildSK("c"), ChildSK("")} {
		if sk < ControlEnd {
			t.Errorf("non-control row %q is inside sk < %q", sk, ControlEnd)
		}
	}
}

func TestShardOfIsStableAndInRange(t *testing.T) {
	for _, v := range hostile {
		s := ShardOf(v, 16)
		if s < 0 || s >= 16 || s != ShardOf(v, 16) {
			t.Fatalf("ShardOf(%q) = %d", v, s)
		}
	}
	if WorkerRoutingKey("a", nil) == WorkerRoutingKey("", ptr("a")) {
		t.Fatal("an instance and a session with the same id route alike")
	}
}

func TestIndexKeys(t *testing.T) {
	if got := ReadyOrchestratorPK(3); got != "O#3" {
		t.Errorf("ReadyOrchestratorPK(3) = %q", got)
	}
	if got := ReadyWorkerPK(15); got != "W#15" {
		t.Errorf("ReadyWorkerPK(15) = %q", got)
	}
	if got := ListInstancesPK(0); got != "L#0" {
		t.Errorf("ListInstancesPK(0) = %q", got)
	}
	// Instances list by creation time first, whatever their ids.
	if !(ListInstancesSK(9, "zzz") < ListInstancesSK(10, "aaa")) {
		t.Error("ListInstancesSK does not order by creation time")
	}
	if WorkerSK(1, 2) >= WorkerSK(1, 10) || WorkerSK(1, 99) >= WorkerSK(2, 0) {
		t.Error("worker rows do not sort by (execution, activity)")
	}
}

func ptr[T any](v T) *T { return &v }

func TestReadyShardParsesReadyPK(t *testing.T) {
	for _, shard := range []int{0, 1, 9, 10, 15, 255} {
		for _, prefix := range []string{ReadyOrchestratorPrefix, ReadyWorkerPrefix} {
			got, ok := ReadyShard(ReadyPK(prefix, shard), prefix)
			if !ok || got != shard {
				t.Errorf("ReadyShard(ReadyPK(%q, %d)) = %d, %v", prefix, shard, got, ok)
			}
		}
	}
	if ReadyOrchestratorPK(3) != ReadyPK(ReadyOrchestratorPrefix, 3) || ReadyWorkerPK(3) != ReadyPK(ReadyWorkerPrefix, 3) {
		t.Errorf("ReadyOrchestratorPK, ReadyWorkerPK and ReadyPK disagree")
	}
	for _, bad := range []string{"", "O#", "O#x", "O#-1", "O#01", "O#1x", "W#1", "O1", "O#99999999999999999999999"} {
		if shard, ok := ReadyShard(bad, ReadyOrchestratorPrefix); ok {
			t.Errorf("ReadyShard(%q, O#) = %d, true; want false", bad, shard)
		}
	}
}

// TestKVRowsPrefixSelectsKVRowsOnly checks that the range KV reads query
// holds every KV row, hashed or not, and no other row of an instance.
func TestKVRowsPrefixSelectsKVRowsOnly(t *testing.T) {
	for _, v := range hostile {
		if k := KVSK(v); !strings.HasPrefix(k, KVRowsPrefix) {
			t.Errorf("KV row key %q is outside the KV range", k)
		}
		for _, k := range []string{ChildSK(v), QueueSK(v), ExecSK(uint64(len(v))), HistorySK(1, uint64(len(v)))} {
			if strings.HasPrefix(k, KVRowsPrefix) {
				t.Errorf("non-KV key %q is inside the KV range", k)
			}
		}
	}
	for _, fixed := range []string{Meta, Lock, Session, LayoutSK} {
		if strings.HasPrefix(fixed, KVRowsPrefix) {
			t.Errorf("%q is inside the KV range", fixed)
		}
	}
}
