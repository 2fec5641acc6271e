package dynamo

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
)

// maxHistorySegments bounds the Queries a long history is read with at
// once.
const maxHistorySegments = 4

// queryHistory reads the rows of one execution's history, in sort-key
// order (events, then a large turn's mark). A history that fits one page
// (1 MB, about 3,500 events of an activity's size) is one Query. A longer
// one is read in parallel: the first page tells how many events a page
// holds, a Query of one row from the end tells where the history ends
// (event ids are dense; that row's key is the id of its first event), and
// the rest is split by event id into segments read at once, each a page or
// so. Read units are those of one sequential
// read; requests are one more. docs/design.md §5, reading a long history.
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
		// A large turn's mark ends the range, or the rows are not dense:
		// read on in order.
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

// lastEventID reads the id of the first event of the last row of the
// history range [from, to) (a row holds events from its key's on) with a
// Query of its key; ok is false when that row is not an event (a large
// turn's mark) or there is none.
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

// lastHistoryRow reads the last row of partition pk whose sort key lies in
// [from, to] (nil when there is none), with the attributes projection
// names: one Query of one row, in reverse.
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
