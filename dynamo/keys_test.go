package dynamo

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
		"instancePK": instancePK, "workerPK": workerPK, "sessionPK": sessionPK,
		"kvSK": kvSK, "deltaSK": deltaSK, "childSK": childSK, "queueSK": queueSK,
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
		for _, k := range []string{kvSK(v), deltaSK(v), childSK(v), queueSK(v)} {
			if kinds[k] {
				t.Errorf("sort key %q is built for two kinds or values", k)
			}
			kinds[k] = true
		}
	}
	for _, fixed := range []string{skMeta, skLock, skDeltaAll, execSK(1), historySK(1, 1)} {
		if kinds[fixed] {
			t.Errorf("fixed sort key %q collides with a built one", fixed)
		}
	}
}

func TestInstanceFromPKRoundTrips(t *testing.T) {
	for _, v := range hostile {
		got, err := instanceFromPK(instancePK(v))
		if err != nil || got != v {
			t.Errorf("instanceFromPK(instancePK(%q)) = %q, %v", v, got, err)
		}
	}
	if _, err := instanceFromPK("W#a"); !errors.Is(err, errBadKey) {
		t.Errorf("worker key parsed as instance key: %v", err)
	}
}

func TestHistoryKeysSortNumerically(t *testing.T) {
	ids := []uint64{math.MaxUint64, 10, 2, 1, 99999, 100}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = historySK(3, id)
	}
	slices.Sort(keys)
	slices.Sort(ids)
	for i, k := range keys {
		exec, ev, err := parseHistorySK(k)
		if err != nil || exec != 3 || ev != ids[i] {
			t.Fatalf("key %d = %q parses to (%d, %d, %v), want (3, %d)", i, k, exec, ev, err, ids[i])
		}
		if !strings.HasPrefix(k, historyPrefix(3)) || strings.HasPrefix(k, historyPrefix(30)) {
			t.Fatalf("%q is not in exactly execution 3's range", k)
		}
	}
	for _, bad := range []string{"H#1#2", "#Q#x", "H#" + num20(1) + "#" + num20(2) + "x", "H#" + strings.Repeat("9", 20) + "#" + num20(1)} {
		if _, _, err := parseHistorySK(bad); !errors.Is(err, errBadKey) {
			t.Errorf("parseHistorySK(%q) = %v, want errBadKey", bad, err)
		}
	}
}

func TestControlRangeHoldsControlRowsOnly(t *testing.T) {
	control := []string{skMeta, skLock, execSK(1), queueSK("x"), kvSK("k"), deltaSK("k"), skDeltaAll}
	for _, sk := range control {
		if sk >= controlEnd {
			t.Errorf("control row %q is outside sk < %q", sk, controlEnd)
		}
	}
	for _, sk := range []string{historySK(1, 1), childSK("c"), childSK("")} {
		if sk < controlEnd {
			t.Errorf("non-control row %q is inside sk < %q", sk, controlEnd)
		}
	}
}

func TestShardOfIsStableAndInRange(t *testing.T) {
	for _, v := range hostile {
		s := shardOf(v, 16)
		if s < 0 || s >= 16 || s != shardOf(v, 16) {
			t.Fatalf("shardOf(%q) = %d", v, s)
		}
	}
	if workerRoutingKey("a", nil) == workerRoutingKey("", ptr("a")) {
		t.Fatal("an instance and a session with the same id route alike")
	}
}

func TestIndexKeys(t *testing.T) {
	if got := readyOrchestratorPK(3); got != "O#3" {
		t.Errorf("readyOrchestratorPK(3) = %q", got)
	}
	if got := readyWorkerPK(15); got != "W#15" {
		t.Errorf("readyWorkerPK(15) = %q", got)
	}
	if got := listInstancesPK(0); got != "L#0" {
		t.Errorf("listInstancesPK(0) = %q", got)
	}
	// Instances list by creation time first, whatever their ids.
	if !(listInstancesSK(9, "zzz") < listInstancesSK(10, "aaa")) {
		t.Error("listInstancesSK does not order by creation time")
	}
	if workerSK(1, 2) >= workerSK(1, 10) || workerSK(1, 99) >= workerSK(2, 0) {
		t.Error("worker rows do not sort by (execution, activity)")
	}
}

func ptr[T any](v T) *T { return &v }
