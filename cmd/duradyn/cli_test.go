package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/durable/durabletest"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

// decode decodes r's stdout as one JSON document into a T.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", r.stdout, err)
	}
	return v
}

func TestStartWaitStatus(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)

	r := e.cli(t, "start", "Hello", "h1", "--input", `"world"`, "--wait").ok(t)
	e.golden(t, "start_wait", r.stdout)
	if !strings.Contains(r.stderr, "h1 Completed") {
		t.Errorf("wait progress on stderr %q: want a line with h1 Completed", r.stderr)
	}

	e.golden(t, "status", e.cli(t, "status", "h1").ok(t).stdout)
	st := decode[statusJSON](t, e.cli(t, "status", "h1", "--output", "json").ok(t))
	if st.Instance != "h1" || st.Status != "Completed" || st.ExecutionID != 1 || st.Output == nil || *st.Output != `"Hello, world!"` ||
		st.CustomStatus == nil || *st.CustomStatus != "greeting" || st.CustomStatusVersion != 1 || st.Failure != nil {
		t.Errorf("status --output json = %+v", st)
	}

	// wait on a finished instance returns at once.
	r = e.cli(t, "--output", "json", "wait", "h1").ok(t)
	if st := decode[statusJSON](t, r); st.Status != "Completed" {
		t.Errorf("wait --output json: status %s", st.Status)
	}

	// start without --wait, from a file, pinned to a version.
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte("\"file\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.cli(t, "start", "Hello", "h2", "--input", "@"+in, "--version", "1.0.0", "--output", "json").ok(t)
	var started struct {
		Instance, Orchestration string
		Started                 bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &started); err != nil || started.Instance != "h2" || started.Orchestration != "Hello" || !started.Started {
		t.Errorf("start --output json = %q (%v)", r.stdout, err)
	}
	if s := e.waitDone(t, "h2"); s.Output != `"Hello, file!"` {
		t.Errorf("h2 output %q", s.Output)
	}
	e.golden(t, "start", e.cli(t, "start", "Hello", "h3", "--input", `"x"`).ok(t).stdout)
	e.waitDone(t, "h3")

	// Without queue URLs the CLI warns that dispatchers find the work late.
	r = e.cli(t, "DURADYN_ORCHESTRATOR_QUEUE_URL=", "DURADYN_WORKER_QUEUE_URL=", "start", "Hello", "h4", "--input", `"y"`).ok(t)
	if !strings.Contains(r.stderr, "warning: no --orchestrator-queue-url") {
		t.Errorf("stderr %q: want the queue warning", r.stderr)
	}
	e.waitDone(t, "h4")
}

func TestFailedOrchestration(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	r := e.cli(t, "start", "Fails", "f1", "--wait")
	if r.code != exitFailed || !strings.Contains(r.stderr, "instance f1 failed: ") || !strings.Contains(r.stderr, "boom") {
		t.Fatalf("start --wait of a failing orchestration: exit %d, stderr %q; want 5 and the failure", r.code, r.stderr)
	}
	e.golden(t, "status_failed", r.stdout)
	r = e.cli(t, "wait", "f1", "--output", "json")
	if r.code != exitFailed {
		t.Errorf("wait of a failed instance: exit %d, want 5", r.code)
	}
	if st := decode[statusJSON](t, r); st.Status != "Failed" || st.Failure == nil || !strings.Contains(*st.Failure, "boom") || st.FailureCategory != "application" {
		t.Errorf("wait --output json = %+v", st)
	}
	// status reports a failed instance without failing.
	e.cli(t, "status", "f1").ok(t)
}

func TestRaiseEnqueueCancelWait(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.cli(t, "start", "Waiter", "w1").ok(t)
	e.waitCustomStatus(t, "w1", "waiting for go")

	e.golden(t, "raise", e.cli(t, "raise", "w1", "go", "--data", `"a"`).ok(t).stdout)
	e.waitCustomStatus(t, "w1", "waiting for inbox")
	r := e.cli(t, "enqueue", "w1", "inbox", "--data", `"b"`, "--output", "json").ok(t)
	var sent map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &sent); err != nil || sent["instance"] != "w1" || sent["queue"] != "inbox" || sent["sent"] != true {
		t.Errorf("enqueue --output json = %q (%v)", r.stdout, err)
	}
	r = e.cli(t, "wait", "w1").ok(t)
	e.golden(t, "wait", r.stdout)
	// Not a terminal: one line per change, the last one the final state.
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "w1 Completed") || !strings.Contains(last, "events=") {
		t.Errorf("wait progress %q: want a last line with w1 Completed and the event count", r.stderr)
	}

	// Cancel, raise or enqueue on a finished instance: refused, and
	// nothing changes.
	e.unchanged(t, func() {
		e.cli(t, "cancel", "w1").fails(t, exitError, "cancel: instance w1 is Completed; a finished instance takes no more events, messages or cancellations, and was left unchanged")
		e.cli(t, "raise", "w1", "go").fails(t, exitError, "raise: instance w1 is Completed")
		e.cli(t, "enqueue", "w1", "inbox").fails(t, exitError, "enqueue: instance w1 is Completed")
	})

	// Cancel a running one: it fails, and wait says so with exit code 5.
	e.cli(t, "start", "Waiter", "w2").ok(t)
	e.waitCustomStatus(t, "w2", "waiting for go")
	e.golden(t, "cancel", e.cli(t, "cancel", "w2", "--reason", "no longer needed").ok(t).stdout)
	r = e.cli(t, "wait", "w2")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no longer needed") {
		t.Errorf("wait of a cancelled instance: exit %d, stderr %q", r.code, r.stderr)
	}

	// A wait that runs out of time exits with 4.
	e.cli(t, "start", "Waiter", "w3").ok(t)
	e.waitCustomStatus(t, "w3", "waiting for go")
	r = e.cli(t, "wait", "w3", "--timeout", "1500ms")
	if r.code != exitTimeout || !strings.Contains(r.stderr, "timed out after 1.5s waiting for w3 (Running)") {
		t.Errorf("wait with a timeout: exit %d, stderr %q; want 4", r.code, r.stderr)
	}
}

func TestInspect(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	// Created in the order of their ids, so that the listing (newest
	// first, ties by id, descending) is the same whatever the clock says.
	e.cli(t, "start", "Parent", "a-parent", "--input", `"tree"`, "--wait").ok(t)
	e.cli(t, "start", "Hello", "b-hello", "--input", `"kv"`, "--wait").ok(t)
	e.cli(t, "start", "Fails", "c-fails", "--wait")
	e.cli(t, "start", "Looper", "d-loop", "--input", "0", "--wait").ok(t)

	// list
	r := e.cli(t, "DURADYN_PROGRESS_EVERY=2", "list").ok(t)
	e.golden(t, "list", r.stdout)
	if !strings.Contains(r.stderr, "listed 2/5 instances") {
		t.Errorf("list progress %q: want listed 2/5", r.stderr)
	}
	var listed struct {
		Instances []infoJSON
		Total     int
		Truncated bool
	}
	r = e.cli(t, "list", "--status", "Completed", "--limit", "2", "--output", "json").ok(t)
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || listed.Total != 4 || !listed.Truncated || len(listed.Instances) != 2 {
		t.Fatalf("list --status Completed --limit 2 --output json = %q (%v)", r.stdout, err)
	}
	for _, i := range listed.Instances {
		if i.Status != "Completed" {
			t.Errorf("listed %+v with --status Completed", i)
		}
	}
	// The filter takes any case.
	if lower := e.cli(t, "list", "--status", "completed", "--limit", "2", "--output", "json").ok(t); lower.stdout != r.stdout {
		t.Errorf("list --status completed printed %q; --status Completed printed %q", lower.stdout, r.stdout)
	}
	if !strings.Contains(r.stderr, "showing 2 of 4") {
		t.Errorf("list stderr %q: want the truncation note", r.stderr)
	}

	// info
	e.golden(t, "info", e.cli(t, "info", "d-loop").ok(t).stdout)
	info := decode[infoJSON](t, e.cli(t, "info", "a-parent-child", "--output", "json").ok(t))
	if info.Instance != "a-parent-child" || info.Parent != "a-parent" || info.Orchestration != "Hello" || info.Version != "1.0.0" ||
		info.Status != "Completed" || len(info.ExecutionsListed) != 1 || info.ExecutionsListed[0].Events == 0 || info.CreatedAtMs == 0 {
		t.Errorf("info --output json = %+v", info)
	}

	// tree
	e.golden(t, "tree", e.cli(t, "tree", "a-parent").ok(t).stdout)
	var tree struct {
		Root      string
		Size      int
		Instances []infoJSON
	}
	r = e.cli(t, "tree", "a-parent", "--output", "json").ok(t)
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil || tree.Root != "a-parent" || tree.Size != 2 || tree.Instances[1].Instance != "a-parent-child" {
		t.Errorf("tree --output json = %q (%v)", r.stdout, err)
	}

	// history: a table, or duroxide JSON lines that replay against the code.
	e.golden(t, "history", e.cli(t, "history", "b-hello").ok(t).stdout)
	e.golden(t, "history_all", e.cli(t, "history", "d-loop", "--all").ok(t).stdout)
	e.golden(t, "history_execution", e.cli(t, "history", "d-loop", "--execution", "2").ok(t).stdout)
	for _, id := range []string{"b-hello", "a-parent", "a-parent-child", "c-fails"} {
		r := e.cli(t, "history", id, "--json").ok(t)
		events, err := durabletest.ReadHistory(strings.NewReader(r.stdout))
		if err != nil || len(events) == 0 || events[0].InstanceID != id {
			t.Fatalf("history %s --json: %d events, %v", id, len(events), err)
		}
		durabletest.ReplayHistory(t, registry(t), strings.NewReader(r.stdout))
	}
	r = e.cli(t, "history", "d-loop", "--all", "--output", "json").ok(t)
	events, err := durabletest.ReadHistory(strings.NewReader(r.stdout))
	if err != nil || events[len(events)-1].ExecutionID != 4 || events[0].ExecutionID != 1 {
		t.Errorf("history --all --output json: %d events, %v; want executions 1 to 4", len(events), err)
	}
	durabletest.ReplayHistory(t, registry(t), strings.NewReader(r.stdout))

	// kv
	e.golden(t, "kv", e.cli(t, "kv", "b-hello").ok(t).stdout)
	if r := e.cli(t, "kv", "b-hello", "name").ok(t); r.stdout != "kv\n" {
		t.Errorf("kv h1 name = %q", r.stdout)
	}
	if kv := decode[map[string]string](t, e.cli(t, "kv", "b-hello", "--output", "json").ok(t)); len(kv) != 2 || kv["name"] != "kv" || kv["lang"] != "en" {
		t.Errorf("kv --output json = %v", kv)
	}
	if kv := decode[map[string]string](t, e.cli(t, "kv", "c-fails", "--output", "json").ok(t)); len(kv) != 0 {
		t.Errorf("kv of an instance without KV = %v", kv)
	}
	if one := decode[map[string]string](t, e.cli(t, "kv", "b-hello", "lang", "--output", "json").ok(t)); one["key"] != "lang" || one["value"] != "en" {
		t.Errorf("kv h1 lang --output json = %v", one)
	}

	// metrics
	e.golden(t, "metrics", e.cli(t, "metrics").ok(t).stdout)
	m := decode[map[string]int](t, e.cli(t, "metrics", "--output", "json").ok(t))
	if m["total_instances"] != 5 || m["completed_instances"] != 4 || m["failed_instances"] != 1 || m["running_instances"] != 0 ||
		m["total_executions"] != 8 || m["total_events"] == 0 {
		t.Errorf("metrics --output json = %v", m)
	}
}

func TestDeleteAndPrune(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.cli(t, "start", "Looper", "l1", "--input", "0", "--wait").ok(t)
	e.cli(t, "start", "Looper", "l2", "--input", "0", "--wait").ok(t)
	e.cli(t, "start", "Parent", "p1", "--input", `"x"`, "--wait").ok(t)
	e.cli(t, "start", "Hello", "h1", "--input", `"x"`, "--wait").ok(t)
	e.cli(t, "start", "Hello", "h2", "--input", `"x"`, "--wait").ok(t)
	e.cli(t, "start", "Waiter", "w1").ok(t)
	e.waitCustomStatus(t, "w1", "waiting for go")

	// A dry run of prune changes nothing and says what a prune would do.
	e.unchanged(t, func() {
		r := e.cli(t, "prune", "l1", "--keep-last", "2", "--dry-run").ok(t)
		if r.stdout != "would prune 2 execution(s) of 1 instance(s):\nl1\texecutions 1,2\n" {
			t.Errorf("prune l1 --keep-last 2 --dry-run printed %q", r.stdout)
		}
		plan := decode[prunePlanJSON](t, e.cli(t, "prune", "--all", "--dry-run", "--output", "json").ok(t))
		if !plan.DryRun || plan.Executions != 6 || len(plan.Instances) != 2 {
			t.Errorf("prune --all --dry-run --output json = %+v; want executions 1-3 of l1 and l2", plan)
		}
	})

	// prune one instance, then all.
	e.golden(t, "prune", e.cli(t, "prune", "l1", "--keep-last", "2").ok(t).stdout)
	if ids := e.executions(t, "l1"); len(ids) != 2 || ids[0] != 3 {
		t.Errorf("executions of l1 after prune --keep-last 2: %v; want [3 4]", ids)
	}
	r := e.cli(t, "DURADYN_PROGRESS_EVERY=2", "prune", "--all", "--output", "json").ok(t)
	var pruned pruneJSON
	if err := json.Unmarshal([]byte(r.stdout), &pruned); err != nil || pruned.Instances != 7 || pruned.Executions != 1+3 {
		t.Errorf("prune --all --output json = %q (%v); want 7 instances and 4 executions", r.stdout, err)
	}
	if !strings.Contains(r.stderr, "pruned 2/7 instances") {
		t.Errorf("prune --all progress %q", r.stderr)
	}

	// delete: a running instance, a sub-orchestration.
	e.unchanged(t, func() {
		e.cli(t, "delete", "w1").fails(t, exitError, "instance w1 (or one of its sub-orchestrations) is running: cancel it first, or pass --force")
		e.cli(t, "delete", "p1-child").fails(t, exitError, "instance p1-child is a sub-orchestration of p1: delete its root instead")
	})

	// delete one root instance with its sub-orchestration.
	e.golden(t, "delete", e.cli(t, "delete", "p1").ok(t).stdout)

	// bulk delete, oldest first: a dry run changes nothing.
	e.unchanged(t, func() {
		r := e.cli(t, "delete", "--completed-before", "0s", "--dry-run").ok(t)
		e.golden(t, "delete_dry_run", r.stdout)
		r = e.cli(t, "delete", "--completed-before", "0s", "--dry-run", "--limit", "2", "--output", "json").ok(t)
		if d := decode[deleteJSON](t, r); !d.DryRun || strings.Join(d.Selected, ",") != "l1,l2" || d.Instances != 0 {
			t.Errorf("delete --dry-run --limit 2 --output json = %+v", d)
		}
		// Nothing completed a day ago.
		r = e.cli(t, "delete", "--completed-before", "24h", "--dry-run", "--output", "json").ok(t)
		if d := decode[deleteJSON](t, r); len(d.Selected) != 0 {
			t.Errorf("delete --completed-before 24h --dry-run selected %v", d.Selected)
		}
	})
	r = e.cli(t, "DURADYN_PROGRESS_EVERY=2", "delete", "--completed-before", "0s", "--limit", "3", "--output", "json").ok(t)
	if d := decode[deleteJSON](t, r); d.Instances != 3 || d.Executions != 3 || d.Events == 0 {
		t.Errorf("delete --completed-before 0s --limit 3 --output json = %+v; want 3 instances", d)
	}
	if !strings.Contains(r.stderr, "deleted 2/3 instances") {
		t.Errorf("bulk delete progress %q", r.stderr)
	}
	ids, err := e.client.ListInstances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sorted(ids), ",") != "h2,w1" {
		t.Errorf("instances after deleting the three oldest: %v; want h2 and w1", ids)
	}

	// force the delete of a running instance.
	d := decode[deleteJSON](t, e.cli(t, "delete", "w1", "--force", "--output", "json").ok(t))
	if d.Instances != 1 || d.Events == 0 {
		t.Errorf("delete w1 --force --output json = %+v", d)
	}
	if ids, _ := e.client.ListInstances(t.Context()); strings.Join(ids, ",") != "h2" {
		t.Errorf("instances left: %v; want h2", ids)
	}
}

func (e *testEnv) executions(t *testing.T, id string) []uint64 {
	t.Helper()
	ids, err := e.client.ListExecutions(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestTable(t *testing.T) {
	t.Parallel()
	ep := localstack.ForTest(t)
	cfg, err := ep.AWSConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	db := ep.DynamoDB(cfg)
	name := localstack.UniqueName(t, "cli")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tables.Delete(ctx, db, name)
	})
	e := &testEnv{Env: nil, env: map[string]string{
		"DURADYN_TABLE":             name,
		"DURADYN_DYNAMODB_ENDPOINT": ep.DynamoDBURL,
		"AWS_REGION":                cfg.Region,
		"AWS_ACCESS_KEY_ID":         "test",
		"AWS_SECRET_ACCESS_KEY":     "test",
	}}
	norm := func(s string) string { return strings.ReplaceAll(timeRE.ReplaceAllString(s, "T"), name, "TABLE") }

	// A missing table: every command says so.
	r := e.cli(t, "status", "x")
	r.fails(t, exitError, "table "+name+" not found (create it with \"duradyn table create\" or the Terraform module)")

	r = e.cli(t, "table", "create", "--shards", "8").ok(t)
	golden(t, "table_create", norm(r.stdout))
	layout, found, err := dynamo.ReadLayout(t.Context(), db, name)
	if err != nil || !found || layout.Shards != 8 {
		t.Fatalf("layout after table create --shards 8: %+v, %v, %v", layout, found, err)
	}
	// ensure: the stored layout applies.
	golden(t, "table_ensure", norm(e.cli(t, "table", "ensure").ok(t).stdout))
	var ensured map[string]any
	r = e.cli(t, "table", "ensure", "--output", "json").ok(t)
	if err := json.Unmarshal([]byte(r.stdout), &ensured); err != nil || ensured["shards"] != 8.0 || ensured["table"] != name {
		t.Errorf("table ensure --output json = %q (%v)", r.stdout, err)
	}
	e.cli(t, "table", "create").fails(t, exitError, "table "+name+" already exists")
	e.cli(t, "table", "ensure", "--shards", "16").fails(t, exitError, "table "+name+" was created with 8 shards, but --shards is 16: omit it to use the table's")
	e.cli(t, "DURADYN_SHARDS=4", "list").fails(t, exitError, "was created with 8 shards, but DURADYN_SHARDS is 4")
	e.cli(t, "table", "drop").fails(t, exitUsage, "table: unknown operation \"drop\"")

	// A drifted table: ensure lists the differences and changes nothing.
	drifted := localstack.UniqueName(t, "drift")
	in, err := tables.Default().CreateTableInput(drifted)
	if err != nil {
		t.Fatal(err)
	}
	in.GlobalSecondaryIndexes[0].IndexName = aws.String("renamed")
	if _, err := db.CreateTable(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tables.Delete(ctx, db, drifted)
	})
	waitActive(t, db, drifted)
	r = e.cli(t, "DURADYN_TABLE="+drifted, "table", "ensure")
	r.fails(t, exitError, "table "+drifted+" does not match duradyn's schema and was left unchanged: ")
	if _, found, err := dynamo.ReadLayout(t.Context(), db, drifted); err != nil || found {
		t.Errorf("drifted table got a layout record: %v, %v", found, err)
	}

	// A table that is not duradyn's.
	other := localstack.UniqueName(t, "other")
	if _, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(other),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tables.Delete(ctx, db, other)
	})
	waitActive(t, db, other)
	e.cli(t, "DURADYN_TABLE="+other, "status", "x").fails(t, exitError, "table "+other+" does not have duradyn's schema")
}

func waitActive(t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestBadInput: unknown instances, malformed input, wrong tables and shard
// counts give one clear line and a non-zero exit code, and change nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.cli(t, "start", "Hello", "h1", "--input", `"x"`, "--wait").ok(t)
	e.unchanged(t, func() {
		for _, args := range [][]string{
			{"status", "nope"}, {"wait", "nope"}, {"raise", "nope", "go"}, {"enqueue", "nope", "inbox"},
			{"cancel", "nope"}, {"info", "nope"}, {"tree", "nope"}, {"history", "nope"}, {"kv", "nope"},
			{"delete", "nope"}, {"prune", "nope"},
		} {
			e.cli(t, args...).fails(t, exitNotFound, "instance nope not found")
		}
		e.cli(t, "kv", "h1", "missing").fails(t, exitNotFound, `instance h1 has no KV key "missing"`)
		e.cli(t, "history", "h1", "--execution", "7").fails(t, exitNotFound, "instance h1 has no execution 7")

		e.cli(t, "start", "Hello", "h2", "--input", `{"a":`).fails(t, exitUsage, "--input is not valid JSON (unexpected end of JSON input); pass --raw to send it as plain text")
		e.cli(t, "raise", "h1", "go", "--data", "not json").fails(t, exitUsage, "--data is not valid JSON")
		e.cli(t, "enqueue", "h1", "q", "--data", "{").fails(t, exitUsage, "--data is not valid JSON")
		e.cli(t, "start", "Hello", "h2", "--input", "@/nonexistent/in.json").fails(t, exitUsage, "--input: open /nonexistent/in.json")

		e.cli(t, "start", "Hello", "h1").fails(t, exitError, "instance h1 already exists (Hello Completed); give every instance a fresh id")
		e.cli(t, "DURADYN_TABLE="+e.Table+"-missing", "status", "h1").fails(t, exitError, "table "+e.Table+"-missing not found")
		e.cli(t, "start", "Hello", "h2", "--shards", "16").fails(t, exitError, "table "+e.Table+" was created with 4 shards, but --shards is 16: omit it to use the table's")
		e.cli(t, "status", "h1", "--shards", "300").fails(t, exitUsage, "--shards 300 is outside 1..256")
		e.cli(t, "DURADYN_SHARDS=x", "status", "h1").fails(t, exitUsage, `DURADYN_SHARDS="x" is not a number`)
		e.cli(t, "DURADYN_TABLE=", "status", "h1").fails(t, exitUsage, "no table: set --table or DURADYN_TABLE")

		e.cli(t, "frobnicate").fails(t, exitUsage, `unknown command "frobnicate"`)
		e.cli(t, "status").fails(t, exitUsage, "status: want <instance>, got 0 argument(s)")
		e.cli(t, "status", "h1", "--bogus").fails(t, exitUsage, "flag provided but not defined: -bogus")
		e.cli(t, "status", "h1", "--output", "yaml").fails(t, exitUsage, `--output "yaml": want text or json`)
		e.cli(t, "list", "--status", "Sleeping").fails(t, exitUsage, `--status "Sleeping"`)
		e.cli(t, "delete", "--completed-before", "yesterday").fails(t, exitUsage, `--completed-before "yesterday"`)
		e.cli(t, "delete", "--dry-run", "h1").fails(t, exitUsage, "--dry-run goes with --completed-before")
		e.cli(t, "history", "h1", "--all", "--execution", "1").fails(t, exitUsage, "--all and --execution exclude each other")
	})
	// The instance is untouched.
	e.cli(t, "status", "h1").ok(t)

	// help is not an error.
	if r := e.cli(t, "help", "start").ok(t); !strings.Contains(r.stdout, "-wait") {
		t.Errorf("help start: %q", r.stdout)
	}
	if r := e.cli(t, "status", "-h").ok(t); !strings.Contains(r.stdout, "Usage: duradyn status <instance>") {
		t.Errorf("status -h: %q", r.stdout)
	}
}

// TestMissingCredentials: without credentials anywhere in the SDK's chain
// the CLI says so in one line. Not parallel: it clears the process's AWS
// variables, which the SDK's chain reads.
func TestMissingCredentials(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	r := runCLI(t, map[string]string{
		"DURADYN_TABLE":             "t",
		"DURADYN_DYNAMODB_ENDPOINT": "http://127.0.0.1:1",
		"AWS_REGION":                "us-east-1",
	}, "status", "x")
	r.fails(t, exitError, "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role")
}

// TestPendingInstance checks that an instance is visible from its start,
// before any worker runs: status, info and list show it as Pending; a
// second start is refused; cancel works on it. Once a worker serves the
// table, wait finishes it, a raise on it is refused, and the cancelled one
// shows as Canceled.
func TestPendingInstance(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	e.cli(t, "start", "Hello", "q1", "--input", `"x"`).ok(t)
	r := e.cli(t, "status", "q1").ok(t)
	e.golden(t, "status_pending", r.stdout)
	if st := decode[statusJSON](t, e.cli(t, "status", "q1", "--output", "json").ok(t)); st.Status != "Pending" || st.Instance != "q1" {
		t.Errorf("status --output json of a pending instance = %+v", st)
	}
	info := decode[infoJSON](t, e.cli(t, "info", "q1", "--output", "json").ok(t))
	if info.Status != "Pending" || info.Orchestration != "Hello" || info.CreatedAtMs == 0 {
		t.Errorf("info --output json of a pending instance = %+v", info)
	}
	e.unchanged(t, func() {
		e.cli(t, "start", "Hello", "q1").fails(t, exitError, "instance q1 already exists (Hello Pending); give every instance a fresh id, or pass --if-exists=ignore")
		if r := e.cli(t, "start", "Hello", "q1", "--if-exists=ignore").ok(t); r.stdout != "instance q1 exists; nothing sent\n" {
			t.Errorf("start --if-exists=ignore of an existing instance printed %q", r.stdout)
		}
		e.cli(t, "start", "Hello", "q9", "--if-exists=skip").fails(t, exitUsage, `start: --if-exists "skip": want fail or ignore`)
	})
	e.cli(t, "start", "Hello", "q2", "--input", `"y"`).ok(t)
	e.cli(t, "cancel", "q2", "--reason", "not wanted").ok(t)
	e.awaitListed(t, "PENDING", "q1,q2")

	e.serve(t)
	e.cli(t, "wait", "q1").ok(t)
	e.cli(t, "raise", "q1", "Foo").fails(t, exitError, "raise: instance q1 is Completed")
	if r := e.cli(t, "wait", "q2"); r.code != exitFailed || !strings.Contains(r.stderr, "canceled: not wanted") {
		t.Errorf("wait of a cancelled pending instance: exit %d, stderr %q; want %d", r.code, r.stderr, exitFailed)
	}
	if st := decode[statusJSON](t, e.cli(t, "status", "q2", "--output", "json").ok(t)); st.Status != "Canceled" {
		t.Errorf("status of a cancelled instance: %+v; want Canceled", st)
	}
	e.awaitListed(t, "canceled", "q2")
	e.awaitListed(t, "Failed", "")
	e.cli(t, "cancel", "q2").fails(t, exitError, "cancel: instance q2 is Canceled")
}

// awaitListed waits until list --status status prints the instances want
// (ids joined by commas, sorted): the instances index is eventually
// consistent.
func (e *testEnv) awaitListed(t *testing.T, status, want string) {
	t.Helper()
	var got []string
	for range 100 {
		out := decode[listJSON](t, e.cli(t, "list", "--status", status, "--output", "json").ok(t))
		got = got[:0]
		for _, i := range out.Instances {
			got = append(got, i.Instance)
		}
		if strings.Join(sorted(got), ",") == want {
			return
		}
	}
	t.Fatalf("list --status %s: %v; want %s", status, got, want)
}
