package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/localstack"
)

// TestMain shares one emulator (DynamoDB + SQS) between the tests and
// stops it afterwards.
func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The orchestrations the tests run.
var (
	greet = durable.NewActivity("Greet", func(ctx context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	hello = durable.NewOrchestration("Hello", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		ctx.SetCustomStatus("greeting")
		ctx.KV().Set("name", name)
		ctx.KV().Set("lang", "en")
		return greet.Call(ctx, name).Get(ctx)
	}, durable.Version("1.0.0"))
	fails = durable.NewOrchestration("Fails", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", errors.New("boom")
	})
	parent = durable.NewOrchestration("Parent", func(ctx *durable.OrchestrationContext, name string) (string, error) {
		return hello.CallSub(ctx, name, durable.WithInstanceID(ctx.InstanceID()+"-child")).Get(ctx)
	})
	waiter = durable.NewOrchestration("Waiter", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("waiting for go")
		ev, err := durable.WaitForEvent[string](ctx, "go").Get(ctx)
		if err != nil {
			return "", err
		}
		ctx.SetCustomStatus("waiting for inbox")
		msg, err := durable.Dequeue[string](ctx, "inbox").Get(ctx)
		if err != nil {
			return "", err
		}
		return ev + "+" + msg, nil
	})
	looper = durable.NewOrchestration("Looper", func(ctx *durable.OrchestrationContext, n int) (int, error) {
		if n < 3 {
			return 0, ctx.ContinueAsNew(n + 1)
		}
		return n, nil
	})
)

func registry(t *testing.T) *durable.Registry {
	t.Helper()
	reg, err := durable.NewRegistry(greet, hello, fails, parent, waiter, looper)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// testEnv is a table with a runtime serving it and the environment the CLI
// runs with.
type testEnv struct {
	*dynamotest.Env
	client *durable.Client
	env    map[string]string
}

// newTestEnv creates a table (4 shards, recorded) and wake-up queues, and
// runs a runtime on them until t ends.
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	e := newTableEnv(t)
	e.serve(t)
	return e
}

// serve runs a runtime on e's table until t ends; e.client is its client.
func (e *testEnv) serve(t *testing.T) {
	t.Helper()
	p := e.NewProvider(t, dynamotest.Config{Shards: 4})
	rt, err := durable.NewRuntime(p, registry(t), func(o *durable.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.LongPollTimeout = 2 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.Shutdown(ctx)
	})
	e.client = rt.Client()
}

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI with e's environment plus extra ("NAME=value" entries
// first, then arguments).
func (e *testEnv) cli(t *testing.T, args ...string) result {
	t.Helper()
	env := map[string]string{}
	for k, v := range e.env {
		env[k] = v
	}
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		k, v, _ := strings.Cut(args[0], "=")
		env[k] = v
		args = args[1:]
	}
	return runCLI(t, env, args...)
}

func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr, func(k string) string { return env[k] })
	return result{code, stdout.String(), stderr.String()}
}

// ok fails t unless r exited 0.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// fails checks that r exited with code, printed nothing on stdout and one
// line on stderr containing want.
func (r result) fails(t *testing.T, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d; stdout %q, stderr %q", r.code, code, r.stdout, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if !strings.Contains(l, "warning:") {
			t.Errorf("stderr has more than one error line: %q", r.stderr)
		}
	}
	if !strings.HasPrefix(last, "duradyn: ") || !strings.Contains(last, want) {
		t.Errorf("stderr %q: want one line \"duradyn: ...%s...\"", r.stderr, want)
	}
}

var (
	timeRE    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	msFieldRE = regexp.MustCompile(`(_ms\\?":)\d+`)
)

// normalize replaces times and the table name.
func (e *testEnv) normalize(s string) string {
	s = timeRE.ReplaceAllString(s, "YYYY-MM-DDTHH:MM:SS.mmmZ")
	s = msFieldRE.ReplaceAllString(s, "${1}0")
	return strings.ReplaceAll(s, e.Table, "TABLE")
}

// golden compares got, normalized, with testdata/name.golden.
func (e *testEnv) golden(t *testing.T, name, got string) {
	t.Helper()
	golden(t, name, e.normalize(got))
}

// golden compares got with testdata/name.golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

// dump returns every item of the table, in a canonical order, to check
// that a failed command changed nothing.
func (e *testEnv) dump(t *testing.T) string {
	t.Helper()
	var rows []string
	var start map[string]types.AttributeValue
	for {
		out, err := e.DB.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.Table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		for _, it := range out.Items {
			rows = append(rows, fmt.Sprintf("%v", sortedItem(it)))
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

func sortedItem(it map[string]types.AttributeValue) []string {
	var out []string
	for k, v := range it {
		out = append(out, fmt.Sprintf("%s=%s", k, attrString(v)))
	}
	slices.Sort(out)
	return out
}

func attrString(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B:%x", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint("BOOL:", v.Value)
	case *types.AttributeValueMemberM:
		return fmt.Sprint("M:", sortedItem(v.Value))
	case *types.AttributeValueMemberL:
		var parts []string
		for _, x := range v.Value {
			parts = append(parts, attrString(x))
		}
		return fmt.Sprint("L:", parts)
	case *types.AttributeValueMemberSS:
		return fmt.Sprint("SS:", v.Value)
	case *types.AttributeValueMemberNS:
		return fmt.Sprint("NS:", v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	}
	return fmt.Sprintf("%T", v)
}

// unchanged runs fn and checks that the table is the same afterwards.
func (e *testEnv) unchanged(t *testing.T, fn func()) {
	t.Helper()
	before := e.dump(t)
	fn()
	if after := e.dump(t); after != before {
		t.Errorf("the table changed:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// waitDone waits until the runtime finished instance id.
func (e *testEnv) waitDone(t *testing.T, id string) *durable.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := e.client.WaitForCompletion(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return s
}

// waitCustomStatus waits until instance id reports custom status want.
func (e *testEnv) waitCustomStatus(t *testing.T, id, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var v uint64
	for {
		s, err := e.client.WaitForStatusChange(ctx, id, v)
		if err != nil {
			t.Fatalf("wait for status %q of %s: %v", want, id, err)
		}
		if s.CustomStatus != nil && *s.CustomStatus == want {
			return
		}
		if s.State.IsTerminal() {
			t.Fatalf("%s finished (%v) before reporting %q", id, s.State, want)
		}
		v = s.CustomStatusVersion
	}
}
