package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// CustomStatus returns the instance's custom status and version when the
// version is above lastSeenVersion, else nil (also for unknown instances).
// Requests: one GetItem.
func (p *Provider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*provider.CustomStatus, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                p.table,
		Key:                      key(keys.InstancePK(instance), keys.Meta),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#c, #v"),
		ExpressionAttributeNames: map[string]string{"#c": attrCStatus, "#v": attrCStatusVer},
	})
	if err != nil {
		return nil, translate(provider.OpCustomStatus, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	var d decoder
	status := d.optStr(out.Item, attrCStatus)
	version := d.uint(out.Item, attrCStatusVer)
	if d.err != nil {
		return nil, provider.Corrupt(provider.OpCustomStatus, d.err, "custom status of instance %q: %v", instance, d.err)
	}
	if version <= lastSeenVersion {
		return nil, nil
	}
	return &provider.CustomStatus{Status: status, Version: version}, nil
}

// liveKV returns the KV store overlaid by the current execution's writes,
// reading only the KV rows (and the lock row after them), so that its cost
// is the store's size, not the instance's.
func (p *Provider) liveKV(ctx context.Context, op, instance string) (map[string]provider.KVEntry, error) {
	rows, err := p.kvView(ctx, op, instance)
	if err != nil {
		return nil, translate(op, err)
	}
	st, err := parseState(instance, rows)
	if err != nil {
		return nil, translate(op, err)
	}
	return provider.MergeKV(st.kvStore, st.kvDelta), nil
}

// KVValue returns one key as clients see it (current writes included); ok
// is false when the key or the instance does not exist. Requests: one
// consistent GetItem, whatever else the store holds.
func (p *Provider) KVValue(ctx context.Context, instance, kvKey string) (string, bool, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      p.table,
		Key:            key(keys.InstancePK(instance), keys.KVSK(kvKey)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", false, translate(provider.OpKVValue, err)
	}
	if out.Item == nil {
		return "", false, nil
	}
	st, err := parseState(instance, []item{out.Item})
	if err != nil {
		return "", false, translate(provider.OpKVValue, err)
	}
	// A hashed sort key's row names its key: a collision files elsewhere.
	e, ok := provider.MergeKV(st.kvStore, st.kvDelta)[kvKey]
	return e.Value, ok, nil
}

// KVValues returns every live key as clients see it (empty for unknown
// instances). Requests: one Query of the instance's KV rows.
func (p *Provider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	live, err := p.liveKV(ctx, provider.OpKVValues, instance)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(live))
	for k, e := range live {
		out[k] = e.Value
	}
	return out, nil
}

// InstanceStats describes the current execution: event count, stored
// event JSON bytes, carry-forward events, live KV keys and value bytes; nil
// for unknown instances. An undecodable OrchestrationStarted fails with
// [provider.ErrCorruptData]. Requests: a Query of the control rows and one
// of the current history.
func (p *Provider) InstanceStats(ctx context.Context, instance string) (*provider.SystemStats, error) {
	st, err := p.loadState(ctx, instance)
	if err != nil {
		return nil, translate(provider.OpInstanceStats, err)
	}
	if st.meta == nil {
		return nil, nil
	}
	rows, err := p.historyView(ctx, provider.OpInstanceStats, instance, st.meta.current)
	if err != nil {
		return nil, translate(provider.OpInstanceStats, err)
	}
	stats := &provider.SystemStats{}
	for _, row := range rows {
		events, err := rowEvents(row)
		if err != nil {
			return nil, provider.Corrupt(provider.OpInstanceStats, err, "history of instance %q: %v", instance, err)
		}
		first, _ := rowFirstEvent(row) // 0 for a key it cannot parse
		for i, data := range events {
			eventID := uint64(0)
			if first != 0 {
				eventID = first + uint64(i)
			}
			if err := stats.CountEvent(provider.OpInstanceStats, instance, eventID, []byte(data)); err != nil {
				return nil, err
			}
		}
	}
	live := provider.MergeKV(st.kvStore, st.kvDelta)
	if st.lock.turn != "" {
		// A large turn is pending: its staged KV writes count.
		if live, err = p.liveKV(ctx, provider.OpInstanceStats, instance); err != nil {
			return nil, err
		}
	}
	stats.CountKV(live)
	return stats, nil
}
