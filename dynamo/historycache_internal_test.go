package dynamo

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/duradyn/duradyn/provider"
)

// historyRow is a stored history row of one event: an ActivityScheduled
// with event id id.
func historyRow(id int) item {
	return item{attrEvent: s(fmt.Sprintf(`{"event_id":%d,"source_event_id":null,"instance_id":"x","execution_id":1,"timestamp_ms":0,"duroxide_version":"0.1.0","type":"ActivityScheduled","name":"a","input":"in-%d"}`, id, id))}
}

// historyOf decodes rows as a fetch would, with the size the cache counts.
func historyOf(t *testing.T, rows ...item) ([]provider.Event, int) {
	t.Helper()
	events, bytes, err := decodeHistorySized(provider.OpFetchOrchestrationItem, "x", 1, rows)
	if err != nil {
		t.Fatal(err)
	}
	return events, bytes
}

// TestHistoryCacheValidity: an entry serves a fetch only for the lock row
// its ack left (both turn records as they were) and the same execution.
func TestHistoryCacheValidity(t *testing.T) {
	var c historyCache
	first, size := historyOf(t, historyRow(1))
	c.fetched("x", 1, "tok1", lockRow{}, first, size)
	if _, _, ok := c.lookup("x", 1, lockRow{}); ok {
		t.Fatal("an entry no ack made valid served a fetch")
	}
	c.acked("x", "tok1", 1, []item{historyRow(2)}, "small-1", "large-0")
	got, gotBytes, ok := c.lookup("x", 1, lockRow{smallDone: "small-1", turnDone: "large-0"})
	if _, want := historyOf(t, historyRow(1), historyRow(2)); !ok || len(got) != 2 || gotBytes != want {
		t.Fatalf("after the ack: %d events of %d bytes, hit %v; want the 2 events", len(got), gotBytes, ok)
	}
	for name, lock := range map[string]lockRow{
		"another process's ack": {smallDone: "small-other", turnDone: "large-0"},
		"a large turn":          {smallDone: "small-1", turnDone: "large-1"},
		"a recreated instance":  {},
		"an append":             {smallDone: "small-1", turnDone: "large-0", histMark: "m"},
	} {
		if _, _, ok := c.lookup("x", 1, lock); ok {
			t.Errorf("the entry served a fetch after %s", name)
		}
	}
	if _, _, ok := c.lookup("x", 2, lockRow{smallDone: "small-1", turnDone: "large-0"}); ok {
		t.Error("the entry served another execution")
	}

	// The next turn fetched from the cache and acked: the entry grows.
	c.fetched("x", 1, "tok2", lockRow{smallDone: "small-1", turnDone: "large-0"}, got, gotBytes)
	c.acked("x", "tok2", 1, []item{historyRow(3)}, "small-2", "large-0")
	if got, _, ok := c.lookup("x", 1, lockRow{smallDone: "small-2", turnDone: "large-0"}); !ok || len(got) != 3 {
		t.Fatalf("after the second ack: %d events, hit %v; want 3", len(got), ok)
	}
	// An ack of a token that did not fetch these events drops the entry.
	c.acked("x", "tok-unknown", 1, []item{historyRow(4)}, "small-3", "large-0")
	if _, _, ok := c.lookup("x", 1, lockRow{smallDone: "small-3", turnDone: "large-0"}); ok {
		t.Fatal("an ack of another token made the entry valid")
	}
	one, size := historyOf(t, historyRow(1))
	c.fetched("y", 1, "t", lockRow{}, one, size)
	c.drop("y")
	c.drop("x")
	if c.bytes != 0 || len(c.entries) != 0 {
		t.Fatalf("empty cache counts %d bytes, %d entries", c.bytes, len(c.entries))
	}
	// Events a fetch took from an entry evicted before the fetch returned
	// come back with the size the entry counted.
	c.fetched("x", 1, "tok4", lockRow{}, got, gotBytes)
	if c.bytes != gotBytes {
		t.Fatalf("an entry made again from cached events counts %d bytes, want %d", c.bytes, gotBytes)
	}
}

// TestHistoryCacheServesWhatTheStoreHolds: the events a fetch takes from
// the cache are those a fetch decoding the stored rows gets, the ack's
// rows included; a slice handed out is not changed by later acks; rows an
// ack wrote that do not decode drop the entry instead of serving a
// history the store would not give.
func TestHistoryCacheServesWhatTheStoreHolds(t *testing.T) {
	var c historyCache
	first, size := historyOf(t, historyRow(1))
	c.fetched("x", 1, "tok1", lockRow{}, first, size)
	c.acked("x", "tok1", 1, []item{historyRow(2), historyRow(3)}, "small-1", "")
	lock := lockRow{smallDone: "small-1"}
	got, gotBytes, ok := c.lookup("x", 1, lock)
	want, _ := historyOf(t, historyRow(1), historyRow(2), historyRow(3))
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("cached history %+v (hit %v), want the stored rows decoded %+v", got, ok, want)
	}
	if cap(got) != len(got) {
		t.Fatalf("a slice handed out has room for %d more events: an append by its holder would write into the cache", cap(got)-len(got))
	}
	held := append([]provider.Event(nil), got...)

	// The turn that holds got acks 30 events; its next fetch sees them,
	// and got still holds what it held.
	for i := range 30 {
		c.fetched("x", 1, fmt.Sprintf("tok%d", i+2), lock, got, gotBytes)
		lock = lockRow{smallDone: fmt.Sprintf("small-%d", i+2)}
		c.acked("x", fmt.Sprintf("tok%d", i+2), 1, []item{historyRow(4 + i)}, lock.smallDone, "")
		if got, gotBytes, ok = c.lookup("x", 1, lock); !ok || len(got) != 4+i {
			t.Fatalf("after ack %d: %d events, hit %v", i+1, len(got), ok)
		}
		if cap(got) != len(got) {
			t.Fatalf("after ack %d: a slice handed out has room for %d more events", i+1, cap(got)-len(got))
		}
	}
	if got[0].EventID != 1 || got[len(got)-1].EventID != 33 {
		t.Fatalf("history runs from event %d to %d, want 1 to 33", got[0].EventID, got[len(got)-1].EventID)
	}
	first3, _, _ := c.lookup("x", 1, lock)
	if !reflect.DeepEqual(first3[:3], held) {
		t.Fatal("later acks changed the events a fetch had handed out")
	}

	// An ack whose rows do not decode.
	c.fetched("x", 1, "tok-bad", lock, got, gotBytes)
	c.acked("x", "tok-bad", 1, []item{{attrEvent: s(`{"event_id":`)}}, "small-bad", "")
	if _, _, ok := c.lookup("x", 1, lockRow{smallDone: "small-bad"}); ok {
		t.Fatal("an ack of rows that do not decode left an entry serving fetches")
	}
	if c.bytes != 0 {
		t.Fatalf("the cache counts %d bytes with no entry", c.bytes)
	}
}

// TestHistoryCacheBounded: the cache keeps within its byte bound.
func TestHistoryCacheBounded(t *testing.T) {
	var c historyCache
	rows := make([]item, 0, 1024)
	for i := range 1024 {
		rows = append(rows, item{attrEvent: s(fmt.Sprintf(`{"event_id":%d,"source_event_id":null,"instance_id":"x","execution_id":1,"timestamp_ms":0,"duroxide_version":"0.1.0","type":"ActivityScheduled","name":"a","input":"%01000d"}`, i+1, 0))})
	}
	big, size := historyOf(t, rows...)
	if size < 1024*1000 {
		t.Fatalf("1,024 events of a KB count %d bytes", size)
	}
	for i := range 200 { // 200 × ~1 MB
		id := fmt.Sprintf("i%d", i)
		c.fetched(id, 1, "t", lockRow{}, big, size)
		if c.bytes > maxHistoryCacheBytes {
			t.Fatalf("after %d instances the cache holds %d bytes", i+1, c.bytes)
		}
	}
	if _, ok := c.entries["i199"]; !ok {
		t.Fatal("the newest entry was evicted")
	}
}
