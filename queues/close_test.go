package queues_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/queues"
)

// stallingAPI forwards to an SQS client; once armed, the next
// ReceiveMessage that brings messages reports got and holds its result,
// whatever its context does, until release is closed: a response that
// arrived as Close began.
type stallingAPI struct {
	queues.API
	armed   atomic.Bool
	got     chan struct{}
	release chan struct{}
}

func (s *stallingAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := s.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil && len(out.Messages) > 0 && s.armed.CompareAndSwap(true, false) {
		s.got <- struct{}{}
		<-s.release
	}
	return out, err
}

// A message a poller received just as Close began is not deleted unused:
// it comes back, after the receive's visibility timeout, for another
// process.
func TestSignals_MessageReceivedDuringCloseIsKept(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	orch := newQueue(t, "orch")
	stall := &stallingAPI{API: c, got: make(chan struct{}, 1), release: make(chan struct{})}
	stall.armed.Store(true)
	closing, err := queues.New(stall, queueURLs(orch, ""), func(o *queues.Options) { o.Logger = testlog.New(t) })
	if err != nil {
		t.Fatal(err)
	}
	sender := newSignals(t, c, queueURLs(orch, ""))

	waiting := goWait(t.Context(), closing, queues.Orchestrator, time.Minute)
	sig := queues.Signal{Kind: queues.Orchestrator, Shard: 3, Instance: "order-11"}
	if err := sender.Notify(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	<-stall.got // the poller has the message and has not dealt with it
	closed := make(chan error, 1)
	go func() { closed <- closing.Close() }()
	// Close has begun once a Wait refuses (one of no time, on a kind
	// without a queue, changes nothing before).
	for {
		if _, err := closing.Wait(t.Context(), queues.Worker, 0); errors.Is(err, queues.ErrClosed) {
			break
		}
		runtime.Gosched()
	}
	close(stall.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if r := result(t, waiting); !errors.Is(r.err, queues.ErrClosed) {
		t.Errorf("Wait during Close = %v, %v; want ErrClosed", r.sigs, r.err)
	}
	if st := closing.Stats(); st.DeleteMessageBatchRequests != 0 {
		t.Errorf("the closing process deleted the message: %+v", st)
	}
	if bodies := drain(t, c, orch, 5); len(bodies) != 1 || !strings.Contains(bodies[0], `"shard":3`) {
		t.Fatalf("queue held %q, want the signal back", bodies)
	}
}
