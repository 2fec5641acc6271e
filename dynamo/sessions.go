package dynamo

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// sessionRecord is a session record's key as the instances index lists it.
type sessionRecord struct {
	id string
}

// listSessions returns the sessions the instances index lists under listPK
// and prefix. The index lags: callers condition writes on the base row.
func (p *Provider) listSessions(ctx context.Context, listPK, prefix string) ([]sessionRecord, error) {
	in := &dynamodb.QueryInput{
		IndexName:                 aws.String(tables.IndexInstances),
		KeyConditionExpression:    aws.String("#lp = :lp"),
		ExpressionAttributeNames:  map[string]string{"#lp": attrListPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":lp": s(listPK)},
	}
	if prefix != "" {
		in.KeyConditionExpression = aws.String("#lp = :lp AND begins_with(#ls, :prefix)")
		in.ExpressionAttributeNames["#ls"] = attrListSK
		in.ExpressionAttributeValues[":prefix"] = s(prefix)
	}
	rows, err := p.queryAll(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]sessionRecord, 0, len(rows))
	for _, row := range rows {
		pk, _, _ := strAttr(row, attrPK)
		if id, ok := strings.CutPrefix(pk, keys.SessionPrefix); ok {
			out = append(out, sessionRecord{id: id})
		}
	}
	return out, nil
}

// RenewSessionLock extends to now+extendFor every live session of
// ownerIDs active within idleTimeout, and returns how many it extended;
// idle ones are left to expire. Requests: per owner one Query of the
// instances index, then one conditional UpdateItem per session. A session
// claimed within the index's lag (under a second on AWS) may miss a round.
func (p *Provider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	renewed := 0
	var owners []string
	for _, o := range ownerIDs {
		if !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	for _, owner := range owners {
		sessions, err := p.listSessions(ctx, keys.SessionsPK(keys.ShardOf(owner, p.o.Shards)), keys.SessionsPrefix(owner))
		if err != nil {
			return renewed, translate(provider.OpRenewSessionLock, err)
		}
		for _, sess := range sessions {
			now := p.nowMs()
			_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                p.table,
				Key:                      key(keys.SessionPK(sess.id), keys.Session),
				UpdateExpression:         aws.String("SET #until = :until"),
				ConditionExpression:      aws.String("#owner = :owner AND #until > :now AND #last > :idle"),
				ExpressionAttributeNames: map[string]string{"#until": attrLockUntil, "#owner": attrOwner, "#last": attrLastSeen},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":until": n(now + durMs(extendFor)), ":owner": s(owner), ":now": n(now), ":idle": n(now - durMs(idleTimeout)),
				},
			})
			if err != nil {
				if conditionFailed(err) {
					continue
				}
				return renewed, translate(provider.OpRenewSessionLock, err)
			}
			renewed++
			p.sweeps.sessionsHeld(owner, now+durMs(extendFor))
		}
	}
	return renewed, nil
}

// CleanupOrphanedSessions deletes expired sessions no queued activity
// references, and returns how many it deleted; idleTimeout is unused.
// Requests: a Query of the instances index per shard; a GetItem per
// session; per expired one, a Query of its ready shard (paged, so it grows
// with that shard's backlog) and, for an orphan, a one-delete transaction
// (and a GetItem if its outcome stays unknown). Not for a hot path.
func (p *Provider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	deleted := 0
	for shard := range p.o.Shards {
		sessions, err := p.listSessions(ctx, keys.SessionsPK(shard), "")
		if err != nil {
			return deleted, translate(provider.OpCleanupOrphanedSessions, err)
		}
		for _, sess := range sessions {
			expired, err := p.sessionExpired(ctx, sess.id)
			if err != nil {
				return deleted, translate(provider.OpCleanupOrphanedSessions, err)
			}
			if !expired {
				continue
			}
			referenced, err := p.sessionReferenced(ctx, sess.id)
			if err != nil {
				return deleted, translate(provider.OpCleanupOrphanedSessions, err)
			}
			if referenced {
				continue
			}
			// A transaction, for its ClientRequestToken: an SDK resend of a
			// landed delete then succeeds (docs/design.md §7).
			err = p.sendFresh(ctx, provider.OpCleanupOrphanedSessions, []types.TransactWriteItem{{Delete: &types.Delete{
				TableName:                 p.table,
				Key:                       key(keys.SessionPK(sess.id), keys.Session),
				ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#until) OR #until < :now)"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#until": attrLockUntil},
				ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(p.nowMs())},
			}}})
			if err != nil {
				if conditionFailedAt(cancelReasons(err)) == 0 {
					continue
				}
				// Unknown outcome: count it if gone, or a retry would lose it.
				if gone, gerr := p.sessionGone(ctx, sess.id); gerr != nil || !gone {
					return deleted, translate(provider.OpCleanupOrphanedSessions, err)
				}
			}
			deleted++
		}
	}
	return deleted, nil
}

// sessionExpired reports whether the session exists with an ended lease,
// by an eventually consistent read: a stale answer costs only the Query of
// sessionReferenced, as the delete is conditioned on the lease.
func (p *Provider) sessionExpired(ctx context.Context, session string) (bool, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(keys.SessionPK(session), keys.Session),
		ProjectionExpression: aws.String("#pk, #until"), ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#until": attrLockUntil},
	})
	if err != nil || len(out.Item) == 0 {
		return false, err
	}
	until, err := intAttr(out.Item, attrLockUntil)
	return err == nil && until < p.nowMs(), err
}

// sessionGone reports whether the session is gone (read outliving ctx).
func (p *Provider) sessionGone(ctx context.Context, session string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unknownOutcomeReadTimeout)
	defer cancel()
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(keys.SessionPK(session), keys.Session), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#pk"), ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil {
		return false, err
	}
	return len(out.Item) == 0, nil
}

// sessionReferenced reports whether a queued activity references session;
// a session's rows share one ready-index shard.
func (p *Provider) sessionReferenced(ctx context.Context, session string) (bool, error) {
	readyPK := keys.ReadyWorkerPK(keys.ShardOf(keys.WorkerRoutingKey("", &session), p.o.Shards))
	in := &dynamodb.QueryInput{
		TableName:                 p.table,
		IndexName:                 aws.String(tables.IndexReady),
		KeyConditionExpression:    aws.String("#rp = :rp"),
		FilterExpression:          aws.String("#session = :session"),
		ExpressionAttributeNames:  map[string]string{"#rp": attrReadyPK, "#session": attrSession},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rp": s(readyPK), ":session": s(session)},
		ProjectionExpression:      aws.String("#session"),
	}
	for {
		page, err := p.db.Query(ctx, in)
		if err != nil {
			return false, err
		}
		if len(page.Items) > 0 {
			return true, nil
		}
		if len(page.LastEvaluatedKey) == 0 {
			return false, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
