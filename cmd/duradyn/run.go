package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitTimeout  = 4
	exitFailed   = 5
	// exitClockSkew (6) is clock's.
	exitInterrupted = 130 // as a shell reports a command ended by Ctrl-C
)

// defaultTimeout bounds a command that does not wait for an instance, when
// --timeout is not given.
const defaultTimeout = time.Minute

// codedError is an error with its exit code.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &codedError{exitUsage, fmt.Sprintf(format, args...)}
}

func notFoundError(format string, args ...any) error {
	return &codedError{exitNotFound, fmt.Sprintf(format, args...)}
}

func timeoutError(format string, args ...any) error {
	return &codedError{exitTimeout, fmt.Sprintf(format, args...)}
}

func failedError(format string, args ...any) error {
	return &codedError{exitFailed, fmt.Sprintf(format, args...)}
}

// globals are the flags every command takes.
type globals struct {
	table        string
	region       string
	orchQueue    string
	workerQueue  string
	ddbEndpoint  string
	sqsEndpoint  string
	output       string
	shards       int
	shardsSource string // "" when not given; else the flag or variable that gave it
	timeout      time.Duration
	progress     int
}

// app is one invocation.
type app struct {
	ctx            context.Context
	base           context.Context // the context run was given: its end is an interrupt
	stdout, stderr io.Writer
	getenv         func(string) string
	g              globals

	// Set by open.
	db     *dynamodb.Client
	p      *dynamo.Provider
	client *durable.Client
}

// command is one subcommand. setup registers its flags and returns the
// function that runs it on the positional arguments.
type command struct {
	name    string
	usage   string
	summary string
	setup   func(a *app, fs *flag.FlagSet) func(args []string) error
	notes   string // printed after the flags in the command's help
}

var commands []command

func init() {
	commands = []command{
		{"start", "start <orchestration> <instance> [--input JSON|@file] [--raw] [--version v] [--wait]", "start an orchestration instance", cmdStart, ""},
		{"status", "status <instance>", "print an instance's status", cmdStatus, ""},
		{"wait", "wait <instance>", "wait for an instance to finish, showing its progress", cmdWait, ""},
		{"raise", "raise <instance> <event> [--data JSON|@file] [--raw]", "raise an external event", cmdRaise, ""},
		{"enqueue", "enqueue <instance> <queue> [--data JSON|@file] [--raw]", "put a message on an instance's queue", cmdEnqueue, ""},
		{"cancel", "cancel <instance> [--reason text]", "cancel an instance", cmdCancel, ""},
		{"list", "list [--status S] [--limit N]", "list instances, newest first", cmdList, ""},
		{"info", "info <instance>", "describe an instance and its executions", cmdInfo, ""},
		{"tree", "tree <instance>", "print an instance and its sub-orchestrations", cmdTree, ""},
		{"history", "history <instance> [--execution N | --all] [--json]", "print an instance's history", cmdHistory, ""},
		{"kv", "kv <instance> [key]", "print an instance's KV store or one key", cmdKV, ""},
		{"metrics", "metrics", "count instances, executions, events and queued messages", cmdMetrics, ""},
		{"delete", "delete <instance> [--force] | delete --completed-before D [--limit N] [--dry-run]", "delete an instance, or finished instances in bulk", cmdDelete, ""},
		{"prune", "prune <instance> | --all [--keep-last N] [--completed-before D] [--limit N]", "delete old executions", cmdPrune, ""},
		{"table", "table create|ensure", "create the table, or check an existing one", cmdTable, ""},
		{"jobs", "jobs list|add|pause|resume|delete [arguments] [flags]", "list, add, pause, resume or delete scheduled jobs", cmdJobs, jobsNotes},
		{"locks", "locks list | locks reset <key>", "list held distributed locks, or free one", cmdLocks, ""},
		{"clock", "clock [--max-skew duration]", "measure this host's clock against DynamoDB's", cmdClock, ""},
		{"dev", "dev [--persist DIR] [--detach] | dev --print-env | dev stop", "run local emulators with a table and its queues, for development", cmdDev, devNotes},
		{"console", "console [--addr host:port] [--token T] [--allow-actions]", "serve the web console", cmdConsole, consoleNotes},
	}
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// run runs the command line args and returns the exit code. getenv reads
// the environment (os.Getenv in main).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{ctx: ctx, base: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	err := a.run(args)
	return a.exit(err)
}

func (a *app) run(args []string) error {
	if err := a.envDefaults(); err != nil {
		return err
	}
	gfs := a.flagSet("duradyn")
	version := gfs.Bool("version", false, "print the version and exit")
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.usage()
			return nil
		}
		return usageError("%v (see duradyn help)", err)
	}
	if *version {
		fmt.Fprintln(a.stdout, "duradyn", buildVersion())
		return nil
	}
	rest := gfs.Args()
	if len(rest) == 0 {
		a.usage()
		return usageError("no command given (see duradyn help)")
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		return a.help(rest)
	}
	cmd := findCommand(name)
	if cmd == nil {
		return usageError("unknown command %q (see duradyn help)", name)
	}
	fs := a.flagSet("duradyn " + name)
	runCmd := cmd.setup(a, fs)
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.commandUsage(cmd)
			return nil
		}
		return usageError("%s: %v (usage: duradyn %s)", name, err, cmd.usage)
	}
	if err := a.checkGlobals(); err != nil {
		return err
	}
	timeout := a.g.timeout
	if timeout < 0 { // not given
		timeout = defaultTimeout
		if waits(name, fs) {
			timeout = 0
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		a.ctx, cancel = context.WithTimeout(a.ctx, timeout)
		defer cancel()
	}
	defer a.close()
	return runCmd(pos)
}

// exit prints err (one line) and returns its exit code.
func (a *app) exit(err error) int {
	if err == nil {
		return exitOK
	}
	code := exitError
	var ce *codedError
	if errors.As(err, &ce) {
		code = ce.code
	}
	if a.base.Err() != nil {
		fmt.Fprintln(a.stderr, "duradyn: interrupted")
		return exitInterrupted
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	fmt.Fprintf(a.stderr, "duradyn: %s\n", msg)
	return code
}

// envDefaults sets the globals from the environment.
func (a *app) envDefaults() error {
	g := &a.g
	// The library's rule (dynamo.NewFromEnv reads the same).
	env, err := dynamo.ReadEnv(a.getenv)
	if err != nil {
		return usageError("%v", err)
	}
	g.table, g.orchQueue, g.workerQueue = env.Table, env.OrchestratorQueueURL, env.WorkerQueueURL
	g.ddbEndpoint, g.sqsEndpoint = env.DynamoDBEndpoint, env.SQSEndpoint
	if env.Shards != 0 {
		g.shards, g.shardsSource = env.Shards, "DURADYN_SHARDS"
	}
	g.region = firstNonEmpty(a.getenv("AWS_REGION"), a.getenv("AWS_DEFAULT_REGION"))
	g.output = firstNonEmpty(a.getenv("DURADYN_OUTPUT"), "text")
	g.progress = 100
	g.timeout = -1 // not given: defaultTimeout, or none for a command that waits
	if v := a.getenv("DURADYN_PROGRESS_EVERY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usageError("DURADYN_PROGRESS_EVERY=%q is not a positive number", v)
		}
		g.progress = n
	}
	return nil
}

// shardsFlag records that --shards was given.
type shardsFlag struct{ g *globals }

func (f shardsFlag) String() string {
	if f.g == nil || f.g.shardsSource == "" {
		return "the table's"
	}
	return strconv.Itoa(f.g.shards)
}

func (f shardsFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("not a number")
	}
	f.g.shards, f.g.shardsSource = n, "--shards"
	return nil
}

// timeoutFlag is --timeout, which is not given while g.timeout is -1.
type timeoutFlag struct{ g *globals }

func (f timeoutFlag) String() string {
	if f.g == nil || f.g.timeout == -1 {
		return ""
	}
	return f.g.timeout.String()
}

func (f timeoutFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("not a duration")
	}
	if d < 0 {
		return errors.New("negative")
	}
	f.g.timeout = d
	return nil
}

// flagSet returns a flag set holding the global flags, whose defaults are
// their current values.
func (a *app) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	g := &a.g
	fs.StringVar(&g.table, "table", g.table, "DynamoDB `table` [DURADYN_TABLE]")
	fs.StringVar(&g.region, "region", g.region, "AWS `region` [AWS_REGION]")
	fs.StringVar(&g.orchQueue, "orchestrator-queue-url", g.orchQueue, "orchestrator wake-up queue `URL` [DURADYN_ORCHESTRATOR_QUEUE_URL]")
	fs.StringVar(&g.workerQueue, "worker-queue-url", g.workerQueue, "worker wake-up queue `URL` [DURADYN_WORKER_QUEUE_URL]")
	fs.StringVar(&g.ddbEndpoint, "dynamodb-endpoint", g.ddbEndpoint, "DynamoDB endpoint `URL` [DURADYN_DYNAMODB_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB]")
	fs.StringVar(&g.sqsEndpoint, "sqs-endpoint", g.sqsEndpoint, "SQS endpoint `URL` [DURADYN_SQS_ENDPOINT, AWS_ENDPOINT_URL_SQS]")
	fs.StringVar(&g.output, "output", g.output, "output `format`: text or json [DURADYN_OUTPUT]")
	fs.Var(shardsFlag{g}, "shards", "shard `count` of the table [DURADYN_SHARDS]; default: the count stored in the table")
	fs.Var(timeoutFlag{g}, "timeout", "`limit` for the whole command; 0: none (default 1m; none for wait and start --wait)")
	return fs
}

func (a *app) checkGlobals() error {
	switch a.g.output {
	case "text", "json":
	default:
		return usageError("--output %q: want text or json", a.g.output)
	}
	if a.g.shardsSource != "" && (a.g.shards < 1 || a.g.shards > dynamo.MaxShards) {
		return usageError("%s %d is outside 1..%d", a.g.shardsSource, a.g.shards, dynamo.MaxShards)
	}
	return nil
}

// parseInterspersed parses flags anywhere in args and returns the
// positional arguments; those after "--" are all positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(cmd string, args []string, min, max int, names string) error {
	if len(args) < min || len(args) > max {
		return usageError("%s: want %s, got %d argument(s) (usage: duradyn %s)", cmd, names, len(args), findCommand(cmd).usage)
	}
	for _, v := range args {
		if v == "" {
			return usageError("%s: empty argument", cmd)
		}
	}
	return nil
}

func (a *app) usage() {
	w := a.stdout
	fmt.Fprintln(w, "Usage: duradyn [global flags] <command> [arguments] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Global flags:")
	fs := a.flagSet("duradyn")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 wait timeout, 5 orchestration failed,")
	fmt.Fprintln(w, "6 clock skew past --max-skew (clock), 130 interrupted (Ctrl-C).")
	fmt.Fprintln(w, "Run \"duradyn help <command>\" for a command's flags.")
}

func (a *app) commandUsage(c *command) {
	fmt.Fprintf(a.stdout, "Usage: duradyn %s\n\n%s.\n\nFlags:\n", c.usage, c.summary)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	probe := &app{ctx: a.ctx, stdout: io.Discard, stderr: io.Discard, getenv: a.getenv}
	c.setup(probe, fs)
	fs.SetOutput(a.stdout)
	fs.PrintDefaults()
	if c.notes != "" {
		fmt.Fprintf(a.stdout, "\n%s", c.notes)
	}
	fmt.Fprintln(a.stdout, "\nGlobal flags: see duradyn help.")
}

func (a *app) help(args []string) error {
	if len(args) == 0 {
		a.usage()
		return nil
	}
	c := findCommand(args[0])
	if c == nil {
		return usageError("unknown command %q (see duradyn help)", args[0])
	}
	a.commandUsage(c)
	return nil
}

func (a *app) close() {
	if a.p != nil {
		a.p.Close()
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// waits reports whether command name, with the flags fs holds, waits for
// an instance to finish: such a command has no default timeout.
func waits(name string, fs *flag.FlagSet) bool {
	if name == "wait" {
		return true
	}
	f := fs.Lookup("wait")
	return f != nil && f.Value.String() == "true"
}

// buildVersion is the module's version from the build information: a
// release tag for go install …@vX, else "(devel)" with the commit.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += " (modified)"
			}
		}
	}
	return v
}
