//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/localstack"
)

// cliProcessEnv, set in its environment, makes this test binary run as the
// duradyn command instead of running tests: the tests of dev start it so,
// as a shell would start duradyn, and dev --detach starts it again so.
const cliProcessEnv = "DURADYN_TEST_CLI_PROCESS"

func init() {
	if os.Getenv(cliProcessEnv) != "" {
		main()
	}
}

// devSettingNames are the variables dev prints, in order: those
// dynamo.ReadEnv reads, and the SDK's region and credentials.
var devSettingNames = []string{
	"DURADYN_TABLE", "DURADYN_DYNAMODB_ENDPOINT", "DURADYN_SQS_ENDPOINT",
	"DURADYN_ORCHESTRATOR_QUEUE_URL", "DURADYN_WORKER_QUEUE_URL",
	"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
}

// devNeedsEmulators skips t in the fast loop, which starts no emulator.
func devNeedsEmulators(t *testing.T) {
	t.Helper()
	if os.Getenv(localstack.NoEmulatorEnv) != "" || testing.Short() {
		t.Skipf("starts emulators of its own (%s or -short)", localstack.NoEmulatorEnv)
	}
}

// devExportRE is one line of dev's settings.
var devExportRE = regexp.MustCompile(`^export ([A-Z_]+)=([A-Za-z0-9@%+=:,./_-]+)$`)

// parseDevExports checks that out is one export line per setting, in order,
// and returns the settings.
func parseDevExports(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	got := map[string]string{}
	var names []string
	for _, l := range lines {
		m := devExportRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q of the settings is not export NAME=value:\n%s", l, out)
		}
		got[m[1]] = m[2]
		names = append(names, m[1])
	}
	if !slices.Equal(names, devSettingNames) {
		t.Fatalf("settings %v, want %v", names, devSettingNames)
	}
	return got
}

// devOutput is a buffer written by several goroutines.
type devOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *devOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *devOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// devRun is duradyn dev running in this process.
type devRun struct {
	stdout    string // the settings
	stderr    *devOutput
	interrupt context.CancelFunc // Ctrl-C
	code      chan int
}

// startDev runs duradyn dev with env and extra arguments in this process
// and returns once it has printed its settings. t's cleanup interrupts it.
func startDev(t *testing.T, env map[string]string, args ...string) *devRun {
	t.Helper()
	ctx, interrupt := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	d := &devRun{stderr: &devOutput{}, interrupt: interrupt, code: make(chan int, 1)}
	go func() {
		code := run(ctx, append([]string{"dev"}, args...), pw, d.stderr, func(k string) string { return env[k] })
		pw.Close()
		d.code <- code
	}()
	t.Cleanup(func() {
		interrupt()
		select {
		case <-d.code:
		case <-time.After(2 * time.Minute):
			t.Errorf("duradyn dev did not return within 2 minutes of an interrupt")
		}
	})
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for range devSettingNames {
		if !sc.Scan() {
			t.Fatalf("duradyn dev ended before printing its settings (exit %d); stdout %q, stderr:\n%s", <-d.code, out.String(), d.stderr)
		}
		out.WriteString(sc.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	d.stdout = out.String()
	return d
}

// wait returns dev's exit code.
func (d *devRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-d.code:
		d.code <- code // for the cleanup
		return code
	case <-time.After(2 * time.Minute):
		t.Fatalf("duradyn dev did not return; stderr:\n%s", d.stderr)
		return -1
	}
}

// devServeFromEnv runs a runtime serving the tests' orchestrations whose
// provider comes from settings through the process's environment alone
// (dynamo.NewFromEnv), and returns the function that stops it.
func devServeFromEnv(t *testing.T, settings map[string]string) func() {
	t.Helper()
	for k, v := range settings {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none")) // no developer profile
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	p, err := dynamo.NewFromEnv(t.Context())
	if err != nil {
		t.Fatalf("NewFromEnv: %v", err)
	}
	rt, err := durable.NewRuntime(p, registry(t), func(o *durable.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		p.Close()
	}
}

// devEnvWith returns settings plus env.
func devEnvWith(settings map[string]string, env map[string]string) map[string]string {
	out := maps.Clone(settings)
	maps.Copy(out, env)
	return out
}

// assertDevStopped checks that nothing answers on the settings' endpoints
// and that the environment's socket is gone.
func assertDevStopped(t *testing.T, settings map[string]string, dir string) {
	t.Helper()
	for _, name := range []string{"DURADYN_DYNAMODB_ENDPOINT", "DURADYN_SQS_ENDPOINT"} {
		u, err := url.Parse(settings[name])
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s %s still accepts connections", name, settings[name])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, devSocketFile)); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind (%v)", devSocketFile, err)
	}
	runCLI(t, map[string]string{envDevDir: dir}, "dev", "--print-env").fails(t, exitError, "no dev environment is running")
}

// TestDevUsage: bad arguments are usage errors, and with nothing running
// --print-env and stop fail, saying so.
func TestDevUsage(t *testing.T) {
	env := map[string]string{envDevDir: t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "start"}, `dev: unknown argument "start": want stop`},
		{[]string{"dev", "stop", "now"}, "dev: want no argument, or stop, got 2 argument(s)"},
		{[]string{"dev", "stop", "--detach"}, "dev stop takes no --detach, --print-env or --persist"},
		{[]string{"dev", "--print-env", "--persist", "x"}, "dev --print-env takes no --detach or --persist"},
	} {
		runCLI(t, env, c.args...).fails(t, exitUsage, c.want)
	}
	runCLI(t, env, "dev", "--print-env").fails(t, exitError, "no dev environment is running")
	runCLI(t, env, "dev", "stop").fails(t, exitError, "no dev environment is running")
	if r := runCLI(t, env, "help", "dev").ok(t); !strings.Contains(r.stdout, "-persist DIR") || !strings.Contains(r.stdout, "duradyn dev stop") {
		t.Errorf("help dev: %q", r.stdout)
	}
}

// TestShellQuote: values reach the shell unchanged.
func TestShellQuote(t *testing.T) {
	for _, v := range []string{"http://127.0.0.1:4566/000000000000/q", "a b", "it's", "", "$HOME", "x;y"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(v)).Output()
		if err != nil || string(out) != v {
			t.Errorf("sh -c printf %%s %s = %q, %v; want %q", shellQuote(v), out, err, v)
		}
	}
	if got := shellQuote("http://127.0.0.1:4566/q"); got != "http://127.0.0.1:4566/q" {
		t.Errorf("a URL is quoted: %s", got)
	}
}

// TestDevUntilInterrupted: duradyn dev starts the emulators with a table
// and its queues and prints the settings; another shell gets them with
// --print-env and cannot start a second environment; a worker and the
// command configured by those settings alone run an orchestration; an
// interrupt stops everything and exits 0.
func TestDevUntilInterrupted(t *testing.T) {
	devNeedsEmulators(t)
	dir := t.TempDir()
	env := map[string]string{envDevDir: dir}
	d := startDev(t, env)
	settings := parseDevExports(t, d.stdout)
	e, err := dynamo.ReadEnv(func(k string) string { return settings[k] })
	if err != nil || e.Table != devTable || e.DynamoDBEndpoint == "" || e.SQSEndpoint == "" ||
		!strings.HasSuffix(e.OrchestratorQueueURL, devTable+"-orchestrator") || !strings.HasSuffix(e.WorkerQueueURL, devTable+"-worker") {
		t.Errorf("settings read as %+v, %v; want table %s, both endpoints and its two queues", e, err, devTable)
	}

	if got := runCLI(t, env, "dev", "--print-env").ok(t).stdout; got != d.stdout {
		t.Errorf("--print-env printed\n%s\nwant what dev printed\n%s", got, d.stdout)
	}
	asJSON := decode[map[string]string](t, runCLI(t, env, "dev", "--print-env", "--output", "json").ok(t))
	if !maps.Equal(asJSON, settings) {
		t.Errorf("--print-env --output json = %v, want %v", asJSON, settings)
	}
	running := fmt.Sprintf("a dev environment is already running (pid %d)", os.Getpid())
	runCLI(t, env, "dev").fails(t, exitError, running)
	runCLI(t, env, "dev", "--detach").fails(t, exitError, running)

	stopWorker := devServeFromEnv(t, settings)
	r := runCLI(t, devEnvWith(settings, env), "start", "Hello", "dev-1", "--input", `"dev"`, "--wait").ok(t)
	stopWorker()
	if !strings.Contains(r.stdout, `"Hello, dev!"`) {
		t.Errorf("start --wait printed %q, want the output \"Hello, dev!\"", r.stdout)
	}

	d.interrupt()
	if code := d.wait(t); code != exitOK {
		t.Errorf("duradyn dev exited %d after an interrupt, want 0; stderr:\n%s", code, d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "duradyn dev: stopped") {
		t.Errorf("stderr %q: want \"duradyn dev: stopped\"", d.stderr)
	}
	assertDevStopped(t, settings, dir)
}

// devCLIProcess runs this test binary as the duradyn command, as a shell
// runs it: with the process's environment less the variables that
// configure duradyn or the SDK, plus env.
func devCLIProcess(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	// Not t.Context(): cleanups run it too, after that is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DURADYN_") && !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, cliProcessEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("duradyn %s: %v", strings.Join(args, " "), err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// devProcessGone reports whether process pid has exited.
func devProcessGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil { // Linux: a zombie has exited, and its parent has yet to reap it
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		return bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return true
	}
	return syscall.Kill(pid, 0) != nil
}

// TestDevPersistDetachStop: with --persist, an instance completed on one
// environment is there on the next; dev stop from another shell stops a
// running environment; dev --detach starts one that outlives the command,
// and dev stop returns once its process has exited.
func TestDevPersistDetachStop(t *testing.T) {
	devNeedsEmulators(t)
	dir, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	env := map[string]string{envDevDir: dir}

	d := startDev(t, env, "--persist", data)
	first := parseDevExports(t, d.stdout)
	stopWorker := devServeFromEnv(t, first)
	runCLI(t, devEnvWith(first, env), "start", "Hello", "kept-1", "--input", `"kept"`, "--wait").ok(t)
	stopWorker()
	r := runCLI(t, env, "dev", "stop").ok(t)
	if want := fmt.Sprintf("stopped the dev environment (pid %d)\n", os.Getpid()); r.stdout != want {
		t.Errorf("dev stop printed %q, want %q", r.stdout, want)
	}
	if code := d.wait(t); code != exitOK {
		t.Errorf("duradyn dev exited %d after dev stop, want 0; stderr:\n%s", code, d.stderr)
	}
	assertDevStopped(t, first, dir)

	r = devCLIProcess(t, env, "dev", "--detach", "--persist", data)
	t.Cleanup(func() { devCLIProcess(t, env, "dev", "stop") }) // if the test fails half way
	if r.code != exitOK {
		t.Fatalf("dev --detach: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	second := parseDevExports(t, r.stdout)
	if !strings.Contains(r.stderr, "running in the background (pid ") {
		t.Errorf("dev --detach stderr %q: want the line saying where it runs", r.stderr)
	}
	if p := devCLIProcess(t, env, "dev", "--print-env"); p.code != exitOK || p.stdout != r.stdout {
		t.Errorf("--print-env: exit %d, stdout\n%s\nwant 0 and what dev --detach printed\n%s", p.code, p.stdout, r.stdout)
	}
	if s := devCLIProcess(t, devEnvWith(second, env), "status", "kept-1"); s.code != exitOK || !strings.Contains(s.stdout, "Completed") || !strings.Contains(s.stdout, `"Hello, kept!"`) {
		t.Errorf("status of an instance completed before the restart: exit %d, stdout %q, stderr %q; want Completed with its output", s.code, s.stdout, s.stderr)
	}

	r = devCLIProcess(t, env, "dev", "stop")
	m := regexp.MustCompile(`^stopped the dev environment \(pid (\d+)\)\n$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("dev stop: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if pid, _ := strconv.Atoi(m[1]); !devProcessGone(pid) {
		t.Errorf("the detached process %d is still running after dev stop returned", pid)
	}
	assertDevStopped(t, second, dir)
	if r := devCLIProcess(t, env, "dev", "stop"); r.code != exitError || !strings.Contains(r.stderr, "no dev environment is running") {
		t.Errorf("a second dev stop: exit %d, stderr %q; want 1, no dev environment is running", r.code, r.stderr)
	}
}
