package locks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// List implements [Locker.List] with one Query of the instances index per
// shard (and page), for the index rows of holders whose lease has not
// ended: no Scan, and no read of the table. The index is eventually
// consistent: a lock taken or released in the last moments (typically
// under a second on DynamoDB) may be missing or still listed. Decisions
// that need the truth (who holds a lock now) belong to Acquire, Release
// and Extend, whose conditional writes read the table itself.
func (d *Dynamo) List(ctx context.Context) ([]Holder, error) {
	select {
	case <-d.done:
		return nil, closedError(opList)
	default:
	}
	now := d.o.Clock.Now()
	var out []Holder
	for shard := range d.o.shards {
		holders, err := d.listShard(ctx, shard, now)
		if err != nil {
			return nil, err
		}
		out = append(out, holders...)
	}
	slices.SortFunc(out, func(a, b Holder) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// listShard returns the live holders of one shard.
func (d *Dynamo) listShard(ctx context.Context, shard int, now time.Time) ([]Holder, error) {
	var out []Holder
	var start map[string]types.AttributeValue
	for {
		var page *dynamodb.QueryOutput
		err := withRetry(ctx, opList, func(ctx context.Context) error {
			var err error
			page, err = d.api.Query(ctx, &dynamodb.QueryInput{
				TableName:                &d.o.TableName,
				IndexName:                aws.String(tables.IndexInstances),
				KeyConditionExpression:   aws.String("#lp = :lp AND #ls >= :from"),
				ExpressionAttributeNames: names("#lp", "#ls"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":lp":   str(shardPK(shard)),
					":from": str(liveFrom(now)),
				},
				ExclusiveStartKey: start,
			}, d.skew.Option)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			h, err := decodeHolder(item)
			if err != nil {
				return nil, provider.Corrupt(opList, err, "listing shard %d: %v", shard, err)
			}
			out = append(out, h)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

// decodeHolder reads a holder from an index row: the key from the table's
// partition key, the lease end and owner from the index sort key.
func decodeHolder(item map[string]types.AttributeValue) (Holder, error) {
	pk, _ := item[tables.AttrPK].(*types.AttributeValueMemberS)
	sk, _ := item[tables.AttrInstancesSK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return Holder{}, fmt.Errorf("index row without %s or %s", tables.AttrPK, tables.AttrInstancesSK)
	}
	key, err := keyFromPK(pk.Value)
	if err != nil {
		return Holder{}, err
	}
	untilMs, owner, err := parseHolderSK(sk.Value)
	if err != nil {
		return Holder{}, err
	}
	return Holder{Key: key, Owner: owner, Until: time.UnixMilli(untilMs)}, nil
}
