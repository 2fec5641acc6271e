package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclocalstack "github.com/testcontainers/testcontainers-go/modules/localstack"
)

// errDockerUnavailable is wrapped by errors from probeDocker.
var errDockerUnavailable = errors.New("no healthy Docker provider")

// tcLogger adapts a logger to the testcontainers-go logger: each line
// testcontainers-go prints is logged at Info as "localstack:
// testcontainers-go", the line in the attribute "line".
type tcLogger struct{ l *slog.Logger }

// Printf is the method of the testcontainers-go log.Logger interface.
func (t tcLogger) Printf(format string, args ...any) {
	t.l.Info("localstack: testcontainers-go", "line", strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

// closingHandler passes records on to its handler until closed, and drops
// them after: once close returns, nothing more reaches the handler.
type closingHandler struct {
	h slog.Handler
	g *closeGate
}

// closeGate is the state closingHandler and the handlers derived from it
// share.
type closeGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *closeGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

func (c closingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return c.h.Enabled(ctx, l)
}

func (c closingHandler) Handle(ctx context.Context, r slog.Record) error {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.closed {
		return nil
	}
	return c.h.Handle(ctx, r)
}

func (c closingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return closingHandler{h: c.h.WithAttrs(attrs), g: c.g}
}

func (c closingHandler) WithGroup(name string) slog.Handler {
	return closingHandler{h: c.h.WithGroup(name), g: c.g}
}

// probeDocker reports, within o.DockerProbeTimeout, whether testcontainers-go
// can reach a healthy Docker provider.
//
// testcontainers-go looks for the Docker host without a deadline of its own
// (a host that accepts connections and never answers blocks it for good),
// so the probe runs in a goroutine that is abandoned when the timeout
// passes. That costs one stuck goroutine, and only on such a machine.
func probeDocker(ctx context.Context, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.DockerProbeTimeout)
	defer cancel()
	// An abandoned probe must not log after probeDocker returns (a
	// handler writing to a test's log panics once the test is over).
	gate := &closeGate{}
	defer gate.close()
	logger := slog.New(closingHandler{h: o.Logger.Handler(), g: gate})
	result := make(chan error, 1) // the probe never blocks on sending
	go func() { result <- probeDockerSync(ctx, logger) }()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: no answer within %v", errDockerUnavailable, o.DockerProbeTimeout)
	}
}

// probeDockerSync is probeDocker without the bound. testcontainers-go panics
// in some set-ups without Docker; such panics are reported as errors.
func probeDockerSync(ctx context.Context, logger *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: testcontainers-go panicked: %v", errDockerUnavailable, r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider(testcontainers.WithLogger(tcLogger{logger}))
	if err != nil {
		return fmt.Errorf("%w: %w", errDockerUnavailable, err)
	}
	// Health closes the provider.
	if err := provider.Health(ctx); err != nil {
		return fmt.Errorf("%w: %w", errDockerUnavailable, err)
	}
	return nil
}

// localStackContainer is a running LocalStack container.
type localStackContainer struct {
	c *tclocalstack.LocalStackContainer
}

func (l localStackContainer) terminate(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("testcontainers-go panicked: %v", r)
		}
	}()
	return testcontainers.TerminateContainer(l.c, testcontainers.StopContext(ctx))
}

// startLocalStack starts LocalStack with DynamoDB and SQS when Docker is
// available. Its errors wrap errDockerUnavailable when Docker is not.
func startLocalStack(ctx context.Context, o Options) (em *Emulator, err error) {
	if err := probeDocker(ctx, o); err != nil {
		return nil, err
	}
	var c *tclocalstack.LocalStackContainer
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("localstack: testcontainers-go panicked while starting %s: %v", o.LocalStackImage, r)
		}
		if err != nil && c != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_ = localStackContainer{c}.terminate(stopCtx)
		}
	}()
	env := map[string]string{"SERVICES": "dynamodb,sqs"}
	if tok := os.Getenv("LOCALSTACK_AUTH_TOKEN"); tok != "" {
		env["LOCALSTACK_AUTH_TOKEN"] = tok
	}
	o.Logger.Info("localstack: starting LocalStack through testcontainers-go", "image", o.LocalStackImage)
	c, err = tclocalstack.Run(ctx, o.LocalStackImage,
		testcontainers.WithLogger(tcLogger{o.Logger}),
		testcontainers.WithEnv(env),
	)
	if err != nil {
		return nil, fmt.Errorf("localstack: start %s: %w", o.LocalStackImage, err)
	}
	u, err := c.PortEndpoint(ctx, "4566/tcp", "http")
	if err != nil {
		return nil, fmt.Errorf("localstack: LocalStack endpoint: %w", err)
	}
	ep := Endpoints{DynamoDBURL: u, SQSURL: u, Region: o.Region, Source: SourceLocalStack}
	if err := waitEndpoints(ctx, o, ep); err != nil {
		return nil, err
	}
	o.Logger.Info("localstack: LocalStack ready", "endpoint", u)
	return &Emulator{Endpoints: ep, opts: o, container: localStackContainer{c}}, nil
}
