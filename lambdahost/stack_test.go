package lambdahost_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/lambdasim"
	"github.com/duradyn/duradyn/internal/testlog"
	"github.com/duradyn/duradyn/lambdahost"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/queues"
)

// TestMain shares one emulator between the tests and stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// stackConfig describes a simulated deployment.
type stackConfig struct {
	reg *durable.Registry
	// timeout is the function's; default 10 s.
	timeout time.Duration
	// maxEnvs bounds the environments (reserved concurrency); default 8.
	maxEnvs int
	// concurrency is each mapping's maximum concurrency; default 3.
	concurrency int
	// batchSize is each mapping's; default 10.
	batchSize int
	// visibility is the queues' visibility timeout; default 12 s.
	visibility time.Duration
	// sweepEvery runs the sweep schedule at that rate; 0: no schedule.
	sweepEvery time.Duration
	// chaos kills invocations (lambdasim.Function.Chaos).
	chaos func(lambdasim.Invocation) (time.Duration, bool)
	// host adjusts every environment's host options.
	host func(*lambdahost.Options)
	// logLevel is the least level logged through the test; default Warn.
	logLevel slog.Level
}

// stack is a Lambda deployment on the emulators: a table and its two
// queues, the function (in-process environments, each with its own
// transport, which a kill cuts), an event source mapping per queue, the
// sweep schedule, and a client of its own.
type stack struct {
	env    *dynamotest.Env
	fn     *lambdasim.Function
	esm    [2]*lambdasim.EventSourceMapping
	sweeps *lambdasim.Schedule
	client *durable.Client
	sqs    *sqs.Client

	mu    sync.Mutex
	hosts []*lambdahost.Host
	// receives counts the ReceiveMessage calls of the hosts' providers,
	// which the mappings alone must make.
	receives atomic.Int64
}

// newStack builds a stack; nothing runs until start.
func newStack(t *testing.T, c stackConfig) *stack {
	t.Helper()
	if c.timeout == 0 {
		c.timeout = 10 * time.Second
	}
	if c.maxEnvs == 0 {
		c.maxEnvs = 8
	}
	if c.concurrency == 0 {
		c.concurrency = 3
	}
	if c.visibility == 0 {
		c.visibility = 12 * time.Second
	}
	if c.logLevel == 0 {
		c.logLevel = slog.LevelWarn
	}
	env := dynamotest.NewEnv(t, true)
	s := &stack{env: env, sqs: env.Endpoints.SQS(env.AWS)}
	for _, url := range []string{env.OrchestratorQueueURL, env.WorkerQueueURL} {
		setVisibility(t, s.sqs, url, c.visibility)
	}
	s.client = durable.NewClient(env.NewProvider(t, dynamotest.Config{Queues: true}))
	log := levelLogger(t, c.logLevel)
	s.fn = &lambdasim.Function{
		Timeout:         c.timeout,
		MaxEnvironments: c.maxEnvs,
		Chaos:           c.chaos,
		Logger:          log,
		New: func(ctx context.Context) (lambdasim.Environment, error) {
			return s.newEnvironment(ctx, c, log)
		},
	}
	for i, url := range []string{env.OrchestratorQueueURL, env.WorkerQueueURL} {
		s.esm[i] = &lambdasim.EventSourceMapping{
			Function: s.fn, SQS: s.sqs, QueueURL: url,
			BatchSize: c.batchSize, MaximumConcurrency: c.concurrency, Logger: log,
		}
	}
	if c.sweepEvery > 0 {
		s.sweeps = &lambdasim.Schedule{Function: s.fn, Every: c.sweepEvery, Payload: []byte(`{"duradyn":"sweep"}`)}
	}
	return s
}

// newEnvironment is the function's initialisation: a host whose AWS
// clients send through a transport of their own.
func (s *stack) newEnvironment(ctx context.Context, c stackConfig, log *slog.Logger) (lambdasim.Environment, error) {
	cut := lambdasim.NewCutoff(nil)
	sqsClient := s.env.Endpoints.SQS(s.env.AWS, func(o *sqs.Options) { o.HTTPClient = cut.HTTPClient() })
	h, err := lambdahost.New(ctx, c.reg, func(o *lambdahost.Options) {
		o.Logger = log
		o.SQSClient = sqsClient
		o.Provider = func(po *dynamo.Options) {
			po.TableName = s.env.Table
			po.OrchestratorQueueURL = s.env.OrchestratorQueueURL
			po.WorkerQueueURL = s.env.WorkerQueueURL
			po.Shards = 4
			po.Client = s.env.Endpoints.DynamoDB(s.env.AWS, dynamo.BoundClient(s.env.AWS, 5*time.Second),
				func(o *dynamodb.Options) { o.HTTPClient = cut.HTTPClient() })
			po.SQSClient = countReceives{API: sqsClient, n: &s.receives}
		}
		if c.host != nil {
			c.host(o)
		}
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.hosts = append(s.hosts, h)
	s.mu.Unlock()
	return &lambdasim.HandlerEnvironment{Handler: h.Handle, OnKill: cut.Cut, OnClose: h.Close}, nil
}

// start runs the mappings and the schedule until the returned stop is
// called; stop waits for every invocation and retires the function. The
// test fails if a mapping cannot run.
func (s *stack) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	for _, m := range s.esm {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil {
				t.Errorf("event source mapping: %v", err)
			}
		}()
	}
	if s.sweeps != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sweeps.Run(ctx)
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err := s.fn.Close(); err != nil {
				t.Errorf("close the function: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// stats sums the hosts' counters.
func (s *stack) stats() lambdahost.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum lambdahost.Stats
	for _, h := range s.hosts {
		st := h.Stats()
		sum.SQSInvocations += st.SQSInvocations
		sum.SweepInvocations += st.SweepInvocations
		sum.Records += st.Records
		sum.Failed += st.Failed
		sum.Held += st.Held
		sum.Ignored += st.Ignored
		sum.StoppedAtDeadline += st.StoppedAtDeadline
	}
	return sum
}

// countReceives counts the ReceiveMessage calls of a provider's queues.
type countReceives struct {
	queues.API
	n *atomic.Int64
}

func (c countReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.n.Add(1)
	return c.API.ReceiveMessage(ctx, in, optFns...)
}

// setVisibility sets a queue's visibility timeout.
func setVisibility(t *testing.T, c *sqs.Client, url string, d time.Duration) {
	t.Helper()
	_, err := c.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(url),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(d / time.Second))},
	})
	if err != nil {
		t.Fatalf("set the visibility timeout of %s: %v", url, err)
	}
}

// levelLogger logs records of level and above through t.
func levelLogger(t *testing.T, level slog.Level) *slog.Logger {
	return slog.New(levelHandler{Handler: testlog.New(t).Handler(), level: level})
}

type levelHandler struct {
	slog.Handler
	level slog.Level
}

func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h levelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(a), level: h.level}
}
func (h levelHandler) WithGroup(g string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(g), level: h.level}
}
