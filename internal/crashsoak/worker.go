package crashsoak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider"
)

// ConfigEnv is the environment variable that carries a worker process's
// WorkerConfig (JSON).
const ConfigEnv = "DURADYN_CRASHWORKER"

// WorkerConfig is a worker process's configuration.
type WorkerConfig struct {
	// Store is the table and queues.
	Store Store
	// Hold makes the process a victim holding that much work; zero holds
	// nothing.
	Hold Hold
	// OrchestrationConcurrency and WorkerConcurrency are the runtime's
	// slots; zero takes the runtime's defaults. A victim needs slots
	// beyond the work it holds, free to run the turns that hand
	// activities and to wait for them.
	OrchestrationConcurrency, WorkerConcurrency int
}

// Store is a table and its wake-up queues on an endpoint.
type Store struct {
	Endpoints                            localstack.Endpoints
	Table                                string
	OrchestratorQueueURL, WorkerQueueURL string
}

// RunWorker runs a worker process's runtime, configured by the
// WorkerConfig in ConfigEnv, with default options but for its slots, until
// ctx ends, and reports on out what it fetches and holds (events).
func RunWorker(ctx context.Context, out io.Writer) error {
	var c WorkerConfig
	if err := json.Unmarshal([]byte(os.Getenv(ConfigEnv)), &c); err != nil {
		return fmt.Errorf("crashsoak: %s: %w", ConfigEnv, err)
	}
	ev := &events{out: out}
	if c.Hold != (Hold{}) {
		theHolder.Store(newHolder(c.Hold, ev))
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dp, err := c.Store.provider(ctx, logger, func(db dynamo.API) dynamo.API { return countingWrites{db} })
	if err != nil {
		return err
	}
	defer dp.Close()
	reg, err := durable.NewRegistry(definitions()...)
	if err != nil {
		return fmt.Errorf("crashsoak: registry: %w", err)
	}
	p := &reporting{Provider: dp, events: ev}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.OrchestrationConcurrency, o.WorkerConcurrency = c.OrchestrationConcurrency, c.WorkerConcurrency
		o.Logger = logger
	})
	if err != nil {
		return fmt.Errorf("crashsoak: runtime: %w", err)
	}
	if err := rt.Start(ctx); err != nil {
		return fmt.Errorf("crashsoak: start: %w", err)
	}
	ev.line("READY %d", os.Getpid())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return rt.Shutdown(sctx)
}

// provider returns a provider on s with default options; wrap, when set,
// wraps its DynamoDB client.
func (s Store) provider(ctx context.Context, logger *slog.Logger, wrap func(dynamo.API) dynamo.API) (*dynamo.Provider, error) {
	cfg, err := s.Endpoints.AWSConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("crashsoak: AWS config: %w", err)
	}
	p, err := dynamo.New(cfg, func(o *dynamo.Options) {
		o.TableName = s.Table
		o.OrchestratorQueueURL, o.WorkerQueueURL = s.OrchestratorQueueURL, s.WorkerQueueURL
		o.Logger = logger
		var db dynamo.API = s.Endpoints.DynamoDB(cfg, dynamo.BoundClient(cfg, dynamo.DefaultRequestTimeout))
		if wrap != nil {
			db = wrap(db)
		}
		o.Client = db
		o.SQSClient = s.Endpoints.SQS(cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("crashsoak: provider: %w", err)
	}
	return p, nil
}

// reporting is a worker's provider: it reports every fetch that returns
// work, and in a victim holds back a handed activity before it starts.
type reporting struct {
	*dynamo.Provider
	events *events
}

func (r *reporting) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *provider.CapabilityFilter) (*provider.OrchestrationItem, error) {
	item, err := r.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if item != nil {
		r.events.pickedTurn(item.Instance, item.AttemptCount)
	}
	return item, err
}

func (r *reporting) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *provider.SessionFetchConfig, tags provider.TagFilter) (*provider.LockedWorkItem, error) {
	var claims atomic.Int32
	w, err := r.Provider.FetchWorkItem(context.WithValue(ctx, claimWritesKey{}, &claims), lockTimeout, pollTimeout, session, tags)
	if w == nil {
		return w, err
	}
	r.events.pickedActivity(w.Item.Instance, w.Item.ID, w.AttemptCount)
	// A fetch that returns an activity without having written a claim was
	// handed it by a turn of this process (docs/design.md §8).
	if h := current(); h != nil && w.Item.Name == recHand.Name() && claims.Load() == 0 && h.holdHanded() {
		r.events.heldHanded(w.Item.Instance, w.Item.ID)
		h.block(ctx)
		return nil, ctx.Err()
	}
	return w, err
}

// claimWritesKey carries a fetch's count of the writes it sends: a claim
// is a write, a hand-off none.
type claimWritesKey struct{}

// countingWrites counts the claims (UpdateItem, TransactWriteItems) sent
// under a fetch's context.
type countingWrites struct{ dynamo.API }

func count(ctx context.Context) {
	if n, ok := ctx.Value(claimWritesKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
}

func (c countingWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	count(ctx)
	return c.API.UpdateItem(ctx, in, optFns...)
}

func (c countingWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	count(ctx)
	return c.API.TransactWriteItems(ctx, in, optFns...)
}
