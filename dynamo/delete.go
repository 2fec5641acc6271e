package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// doomed is everything stored about one instance that a delete removes.
type doomed struct {
	st *instanceState
	// rows are the keys of the instance's partition and worker rows.
	rows []item
	// starts marks the queued starts among rows, which the cells count.
	starts   map[string]bool
	children []string
	events   uint64
	queued   uint64
}

// settled returns st, or, when a committed large turn is pending on it,
// the state read again after finishing that turn (rollForward): a delete,
// a prune or an append must see the turn whole (the children it started
// linked, the messages it consumed gone), and a turn whose committer died
// may have no fetch to finish it.
func (p *Provider) settled(ctx context.Context, st *instanceState) (*instanceState, error) {
	if st.lock.turn == "" {
		return st, nil
	}
	if err := p.rollForward(ctx, st.id, st.lock.turn); err != nil {
		return nil, err
	}
	return p.loadState(ctx, st.id)
}

// collect reads instance's control rows and the keys a delete removes.
func (p *Provider) collect(ctx context.Context, instance string) (*doomed, error) {
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return nil, err
	}
	if st, err = p.settled(ctx, st); err != nil {
		return nil, err
	}
	pk := keys.InstancePK(instance)
	rows, err := p.queryPartition(ctx, pk, "#", "\U0010FFFF", attrPK, attrSK, attrChild, attrEventCount, attrKind)
	if err != nil {
		return nil, err
	}
	workers, err := p.queryPartition(ctx, keys.WorkerPK(instance), "0", "\U0010FFFF", attrPK, attrSK)
	if err != nil {
		return nil, err
	}
	d := &doomed{st: st, starts: map[string]bool{}}
	for _, row := range rows {
		sk, _, _ := strAttr(row, attrSK)
		switch {
		case strings.HasPrefix(sk, keys.ChildPrefix), strings.HasPrefix(sk, keys.ChildHashedPrefix):
			child, _, _ := strAttr(row, attrChild)
			d.children = append(d.children, child)
		case isHistorySK(sk):
			d.events += rowEventCount(row)
		case strings.HasPrefix(sk, keys.QueuePrefix):
			d.queued++
			if kind, _, _ := strAttr(row, attrKind); isStart(kind) {
				d.starts[sk] = true
			}
		}
		d.rows = append(d.rows, key(pk, sk))
		delete(row, attrChild)
	}
	for _, row := range workers {
		sk, _, _ := strAttr(row, attrSK)
		d.rows = append(d.rows, key(keys.WorkerPK(instance), sk))
		d.queued++
	}
	return d, nil
}

// DeleteInstancesAtomic deletes every listed instance with all its data
// (history, executions, both queues' messages, locks, KV, custom status,
// child links), all or nothing; sessions are kept. Without force, a running
// instance fails the call with [provider.ErrStillRunning]. An unlisted
// child of a listed instance, also one a turn started after the read,
// fails it with [provider.ErrTreeChanged]. At most 49 instances go at once,
// fewer with queued starts; more fail with [provider.ErrInvalidInput]. A
// delete that meets a record, lock or queued start changed since its read
// reads again, so two deletes of one instance both succeed; four changed
// reads in a row fail it as retryable.
//
// Requests: three Queries per instance, then one TransactWriteItems; a
// larger deletion commits the metadata and lock rows in it and removes the
// rest in batches (docs/design.md §5, Deletion).
func (p *Provider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (provider.DeleteInstanceResult, error) {
	return p.deleteInstances(ctx, provider.OpDeleteInstancesAtomic, ids, force, 1)
}

// deleteInstances implements DeleteInstancesAtomic; tries counts reads.
func (p *Provider) deleteInstances(ctx context.Context, op string, ids []string, force bool, tries int) (provider.DeleteInstanceResult, error) {
	var set []string
	for _, id := range ids {
		if !slices.Contains(set, id) {
			set = append(set, id)
		}
	}
	if len(set) == 0 {
		return provider.DeleteInstanceResult{}, nil
	}
	all, err := p.collectDeletable(ctx, op, set, force)
	if err != nil {
		return provider.DeleteInstanceResult{}, err
	}
	res, commit, rest, change := p.deleteActions(all, set)
	cell, done := p.takeCell(change)
	defer done()
	commit = append(commit, cell...)
	if len(commit)+len(rest) <= maxTransactActions {
		commit, rest = append(commit, rest...), nil
	}

	if len(commit) > maxTransactActions {
		return provider.DeleteInstanceResult{}, provider.Permanent(op, fmt.Errorf("%w: %w", provider.ErrInvalidInput, errOverOneTransaction),
			"deleting %d instances at once removes %d metadata, lock and queued-start rows, which must go in one transaction of at most %d: delete fewer at a time (at most %d without queued starts; DeleteInstanceBulk deletes larger trees in parts)",
			len(set), len(commit), maxTransactActions, maxAtomicDelete)
	}
	// No metadata or lock rows means no instance (a lagging listing may
	// name such ids): only loose rows remain.
	if len(commit) > 0 {
		if err := p.sendFresh(ctx, op, commit); err != nil {
			if i := conditionFailedAt(cancelReasons(err)); i >= 0 && commit[i].Delete != nil && readAgain(commit[i].Delete.Key) {
				if tries < maxDeleteTries {
					return p.deleteInstances(ctx, op, ids, force, tries+1)
				}
				return provider.DeleteInstanceResult{}, provider.Retryable(op, err,
					"the instances changed between the read and the delete %d times in a row (turns or other deletes running on them); retry", tries)
			}
			return provider.DeleteInstanceResult{}, translate(op, err)
		}
	}
	for _, id := range set {
		p.hints.unlocked(id)
	}
	reqs := make([]types.WriteRequest, 0, len(rest))
	for _, a := range rest {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: a.Delete.Key}})
	}
	if err := p.batchWrite(ctx, reqs); err != nil {
		return res, translate(op, err)
	}
	return res, nil
}

// collectDeletable collects set in order, failing before any write on an
// instance running without force or with a child outside set.
func (p *Provider) collectDeletable(ctx context.Context, op string, set []string, force bool) ([]*doomed, error) {
	all := make([]*doomed, 0, len(set))
	for _, id := range set {
		d, err := p.collect(ctx, id)
		if err != nil {
			return nil, translate(op, err)
		}
		if !force {
			if e := d.st.currentExec(); e != nil && e.status == provider.StatusRunning {
				return nil, provider.StillRunning(op, id)
			}
		}
		for _, c := range d.children {
			if !slices.Contains(set, c) {
				return nil, provider.TreeChanged(op, id, c)
			}
		}
		all = append(all, d)
	}
	return all, nil
}

// readAgain reports whether a delete whose condition on row k failed
// reads again: an instance record, a running instance's lock row (a turn
// committed and may have started a child) or a queued start changed.
func readAgain(k item) bool {
	pk, _, _ := strAttr(k, attrPK)
	sk, _, _ := strAttr(k, attrSK)
	return strings.HasPrefix(pk, keys.InstancePrefix) && (sk == keys.Meta || sk == keys.Lock || strings.HasPrefix(sk, keys.QueuePrefix))
}

// deleteActions splits the deletes into the commit (every metadata and
// lock row and queued start: one transaction) and the rest, and counts
// what they remove; cell is the counter cells' change. A running
// instance's lock row goes only at the version read: a turn since may have
// started a child (docs/design.md §5, Deletion).
func (p *Provider) deleteActions(all []*doomed, set []string) (res provider.DeleteInstanceResult, commit, rest []types.TransactWriteItem, cell figures) {
	for _, d := range all {
		running := false
		if e := d.st.currentExec(); e != nil && e.status == provider.StatusRunning {
			running = true
		}
		if d.st.meta != nil {
			res.InstancesDeleted++
			if parent := d.st.meta.parent; parent != "" && !slices.Contains(set, parent) {
				rest = append(rest, deleteAction(p.table, key(keys.InstancePK(parent), keys.ChildSK(d.st.id))))
			}
		}
		res.ExecutionsDeleted += uint64(len(d.st.execs))
		res.EventsDeleted += d.events
		res.QueueMessagesDeleted += d.queued
		for _, row := range d.rows {
			sk, _, _ := strAttr(row, attrSK)
			a := deleteAction(p.table, row)
			switch {
			case (sk == keys.Meta || sk == keys.Lock) && strings.HasPrefix(row[attrPK].(*types.AttributeValueMemberS).Value, keys.InstancePrefix):
				if sk == keys.Lock && running {
					a.Delete.ConditionExpression = aws.String("#ver = :ver")
					a.Delete.ExpressionAttributeNames = map[string]string{"#ver": attrLockVer}
					a.Delete.ExpressionAttributeValues = map[string]types.AttributeValue{":ver": nu(d.st.lock.ver)}
				}
				if sk == keys.Meta {
					// Only as read, absent included: a first turn may
					// commit between the reads.
					c := figuresAsRead(d.st.meta)
					a.Delete.ConditionExpression = aws.String(c.expr)
					a.Delete.ExpressionAttributeNames, a.Delete.ExpressionAttributeValues = c.names, c.values
					cell = cell.plus(1, change(d.st.meta, nil))
				}
				commit = append(commit, a)
			case d.starts[sk]:
				// It leaves the pending count only if no turn consumed it.
				a.Delete.ConditionExpression = aws.String(rowExists.expr)
				a.Delete.ExpressionAttributeNames = rowExists.names
				cell = cell.plus(1, startsChange(0, 1))
				commit = append(commit, a)
			default:
				rest = append(rest, a)
			}
		}
	}
	return res, commit, rest, cell
}

// maxAtomicDelete is the most instances one delete transaction takes: two
// rows each and the counter cell.
const maxAtomicDelete = (maxTransactActions - 1) / 2

// maxDeleteTries bounds the reads of a delete whose instances keep changing.
const maxDeleteTries = 4

func deleteAction(table *string, k item) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{TableName: table, Key: k}}
}

// selectInstances returns the listed instances that filter selects, oldest
// first; keep further restricts the candidates.
func (p *Provider) selectInstances(ctx context.Context, filter provider.InstanceFilter, keep func(listedInstance) bool) ([]listedInstance, error) {
	if filter.InstanceIDs != nil && len(filter.InstanceIDs) == 0 {
		return nil, nil
	}
	all, err := p.listInstances(ctx)
	if err != nil {
		return nil, err
	}
	var out []listedInstance
	for _, li := range all {
		if len(out) >= filter.EffectiveLimit() {
			break
		}
		var completedAt *int64
		if li.completedAt != 0 {
			completedAt = &li.completedAt
		}
		if !filter.Selects(li.id, completedAt) {
			continue
		}
		if keep != nil && !keep(li) {
			continue
		}
		out = append(out, li)
	}
	return out, nil
}

// DeleteInstanceBulk deletes the root instances filter selects whose
// current execution is terminal, each with its whole tree (forced);
// running instances and sub-orchestrations are skipped. InstancesDeleted
// counts every instance of every tree; filter's limit counts the roots
// deleted, not gone ones a lagging index still lists.
func (p *Provider) DeleteInstanceBulk(ctx context.Context, filter provider.InstanceFilter) (provider.DeleteInstanceResult, error) {
	limit := filter.EffectiveLimit()
	unlimited := filter
	unlimited.Limit = math.MaxInt
	roots, err := p.selectInstances(ctx, unlimited, func(li listedInstance) bool {
		return li.parent == "" && provider.IsTerminalStatus(li.status)
	})
	if err != nil {
		return provider.DeleteInstanceResult{}, translate(provider.OpDeleteInstanceBulk, err)
	}
	var total provider.DeleteInstanceResult
	deletedRoots := 0
	for _, root := range roots {
		if deletedRoots == limit {
			break
		}
		tree, err := provider.GetInstanceTree(ctx, p, root.id)
		if err != nil {
			return total, err
		}
		// Atomic parts, descendants first (AllIDs lists ancestors first):
		// a failure leaves a tree that deleting its root again finishes.
		var removed uint64
		ids := tree.AllIDs
		for end := len(ids); end > 0; end -= maxAtomicDelete {
			res, err := p.deletePart(ctx, ids[max(0, end-maxAtomicDelete):end])
			total = total.Add(res)
			removed += res.InstancesDeleted
			if err != nil {
				return total, err
			}
		}
		if removed > 0 {
			deletedRoots++ // else listed, but deleted already: the index lags
		}
	}
	return total, nil
}

// errOverOneTransaction fails a delete whose commit exceeds a transaction.
var errOverOneTransaction = errors.New("more rows than one transaction takes")

// deletePart deletes part of a tree (ancestors listed first) atomically,
// or in halves, descendants first, when queued starts make it too large.
func (p *Provider) deletePart(ctx context.Context, part []string) (provider.DeleteInstanceResult, error) {
	res, err := p.deleteInstances(ctx, provider.OpDeleteInstanceBulk, part, true, 1)
	if len(part) == 1 || !errors.Is(err, errOverOneTransaction) {
		return res, err
	}
	mid := len(part) / 2
	res, err = p.deletePart(ctx, part[mid:])
	if err != nil {
		return res, err
	}
	first, err := p.deletePart(ctx, part[:mid])
	return res.Add(first), err
}

// PruneExecutions deletes the history and records of the instance's old
// executions: never the current or a running one, keeping the
// options.KeepLast highest ids and, with options.CompletedBefore, only
// those that completed before it. KV data is not touched. Unknown
// instances fail with [provider.ErrNotFound].
//
// Each execution goes at once for readers: a large one is first flagged
// pruning; flags a failed prune leaves are finished by the next prune,
// whatever its options. Requests: docs/design.md §5.
func (p *Provider) PruneExecutions(ctx context.Context, instance string, options provider.PruneOptions) (provider.PruneResult, error) {
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return provider.PruneResult{}, translate(provider.OpPruneExecutions, err)
	}
	if st.meta == nil {
		return provider.PruneResult{}, provider.InstanceNotFound(provider.OpPruneExecutions, instance)
	}
	res, err := p.prune(ctx, provider.OpPruneExecutions, st, options)
	if err != nil {
		return res, translate(provider.OpPruneExecutions, err)
	}
	return res, nil
}

// pruned is one execution a prune removes: its history keys and events.
type pruned struct {
	id      uint64
	rows    []item
	events  uint64
	flagged bool
	// terminal: its events are among the instance record's figures.
	terminal bool
}

// pruneUnit is one execution's delete or flag in a prune transaction.
type pruneUnit struct {
	e       *pruned
	actions []types.TransactWriteItem
	flag    bool
}

// prune prunes one existing instance, reading it again when a transaction
// meets a change since the read (a turn, another prune, a delete).
func (p *Provider) prune(ctx context.Context, op string, st *instanceState, options provider.PruneOptions) (provider.PruneResult, error) {
	total := provider.PruneResult{InstancesProcessed: 1}
	for try := 1; ; try++ {
		var err error
		if st, err = p.settled(ctx, st); err != nil {
			return total, err
		}
		if st.meta == nil {
			return total, nil // deleted meanwhile
		}
		res, err := p.pruneOnce(ctx, op, st, options)
		total.ExecutionsDeleted += res.ExecutionsDeleted
		total.EventsDeleted += res.EventsDeleted
		if !errors.Is(err, errPruneRaced) {
			return total, err
		}
		if try == maxPruneTries {
			return total, provider.Retryable(op, err, "instance %q changed while it was pruned, %d times", st.id, try)
		}
		if st, err = p.loadState(ctx, st.id); err != nil {
			return total, err
		}
	}
}

// errPruneRaced reports a prune transaction refused for a changed record.
var errPruneRaced = errors.New("instance changed since the prune read it")

// maxPruneTries bounds the reads of a prune that keeps meeting changes.
const maxPruneTries = 4

// pruneOnce prunes on the state st read.
func (p *Provider) pruneOnce(ctx context.Context, op string, st *instanceState, options provider.PruneOptions) (provider.PruneResult, error) {
	var res provider.PruneResult
	ids := pruneSelection(st, options)
	if len(ids) == 0 {
		return res, nil
	}
	all, err := p.prunedHistory(ctx, op, st, ids)
	if err != nil {
		return res, err
	}
	units, large := p.pruneUnits(keys.InstancePK(st.id), all)
	if err := p.pruneTransactions(ctx, op, st, units, &res); err != nil {
		return res, err
	}
	if err := p.pruneFlagged(ctx, keys.InstancePK(st.id), large, &res); err != nil {
		return res, err
	}
	return res, nil
}

// pruneSelection returns, sorted, the executions options select and those
// an earlier prune flagged.
func pruneSelection(st *instanceState, options provider.PruneOptions) []uint64 {
	var ids []uint64
	execs := make([]provider.ExecutionSummary, 0, len(st.execs))
	for id, e := range st.execs {
		if e.pruning {
			ids = append(ids, id)
			continue
		}
		execs = append(execs, provider.ExecutionSummary{ID: id, Status: e.status, CompletedAtMs: e.completedAt})
	}
	ids = append(ids, provider.ExecutionsToPrune(execs, st.meta.current, options)...)
	slices.Sort(ids)
	return ids
}

// prunedHistory reads the history keys of the executions ids (sorted) in
// one range and returns them with their rows and events.
func (p *Provider) prunedHistory(ctx context.Context, op string, st *instanceState, ids []uint64) ([]*pruned, error) {
	pk := keys.InstancePK(st.id)
	rows, err := p.queryPartition(ctx, pk, keys.HistoryPrefix(ids[0]), prefixEnd(keys.HistoryPrefix(ids[len(ids)-1])), attrSK, attrEventCount)
	if err != nil {
		return nil, err
	}
	byID := make(map[uint64]*pruned, len(ids))
	all := make([]*pruned, 0, len(ids))
	for _, id := range ids {
		e := &pruned{id: id, flagged: st.execs[id].pruning, terminal: provider.IsTerminalStatus(st.execs[id].status)}
		byID[id] = e
		all = append(all, e)
	}
	for _, row := range rows {
		sk, _, _ := strAttr(row, attrSK)
		id, err := historyExecution(sk)
		if err != nil {
			return nil, provider.Corrupt(op, err, "history row of instance %q: %v", st.id, err)
		}
		if e := byID[id]; e != nil {
			e.rows = append(e.rows, key(pk, sk))
			if isHistorySK(sk) {
				e.events += rowEventCount(row)
			}
		}
	}
	return all, nil
}

// pruneBeside counts a prune transaction's other actions: the record's
// update, noStagedTurn and the counter cell.
const pruneBeside = 3

// pruneUnits deletes each execution that fits a transaction whole, and
// flags the others (large) unless an earlier prune did.
func (p *Provider) pruneUnits(pk string, all []*pruned) (units []pruneUnit, large []*pruned) {
	for _, e := range all {
		if len(e.rows)+1+pruneBeside <= maxTransactActions {
			u := pruneUnit{e: e}
			for _, row := range e.rows {
				u.actions = append(u.actions, deleteAction(p.table, row))
			}
			del := deleteAction(p.table, key(pk, keys.ExecSK(e.id)))
			del.Delete.ConditionExpression, del.Delete.ExpressionAttributeNames = unflaggedRecord()
			u.actions = append(u.actions, del)
			units = append(units, u)
			continue
		}
		large = append(large, e)
		if !e.flagged {
			units = append(units, pruneUnit{e: e, flag: true, actions: []types.TransactWriteItem{{Update: p.pruneFlag(pk, e.id)}}})
		}
	}
	return units, large
}

// pruneTransactions sends units, as many as fit each transaction, with
// the record's figures (an execution flagged earlier left them then), the
// cell's change and noStagedTurn, counting in res as each commits. A
// refused condition returns errPruneRaced.
func (p *Provider) pruneTransactions(ctx context.Context, op string, st *instanceState, units []pruneUnit, res *provider.PruneResult) error {
	meta := *st.meta
	for len(units) > 0 {
		n, size := 0, pruneBeside
		for n < len(units) && size+len(units[n].actions) <= maxTransactActions {
			size += len(units[n].actions)
			n++
		}
		group := units[:n]
		units = units[n:]
		next := meta
		var actions []types.TransactWriteItem
		for _, u := range group {
			actions = append(actions, u.actions...)
			if !u.e.flagged {
				next.execs -= min(next.execs, 1)
				if u.e.terminal {
					next.events -= min(next.events, u.e.events)
				}
			}
		}
		actions = append(actions, p.figuresUpdate(st.id, &meta, &next), p.noStagedTurn(st.id))
		cell, done := p.takeCell(change(&meta, &next))
		err := p.sendFresh(ctx, op, append(actions, cell...))
		done()
		if err != nil {
			if conditionFailedAt(cancelReasons(err)) >= 0 {
				return errPruneRaced
			}
			return err
		}
		meta = next
		for _, u := range group {
			if !u.flag {
				res.ExecutionsDeleted++
				res.EventsDeleted += u.e.events
			}
		}
	}
	return nil
}

// pruneFlagged deletes the flagged executions in batches, records last, so
// each stays flagged (gone for readers) until its history is gone.
func (p *Provider) pruneFlagged(ctx context.Context, pk string, large []*pruned, res *provider.PruneResult) error {
	if len(large) == 0 {
		return nil
	}
	var reqs, records []types.WriteRequest
	for _, e := range large {
		for _, row := range e.rows {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: row}})
		}
		records = append(records, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(pk, keys.ExecSK(e.id))}})
	}
	if err := p.batchWrite(ctx, reqs); err != nil {
		return err
	}
	if err := p.batchWrite(ctx, records); err != nil {
		return err
	}
	for _, e := range large {
		res.ExecutionsDeleted++
		res.EventsDeleted += e.events
	}
	return nil
}

// unflaggedRecord conditions an execution record's delete or flag on it
// existing unflagged: its figures are still in the instance record.
func unflaggedRecord() (*string, map[string]string) {
	return aws.String("attribute_exists(#pk) AND attribute_not_exists(#pr)"), map[string]string{"#pk": attrPK, "#pr": attrPruning}
}

// pruneFlag sets the pruning flag on an execution record (unflaggedRecord).
func (p *Provider) pruneFlag(pk string, id uint64) *types.Update {
	cond, names := unflaggedRecord()
	return &types.Update{
		TableName:                 p.table,
		Key:                       key(pk, keys.ExecSK(id)),
		UpdateExpression:          aws.String("SET #pr = :now"),
		ConditionExpression:       cond,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(p.nowMs())},
	}
}

// figuresUpdate changes instance's record figures from read to next,
// conditioned on the record being as read.
func (p *Provider) figuresUpdate(instance string, read, next *metaRow) types.TransactWriteItem {
	c := figuresAsRead(read) // names #nx and #xev
	c.values[":nx2"], c.values[":xev2"] = nu(next.execs), nu(next.events)
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 p.table,
		Key:                       key(keys.InstancePK(instance), keys.Meta),
		UpdateExpression:          aws.String("SET #nx = :nx2, #xev = :xev2"),
		ConditionExpression:       aws.String(c.expr),
		ExpressionAttributeNames:  c.names,
		ExpressionAttributeValues: c.values,
	}}
}

// historyExecution returns the execution id of a history or mark key.
func historyExecution(sk string) (uint64, error) {
	rest, _ := strings.CutPrefix(sk, keys.HistPrefix)
	if len(rest) < 21 || rest[20] != '#' {
		return 0, fmt.Errorf("%w: %q is not a history key", provider.ErrCorruptData, sk)
	}
	return keys.ParseNum20(rest[:20])
}

// PruneExecutionsBulk prunes every instance that filter selects, running
// ones included, and sums the results.
func (p *Provider) PruneExecutionsBulk(ctx context.Context, filter provider.InstanceFilter, options provider.PruneOptions) (provider.PruneResult, error) {
	selected, err := p.selectInstances(ctx, filter, nil)
	if err != nil {
		return provider.PruneResult{}, translate(provider.OpPruneExecutionsBulk, err)
	}
	var total provider.PruneResult
	for _, li := range selected {
		st, err := p.loadState(ctx, li.id)
		if err != nil {
			return total, translate(provider.OpPruneExecutionsBulk, err)
		}
		if st.meta == nil {
			continue
		}
		res, err := p.prune(ctx, provider.OpPruneExecutionsBulk, st, options)
		if err != nil {
			return total, translate(provider.OpPruneExecutionsBulk, err)
		}
		total = total.Add(res)
	}
	return total, nil
}
