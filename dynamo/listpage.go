package dynamo

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

// pageTokenPrefix versions page tokens: base64url of it and the order key
// (creation time, then id) of the last entry the page covered.
const pageTokenPrefix = "l1:"

// errInvalidPageToken rejects a page token this provider did not make.
var errInvalidPageToken = errors.New("not a page token of this listing")

// listRecordReads bounds a page's concurrent record GetItems.
const listRecordReads = 16

// listStream is one range of the instances index a page reads newest
// first: one shard's running or ended (keys.EndedListPrefix) instances.
type listStream struct {
	shard  int
	lo, hi string // inclusive bounds of li_sk
	start  map[string]types.AttributeValue
	// frontier: every entry at or after it has been examined.
	frontier string
	done     bool
}

// listCandidate is an index entry that the index-side criteria keep.
type listCandidate struct {
	orderSK string
	entry   provider.InstanceListing
	// startSK is the start row's sort key for a queued start's entry.
	startSK string
}

// ListInstancesPage returns one page of the instances q selects, newest
// first (by creation time, then id), from the instances index: never a
// Scan, and at a cost that grows with the page, not with the table.
//
// Requests: rounds of parallel Queries, one per shard and range (running,
// ended) that can hold what q selects, each twice as deep, until the page
// is full or q's MaxExamined is reached; then, unless q.IndexOnly, a
// GetItem per instance kept, two per failed one (docs/design.md §5). The
// index lags: a new instance may be missing; one whose record no longer
// matches q's statuses is left out.
func (p *Provider) ListInstancesPage(ctx context.Context, q provider.InstanceQuery) (provider.InstancePage, error) {
	const op = provider.OpListInstances
	cursor, err := decodePageToken(q.PageToken)
	if err != nil {
		return provider.InstancePage{}, provider.Permanent(op, provider.ErrInvalidInput, "page token: %v", err)
	}
	size, budget := q.EffectivePageSize(), q.EffectiveMaxExamined()
	streams := p.listStreams(q, cursor)
	filter := listFilter(q)
	var (
		page       provider.InstancePage
		candidates []listCandidate // read, not yet confirmed
	)
	// Three times each stream's share: entries are confirmed only down to
	// the newest frontier, and running ranges are mostly short.
	chunk := int32(min((3*size+len(streams)-1)/max(len(streams), 1)+2, 1000))
	for len(streams) > 0 {
		found, examined, err := p.readStreams(ctx, streams, filter, chunk, cursor)
		if err != nil {
			return provider.InstancePage{}, translate(op, err)
		}
		page.Examined += examined
		candidates = append(candidates, found...)
		boundary := listBoundary(streams)
		// Entries at or after the boundary are final.
		slices.SortFunc(candidates, func(a, b listCandidate) int { return cmp.Compare(b.orderSK, a.orderSK) })
		n := 0
		for n < len(candidates) && candidates[n].orderSK >= boundary {
			n++
		}
		confirmed := candidates[:n]
		candidates = slices.Clone(candidates[n:])
		last, full, err := p.acceptListings(ctx, q, &page, confirmed, size)
		if err != nil {
			return provider.InstancePage{}, translate(op, err)
		}
		switch {
		case full:
			page.NextPageToken = encodePageToken(last)
			return page, nil
		case boundary == "":
			return page, nil
		case page.Examined >= budget:
			page.NextPageToken = encodePageToken(boundary)
			return page, nil
		}
		chunk = min(2*chunk, 1000)
	}
	return page, nil
}

// listStreams returns the index ranges that can hold what q selects, below
// cursor (an order key; "" for the first page).
func (p *Provider) listStreams(q provider.InstanceQuery, cursor string) []*listStream {
	lo := keys.Num20(0)
	if !q.CreatedFrom.IsZero() {
		lo = keys.Num20(uint64(max(q.CreatedFrom.UnixMilli(), 0)))
	}
	upper := ""
	if !q.CreatedTo.IsZero() {
		upper = keys.Num20(uint64(max(q.CreatedTo.UnixMilli(), 0)))
	}
	if cursor != "" && (upper == "" || cursor < upper) {
		upper = cursor
	}
	running, ended := true, true
	if len(q.Statuses) > 0 {
		endedOnly := func(s string) bool { return s == provider.StatusCompleted || s == provider.StatusFailed }
		running = slices.ContainsFunc(q.Statuses, func(s string) bool { return !endedOnly(s) })
		ended = slices.ContainsFunc(q.Statuses, endedOnly)
	}
	var out []*listStream
	for shard := range p.o.Shards {
		// Ended instances' entries sort after "~".
		if running {
			hi := cmp.Or(upper, keys.EndedListPrefix)
			if lo <= hi {
				out = append(out, &listStream{shard: shard, lo: lo, hi: hi})
			}
		}
		if ended {
			hi := keys.EndedListPrefix + cmp.Or(upper, keys.EndedListPrefix)
			if keys.EndedListPrefix+lo <= hi {
				out = append(out, &listStream{shard: shard, lo: keys.EndedListPrefix + lo, hi: hi})
			}
		}
	}
	return out
}

// listFilterExpr is q's index-side filter: its statuses and id prefix.
type listFilterExpr struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

func listFilter(q provider.InstanceQuery) listFilterExpr {
	f := listFilterExpr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	var parts []string
	if len(q.Statuses) > 0 {
		var vals []string
		for i, st := range q.Statuses {
			name := ":st" + strconv.Itoa(i)
			f.values[name] = s(st)
			vals = append(vals, name)
		}
		f.names["#st"] = attrStatus
		parts = append(parts, "#st IN ("+strings.Join(vals, ", ")+")")
	}
	if q.IDPrefix != "" {
		f.names["#pk"] = attrPK
		f.values[":idp"] = s(keys.InstancePK(q.IDPrefix))
		parts = append(parts, "begins_with(#pk, :idp)")
	}
	f.expr = strings.Join(parts, " AND ")
	return f
}

// readStreams reads up to chunk more entries of every stream not done, in
// parallel: the entries kept (but the cursor's) and the number examined.
func (p *Provider) readStreams(ctx context.Context, streams []*listStream, f listFilterExpr, chunk int32, cursor string) ([]listCandidate, int, error) {
	var (
		mu       sync.Mutex
		found    []listCandidate
		examined int
		firstErr error
		wg       sync.WaitGroup
	)
	for _, st := range streams {
		if st.done {
			continue
		}
		wg.Go(func() {
			got, n, err := p.readStream(ctx, st, f, chunk, cursor)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				return
			}
			found = append(found, got...)
			examined += n
		})
	}
	wg.Wait()
	return found, examined, firstErr
}

// readStream reads one Query page of st, newest first.
func (p *Provider) readStream(ctx context.Context, st *listStream, f listFilterExpr, chunk int32, cursor string) ([]listCandidate, int, error) {
	in := &dynamodb.QueryInput{
		TableName:                 p.table,
		IndexName:                 aws.String(tables.IndexInstances),
		KeyConditionExpression:    aws.String("#lp = :lp AND #ls BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#lp": attrListPK, "#ls": attrListSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":lp": s(keys.ListInstancesPK(st.shard)), ":lo": s(st.lo), ":hi": s(st.hi)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(chunk),
		ExclusiveStartKey:         st.start,
	}
	if f.expr != "" {
		in.FilterExpression = aws.String(f.expr)
		for k, v := range f.names {
			in.ExpressionAttributeNames[k] = v
		}
		for k, v := range f.values {
			in.ExpressionAttributeValues[k] = v
		}
	}
	out, err := p.db.Query(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	var (
		found []listCandidate
		d     decoder
	)
	for _, row := range out.Items {
		c, ok := listEntry(&d, row)
		if ok && c.orderSK != cursor {
			found = append(found, c)
		}
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	st.start = out.LastEvaluatedKey
	if len(out.LastEvaluatedKey) == 0 {
		st.done = true
	} else {
		st.frontier = keys.ListOrderSK(d.str(out.LastEvaluatedKey, attrListSK))
	}
	return found, int(out.ScannedCount), d.err
}

// listEntry decodes an instances-index entry.
func listEntry(d *decoder, row item) (listCandidate, bool) {
	id, err := keys.InstanceFromPK(d.str(row, attrPK))
	if err != nil {
		return listCandidate{}, false
	}
	var startSK string
	if sk := d.str(row, attrSK); strings.HasPrefix(sk, keys.QueuePrefix) {
		startSK = sk
	}
	orderSK := keys.ListOrderSK(d.str(row, attrListSK))
	var created uint64
	if len(orderSK) >= 20 {
		created, _ = keys.ParseNum20(orderSK[:20])
	}
	return listCandidate{orderSK: orderSK, startSK: startSK, entry: provider.InstanceListing{
		InstanceInfo: provider.InstanceInfo{
			InstanceID:       id,
			Status:           cmp.Or(d.str(row, attrStatus), provider.StatusUnknown),
			ParentInstanceID: d.str(row, attrParent),
			CreatedAt:        created,
		},
		CompletedAt: uint64(max(d.int(row, attrCompletedAt), 0)),
	}}, true
}

// listBoundary is the newest frontier of the streams not done ("" when
// all are): entries at or after it are examined in every stream.
func listBoundary(streams []*listStream) string {
	boundary := ""
	for _, st := range streams {
		if !st.done && st.frontier > boundary {
			boundary = st.frontier
		}
	}
	return boundary
}

// acceptListings adds confirmed candidates to page up to size (reading
// records unless q.IndexOnly): the last order key added, and whether full.
func (p *Provider) acceptListings(ctx context.Context, q provider.InstanceQuery, page *provider.InstancePage, confirmed []listCandidate, size int) (string, bool, error) {
	last := ""
	for len(confirmed) > 0 && len(page.Instances) < size {
		batch := confirmed[:min(len(confirmed), size-len(page.Instances))]
		confirmed = confirmed[len(batch):]
		listings := make([]*provider.InstanceListing, len(batch))
		if q.IndexOnly {
			for i := range batch {
				listings[i] = &batch[i].entry
			}
		} else if err := p.readListings(ctx, batch, listings); err != nil {
			return "", false, err
		}
		for i, l := range listings {
			if l == nil || !keepListing(q, l) {
				continue
			}
			page.Instances = append(page.Instances, *l)
			last = batch[i].orderSK
			if len(page.Instances) == size {
				return last, true, nil
			}
		}
	}
	return last, false, nil
}

// keepListing re-checks the statuses against the record and asks q.Match.
func keepListing(q provider.InstanceQuery, l *provider.InstanceListing) bool {
	if q.IndexOnly {
		return true
	}
	if len(q.Statuses) > 0 && !slices.Contains(q.Statuses, l.Status) {
		return false
	}
	return q.Match == nil || q.Match(l)
}

// readListings reads each candidate's record into listings (nil if gone).
func (p *Provider) readListings(ctx context.Context, batch []listCandidate, listings []*provider.InstanceListing) error {
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, listRecordReads)
	)
	for i, c := range batch {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			l, err := p.readListing(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				return
			}
			listings[i] = l
		})
	}
	wg.Wait()
	return firstErr
}

// readListing reads c's instance record (and a failed one's output); nil
// without one. A queued start's entry is read from the start row while
// the instance has no record, else dropped (the record's entry lists it).
func (p *Provider) readListing(ctx context.Context, c listCandidate) (*provider.InstanceListing, error) {
	id := c.entry.InstanceID
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(id), keys.Meta)})
	switch {
	case err != nil:
		return nil, err
	case c.startSK != "" && len(out.Item) == 0:
		return p.readStartListing(ctx, c)
	case c.startSK != "" || len(out.Item) == 0:
		return nil, nil
	}
	var d decoder
	m := parseMetaRow(&d, out.Item)
	if d.err != nil {
		return nil, d.err
	}
	l := &provider.InstanceListing{InstanceInfo: provider.InstanceInfo{
		InstanceID:           id,
		OrchestrationName:    m.name,
		OrchestrationVersion: cmp.Or(m.version, provider.UnknownVersion),
		CurrentExecutionID:   m.current,
		Status:               cmp.Or(m.status, provider.StatusUnknown),
		CreatedAt:            uint64(max(m.createdAt, 0)),
		UpdatedAt:            uint64(max(m.updatedAt, 0)),
		ParentInstanceID:     m.parent,
	}}
	if m.currentCopy != nil && m.currentCopy.completedAt != nil {
		l.CompletedAt = uint64(max(*m.currentCopy.completedAt, 0))
	}
	if l.Status == provider.StatusFailed {
		x, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(id), keys.ExecSK(m.current))})
		if err != nil {
			return nil, err
		}
		l.Output = d.optStr(x.Item, attrOutput)
	}
	return l, d.err
}

// readStartListing describes the instance of c, the entry of a queued
// start, from the start row; nil when a turn has consumed it.
func (p *Provider) readStartListing(ctx context.Context, c listCandidate) (*provider.InstanceListing, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: key(keys.InstancePK(c.entry.InstanceID), c.startSK)})
	if err != nil || len(out.Item) == 0 {
		return nil, err
	}
	var d decoder
	data := d.payload(out.Item, attrItem)
	if d.err != nil {
		return nil, d.err
	}
	w, err := provider.UnmarshalWorkItem([]byte(data))
	start, ok := w.(provider.StartOrchestrationItem)
	if err != nil || !ok {
		return nil, nil
	}
	l := c.entry
	l.OrchestrationName = start.Orchestration
	l.OrchestrationVersion = provider.UnknownVersion
	if start.Version != nil {
		l.OrchestrationVersion = *start.Version
	}
	if start.ParentInstance != nil {
		l.ParentInstanceID = *start.ParentInstance
	}
	l.UpdatedAt = l.CreatedAt
	return &l, nil
}

// encodePageToken returns the token continuing after order key last.
func encodePageToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenPrefix + last))
}

// decodePageToken returns the order key token continues after; "" for "".
func decodePageToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", err
	}
	last, ok := strings.CutPrefix(string(b), pageTokenPrefix)
	if !ok || last == "" {
		return "", errInvalidPageToken
	}
	return last, nil
}
