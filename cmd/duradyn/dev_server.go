package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// devPhase is where a dev environment is in its life.
type devPhase string

// The phases of a dev environment.
const (
	devStarting devPhase = "starting"
	devReady    devPhase = "ready"
	devStopping devPhase = "stopping"
)

// devState is what a dev environment tells the duradyn processes that ask.
type devState struct {
	PID      int       `json:"pid"`
	Phase    devPhase  `json:"phase"`
	Settings []setting `json:"settings,omitempty"`
}

// Requests on the environment's socket, one line each. "env" is answered
// with the devState as JSON. "stop" is answered at once with "stopping
// <pid>", and with "stopped" (or "failed: <reason>") once the emulators
// have stopped.
const (
	devRequestEnv  = "env"
	devRequestStop = "stop"
)

// devServer answers requests on the environment's Unix socket.
type devServer struct {
	ln     net.Listener
	cancel context.CancelFunc // ends the environment
	// keep leaves the connections of stop requests open after the last
	// answer: the process's exit closes them, so that "duradyn dev stop"
	// returns once the detached process is gone.
	keep bool

	mu       sync.Mutex
	state    devState
	stoppers []net.Conn
	finished bool
}

// listenDev listens on the socket in dir. The caller holds the lock, so a
// socket file found there is a crashed environment's and is replaced.
func listenDev(dir string, cancel context.CancelFunc, keep bool) (*devServer, error) {
	path := filepath.Join(dir, devSocketFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (set %s to a shorter directory if the path is too long): %w", path, envDevDir, err)
	}
	s := &devServer{ln: ln, cancel: cancel, keep: keep, state: devState{PID: os.Getpid(), Phase: devStarting}}
	go s.serve()
	return s, nil
}

func (s *devServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed by finish
		}
		go s.handle(c)
	}
}

// handle answers one request.
func (s *devServer) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch strings.TrimSpace(line) {
	case devRequestEnv:
		_ = json.NewEncoder(c).Encode(s.state)
	case devRequestStop:
		fmt.Fprintf(c, "stopping %d\n", s.state.PID)
		if s.finished {
			fmt.Fprintln(c, "stopped")
			break
		}
		s.stoppers = append(s.stoppers, c)
		s.cancel()
		return
	}
	c.Close()
}

// setPhase records the environment's phase and settings.
func (s *devServer) setPhase(p devPhase, settings []setting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Phase, s.state.Settings = p, settings
}

// finish closes the socket and answers the stop requests with err's
// outcome, and returns err.
func (s *devServer) finish(err error) error {
	s.ln.Close() // removes the socket file
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = true
	reply := "stopped"
	if err != nil {
		reply = "failed: " + strings.Join(strings.Fields(err.Error()), " ")
	}
	for _, c := range s.stoppers {
		fmt.Fprintln(c, reply)
		if !s.keep {
			c.Close()
		}
	}
	return err
}

// errDevNotRunning is the error of a request when no environment runs.
var errDevNotRunning = errors.New("no dev environment is running (\"duradyn dev\" starts one; \"duradyn dev --detach\" in the background)")

// devDial connects to the environment's socket in dir and sends req. The
// connection is bound by a.ctx.
func (a *app) devDial(dir, req string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(a.ctx, "unix", filepath.Join(dir, devSocketFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isConnRefused(err) {
			return nil, errDevNotRunning
		}
		return nil, fmt.Errorf("reach the dev environment: %w", err)
	}
	if deadline, ok := a.ctx.Deadline(); ok {
		_ = c.SetDeadline(deadline)
	}
	// An interrupt ends a wait for an answer.
	stop := context.AfterFunc(a.ctx, func() { _ = c.SetDeadline(time.Now()) })
	if _, err := fmt.Fprintln(c, req); err != nil {
		stop()
		c.Close()
		return nil, fmt.Errorf("reach the dev environment: %w", err)
	}
	return &devConn{Conn: c, stop: stop}, nil
}

// devConn is a connection to the environment that stops watching the
// context when it is closed.
type devConn struct {
	net.Conn
	stop func() bool
}

func (c *devConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// devQuery returns the state of the environment whose directory is dir.
func (a *app) devQuery(dir string) (devState, error) {
	c, err := a.devDial(dir, devRequestEnv)
	if err != nil {
		return devState{}, err
	}
	defer c.Close()
	var st devState
	if err := json.NewDecoder(c).Decode(&st); err != nil {
		if a.ctx.Err() != nil {
			return devState{}, a.ctx.Err()
		}
		// It stopped between the connection and the answer.
		return devState{}, errDevNotRunning
	}
	return st, nil
}

// devRunningError says that the environment of pid runs already.
func devRunningError(pid int) error {
	return fmt.Errorf("a dev environment is already running (pid %d): \"duradyn dev --print-env\" prints its settings, \"duradyn dev stop\" stops it", pid)
}

// devLock takes the lock only a running environment holds, and returns
// the function that releases it.
func (a *app) devLock(dir string) (func(), error) {
	path := filepath.Join(dir, devLockFile)
	f, ok, err := lockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		if st, err := a.devQuery(dir); err == nil {
			return nil, devRunningError(st.PID)
		}
		return nil, fmt.Errorf("a dev environment is starting or stopping (it holds %s)", path)
	}
	return func() { f.Close() }, nil
}

// takeReadyFile returns the file descriptor named by DURADYN_DEV_READY_FD
// as a file, closed on exec so that the emulators do not inherit it (the
// process waiting for it reads until every copy is closed); nil when fd is
// "".
func takeReadyFile(fd string) (*os.File, error) {
	if fd == "" {
		return nil, nil
	}
	os.Unsetenv(envDevReadyFD)
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil, usageError("%s=%q: want a file descriptor from 3 on", envDevReadyFD, fd)
	}
	closeOnExec(n)
	return os.NewFile(uintptr(n), "ready"), nil
}
