package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/duradyn/duradyn/internal/linelog"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/queues"
	"github.com/duradyn/duradyn/tables"
)

// What duradyn dev uses.
const (
	// devTable is the table, and the prefix of its queues' names, when
	// neither --table nor DURADYN_TABLE names one.
	devTable = "duradyn-dev"
	// envDevDir names the directory of the running environment's lock,
	// socket and log.
	envDevDir = "DURADYN_DEV_DIR"
	// envDevReadyFD is set by dev --detach for the process it starts: the
	// file descriptor on which that process reports that it is ready.
	envDevReadyFD = "DURADYN_DEV_READY_FD"
	// devStartTimeout bounds the start-up when --timeout is not given: the
	// first run installs the emulators (about 60 MB).
	devStartTimeout = 5 * time.Minute
	// devStopTimeout bounds stopping the emulators.
	devStopTimeout = time.Minute
	// Files in the environment's directory.
	devLockFile   = "dev.lock"
	devSocketFile = "dev.sock"
	devLogFile    = "dev.log"
)

const devNotes = `dev starts DynamoDB Local and an SQS emulator (the embedded emulators of package
localstack, installed on first use), creates the table (--table or DURADYN_TABLE,
default duradyn-dev) and its two wake-up queues, prints one "export NAME=value" line
per setting this command and dynamo.NewFromEnv read (table, endpoints, queue URLs,
region, static credentials), and runs until interrupted (Ctrl-C, SIGTERM, or
"duradyn dev stop" from another shell), then stops what it started. It always starts
emulators of its own: endpoint variables in its environment are ignored.

  eval "$(duradyn dev --detach)"     start it in the background, settings into this shell
  eval "$(duradyn dev --print-env)"  the running environment's settings, in another shell
  duradyn dev stop                   stop it; returns once everything has stopped

One environment runs at a time. --timeout bounds the start-up (default 5m). Its lock,
socket and, with --detach, its log (dev.log) are in DURADYN_DEV_DIR, default
duradyn/dev under the user's cache directory.
`

func cmdDev(a *app, fs *flag.FlagSet) func([]string) error {
	detach := fs.Bool("detach", false, "start in the background: print the settings once ready, then return")
	printEnv := fs.Bool("print-env", false, "print the settings of the running environment")
	persist := fs.String("persist", "", "keep DynamoDB Local's data in `DIR` across restarts (default: in memory)")
	return func(args []string) error {
		if err := wantArgs("dev", args, 0, 1, "no argument, or stop"); err != nil {
			return err
		}
		switch {
		case len(args) == 1 && args[0] != "stop":
			return usageError("dev: unknown argument %q: want stop (usage: duradyn %s)", args[0], findCommand("dev").usage)
		case len(args) == 1:
			if *detach || *printEnv || *persist != "" {
				return usageError("dev stop takes no --detach, --print-env or --persist")
			}
			return a.devStop()
		case *printEnv:
			if *detach || *persist != "" {
				return usageError("dev --print-env takes no --detach or --persist")
			}
			return a.devPrintEnv()
		case *detach:
			return a.devDetach(*persist)
		}
		return a.devServe(*persist)
	}
}

// devDir returns the directory of the environment's lock, socket and log,
// creating it.
func (a *app) devDir() (string, error) {
	dir := a.getenv(envDevDir)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory for the dev environment (set %s): %w", envDevDir, err)
		}
		dir = filepath.Join(base, "duradyn", "dev")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", envDevDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the dev environment's directory: %w", err)
	}
	return dir, nil
}

// devStartContext returns the context that bounds the start-up: --timeout
// when given (0: none), else devStartTimeout, from the command's start.
func (a *app) devStartContext(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case a.g.timeout == 0:
		return context.WithCancel(ctx)
	case a.g.timeout > 0:
		return context.WithTimeout(ctx, a.g.timeout)
	}
	return context.WithTimeout(ctx, devStartTimeout)
}

// setting is one environment variable of the dev environment.
type setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// printSettings prints one export line per setting, or with --output json
// one object.
func (a *app) printSettings(settings []setting) error {
	if a.jsonOut() {
		m := make(map[string]string, len(settings))
		for _, s := range settings {
			m[s.Name] = s.Value
		}
		return a.printJSON(m)
	}
	for _, s := range settings {
		fmt.Fprintf(a.stdout, "export %s=%s\n", s.Name, shellQuote(s.Value))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell, leaving it as it is when it needs
// no quotes.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// devEmulators starts the embedded emulators, keeping DynamoDB Local's
// data in persist when it is set.
func (a *app) devEmulators(ctx context.Context, persist string) (*localstack.Emulator, error) {
	em, err := localstack.Start(ctx, func(o *localstack.Options) {
		o.IgnoreEnvironment = true
		o.DisableLocalStack = true
		o.Region = firstNonEmpty(a.g.region, localstack.DefaultRegion)
		o.DynamoDBDataDir = persist
		o.Logger = linelog.New(func(line string) { fmt.Fprintf(a.stderr, "duradyn dev: %s\n", line) }, slog.LevelInfo)
	})
	if err != nil {
		return nil, fmt.Errorf("start the emulators: %w", err)
	}
	return em, nil
}

// devProvision creates the table, records its layout and creates its
// queues on em, and returns the settings that reach them.
func (a *app) devProvision(ctx context.Context, em *localstack.Emulator) ([]setting, error) {
	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("the emulators' credentials: %w", err)
	}
	a.db = em.DynamoDB(cfg)
	if err := tables.Ensure(ctx, a.db, a.g.table); err != nil {
		var mismatch *tables.MismatchError
		if errors.As(err, &mismatch) {
			return nil, fmt.Errorf("table %s does not match duradyn's schema: %s", a.g.table, strings.Join(mismatch.Differences, "; "))
		}
		return nil, fmt.Errorf("create table %s: %w", a.g.table, err)
	}
	if err := a.newProvider(cfg); err != nil {
		return nil, err
	}
	err = a.p.CheckLayout(ctx)
	a.p.Close()
	a.p = nil
	if err != nil {
		return nil, a.tableError(err)
	}
	urls, err := queues.Create(ctx, em.SQS(cfg), a.g.table)
	if err != nil {
		return nil, err
	}
	return []setting{
		{"DURADYN_TABLE", a.g.table},
		{"DURADYN_DYNAMODB_ENDPOINT", em.DynamoDBURL},
		{"DURADYN_SQS_ENDPOINT", em.SQSURL},
		{"DURADYN_ORCHESTRATOR_QUEUE_URL", urls.Orchestrator},
		{"DURADYN_WORKER_QUEUE_URL", urls.Worker},
		{"AWS_REGION", cfg.Region},
		{"AWS_ACCESS_KEY_ID", creds.AccessKeyID},
		{"AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey},
	}, nil
}

// devStart starts the emulators and provisions them; on error it stops
// what it started.
func (a *app) devStart(ctx context.Context, persist string) (*localstack.Emulator, []setting, error) {
	em, err := a.devEmulators(ctx, persist)
	if err != nil {
		return nil, nil, err
	}
	settings, err := a.devProvision(ctx, em)
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), devStopTimeout)
		defer cancel()
		return nil, nil, errors.Join(err, em.Stop(stopCtx))
	}
	return em, settings, nil
}

// devServe runs the environment in this process until it is interrupted
// or stopped, or an emulator exits.
func (a *app) devServe(persist string) error {
	ready, err := takeReadyFile(a.getenv(envDevReadyFD))
	if err != nil {
		return err
	}
	if ready != nil {
		defer ready.Close()
	}
	a.g.table = firstNonEmpty(a.g.table, devTable)
	// The environment's own queues, not those of the variables.
	a.g.orchQueue, a.g.workerQueue = "", ""
	dir, err := a.devDir()
	if err != nil {
		return err
	}
	unlock, err := a.devLock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	// Interrupted, or stopped by dev stop.
	ctx, stop := context.WithCancel(a.base)
	defer stop()
	srv, err := listenDev(dir, stop, ready != nil)
	if err != nil {
		return err
	}
	startCtx, cancel := a.devStartContext(ctx)
	defer cancel()
	a.ctx = startCtx
	em, settings, err := a.devStart(startCtx, persist)
	if err != nil {
		if ctx.Err() != nil && a.base.Err() == nil {
			srv.finish(nil) // what a stop request asked for
			return errors.New("stopped by \"duradyn dev stop\" before it was ready")
		}
		return srv.finish(err)
	}
	srv.setPhase(devReady, settings)
	if err := a.devAnnounce(em, settings, persist, ready); err != nil {
		srv.setPhase(devStopping, nil)
		return srv.finish(a.devShutdown(em, err))
	}
	waitErr := em.Wait(ctx)
	srv.setPhase(devStopping, nil)
	if ctx.Err() != nil {
		waitErr = nil // interrupted or stopped: the normal end
	}
	return srv.finish(a.devShutdown(em, waitErr))
}

// devAnnounce prints the settings, a line saying what runs on stderr, and
// tells the process that started this one, if any, that it is ready.
func (a *app) devAnnounce(em *localstack.Emulator, settings []setting, persist string, ready *os.File) error {
	if err := a.printSettings(settings); err != nil {
		return err
	}
	data := "in memory"
	if persist != "" {
		data = "data in " + persist
	}
	fmt.Fprintf(a.stderr, "duradyn dev: DynamoDB Local at %s (%s), SQS at %s, table %s; pid %d, Ctrl-C or \"duradyn dev stop\" stops it\n",
		em.DynamoDBURL, data, em.SQSURL, a.g.table, os.Getpid())
	if ready == nil {
		return nil
	}
	err := json.NewEncoder(ready).Encode(devState{PID: os.Getpid(), Phase: devReady, Settings: settings})
	if cerr := ready.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tell duradyn dev --detach that the environment is ready: %w", err)
	}
	return nil
}

// devShutdown stops the emulators after cause (nil for an interrupt or a
// stop request) ended the environment.
func (a *app) devShutdown(em *localstack.Emulator, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), devStopTimeout)
	defer cancel()
	if err := em.Stop(ctx); err != nil {
		return errors.Join(cause, fmt.Errorf("stop the emulators: %w", err))
	}
	if cause != nil {
		return fmt.Errorf("the dev environment stopped: %w", cause)
	}
	fmt.Fprintln(a.stderr, "duradyn dev: stopped")
	return nil
}
