package dynamo

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// maxHistorySegments bounds the Queries reading a long history at once.
const maxHistorySegments = 4

// queryHistory reads one execution's history rows in sort-key order
// (events, then a large turn's mark): one Query if it fits a page (1 MB,
// about 3,500 activity-sized events), else the rest in parallel segments by
// event id: the read units of one sequential read, one request more
// (docs/reads.md, reading a long history).
func (p *Provider) queryHistory(ctx context.Context, instance string, executionID uint64) ([]item, error) {
	pk, prefix := keys.InstancePK(instance), keys.HistoryPrefix(executionID)
	end := prefixEnd(prefix)
	rows, complete, err := p.queryRange(ctx, partitionRange{pk: pk, from: prefix, to: end, enough: func([]item) bool { return true }})
	if err != nil || complete || len(rows) == 0 {
		return rows, err
	}
	readTo, _, _ := strAttr(rows[len(rows)-1], attrSK)
	rest := partitionRange{pk: pk, from: readTo + "\x00", to: end}
	_, lastRead, err := keys.ParseHistorySK(readTo)
	if err != nil {
		return p.appendRange(ctx, rows, rest)
	}
	lastRead += rowEventCount(rows[len(rows)-1]) - 1 // a row holds its events from its key's on
	last, ok, err := p.lastEventID(ctx, pk, prefix, end)
	if err != nil {
		return nil, err
	}
	perPage := historyEvents(rows)
	if !ok || last <= lastRead || perPage == 0 {
		// A turn's mark ends the range, or ids are not dense: read in order.
		return p.appendRange(ctx, rows, rest)
	}
	remaining := last - lastRead
	segments := min((remaining+perPage-1)/perPage, maxHistorySegments)
	if segments <= 1 {
		return p.appendRange(ctx, rows, rest)
	}
	parts := make([][]item, segments)
	errs := make([]error, segments)
	var wg sync.WaitGroup
	from := lastRead + 1
	for i := range segments {
		r := partitionRange{pk: pk, from: keys.HistorySK(executionID, from), to: end}
		size := remaining / segments
		if i < remaining%segments {
			size++
		}
		from += size
		if i < segments-1 {
			r.to = keys.HistorySK(executionID, from)
		}
		wg.Go(func() { parts[i], _, errs[i] = p.queryRange(ctx, r) })
	}
	wg.Wait()
	for i := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		rows = append(rows, parts[i]...)
	}
	return rows, nil
}

// appendRange reads r to its end after rows.
func (p *Provider) appendRange(ctx context.Context, rows []item, r partitionRange) ([]item, error) {
	more, _, err := p.queryRange(ctx, r)
	if err != nil {
		return nil, err
	}
	return append(rows, more...), nil
}

// lastEventID reads the first event id of the last row of history range
// [from, to); ok is false when that row is a turn's mark or there is none.
func (p *Provider) lastEventID(ctx context.Context, pk, from, to string) (id uint64, ok bool, err error) {
	row, err := p.lastHistoryRow(ctx, pk, from, to, attrSK)
	if err != nil || row == nil {
		return 0, false, err
	}
	sk, _, _ := strAttr(row, attrSK)
	if sk >= to || !isHistorySK(sk) {
		return 0, false, nil
	}
	_, id, err = keys.ParseHistorySK(sk)
	if err != nil {
		return 0, false, nil
	}
	return id, true, nil
}

// lastHistoryRow reads the last row of pk in [from, to] (nil for none),
// projected to projection: one Query of one row, in reverse.
func (p *Provider) lastHistoryRow(ctx context.Context, pk, from, to string, projection ...string) (item, error) {
	names := map[string]string{"#pk": attrPK, "#sk": attrSK}
	out, err := p.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 p.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk), ":from": s(from), ":to": s(to)},
		ProjectionExpression:      projectionExpr(names, projection),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil || len(out.Items) == 0 {
		return nil, err
	}
	return out.Items[0], nil
}

// Readers never write (docs/design.md §5, reads never write): one that
// meets a pending large turn reads its staging rows, then its range again,
// and overlays the staged actions. An apply writes a staging row's actions
// and deletes the row at once, so each action is in the staging rows read
// or in the second read.

// maxTurnViews bounds the turns one read follows before failing retryable.
const maxTurnViews = 4

// rowsRead reads rows of one sort-key range of an instance's partition.
type rowsRead func(ctx context.Context) ([]item, error)

// pendingTurn splits off what marks a pending large turn, and its id.
type pendingTurn func(rows []item) ([]item, string)

// publishedView returns range [from, to) of instance's partition, read
// with read, as the last published turn leaves it, writing nothing. With a
// pending turn (found by pending) it costs a staging Query and read again.
func (p *Provider) publishedView(ctx context.Context, op, instance, from, to string, read rowsRead, pending pendingTurn) ([]item, error) {
	rows, err := read(ctx)
	if err != nil {
		return nil, err
	}
	rows, tid := pending(rows)
	for views := 0; tid != ""; views++ {
		if views == maxTurnViews {
			return nil, provider.Retryable(op, nil, "instance %q: large turns kept finishing while it was read", instance)
		}
		staged, err := p.stagedActions(ctx, instance, tid)
		if err != nil {
			return nil, err
		}
		again, err := read(ctx)
		if err != nil {
			return nil, err
		}
		again, now := pending(again)
		if now == tid {
			return overlayStaged(again, staged, keys.InstancePK(instance), from, to), nil
		}
		rows, tid = again, now
	}
	return rows, nil
}

// stagedActions returns the actions of turn tid's unapplied staging rows.
func (p *Provider) stagedActions(ctx context.Context, instance, tid string) ([]planAction, error) {
	prefix := keys.StagePrefixOf(tid)
	rows, err := p.queryPartition(ctx, keys.InstancePK(instance), prefix, prefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	var actions []planAction
	for _, row := range rows {
		a, err := decodeStaged(row)
		if err != nil {
			return nil, err
		}
		actions = append(actions, a...)
	}
	return actions, nil
}

// overlayStaged applies to rows of range [from, to) of pk the staged puts
// and deletes in that range, keeping sort-key order.
func overlayStaged(rows []item, staged []planAction, pk, from, to string) []item {
	bySK := make(map[string]item, len(rows))
	for _, row := range rows {
		sk, _, _ := strAttr(row, attrSK)
		bySK[sk] = row
	}
	changed := false
	for _, a := range staged {
		target, put := a.del, false
		if a.put != nil {
			target, put = a.put, true
		}
		rowPK, _, _ := strAttr(target, attrPK)
		sk, _, _ := strAttr(target, attrSK)
		if rowPK != pk || sk < from || sk >= to {
			continue
		}
		changed = true
		if put {
			bySK[sk] = a.put
		} else {
			delete(bySK, sk)
		}
	}
	if !changed {
		return rows
	}
	sks := slices.Sorted(maps.Keys(bySK))
	out := make([]item, len(sks))
	for i, sk := range sks {
		out[i] = bySK[sk]
	}
	return out
}

// historyView returns executionID's history rows as the last published
// turn leaves them, writing nothing (publishedView). Fetches, which hold
// the lock, finish the turn instead (historyRows).
func (p *Provider) historyView(ctx context.Context, op, instance string, executionID uint64) ([]item, error) {
	read := func(ctx context.Context) ([]item, error) { return p.queryHistory(ctx, instance, executionID) }
	return p.historyRangeView(ctx, op, instance, executionID, read)
}

// historyKeysView is historyView for readers of keys and counts only: the
// rows it reads hold their sort key and event count (and a mark its turn).
func (p *Provider) historyKeysView(ctx context.Context, op, instance string, executionID uint64) ([]item, error) {
	prefix := keys.HistoryPrefix(executionID)
	read := func(ctx context.Context) ([]item, error) {
		return p.queryPartition(ctx, keys.InstancePK(instance), prefix, prefixEnd(prefix), attrSK, attrEventCount, attrTurnID)
	}
	return p.historyRangeView(ctx, op, instance, executionID, read)
}

// historyRangeView is historyView with the history read by read.
func (p *Provider) historyRangeView(ctx context.Context, op, instance string, executionID uint64, read rowsRead) ([]item, error) {
	prefix := keys.HistoryPrefix(executionID)
	return p.publishedView(ctx, op, instance, prefix, prefixEnd(prefix), read, splitTurnMark)
}

// kvView returns the instance's KV rows as the last published turn leaves
// them, writing nothing. The same Query reads the lock row, which sorts
// right after them and names a pending large turn (publishedView).
func (p *Provider) kvView(ctx context.Context, op, instance string) ([]item, error) {
	pk := keys.InstancePK(instance)
	read := func(ctx context.Context) ([]item, error) {
		return p.queryPartition(ctx, pk, keys.KVRowsPrefix, keys.Lock+"\x00")
	}
	return p.publishedView(ctx, op, instance, keys.KVRowsPrefix, prefixEnd(keys.KVRowsPrefix), read, lockRowTurn)
}

// lockRowTurn returns rows without the lock row that ends them, and the
// large turn that row holds pending ("" for none).
func lockRowTurn(rows []item) ([]item, string) {
	if len(rows) == 0 {
		return rows, ""
	}
	last := rows[len(rows)-1]
	if sk, _, _ := strAttr(last, attrSK); sk != keys.Lock {
		return rows, ""
	}
	tid, _, _ := strAttr(last, attrTurn)
	return rows[:len(rows)-1], tid
}
