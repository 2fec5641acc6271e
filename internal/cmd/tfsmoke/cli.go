package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/durable/durabletest"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/provider"
)

// The orchestration serve runs for the CLI: "Hello" calls the activity
// "Greet" once and returns its result.
var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return greeting(name), nil
	})
	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return greet.Call(ctx, name).Get(ctx)
	})
)

func greeting(name string) string { return "Hello, " + name + "!" }

// helloRegistry returns the registry serve runs and replay verifies
// against. onGreet, when not nil, is called each time the activity runs.
func helloRegistry(onGreet func(name string)) (*durable.Registry, error) {
	if onGreet == nil {
		return durable.NewRegistry(hello, greet)
	}
	return durable.NewRegistry(hello, durable.NewActivity(greet.Name(), func(ctx context.Context, name string) (string, error) {
		onGreet(name)
		return greeting(name), nil
	}))
}

// serveShutdownTimeout bounds serve's graceful shutdown.
const serveShutdownTimeout = 30 * time.Second

// runCommand runs one of the helper commands scripts/tf-test uses around
// the CLI: serve, replay or status.
func runCommand(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch name {
	case "serve":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, args, stdin, stdout, stderr)
	case "replay":
		return replayHistory(args, stdin, stdout)
	case "status":
		return checkStatus(args, stdin, stdout)
	}
	return fmt.Errorf("unknown command %q: want serve, replay or status (or the flags of the checks)", name)
}

// serve runs a durable.Runtime with [helloRegistry] on the table and queues
// of the outputs, through a provider built as a program would build it. It
// prints "ready" on stdout once the runtime has started (and checked the
// table's layout), then serves until stdin reaches its end or ctx ends (a
// signal), and shuts down gracefully. Progress goes to stderr.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("tfsmoke serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outputsPath := fs.String("outputs", "", "file holding `terraform output -json` of terraform/examples/basic (required)")
	endpoint := fs.String("endpoint", "", "base URL of the emulator serving DynamoDB and SQS (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outputsPath == "" || *endpoint == "" {
		fs.Usage()
		return errors.New("serve: -outputs and -endpoint are required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments: %q", fs.Args())
	}
	data, err := os.ReadFile(*outputsPath)
	if err != nil {
		return fmt.Errorf("serve: read outputs: %w", err)
	}
	out, err := parseOutputs(data)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	l := &logger{w: stderr, start: time.Now()}
	p, err := dynamo.New(awsConfig(out.Region, *endpoint), func(o *dynamo.Options) {
		o.TableName = out.TableName
		o.OrchestratorQueueURL = out.OrchestratorQueueURL
		o.WorkerQueueURL = out.WorkerQueueURL
		o.Logger = l.slog("serve")
	})
	if err != nil {
		return fmt.Errorf("serve: dynamo.New: %w", err)
	}
	defer func() { err = errors.Join(err, p.Close()) }()

	reg, err := helloRegistry(func(name string) { l.printf("serve: activity %s(%q)", greet.Name(), name) })
	if err != nil {
		return fmt.Errorf("serve: registry: %w", err)
	}
	rt, err := durable.NewRuntime(p, reg, func(o *durable.Options) {
		o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		o.ShutdownTimeout = serveShutdownTimeout
	})
	if err != nil {
		return fmt.Errorf("serve: durable.NewRuntime: %w", err)
	}
	if err := rt.Start(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	l.printf("serve: runtime started on table %s (%d shards), woken over SQS; orchestration %s %s, activity %s",
		out.TableName, p.Layout().Shards, hello.Name(), hello.Version(), greet.Name())
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		// Nobody waits for the runtime: stop it.
		ctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
		defer cancel()
		return errors.Join(fmt.Errorf("serve: write ready: %w", err), rt.Shutdown(ctx))
	}

	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-eof:
		l.printf("serve: standard input closed: stopping")
	case <-ctx.Done():
		l.printf("serve: signal received: stopping")
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	if err := rt.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	l.printf("serve: runtime stopped")
	return nil
}

// replayHistory reads duroxide JSON lines (the CLI's history --json) from
// stdin and checks them: events of one instance, ending with
// OrchestrationCompleted (with the output given), that replay with
// durabletest against [helloRegistry].
func replayHistory(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tfsmoke replay", flag.ContinueOnError)
	fs.SetOutput(stdout)
	instance := fs.String("instance", "", "the instance the history is of (required)")
	output := fs.String("output", "", "the output, as JSON, the history must end with (default: any)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *instance == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("replay: -instance is required, and no arguments")
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("replay: read standard input: %w", err)
	}
	events, err := durabletest.ReadHistory(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if len(events) == 0 {
		return errors.New("replay: the history is empty")
	}
	kinds := make([]string, len(events))
	for i, ev := range events {
		if ev.InstanceID != *instance {
			return fmt.Errorf("replay: event %d is of instance %q, want %q", ev.EventID, ev.InstanceID, *instance)
		}
		kinds[i] = ev.Kind.EventType()
	}
	done, ok := events[len(events)-1].Kind.(provider.OrchestrationCompleted)
	switch {
	case !ok:
		return fmt.Errorf("replay: history %v does not end with OrchestrationCompleted", kinds)
	case *output != "" && done.Output != *output:
		return fmt.Errorf("replay: output %s, want %s", done.Output, *output)
	}
	reg, err := helloRegistry(nil)
	if err != nil {
		return fmt.Errorf("replay: registry: %w", err)
	}
	if err := durabletest.ReplayJSON(reg, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	fmt.Fprintf(stdout, "tfsmoke replay: %d events of %s %v replay deterministically against the code serve ran; output %s\n",
		len(events), *instance, kinds, done.Output)
	return nil
}

// cliStatus holds the fields of the CLI's status --output json that
// status checks.
type cliStatus struct {
	Instance string  `json:"instance"`
	Status   string  `json:"status"`
	Output   *string `json:"output"`
}

// checkStatus reads one status document (the CLI's status --output json)
// from stdin and checks its instance, status and output.
func checkStatus(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tfsmoke status", flag.ContinueOnError)
	fs.SetOutput(stdout)
	instance := fs.String("instance", "", "the instance the status is of (required)")
	status := fs.String("status", "Completed", "the status the instance must have")
	output := fs.String("output", "", "the output, as JSON, the status must have (default: any)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *instance == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("status: -instance is required, and no arguments")
	}
	var st cliStatus
	dec := json.NewDecoder(stdin)
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("status: decode standard input: %w", err)
	}
	if dec.More() {
		return errors.New("status: more than one JSON document on standard input")
	}
	switch {
	case st.Instance != *instance:
		return fmt.Errorf("status: instance %q, want %q", st.Instance, *instance)
	case st.Status != *status:
		return fmt.Errorf("status: %s is %q, want %s", st.Instance, st.Status, *status)
	case *output != "" && (st.Output == nil || *st.Output != *output):
		got := "none"
		if st.Output != nil {
			got = *st.Output
		}
		return fmt.Errorf("status: %s output %s, want %s", st.Instance, got, *output)
	}
	got := ""
	if st.Output != nil {
		got = ", output " + *st.Output
	}
	fmt.Fprintf(stdout, "tfsmoke status: %s is %s%s\n", st.Instance, st.Status, got)
	return nil
}
