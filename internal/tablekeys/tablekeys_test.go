package tablekeys

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestGolden pins the bytes of the rules: tables written before must read
// the same, so these values never change.
func TestGolden(t *testing.T) {
	if got := Shard("order-42", 16); got != 4 {
		t.Errorf(`Shard("order-42", 16) = %d, want 4`, got)
	}
	if got := Num20(1234); got != "00000000000000001234" {
		t.Errorf("Num20(1234) = %q", got)
	}
	if got := Digest("x"); got != "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" {
		t.Errorf(`Digest("x") = %q`, got)
	}
}

func TestShardIsInRange(t *testing.T) {
	for _, shards := range []int{1, 3, 16, 1000} {
		for _, key := range hostile {
			if s := Shard(key, shards); s < 0 || s >= shards || s != Shard(key, shards) {
				t.Fatalf("Shard(%q, %d) = %d", key, shards, s)
			}
		}
	}
}

func TestNum20RoundTripsAndSorts(t *testing.T) {
	prev := ""
	for _, n := range []uint64{0, 1, 9, 10, 1234, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64} {
		s := Num20(n)
		if len(s) != 20 || s <= prev {
			t.Errorf("Num20(%d) = %q, after %q", n, s, prev)
		}
		prev = s
		if back, err := ParseNum20(s); err != nil || back != n {
			t.Errorf("ParseNum20(%q) = %d, %v", s, back, err)
		}
	}
	for _, bad := range []string{"", "1", "0000000000000000001", "000000000000000000001", "0000000000000000000a",
		"-0000000000000000001", "+0000000000000000001", "99999999999999999999"} {
		if _, err := ParseNum20(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseNum20(%q) = %v, want ErrBadKey", bad, err)
		}
	}
	_, err := ParseNum20("12")
	if want := `malformed key: "12" is not a 20-digit number`; err == nil || err.Error() != want {
		t.Errorf("ParseNum20(\"12\") = %v, want %s", err, want)
	}
}

func TestDigestIsHexSHA256(t *testing.T) {
	if got := Digest(""); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf(`Digest("") = %q`, got)
	}
	if len(Digest(strings.Repeat("x", 5000))) != 64 {
		t.Error("a digest is not 64 bytes")
	}
}

// hostile are ids and keys chosen to break naive encodings: separators,
// other prefixes, digits, unicode, NUL and long strings.
var hostile = []string{
	"", "a", "#", "##", "#LAYOUT", "I#", "I#x", "W#1", "S#", "J#1", "K#a", "O#2", "L#3",
	"0", "15", "a#b", "ñandú-🦤", "a\x00b", strings.Repeat("x", 2046),
}

// prefix is one partition-key prefix of an attribute: whole is set when it
// is the whole key rather than a prefix.
type prefix struct {
	owner, name, value string
	whole              bool
}

// partitionPrefixes lists every partition-key prefix by attribute, with
// the package that writes it.
var partitionPrefixes = map[string][]prefix{
	"pk": {
		{"dynamo", "InstancePrefix", InstancePrefix, false},
		{"dynamo", "WorkerPrefix", WorkerPrefix, false},
		{"dynamo", "SessionPrefix", SessionPrefix, false},
		{"dynamo", "LayoutPK", LayoutPK, true},
		{"dynamo", "MetricsPK", MetricsPK, true},
		{"jobs", "JobPrefix", JobPrefix, false},
		{"locks", "LockPrefix", LockPrefix, false},
	},
	"rq_pk": {
		{"dynamo", "ReadyOrchestratorPrefix", ReadyOrchestratorPrefix, false},
		{"dynamo", "ReadyWorkerPrefix", ReadyWorkerPrefix, false},
	},
	"li_pk": {
		{"dynamo", "ListInstancesPrefix", ListInstancesPrefix, false},
		{"dynamo", "ListSessionsPrefix", ListSessionsPrefix, false},
		{"jobs", "JobIndexPrefix", JobIndexPrefix, false},
		{"locks", "LockIndexPrefix", LockIndexPrefix, false},
	},
}

// TestPartitionPrefixesAreDistinct checks that within each attribute no
// prefix is a prefix of another, so that no value after one prefix makes a
// key that starts with another: a job id never makes a pk that parses as an
// instance's, a lock key never one that parses as a job's.
func TestPartitionPrefixesAreDistinct(t *testing.T) {
	for attr, prefixes := range partitionPrefixes {
		for i, a := range prefixes {
			if a.value == "" {
				t.Errorf("%s: %s.%s is empty", attr, a.owner, a.name)
			}
			for j, b := range prefixes {
				if i == j {
					continue
				}
				if strings.HasPrefix(a.value, b.value) {
					t.Errorf("%s: %s.%s %q starts with %s.%s %q", attr, a.owner, a.name, a.value, b.owner, b.name, b.value)
				}
				values := hostile
				if a.whole {
					values = []string{""}
				}
				for _, v := range values {
					if k := a.value + v; strings.HasPrefix(k, b.value) {
						t.Errorf("%s: %s.%s key %q parses as %s.%s", attr, a.owner, a.name, k, b.owner, b.name)
					}
				}
			}
		}
	}
}
