package goworkflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/backend/history"
	"github.com/cschleiden/go-workflows/backend/monoprocess"
	wfredis "github.com/cschleiden/go-workflows/backend/redis"
	"github.com/cschleiden/go-workflows/backend/sqlite"
	"github.com/cschleiden/go-workflows/core"
	"github.com/redis/go-redis/v9"
)

// peer is one backend set up for one run.
type peer struct {
	backend backend.Backend
	// redis is a separate connection to the Redis of the "redis" backend,
	// for flushing and reading command statistics; nil otherwise.
	redis *redis.Client
	// cleanup removes what the run left behind (the SQLite file's
	// directory).
	cleanup func() error
}

// close closes the backend, the statistics connection and the files.
func (p *peer) close() error {
	var errs []error
	if p.backend != nil {
		if err := p.backend.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close backend: %w", err))
		}
	}
	if p.redis != nil {
		if err := p.redis.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close redis: %w", err))
		}
	}
	if p.cleanup != nil {
		if err := p.cleanup(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// redisTimeout is the read and write timeout of the Redis clients, as in
// go-workflows' samples and benchmark.
const redisTimeout = 30 * time.Second

// openPeer builds a fresh backend for c with opts. The SQLite
// constructors panic on failure; openPeer turns that into an error.
func openPeer(ctx context.Context, c Config, opts ...backend.BackendOption) (p *peer, err error) {
	p = &peer{}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open %s backend: %v", c.Backend, r)
		}
		if err != nil {
			_ = p.close()
			p = nil
		}
	}()
	switch c.Backend {
	case BackendMonoprocess:
		p.backend = monoprocess.NewMonoprocessBackend(sqlite.NewInMemoryBackend(sqlite.WithBackendOptions(opts...)))
	case BackendSQLiteMemory:
		p.backend = sqlite.NewInMemoryBackend(sqlite.WithBackendOptions(opts...))
	case BackendSQLiteFile:
		dir, err := os.MkdirTemp(c.Dir, "go-workflows-sqlite-")
		if err != nil {
			return p, fmt.Errorf("open %s backend: %w", c.Backend, err)
		}
		p.cleanup = func() error { return os.RemoveAll(dir) }
		p.backend = sqlite.NewSqliteBackend(filepath.Join(dir, "workflows.sqlite"), sqlite.WithBackendOptions(opts...))
	case BackendRedis:
		p.redis = redis.NewClient(&redis.Options{Addr: c.RedisAddr, ReadTimeout: redisTimeout, WriteTimeout: redisTimeout})
		// A fresh keyspace, before the backend creates its queues.
		if err := p.redis.FlushAll(ctx).Err(); err != nil {
			return p, fmt.Errorf("open %s backend: FLUSHALL: %w", c.Backend, err)
		}
		client := redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs:        []string{c.RedisAddr},
			ReadTimeout:  redisTimeout,
			WriteTimeout: redisTimeout,
		})
		b, err := wfredis.NewRedisBackend(client, wfredis.WithBackendOptions(opts...))
		if err != nil {
			_ = client.Close()
			return p, fmt.Errorf("open %s backend: %w", c.Backend, err)
		}
		p.backend = b
	default:
		return p, fmt.Errorf("%w: unknown backend %q", ErrConfig, c.Backend)
	}
	return p, nil
}

// finishRecorder wraps a backend and notes when each expected workflow
// instance's finishing workflow task was committed, and how it finished.
type finishRecorder struct {
	backend.Backend

	mu       sync.Mutex
	expected map[string]bool
	finished map[string]time.Time
	// failures holds the error of each finished instance whose finishing
	// event carries no result.
	failures map[string]error
	done     chan struct{}
}

// errNoResult is the failure of an instance that finished with neither a
// result nor an error: go-workflows finishes a workflow so when the
// coroutines of its workflow function were stopped before it returned, as
// closing its executor in the middle of a workflow task does.
var errNoResult = errors.New("finished with neither a result nor an error: its workflow function never returned (go-workflows finishes a workflow so when its executor is closed in the middle of a workflow task)")

// newFinishRecorder wraps b, expecting the instances ids to finish.
func newFinishRecorder(b backend.Backend, ids []string) *finishRecorder {
	f := &finishRecorder{
		Backend:  b,
		expected: make(map[string]bool, len(ids)),
		finished: make(map[string]time.Time, len(ids)),
		failures: make(map[string]error),
		done:     make(chan struct{}),
	}
	for _, id := range ids {
		f.expected[id] = true
	}
	if len(ids) == 0 {
		close(f.done)
	}
	return f
}

// CompleteWorkflowTask commits the task and, when it finishes an expected
// instance, notes the time and, when the instance failed, its error.
func (f *finishRecorder) CompleteWorkflowTask(
	ctx context.Context, task *backend.WorkflowTask, state core.WorkflowInstanceState,
	executedEvents, activityEvents, timerEvents []*history.Event, workflowEvents []*history.WorkflowEvent,
) error {
	if err := f.Backend.CompleteWorkflowTask(ctx, task, state, executedEvents, activityEvents, timerEvents, workflowEvents); err != nil {
		return err
	}
	if state != core.WorkflowInstanceStateFinished {
		return nil
	}
	at := time.Now()
	id := task.WorkflowInstance.InstanceID
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, seen := f.finished[id]; !f.expected[id] || seen {
		return nil
	}
	f.finished[id] = at
	if err := finishFailure(executedEvents); err != nil {
		f.failures[id] = err
	}
	if len(f.finished) == len(f.expected) {
		close(f.done)
	}
	return nil
}

// finishFailure is the failure the WorkflowExecutionFinished event among
// events records: the workflow's error, or errNoResult when it has no
// result either; nil when the workflow returned a result or no such event
// is among events.
func finishFailure(events []*history.Event) error {
	for _, e := range events {
		if e.Type != history.EventType_WorkflowExecutionFinished {
			continue
		}
		a, ok := e.Attributes.(*history.ExecutionCompletedAttributes)
		switch {
		case !ok:
			return nil
		case a.Error != nil:
			return a.Error
		case len(a.Result) == 0:
			return errNoResult
		}
	}
	return nil
}

// Failure returns the error instance id finished with (the workflow's
// error or errNoResult), or nil if it returned a result or has not
// finished.
func (f *finishRecorder) Failure(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures[id]
}

// Done is closed when every expected instance finished.
func (f *finishRecorder) Done() <-chan struct{} { return f.done }

// FinishedAt returns when instance id finished, if it did.
func (f *finishRecorder) FinishedAt(id string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.finished[id]
	return at, ok
}

// Finished returns how many expected instances finished.
func (f *finishRecorder) Finished() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.finished)
}

// errorLog is a slog.Handler that drops everything below Error (so that
// logging costs nothing in the measured part) and keeps the last few
// errors to explain a failed run.
type errorLog struct {
	mu   sync.Mutex
	last []string
}

const keptErrors = 5

func (l *errorLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }

func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, msg)
	if len(l.last) > keptErrors {
		l.last = l.last[len(l.last)-keptErrors:]
	}
	return nil
}

func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }

func (l *errorLog) WithGroup(string) slog.Handler { return l }

// Errors returns the last errors logged.
func (l *errorLog) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.last...)
}
