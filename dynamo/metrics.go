package dynamo

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// SystemMetrics from counter cells alone (docs/design.md §5): one Query,
// whatever the table holds.
//
// Each instance record carries its figures: nx, the instance's executions;
// xev, the events of those of its executions that have a terminal status
// (counted when a turn gives an execution that status, and added to by
// appends to it afterwards); cev, the events of the current execution
// counted while it runs (those of the turn that started it); and xcan, set
// when the current execution failed by cancellation. Every instance record
// contributes to the counter cells: one instance, one of
// its status (Running, Completed, Failed; Canceled as well for a canceled
// failure), nx executions and xev + cev events. Every write of an instance
// record adds to a cell, in the same transaction, the difference between
// the contribution of the record it writes and that of the record it
// replaces, conditioned on the record being as it read it. So the cells
// always sum the contributions of the records that exist, and
// SystemMetrics reads them alone. Which cell takes a change does not
// matter to the sum: the writer picks one that none of its transactions
// in flight writes (cellPicker). A turn changes the contribution only
// when it starts or ends an execution (or creates the record): the turns
// between write no cell. The cells also count the queued start
// messages (np): a start is counted in the transaction that queues it (a
// client's enqueue, a parent's turn) and uncounted in the one that
// consumes it (a turn, whose delete of it is conditioned on the row as
// read) or deletes it (a delete, likewise conditioned).

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
	// A cell's executions and events are nx and xev, as in the record
	// (its xev sums the records' xev and cev).
)

// figures is what one instance record contributes to the counter cells,
// or a difference of two contributions.
type figures struct {
	instances, running, completed, failed, canceled, executions, events int64
	// pending counts queued start messages, which no instance record
	// holds: +1 in the transaction that writes one, -1 in the one that
	// consumes or deletes it (startsChange).
	pending int64
}

// runFigures are the figures of an instance record that turns alone set
// (turnPlanner.runFigures).
type runFigures struct {
	// events is the number of events of the current execution counted
	// while it runs: those of the turn that started it; 0 once it has a
	// terminal status (its events are then in the record's xev).
	events uint64
	// canceled reports that the current execution failed by
	// cancellation.
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

// runFigures sets the run figures of newMeta, the instance record a turn
// writes, once figures has set its status and figures: the events of the
// execution the turn starts while it runs, and whether the execution the
// turn ends failed by cancellation. Both change only in a write that
// changes the record's status or executions, on which figuresAsRead
// conditions it; the turns in between leave them, and the cell, alone.
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

// ended reports whether an instance whose current execution has status
// has ended for good: its instances-index entry sorts after those of
// running instances.
func ended(status string) bool {
	return status == provider.StatusCompleted || status == provider.StatusFailed
}

// contribution is what an instance record contributes to the cells
// (nothing when m is nil, no record).
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

// startsChange is the change of the pending figure for a write that
// queues sent start messages and removes taken ones.
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

// cellPicker picks the counter cell of each of this process's
// transactions that changes one. On AWS two transactions in flight on one
// item cancel each other (TransactionConflict), and the children a
// fan-out starts make their first turns at once: so a transaction takes a
// cell that none of this process's transactions in flight holds, the
// least busy, from a random place so that processes spread too.
type cellPicker struct {
	mu   sync.Mutex
	busy [keys.MetricsCells]int
}

// take returns the cell for one transaction; done frees it once the
// transaction is answered.
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

// takeCell returns the transaction action that adds d to a counter cell
// (none when d is zero) and the func that frees the cell once the
// transaction is answered.
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
// figures being those of m, which the writer read (nil: no record). A
// write that changes them adds the difference to the cell it computed
// from m; another writer's change in between fails it. The run figures
// (cev, xcan) change only in writes that change the status or nx
// (turnPlanner.runFigures), so these conditions cover them too.
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

// noStagedTurn conditions a write on the instance's lock row holding no
// committed large turn whose staged writes (its instance record among
// them) are still to be applied: a prune or an append that changed the
// record's figures in between would be overwritten.
func (p *Provider) noStagedTurn(instance string) types.TransactWriteItem {
	return p.conditionCheck(key(keys.InstancePK(instance), keys.Lock),
		&rowCondition{expr: "attribute_not_exists(#turn)", names: map[string]string{"#turn": attrTurn}})
}

// endingEvents is the number of events the history of the commit's
// execution holds after the turn: what the fetch read, or what
// countEndingHistory counted, and the turn's own.
func (t *turnState) endingEvents(commit provider.TurnCommit) uint64 {
	delta := uint64(len(commit.HistoryDelta))
	for _, e := range []*historyEnd{t.histEnd, t.stored} {
		if e != nil && e.exec == commit.ExecutionID {
			return e.events + delta
		}
	}
	return delta
}

// countEndingHistory counts the stored events of the execution a turn
// gives a terminal status when its fetch did not decode that history (the
// turn was fetched by another process, or its history did not decode): a
// keys-only Query, once per execution that ends. A turn that creates the
// instance record also counts the events of executions that ended before
// it.
func (p *Provider) countEndingHistory(ctx context.Context, turn *turnState, commit provider.TurnCommit) error {
	if turn.st.meta == nil && commit.Metadata.OrchestrationName != "" {
		// The turn creates the instance record: count the executions that
		// ended without one (turns acked without a name; no runtime sends
		// them, so this costs nothing in practice).
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

// executionEvents counts the events of an execution's history: one
// keys-only Query (a page per megabyte of history).
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

// SystemMetrics counts instances by the status of their current
// execution (canceled ones among the failed), their executions and
// events, from the counter cells alone. Instance and execution counts are
// exact and current: the cells move in the transactions that write the
// instance records. TotalEvents counts every event of the executions with
// a terminal status and, of each running execution, the events of the
// turn that started it: the rest are added when it ends, so that turns in
// between write no counter. PendingInstances counts the queued start
// messages no turn has taken: the cells count each in the transaction
// that queues it and in the one that consumes or deletes it.
//
// Requests: one consistent Query of the cells (32 small items: one page,
// 1 RRU), whatever the table holds: the same with no instance and with a
// million running ones.
func (p *Provider) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	cells, err := p.readCells(ctx)
	if err != nil {
		return provider.SystemMetrics{}, translate(provider.OpSystemMetrics, err)
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

// unsigned is v, or 0 when negative: the cells sum the contributions of
// records that exist, so no sum is negative unless cells were written by
// something other than this package.
func unsigned(v int64) uint64 { return uint64(max(v, 0)) }
