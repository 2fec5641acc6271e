package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// SystemMetrics from counter cells alone (docs/design.md §5): every write
// of an instance record adds the change of its contribution to one cell,
// in the same transaction, conditioned on the record as read; so the cells
// sum the records that exist. Queued starts (np) are counted by the
// transaction that queues them and uncounted by the one that removes them.

// Counter attributes: of the instance record (nx, xev, cev, xcan) and of a
// cell.
const (
	attrExecCount   = "nx"
	attrEndedEvs    = "xev"
	attrRunEvents   = "cev"
	attrCanceled    = "xcan"
	attrCellInst    = "ni"
	attrCellRunning = "nr"
	attrCellDone    = "nc"
	attrCellFailed  = "nf"
	attrCellCancel  = "nk"
	attrCellPending = "np"
	// A cell's nx and xev sum the records' nx and xev + cev.
)

// figures is one instance record's contribution to the cells, or a
// difference of two.
type figures struct {
	instances, running, completed, failed, canceled, executions, events int64
	// pending counts queued starts, which no record holds (startsChange).
	pending int64
}

// runFigures are the record's figures that only turns set (cev, xcan).
type runFigures struct {
	// events counts the current execution's first-turn events while it
	// runs; 0 once it has a terminal status (they are then in xev).
	events uint64
	// canceled: the current execution failed by cancellation.
	canceled bool
}

// parseRunFigures decodes the run figures of an instance record row.
func parseRunFigures(d *decoder, row item) runFigures {
	return runFigures{events: d.uint(row, attrRunEvents), canceled: d.uint(row, attrCanceled) != 0}
}

// put writes r onto an instance record row; zeros are left out.
func (r runFigures) put(row item) {
	if r.events != 0 {
		row[attrRunEvents] = nu(r.events)
	}
	if r.canceled {
		row[attrCanceled] = nu(1)
	}
}

// runFigures sets the run figures of newMeta, the record a turn writes,
// after its status. They change only with the status or executions, which
// figuresAsRead conditions on; turns in between leave the cell alone.
func (tp *turnPlanner) runFigures(newMeta *metaRow) {
	commit := tp.commit
	before := tp.st.execs[commit.ExecutionID]
	current := commit.ExecutionID == newMeta.current
	switch {
	case newMeta.status != provider.StatusRunning:
		newMeta.run.events = 0
	case current && before == nil:
		newMeta.run.events = uint64(len(commit.HistoryDelta))
	}
	ends := current && commit.Metadata.Status != "" && (before == nil || !provider.IsTerminalStatus(before.status))
	switch {
	case newMeta.status != provider.StatusFailed:
		newMeta.run.canceled = false
	case ends:
		newMeta.run.canceled = provider.FailedByCancellation(commit.HistoryDelta)
	}
}

// ended reports whether status ends an instance for good: its
// instances-index entry then sorts after those of running instances.
func ended(status string) bool {
	return status == provider.StatusCompleted || status == provider.StatusFailed
}

// contribution is what record m (nil: none) contributes to the cells.
func contribution(m *metaRow) figures {
	if m == nil {
		return figures{}
	}
	f := figures{instances: 1, executions: int64(m.execs), events: int64(m.events)}
	switch m.status {
	case provider.StatusRunning:
		f.running = 1
		f.events += int64(m.run.events)
	case provider.StatusCompleted:
		f.completed = 1
	case provider.StatusFailed:
		f.failed = 1
		if m.run.canceled {
			f.canceled = 1
		}
	}
	return f
}

// startsChange is the pending change of a write that queues sent starts
// and removes taken ones.
func startsChange(sent, taken int) figures { return figures{pending: int64(sent - taken)} }

// isStart reports whether a queue row of kind is an instance's start.
func isStart(kind string) bool { return kind == provider.KindStartOrchestration }

// plus is f + sign*g.
func (f figures) plus(sign int64, g figures) figures {
	return figures{
		instances:  f.instances + sign*g.instances,
		running:    f.running + sign*g.running,
		completed:  f.completed + sign*g.completed,
		failed:     f.failed + sign*g.failed,
		canceled:   f.canceled + sign*g.canceled,
		executions: f.executions + sign*g.executions,
		events:     f.events + sign*g.events,
		pending:    f.pending + sign*g.pending,
	}
}

// change is what replacing record before by after changes in a cell.
func change(before, after *metaRow) figures {
	return contribution(after).plus(-1, contribution(before))
}

// cellPicker gives each transaction a cell none of this process's
// transactions in flight holds (on AWS they would cancel each other, as a
// fan-out's first turns do), the least busy, from a random place so that
// processes spread too.
type cellPicker struct {
	mu   sync.Mutex
	busy [keys.MetricsCells]int
}

// take returns the cell for one transaction.
func (c *cellPicker) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := rand.IntN(keys.MetricsCells)
	best := start
	for i := range keys.MetricsCells {
		if k := (start + i) % keys.MetricsCells; c.busy[k] < c.busy[best] {
			best = k
		}
	}
	c.busy[best]++
	return best
}

// done frees cell k of a transaction that was answered.
func (c *cellPicker) done(k int) {
	c.mu.Lock()
	c.busy[k]--
	c.mu.Unlock()
}

// takeCell returns the action adding d to a cell (none when d is zero)
// and the func that frees the cell once the transaction is answered.
func (p *Provider) takeCell(d figures) (actions []types.TransactWriteItem, done func()) {
	if d == (figures{}) {
		return nil, func() {}
	}
	k := p.cells.take()
	return []types.TransactWriteItem{{Update: p.cellUpdate(k, d)}}, func() { p.cells.done(k) }
}

// cellTerms pairs each figure of d with its cell attribute.
func cellTerms(d figures) []struct {
	attr string
	v    int64
} {
	return []struct {
		attr string
		v    int64
	}{
		{attrCellInst, d.instances}, {attrCellRunning, d.running}, {attrCellDone, d.completed},
		{attrCellFailed, d.failed}, {attrCellCancel, d.canceled},
		{attrExecCount, d.executions}, {attrEndedEvs, d.events}, {attrCellPending, d.pending},
	}
}

// cellUpdate adds d to cell k.
func (p *Provider) cellUpdate(k int, d figures) *types.Update {
	var terms []string
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	for _, t := range cellTerms(d) {
		if t.v == 0 {
			continue
		}
		terms = append(terms, "#"+t.attr+" :"+t.attr)
		names["#"+t.attr] = t.attr
		values[":"+t.attr] = n(t.v)
	}
	return &types.Update{
		TableName:                 p.table,
		Key:                       key(keys.MetricsPK, keys.MetricsCellSK(k)),
		UpdateExpression:          aws.String("ADD " + strings.Join(terms, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// figuresAsRead conditions a write of an instance record on its status and
// figures being those of m as read (nil: no record), so the cell change
// computed from m is right. cev and xcan change only with status or nx.
func figuresAsRead(m *metaRow) *rowCondition {
	if m == nil {
		return &rowCondition{expr: "attribute_not_exists(#pk)", names: map[string]string{"#pk": attrPK}}
	}
	c := &rowCondition{
		expr:   "#nx = :nx AND #xev = :xev",
		names:  map[string]string{"#nx": attrExecCount, "#xev": attrEndedEvs},
		values: map[string]types.AttributeValue{":nx": nu(m.execs), ":xev": nu(m.events)},
	}
	if m.status == "" {
		c.expr += " AND attribute_not_exists(#st)"
	} else {
		c.expr += " AND #st = :st"
		c.values[":st"] = s(m.status)
	}
	c.names["#st"] = attrStatus
	return c
}

// and is the conjunction of c and d (their placeholders must differ).
func (c *rowCondition) and(d *rowCondition) *rowCondition {
	out := &rowCondition{expr: "(" + c.expr + ") AND (" + d.expr + ")", names: map[string]string{}, values: map[string]types.AttributeValue{}}
	for _, x := range []*rowCondition{c, d} {
		for k, v := range x.names {
			out.names[k] = v
		}
		for k, v := range x.values {
			out.values[k] = v
		}
	}
	if len(out.values) == 0 {
		out.values = nil
	}
	return out
}

// conditionCheck is a transaction action that checks cond on the row at k.
func (p *Provider) conditionCheck(k item, cond *rowCondition) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 p.table,
		Key:                       k,
		ConditionExpression:       aws.String(cond.expr),
		ExpressionAttributeNames:  cond.names,
		ExpressionAttributeValues: cond.values,
	}}
}

// noStagedTurn conditions a write on no committed large turn still to be
// applied: its staged instance record would overwrite the figures.
func (p *Provider) noStagedTurn(instance string) types.TransactWriteItem {
	return p.conditionCheck(key(keys.InstancePK(instance), keys.Lock),
		&rowCondition{expr: "attribute_not_exists(#turn)", names: map[string]string{"#turn": attrTurn}})
}

// endingEvents is the events of the commit's execution after the turn:
// those read or counted (countEndingHistory) plus the turn's own.
func (t *turnState) endingEvents(commit provider.TurnCommit) uint64 {
	delta := uint64(len(commit.HistoryDelta))
	for _, e := range []*historyEnd{t.histEnd, t.stored} {
		if e != nil && e.exec == commit.ExecutionID {
			return e.events + delta
		}
	}
	return delta
}

// countEndingHistory counts, by a keys-only Query, the stored events of
// the execution a turn ends when its fetch did not decode that history;
// a turn creating the record also counts executions that ended before.
func (p *Provider) countEndingHistory(ctx context.Context, turn *turnState, commit provider.TurnCommit) error {
	if turn.st.meta == nil && commit.Metadata.OrchestrationName != "" {
		// Executions ended without a record (acked without a name, which
		// no runtime sends).
		turn.unrecorded = 0
		for id, e := range turn.st.execs {
			if e.pruning || id == commit.ExecutionID || !provider.IsTerminalStatus(e.status) {
				continue
			}
			events, err := p.executionEvents(ctx, turn.st.id, id)
			if err != nil {
				return err
			}
			turn.unrecorded += events
		}
	}
	if !provider.IsTerminalStatus(commit.Metadata.Status) {
		return nil
	}
	for _, e := range []*historyEnd{turn.histEnd, turn.stored} {
		if e != nil && e.exec == commit.ExecutionID {
			return nil
		}
	}
	events, err := p.executionEvents(ctx, turn.st.id, commit.ExecutionID)
	if err != nil {
		return err
	}
	turn.stored = &historyEnd{exec: commit.ExecutionID, events: events}
	return nil
}

// executionEvents counts an execution's events: one keys-only Query (a
// page per MB of history).
func (p *Provider) executionEvents(ctx context.Context, instance string, executionID uint64) (uint64, error) {
	prefix := keys.HistoryPrefix(executionID)
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), prefix, prefixEnd(prefix), attrSK, attrEventCount)
	if err != nil {
		return 0, err
	}
	var events uint64
	for _, row := range rows {
		if sk, _, _ := strAttr(row, attrSK); isHistorySK(sk) {
			events += rowEventCount(row)
		}
	}
	return events, nil
}

// readCells sums the counter cells: the figures of every instance record.
func (p *Provider) readCells(ctx context.Context) (figures, error) {
	rows, err := p.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 p.table,
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(keys.MetricsPK)},
		ConsistentRead:            aws.Bool(true),
	})
	var f figures
	if err != nil {
		return f, err
	}
	var d decoder
	for _, row := range rows {
		f = f.plus(1, figures{
			instances: d.int(row, attrCellInst), running: d.int(row, attrCellRunning),
			completed: d.int(row, attrCellDone), failed: d.int(row, attrCellFailed), canceled: d.int(row, attrCellCancel),
			executions: d.int(row, attrExecCount), events: d.int(row, attrEndedEvs),
			pending: d.int(row, attrCellPending),
		})
	}
	return f, d.err
}

// SystemMetrics counts instances by their current execution's status
// (canceled ones among the failed), executions and events, from the
// counter cells alone. Instance, execution and PendingInstances (queued
// starts no turn has taken) counts are exact and current. TotalEvents is
// a lower bound: a running execution counts only its first turn's events
// until it ends. A figure whose cells sum below zero, which no write of
// the provider leaves, is reported as 0 and logged as a warning.
//
// Requests: one consistent Query of 32 small cells (1 RRU), whatever the
// table holds.
func (p *Provider) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	cells, err := p.readCells(ctx)
	if err != nil {
		return provider.SystemMetrics{}, translate(provider.OpSystemMetrics, err)
	}
	if neg := cells.negative(); len(neg) > 0 {
		p.o.Logger.Warn("dynamo: counter cells sum below zero; SystemMetrics reports 0 for those figures", "figures", neg)
	}
	return provider.SystemMetrics{
		TotalInstances:     unsigned(cells.instances),
		TotalExecutions:    unsigned(cells.executions),
		RunningInstances:   unsigned(cells.running),
		CompletedInstances: unsigned(cells.completed),
		FailedInstances:    unsigned(cells.failed),
		CanceledInstances:  unsigned(cells.canceled),
		PendingInstances:   unsigned(cells.pending),
		TotalEvents:        unsigned(cells.events),
	}, nil
}

// unsigned is v, or 0 when negative.
func unsigned(v int64) uint64 { return uint64(max(v, 0)) }

// negative names f's figures below zero: a change applied twice, or cells
// written by something else. Nothing the provider writes should leave one.
func (f figures) negative() []string {
	var neg []string
	for _, c := range []struct {
		name string
		v    int64
	}{{"instances", f.instances}, {"running", f.running}, {"completed", f.completed}, {"failed", f.failed},
		{"canceled", f.canceled}, {"executions", f.executions}, {"events", f.events}, {"pending", f.pending}} {
		if c.v < 0 {
			neg = append(neg, fmt.Sprintf("%s=%d", c.name, c.v))
		}
	}
	return neg
}
