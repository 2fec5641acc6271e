package goworkflows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedis is returned (wrapping the PATH lookup's error) by StartRedis
// when no redis-server binary is on PATH.
var ErrNoRedis = errors.New("redis-server is not on PATH (install it with bench/scripts/install-redis)")

// ErrRedisStart is returned (wrapped) when redis-server did not start and
// answer PING.
var ErrRedisStart = errors.New("redis-server did not start")

// redisServerArgs are the persistence settings of go-workflows'
// docker-compose.yml for Redis: an append-only file synced on every write
// (appendfsync always), the durability a DynamoDB commit has when it
// returns. With appendfsync everysec (a write may be lost in a crash)
// Redis does about twice the HelloCities5 throughput on this kind of
// machine. Snapshotting keeps Redis' defaults.
var redisServerArgs = []string{
	"--appendonly", "yes",
	"--appendfsync", "always",
	"--loglevel", "warning",
}

const (
	// redisStartAttempts is how often StartRedis picks a new port when
	// redis-server exits at once (another process took the port).
	redisStartAttempts = 3
	// redisReadyTimeout bounds the wait for the first PING answer.
	redisReadyTimeout = 20 * time.Second
	// redisStopTimeout is how long stop waits after SIGTERM before it
	// kills redis-server.
	redisStopTimeout = 10 * time.Second
)

// StartRedis starts redis-server on a free localhost port, with dir as its
// working directory (append-only file and dump go there, and its log to
// dir/redis.log), waits until it answers PING and returns its host:port
// and a stop function. stop shuts it down (SIGTERM, then SIGKILL after
// ten seconds) and may be called more than once. ctx bounds the start
// only: the server runs until stop is called. When redis-server is not on
// PATH, the error wraps ErrNoRedis.
func StartRedis(ctx context.Context, dir string) (addr string, stop func() error, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrNoRedis, err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrRedisStart, err)
	}
	var errs []error
	for range redisStartAttempts {
		addr, stop, err := startRedisOnce(ctx, bin, dir)
		if err == nil {
			return addr, stop, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", nil, errors.Join(errs...)
}

// startRedisOnce starts redis-server on a port that was free a moment ago.
func startRedisOnce(ctx context.Context, bin, dir string) (string, func() error, error) {
	port, err := freePort()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrRedisStart, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, "redis.log")
	args := append([]string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--logfile", logPath,
		"--daemonize", "no",
	}, redisServerArgs...)
	// Not exec.CommandContext: the server outlives ctx, until stop.
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrRedisStart, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				stopErr = fmt.Errorf("stop redis-server: %w", err)
			}
			timer := time.NewTimer(redisStopTimeout)
			defer timer.Stop()
			select {
			case <-exited:
				if waitErr != nil {
					stopErr = errors.Join(stopErr, fmt.Errorf("redis-server exited: %w", waitErr))
				}
			case <-timer.C:
				_ = cmd.Process.Kill()
				<-exited
				stopErr = errors.Join(stopErr, fmt.Errorf("redis-server did not stop within %v: killed", redisStopTimeout))
			}
		})
		return stopErr
	}

	if err := waitForPing(ctx, addr, exited); err != nil {
		_ = stop()
		return "", nil, fmt.Errorf("%w on %s: %w%s", ErrRedisStart, addr, err, logTail(logPath, output.Bytes()))
	}
	return addr, stop, nil
}

// waitForPing pings addr until it answers, the process exits or ctx or
// redisReadyTimeout ends.
func waitForPing(ctx context.Context, addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, redisReadyTimeout)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before answering PING (last PING: %w)", err)
		case <-ctx.Done():
			return fmt.Errorf("no PING answer: %w (last PING: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// freePort returns a localhost TCP port that was free when asked.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the end of the server's log file and output, for an
// error message.
func logTail(logPath string, output []byte) string {
	const max = 2000
	data, _ := os.ReadFile(logPath)
	data = append(data, output...)
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return ""
	}
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return ": redis-server said: " + string(data)
}
