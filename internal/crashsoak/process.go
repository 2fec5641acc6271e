package crashsoak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// process is a worker process started by the parent.
type process struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startProcess starts the worker binary with c; every line it prints goes
// to onLine with the process's name.
func startProcess(binary, name string, c WorkerConfig, onLine func(name, line string)) (*process, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("crashsoak: %w", err)
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), ConfigEnv+"="+string(raw))
	p := &process{name: name, cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("crashsoak: %w", err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("crashsoak: %w", err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("crashsoak: start %s: %w", name, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			onLine(name, lines.Text())
		}
	}()
	go func() {
		<-read // Wait closes the pipe: read it to its end first
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() error {
	if err := p.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("crashsoak: kill %s: %w", p.name, err)
	}
	<-p.exited
	return nil
}

// stop closes the process's standard input, which shuts its runtime down,
// and waits up to timeout for it to exit; then it kills it.
func (p *process) stop(timeout time.Duration) error {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("crashsoak: %s: %w\n%s", p.name, p.err, p.stderr)
		}
		return nil
	case <-time.After(timeout):
		_ = p.kill()
		return fmt.Errorf("crashsoak: %s did not stop within %v\n%s", p.name, timeout, p.stderr)
	}
}

// races returns the first data race the race detector reported in the
// process, "" when none.
func (p *process) races() string {
	out := p.stderr.String()
	if i := strings.Index(out, "WARNING: DATA RACE"); i >= 0 {
		return out[i:]
	}
	return ""
}

// tailBuffer keeps the first data race and the last max bytes written.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	race []byte
	buf  []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.race == nil {
		if i := bytes.Index(p, []byte("WARNING: DATA RACE")); i >= 0 {
			b.race = append([]byte(nil), p[i:min(len(p), i+8<<10)]...)
		}
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.race) + string(b.buf)
}
