package dynamo_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// TestLongHistoryIsReadInSegments: a history longer than a page is read
// with its first page, a Query of its last key, and the rest in segments
// at once; every event comes back once and in order, whether the event ids
// are dense (as turns write them) or not.
func TestLongHistoryIsReadInSegments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		step uint64
	}{{"dense ids", 1}, {"sparse ids", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			// Uncompressed: 1.5 KB of one letter compresses to a few bytes.
			p, _, counter := countingProvider(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) { o.DisablePayloadCompression = true }})
			const inst, events = "long-history", 2400
			payload := strings.Repeat("x", 1500) // about 3.7 MB in all: four pages
			var evs []provider.Event
			for i := range uint64(events) {
				evs = append(evs, ev(1+i*tc.step, inst, provider.ActivityScheduled{Name: "A", Input: fmt.Sprintf("%d-%s", i, payload)}))
			}
			evs[0] = started(inst)
			for len(evs) > 0 {
				n := min(1000, len(evs))
				must(t, p.AppendWithExecution(ctx, inst, 1, evs[:n]), "append")
				evs = evs[n:]
			}
			counter.queries.Store(0)
			counter.mostSeen.Store(0)
			got, err := p.ReadWithExecution(ctx, inst, 1)
			must(t, err, "ReadWithExecution")
			if len(got) != events {
				t.Fatalf("read %d events, want %d", len(got), events)
			}
			for i, e := range got {
				if want := 1 + uint64(i)*tc.step; e.EventID != want {
					t.Fatalf("event %d has id %d, want %d", i, e.EventID, want)
				}
			}
			// The first page, the last key, and at least two segments read
			// at once.
			if n, most := counter.queries.Load(), counter.mostSeen.Load(); n < 4 || most < 2 {
				t.Errorf("%d Queries, at most %d at once; want the history read in segments at once", n, most)
			}
		})
	}
}
