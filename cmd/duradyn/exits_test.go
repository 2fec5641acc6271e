package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/localstack"
)

// silentEndpoint returns the URL of a listener that accepts connections
// and never answers.
func silentEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// silentEnv is an environment whose DynamoDB endpoint never answers.
func silentEnv(t *testing.T) map[string]string {
	return map[string]string{
		"DURADYN_TABLE": "silent", "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"DURADYN_DYNAMODB_ENDPOINT": silentEndpoint(t),
	}
}

// TestVersionFlag: --version prints the command's version from the
// module's build information and exits 0.
func TestVersionFlag(t *testing.T) {
	r := runCLI(t, nil, "--version").ok(t)
	if !strings.HasPrefix(r.stdout, "duradyn ") || len(strings.TrimSpace(r.stdout)) <= len("duradyn") {
		t.Fatalf("--version printed %q; want \"duradyn <version>\"", r.stdout)
	}
}

// TestHelpListsEveryExitCode: every exit code the command uses is in its
// help.
func TestHelpListsEveryExitCode(t *testing.T) {
	help := runCLI(t, nil, "help").ok(t).stdout
	for _, code := range []string{"0 ok", "1 error", "2 usage", "3 not found", "4 wait timeout", "5 orchestration failed", "6 clock skew", "130 interrupted"} {
		if !strings.Contains(help, code) {
			t.Errorf("help does not list exit code %q:\n%s", code, help)
		}
	}
}

// TestInterruptExits130: a command whose context is cancelled (Ctrl-C or
// SIGTERM, by main's signal.NotifyContext) says so and exits 130, as a
// shell reports an interrupted command, not 1 with "context canceled".
func TestInterruptExits130(t *testing.T) {
	env := silentEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"wait", "x"}, &stdout, &stderr, func(k string) string { return env[k] })
	result{code, stdout.String(), stderr.String()}.fails(t, exitInterrupted, "interrupted")
}

// TestTimeoutOnASilentEndpoint: a command against an endpoint that never
// answers ends at --timeout with a clear line, instead of hanging.
func TestTimeoutOnASilentEndpoint(t *testing.T) {
	began := time.Now()
	r := runCLI(t, silentEnv(t), "--timeout", "1s", "status", "x")
	if r.code == exitOK {
		t.Fatalf("status against a silent endpoint succeeded: %+v", r)
	}
	if !strings.Contains(r.stderr, "timed out after 1s") {
		t.Errorf("stderr %q does not say the command timed out", r.stderr)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("status took %v with --timeout 1s", d)
	}
}

// TestTableEnsureNeverCreates: ensure checks a table; given a name that
// does not exist, it fails naming table create, and creates nothing.
func TestTableEnsureNeverCreates(t *testing.T) {
	e := newTestEnv(t)
	missing := localstack.UniqueName(t, "nosuch")
	e.cli(t, "--table", missing, "table", "ensure").fails(t, exitNotFound, "table "+missing+" does not exist; \"duradyn table create\"")
	_, err := e.DB.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(missing)})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("table %s after ensure: %v; want none", missing, err)
	}
}
