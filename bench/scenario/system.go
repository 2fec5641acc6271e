package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/proxy"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
	"github.com/duradyn/duradyn/tables"
)

// Names of the systems under test.
const (
	// MemProvider is the runtime on the in-memory provider.
	MemProvider = "duradyn/memprovider"
	// DynamoDBSQS is the runtime on the DynamoDB provider with SQS wake-up
	// queues (long polling).
	DynamoDBSQS = "duradyn/dynamodb-local+sqs"
	// DynamoDBShortPoll is the runtime on the DynamoDB provider without
	// queues, short polling the table.
	DynamoDBShortPoll = "duradyn/dynamodb-local"
	// DynamoDBSQSProxied is DynamoDBSQS with both endpoints reached through
	// a proxy that delays each direction by ProxyOneWay.
	DynamoDBSQSProxied = "duradyn/dynamodb-local+sqs+4ms"
	// DynamoDBSQSUncompressed is DynamoDBSQS storing payloads uncompressed
	// (dynamo.Options.DisablePayloadCompression). Not among Systems():
	// HelloCities5Payload runs on it beside DynamoDBSQS, to measure what
	// compression saves.
	DynamoDBSQSUncompressed = "duradyn/dynamodb-local+sqs+uncompressed"
)

// ProxyOneWay is the delay the proxy of DynamoDBSQSProxied adds in each
// direction: an 8 ms round trip per request, about what a request to
// DynamoDB or SQS costs from a host in the same AWS region.
const ProxyOneWay = 4 * time.Millisecond

// ErrUnknownSystem is returned by SystemByName for a name it does not know.
var ErrUnknownSystem = errors.New("scenario: unknown system")

// Env is what scenarios run against: the endpoints, the systems, the peers
// to run beside them, and where progress goes.
type Env struct {
	// Endpoints are the DynamoDB and SQS endpoints (from localstack.Start
	// or localstack.ForTest).
	Endpoints localstack.Endpoints
	// Systems are the duradyn systems each scenario runs on; nil means
	// Systems().
	Systems []System
	// Peers are the go-workflows backends ("monoprocess", "sqlite-memory",
	// "sqlite-file", "redis") run by the scenarios that have a peer; nil
	// runs none.
	Peers []string
	// PeerDir is a scratch directory for the peers' files (sqlite-file).
	PeerDir string
	// RedisAddr is the address of the Redis the "redis" peer uses; when it
	// is empty, RedisErr says why there is none.
	RedisAddr string
	// RedisErr is why no Redis is available (goworkflows.ErrNoRedis when it
	// is not installed); the "redis" peer's result then says so.
	RedisErr error
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// Logger receives the runtimes' logs; nil means warnings and errors on
	// standard error.
	Logger *slog.Logger

	// wrapTransport, when set, wraps the HTTP transport of each DynamoDB
	// deployment's clients, the meter's included: this package's tests
	// count what reaches the endpoints.
	wrapTransport func(http.RoundTripper) http.RoundTripper
}

func (e *Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

func (e *Env) systems() []System {
	if e.Systems != nil {
		return e.Systems
	}
	return Systems()
}

// system returns the selected system named name.
func (e *Env) system(name string) (System, bool) {
	for _, s := range e.systems() {
		if s.Name == name {
			return s, true
		}
	}
	return System{}, false
}

func (e *Env) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// System is one configuration of duradyn under test.
type System struct {
	// Name is the system's name in results (MemProvider, DynamoDBSQS, ...).
	Name string
	// DynamoDB reports whether the system stores its state in DynamoDB
	// (and so has a meter).
	DynamoDB bool
	// Notes describes the configuration, for results.
	Notes string

	setup func(ctx context.Context, env *Env, metered bool) (*Deployment, error)
}

// Systems returns the four duradyn systems: MemProvider, DynamoDBSQS,
// DynamoDBShortPoll and DynamoDBSQSProxied.
func Systems() []System {
	return []System{
		{Name: MemProvider, Notes: "in-memory provider", setup: setupMemProvider},
		{Name: DynamoDBSQS, DynamoDB: true, Notes: "DynamoDB provider, SQS wake-up queues (long polling), 16 shards",
			setup: dynamoSetup(DynamoDBSQS, true, 0)},
		{Name: DynamoDBShortPoll, DynamoDB: true, Notes: "DynamoDB provider, no queues, ShortPoll (a sweep every MinPollInterval, 100 ms, per idle slot), 16 shards",
			setup: dynamoSetup(DynamoDBShortPoll, false, 0)},
		{Name: DynamoDBSQSProxied, DynamoDB: true, Notes: "as dynamodb-local+sqs, both endpoints behind a proxy adding 4 ms each way (8 ms per request)",
			setup: dynamoSetup(DynamoDBSQSProxied, true, ProxyOneWay)},
	}
}

// uncompressedSystem is DynamoDBSQSUncompressed.
func uncompressedSystem() System {
	return System{Name: DynamoDBSQSUncompressed, DynamoDB: true,
		Notes: "as dynamodb-local+sqs, payloads stored uncompressed (DisablePayloadCompression)",
		setup: dynamoSetup(DynamoDBSQSUncompressed, true, 0, func(o *dynamo.Options) { o.DisablePayloadCompression = true })}
}

// SystemByName returns the system of Systems() called name.
func SystemByName(name string) (System, error) {
	for _, s := range Systems() {
		if s.Name == name {
			return s, nil
		}
	}
	return System{}, fmt.Errorf("%w: %q", ErrUnknownSystem, name)
}

// Setup creates the system's storage (a fresh table and queues for the
// DynamoDB systems) and a client; runtimes are started with
// [Deployment.StartRuntime]. Close the deployment when done.
func (s System) Setup(ctx context.Context, env *Env) (*Deployment, error) {
	return s.setUp(ctx, env, true)
}

// setUp is Setup, with the meter installed on the deployment's clients only
// when metered is true. Without it the deployment's Meter is nil: nothing
// counts its requests, and nothing reads item images on the endpoint
// beside them (the meter's shadow reads, which load the endpoint and delay
// every transaction by a read). Systems without DynamoDB ignore metered.
func (s System) setUp(ctx context.Context, env *Env, metered bool) (*Deployment, error) {
	d, err := s.setup(ctx, env, metered)
	if err != nil {
		return nil, fmt.Errorf("%s: setup: %w", s.Name, err)
	}
	d.System = s
	return d, nil
}

// Deployment is one system set up for one scenario: its storage, a client,
// its meter and the runtimes started on it.
type Deployment struct {
	// System is the system deployed.
	System System
	// Client is the client of the workload: its requests (starts) are
	// metered, as an application's would be. It runs on its own provider,
	// as another process would.
	Client *durable.Client
	// Provider is Client's provider (metered): scenarios read histories
	// through it.
	Provider provider.Provider
	// Observer is an unmetered client for checking outcomes after a
	// measurement.
	Observer *durable.Client
	// Meter counts the DynamoDB and SQS requests of Client and of every
	// runtime; nil for systems without DynamoDB and for a deployment set up
	// unmetered (the timing run of a timed scenario, [onSystem]).
	Meter *billing.Meter

	logger      *slog.Logger
	newProvider func() (p provider.Provider, closeFn func() error, err error)
	// newSeedProvider makes a provider for preparing the table: unmetered,
	// without wake-up queues (its client's starts wake its runtime in the
	// process) and not behind a proxy.
	newSeedProvider func() (p provider.Provider, closeFn func() error, err error)
	completions     *completions

	mu       sync.Mutex
	runtimes []*durable.Runtime
	closeRT  []func() error // the runtimes' providers' Close
	closers  []func(ctx context.Context) error
}

// StartRuntime starts one more runtime on the deployment, with its own
// provider (as another process would have), the default options of
// durable.Options, its logs at warning level, and then optFns.
func (d *Deployment) StartRuntime(ctx context.Context, optFns ...func(*durable.Options)) (*durable.Runtime, error) {
	p, closeFn, err := d.newProvider()
	if err != nil {
		return nil, err
	}
	return d.startRuntimeOn(ctx, p, closeFn, optFns)
}

// StartSeedingRuntime starts a runtime, as StartRuntime does, on a
// provider that prepares the table: unmetered, without wake-up queues and
// without the proxy. It returns a client on the same provider, whose starts
// wake the runtime in the process, so that preparing a table sends nothing
// to the queues the measured runtimes read.
func (d *Deployment) StartSeedingRuntime(ctx context.Context, optFns ...func(*durable.Options)) (*durable.Runtime, *durable.Client, error) {
	p, closeFn, err := d.newSeedProvider()
	if err != nil {
		return nil, nil, err
	}
	rt, err := d.startRuntimeOn(ctx, p, closeFn, optFns)
	if err != nil {
		return nil, nil, err
	}
	return rt, durable.NewClient(p), nil
}

// startRuntimeOn starts a runtime on p, which closeFn closes when the
// runtime stops.
func (d *Deployment) startRuntimeOn(ctx context.Context, p provider.Provider, closeFn func() error, optFns []func(*durable.Options)) (*durable.Runtime, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, errors.Join(err, closeFn())
	}
	d.mu.Lock()
	id := fmt.Sprintf("%s-%d", sanitize(d.System.Name), len(d.runtimes)+1)
	d.mu.Unlock()
	// The id names the runtime in the logs only: a RuntimeID given makes
	// the worker slots' session owners stable, which is not the default.
	opts := append([]func(*durable.Options){func(o *durable.Options) {
		o.Logger = d.logger.With("runtime", id)
	}}, optFns...)
	rt, err := durable.NewRuntime(watch(p, d.completions), reg, opts...)
	if err == nil {
		err = rt.Start(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, closeFn())
	}
	d.mu.Lock()
	d.runtimes = append(d.runtimes, rt)
	d.closeRT = append(d.closeRT, closeFn)
	d.mu.Unlock()
	return rt, nil
}

// StopRuntimes shuts every runtime started so far down gracefully and
// closes their providers.
func (d *Deployment) StopRuntimes(ctx context.Context) error {
	d.mu.Lock()
	rts, closeRT := d.runtimes, d.closeRT
	d.runtimes, d.closeRT = nil, nil
	d.mu.Unlock()
	var errs []error
	for i, rt := range rts {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		errs = append(errs, rt.Shutdown(sctx), closeRT[i]())
		cancel()
	}
	return errors.Join(errs...)
}

// Usage returns what the meter counted so far; zero without a meter.
func (d *Deployment) Usage() billing.Usage {
	if d.Meter == nil {
		return billing.Usage{}
	}
	return d.Meter.Usage()
}

// meterNote says, when the meter could not read what its rules needed,
// that the request units are approximate; "" otherwise.
func (d *Deployment) meterNote() string {
	if d == nil || d.Meter == nil {
		return ""
	}
	if err := d.Meter.Err(); err != nil {
		return "request units approximate: " + err.Error()
	}
	return ""
}

// WaitCompleted returns when instance's terminal turn committed on one of
// the deployment's runtimes, waiting until ctx ends. It makes no request.
func (d *Deployment) WaitCompleted(ctx context.Context, instance string) (time.Time, error) {
	return d.completions.wait(ctx, instance)
}

// OnTurn makes fn called with the turn's instance, on the runtime's
// goroutine, each time a runtime of the deployment sends the ack of a
// turn, before the provider's ack; the func fn returns is called once that
// ack committed. It makes no request.
func (d *Deployment) OnTurn(fn func(instance string) (committed func())) { d.completions.setOnTurn(fn) }

// Close stops the runtimes and removes what Setup created.
func (d *Deployment) Close(ctx context.Context) error {
	errs := []error{d.StopRuntimes(ctx)}
	for i := len(d.closers) - 1; i >= 0; i-- {
		errs = append(errs, d.closers[i](ctx))
	}
	return errors.Join(errs...)
}

func setupMemProvider(_ context.Context, env *Env, _ bool) (*Deployment, error) {
	p := memprovider.New()
	c := durable.NewClient(p)
	return &Deployment{
		Client:      c,
		Provider:    p,
		Observer:    c,
		logger:      env.logger(),
		completions: newCompletions(),
		// Every runtime shares the one in-memory store.
		newProvider: func() (provider.Provider, func() error, error) {
			return p, func() error { return nil }, nil
		},
		newSeedProvider: func() (provider.Provider, func() error, error) {
			return p, func() error { return nil }, nil
		},
	}, nil
}

// dynamoSetup returns the setup of a DynamoDB system: with SQS wake-up
// queues or short polling, and with the endpoints behind a proxy delaying
// each direction by oneWay when it is not zero.
func dynamoSetup(name string, withSQS bool, oneWay time.Duration, adjust ...func(*dynamo.Options)) func(context.Context, *Env, bool) (*Deployment, error) {
	return func(ctx context.Context, env *Env, metered bool) (_ *Deployment, err error) {
		d := &Deployment{logger: env.logger(), completions: newCompletions()}
		defer func() {
			if err != nil {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				err = errors.Join(err, d.Close(cctx))
			}
		}()
		ep := env.Endpoints
		cfg, err := d.awsConfig(ctx, env)
		if err != nil {
			return nil, err
		}

		// The table and queues, made and removed without the meter.
		db, sq := ep.DynamoDB(cfg), ep.SQS(cfg)
		table := "bench-" + sanitize(name) + "-" + randomHex()
		orchQueue, workQueue, err := d.createStore(ctx, db, sq, table, withSQS)
		if err != nil {
			return nil, err
		}

		dynamoDBMeter, sqsMeter, err := d.attachMeter(ctx, db, table, metered)
		if err != nil {
			return nil, err
		}

		reach, err := d.reach(ep, oneWay)
		if err != nil {
			return nil, err
		}
		measured := func(o *dynamo.Options) {
			o.TableName = table
			o.OrchestratorQueueURL = orchQueue
			o.WorkerQueueURL = workQueue
			o.ShortPoll = !withSQS
			o.Client = reach.DynamoDB(cfg, dynamoDBMeter...)
			if withSQS {
				o.SQSClient = reach.SQS(cfg, sqsMeter...)
			}
			for _, fn := range adjust {
				fn(o)
			}
		}
		if err := d.connect(cfg, db, table, measured); err != nil {
			return nil, err
		}
		return d, nil
	}
}

// awsConfig returns the AWS configuration of env's endpoints with the HTTP
// transport every client of the deployment shares (wrapped by
// env.wrapTransport when set); it is the first step of [dynamoSetup] so
// that the transport's closer runs last.
func (d *Deployment) awsConfig(ctx context.Context, env *Env) (aws.Config, error) {
	// One transport for every client of the deployment, closed last.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	d.closers = append(d.closers, func(context.Context) error {
		transport.CloseIdleConnections()
		return nil
	})
	cfg, err := env.Endpoints.AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	var roundTripper http.RoundTripper = transport
	if env.wrapTransport != nil {
		roundTripper = env.wrapTransport(roundTripper)
	}
	cfg.HTTPClient = &http.Client{Transport: roundTripper}
	return cfg, nil
}

// createStore creates the deployment's table and, withSQS, its
// orchestrator and worker queues, through the unmetered clients db and sq,
// and registers their removal with d. It returns the queues' URLs, "" for
// none.
func (d *Deployment) createStore(ctx context.Context, db *dynamodb.Client, sq *sqs.Client, table string, withSQS bool) (orchQueue, workQueue string, err error) {
	if err := tables.Create(ctx, db, table); err != nil {
		return "", "", fmt.Errorf("create table %s: %w", table, err)
	}
	d.closers = append(d.closers, func(ctx context.Context) error { return tables.Delete(ctx, db, table) })
	if withSQS {
		for _, q := range []struct {
			url    *string
			suffix string
		}{{&orchQueue, "orchestrator"}, {&workQueue, "worker"}} {
			out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(table + "-" + q.suffix)})
			if err != nil {
				return "", "", fmt.Errorf("create queue %s-%s: %w", table, q.suffix, err)
			}
			queueURL := aws.ToString(out.QueueUrl)
			*q.url = queueURL
			d.closers = append(d.closers, func(ctx context.Context) error { return deleteQueue(ctx, sq, queueURL) })
		}
	}
	return orchQueue, workQueue, nil
}

// attachMeter sets d.Meter when the deployment is metered and returns the
// client options that route the measured clients' requests through it;
// unmetered, it returns none. The meter reads item images through db,
// which it does not meter.
func (d *Deployment) attachMeter(ctx context.Context, db *dynamodb.Client, table string, metered bool) ([]func(*dynamodb.Options), []func(*sqs.Options), error) {
	var dynamoDBMeter []func(*dynamodb.Options)
	var sqsMeter []func(*sqs.Options)
	if metered {
		meter, err := billing.NewMeter(ctx, db, table)
		if err != nil {
			return nil, nil, fmt.Errorf("meter: %w", err)
		}
		meter.ClassifyItems(dynamo.ItemKind)
		d.Meter = meter
		dynamoDBMeter, sqsMeter = []func(*dynamodb.Options){meter.DynamoDB}, []func(*sqs.Options){meter.SQS}
	}
	return dynamoDBMeter, sqsMeter, nil
}

// reach returns the endpoints the measured clients use: ep itself, or,
// when oneWay is not zero, proxies to ep's DynamoDB and SQS delaying each
// direction by oneWay.
func (d *Deployment) reach(ep localstack.Endpoints, oneWay time.Duration) (localstack.Endpoints, error) {
	reach := ep
	if oneWay > 0 {
		var err error
		if reach.DynamoDBURL, err = d.proxy(ep.DynamoDBURL, oneWay); err != nil {
			return localstack.Endpoints{}, err
		}
		if reach.SQSURL, err = d.proxy(ep.SQSURL, oneWay); err != nil {
			return localstack.Endpoints{}, err
		}
	}
	return reach, nil
}

// connect opens the deployment's providers: the measured one (options from
// measured) behind d.Provider, d.Client and the runtimes, and unmetered ones
// on db for d.Observer and the seeders. It is the last step of
// [dynamoSetup], once the table, queues, meter and proxies exist.
func (d *Deployment) connect(cfg aws.Config, db *dynamodb.Client, table string, measured func(*dynamo.Options)) error {
	d.newProvider = func() (provider.Provider, func() error, error) {
		p, err := dynamo.New(cfg, measured)
		if err != nil {
			return nil, nil, err
		}
		return p, p.Close, nil
	}
	cp, closeClient, err := d.newProvider()
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func(context.Context) error { return closeClient() })
	d.Provider = cp
	d.Client = durable.NewClient(cp)
	op, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = table
		o.Client = db
	})
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func(context.Context) error { return op.Close() })
	d.Observer = durable.NewClient(op)
	d.newSeedProvider = func() (provider.Provider, func() error, error) {
		p, err := dynamo.New(cfg, func(o *dynamo.Options) {
			o.TableName = table
			o.Client = db
		})
		if err != nil {
			return nil, nil, err
		}
		return p, p.Close, nil
	}
	return nil
}

// proxy starts a proxy to the endpoint base URL target and returns the
// proxy's URL; the deployment closes it.
func (d *Deployment) proxy(target string, oneWay time.Duration) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("proxy to %s: %w", target, err)
	}
	p, err := proxy.Start(u.Host, oneWay)
	if err != nil {
		return "", fmt.Errorf("proxy to %s: %w", target, err)
	}
	d.closers = append(d.closers, func(context.Context) error { return p.Close() })
	return p.URL(), nil
}

func deleteQueue(ctx context.Context, sq *sqs.Client, queueURL string) error {
	_, err := sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
	var gone *sqstypes.QueueDoesNotExist
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("delete queue %s: %w", queueURL, err)
	}
	return nil
}

// sanitize keeps the characters DynamoDB table and SQS queue names allow.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
