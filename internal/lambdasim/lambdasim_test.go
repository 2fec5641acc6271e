package lambdasim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/internal/lambdasim"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator between the tests and stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// queue creates a queue with the visibility timeout vt and returns a
// client and its URL.
func queue(t *testing.T, vt time.Duration) (*sqs.Client, string) {
	t.Helper()
	ep := localstack.ForTest(t)
	cfg, err := ep.AWSConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := ep.SQS(cfg)
	url := localstack.NewQueue(t, ep, localstack.UniqueName(t, "sim"))
	_, err = c.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(vt / time.Second))}})
	if err != nil {
		t.Fatal(err)
	}
	return c, url
}

func send(t *testing.T, c *sqs.Client, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

// handlerFunction is a function whose environments run handler in this
// process.
func handlerFunction(t *testing.T, timeout time.Duration, handler func(context.Context, json.RawMessage) (any, error)) *lambdasim.Function {
	return &lambdasim.Function{
		Timeout: timeout,
		Logger:  testlog.New(t),
		New: func(context.Context) (lambdasim.Environment, error) {
			return &lambdasim.HandlerEnvironment{Handler: handler}, nil
		},
	}
}

// runMapping runs m until the returned stop is called.
func runMapping(t *testing.T, m *lambdasim.EventSourceMapping) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if err := m.Function.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// deliveries records what a handler was given.
type deliveries struct {
	mu    sync.Mutex
	times map[string][]time.Time // body → when it was delivered
	ch    chan struct{}          // a token per delivery
}

func newDeliveries() *deliveries {
	return &deliveries{times: map[string][]time.Time{}, ch: make(chan struct{}, 1000)}
}

func (d *deliveries) add(body string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.times[body] = append(d.times[body], time.Now())
	d.ch <- struct{}{}
	return len(d.times[body])
}

func (d *deliveries) of(body string) []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.times[body]...)
}

// await waits for n deliveries in all.
func (d *deliveries) await(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for range n {
		select {
		case <-d.ch:
		case <-timeout:
			t.Fatalf("fewer than %d deliveries within a minute", n)
		}
	}
}

// TestMappingDeletesWhatSucceeded: the mapping invokes the function with
// a real SQS event, deletes the messages the response does not list, and
// leaves the failed one to the queue's visibility timeout, after which it
// comes back, once.
func TestMappingDeletesWhatSucceeded(t *testing.T) {
	t.Parallel()
	c, url := queue(t, 2*time.Second)
	got := newDeliveries()
	fn := handlerFunction(t, 2*time.Second, func(_ context.Context, payload json.RawMessage) (any, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if r.EventSource != "aws:sqs" || r.ReceiptHandle == "" || r.Attributes["ApproximateReceiveCount"] == "" {
				t.Errorf("record %+v lacks what Lambda gives a function", r)
			}
			if got.add(r.Body) == 1 && r.Body == "b" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	})
	m := &lambdasim.EventSourceMapping{Function: fn, SQS: c, QueueURL: url}
	send(t, c, url, "a", "b", "c")
	stop := runMapping(t, m)
	got.await(t, 4)
	stop()
	for body, want := range map[string]int{"a": 1, "b": 2, "c": 1} {
		if n := len(got.of(body)); n != want {
			t.Errorf("%s delivered %d times, want %d", body, n, want)
		}
	}
	if b := got.of("b"); len(b) == 2 && b[1].Sub(b[0]) < 1500*time.Millisecond {
		t.Errorf("the failed message came back after %v, before the 2 s visibility timeout", b[1].Sub(b[0]))
	}
	if st := m.Stats(); st.Deleted != 3 || st.ItemFailures != 1 {
		t.Errorf("stats %+v, want 3 deleted and 1 item failure", st)
	}
}

// TestFailedInvocationDeletesNothing: a function error, and a response
// naming a message that is not in the batch, leave the whole batch to the
// visibility timeout.
func TestFailedInvocationDeletesNothing(t *testing.T) {
	t.Parallel()
	c, url := queue(t, 2*time.Second)
	got := newDeliveries()
	var calls atomic.Int64
	fn := handlerFunction(t, 2*time.Second, func(_ context.Context, payload json.RawMessage) (any, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		for _, r := range ev.Records {
			got.add(r.Body)
		}
		switch calls.Add(1) {
		case 1:
			return nil, errors.New("boom")
		case 2:
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-in-the-batch"}}}, nil
		}
		return events.SQSEventResponse{}, nil
	})
	m := &lambdasim.EventSourceMapping{Function: fn, SQS: c, QueueURL: url, MaximumConcurrency: 2}
	send(t, c, url, "x")
	stop := runMapping(t, m)
	got.await(t, 3)
	stop()
	if n := len(got.of("x")); n != 3 {
		t.Errorf("x delivered %d times, want 3 (an error, an invalid response, a success)", n)
	}
	if st := m.Stats(); st.FailedBatches != 2 || st.Deleted != 1 {
		t.Errorf("stats %+v, want 2 failed batches and 1 deletion", st)
	}
}

// TestMappingBoundsConcurrency: with MaximumConcurrency 2, never more than
// two invocations run at once, however many messages wait.
func TestMappingBoundsConcurrency(t *testing.T) {
	t.Parallel()
	c, url := queue(t, 30*time.Second)
	var active, most atomic.Int64
	got := newDeliveries()
	fn := handlerFunction(t, 5*time.Second, func(_ context.Context, payload json.RawMessage) (any, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond) // the work
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		for _, r := range ev.Records {
			got.add(r.Body)
		}
		return events.SQSEventResponse{}, nil
	})
	m := &lambdasim.EventSourceMapping{Function: fn, SQS: c, QueueURL: url, BatchSize: 1, MaximumConcurrency: 2}
	for i := range 12 {
		send(t, c, url, strconv.Itoa(i))
	}
	stop := runMapping(t, m)
	got.await(t, 12)
	stop()
	if n := most.Load(); n > 2 {
		t.Errorf("%d invocations ran at once, want at most 2", n)
	}
	t.Logf("at most %d at once", most.Load())
}

// TestFunctionKillsWhatOutlivesItsDeadline: a handler that ignores its
// context is killed at the deadline with its environment, and the next
// invocation starts a new one.
func TestFunctionKillsWhatOutlivesItsDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var kills, inits atomic.Int64
	fn := &lambdasim.Function{
		Timeout: 300 * time.Millisecond,
		New: func(context.Context) (lambdasim.Environment, error) {
			inits.Add(1)
			return &lambdasim.HandlerEnvironment{
				Handler: func(ctx context.Context, p json.RawMessage) (any, error) {
					if string(p) == `"hang"` {
						<-release
					}
					return "ok", nil
				},
				OnKill: func() { kills.Add(1) },
			}, nil
		},
	}
	began := time.Now()
	if _, err := fn.Invoke(t.Context(), []byte(`"hang"`)); !errors.Is(err, lambdasim.ErrTimedOut) {
		t.Fatalf("Invoke = %v, want ErrTimedOut", err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("timed out after %v, before the 300 ms timeout", took)
	}
	close(release)
	out, err := fn.Invoke(t.Context(), []byte(`"fine"`))
	if err != nil || string(out) != `"ok"` {
		t.Fatalf("second Invoke = %s, %v", out, err)
	}
	if kills.Load() != 1 || inits.Load() != 2 {
		t.Errorf("%d kills and %d environments, want 1 kill and a new environment for the second invocation", kills.Load(), inits.Load())
	}
	recs := fn.Records()
	if len(recs) != 2 || recs[0].Outcome != lambdasim.TimedOut || !recs[1].ColdStart || recs[1].Outcome != lambdasim.Succeeded {
		t.Errorf("records %+v", recs)
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestChaosKillsMidFlight: Chaos kills an invocation: its environment's
// transport is cut, its context ends, and the caller gets ErrKilled.
func TestChaosKillsMidFlight(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers nothing: the request is in flight at the kill
	}))
	defer srv.Close()
	cut := lambdasim.NewCutoff(nil)
	reqErr := make(chan error, 1)
	fn := &lambdasim.Function{
		Timeout: 10 * time.Second,
		Chaos:   func(lambdasim.Invocation) (time.Duration, bool) { return 100 * time.Millisecond, true },
		New: func(context.Context) (lambdasim.Environment, error) {
			return &lambdasim.HandlerEnvironment{
				Handler: func(ctx context.Context, _ json.RawMessage) (any, error) {
					req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, srv.URL, nil)
					resp, err := cut.HTTPClient().Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					reqErr <- err
					return nil, ctx.Err()
				},
				OnKill: cut.Cut,
			}, nil
		},
	}
	if _, err := fn.Invoke(t.Context(), []byte(`{}`)); !errors.Is(err, lambdasim.ErrKilled) {
		t.Fatalf("Invoke = %v, want ErrKilled", err)
	}
	if err := <-reqErr; !errors.Is(err, lambdasim.ErrCutOff) {
		t.Errorf("the request in flight at the kill ended with %v, want ErrCutOff", err)
	}
	if _, err := cut.HTTPClient().Get(srv.URL); !errors.Is(err, lambdasim.ErrCutOff) {
		t.Errorf("a request after the kill: %v, want ErrCutOff", err)
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleFires: a schedule invokes the function at its rate with its
// payload.
func TestScheduleFires(t *testing.T) {
	t.Parallel()
	fired := make(chan string, 10)
	fn := handlerFunction(t, time.Second, func(_ context.Context, p json.RawMessage) (any, error) {
		select {
		case fired <- string(p):
		default:
		}
		return nil, nil
	})
	s := &lambdasim.Schedule{Function: fn, Every: 50 * time.Millisecond, Payload: []byte(`{"duradyn":"sweep"}`)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	for range 3 {
		if p := <-fired; p != `{"duradyn":"sweep"}` {
			t.Errorf("payload %s", p)
		}
	}
	cancel()
	<-done
	if st := s.Stats(); st.Invocations < 3 || st.Failures != 0 {
		t.Errorf("stats %+v, want 3 or more invocations, no failure", st)
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
}
