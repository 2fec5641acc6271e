package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// QueueDepths counts each queue's messages that no live lock holds, from
// the ready index alone. TimerQueue is always 0: timers are counted in
// OrchestratorQueue. WorkerQueue is exact; OrchestratorQueue also counts
// messages other processes' turns hold (their lock rows are in no index),
// for at most a turn or a lease.
//
// Requests: one Scan of the ready index, a page per MB (about 5,000 queued
// messages), about 1 RRU per 40 queued messages (docs/design.md §5).
func (p *Provider) QueueDepths(ctx context.Context) (provider.QueueDepths, error) {
	var d provider.QueueDepths
	now := p.nowMs()
	held := p.turns.heldMessages(now)
	err := p.scanReadyIndex(ctx, func(row item) {
		var dec decoder
		rpk := dec.str(row, attrReadyPK)
		if shard, ok := keys.ReadyShard(rpk, keys.ReadyOrchestratorPrefix); ok && shard < p.o.Shards {
			if !held[heldKey(dec.str(row, attrPK), dec.str(row, attrSK))] {
				d.OrchestratorQueue++
			}
			return
		}
		// The index lacks tok: no lock_until, or a lapsed one, is unlocked.
		if shard, ok := keys.ReadyShard(rpk, keys.ReadyWorkerPrefix); ok && shard < p.o.Shards && dec.int(row, attrLockUntil) <= now {
			d.WorkerQueue++
		}
	})
	if err != nil {
		return provider.QueueDepths{}, translate(provider.OpQueueDepths, err)
	}
	return d, nil
}

// scanReadyIndex passes every ready-index entry to each, projected to what
// QueueDepths reads (lighter responses, the same bill).
func (p *Provider) scanReadyIndex(ctx context.Context, each func(item)) error {
	in := &dynamodb.ScanInput{
		TableName:                p.table,
		IndexName:                aws.String(tables.IndexReady),
		ProjectionExpression:     aws.String("#rpk, #pk, #sk, #until"),
		ExpressionAttributeNames: map[string]string{"#rpk": attrReadyPK, "#pk": attrPK, "#sk": attrSK, "#until": attrLockUntil},
	}
	for {
		page, err := p.db.Scan(ctx, in)
		if err != nil {
			return err
		}
		for _, row := range page.Items {
			each(row)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// heldKey names a queued message by its row's keys.
func heldKey(pk, sk string) string { return pk + "\x00" + sk }

// heldMessages returns the orchestrator messages (heldKey) in the batches
// of this process's turns whose leases are live at nowMs. A turn evicted
// from the cache is missed, so its messages are counted.
func (c *turnCache) heldMessages(nowMs int64) map[string]bool {
	c.mu.Lock()
	turns := make([]*turnState, 0, len(c.m))
	for _, t := range c.m {
		turns = append(turns, t)
	}
	c.mu.Unlock()
	held := map[string]bool{}
	for _, t := range turns {
		if t.st == nil || t.leaseEnd() <= nowMs {
			continue
		}
		pk := keys.InstancePK(t.st.id)
		for _, sk := range t.batch {
			held[heldKey(pk, sk)] = true
		}
	}
	return held
}
