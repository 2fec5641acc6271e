package goworkflows

import (
	"errors"
	"fmt"
	"time"
)

// Backend names accepted in Config.Backend.
const (
	// BackendMonoprocess is backend/monoprocess over an in-memory SQLite
	// database: the worker is woken when a task is created instead of
	// polling.
	BackendMonoprocess = "monoprocess"
	// BackendSQLiteMemory is the SQLite backend on an in-memory database.
	BackendSQLiteMemory = "sqlite-memory"
	// BackendSQLiteFile is the SQLite backend on a database file in
	// Config.Dir.
	BackendSQLiteFile = "sqlite-file"
	// BackendRedis is the Redis backend against Config.RedisAddr.
	BackendRedis = "redis"
)

// Backends lists every backend name, in the order the benchmark runs them.
func Backends() []string {
	return []string{BackendMonoprocess, BackendSQLiteMemory, BackendSQLiteFile, BackendRedis}
}

// Config says which backend a scenario runs on and how big it is.
type Config struct {
	// Backend is "monoprocess", "sqlite-memory", "sqlite-file" or "redis".
	Backend string
	// Dir is the directory the "sqlite-file" backend puts its database
	// in (in a fresh subdirectory, removed afterwards).
	Dir string
	// RedisAddr is the host:port of the Redis the "redis" backend uses;
	// its keyspace is flushed before the run.
	RedisAddr string
	// Instances is how many HelloCities5 instances run, each with five
	// sequential activities.
	Instances int
	// FanOut is how many activities FanOut's one workflow schedules at
	// once before waiting for all of them.
	FanOut int
	// Timeout bounds the run, from opening the backend to the last
	// output read; zero gives one minute and 50 ms an activity. A scenario
	// sets the limit its duradyn systems get, so that both sides have the
	// same room.
	Timeout time.Duration
}

// ErrConfig is returned (wrapped) when a Config cannot be run: an unknown
// backend, a missing Dir or RedisAddr, or a size below one.
var ErrConfig = errors.New("goworkflows: invalid config")

// ErrWrongOutput is returned (wrapped) when a workflow completed with an
// output other than the scenario expects.
var ErrWrongOutput = errors.New("goworkflows: wrong workflow output")

// ErrWorkflowFailed is returned (wrapped, with the workflow's own error)
// when a workflow instance finished without its output: it failed (for
// example on reaching the backend's maximum history size), was canceled
// or terminated, or finished with neither a result nor an error.
var ErrWorkflowFailed = errors.New("goworkflows: workflow failed")

// ErrTimeout is returned (wrapped) when the workflows did not all complete
// within the run's time limit.
var ErrTimeout = errors.New("goworkflows: workflows did not complete in time")

// System is the report.Result.System of a backend's results.
func System(backend string) string { return "go-workflows/" + backend }

// check validates the fields every scenario needs.
func (c Config) check() error {
	switch c.Backend {
	case BackendMonoprocess, BackendSQLiteMemory:
	case BackendSQLiteFile:
		if c.Dir == "" {
			return fmt.Errorf("%w: backend %q needs Dir", ErrConfig, c.Backend)
		}
	case BackendRedis:
		if c.RedisAddr == "" {
			return fmt.Errorf("%w: backend %q needs RedisAddr", ErrConfig, c.Backend)
		}
	default:
		return fmt.Errorf("%w: unknown backend %q (want one of %q)", ErrConfig, c.Backend, Backends())
	}
	return nil
}
