package scenario

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

// targetCounter counts the DynamoDB operations that pass a transport, by
// their X-Amz-Target header.
type targetCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int
}

func (c *targetCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if target := r.Header.Get("X-Amz-Target"); strings.HasPrefix(target, "DynamoDB_") {
		op := target[strings.IndexByte(target, '.')+1:]
		c.mu.Lock()
		c.ops[op]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *targetCounter) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// TestTimedScenarioRunsAgainWithoutTheMeter: a scenario that reports
// throughput runs a DynamoDB system twice, and the second run, whose times
// the result reports, reaches the endpoint without the meter: none of the
// BatchGetItem requests the meter reads item images with (one before every
// transaction), where the first run sends them. The provider itself sends
// no BatchGetItem.
func TestTimedScenarioRunsAgainWithoutTheMeter(t *testing.T) {
	system, ok := (&Env{}).system(DynamoDBSQS)
	if !ok {
		t.Fatalf("no system %s", DynamoDBSQS)
	}
	var mu sync.Mutex
	var runs []*targetCounter
	env := &Env{
		Endpoints: localstack.ForTest(t),
		Systems:   []System{system},
		Logf:      t.Logf,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		wrapTransport: func(next http.RoundTripper) http.RoundTripper {
			c := &targetCounter{next: next, ops: map[string]int{}}
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, c)
			return c
		},
	}
	results, err := HelloCities5(t.Context(), env, 2, Runtimes{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || !strings.Contains(results[0].Notes, unmeteredTimesNote) {
		t.Fatalf("results %+v, want one whose notes say its times are unmetered", results)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 {
		t.Fatalf("%d deployments set up, want 2 (metered, then for the times)", len(runs))
	}
	metered, timed := runs[0], runs[1]
	for name, run := range map[string]*targetCounter{"metered": metered, "timed": timed} {
		if run.count("TransactWriteItems") == 0 {
			t.Errorf("%s run: no transactions reached the endpoint: %v", name, run.ops)
		}
	}
	if got, transactions := metered.count("BatchGetItem"), metered.count("TransactWriteItems"); got < transactions {
		t.Errorf("metered run: %d BatchGetItem for %d transactions, want the meter's read before each", got, transactions)
	}
	if got := timed.count("BatchGetItem"); got != 0 {
		t.Errorf("timed run: %d BatchGetItem reached the endpoint, want none (no meter): %v", got, timed.ops)
	}
}
