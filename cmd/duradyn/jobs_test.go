package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

// newTableEnv creates a table (4 shards, recorded) and wake-up queues, with
// no runtime: the jobs and locks commands need none.
func newTableEnv(t *testing.T) *testEnv {
	t.Helper()
	env := dynamotest.NewEnv(t, true)
	p := env.NewProvider(t, dynamotest.Config{Shards: 4})
	if err := p.CheckLayout(t.Context()); err != nil {
		t.Fatalf("CheckLayout: %v", err)
	}
	return &testEnv{Env: env, env: map[string]string{
		"DURADYN_TABLE":                  env.Table,
		"DURADYN_DYNAMODB_ENDPOINT":      env.Endpoints.DynamoDBURL,
		"DURADYN_SQS_ENDPOINT":           env.Endpoints.SQSURL,
		"DURADYN_ORCHESTRATOR_QUEUE_URL": env.OrchestratorQueueURL,
		"DURADYN_WORKER_QUEUE_URL":       env.WorkerQueueURL,
		"AWS_REGION":                     env.AWS.Region,
		"AWS_ACCESS_KEY_ID":              "test",
		"AWS_SECRET_ACCESS_KEY":          "test",
	}}
}

// jobStore returns a store on e's table, as the CLI opens it.
func (e *testEnv) jobStore(t *testing.T) *jobs.DynamoStore {
	t.Helper()
	store, err := jobs.NewDynamoStore(e.AWS, func(o *jobs.DynamoOptions) {
		o.TableName = e.Table
		o.Client = e.DB
	})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// getJob reads job id from store.
func getJob(t *testing.T, store jobs.Store, id string) jobs.Job {
	t.Helper()
	job, err := store.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("get job %s: %v", id, err)
	}
	return job
}

// signalsOn returns signals on the orchestrator queue of e, closed when t
// ends: another process of the table.
func (e *testEnv) signalsOn(t *testing.T) *queues.Signals {
	t.Helper()
	signals, err := queues.New(e.Endpoints.SQS(e.AWS), func(o *queues.Options) {
		o.OrchestratorQueueURL = e.OrchestratorQueueURL
		o.MaxLongPoll = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { signals.Close() })
	return signals
}

// awaitSignal waits until signals receive a signal of kind for which match
// holds.
func awaitSignal(t *testing.T, signals *queues.Signals, kind queues.Kind, match func(queues.Signal) bool) queues.Signal {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		sigs, err := signals.Wait(ctx, kind, 20*time.Second)
		for _, sig := range sigs {
			if match(sig) {
				return sig
			}
		}
		if err != nil {
			t.Fatalf("waiting for a %v signal: %v", kind, err)
		}
	}
}

// nextAt3 is the first 03:00 UTC at or after t.
func nextAt3(t time.Time) time.Time {
	t = t.UTC()
	at := time.Date(t.Year(), t.Month(), t.Day(), 3, 0, 0, 0, time.UTC)
	if at.Before(t.Truncate(time.Millisecond)) {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

type jobsListJSON struct {
	Jobs      []jobs.Job `json:"jobs"`
	Truncated bool       `json:"truncated"`
}

type jobJSON struct {
	Job     jobs.Job `json:"job"`
	Added   bool     `json:"added"`
	Paused  bool     `json:"paused"`
	Resumed bool     `json:"resumed"`
}

// compactJSON returns raw without insignificant space.
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %q: %v", raw, err)
	}
	return b.String()
}

func ids(list []jobs.Job) string {
	var out []string
	for _, j := range list {
		out = append(out, j.ID)
	}
	return strings.Join(out, ",")
}

func TestJobs(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	store := e.jobStore(t)

	// A daily cron job: its first run is the next 03:00 UTC.
	before := time.Now()
	r := e.cli(t, "jobs", "add", "a-nightly", "--trigger", "cron", "--args", `{"expr":"0 3 * * *"}`, "--name", "report", "--meta", "tenant=acme").ok(t)
	after := time.Now()
	e.golden(t, "jobs_add", r.stdout)
	job := getJob(t, store, "a-nightly")
	if job.Status != jobs.StatusScheduled || job.NextRunTime == nil || job.Name != "report" || job.IfMissed != jobs.Skip ||
		job.Metadata["tenant"] != "acme" || job.TriggerType != "cron" {
		t.Fatalf("a-nightly stored as %+v", job)
	}
	if next := *job.NextRunTime; !next.Equal(nextAt3(before)) && !next.Equal(nextAt3(after)) {
		t.Errorf("a-nightly next run %v; want the next 03:00 UTC (%v)", next, nextAt3(before))
	}

	// An interval job without a start: the scheduler's Add starts it one
	// period after now and writes the start into its arguments.
	before = time.Now().Truncate(time.Millisecond)
	r = e.cli(t, "jobs", "add", "x-poll", "--trigger", "interval", "--args", `{"every_seconds":300}`, "--name", "poll",
		"--if-missed", "run_all", "--misfire-threshold", "30", "--output", "json").ok(t)
	after = time.Now()
	added := decode[jobJSON](t, r)
	var args jobs.IntervalArgs
	if err := json.Unmarshal(added.Job.TriggerArgs, &args); err != nil || args.Start == nil || args.EverySeconds != 300 {
		t.Fatalf("x-poll trigger arguments %s (%v): want every_seconds 300 and a start", added.Job.TriggerArgs, err)
	}
	if start := *args.Start; start.Before(before.Add(300*time.Second)) || start.After(after.Add(300*time.Second)) ||
		added.Job.NextRunTime == nil || !added.Job.NextRunTime.Equal(start) {
		t.Errorf("x-poll start %v, next run %v; want both 300 s after the add", start, added.Job.NextRunTime)
	}
	if !added.Added || added.Job.IfMissed != jobs.RunAll || added.Job.MisfireThresholdSeconds != 30 || added.Job.Status != jobs.StatusScheduled {
		t.Errorf("jobs add --output json = %+v", added)
	}
	if stored := getJob(t, store, "x-poll"); !stored.NextRunTime.Equal(*added.Job.NextRunTime) || compactJSON(t, stored.TriggerArgs) != compactJSON(t, added.Job.TriggerArgs) {
		t.Errorf("x-poll stored as %+v; printed %+v", stored, added.Job)
	}
	e.golden(t, "jobs_delete", e.cli(t, "jobs", "delete", "x-poll").ok(t).stdout)
	if _, err := store.Get(t.Context(), "x-poll"); err == nil {
		t.Errorf("x-poll still stored after jobs delete")
	}

	// An interval job with a start, and a whole job from a file.
	e.cli(t, "jobs", "add", "b-poll", "--trigger", "interval", "--args", `{"every_seconds":3600,"start":"2099-03-01T00:00:00Z"}`, "--name", "poll").ok(t)
	file := filepath.Join(t.TempDir(), "job.json")
	whole := `{"job_id": "c-once", "name": "report", "trigger_type": "date", "trigger_args": {"at": "2099-01-02T03:04:05Z"},
		"if_missed": "run_once", "misfire_threshold_seconds": 60, "metadata": {"tenant": "globex"}}`
	if err := os.WriteFile(file, []byte(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	e.cli(t, "jobs", "add", "c-once", "--json", "@"+file).ok(t)
	job = getJob(t, store, "c-once")
	if job.NextRunTime == nil || !job.NextRunTime.Equal(time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)) || job.IfMissed != jobs.RunOnce ||
		job.MisfireThresholdSeconds != 60 || job.Metadata["tenant"] != "globex" || job.Status != jobs.StatusScheduled {
		t.Errorf("c-once stored as %+v", job)
	}
	// Paused: stored without a next run time.
	e.golden(t, "jobs_add_paused", e.cli(t, "jobs", "add", "d-paused", "--trigger", "date", "--args", `{"at":"2098-06-01T00:00:00Z"}`,
		"--name", "report", "--paused", "--meta", "tenant=acme", "--meta", "tier=gold").ok(t).stdout)
	if job := getJob(t, store, "d-paused"); job.Status != jobs.StatusPaused || job.NextRunTime != nil || len(job.Metadata) != 2 {
		t.Errorf("d-paused stored as %+v", job)
	}

	// list: by next run time, jobs without one last.
	e.golden(t, "jobs_list", e.cli(t, "jobs", "list").ok(t).stdout)
	list := decode[jobsListJSON](t, e.cli(t, "jobs", "list", "--output", "json").ok(t))
	if ids(list.Jobs) != "a-nightly,c-once,b-poll,d-paused" || list.Truncated {
		t.Fatalf("jobs list --output json: %s, truncated %v", ids(list.Jobs), list.Truncated)
	}
	if got := list.Jobs[1]; got.Name != "report" || got.TriggerType != "date" || compactJSON(t, got.TriggerArgs) != `{"at":"2099-01-02T03:04:05Z"}` ||
		got.Metadata["tenant"] != "globex" || got.LastRunTime != nil {
		t.Errorf("jobs list --output json: c-once is %+v", got)
	}
	// The JSON uses the guide's field names.
	var raw struct{ Jobs []map[string]any }
	if err := json.Unmarshal([]byte(e.cli(t, "jobs", "list", "--limit", "1", "--output", "json").ok(t).stdout), &raw); err != nil || len(raw.Jobs) != 1 {
		t.Fatalf("jobs list --output json: %v", err)
	}
	for _, name := range []string{"job_id", "status", "next_run_time", "if_missed", "misfire_threshold_seconds", "last_run_time",
		"last_scheduled_time", "metadata", "name", "trigger_type", "trigger_args"} {
		if _, ok := raw.Jobs[0][name]; !ok {
			t.Errorf("jobs list --output json: no field %s in %v", name, raw.Jobs[0])
		}
	}

	// Filters.
	for _, c := range []struct {
		args      []string
		want      string
		truncated bool
	}{
		{[]string{"--status", "paused"}, "d-paused", false},
		{[]string{"--status", "paused", "--status", "scheduled"}, "a-nightly,c-once,b-poll,d-paused", false},
		{[]string{"--status", "running"}, "", false},
		{[]string{"--meta", "tenant=acme"}, "a-nightly,d-paused", false},
		{[]string{"--meta", "tenant=acme", "--meta", "tier=gold"}, "d-paused", false},
		{[]string{"--due-before", "25h"}, "a-nightly", false},
		{[]string{"--due-before", "2099-02-01T00:00:00Z"}, "a-nightly,c-once", false},
		{[]string{"--due-before", "-1h"}, "", false},
		{[]string{"--offset", "1", "--limit", "2"}, "c-once,b-poll", true},
		{[]string{"--offset", "2", "--limit", "2"}, "b-poll,d-paused", false},
		{[]string{"--offset", "9"}, "", false},
	} {
		r := e.cli(t, append([]string{"jobs", "list", "--output", "json"}, c.args...)...).ok(t)
		if got := decode[jobsListJSON](t, r); ids(got.Jobs) != c.want || got.Truncated != c.truncated || got.Jobs == nil {
			t.Errorf("jobs list %v: %q (truncated %v); want %q", c.args, ids(got.Jobs), got.Truncated, c.want)
		}
	}
	r = e.cli(t, "jobs", "list", "--limit", "2", "--output", "json").ok(t)
	if got := decode[jobsListJSON](t, r); ids(got.Jobs) != "a-nightly,c-once" || !got.Truncated {
		t.Errorf("jobs list --limit 2: %q (truncated %v)", ids(got.Jobs), got.Truncated)
	}
	if !strings.Contains(r.stderr, "showing 2 jobs from offset 0; there are more") {
		t.Errorf("jobs list --limit 2: stderr %q; want the truncation note", r.stderr)
	}

	// pause, resume.
	e.golden(t, "jobs_pause", e.cli(t, "jobs", "pause", "a-nightly").ok(t).stdout)
	if job := getJob(t, store, "a-nightly"); job.Status != jobs.StatusPaused || job.NextRunTime != nil {
		t.Errorf("a-nightly after pause: %+v", job)
	}
	paused := decode[jobJSON](t, e.cli(t, "jobs", "pause", "a-nightly", "--output", "json").ok(t))
	if !paused.Paused || paused.Job.Status != jobs.StatusPaused {
		t.Errorf("jobs pause --output json = %+v", paused)
	}
	before = time.Now()
	e.golden(t, "jobs_resume", e.cli(t, "jobs", "resume", "a-nightly").ok(t).stdout)
	after = time.Now()
	job = getJob(t, store, "a-nightly")
	if job.Status != jobs.StatusScheduled || job.NextRunTime == nil || (!job.NextRunTime.Equal(nextAt3(before)) && !job.NextRunTime.Equal(nextAt3(after))) {
		t.Errorf("a-nightly after resume: %+v", job)
	}
	// A job that is not paused is left as it is.
	e.unchanged(t, func() {
		e.golden(t, "jobs_resume_scheduled", e.cli(t, "jobs", "resume", "a-nightly").ok(t).stdout)
		resumed := decode[jobJSON](t, e.cli(t, "jobs", "resume", "a-nightly", "--output", "json").ok(t))
		if resumed.Resumed || resumed.Job.Status != jobs.StatusScheduled {
			t.Errorf("jobs resume of a scheduled job --output json = %+v", resumed)
		}
	})
	resumed := decode[jobJSON](t, e.cli(t, "jobs", "resume", "d-paused", "--output", "json").ok(t))
	if !resumed.Resumed || resumed.Job.Status != jobs.StatusScheduled || resumed.Job.NextRunTime == nil ||
		!resumed.Job.NextRunTime.Equal(time.Date(2098, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("jobs resume d-paused --output json = %+v", resumed)
	}

	// delete; a job deleted is not found.
	d := decode[map[string]any](t, e.cli(t, "jobs", "delete", "d-paused", "--output", "json").ok(t))
	if d["job_id"] != "d-paused" || d["deleted"] != true {
		t.Errorf("jobs delete --output json = %v", d)
	}
	e.unchanged(t, func() {
		for _, op := range []string{"delete", "pause", "resume"} {
			e.cli(t, "jobs", op, "d-paused").fails(t, exitNotFound, "job d-paused not found")
		}
	})
	if n, err := store.Count(t.Context(), jobs.Filter{}); err != nil || n != 3 {
		t.Errorf("jobs left: %d (%v); want 3", n, err)
	}
}

// TestJobsSignal: a job the CLI adds wakes the schedulers of other
// processes through the orchestrator queue.
func TestJobsSignal(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	signals := e.signalsOn(t)
	store := e.jobStore(t)
	// Due at once: the signal is sent without delay.
	e.cli(t, "jobs", "add", "due", "--trigger", "date", "--args", `{"at":"2020-01-01T00:00:00Z"}`, "--name", "report").ok(t)
	sig := awaitSignal(t, signals, queues.Schedule, func(s queues.Signal) bool { return s.Shard == store.Shard("due") })
	if !sig.VisibleAt.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("schedule signal %+v: want VisibleAt 2020-01-01T00:00:00Z", sig)
	}

	// Without a queue the CLI says that schedulers find the job later.
	r := e.cli(t, "DURADYN_ORCHESTRATOR_QUEUE_URL=", "jobs", "add", "quiet", "--trigger", "date", "--args", `{"at":"2020-01-01T00:00:00Z"}`, "--name", "report").ok(t)
	if !strings.Contains(r.stderr, "warning: no --orchestrator-queue-url: running schedulers find this job when they next look at the table") {
		t.Errorf("stderr %q: want the queue warning", r.stderr)
	}
}

// TestJobsBadInput: malformed jobs, filters and arguments give one clear
// line and a non-zero exit code, and write nothing.
func TestJobsBadInput(t *testing.T) {
	t.Parallel()
	e := newTableEnv(t)
	cron := []string{"--trigger", "cron", "--args", `{"expr":"* * * * *"}`, "--name", "report"}
	e.cli(t, append([]string{"jobs", "add", "j1"}, cron...)...).ok(t)
	wholeJob := func(fields string) string {
		return `{"job_id":"j2","name":"report","trigger_type":"cron","trigger_args":{"expr":"* * * * *"}` + fields + `}`
	}
	e.unchanged(t, func() {
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"jobs", "list", "--status", "sleeping"}, exitUsage, `jobs list: --status "sleeping": want pending, scheduled, running, paused or failed`},
			{[]string{"jobs", "list", "--due-before", "2030-01-01T00:00:00+02:00"}, exitUsage, `--due-before "2030-01-01T00:00:00+02:00" is not UTC: write the time with a Z suffix`},
			{[]string{"jobs", "list", "--due-before", "tomorrow"}, exitUsage, `--due-before "tomorrow": want a duration such as 1h or an RFC 3339 time`},
			{[]string{"jobs", "list", "--limit", "0"}, exitUsage, "jobs list: --limit 0: want at least 1"},
			{[]string{"jobs", "list", "--offset", "-1"}, exitUsage, "jobs list: --offset -1 is negative"},
			{[]string{"jobs", "list", "--meta", "tenant"}, exitUsage, `--meta "tenant": want key=value`},
			{[]string{"jobs", "list", "extra"}, exitUsage, "jobs list: want no arguments, got 1 argument(s)"},
			{[]string{"jobs", "add", "j2", "--trigger", "cron", "--args", `{"expr":"61 * * * *"}`, "--name", "report"}, exitUsage, `jobs add: invalid job: cron expr "61 * * * *": `},
			{[]string{"jobs", "add", "j2", "--trigger", "cron", "--args", `{"expr":`, "--name", "report"}, exitUsage, "--args is not valid JSON"},
			{[]string{"jobs", "add", "j2", "--trigger", "weekly", "--args", `{}`, "--name", "report"}, exitUsage, `trigger_type "weekly": unknown trigger type`},
			{[]string{"jobs", "add", "j2", "--trigger", "interval", "--args", `{"every_seconds":0}`, "--name", "report"}, exitUsage, "interval every_seconds 0: outside 1 to 100 years"},
			{append([]string{"jobs", "add", "j2", "--if-missed", "sometimes"}, cron...), exitUsage, `jobs add: --if-missed "sometimes": want skip, run_once or run_all`},
			{append([]string{"jobs", "add", "j2", "--misfire-threshold", "-5"}, cron...), exitUsage, "--misfire-threshold -5 is negative"},
			{append([]string{"jobs", "add", "j2", "--meta", "a=1", "--meta", "a=2"}, cron...), exitUsage, "--meta a is given twice"},
			{[]string{"jobs", "add", "j2", "--trigger", "cron", "--args", `{"expr":"* * * * *"}`}, exitUsage, "jobs add: the job has no name"},
			{[]string{"jobs", "add", "j2", "--name", "report"}, exitUsage, "jobs add: --trigger is required"},
			{[]string{"jobs", "add", "j2", "--trigger", "cron", "--name", "report"}, exitUsage, "jobs add: --args is required"},
			{[]string{"jobs", "add", "--json", wholeJob(`,"metadata":{"tenant":7}`)}, exitUsage, `metadata "tenant" "7": not a JSON string`},
			{[]string{"jobs", "add", "--json", wholeJob(`,"next_run_time":"2030-01-01T00:00:00+02:00"`)}, exitUsage, "next_run_time 2030-01-01T00:00:00+02:00: not UTC"},
			{[]string{"jobs", "add", "--json", wholeJob(`,"status":"sleeping"`)}, exitUsage, `status "sleeping": unknown status`},
			{[]string{"jobs", "add", "--json", wholeJob(`,"if_missed":"never"`)}, exitUsage, `if_missed "never": unknown misfire policy`},
			{[]string{"jobs", "add", "--json", wholeJob(`,"status":"running"`)}, exitUsage, `jobs add: invalid job: status "running": a job is added scheduled or paused`},
			{[]string{"jobs", "add", "--json", wholeJob(`,"colour":"blue"`)}, exitUsage, `unknown field "colour"`},
			{[]string{"jobs", "add", "--json", `{"job_id":`}, exitUsage, "--json is not valid JSON"},
			{[]string{"jobs", "add", "--json", `{"job_id":"j2","trigger_type":"cron","trigger_args":{"expr":"* * * * *"}}`}, exitUsage, "jobs add: the job has no name"},
			{[]string{"jobs", "add", "other", "--json", wholeJob("")}, exitUsage, `jobs add: the job id "other" differs from the job_id "j2" of --json`},
			{[]string{"jobs", "add", "--json", wholeJob(""), "--trigger", "cron"}, exitUsage, "jobs add: --json holds the whole job; --trigger does not go with it"},
			{[]string{"jobs", "add", "--json", "@/nonexistent/job.json"}, exitUsage, "--json: open /nonexistent/job.json"},
			{[]string{"jobs", "add"}, exitUsage, "jobs add: want <job-id>, got 0 argument(s)"},
			{[]string{"jobs", "pause", "j1", "--trigger", "cron"}, exitUsage, "jobs pause: --trigger does not apply (usage: duradyn jobs pause <job-id>)"},
			{[]string{"jobs", "list", "--paused"}, exitUsage, "jobs list: --paused does not apply"},
			{[]string{"jobs", "delete"}, exitUsage, "jobs delete: want <job-id>, got 0 argument(s)"},
			{[]string{"jobs", "frobnicate"}, exitUsage, `jobs: unknown operation "frobnicate": want list, add, pause, resume or delete`},
			{[]string{"jobs"}, exitUsage, "jobs: want an operation: list, add, pause, resume or delete"},
			{append([]string{"jobs", "add", "j1"}, cron...), exitError, "job j1 already exists; delete it first or give the job a fresh id"},
			{[]string{"jobs", "pause", "nope"}, exitNotFound, "job nope not found"},
		} {
			e.cli(t, c.args...).fails(t, c.code, c.want)
		}
	})
	if job := getJob(t, e.jobStore(t), "j1"); job.Status != jobs.StatusScheduled || job.NextRunTime == nil {
		t.Errorf("j1 after the bad input: %+v", job)
	}
	if r := e.cli(t, "help", "jobs").ok(t); !strings.Contains(r.stdout, "-misfire-threshold") {
		t.Errorf("help jobs: %q", r.stdout)
	}
}
