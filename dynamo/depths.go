package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// QueueDepths counts the queued messages of each queue that no live lock
// holds, from the ready index alone. TimerQueue is always 0: timers are
// delayed orchestrator messages, counted in OrchestratorQueue.
//
// WorkerQueue is exact: an activity is locked on its own row, whose lease
// the index holds. OrchestratorQueue leaves out the messages that live
// locks of this provider hold (its turns in flight), and counts those
// that other processes' locks hold: an orchestration's lock is a row of
// its instance that no index shows, and reading it for every instance
// with messages would make the call cost a request per instance. A turn's
// ack deletes the messages its lock holds, so such a message is counted
// at most for the length of a turn (of a lease, when its holder died).
//
// Requests: one Scan of the ready index, which holds queued work only, a
// page per megabyte of it (about 5,000 queued messages): one request with
// none queued as with a thousand. Its read units grow with the index,
// about 1 RRU per 40 queued messages (eventually consistent, 4 KB a
// unit); terminal instances, and running ones with nothing queued, cost
// nothing.
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
		// An unlocked activity has no lock_until (the index does not
		// hold tok); a lapsed lease counts as unlocked.
		if shard, ok := keys.ReadyShard(rpk, keys.ReadyWorkerPrefix); ok && shard < p.o.Shards && dec.int(row, attrLockUntil) <= now {
			d.WorkerQueue++
		}
	})
	if err != nil {
		return provider.QueueDepths{}, translate(provider.OpQueueDepths, err)
	}
	return d, nil
}

// scanReadyIndex passes every entry of the ready index to each, paging to
// the index's end, with the attributes QueueDepths reads (a projection
// lightens the responses; the index's read units are billed by its
// entries' sizes all the same).
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

// heldMessages returns the orchestrator messages (heldKey) that live locks
// of this process hold at nowMs: the batches of the turns it fetched and
// has neither acked nor abandoned (both drop the turn), whose leases, as
// renewals moved them, have not ended. A turn pushed out of the cache is
// not seen: its messages are counted, as another process's would be.
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
