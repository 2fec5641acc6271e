package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a buffer one goroutine writes while another reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	got chan struct{} // closed at the first write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() == 0 {
		close(b.got)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConsoleCommand serves the console on the test table, fetches the
// list with an instance the runtime ran, and stops the command as Ctrl-C
// does.
func TestConsoleCommand(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.cli(t, "start", "Hello", "con-1", "--input", `"console"`, "--wait").ok(t)

	ctx, cancel := context.WithCancel(t.Context())
	stdout := &syncBuffer{got: make(chan struct{})}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "--addr", "127.0.0.1:0", "--token", "tok"}, stdout, &stderr, func(k string) string { return e.env[k] })
	}()
	select {
	case <-stdout.got:
	case code := <-done:
		t.Fatalf("console exited %d before serving: %s", code, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("console printed no address within a minute")
	}
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/ \(read-only; sign in with the token\)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("console printed %q", stdout.String())
	}
	get := func(auth string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+m[1]+"/instances", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	code, body := get("tok")
	if code != http.StatusOK || !strings.Contains(body, `href="/instance?id=con-1"`) {
		t.Errorf("with the token: %d; the list lacks con-1", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("console exited %d after the interrupt, want 0; stderr %q", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("console did not stop within a minute of the interrupt")
	}
}

// TestConsoleCommandRefusesOpenAddressWithoutToken: beyond loopback, no
// token, no console; the token from the environment is enough.
func TestConsoleCommandRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{"DURADYN_TABLE": "t"}, "console", "--addr", "0.0.0.0:0")
	r.fails(t, exitUsage, "listening beyond loopback needs a token")
	r = runCLI(t, map[string]string{"DURADYN_TABLE": "t"}, "console", "--addr", "0.0.0.0:0", "--page-size", "0", "--token", "x")
	r.fails(t, exitUsage, "--page-size 0")
	r = runCLI(t, map[string]string{"DURADYN_TABLE": "t", "DURADYN_CONSOLE_TOKEN": "x"}, "console", "--addr", "0.0.0.0:0", "--page-size", "0")
	r.fails(t, exitUsage, "--page-size 0")
}
