package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynoxide/dynoxide/dynamo"
	"github.com/dynoxide/dynoxide/dynamo/dynamotest"
	"github.com/dynoxide/dynoxide/provider"
)

// queryCounter counts the Queries of the table, not of an index, and the
// most that were under way at once.
type queryCounter struct {
	dynamo.API
	mu                      sync.Mutex
	queries, inFlight, most int
}

func (c *queryCounter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if in.IndexName != nil {
		return c.API.Query(ctx, in, optFns...)
	}
	c.mu.Lock()
	c.queries++
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	return c.API.Query(ctx, in, optFns...)
}

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
			counter := &queryCounter{}
			p, _ := dynamotest.New(t, dynamotest.Config{ShortPoll: true, Options: func(o *dynamo.Options) {
				counter.API = o.Client
				o.Client = counter
			}})
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
			counter.mu.Lock()
			counter.queries, counter.most = 0, 0
			counter.mu.Unlock()
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
			counter.mu.Lock()
			defer counter.mu.Unlock()
			// The first page, the last key, and at least two segments read
			// at once.
			if counter.queries < 4 || counter.most < 2 {
				t.Errorf("%d Queries, at most %d at once; want the history read in segments at once", counter.queries, counter.most)
			}
		})
	}
}
