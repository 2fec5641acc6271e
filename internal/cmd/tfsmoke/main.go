// Command tfsmoke checks what the Terraform module created, on an AWS
// emulator, from the outputs of terraform/examples/basic. make tf-test
// (scripts/tf-test) runs it between terraform apply and terraform destroy.
//
// It runs two checks, printing each step:
//
//  1. Table parity. It reads the Terraform table back (DescribeTable and
//     DescribeTimeToLive), creates a reference table with tables.Create on
//     the same endpoint, reads that back too, and compares the two with
//     parity.TableParity: keys, global secondary indexes, projections and
//     time to live. The reference table is deleted afterwards.
//  2. One orchestration through the DynamoDB provider, built with
//     dynamo.New from the outputs exactly as a program would on AWS. Two
//     providers share the table and queues, as two processes would: one
//     enqueues a StartOrchestrationItem and runs the activity, the other
//     runs the orchestration's two turns. Each fetch that waits for the
//     other provider's commit must be woken by a signal received over SQS
//     before its poll timeout runs out (without a signal it would only
//     find the work by sweeping the table at the end of the timeout).
//
// Usage:
//
//	terraform output -json > outputs.json
//	tfsmoke -outputs outputs.json -endpoint http://127.0.0.1:4566
//
// Three helper commands let scripts/tf-test drive the applied example with
// the CLI (cmd/duradyn):
//
//	tfsmoke serve -outputs outputs.json -endpoint URL
//	tfsmoke replay -instance ID [-output JSON] < history.jsonl
//	tfsmoke status -instance ID [-status Completed] [-output JSON] < status.json
//
// serve runs a durable.Runtime on the table and queues of the outputs,
// serving the orchestration "Hello" (one call of the activity "Greet"). It
// prints "ready" on standard output once the runtime has started, serves
// until standard input reaches its end or SIGINT or SIGTERM arrives, then
// shuts the runtime down gracefully; its progress goes to standard error.
// replay reads the CLI's history --json and checks that it is one
// completed instance whose events replay, with durabletest.ReplayJSON,
// against the same orchestration and activity serve runs. status reads the
// CLI's status --output json and checks the instance's state and output.
//
// The endpoint serves both DynamoDB and SQS (moto_server, LocalStack). The
// requests are signed with the static test credentials "test"/"test"; the
// program is meant for emulators only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/duradyn/duradyn/internal/linelog"
)

// Static credentials every emulator accepts. They are not secrets.
const (
	testAccessKeyID     = "test"
	testSecretAccessKey = "test"
)

func main() {
	args := os.Args[1:]
	var err error
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		err = runCommand(args[0], args[1:], os.Stdin, os.Stdout, os.Stderr)
	} else {
		err = run(args, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tfsmoke: FAIL:", err)
		os.Exit(1)
	}
}

// run parses the command line and runs both checks.
func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("tfsmoke", flag.ContinueOnError)
	fs.SetOutput(w)
	outputsPath := fs.String("outputs", "", "file holding `terraform output -json` of terraform/examples/basic (required)")
	endpoint := fs.String("endpoint", "", "base URL of the emulator serving DynamoDB and SQS (required)")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit for the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outputsPath == "" || *endpoint == "" {
		fs.Usage()
		return errors.New("-outputs and -endpoint are required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	data, err := os.ReadFile(*outputsPath)
	if err != nil {
		return fmt.Errorf("read outputs: %w", err)
	}
	out, err := parseOutputs(data)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	l := &logger{w: w, start: time.Now()}
	l.printf("outputs: table %s in %s", out.TableName, out.Region)
	l.printf("outputs: orchestrator queue %s", out.OrchestratorQueueURL)
	l.printf("outputs: worker queue %s", out.WorkerQueueURL)

	cfg := awsConfig(out.Region, *endpoint)
	if err := checkTables(ctx, l, cfg, out.TableName); err != nil {
		return fmt.Errorf("table parity: %w", err)
	}
	if err := smoke(ctx, l, cfg, out); err != nil {
		return fmt.Errorf("provider smoke: %w", err)
	}
	l.printf("OK: the Terraform table matches tables.Create, and an orchestration ran through the provider with wake-ups over SQS")
	return nil
}

// awsConfig returns the SDK configuration for the emulator: the region of
// the outputs, static test credentials, and endpoint as the base endpoint of
// every client built from it (dynamo.New builds its clients from it).
func awsConfig(region, endpoint string) aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretAccessKey, "")),
		BaseEndpoint: aws.String(endpoint),
	}
}

// logger prints numbered-free, timestamped progress lines.
type logger struct {
	w     io.Writer
	start time.Time
}

func (l *logger) printf(format string, args ...any) {
	fmt.Fprintf(l.w, "tfsmoke: %6.2fs  %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// slog returns a logger for a provider's Logger option that prints each
// record of level Info and above as a line of l, "<who>: warning: dynamo:
// ... key=value" (package linelog).
func (l *logger) slog(who string) *slog.Logger {
	return linelog.New(func(line string) { l.printf("%s: %s", who, line) }, slog.LevelInfo)
}
