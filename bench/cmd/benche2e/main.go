// Command benche2e runs duradyn's end-to-end benchmark: every scenario of
// package scenario on the runtime over memprovider and over the DynamoDB
// provider (DynamoDB Local, with and without SQS wake-up queues, and behind
// a proxy adding a same-region round trip to each request), with
// go-workflows as the peer where a scenario has one, and writes the
// results as markdown tables and SVG charts.
//
// Usage (from the bench module):
//
//	go run ./cmd/benche2e [-out results] [-short] [-scenarios HelloCities5,Chain1000,...] [-merge] [-cpuprofile file]
//
// -merge writes into the results already in -out, replacing or adding only
// the sections and files of the scenarios run: one scenario is run again,
// or a new one added, without rerunning the rest, as in
//
//	go run ./cmd/benche2e -out results -scenarios ServerlessCost -merge
//
// -systems and -peers select the duradyn systems and the go-workflows
// backends; -systems none runs only the peers.
//
// It finds or starts DynamoDB and SQS as package localstack does (the
// endpoints in the environment, LocalStack with Docker, else the embedded
// DynamoDB Local and SQS emulator), once per run, and Redis for the
// go-workflows Redis backend. Progress lines go to standard output with
// timestamps. It exits with status 1 if a duradyn scenario failed (its
// errors printed), after writing the results that succeeded; failures of
// peers are recorded in their results' notes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func exitf(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "benche2e: "+format+"\n", args...)
	return 2
}
