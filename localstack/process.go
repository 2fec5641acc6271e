package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// process is one emulator server started by this package.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed once the process has exited
	waitErr error         // valid after done is closed
}

// startProcess starts argv with its output appended to logPath. The process
// gets its own process group and, on Linux, dies with the test binary.
func startProcess(name, dir, logPath string, argv []string, env []string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localstack: %s log: %w", name, err)
	}
	// Not exec.CommandContext: the server must outlive the context that
	// started it; Stop ends it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("localstack: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail returns the last n lines of the process's log.
func (p *process) logTail(n int) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	defer f.Close()
	const maxTail = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxTail {
		_, _ = f.Seek(fi.Size()-maxTail, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	if len(b) == 0 {
		return "(log empty)"
	}
	return tail(string(b), n)
}

// exitError describes how the process ended, with the tail of its log;
// when says when it ended. Call it only once the process has exited.
func (p *process) exitError(when string) error {
	return fmt.Errorf("localstack: %s exited %s (%v); last lines of %s:\n%s", p.name, when, p.waitErr, p.logPath, p.logTail(20))
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to exit (bounded by ctx).
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	defer p.logFile.Close()
	pid := p.cmd.Process.Pid
	if p.exited() {
		return nil
	}
	var errs []error
	if err := terminateGroup(pid); err != nil {
		errs = append(errs, fmt.Errorf("localstack: terminate %s: %w", p.name, err))
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return errors.Join(errs...)
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := killGroup(pid); err != nil {
		errs = append(errs, fmt.Errorf("localstack: kill %s: %w", p.name, err))
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("localstack: wait for %s (pid %d) to exit: %w", p.name, pid, ctx.Err()))
	}
	return errors.Join(errs...)
}

// freePort returns a TCP port that was free on the loopback interface a
// moment ago. Servers started on it may still lose a race for it; callers
// retry with another port when a server exits before it is ready.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localstack: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopbackURL(port int) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
