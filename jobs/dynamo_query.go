package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// Sizes of the index reads and table reads of a query.
const (
	// maxBatchGet is the most keys one BatchGetItem takes.
	maxBatchGet = 100
	// minLimitedPage and maxLimitedPage bound the Limit of the index pages
	// of a query with a limit: Offset+Limit, within these bounds.
	minLimitedPage = 25
	maxLimitedPage = 1000
	// maxUnprocessedWait caps the wait before asking again for keys a
	// BatchGetItem left unprocessed without returning anything.
	maxUnprocessedWait = time.Second
)

// Query returns the jobs that match filter; see [Store.Query].
//
// It reads the instances index: one Query per shard, all shards in
// parallel, each bounded by li_sk < <NextRunTimeLTE+1 ms, 20 digits> when
// the filter has a NextRunTimeLTE (so the scheduler's due-job poll reads
// only due jobs) and filtering on status (projected into the index) when
// the filter has statuses. It merges the shards' rows by index sort key
// and reads the candidates from the table with consistent BatchGetItem
// requests (ConsistentRead, up to 100 keys, keys left unprocessed asked
// again), because the index lags behind the table; a job is returned only
// if the item read matches the whole filter.
//
// Without a Limit, index pages are DynamoDB's (1 MB) and every page of
// every shard is read. With one, each index page holds at most
// max(25, min(1000, Offset+Limit)) rows, table reads start with as many
// keys as jobs are still needed (doubling after each read that fell
// short), and reading stops once Offset+Limit jobs matched and the rest
// of the last next run time read is in. Results are sorted by the items'
// next run time (none last), then id, and Offset and Limit apply last.
//
// Cost: the index rows read (eventually consistent: 0.5 RCU per 4 KB of a
// page) plus 1 RCU per 4 KB of each candidate read from the table. The
// due-job poll with a Limit of n costs one Query per shard and about n
// item reads.
//
// The index is eventually consistent: a job written within its lag (well
// under a second on DynamoDB) may be missed or be read at its old place in
// the order. Every job returned is as the table holds it and matches the
// filter.
func (s *DynamoStore) Query(ctx context.Context, filter Filter) ([]Job, error) {
	filter, err := normalFilter(filter)
	if err != nil {
		return nil, err
	}
	need := 0
	if filter.Limit > 0 {
		need = filter.Offset + filter.Limit
	}
	found, err := s.find(ctx, filter, need)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(found, compareJobs)
	if filter.Offset >= len(found) {
		return []Job{}, nil
	}
	found = found[filter.Offset:]
	if filter.Limit > 0 && filter.Limit < len(found) {
		found = found[:filter.Limit]
	}
	return found, nil
}

// Count returns how many jobs match filter; see [Store.Count].
//
// Without a metadata condition it counts index rows: one Query per shard
// and page (1 MB of index rows each), all shards in parallel, with Select
// COUNT, bounded and filtered as [DynamoStore.Query] does; what it counts
// lags as the index does. With a metadata condition (metadata is not in
// the index) it reads and checks each candidate as Query does.
func (s *DynamoStore) Count(ctx context.Context, filter Filter) (int, error) {
	filter, err := normalFilter(filter)
	if err != nil {
		return 0, err
	}
	if len(filter.Metadata) > 0 {
		found, err := s.find(ctx, filter, 0)
		return len(found), err
	}
	counts := make([]int, s.o.shards)
	err = s.eachShard(func(shard int) error {
		in := s.indexQuery(shard, filter, 0, false)
		in.Select = types.SelectCount
		for {
			out, err := s.o.Client.Query(ctx, in, s.skew.Option)
			if err != nil {
				return fmt.Errorf("jobs: count shard %d: %w", shard, err)
			}
			counts[shard] += int(out.Count)
			if len(out.LastEvaluatedKey) == 0 {
				return nil
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	})
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, err
}

// find returns the jobs that match filter, read from the table, in no
// particular order: all of them when need is 0, else at least need of
// them when there are that many, including every match the index places
// at or before the need-th.
func (s *DynamoStore) find(ctx context.Context, filter Filter, need int) ([]Job, error) {
	pageSize := 0
	if need > 0 {
		pageSize = max(minLimitedPage, min(maxLimitedPage, need))
	}
	cursors := make([]*shardCursor, s.o.shards)
	err := s.eachShard(func(shard int) error {
		cursors[shard] = &shardCursor{in: s.indexQuery(shard, filter, pageSize, true)}
		return cursors[shard].fill(ctx, s.o.Client)
	})
	if err != nil {
		return nil, err
	}
	var (
		found     []Job
		pending   []string
		seen      = map[string]bool{}
		lastGroup string
		stopping  bool
		reads     int
	)
	for {
		c := headCursor(cursors)
		if c == nil {
			break
		}
		group := jobIndexTimePart(c.headSK())
		if stopping && group != lastGroup {
			break
		}
		lastGroup = group
		id, err := c.pop(ctx, s.o.Client)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		pending = append(pending, id)
		batch := maxBatchGet
		if need > 0 && !stopping {
			// As many as still needed, doubled after each read that
			// came back short of matches.
			batch = min(maxBatchGet, max(1, need-len(found))<<min(reads, 7))
		}
		if len(pending) < batch {
			continue
		}
		if found, err = s.verify(ctx, pending, filter, found); err != nil {
			return nil, err
		}
		reads++
		pending = pending[:0]
		stopping = need > 0 && len(found) >= need
	}
	return s.verify(ctx, pending, filter, found)
}

// indexQuery returns the first page's request of shard's index rows that
// may match filter, asking for their pk and li_sk when project is set.
func (s *DynamoStore) indexQuery(shard int, filter Filter, pageSize int, project bool) *dynamodb.QueryInput {
	b := newExprBuilder()
	key := b.name(tables.AttrInstancesPK) + " = " + b.value(&types.AttributeValueMemberS{Value: jobIndexPK(shard)})
	if filter.NextRunTimeLTE != nil {
		bound := jobIndexBefore(*filter.NextRunTimeLTE)
		key += " AND " + b.name(tables.AttrInstancesSK) + " < " + b.value(&types.AttributeValueMemberS{Value: bound})
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.o.TableName),
		IndexName:              aws.String(tables.IndexInstances),
		KeyConditionExpression: aws.String(key),
	}
	if project {
		in.ProjectionExpression = aws.String(b.name(tables.AttrPK) + ", " + b.name(tables.AttrInstancesSK))
	}
	if len(filter.Status) > 0 {
		var either []string
		for _, status := range filter.Status {
			either = append(either, b.name(attrOf(FieldStatus))+" = "+b.value(&types.AttributeValueMemberS{Value: string(status)}))
		}
		in.FilterExpression = aws.String(strings.Join(either, " OR "))
	}
	if pageSize > 0 {
		in.Limit = aws.Int32(int32(pageSize))
	}
	in.ExpressionAttributeNames = b.names
	in.ExpressionAttributeValues = b.values
	return in
}

// eachShard calls fn for every shard in parallel and returns the first
// error.
func (s *DynamoStore) eachShard(fn func(shard int) error) error {
	errs := make([]error, s.o.shards)
	var wg sync.WaitGroup
	for shard := range s.o.shards {
		wg.Go(func() { errs[shard] = fn(shard) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// verify reads the jobs with ids from the table (consistent BatchGetItem
// requests) and appends those that match filter to found.
func (s *DynamoStore) verify(ctx context.Context, ids []string, filter Filter, found []Job) ([]Job, error) {
	if len(ids) == 0 {
		return found, nil
	}
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = jobKey(id)
	}
	request := map[string]types.KeysAndAttributes{
		s.o.TableName: {Keys: keys, ConsistentRead: aws.Bool(true)},
	}
	wait := 10 * time.Millisecond
	for len(request) > 0 {
		out, err := s.o.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request}, s.skew.Option)
		if err != nil {
			return nil, fmt.Errorf("jobs: read jobs: %w", err)
		}
		items := out.Responses[s.o.TableName]
		for _, item := range items {
			job, err := jobFromItem(item)
			if err != nil {
				return nil, err
			}
			if matchesFilter(job, filter) {
				found = append(found, job)
			}
		}
		request = out.UnprocessedKeys
		if len(request) == 0 || len(items) > 0 {
			wait = 10 * time.Millisecond
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, maxUnprocessedWait)
	}
	return found, nil
}

// shardCursor reads one shard's index rows page by page.
type shardCursor struct {
	in    *dynamodb.QueryInput
	rows  []map[string]types.AttributeValue
	pos   int
	ended bool
}

// fill reads pages until one has rows or the shard has no more.
func (c *shardCursor) fill(ctx context.Context, api DynamoAPI) error {
	for !c.ended && c.pos >= len(c.rows) {
		out, err := api.Query(ctx, c.in)
		if err != nil {
			return fmt.Errorf("jobs: query index: %w", err)
		}
		c.rows, c.pos = out.Items, 0
		c.in.ExclusiveStartKey = out.LastEvaluatedKey
		c.ended = len(out.LastEvaluatedKey) == 0
	}
	return nil
}

// headSK returns the index sort key of the next row; the cursor has one.
func (c *shardCursor) headSK() string {
	sk, _ := stringAttr(c.rows[c.pos], tables.AttrInstancesSK)
	return sk
}

// pop returns the job id of the next row and moves past it, reading the
// next page when needed.
func (c *shardCursor) pop(ctx context.Context, api DynamoAPI) (string, error) {
	pk, err := stringAttr(c.rows[c.pos], tables.AttrPK)
	if err != nil {
		return "", fmt.Errorf("jobs: index row: %w", err)
	}
	c.pos++
	if err := c.fill(ctx, api); err != nil {
		return "", err
	}
	return jobIDFromPK(pk)
}

// headCursor returns the cursor whose next row sorts first, nil when all
// have ended.
func headCursor(cursors []*shardCursor) *shardCursor {
	var head *shardCursor
	for _, c := range cursors {
		if c.pos < len(c.rows) && (head == nil || c.headSK() < head.headSK()) {
			head = c
		}
	}
	return head
}
