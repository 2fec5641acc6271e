package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// listedInstance is one instance as the instances index lists it.
type listedInstance struct {
	id          string
	listSK      string
	status      string
	parent      string
	completedAt int64 // 0 while running
	pending     bool  // a queued start's entry, not an instance record's
}

// listInstances returns the recorded instances, oldest first; the index
// is eventually consistent, so a new instance may be missing.
func (p *Provider) listInstances(ctx context.Context) ([]listedInstance, error) {
	all, err := p.listEntries(ctx)
	return recorded(all), err
}

// recorded drops the entries of queued starts.
func recorded(all []listedInstance) []listedInstance {
	return slices.DeleteFunc(all, func(li listedInstance) bool { return li.pending })
}

// withPending keeps one entry per instance: its record's, else its oldest
// queued start's. The index also lists starts sent to recorded instances.
func withPending(all []listedInstance) []listedInstance {
	hasRecord := map[string]bool{}
	for _, li := range all {
		if !li.pending {
			hasRecord[li.id] = true
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(all, func(li listedInstance) bool {
		if !li.pending {
			return false
		}
		drop := hasRecord[li.id] || seen[li.id]
		seen[li.id] = true
		return drop
	})
}

// listEntries reads every shard of the instances index, in creation order.
func (p *Provider) listEntries(ctx context.Context) ([]listedInstance, error) {
	out, err := eachShard(p.o.Shards, func(shard int) ([]listedInstance, error) {
		in := &dynamodb.QueryInput{
			IndexName:                 aws.String(tables.IndexInstances),
			KeyConditionExpression:    aws.String("#lp = :lp"),
			ExpressionAttributeNames:  map[string]string{"#lp": attrListPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":lp": s(keys.ListInstancesPK(shard))},
		}
		rows, err := p.queryAll(ctx, in)
		if err != nil {
			return nil, err
		}
		var found []listedInstance
		var d decoder
		for _, row := range rows {
			id, err := keys.InstanceFromPK(d.str(row, attrPK))
			if err != nil {
				continue
			}
			found = append(found, listedInstance{
				id: id, listSK: keys.ListOrderSK(d.str(row, attrListSK)), status: d.str(row, attrStatus),
				parent: d.str(row, attrParent), completedAt: d.int(row, attrCompletedAt),
				pending: strings.HasPrefix(d.str(row, attrSK), keys.QueuePrefix),
			})
		}
		return found, d.err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b listedInstance) int { return cmp.Compare(a.listSK, b.listSK) })
	return out, nil
}

// ListInstances returns every instance id, pending ones included, newest
// first. Requests: one Query of the instances index per shard.
func (p *Provider) ListInstances(ctx context.Context) ([]string, error) {
	return p.listIDs(ctx, provider.OpListInstances, func(listedInstance) bool { return true })
}

// ListInstancesByStatus returns the instances whose current execution has
// status ([provider.StatusPending]: pending ones), newest first.
// Requests: one Query of the instances index per shard.
func (p *Provider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return p.listIDs(ctx, provider.OpListInstancesByStatus, func(li listedInstance) bool { return status != "" && li.status == status })
}

func (p *Provider) listIDs(ctx context.Context, op string, keep func(listedInstance) bool) ([]string, error) {
	all, err := p.listEntries(ctx)
	if err != nil {
		return nil, translate(op, err)
	}
	out := []string{}
	for _, li := range slices.Backward(withPending(all)) {
		if keep(li) {
			out = append(out, li.id)
		}
	}
	return out, nil
}

// ListExecutions returns the instance's execution ids, ascending (empty
// for unknown instances), without those a prune is removing. One Query.
func (p *Provider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), keys.ExecPrefix, prefixEnd(keys.ExecPrefix), attrSK, attrPruning)
	if err != nil {
		return nil, translate(provider.OpListExecutions, err)
	}
	out := make([]uint64, 0, len(rows))
	for _, row := range rows {
		if _, pruning := row[attrPruning]; pruning {
			continue
		}
		sk, _, _ := strAttr(row, attrSK)
		id, err := keys.ParseNum20(sk[len(keys.ExecPrefix):])
		if err != nil {
			return nil, provider.Corrupt(provider.OpListExecutions, err, "execution record of instance %q: %v", instance, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// ReadHistoryWithExecutionID returns one execution's events, as
// [Provider.ReadWithExecution].
func (p *Provider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]provider.Event, error) {
	return p.readHistory(ctx, provider.OpReadHistoryWithExecutionID, instance, executionID)
}

// ReadHistory returns the latest execution's events, as [Provider.Read].
func (p *Provider) ReadHistory(ctx context.Context, instance string) ([]provider.Event, error) {
	return p.readLatest(ctx, provider.OpReadHistory, instance)
}

// LatestExecutionID returns the highest execution id (1 if unknown).
func (p *Provider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	id, _, err := p.latestExecution(ctx, instance)
	if err != nil {
		return 0, translate(provider.OpLatestExecutionID, err)
	}
	return id, nil
}

// InstanceInfo describes an instance and its current execution (status
// "Unknown" without its record); unknown instances fail with
// [provider.ErrNotFound]. Requests: one Query of the control rows.
func (p *Provider) InstanceInfo(ctx context.Context, instance string) (*provider.InstanceInfo, error) {
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return nil, translate(provider.OpInstanceInfo, err)
	}
	if st.meta == nil {
		if info := st.pendingInfo(); info != nil {
			return info, nil
		}
		return nil, provider.InstanceNotFound(provider.OpInstanceInfo, instance)
	}
	m := st.meta
	info := &provider.InstanceInfo{
		InstanceID:           instance,
		OrchestrationName:    m.name,
		OrchestrationVersion: cmp.Or(m.version, provider.UnknownVersion),
		CurrentExecutionID:   m.current,
		Status:               provider.StatusUnknown,
		CreatedAt:            uint64(max(m.createdAt, 0)),
		UpdatedAt:            uint64(max(m.updatedAt, st.lock.updatedAt, 0)),
		ParentInstanceID:     m.parent,
	}
	if e := st.currentExec(); e != nil && !e.pruning {
		info.Status, info.Output = e.status, e.output
	}
	return info, nil
}

// ExecutionInfo describes one execution; unknown ones, and those a prune
// is removing, fail with [provider.ErrNotFound]. Requests: a keys-only
// Query of the history, then a Query of the control rows.
func (p *Provider) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*provider.ExecutionInfo, error) {
	// History first: a record read afterwards without the pruning flag had
	// none when the history was read (docs/design.md §5).
	rows, err := p.historyKeysView(ctx, provider.OpExecutionInfo, instance, executionID)
	if err != nil {
		return nil, translate(provider.OpExecutionInfo, err)
	}
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return nil, translate(provider.OpExecutionInfo, err)
	}
	e := st.execs[executionID]
	if e == nil || e.pruning {
		return nil, provider.ExecutionNotFound(provider.OpExecutionInfo, instance, executionID)
	}
	info := &provider.ExecutionInfo{
		ExecutionID: executionID,
		Status:      e.status,
		Output:      e.output,
		StartedAt:   uint64(max(e.startedAt, 0)),
		EventCount:  int(historyEvents(rows)),
	}
	if e.completedAt != nil {
		c := uint64(max(*e.completedAt, 0))
		info.CompletedAt = &c
	}
	return info, nil
}

// ListChildren returns the direct children of an instance (empty for
// unknown instances). Requests: one Query of its child links.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	children, err := p.children(ctx, instance)
	if err != nil {
		return nil, translate(provider.OpListChildren, err)
	}
	return children, nil
}

// children returns the ids of instance's child links.
func (p *Provider) children(ctx context.Context, instance string) ([]string, error) {
	// Child links, plain and hashed, sort between "C" and "D".
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), "C", "D", attrSK, attrChild)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, row := range rows {
		child, ok, err := strAttr(row, attrChild)
		if err != nil || !ok {
			return nil, provider.Corrupt(provider.OpListChildren, fmt.Errorf("%w: child link %s", provider.ErrCorruptData, describeKey(row)), "child link of instance %q has no child id", instance)
		}
		out = append(out, child)
	}
	return out, nil
}

// ParentID returns the instance's parent, or "" for a root; unknown
// instances fail with [provider.ErrNotFound]. Requests: one GetItem.
func (p *Provider) ParentID(ctx context.Context, instance string) (string, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(keys.InstancePK(instance), keys.Meta), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#p, #pk"), ExpressionAttributeNames: map[string]string{"#p": attrParent, "#pk": attrPK},
	})
	if err != nil {
		return "", translate(provider.OpParentID, err)
	}
	if out.Item == nil {
		return "", provider.InstanceNotFound(provider.OpParentID, instance)
	}
	parent, _, err := strAttr(out.Item, attrParent)
	if err != nil {
		return "", provider.Corrupt(provider.OpParentID, err, "parent of instance %q: %v", instance, err)
	}
	return parent, nil
}

// pendingInfo describes a recordless instance from its oldest queued
// start (StatusPending); nil without one.
func (st *instanceState) pendingInfo() *provider.InstanceInfo {
	for _, m := range st.msgs {
		if m.kind != provider.KindStartOrchestration {
			continue
		}
		w, err := provider.UnmarshalWorkItem([]byte(m.data))
		if start, ok := w.(provider.StartOrchestrationItem); ok && err == nil {
			return provider.PendingInstanceInfo(start, uint64(max(seqMs(m.seq), 0)))
		}
	}
	return nil
}
