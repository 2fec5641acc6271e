package dynamo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

// TestTurnCacheBoundedInBytes: turns whose locks ended without an ack stay
// in the cache until pushed out. With instances that carry large KV stores
// the count bound alone let the cache hold gigabytes; the byte bound keeps
// it under maxCachedTurnBytes, pushing out the oldest turns first and
// always keeping the newest.
func TestTurnCacheBoundedInBytes(t *testing.T) {
	c := newTurnCache()
	big := strings.Repeat("v", 1<<20)
	const turns = 200 // 200 MB of KV values in all
	for i := range turns {
		st := &instanceState{id: fmt.Sprintf("i%d", i), kvStore: map[string]provider.KVEntry{"k": {Value: big}}}
		c.put(&turnState{token: fmt.Sprintf("t%d", i), st: st})
		if c.bytes > maxCachedTurnBytes {
			t.Fatalf("after %d turns of 1 MB the cache holds %d bytes, more than %d", i+1, c.bytes, maxCachedTurnBytes)
		}
	}
	if c.get(fmt.Sprintf("t%d", turns-1)) == nil {
		t.Fatal("the newest turn was pushed out")
	}
	if c.get("t0") != nil {
		t.Fatal("the oldest turn is still cached")
	}
	// A turn larger than the whole bound is still kept while it is the
	// newest: its ack needs it.
	huge := strings.Repeat("v", maxCachedTurnBytes+1)
	c.put(&turnState{token: "huge", st: &instanceState{id: "huge", kvStore: map[string]provider.KVEntry{"k": {Value: huge}}}})
	if c.get("huge") == nil || len(c.m) != 1 {
		t.Fatalf("after a turn over the bound: %d turns cached, the huge one present: %v", len(c.m), c.get("huge") != nil)
	}
	c.drop("huge")
	if c.bytes != 0 {
		t.Fatalf("an empty cache counts %d bytes", c.bytes)
	}
}
