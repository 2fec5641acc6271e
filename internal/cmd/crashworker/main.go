// Command crashworker is a worker process of the crash recovery soak
// (package internal/crashsoak): a runtime with default lease options on the
// table and queues its environment names, which reports on standard output
// what it fetches and, as a victim, the work it holds until it is killed.
// It runs until its standard input closes or it gets SIGINT or SIGTERM.
// Tests and the Recovery benchmark start it; it is not for use otherwise.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/duradyn/duradyn/internal/crashsoak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		// The parent closes standard input to stop this process gracefully.
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := crashsoak.RunWorker(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "crashworker:", err)
		os.Exit(1)
	}
}
