package dynamo

import (
	"fmt"
	"testing"
)

func historyRow(id int) item {
	return item{attrEvent: s(fmt.Sprintf(`{"event_id":%d}`, id))}
}

// TestHistoryCacheValidity: an entry serves a fetch only for the lock row
// its ack left (both turn records as they were) and the same execution.
func TestHistoryCacheValidity(t *testing.T) {
	var c historyCache
	rows := []item{historyRow(1)}
	c.fetched("x", 1, "tok1", lockRow{}, rows)
	if _, ok := c.lookup("x", 1, lockRow{}); ok {
		t.Fatal("an entry no ack made valid served a fetch")
	}
	c.acked("x", "tok1", 1, []item{historyRow(2)}, "small-1", "large-0")
	got, ok := c.lookup("x", 1, lockRow{smallDone: "small-1", turnDone: "large-0"})
	if !ok || len(got) != 2 {
		t.Fatalf("after the ack: %d rows, hit %v; want the 2 rows", len(got), ok)
	}
	for name, lock := range map[string]lockRow{
		"another process's ack": {smallDone: "small-other", turnDone: "large-0"},
		"a large turn":          {smallDone: "small-1", turnDone: "large-1"},
		"a recreated instance":  {},
		"an append":             {smallDone: "small-1", turnDone: "large-0", histMark: "m"},
	} {
		if _, ok := c.lookup("x", 1, lock); ok {
			t.Errorf("the entry served a fetch after %s", name)
		}
	}
	if _, ok := c.lookup("x", 2, lockRow{smallDone: "small-1", turnDone: "large-0"}); ok {
		t.Error("the entry served another execution")
	}

	// The next turn fetched from the cache and acked: the entry grows.
	c.fetched("x", 1, "tok2", lockRow{smallDone: "small-1", turnDone: "large-0"}, got)
	c.acked("x", "tok2", 1, []item{historyRow(3)}, "small-2", "large-0")
	if got, ok := c.lookup("x", 1, lockRow{smallDone: "small-2", turnDone: "large-0"}); !ok || len(got) != 3 {
		t.Fatalf("after the second ack: %d rows, hit %v; want 3", len(got), ok)
	}
	// An ack of a token that did not fetch these rows drops the entry.
	c.acked("x", "tok-unknown", 1, []item{historyRow(4)}, "small-3", "large-0")
	if _, ok := c.lookup("x", 1, lockRow{smallDone: "small-3", turnDone: "large-0"}); ok {
		t.Fatal("an ack of another token made the entry valid")
	}
	c.fetched("y", 1, "t", lockRow{}, []item{historyRow(1)})
	c.drop("y")
	if c.bytes != 0 || len(c.entries) != 0 {
		t.Fatalf("empty cache counts %d bytes, %d entries", c.bytes, len(c.entries))
	}
}

// TestHistoryCacheBounded: the cache keeps within its byte bound.
func TestHistoryCacheBounded(t *testing.T) {
	var c historyCache
	big := make([]item, 0, 1024)
	for i := range 1024 {
		big = append(big, item{attrEvent: s(fmt.Sprintf(`{"event_id":%d,"pad":"%01000d"}`, i, 0))})
	}
	for i := range 200 { // 200 × ~1 MB
		id := fmt.Sprintf("i%d", i)
		c.fetched(id, 1, "t", lockRow{}, big)
		if c.bytes > maxHistoryCacheBytes {
			t.Fatalf("after %d instances the cache holds %d bytes", i+1, c.bytes)
		}
	}
	if _, ok := c.entries["i199"]; !ok {
		t.Fatal("the newest entry was evicted")
	}
}
