package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/queues"
)

// subcommand is one operation of a command group (jobs, locks).
type subcommand struct {
	name  string
	usage string   // the usage line, without "duradyn "
	flags []string // the group's flags it takes
	run   func(args []string, given map[string]bool) error
}

// runGroup runs the subcommand of group that args[0] names on the rest of
// args. groupFlags are the flags the group registered on fs: those given
// that the subcommand does not take are refused. run receives the names of
// the flags given.
func runGroup(group string, fs *flag.FlagSet, groupFlags []string, subs []subcommand, args []string) error {
	var names []string
	for _, s := range subs {
		names = append(names, s.name)
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(args) == 0 {
		return usageError("%s: want an operation: %s (see duradyn help %s)", group, want, group)
	}
	i := slices.IndexFunc(subs, func(s subcommand) bool { return s.name == args[0] })
	if i < 0 {
		return usageError("%s: unknown operation %q: want %s", group, args[0], want)
	}
	sub := subs[i]
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range groupFlags {
		if given[name] && !slices.Contains(sub.flags, name) {
			return usageError("%s %s: --%s does not apply (usage: duradyn %s)", group, sub.name, name, sub.usage)
		}
	}
	return sub.run(args[1:], given)
}

// wantSubArgs checks the number of positional arguments of subcommand
// cmd ("jobs add"), whose usage line is usage.
func wantSubArgs(cmd, usage string, args []string, min, max int, names string) error {
	if len(args) < min || len(args) > max {
		return usageError("%s: want %s, got %d argument(s) (usage: duradyn %s)", cmd, names, len(args), usage)
	}
	for _, v := range args {
		if v == "" {
			return usageError("%s: empty argument", cmd)
		}
	}
	return nil
}

// repeatedFlag is a flag that may be given several times.
type repeatedFlag []string

func (f *repeatedFlag) String() string { return strings.Join(*f, ",") }

func (f *repeatedFlag) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// orchestratorSignals returns signals on the orchestrator queue, the way
// the runtimes, schedulers and lockers of the table wake each other; nil
// without --orchestrator-queue-url. The caller closes them.
func (a *app) orchestratorSignals() (*queues.Signals, error) {
	if a.g.orchQueue == "" {
		return nil, nil
	}
	cfg, err := a.awsConfig()
	if err != nil {
		return nil, err
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if a.g.sqsEndpoint != "" {
			o.BaseEndpoint = aws.String(a.g.sqsEndpoint)
		}
	})
	signals, err := queues.New(client, func(o *queues.Options) {
		o.OrchestratorQueueURL = a.g.orchQueue
		o.Logger = a.logger()
	})
	if err != nil {
		return nil, usageError("%v", err)
	}
	return signals, nil
}

// closeSignals closes signals, which may be nil.
func closeSignals(signals *queues.Signals) {
	if signals != nil {
		signals.Close()
	}
}

// jobsFlags are the flags of the jobs subcommands.
type jobsFlags struct {
	statuses, meta                       repeatedFlag
	dueBefore                            string
	limit, offset                        int
	trigger, triggerArgs, name, ifMissed string
	threshold                            int
	paused                               bool
	whole                                string
}

// jobsFlagNames are the names of the flags of the jobs subcommands.
var jobsFlagNames = []string{"status", "due-before", "meta", "limit", "offset",
	"trigger", "args", "name", "if-missed", "misfire-threshold", "paused", "json"}

// jobsAddFlags are the flags of jobs add that describe the job, which
// --json replaces.
var jobsAddFlags = []string{"trigger", "args", "name", "if-missed", "misfire-threshold", "meta", "paused"}

func cmdJobs(a *app, fs *flag.FlagSet) func([]string) error {
	f := &jobsFlags{}
	fs.Var(&f.statuses, "status", "list: only jobs with this `status` (pending, scheduled, running, paused or failed); repeat for several")
	fs.StringVar(&f.dueBefore, "due-before", "", "list: only jobs due at or before `D` (a duration from now, or an RFC 3339 UTC time)")
	fs.Var(&f.meta, "meta", "list: only jobs with this metadata `key=value`; add: set it; repeat for several")
	fs.IntVar(&f.limit, "limit", 100, "list: print at most `N` jobs")
	fs.IntVar(&f.offset, "offset", 0, "list: skip the first `N` matching jobs")
	fs.StringVar(&f.trigger, "trigger", "", "add: trigger `type`: cron, interval or date")
	fs.StringVar(&f.triggerArgs, "args", "", "add: the trigger's arguments: a `JSON` object, or @file")
	fs.StringVar(&f.name, "name", "", "add: the job's `name`: the action the schedulers run for it")
	fs.StringVar(&f.ifMissed, "if-missed", "", "add: misfire `policy`: skip (default), run_once or run_all")
	fs.IntVar(&f.threshold, "misfire-threshold", 0, "add: how many `seconds` late a scheduled time may run before it counts as missed")
	fs.BoolVar(&f.paused, "paused", false, "add: store the job paused, without a next run time")
	fs.StringVar(&f.whole, "json", "", "add: the whole job as `JSON` (the fields of jobs list --output json), or @file; replaces the other add flags")
	change := func(op string) func([]string, map[string]bool) error {
		return func(args []string, _ map[string]bool) error {
			if err := wantSubArgs("jobs "+op, "jobs "+op+" <job-id>", args, 1, 1, "<job-id>"); err != nil {
				return err
			}
			return a.jobsChange(op, args[0])
		}
	}
	subs := []subcommand{
		{name: "list", flags: []string{"status", "due-before", "meta", "limit", "offset"},
			run: func(args []string, _ map[string]bool) error { return a.jobsListCmd(f, args) }},
		{name: "add", flags: append(slices.Clone(jobsAddFlags), "json"),
			run: func(args []string, given map[string]bool) error { return a.jobsAddCmd(f, args, given) }},
		{name: "pause", usage: "jobs pause <job-id>", run: change("pause")},
		{name: "resume", usage: "jobs resume <job-id>", run: change("resume")},
		{name: "delete", usage: "jobs delete <job-id>", run: change("delete")},
	}
	subs[0].usage, subs[1].usage = jobsListUsage, jobsAddUsage
	return func(args []string) error {
		return runGroup("jobs", fs, jobsFlagNames, subs, args)
	}
}

// Usage lines of the jobs subcommands with flags.
const (
	jobsListUsage = "jobs list [--status S]... [--due-before D] [--meta key=value]... [--limit N] [--offset N]"
	jobsAddUsage  = "jobs add <job-id> --trigger cron|interval|date --args JSON|@file --name N [--if-missed P] [--misfire-threshold SECONDS] [--meta key=value]... [--paused] | jobs add [job-id] --json JSON|@file"
)

func (a *app) jobsListCmd(f *jobsFlags, args []string) error {
	if err := wantSubArgs("jobs list", jobsListUsage, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	filter, err := jobsFilter(f.statuses, f.dueBefore, f.meta, f.limit, f.offset)
	if err != nil {
		return err
	}
	return a.jobsList(filter)
}

func (a *app) jobsAddCmd(f *jobsFlags, args []string, given map[string]bool) error {
	var job jobs.Job
	if f.whole != "" {
		for _, name := range jobsAddFlags {
			if given[name] {
				return usageError("jobs add: --json holds the whole job; --%s does not go with it", name)
			}
		}
		if err := wantSubArgs("jobs add", jobsAddUsage, args, 0, 1, "[job-id] with --json"); err != nil {
			return err
		}
		var err error
		if job, err = decodeJobArg(f.whole); err != nil {
			return err
		}
		if len(args) == 1 && args[0] != job.ID {
			return usageError("jobs add: the job id %q differs from the job_id %q of --json", args[0], job.ID)
		}
	} else {
		if err := wantSubArgs("jobs add", jobsAddUsage, args, 1, 1, "<job-id>"); err != nil {
			return err
		}
		var err error
		if job, err = jobFromFlags(args[0], f); err != nil {
			return err
		}
	}
	if job.Name == "" {
		return usageError("jobs add: the job has no name: give it the name of the action the schedulers run for it")
	}
	return a.jobsAdd(job)
}

// jobsFilter builds the filter of jobs list from its flags.
func jobsFilter(statuses []string, dueBefore string, meta []string, limit, offset int) (jobs.Filter, error) {
	var filter jobs.Filter
	for _, s := range statuses {
		status := jobs.Status(s)
		switch status {
		case jobs.StatusPending, jobs.StatusScheduled, jobs.StatusRunning, jobs.StatusPaused, jobs.StatusFailed:
		default:
			return filter, usageError("jobs list: --status %q: want pending, scheduled, running, paused or failed", s)
		}
		filter.Status = append(filter.Status, status)
	}
	if dueBefore != "" {
		t, err := parseDue(dueBefore)
		if err != nil {
			return filter, err
		}
		filter.NextRunTimeLTE = &t
	}
	m, err := parseMeta(meta)
	if err != nil {
		return filter, err
	}
	filter.Metadata = m
	if limit < 1 {
		return filter, usageError("jobs list: --limit %d: want at least 1", limit)
	}
	if offset < 0 {
		return filter, usageError("jobs list: --offset %d is negative", offset)
	}
	// One more than printed, to tell whether there are more.
	filter.Limit, filter.Offset = limit+1, offset
	return filter, nil
}

// parseDue reads a --due-before value: a duration from now (negative for
// the past) or an RFC 3339 time in UTC.
func parseDue(v string) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return time.Now().UTC().Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usageError("--due-before %q: want a duration such as 1h or an RFC 3339 time", v)
	}
	if t.Location() != time.UTC {
		return time.Time{}, usageError("--due-before %q is not UTC: write the time with a Z suffix", v)
	}
	return t, nil
}

// parseMeta reads --meta key=value flags.
func parseMeta(meta []string) (map[string]string, error) {
	if len(meta) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(meta))
	for _, kv := range meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--meta %q: want key=value", kv)
		}
		if _, dup := out[k]; dup {
			return nil, usageError("--meta %s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// decodeJobArg reads the job of --json: JSON text, or @file holding it.
func decodeJobArg(v string) (jobs.Job, error) {
	data, err := payload("json", v, false)
	if err != nil {
		return jobs.Job{}, err
	}
	raw, _ := data.(json.RawMessage)
	job, err := jobs.DecodeJob(raw)
	if err != nil {
		return jobs.Job{}, usageError("jobs add: --json: %s", jobsErrorText(err))
	}
	return job, nil
}

// jobFromFlags builds the job id of jobs add from its flags, checking the
// trigger as the scheduler does.
func jobFromFlags(id string, f *jobsFlags) (jobs.Job, error) {
	if f.trigger == "" {
		return jobs.Job{}, usageError("jobs add: --trigger is required: cron, interval or date (or give the whole job with --json)")
	}
	if f.triggerArgs == "" {
		return jobs.Job{}, usageError("jobs add: --args is required: the %s trigger's arguments as a JSON object", f.trigger)
	}
	data, err := payload("args", f.triggerArgs, false)
	if err != nil {
		return jobs.Job{}, err
	}
	raw, _ := data.(json.RawMessage)
	if _, err := jobs.ParseTrigger(f.trigger, raw); err != nil {
		return jobs.Job{}, usageError("jobs add: %s", jobsErrorText(err))
	}
	policy := jobs.IfMissed(f.ifMissed)
	switch policy {
	case "", jobs.Skip, jobs.RunOnce, jobs.RunAll:
	default:
		return jobs.Job{}, usageError("jobs add: --if-missed %q: want skip, run_once or run_all", f.ifMissed)
	}
	if f.threshold < 0 {
		return jobs.Job{}, usageError("jobs add: --misfire-threshold %d is negative", f.threshold)
	}
	metadata, err := parseMeta(f.meta)
	if err != nil {
		return jobs.Job{}, err
	}
	job := jobs.Job{
		ID:                      id,
		Name:                    f.name,
		TriggerType:             f.trigger,
		TriggerArgs:             raw,
		IfMissed:                policy,
		MisfireThresholdSeconds: f.threshold,
		Metadata:                metadata,
	}
	if f.paused {
		job.Status = jobs.StatusPaused
	}
	return job, nil
}

// jobsErrorText words an error of package jobs without its package prefix.
func jobsErrorText(err error) string {
	return strings.TrimPrefix(err.Error(), "jobs: ")
}

// openJobs opens the table and returns a job store on it with the table's
// shard count, and a scheduler of that store that never runs: the
// functions schedulers use to add, pause and resume jobs. With signal and
// an orchestrator queue, the store wakes the schedulers of other
// processes when it gives a job an earlier next run time; close releases
// what openJobs made.
func (a *app) openJobs(signal bool) (store *jobs.DynamoStore, sched *jobs.Scheduler, close func(), err error) {
	if err := a.open(false); err != nil {
		return nil, nil, nil, err
	}
	var signals *queues.Signals
	if signal {
		if signals, err = a.orchestratorSignals(); err != nil {
			return nil, nil, nil, err
		}
		if signals == nil {
			fmt.Fprintln(a.stderr, "duradyn: warning: no --orchestrator-queue-url: running schedulers find this job when they next look at the table")
		}
	}
	store, err = jobs.NewDynamoStore(aws.Config{}, func(o *jobs.DynamoOptions) {
		o.TableName = a.g.table
		o.Client = a.db
		o.Signals = signals
		o.Logger = a.logger()
	})
	if err == nil {
		sched, err = jobs.NewScheduler(store)
	}
	if err != nil {
		closeSignals(signals)
		return nil, nil, nil, usageError("%v", err)
	}
	return store, sched, func() { closeSignals(signals) }, nil
}

// jobError words an error about job id.
func (a *app) jobError(op, id string, err error) error {
	switch {
	case errors.Is(err, jobs.ErrJobNotFound):
		return notFoundError("job %s not found", id)
	case errors.Is(err, jobs.ErrJobExists):
		return fmt.Errorf("job %s already exists; delete it first or give the job a fresh id", id)
	case errors.Is(err, jobs.ErrInvalidJob):
		return usageError("jobs %s: %s", op, jobsErrorText(err))
	}
	return a.awsError(err)
}

func (a *app) jobsList(filter jobs.Filter) error {
	store, _, closeJobs, err := a.openJobs(false)
	if err != nil {
		return err
	}
	defer closeJobs()
	found, err := store.Query(a.ctx, filter)
	if err != nil {
		return a.jobError("list", "", err)
	}
	limit := filter.Limit - 1
	truncated := len(found) > limit
	found = found[:min(len(found), limit)]
	if truncated {
		fmt.Fprintf(a.stderr, "duradyn: showing %d jobs from offset %d; there are more (raise --limit or --offset)\n", limit, filter.Offset)
	}
	if a.jsonOut() {
		if found == nil {
			found = []jobs.Job{}
		}
		return a.printJSON(map[string]any{"jobs": found, "truncated": truncated})
	}
	tw := a.table()
	fmt.Fprintln(tw, "JOB\tSTATUS\tNEXT RUN\tTRIGGER\tNAME")
	for _, j := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.ID, j.Status, fmtTimePtr(j.NextRunTime), fmtTrigger(j), orDash(j.Name))
	}
	return tw.Flush()
}

// fmtTimePtr formats a time in UTC with milliseconds; "-" for nil.
func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// fmtTrigger is a job's trigger type and compact arguments.
func fmtTrigger(j jobs.Job) string {
	if j.TriggerType == "" {
		return "-"
	}
	var args bytes.Buffer
	if err := json.Compact(&args, j.TriggerArgs); err != nil || args.Len() == 0 {
		return j.TriggerType
	}
	return j.TriggerType + " " + args.String()
}

func (a *app) jobsAdd(job jobs.Job) error {
	_, sched, closeJobs, err := a.openJobs(job.Status != jobs.StatusPaused)
	if err != nil {
		return err
	}
	defer closeJobs()
	// Add stores only jobs whose name has an action; this scheduler never
	// runs, so the action is never called.
	if err := sched.Handle(job.Name, func(context.Context, jobs.Fire) error { return nil }); err != nil {
		return usageError("jobs add: %s", jobsErrorText(err))
	}
	stored, err := sched.Add(a.ctx, job)
	if err != nil {
		return a.jobError("add", job.ID, err)
	}
	if a.jsonOut() {
		return a.printJSON(map[string]any{"job": stored, "added": true})
	}
	if stored.Status == jobs.StatusPaused {
		fmt.Fprintf(a.stdout, "added job %s (%s), paused\n", stored.ID, stored.Name)
		return nil
	}
	fmt.Fprintf(a.stdout, "added job %s (%s), next run %s\n", stored.ID, stored.Name, fmtTimePtr(stored.NextRunTime))
	return nil
}

// jobsChange runs jobs pause, resume or delete on the job with id.
func (a *app) jobsChange(op, id string) error {
	store, sched, closeJobs, err := a.openJobs(op == "resume")
	if err != nil {
		return err
	}
	defer closeJobs()
	switch op {
	case "pause":
		job, err := sched.Pause(a.ctx, id)
		if err != nil {
			return a.jobError(op, id, err)
		}
		if a.jsonOut() {
			return a.printJSON(map[string]any{"job": job, "paused": true})
		}
		fmt.Fprintf(a.stdout, "paused job %s\n", id)
		return nil
	case "resume":
		// Resume leaves a job that is not paused as it is; read it first to
		// say so.
		job, err := store.Get(a.ctx, id)
		resumed := err == nil && job.Status == jobs.StatusPaused
		if resumed {
			job, err = sched.Resume(a.ctx, id)
		}
		if err != nil {
			return a.jobError(op, id, err)
		}
		if a.jsonOut() {
			return a.printJSON(map[string]any{"job": job, "resumed": resumed})
		}
		if !resumed {
			fmt.Fprintf(a.stdout, "job %s is %s, not paused; left as it is\n", id, job.Status)
			return nil
		}
		fmt.Fprintf(a.stdout, "resumed job %s, next run %s\n", id, fmtTimePtr(job.NextRunTime))
		return nil
	default:
		found, err := sched.Remove(a.ctx, id)
		if err != nil {
			return a.jobError(op, id, err)
		}
		if !found {
			return notFoundError("job %s not found", id)
		}
		if a.jsonOut() {
			return a.printJSON(map[string]any{"job_id": id, "deleted": true})
		}
		fmt.Fprintf(a.stdout, "deleted job %s\n", id)
		return nil
	}
}

// jobsNotes tell what jobs add takes as --args, for each --trigger.
const jobsNotes = `jobs add <job-id> --trigger T --args JSON --name N:
  --trigger cron      --args '{"expr": "*/5 * * * *", "timezone": "Europe/Berlin"}'
                      five fields or @hourly/@daily/@weekly/@monthly/@yearly; timezone
                      is IANA, default UTC
  --trigger interval  --args '{"every_seconds": 300, "start": "2026-01-01T00:00:00Z"}'
                      start (RFC 3339) is optional
  --trigger date      --args '{"at": "2026-01-01T09:00:00Z"}'
                      runs once, at an RFC 3339 time
`
