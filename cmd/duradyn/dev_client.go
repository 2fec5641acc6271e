package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// devPrintEnv prints the settings of the running environment.
func (a *app) devPrintEnv() error {
	dir, err := a.devDir()
	if err != nil {
		return err
	}
	st, err := a.devQuery(dir)
	if err != nil {
		return err
	}
	if st.Phase != devReady {
		return fmt.Errorf("the dev environment (pid %d) is %s; its settings are printed once it is ready", st.PID, st.Phase)
	}
	return a.printSettings(st.Settings)
}

// devStop stops the running environment and returns once it has stopped.
func (a *app) devStop() error {
	dir, err := a.devDir()
	if err != nil {
		return err
	}
	c, err := a.devDial(dir, devRequestStop)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	pidText, ok := strings.CutPrefix(strings.TrimSpace(line), "stopping ")
	pid, perr := strconv.Atoi(pidText)
	if err != nil || !ok || perr != nil {
		return a.devStopError(err, "it did not acknowledge the stop request")
	}
	line, err = r.ReadString('\n')
	if err != nil {
		return a.devStopError(err, fmt.Sprintf("pid %d did not confirm that it stopped", pid))
	}
	if reason, failed := strings.CutPrefix(strings.TrimSpace(line), "failed: "); failed {
		return fmt.Errorf("the dev environment (pid %d) stopped with an error: %s", pid, reason)
	}
	// A detached environment's connection closes when its process exits.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return a.devStopError(err, fmt.Sprintf("pid %d stopped its emulators but did not exit", pid))
	}
	if a.jsonOut() {
		return a.printJSON(map[string]any{"stopped": true, "pid": pid})
	}
	fmt.Fprintf(a.stdout, "stopped the dev environment (pid %d)\n", pid)
	return nil
}

// devStopError words a failed wait for a stop.
func (a *app) devStopError(err error, what string) error {
	switch {
	case a.base.Err() != nil:
		return a.base.Err()
	case a.ctx.Err() != nil:
		return timeoutError("timed out stopping the dev environment: %s", what)
	case err == nil || errors.Is(err, io.EOF):
		return fmt.Errorf("the dev environment went away: %s", what)
	}
	return fmt.Errorf("stop the dev environment: %s: %w", what, err)
}

// devDetach starts the environment in a process of its own, in a session
// of its own, waits until it is ready and prints its settings.
func (a *app) devDetach(persist string) error {
	dir, err := a.devDir()
	if err != nil {
		return err
	}
	if st, err := a.devQuery(dir); err == nil {
		return devRunningError(st.PID)
	} else if !errors.Is(err, errDevNotRunning) {
		return err
	}
	cmd, ready, logPath, err := a.devSpawn(dir, persist)
	if err != nil {
		return err
	}
	defer ready.Close()
	st, err := a.devAwaitReady(cmd, ready, logPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "duradyn dev: running in the background (pid %d, log %s); \"duradyn dev stop\" stops it\n", st.PID, logPath)
	return a.printSettings(st.Settings)
}

// devSpawn starts this program again as "duradyn dev", detached, with its
// output going to the log in dir, and returns the pipe on which it says
// that it is ready.
func (a *app) devSpawn(dir, persist string) (*exec.Cmd, *os.File, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, "", fmt.Errorf("find this program to run it in the background: %w", err)
	}
	args := []string{"dev"}
	if persist != "" {
		if persist, err = filepath.Abs(persist); err != nil {
			return nil, nil, "", fmt.Errorf("--persist: %w", err)
		}
		args = append(args, "--persist", persist)
	}
	args = append(args, a.devGlobalArgs()...)
	logPath := filepath.Join(dir, devLogFile)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, "", fmt.Errorf("create the log: %w", err)
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, "", err
	}
	defer w.Close()
	cmd := exec.Command(exe, args...)
	// The pipe is the first of ExtraFiles: descriptor 3.
	cmd.Env = append(os.Environ(), envDevReadyFD+"=3", envDevDir+"="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = detachedProcAttr()
	if err := cmd.Start(); err != nil {
		r.Close()
		return nil, nil, "", fmt.Errorf("start the dev environment: %w", err)
	}
	return cmd, r, logPath, nil
}

// devGlobalArgs are the global flags given to dev --detach that the
// process it starts needs.
func (a *app) devGlobalArgs() []string {
	var args []string
	if a.g.table != "" {
		args = append(args, "--table", a.g.table)
	}
	if a.g.region != "" {
		args = append(args, "--region", a.g.region)
	}
	if a.g.shardsSource != "" {
		args = append(args, "--shards", strconv.Itoa(a.g.shards))
	}
	if a.g.timeout >= 0 {
		args = append(args, "--timeout", a.g.timeout.String())
	}
	return args
}

// devAwaitReady waits until the detached process says it is ready, exits,
// or the start-up time runs out (it is then stopped).
func (a *app) devAwaitReady(cmd *exec.Cmd, ready io.Reader, logPath string) (devState, error) {
	ctx, cancel := a.devStartContext(a.base)
	defer cancel()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(ready) // until the process closes it or exits
		got <- b
	}()
	select {
	case b := <-got:
		var st devState
		if json.Unmarshal(b, &st) == nil && st.Phase == devReady {
			return st, cmd.Process.Release()
		}
		err := cmd.Wait()
		return devState{}, fmt.Errorf("the dev environment did not start (%v); the end of its log, %s: %s", err, logPath, logTail(logPath, 3))
	case <-ctx.Done():
		if err := stopProcess(cmd, devStopTimeout); err != nil {
			return devState{}, fmt.Errorf("the dev environment did not start in time, and stopping it failed: %w (log: %s)", err, logPath)
		}
		if a.base.Err() != nil {
			return devState{}, a.base.Err()
		}
		return devState{}, timeoutError("the dev environment was not ready within the start-up time (--timeout); stopped it (log: %s)", logPath)
	}
}

// stopProcess asks cmd's process to stop, kills it after grace, and waits
// for it.
func stopProcess(cmd *exec.Cmd, grace time.Duration) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := terminate(cmd.Process); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
	}
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	<-exited
	return nil
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
