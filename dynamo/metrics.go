package dynamo

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// SystemMetrics without reading every instance (docs/design.md §5).
//
// Each instance record carries two figures: nx, the instance's executions,
// and xev, the events of those of its executions that have a terminal
// status (counted when a turn gives an execution that status, and added to
// by appends to it afterwards). An instance whose record says it has ended
// (Completed or Failed) contributes to one counter cell, chosen by its id:
// one instance, one of its status, nx executions and xev events. Every
// write of an instance record adds to that cell, in the same transaction,
// the difference between the contribution of the record it writes and that
// of the record it replaces, conditioned on the record being as it read
// it. So the cells always sum the contributions of the records that exist,
// and SystemMetrics reads them (one Query) and then only the instances
// that have not ended, whose instances-index entries sort before those of
// ended ones (keys.EndedListPrefix).

// Counter attributes: of the instance record (nx, xev) and of a cell.
const (
	attrExecCount  = "nx"
	attrEndedEvs   = "xev"
	attrCellInst   = "ni"
	attrCellDone   = "nc"
	attrCellFailed = "nf"
	// A cell's executions and events are nx and xev, as in the record.
)

// figures is what one instance record contributes to the counter cells,
// or a difference of two contributions.
type figures struct {
	instances, completed, failed, executions, events int64
}

// ended reports whether an instance whose current execution has status
// has ended for good: its figures are in the cells, and its
// instances-index entry sorts after those of running instances.
func ended(status string) bool {
	return status == provider.StatusCompleted || status == provider.StatusFailed
}

// contribution is what an instance record contributes to the cells: its
// figures when it has ended, nothing otherwise. m nil is no record.
func contribution(m *metaRow) figures {
	if m == nil || !ended(m.status) {
		return figures{}
	}
	f := figures{instances: 1, executions: int64(m.execs), events: int64(m.events)}
	if m.status == provider.StatusCompleted {
		f.completed = 1
	} else {
		f.failed = 1
	}
	return f
}

// plus is f + sign*g.
func (f figures) plus(sign int64, g figures) figures {
	return figures{
		instances:  f.instances + sign*g.instances,
		completed:  f.completed + sign*g.completed,
		failed:     f.failed + sign*g.failed,
		executions: f.executions + sign*g.executions,
		events:     f.events + sign*g.events,
	}
}

// change is what replacing record before by after changes in a cell.
func change(before, after *metaRow) figures {
	return contribution(after).plus(-1, contribution(before))
}

// cellChange is the transaction action that replaces the contribution of
// instance's record before by that of after in the instance's cell; nil
// when they are the same.
func (p *Provider) cellChange(instance string, before, after *metaRow) *types.Update {
	return p.cellUpdate(keys.MetricsCellOf(instance), change(before, after))
}

// cellChanges collects the cell changes of several records' writes in one
// transaction, which may not write one item twice: one update per cell.
type cellChanges map[int]figures

// add records the change of instance's record from before to after.
func (c cellChanges) add(instance string, before, after *metaRow) {
	k := keys.MetricsCellOf(instance)
	c[k] = c[k].plus(1, change(before, after))
}

// cellActions returns one update per changed cell of c.
func (p *Provider) cellActions(c cellChanges) []types.TransactWriteItem {
	var out []types.TransactWriteItem
	for k := range keys.MetricsCells {
		if u := p.cellUpdate(k, c[k]); u != nil {
			out = append(out, types.TransactWriteItem{Update: u})
		}
	}
	return out
}

// cellUpdate adds d to cell k; nil when d is zero.
func (p *Provider) cellUpdate(k int, d figures) *types.Update {
	if d == (figures{}) {
		return nil
	}
	var terms []string
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	for _, t := range []struct {
		attr string
		v    int64
	}{
		{attrCellInst, d.instances}, {attrCellDone, d.completed}, {attrCellFailed, d.failed},
		{attrExecCount, d.executions}, {attrEndedEvs, d.events},
	} {
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
// from m; another writer's change in between fails it.
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

// readCells sums the counter cells: the figures of every ended instance.
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
		f.instances += d.int(row, attrCellInst)
		f.completed += d.int(row, attrCellDone)
		f.failed += d.int(row, attrCellFailed)
		f.executions += d.int(row, attrExecCount)
		f.events += d.int(row, attrEndedEvs)
	}
	return f, d.err
}

// SystemMetrics counts instances, executions and events. The figures of
// instances that have ended (Completed or Failed) come from the counter
// cells; running instances are read one by one.
//
// Requests: one Query of the cells (32 small items, one page), one Query
// of the instances index per shard for the entries of instances that have
// not ended, and one keys-only Query per such instance. The cost does not
// grow with ended instances. The call is no snapshot: an instance that
// ends while it runs may be left out (it was read as running, then found
// ended, after the cells were read).
func (p *Provider) SystemMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	var m provider.SystemMetrics
	cells, err := p.readCells(ctx)
	if err != nil {
		return m, translate(provider.OpSystemMetrics, err)
	}
	m.TotalInstances = unsigned(cells.instances)
	m.CompletedInstances = unsigned(cells.completed)
	m.FailedInstances = unsigned(cells.failed)
	m.TotalExecutions = unsigned(cells.executions)
	m.TotalEvents = unsigned(cells.events)
	running, err := p.listRunning(ctx)
	if err != nil {
		return m, translate(provider.OpSystemMetrics, err)
	}
	for _, li := range running {
		rows, err := p.queryPartition(ctx, keys.InstancePK(li.id), keys.ExecPrefix, "I", attrSK, attrPruning, attrEventCount, attrStatus)
		if err != nil {
			return m, translate(provider.OpSystemMetrics, err)
		}
		// Execution records sort before the instance record, which sorts
		// before history rows.
		var pruning []uint64
		var execs, events uint64
		status, found := "", false
		for _, row := range rows {
			sk, _, _ := strAttr(row, attrSK)
			switch {
			case sk == keys.Meta:
				status, _, _ = strAttr(row, attrStatus)
				found = true
			case strings.HasPrefix(sk, keys.ExecPrefix):
				if _, ok := row[attrPruning]; ok {
					id, _ := keys.ParseNum20(sk[len(keys.ExecPrefix):])
					pruning = append(pruning, id)
					continue
				}
				execs++
			case isHistorySK(sk):
				if id, _, err := keys.ParseHistorySK(sk); err == nil && slices.Contains(pruning, id) {
					continue
				}
				events += rowEventCount(row)
			}
		}
		if !found || ended(status) {
			// Deleted since it was listed, or ended: the cells hold it.
			continue
		}
		m.CountInstance(status)
		m.TotalExecutions += execs
		m.TotalEvents += events
	}
	return m, nil
}

// unsigned is v, or 0 when negative: each cell sums the contributions of
// records that exist, so no sum is negative unless cells were written by
// something other than this package.
func unsigned(v int64) uint64 { return uint64(max(v, 0)) }
