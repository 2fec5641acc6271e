package localstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclocalstack "github.com/testcontainers/testcontainers-go/modules/localstack"
)

// errDockerUnavailable is wrapped by errors from probeDocker.
var errDockerUnavailable = errors.New("no healthy Docker provider")

// logfLogger adapts a Logf function to the testcontainers logger.
type logfLogger func(format string, args ...any)

func (l logfLogger) Printf(format string, args ...any) {
	l("testcontainers: "+strings.TrimRight(format, "\n"), args...)
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
	// An abandoned probe must not log after probeDocker returns (a test's
	// Logf panics once the test is over).
	var (
		mu     sync.Mutex
		closed bool
	)
	defer func() {
		mu.Lock()
		closed = true
		mu.Unlock()
	}()
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			o.Logf(format, args...)
		}
	}
	result := make(chan error, 1) // the probe never blocks on sending
	go func() { result <- probeDockerSync(ctx, logf) }()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: no answer within %v", errDockerUnavailable, o.DockerProbeTimeout)
	}
}

// probeDockerSync is probeDocker without the bound. testcontainers-go panics
// in some set-ups without Docker; such panics are reported as errors.
func probeDockerSync(ctx context.Context, logf func(string, ...any)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: testcontainers-go panicked: %v", errDockerUnavailable, r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider(testcontainers.WithLogger(logfLogger(logf)))
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
	o.Logf("starting %s through testcontainers-go", o.LocalStackImage)
	c, err = tclocalstack.Run(ctx, o.LocalStackImage,
		testcontainers.WithLogger(logfLogger(o.Logf)),
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
	o.Logf("LocalStack ready at %s", u)
	return &Emulator{Endpoints: ep, opts: o, container: localStackContainer{c}}, nil
}
