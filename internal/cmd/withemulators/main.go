// Command withemulators runs a command beside one pair of emulators
// (DynamoDB and SQS, found or started as package localstack does), with
// DURADYN_DYNAMODB_ENDPOINT and DURADYN_SQS_ENDPOINT set to them, then
// stops what it started and exits with the command's status. make test
// runs its go test commands under it, so that the test binaries share one
// DynamoDB Local, started and warmed up once, instead of starting one
// each.
//
// Usage:
//
//	go run ./internal/cmd/withemulators -- go test ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/duradyn/duradyn/localstack"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run starts the emulators, runs args and returns the exit status.
func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withemulators -- command [args...]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	em, err := localstack.Start(ctx, func(o *localstack.Options) { o.Logger = log })
	if err != nil {
		fmt.Fprintf(os.Stderr, "withemulators: %v\n", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := em.Stop(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "withemulators: stop: %v\n", err)
		}
	}()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		localstack.EnvDynamoDBEndpoint+"="+em.DynamoDBURL,
		localstack.EnvSQSEndpoint+"="+em.SQSURL)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "withemulators: %v\n", err)
		return 1
	}
}
