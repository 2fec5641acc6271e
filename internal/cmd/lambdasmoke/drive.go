package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/internal/lambdasim"
)

// drive plays Lambda for the applied example, which the emulator can
// create but not run: it runs the function's bootstrap (built for this
// machine) as Lambda would, behind a Runtime API, invoked by an event
// source mapping on each of the example's queues and by a sweep every
// 10 s, with the environment the function was given (the table and
// queues of the outputs) plus the emulator's endpoint. It prints "ready"
// once the mappings run, serves until standard input ends or SIGINT or
// SIGTERM arrives, and fails if an invocation failed.
//
//	lambdasmoke drive -outputs outputs.json -endpoint URL -bootstrap PATH
func drive(args []string) error {
	fs := flag.NewFlagSet("drive", flag.ContinueOnError)
	outputsPath := fs.String("outputs", "", "terraform output -json of examples/lambda")
	endpoint := fs.String("endpoint", "", "the emulator's endpoint")
	bootstrap := fs.String("bootstrap", "", "the function's bootstrap, built for this machine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outputsPath == "" || *endpoint == "" || *bootstrap == "" {
		return errors.New("drive needs -outputs, -endpoint and -bootstrap")
	}
	out, err := readOutputs(*outputsPath)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	env := []string{
		"DURADYN_TABLE=" + out["table_name"],
		"DURADYN_ORCHESTRATOR_QUEUE_URL=" + out["orchestrator_queue_url"],
		"DURADYN_WORKER_QUEUE_URL=" + out["worker_queue_url"],
		"AWS_REGION=" + out["region"],
		"AWS_ENDPOINT_URL=" + *endpoint,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
	fn := &lambdasim.Function{
		Timeout:         30 * time.Second,
		MaxEnvironments: 2,
		New: func(ctx context.Context) (lambdasim.Environment, error) {
			return lambdasim.StartProcess(ctx, *bootstrap, env, prefixed("bootstrap: "))
		},
	}
	client := sqs.New(sqs.Options{
		Region:       out["region"],
		BaseEndpoint: aws.String(*endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	return serve(ctx, fn, client, out)
}

// serve runs the mappings and the sweep schedule until ctx ends.
func serve(ctx context.Context, fn *lambdasim.Function, client *sqs.Client, out map[string]string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, url := range []string{out["orchestrator_queue_url"], out["worker_queue_url"]} {
		m := &lambdasim.EventSourceMapping{Function: fn, SQS: client, QueueURL: url, MaximumConcurrency: 2}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil {
				errs <- err
			}
		}()
	}
	sweeps := &lambdasim.Schedule{Function: fn, Every: 10 * time.Second, Payload: []byte(`{"duradyn":"sweep"}`)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sweeps.Run(ctx)
	}()
	fmt.Println("ready")
	wg.Wait()
	close(errs)
	err := errors.Join(<-errs, <-errs, fn.Close())
	outcomes := map[lambdasim.Outcome]int{}
	for _, r := range fn.Records() {
		outcomes[r.Outcome]++
	}
	fmt.Fprintf(os.Stderr, "lambdasmoke: %d invocations: %v\n", len(fn.Records()), outcomes)
	if n := len(fn.Records()) - outcomes[lambdasim.Succeeded]; n > 0 {
		err = errors.Join(err, fmt.Errorf("%d invocations did not succeed", n))
	}
	return err
}

// readOutputs reads the string outputs of `terraform output -json`.
func readOutputs(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	out := map[string]string{}
	for _, name := range []string{"table_name", "orchestrator_queue_url", "worker_queue_url", "region"} {
		s, ok := raw[name].Value.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("output %s missing or empty", name)
		}
		out[name] = s
	}
	return out, nil
}

// prefixed writes each line to standard error after prefix.
func prefixed(prefix string) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, prefix+sc.Text())
		}
	}()
	return w
}
