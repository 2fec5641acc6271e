package faults

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestRemember checks which snapshot a query is served and which ones are
// kept, with a clock that moves and with one that stands still.
func TestRemember(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := func(sec int, tag string) snapshot {
		return snapshot{index: "ready", at: t0.Add(time.Duration(sec) * time.Second), rows: []item{{"tag": s(tag)}}}
	}
	served := func(rows []item) string {
		v, _ := rows[0]["tag"].(*types.AttributeValueMemberS)
		return v.Value
	}
	in := New(1)
	lr := lagRange{10 * time.Second, 10 * time.Second}
	for _, step := range []struct {
		sec       int
		tag, want string
		snapshots int
	}{
		{0, "a", "a", 1},  // the first query sees the present
		{5, "b", "a", 2},  // nothing is 10 s old: the oldest
		{10, "c", "a", 3}, // a is 10 s old
		{16, "d", "b", 3}, // b is the newest 10 s old; a is dropped
		{16, "e", "b", 3}, // same time: e replaces d, which can no longer be served
		{30, "g", "e", 2}, // e served; all before it dropped
		{30, "h", "e", 2}, // h replaces g
		{50, "i", "h", 2},
	} {
		got := served(in.remember(snap(step.sec, step.tag), partitionKey("t", "ready", s("R")), lr))
		if got != step.want {
			t.Errorf("at %d s: served %s, want %s", step.sec, got, step.want)
		}
		if n := len(in.snapshots["t\x00ready\x00SR"]); n != step.snapshots {
			t.Errorf("at %d s: %d snapshots kept, want %d", step.sec, n, step.snapshots)
		}
	}
}

// TestRemember_StandingClock checks that a clock that never moves keeps
// serving the first snapshot without piling up snapshots.
func TestRemember_StandingClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	in := New(1)
	for i, tag := range []string{"a", "b", "c", "d", "e"} {
		rows := in.remember(snapshot{index: "ready", at: at, rows: []item{{"tag": s(tag)}}}, partitionKey("t", "ready", s("R")), lagRange{time.Second, time.Second})
		if got := rows[0]["tag"].(*types.AttributeValueMemberS).Value; got != "a" {
			t.Errorf("query %d served %s, want a", i, got)
		}
	}
	if n := len(in.snapshots["t\x00ready\x00SR"]); n != 2 {
		t.Errorf("%d snapshots kept, want 2", n)
	}
}
