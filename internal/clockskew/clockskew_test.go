package clockskew_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/internal/clockskew/skewtest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestIntervalsIntersect: each response bounds the skew to
// [sent − server − 1 s, received − server]; successive ones narrow it,
// and one that contradicts the estimate (a stepped clock) starts it again.
func TestIntervalsIntersect(t *testing.T) {
	var l skewtest.Warnings
	w := clockskew.New("test", time.Now, time.Second, l.Logger(), "assumed")
	if _, _, ok := w.Estimate(); ok {
		t.Fatal("estimate before any response: ok")
	}
	// Local clock 300 ms ahead; requests take 10 ms. A response read at
	// local time t carries the server's whole second before t − 300 ms.
	const ahead = 300 * time.Millisecond
	observe := func(local time.Time) {
		server := local.Add(-ahead).Truncate(time.Second)
		w.Observe(local.Add(-10*time.Millisecond), local, server)
	}
	observe(epoch.Add(500 * time.Millisecond))
	skew, within, ok := w.Estimate()
	if !ok || within < 500*time.Millisecond || skew-within > ahead || skew+within < ahead {
		t.Fatalf("after one response: %v ± %v (ok %v), want an interval about a second wide around %v", skew, within, ok, ahead)
	}
	for i := range 40 {
		observe(epoch.Add(time.Duration(i)*137*time.Millisecond + time.Second))
	}
	skew, within, _ = w.Estimate()
	if within > 50*time.Millisecond || skew-within > ahead || skew+within < ahead {
		t.Fatalf("after 41 responses: %v ± %v, want within 50 ms of %v", skew, within, ahead)
	}
	// The local clock is stepped 10 s ahead: the next response starts
	// the estimate again and warns.
	stepped := epoch.Add(time.Minute)
	w.Observe(stepped.Add(10*time.Second-10*time.Millisecond), stepped.Add(10*time.Second), stepped.Add(-ahead).Truncate(time.Second))
	skew, within, _ = w.Estimate()
	if skew-within > 10*time.Second+ahead || skew+within < 10*time.Second+ahead {
		t.Fatalf("after a step: %v ± %v, want around %v", skew, within, 10*time.Second+ahead)
	}
	if len(l.Lines()) != 1 || !strings.HasPrefix(l.Lines()[0], "test: this process's clock is off from DynamoDB's; assumed skew=10.") || !strings.Contains(l.Lines()[0], " threshold=1s") {
		t.Fatalf("logged %q, want one warning", l.Lines())
	}
}

// TestWarnsOncePerEpisode: a skew beyond the threshold is logged when it
// is first seen, not on every response, and again after it came back
// within the threshold and went beyond it once more.
func TestWarnsOncePerEpisode(t *testing.T) {
	var l skewtest.Warnings
	w := clockskew.New("test", time.Now, time.Second, l.Logger(), "assumed")
	at := func(skew time.Duration, n int) {
		for i := range n {
			local := epoch.Add(time.Duration(i) * time.Minute)
			w.Observe(local, local, local.Add(-skew).Truncate(time.Second))
		}
	}
	at(3*time.Second, 5)
	if len(l.Lines()) != 1 {
		t.Fatalf("%d warnings for a skew of 3 s seen 5 times, want 1: %q", len(l.Lines()), l.Lines())
	}
	at(0, 5)
	if len(l.Lines()) != 1 {
		t.Fatalf("%d warnings after the skew went, want still 1", len(l.Lines()))
	}
	at(-3*time.Second, 5)
	if len(l.Lines()) != 2 || !strings.Contains(l.Lines()[1], " skew=-") {
		t.Fatalf("logged %q, want a second warning of a clock behind", l.Lines())
	}
}

// TestOptionObservesEveryResponse: the per-call option reads the Date
// header of each HTTP response of a real SDK client, errors and retried
// attempts included.
func TestOptionObservesEveryResponse(t *testing.T) {
	const ahead = 5 * time.Second
	var served int
	var mu sync.Mutex
	server := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		served++
		n := served
		mu.Unlock()
		rw.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		rw.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if n == 1 { // a throttled attempt, which the SDK retries
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(rw, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}`)
			return
		}
		fmt.Fprint(rw, `{}`)
	}))
	defer server.Close()
	client := dynamodb.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(server.URL),
	})
	var l skewtest.Warnings
	w := clockskew.New("test", func() time.Time { return time.Now().Add(ahead) }, time.Second, l.Logger(), "assumed")
	get := &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}
	if _, err := client.GetItem(t.Context(), get, w.Option); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	attempts := served
	mu.Unlock()
	if attempts != 2 || clockskew.Samples(w) != 2 {
		t.Fatalf("server saw %d attempts, the watch %d, want 2 each (one throttled, retried)", attempts, clockskew.Samples(w))
	}
	skew, within, ok := w.Estimate()
	if !ok || skew-within > ahead+100*time.Millisecond || skew+within < ahead-100*time.Millisecond {
		t.Fatalf("estimate %v ± %v (ok %v), want about %v", skew, within, ok, ahead)
	}
	if len(l.Lines()) != 1 {
		t.Fatalf("logged %q, want one warning", l.Lines())
	}
}

// TestWarning: a zero option means the default threshold, a negative one
// is refused with ErrNegativeWarning, any other is kept.
func TestWarning(t *testing.T) {
	if got, err := clockskew.Warning(0); err != nil || got != clockskew.DefaultWarning {
		t.Errorf("Warning(0) = %v, %v; want %v", got, err, clockskew.DefaultWarning)
	}
	if got, err := clockskew.Warning(3 * time.Second); err != nil || got != 3*time.Second {
		t.Errorf("Warning(3s) = %v, %v; want 3s", got, err)
	}
	if _, err := clockskew.Warning(-time.Second); !errors.Is(err, clockskew.ErrNegativeWarning) {
		t.Errorf("Warning(-1s) error %v; want ErrNegativeWarning", err)
	}
}
