package lambdasim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// ProcessEnvironment is an [Environment] that runs a built function
// (bootstrap, as the provided.al2023 runtime runs it) as a process behind
// its own [RuntimeAPI]: what AWS Lambda does, less the sandbox.
type ProcessEnvironment struct {
	api    *RuntimeAPI
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
	once   sync.Once
}

// StartProcess starts the executable path with env (the function's
// environment variables; AWS_LAMBDA_RUNTIME_API and the function's name
// are added) and its output to out. ctx bounds only the start.
func StartProcess(ctx context.Context, path string, env []string, out io.Writer) (*ProcessEnvironment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	api, err := NewRuntimeAPI()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	cmd.Env = append(append([]string(nil), env...),
		"AWS_LAMBDA_RUNTIME_API="+api.Addr(),
		"AWS_LAMBDA_FUNCTION_NAME=duradyn-worker",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
	)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("lambdasim: start %s: %w", path, err), api.Close())
	}
	e := &ProcessEnvironment{api: api, cmd: cmd, exited: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	return e, nil
}

// API returns the environment's Runtime API.
func (e *ProcessEnvironment) API() *RuntimeAPI { return e.api }

// Exited is closed when the process has exited.
func (e *ProcessEnvironment) Exited() <-chan struct{} { return e.exited }

// ExitError is the process's exit status once [ProcessEnvironment.Exited]
// is closed.
func (e *ProcessEnvironment) ExitError() error {
	<-e.exited
	return e.err
}

// Invoke hands payload to the process, with ctx's deadline in the
// deadline header, and returns its response. It fails when the process
// exits before it answers.
func (e *ProcessEnvironment) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("lambdasim: an invocation needs a deadline")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-e.exited:
			cancel(fmt.Errorf("lambdasim: the function's process exited: %v", e.err))
		case <-ctx.Done():
		}
	}()
	out, err := e.api.Invoke(ctx, payload, deadline)
	if err != nil && context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) && !errors.Is(context.Cause(ctx), context.Canceled) {
		return nil, context.Cause(ctx)
	}
	return out, err
}

// Kill kills the process, as Lambda ends a sandbox that timed out.
func (e *ProcessEnvironment) Kill() {
	_ = e.cmd.Process.Kill()
}

// Close closes the Runtime API, on which lambda.Start exits, and waits up
// to 10 s for the process to exit before it kills it.
func (e *ProcessEnvironment) Close() error {
	var err error
	e.once.Do(func() {
		err = e.api.Close()
		select {
		case <-e.exited:
		case <-time.After(10 * time.Second):
			e.Kill()
			<-e.exited
		}
	})
	return err
}
