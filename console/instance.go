package console

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/duradyn/duradyn/provider"
)

// maxExecutionsShown is how many executions (newest) the instance page
// lists.
const maxExecutionsShown = 25

// instanceData is the instance page's.
type instanceData struct {
	Info          *provider.InstanceInfo
	Status        string
	Exec          uint64 // the execution shown
	Current       bool   // whether it is the current one
	Input         payload
	Output        *payload
	Failure       *failureView
	CustomStatus  *payload
	CustomVersion uint64
	KV            []kvEntry
	Executions    []execView
	MoreExecs     int
	Tree          *treeNode
	TreeMore      int
	Timeline      timeline
	Events        []eventRow
	EventsMore    int
	Waiting       []waitItem
	Live          bool // whether actions that need a live instance apply
	Root          bool // whether it can be deleted (a root)
}

// failureView is a failure's category and message.
type failureView struct {
	Category, Message string
	Details           payload
}

// kvEntry is one KV key.
type kvEntry struct {
	Key   string
	Value payload
}

// execView is one execution.
type execView struct {
	provider.ExecutionInfo
	Status   string
	Selected bool
}

// handleInstance serves the instance page.
func (c *Console) handleInstance(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	id := r.URL.Query().Get("id")
	if id == "" {
		c.fail(w, r, "instance", fmt.Errorf("%w: no instance id", errBadRequest))
		return
	}
	var exec uint64
	if s := r.URL.Query().Get("exec"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			c.fail(w, r, "instance", fmt.Errorf("%w: exec %q", errBadRequest, s))
			return
		}
		exec = n
	}
	d, err := c.instanceData(ctx, id, exec)
	if err != nil {
		c.fail(w, r, "instance "+truncate(id, 200), err)
		return
	}
	p := page{Title: truncate(id, 80), Nav: "instances", RefreshMs: c.refreshMs(), Notice: doneNotice(r)}
	if c.o.AllowActions {
		p.CSRF = c.csrfToken(w, r)
	}
	c.render(w, r, "instance.html", p, d)
}

// instanceData reads what the instance page shows of execution exec (0:
// the current one).
func (c *Console) instanceData(ctx context.Context, id string, exec uint64) (*instanceData, error) {
	info, err := c.admin.InstanceInfo(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("instance info: %w", err)
	}
	d := &instanceData{Info: info, Exec: exec}
	if d.Exec == 0 {
		d.Exec = info.CurrentExecutionID
	}
	d.Current = d.Exec == info.CurrentExecutionID
	var history []provider.Event
	if d.Exec != 0 {
		if history, err = c.admin.ReadHistoryWithExecutionID(ctx, id, d.Exec); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	var failure provider.ErrorDetails
	for _, e := range history {
		switch k := e.Kind.(type) {
		case provider.OrchestrationStarted:
			d.Input = newPayload(k.Input)
		case provider.OrchestrationFailed:
			failure = k.Details
		}
	}
	d.Status = displayStatus(info.Status, failure, info.Output)
	d.Live = info.Status != provider.StatusCompleted && info.Status != provider.StatusFailed
	d.Root = info.ParentInstanceID == ""
	c.setOutcome(d, info, history, failure)
	if err := c.readExtras(ctx, d); err != nil {
		return nil, err
	}
	d.Timeline = buildTimeline(history, c.o.Now().UnixMilli(), c.o.MaxTimelineRows, id)
	d.Events, d.EventsMore = eventRows(history, c.o.MaxEvents, id)
	if d.Current && d.Live {
		d.Waiting = waitingFor(history, id)
	}
	return d, nil
}

// setOutcome sets the output or failure of the execution shown.
func (c *Console) setOutcome(d *instanceData, info *provider.InstanceInfo, history []provider.Event, failure provider.ErrorDetails) {
	if failure != nil {
		d.Failure = &failureView{Category: failure.Category(), Message: failure.DisplayMessage(), Details: jsonPayload(failure)}
		return
	}
	for _, e := range slices.Backward(history) {
		switch k := e.Kind.(type) {
		case provider.OrchestrationCompleted:
			p := newPayload(k.Output)
			d.Output = &p
			return
		case provider.OrchestrationContinuedAsNew:
			p := newPayload(k.Input)
			d.Output = &p
			return
		}
	}
	if d.Current && info.Output != nil && info.Status != provider.StatusRunning {
		p := newPayload(*info.Output)
		d.Output = &p
	}
}

// readExtras reads the custom status, KV, executions and tree.
func (c *Console) readExtras(ctx context.Context, d *instanceData) error {
	id := d.Info.InstanceID
	p := c.client.Provider()
	if d.Info.Status != statusPending {
		cs, err := p.CustomStatus(ctx, id, 0)
		if err != nil {
			return fmt.Errorf("custom status: %w", err)
		}
		if cs != nil && cs.Status != nil {
			v := newPayload(*cs.Status)
			d.CustomStatus, d.CustomVersion = &v, cs.Version
		}
		kv, err := p.KVValues(ctx, id)
		if err != nil {
			return fmt.Errorf("KV: %w", err)
		}
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			d.KV = append(d.KV, kvEntry{Key: k, Value: newPayload(kv[k])})
		}
	}
	if err := c.readExecutions(ctx, d); err != nil {
		return err
	}
	tree, more, err := c.instanceTree(ctx, d.Info)
	if err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	d.Tree, d.TreeMore = tree, more
	return nil
}

// readExecutions lists the newest executions.
func (c *Console) readExecutions(ctx context.Context, d *instanceData) error {
	ids, err := c.admin.ListExecutions(ctx, d.Info.InstanceID)
	if err != nil {
		return fmt.Errorf("executions: %w", err)
	}
	if len(ids) > maxExecutionsShown {
		d.MoreExecs = len(ids) - maxExecutionsShown
		ids = ids[len(ids)-maxExecutionsShown:]
	}
	for _, x := range slices.Backward(ids) {
		info, err := c.admin.ExecutionInfo(ctx, d.Info.InstanceID, x)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("execution %d: %w", x, err)
		}
		d.Executions = append(d.Executions, execView{ExecutionInfo: *info, Selected: x == d.Exec,
			Status: displayStatus(info.Status, nil, info.Output)})
	}
	return nil
}
