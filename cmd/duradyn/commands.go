package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

// payload reads a --input/--data value: JSON text, or @file holding it;
// with raw the text is passed verbatim. The empty string is JSON null.
func payload(flagName, v string, raw bool) (any, error) {
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(rest)
		if err != nil {
			return nil, usageError("--%s: %v", flagName, err)
		}
		v = string(b)
		if !raw {
			v = strings.TrimSpace(v)
		}
	}
	if raw {
		return durable.Raw(v), nil
	}
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		var x any
		err := json.Unmarshal([]byte(v), &x)
		return nil, usageError("--%s is not valid JSON (%v); pass --raw to send it as plain text", flagName, err)
	}
	return json.RawMessage(v), nil
}

func cmdStart(a *app, fs *flag.FlagSet) func([]string) error {
	input := fs.String("input", "", "orchestration input: JSON, or @file")
	raw := fs.Bool("raw", false, "pass the input verbatim instead of as JSON")
	version := fs.String("version", "", "orchestration `version` to run (default: the runtime's policy)")
	wait := fs.Bool("wait", false, "wait for the instance to finish (exit code 5 if it fails)")
	ifExists := fs.String("if-exists", "fail", "what to do when the instance exists (pending included): `fail` (exit 1) or ignore (send nothing, exit 0)")
	return func(args []string) error {
		if err := wantArgs("start", args, 2, 2, "<orchestration> <instance>"); err != nil {
			return err
		}
		if *ifExists != "fail" && *ifExists != "ignore" {
			return usageError("start: --if-exists %q: want fail or ignore", *ifExists)
		}
		name, id := args[0], args[1]
		in, err := payload("input", *input, *raw)
		if err != nil {
			return err
		}
		if err := a.openForEnqueue(); err != nil {
			return err
		}
		// A start sent to an existing instance would be ignored.
		switch info, err := a.client.InstanceInfo(a.ctx, id); {
		case err == nil && *ifExists == "ignore":
			return a.printStarted(id, name, false)
		case err == nil:
			return fmt.Errorf("instance %s already exists (%s %s); give every instance a fresh id, or pass --if-exists=ignore", id, orDash(info.OrchestrationName), displayStatus(info))
		case !errors.Is(err, provider.ErrNotFound):
			return a.instanceError(id, err)
		}
		var opts []durable.Option
		if *version != "" {
			opts = append(opts, durable.Version(*version))
		}
		if err := a.client.StartOrchestration(a.ctx, id, name, in, opts...); err != nil {
			return a.instanceError(id, err)
		}
		if *wait {
			return a.waitFor(id, true)
		}
		return a.printStarted(id, name, true)
	}
}

// printStarted reports a start: started, or not (--if-exists=ignore found
// the instance).
func (a *app) printStarted(id, name string, started bool) error {
	if a.jsonOut() {
		return a.printJSON(map[string]any{"instance": id, "orchestration": name, "started": started})
	}
	if !started {
		fmt.Fprintf(a.stdout, "instance %s exists; nothing sent\n", id)
		return nil
	}
	fmt.Fprintf(a.stdout, "started %s (%s)\n", id, name)
	return nil
}

func cmdStatus(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("status", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		if err := a.open(false); err != nil {
			return err
		}
		s, err := a.client.Status(a.ctx, args[0])
		if err != nil {
			return a.instanceError(args[0], err)
		}
		if s.State == durable.StateNotFound {
			return notFoundError("instance %s not found", args[0])
		}
		return a.printStatus(s)
	}
}

func cmdWait(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("wait", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		if err := a.open(false); err != nil {
			return err
		}
		return a.waitFor(args[0], false)
	}
}

// statusPoll is how long one WaitForStatusChange call waits before wait
// looks at the history size and KV keys again.
const statusPoll = time.Second

// waitFor waits for instance id to finish, printing a progress line on
// stderr for each change, then prints the final status. With pending, an
// instance that does not exist yet (its start is queued) is waited for;
// otherwise it is not found.
func (a *app) waitFor(id string, pending bool) error {
	start := time.Now()
	tty := isTerminal(a.stderr)
	var (
		version  uint64
		lastLine string
		s        *durable.Status
	)
	for {
		sub, cancel := context.WithTimeout(a.ctx, statusPoll)
		next, err := a.client.WaitForStatusChange(sub, id, version)
		cancel()
		if err != nil && a.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			next, err = a.client.Status(a.ctx, id)
		}
		if err != nil {
			if tty && lastLine != "" {
				fmt.Fprintln(a.stderr)
			}
			if a.ctx.Err() != nil && errors.Is(a.ctx.Err(), context.DeadlineExceeded) {
				state := "not started"
				if s != nil {
					state = s.State.String()
				}
				return timeoutError("timed out after %v waiting for %s (%s)", a.g.timeout, id, state)
			}
			return a.instanceError(id, err)
		}
		s = next
		if s.State == durable.StateNotFound && !pending {
			return notFoundError("instance %s not found", id)
		}
		version = s.CustomStatusVersion
		line := fmt.Sprintf("%s %s", id, s.State)
		if s.State == durable.StateNotFound {
			line = id + " pending start"
		}
		if s.CustomStatus != nil {
			line += fmt.Sprintf(" status=%q (v%d)", *s.CustomStatus, s.CustomStatusVersion)
		}
		if stats, err := a.client.Stats(a.ctx, id); err == nil && stats != nil {
			line += fmt.Sprintf(" events=%d kv_keys=%d", stats.HistoryEventCount, stats.KVUserKeyCount)
		}
		if line != lastLine {
			elapsed := time.Since(start).Truncate(100 * time.Millisecond)
			if tty {
				fmt.Fprintf(a.stderr, "\r\033[K[%v] %s", elapsed, line)
			} else {
				fmt.Fprintf(a.stderr, "[%v] %s\n", elapsed, line)
			}
			lastLine = line
		}
		if s.State.IsTerminal() {
			break
		}
	}
	if tty {
		fmt.Fprintln(a.stderr)
	}
	if err := a.printStatus(s); err != nil {
		return err
	}
	if s.State == durable.StateFailed {
		msg := "failed"
		if s.Failure != nil {
			msg = s.Failure.DisplayMessage()
		}
		return failedError("instance %s failed: %s", id, msg)
	}
	return nil
}

// sendCommand is raise and enqueue: both send a payload to an existing
// instance.
func sendCommand(cmd, what string, send func(a *app, id, name string, data any) error) func(a *app, fs *flag.FlagSet) func([]string) error {
	return func(a *app, fs *flag.FlagSet) func([]string) error {
		data := fs.String("data", "", "payload: JSON, or @file")
		raw := fs.Bool("raw", false, "pass the payload verbatim instead of as JSON")
		return func(args []string) error {
			if err := wantArgs(cmd, args, 2, 2, "<instance> <"+what+">"); err != nil {
				return err
			}
			id, name := args[0], args[1]
			v, err := payload("data", *data, *raw)
			if err != nil {
				return err
			}
			if err := a.openForEnqueue(); err != nil {
				return err
			}
			if _, err := a.requireLive(id, cmd); err != nil {
				return err
			}
			if err := send(a, id, name, v); err != nil {
				return a.instanceError(id, err)
			}
			if a.jsonOut() {
				return a.printJSON(map[string]any{"instance": id, what: name, "sent": true})
			}
			verb := map[string]string{"raise": "raised event", "enqueue": "enqueued message on queue"}[cmd]
			fmt.Fprintf(a.stdout, "%s %s for %s\n", verb, name, id)
			return nil
		}
	}
}

var (
	cmdRaise = sendCommand("raise", "event", func(a *app, id, name string, data any) error {
		return a.client.RaiseEvent(a.ctx, id, name, data)
	})
	cmdEnqueue = sendCommand("enqueue", "queue", func(a *app, id, name string, data any) error {
		return a.client.EnqueueEvent(a.ctx, id, name, data)
	})
)

func cmdCancel(a *app, fs *flag.FlagSet) func([]string) error {
	reason := fs.String("reason", "cancelled by duradyn CLI", "cancellation `reason`")
	return func(args []string) error {
		if err := wantArgs("cancel", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		id := args[0]
		if err := a.openForEnqueue(); err != nil {
			return err
		}
		info, err := a.requireLive(id, "cancel")
		if err != nil {
			return err
		}
		if err := a.client.CancelInstance(a.ctx, id, *reason); err != nil {
			return a.instanceError(id, err)
		}
		if a.jsonOut() {
			return a.printJSON(map[string]any{"instance": id, "cancel_requested": true, "status": displayStatus(info)})
		}
		fmt.Fprintf(a.stdout, "cancel requested for %s\n", id)
		return nil
	}
}

// infoJSON is an instance in JSON output.
type infoJSON struct {
	Instance         string     `json:"instance"`
	Orchestration    string     `json:"orchestration"`
	Version          string     `json:"version"`
	Status           string     `json:"status"`
	ExecutionID      uint64     `json:"execution_id"`
	Output           *string    `json:"output,omitempty"`
	Parent           string     `json:"parent,omitempty"`
	CreatedAtMs      uint64     `json:"created_at_ms"`
	UpdatedAtMs      uint64     `json:"updated_at_ms"`
	ExecutionsListed []execJSON `json:"executions,omitempty"`
}

type execJSON struct {
	ExecutionID   uint64  `json:"execution_id"`
	Status        string  `json:"status"`
	Output        *string `json:"output,omitempty"`
	StartedAtMs   uint64  `json:"started_at_ms"`
	CompletedAtMs *uint64 `json:"completed_at_ms,omitempty"`
	Events        int     `json:"events"`
}

func toInfoJSON(i *provider.InstanceInfo) infoJSON {
	return infoJSON{
		Instance: i.InstanceID, Orchestration: i.OrchestrationName, Version: i.OrchestrationVersion,
		Status: displayStatus(i), ExecutionID: i.CurrentExecutionID, Output: i.Output, Parent: i.ParentInstanceID,
		CreatedAtMs: i.CreatedAt, UpdatedAtMs: i.UpdatedAt,
	}
}

// displayStatus is an instance's status as the commands show it: Canceled
// for a cancelled instance, whose stored status is Failed.
func displayStatus(i *provider.InstanceInfo) string {
	return provider.DisplayStatus(i.Status, i.Output)
}

// listJSON is list's JSON output.
type listJSON struct {
	Instances []infoJSON `json:"instances"`
	// Total counts the instances selected, Truncated whether --limit left
	// some out.
	Total     int  `json:"total"`
	Truncated bool `json:"truncated"`
}

// listStatuses are the statuses list filters by, as displayed
// (displayStatus).
var listStatuses = []string{provider.StatusPending, provider.StatusRunning, provider.StatusCompleted,
	provider.StatusFailed, provider.StatusCanceled, provider.StatusContinuedAsNew}

// listStatusHelp names the statuses list filters by.
const listStatusHelp = "Pending, Running, Completed, Failed, Canceled or ContinuedAsNew (any case)"

func cmdList(a *app, fs *flag.FlagSet) func([]string) error {
	status := fs.String("status", "", "only instances with this `status`: "+listStatusHelp)
	limit := fs.Int("limit", 100, "print at most `N` instances")
	return func(args []string) error {
		if err := wantArgs("list", args, 0, 0, "no arguments"); err != nil {
			return err
		}
		if *status != "" {
			i := slices.IndexFunc(listStatuses, func(s string) bool { return strings.EqualFold(s, *status) })
			if i < 0 {
				return usageError("list: --status %q: want %s", *status, listStatusHelp)
			}
			*status = listStatuses[i]
		}
		if *limit < 1 {
			return usageError("list: --limit %d: want at least 1", *limit)
		}
		if err := a.open(false); err != nil {
			return err
		}
		ids, infos, err := a.listed(*status, *limit)
		if err != nil {
			return err
		}
		slices.SortStableFunc(infos, func(x, y *provider.InstanceInfo) int {
			if x.CreatedAt != y.CreatedAt {
				if x.CreatedAt > y.CreatedAt {
					return -1
				}
				return 1
			}
			return strings.Compare(y.InstanceID, x.InstanceID)
		})
		if len(ids) > len(infos) {
			fmt.Fprintf(a.stderr, "duradyn: showing %d of %d instances (raise --limit for more)\n", len(infos), len(ids))
		}
		if a.jsonOut() {
			rows := make([]infoJSON, 0, len(infos))
			for _, i := range infos {
				rows = append(rows, toInfoJSON(i))
			}
			return a.printJSON(listJSON{Instances: rows, Total: len(ids), Truncated: len(ids) > len(infos)})
		}
		tw := a.table()
		fmt.Fprintln(tw, "INSTANCE\tORCHESTRATION\tVERSION\tSTATUS\tEXECUTION\tCREATED\tUPDATED")
		for _, i := range infos {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", i.InstanceID, orDash(i.OrchestrationName), orDash(i.OrchestrationVersion),
				displayStatus(i), i.CurrentExecutionID, fmtMs(i.CreatedAt), fmtMs(i.UpdatedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return nil
	}
}

// listed returns the ids of the instances with status (displayed; "" for
// all) and the InstanceInfo of up to limit of them. Failed and Canceled
// share a stored status, so for those every failed instance is read to
// tell them apart.
func (a *app) listed(status string, limit int) ([]string, []*provider.InstanceInfo, error) {
	var ids []string
	var err error
	switch status {
	case "":
		ids, err = a.client.ListInstances(a.ctx)
	case provider.StatusFailed, provider.StatusCanceled:
		ids, err = a.client.ListInstancesByStatus(a.ctx, provider.StatusFailed)
	default:
		ids, err = a.client.ListInstancesByStatus(a.ctx, status)
	}
	if err != nil {
		return nil, nil, a.awsError(err)
	}
	if status != provider.StatusFailed && status != provider.StatusCanceled {
		infos, err := a.infos(ids, limit, "listed")
		return ids, infos, err
	}
	all, err := a.infos(ids, len(ids), "examined")
	if err != nil {
		return nil, nil, err
	}
	all = slices.DeleteFunc(all, func(i *provider.InstanceInfo) bool { return displayStatus(i) != status })
	ids = ids[:0]
	for _, i := range all {
		ids = append(ids, i.InstanceID)
	}
	return ids, all[:min(len(all), limit)], nil
}

// infos reads InstanceInfo for up to limit of ids, with progress; instances
// deleted meanwhile are skipped.
func (a *app) infos(ids []string, limit int, verb string) ([]*provider.InstanceInfo, error) {
	n := min(len(ids), limit)
	out := make([]*provider.InstanceInfo, 0, n)
	for i, id := range ids[:n] {
		info, err := a.client.InstanceInfo(a.ctx, id)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, a.instanceError(id, err)
		}
		out = append(out, info)
		if (i+1)%a.g.progress == 0 && i+1 < n {
			a.progressf("%s %d/%d instances", verb, i+1, n)
		}
	}
	return out, nil
}

func cmdInfo(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("info", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		id := args[0]
		if err := a.open(false); err != nil {
			return err
		}
		info, err := a.requireInstance(id)
		if err != nil {
			return err
		}
		execIDs, err := a.client.ListExecutions(a.ctx, id)
		if err != nil {
			return a.instanceError(id, err)
		}
		var execs []*provider.ExecutionInfo
		for _, e := range execIDs {
			x, err := a.client.ExecutionInfo(a.ctx, id, e)
			if errors.Is(err, provider.ErrNotFound) {
				continue
			}
			if err != nil {
				return a.instanceError(id, err)
			}
			execs = append(execs, x)
		}
		if a.jsonOut() {
			out := toInfoJSON(info)
			for _, x := range execs {
				out.ExecutionsListed = append(out.ExecutionsListed, execJSON{x.ExecutionID, x.Status, x.Output, x.StartedAt, x.CompletedAt, x.EventCount})
			}
			return a.printJSON(out)
		}
		if err := a.fields(
			"instance", info.InstanceID,
			"orchestration", orDash(info.OrchestrationName),
			"version", orDash(info.OrchestrationVersion),
			"status", displayStatus(info),
			"execution", strconv.FormatUint(info.CurrentExecutionID, 10),
			"parent", orDash(info.ParentInstanceID),
			"created", fmtMs(info.CreatedAt),
			"updated", fmtMs(info.UpdatedAt),
			"output", strPtrOrDash(info.Output),
		); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout)
		tw := a.table()
		fmt.Fprintln(tw, "EXECUTION\tSTATUS\tSTARTED\tCOMPLETED\tEVENTS\tOUTPUT")
		for _, x := range execs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", x.ExecutionID, x.Status, fmtMs(x.StartedAt), fmtMsPtr(x.CompletedAt), x.EventCount, strPtrOrDash(x.Output))
		}
		return tw.Flush()
	}
}

func cmdTree(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("tree", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		id := args[0]
		if err := a.openInstance(id); err != nil {
			return err
		}
		tree, err := a.client.InstanceTree(a.ctx, id)
		if err != nil {
			return a.instanceError(id, err)
		}
		infos := map[string]*provider.InstanceInfo{}
		children := map[string][]string{}
		for _, x := range tree.AllIDs {
			info, err := a.client.InstanceInfo(a.ctx, x)
			if errors.Is(err, provider.ErrNotFound) {
				continue
			}
			if err != nil {
				return a.instanceError(x, err)
			}
			infos[x] = info
			if x != id {
				children[info.ParentInstanceID] = append(children[info.ParentInstanceID], x)
			}
		}
		for _, c := range children {
			slices.Sort(c)
		}
		if a.jsonOut() {
			var rows []infoJSON
			var walk func(string)
			walk = func(x string) {
				if info := infos[x]; info != nil {
					rows = append(rows, toInfoJSON(info))
				}
				for _, c := range children[x] {
					walk(c)
				}
			}
			walk(id)
			return a.printJSON(map[string]any{"root": id, "size": len(rows), "instances": rows})
		}
		tw := a.table()
		fmt.Fprintln(tw, "INSTANCE\tORCHESTRATION\tSTATUS")
		var walk func(x, indent string)
		walk = func(x, indent string) {
			if info := infos[x]; info != nil {
				fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, x, orDash(info.OrchestrationName), info.Status)
			}
			for _, c := range children[x] {
				walk(c, indent+"  ")
			}
		}
		walk(id, "")
		return tw.Flush()
	}
}

func cmdHistory(a *app, fs *flag.FlagSet) func([]string) error {
	execution := fs.Uint64("execution", 0, "execution `id` (default: the latest)")
	all := fs.Bool("all", false, "every execution")
	asJSON := fs.Bool("json", false, "duroxide JSON lines, one event per line (also with --output json)")
	return func(args []string) error {
		if err := wantArgs("history", args, 1, 1, "<instance>"); err != nil {
			return err
		}
		if *all && *execution != 0 {
			return usageError("history: --all and --execution exclude each other")
		}
		id := args[0]
		if err := a.openInstance(id); err != nil {
			return err
		}
		execs := []uint64{*execution}
		if *all {
			ids, err := a.client.ListExecutions(a.ctx, id)
			if err != nil {
				return a.instanceError(id, err)
			}
			execs = ids
		}
		var events []provider.Event
		for _, e := range execs {
			h, err := a.client.History(a.ctx, id, e)
			if err != nil {
				return a.instanceError(id, err)
			}
			if len(h) == 0 && e != 0 {
				return notFoundError("instance %s has no execution %d", id, e)
			}
			events = append(events, h...)
		}
		if *asJSON || a.jsonOut() {
			return writeEventLines(a.stdout, events)
		}
		tw := a.table()
		fmt.Fprintln(tw, "EXEC\tEVENT\tSOURCE\tTIME\tTYPE\tDETAILS")
		for _, e := range events {
			src := "-"
			if e.SourceEventID != nil {
				src = strconv.FormatUint(*e.SourceEventID, 10)
			}
			d, err := eventDetails(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", e.ExecutionID, e.EventID, src, fmtMs(e.TimestampMs), e.Kind.EventType(), d)
		}
		return tw.Flush()
	}
}

func cmdKV(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("kv", args, 1, 2, "<instance> [key]"); err != nil {
			return err
		}
		id := args[0]
		if err := a.openInstance(id); err != nil {
			return err
		}
		if len(args) == 2 {
			v, ok, err := a.client.KVValue(a.ctx, id, args[1])
			if err != nil {
				return a.instanceError(id, err)
			}
			if !ok {
				return notFoundError("instance %s has no KV key %q", id, args[1])
			}
			if a.jsonOut() {
				return a.printJSON(map[string]string{"key": args[1], "value": v})
			}
			fmt.Fprintln(a.stdout, v)
			return nil
		}
		values, err := a.client.KVValues(a.ctx, id)
		if err != nil {
			return a.instanceError(id, err)
		}
		if a.jsonOut() {
			if values == nil {
				values = map[string]string{}
			}
			return a.printJSON(values)
		}
		tw := a.table()
		fmt.Fprintln(tw, "KEY\tVALUE")
		for _, k := range slices.Sorted(mapKeys(values)) {
			fmt.Fprintf(tw, "%s\t%s\n", k, values[k])
		}
		return tw.Flush()
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func cmdMetrics(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("metrics", args, 0, 0, "no arguments"); err != nil {
			return err
		}
		if err := a.open(false); err != nil {
			return err
		}
		m, err := a.client.SystemMetrics(a.ctx)
		if err != nil {
			return a.awsError(err)
		}
		d, err := a.client.QueueDepths(a.ctx)
		if err != nil {
			return a.awsError(err)
		}
		if a.jsonOut() {
			return a.printJSON(map[string]any{
				"total_instances": m.TotalInstances, "running_instances": m.RunningInstances,
				"completed_instances": m.CompletedInstances, "failed_instances": m.FailedInstances,
				"canceled_instances": m.CanceledInstances, "pending_instances": m.PendingInstances,
				"total_executions": m.TotalExecutions, "total_events": m.TotalEvents,
				"orchestrator_queue": d.OrchestratorQueue, "worker_queue": d.WorkerQueue,
			})
		}
		u := func(v uint64) string { return strconv.FormatUint(v, 10) }
		return a.fields(
			"instances", u(m.TotalInstances),
			"  running", u(m.RunningInstances),
			"  completed", u(m.CompletedInstances),
			"  failed", u(m.FailedInstances),
			"    canceled", u(m.CanceledInstances),
			"pending starts", u(m.PendingInstances),
			"executions", u(m.TotalExecutions),
			"events", u(m.TotalEvents),
			"orchestrator queue", strconv.Itoa(d.OrchestratorQueue),
			"worker queue", strconv.Itoa(d.WorkerQueue),
		)
	}
}

// parseBefore reads a --completed-before value: a duration back from now
// or an RFC 3339 time.
func parseBefore(v string) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, usageError("--completed-before %s is negative", v)
		}
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usageError("--completed-before %q: want a duration such as 720h or an RFC 3339 time", v)
	}
	return t, nil
}

// bulkBatch is how many instances one bulk request names at most; fewer
// when progress is reported more often.
const bulkBatch = 25

type deleteJSON struct {
	DryRun     bool     `json:"dry_run,omitempty"`
	Selected   []string `json:"selected,omitempty"`
	Instances  uint64   `json:"instances_deleted"`
	Executions uint64   `json:"executions_deleted"`
	Events     uint64   `json:"events_deleted"`
	Messages   uint64   `json:"queue_messages_deleted"`
}

func toDeleteJSON(r provider.DeleteInstanceResult) deleteJSON {
	return deleteJSON{Instances: r.InstancesDeleted, Executions: r.ExecutionsDeleted, Events: r.EventsDeleted, Messages: r.QueueMessagesDeleted}
}

func (a *app) printDeleted(r provider.DeleteInstanceResult) error {
	if a.jsonOut() {
		return a.printJSON(toDeleteJSON(r))
	}
	fmt.Fprintf(a.stdout, "deleted %d instance(s), %d execution(s), %d event(s), %d queue message(s)\n",
		r.InstancesDeleted, r.ExecutionsDeleted, r.EventsDeleted, r.QueueMessagesDeleted)
	return nil
}

func cmdDelete(a *app, fs *flag.FlagSet) func([]string) error {
	force := fs.Bool("force", false, "delete even if an instance of the tree is running (stored state only; cancel first where possible)")
	before := fs.String("completed-before", "", "bulk: delete finished root instances that completed before `D` (a duration back from now, or an RFC 3339 time)")
	limit := fs.Int("limit", provider.DefaultBulkLimit, "bulk: delete at most `N` instances")
	dryRun := fs.Bool("dry-run", false, "bulk: print what would be deleted and change nothing")
	return func(args []string) error {
		if *before == "" {
			if *dryRun {
				return usageError("delete: --dry-run goes with --completed-before")
			}
			if err := wantArgs("delete", args, 1, 1, "<instance> (or --completed-before D)"); err != nil {
				return err
			}
			id := args[0]
			if err := a.open(false); err != nil {
				return err
			}
			info, err := a.requireInstance(id)
			if err != nil {
				return err
			}
			res, err := a.client.DeleteInstance(a.ctx, id, *force)
			switch {
			case errors.Is(err, provider.ErrSubOrchestration):
				return fmt.Errorf("instance %s is a sub-orchestration of %s: delete its root instead", id, info.ParentInstanceID)
			case errors.Is(err, provider.ErrStillRunning):
				return fmt.Errorf("instance %s (or one of its sub-orchestrations) is running: cancel it first, or pass --force", id)
			case err != nil:
				return a.instanceError(id, err)
			}
			return a.printDeleted(res)
		}
		if *force {
			return usageError("delete: --force goes with a single instance")
		}
		if err := wantArgs("delete", args, 0, 0, "no instance with --completed-before"); err != nil {
			return err
		}
		if *limit < 1 {
			return usageError("delete: --limit %d: want at least 1", *limit)
		}
		cutoff, err := parseBefore(*before)
		if err != nil {
			return err
		}
		if err := a.open(false); err != nil {
			return err
		}
		selected, err := a.selectFinished(cutoff, *limit)
		if err != nil {
			return err
		}
		if *dryRun {
			if a.jsonOut() {
				return a.printJSON(deleteJSON{DryRun: true, Selected: selected})
			}
			fmt.Fprintf(a.stdout, "would delete %d instance(s) with their sub-orchestrations:\n", len(selected))
			for _, id := range selected {
				fmt.Fprintln(a.stdout, id)
			}
			return nil
		}
		var total provider.DeleteInstanceResult
		size := min(bulkBatch, a.g.progress)
		for start := 0; start < len(selected); start += size {
			batch := selected[start:min(start+size, len(selected))]
			res, err := a.client.DeleteInstanceBulk(a.ctx, provider.InstanceFilter{InstanceIDs: batch, CompletedBefore: cutoff, Limit: len(batch)})
			if err != nil {
				return a.awsError(err)
			}
			total = total.Add(res)
			if done := start + len(batch); done < len(selected) {
				a.progressf("deleted %d/%d instances", done, len(selected))
			}
		}
		return a.printDeleted(total)
	}
}

// selectFinished returns up to limit root instances whose current
// execution finished before cutoff, as DeleteInstanceBulk selects them,
// with progress.
func (a *app) selectFinished(cutoff time.Time, limit int) ([]string, error) {
	ids, err := a.client.ListInstances(a.ctx)
	if err != nil {
		return nil, a.awsError(err)
	}
	// Oldest first: ListInstances lists newest first.
	slices.Reverse(ids)
	var selected []string
	for i, id := range ids {
		if len(selected) >= limit {
			break
		}
		if (i+1)%a.g.progress == 0 {
			a.progressf("examined %d/%d instances, %d selected", i+1, len(ids), len(selected))
		}
		info, err := a.client.InstanceInfo(a.ctx, id)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, a.instanceError(id, err)
		}
		if info.ParentInstanceID != "" || (info.Status != provider.StatusCompleted && info.Status != provider.StatusFailed) {
			continue
		}
		x, err := a.client.ExecutionInfo(a.ctx, id, info.CurrentExecutionID)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, a.instanceError(id, err)
		}
		var completed *int64
		if x.CompletedAt != nil {
			c := int64(*x.CompletedAt)
			completed = &c
		}
		if (provider.InstanceFilter{CompletedBefore: cutoff}).Selects(id, completed) {
			selected = append(selected, id)
		}
	}
	slices.Sort(selected)
	return selected, nil
}

type pruneJSON struct {
	Instances  uint64 `json:"instances_processed"`
	Executions uint64 `json:"executions_deleted"`
	Events     uint64 `json:"events_deleted"`
}

func (a *app) printPruned(r provider.PruneResult) error {
	if a.jsonOut() {
		return a.printJSON(pruneJSON{r.InstancesProcessed, r.ExecutionsDeleted, r.EventsDeleted})
	}
	fmt.Fprintf(a.stdout, "pruned %d instance(s): %d execution(s), %d event(s) deleted\n", r.InstancesProcessed, r.ExecutionsDeleted, r.EventsDeleted)
	return nil
}

func cmdPrune(a *app, fs *flag.FlagSet) func([]string) error {
	all := fs.Bool("all", false, "prune every instance")
	keepLast := fs.Uint("keep-last", 1, "keep the `N` latest executions (the current one is always kept)")
	before := fs.String("completed-before", "", "prune only executions that completed before `D` (a duration back from now, or an RFC 3339 time)")
	limit := fs.Int("limit", provider.DefaultBulkLimit, "with --all: prune at most `N` instances")
	dryRun := fs.Bool("dry-run", false, "print the executions that would be pruned and change nothing")
	return func(args []string) error {
		if *all {
			if err := wantArgs("prune", args, 0, 0, "no instance with --all"); err != nil {
				return err
			}
		} else if err := wantArgs("prune", args, 1, 1, "<instance> (or --all)"); err != nil {
			return err
		}
		if *limit < 1 {
			return usageError("prune: --limit %d: want at least 1", *limit)
		}
		if *keepLast > 1<<32-1 {
			return usageError("prune: --keep-last %d is too large", *keepLast)
		}
		opts := provider.PruneOptions{KeepLast: uint32(*keepLast)}
		if *before != "" {
			t, err := parseBefore(*before)
			if err != nil {
				return err
			}
			opts.CompletedBefore = t
		}
		if err := a.open(false); err != nil {
			return err
		}
		if !*all {
			id := args[0]
			if _, err := a.requireInstance(id); err != nil {
				return err
			}
			if *dryRun {
				return a.printPrunePlan([]string{id}, opts)
			}
			res, err := a.client.PruneExecutions(a.ctx, id, opts)
			if err != nil {
				return a.instanceError(id, err)
			}
			return a.printPruned(res)
		}
		ids, err := a.client.ListInstances(a.ctx)
		if err != nil {
			return a.awsError(err)
		}
		ids = ids[:min(len(ids), *limit)]
		if *dryRun {
			return a.printPrunePlan(ids, opts)
		}
		var total provider.PruneResult
		size := min(bulkBatch, a.g.progress)
		for start := 0; start < len(ids); start += size {
			batch := ids[start:min(start+size, len(ids))]
			res, err := a.client.PruneExecutionsBulk(a.ctx, provider.InstanceFilter{InstanceIDs: batch, Limit: len(batch)}, opts)
			if err != nil {
				return a.awsError(err)
			}
			total = total.Add(res)
			if done := start + len(batch); done < len(ids) {
				a.progressf("pruned %d/%d instances", done, len(ids))
			}
		}
		return a.printPruned(total)
	}
}

// openInstance opens the table for reading and checks that instance id
// exists: the start of every command about one instance.
func (a *app) openInstance(id string) error {
	if err := a.open(false); err != nil {
		return err
	}
	_, err := a.requireInstance(id)
	return err
}

// prunePlanJSON is what prune --dry-run selects, in JSON output.
type prunePlanJSON struct {
	DryRun     bool             `json:"dry_run"`
	Instances  []prunePlanEntry `json:"instances"`
	Executions int              `json:"executions"`
}

type prunePlanEntry struct {
	Instance   string   `json:"instance"`
	Executions []uint64 `json:"executions"`
}

// printPrunePlan prints the executions of ids that a prune with opts would
// delete, by the rule the providers apply (provider.ExecutionsToPrune),
// and changes nothing.
func (a *app) printPrunePlan(ids []string, opts provider.PruneOptions) error {
	plan := prunePlanJSON{DryRun: true, Instances: []prunePlanEntry{}}
	for i, id := range ids {
		execs, err := a.prunable(id, opts)
		if err != nil {
			return err
		}
		if len(execs) > 0 {
			plan.Instances = append(plan.Instances, prunePlanEntry{id, execs})
			plan.Executions += len(execs)
		}
		if (i+1)%a.g.progress == 0 && i+1 < len(ids) {
			a.progressf("examined %d/%d instances", i+1, len(ids))
		}
	}
	if a.jsonOut() {
		return a.printJSON(plan)
	}
	fmt.Fprintf(a.stdout, "would prune %d execution(s) of %d instance(s):\n", plan.Executions, len(plan.Instances))
	for _, e := range plan.Instances {
		parts := make([]string, len(e.Executions))
		for i, x := range e.Executions {
			parts[i] = strconv.FormatUint(x, 10)
		}
		fmt.Fprintf(a.stdout, "%s\texecutions %s\n", e.Instance, strings.Join(parts, ","))
	}
	return nil
}

// prunable returns the executions of instance id a prune with opts would
// delete; none for an instance deleted meanwhile.
func (a *app) prunable(id string, opts provider.PruneOptions) ([]uint64, error) {
	info, err := a.client.InstanceInfo(a.ctx, id)
	if errors.Is(err, provider.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, a.instanceError(id, err)
	}
	execIDs, err := a.client.ListExecutions(a.ctx, id)
	if err != nil {
		return nil, a.instanceError(id, err)
	}
	var execs []provider.ExecutionSummary
	for _, e := range execIDs {
		x, err := a.client.ExecutionInfo(a.ctx, id, e)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, a.instanceError(id, err)
		}
		sum := provider.ExecutionSummary{ID: e, Status: x.Status}
		if x.CompletedAt != nil {
			c := int64(*x.CompletedAt)
			sum.CompletedAtMs = &c
		}
		execs = append(execs, sum)
	}
	return provider.ExecutionsToPrune(execs, info.CurrentExecutionID, opts), nil
}
