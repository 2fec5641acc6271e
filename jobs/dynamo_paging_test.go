package jobs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/jobs"
)

// countingClient counts the index queries and table reads a store makes,
// and can hold back part of each BatchGetItem as DynamoDB does when a
// response would exceed 16 MB.
type countingClient struct {
	*dynamodb.Client
	queries, batchGets atomic.Int64
	// batchLimit, when positive, is the most keys one BatchGetItem
	// reads; the rest come back as UnprocessedKeys.
	batchLimit int
}

func (c *countingClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.Client.Query(ctx, in, optFns...)
}

func (c *countingClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.batchGets.Add(1)
	if c.batchLimit <= 0 {
		return c.Client.BatchGetItem(ctx, in, optFns...)
	}
	sent := map[string]types.KeysAndAttributes{}
	held := map[string]types.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		n := min(len(ka.Keys), c.batchLimit)
		sent[table] = types.KeysAndAttributes{Keys: ka.Keys[:n], ConsistentRead: ka.ConsistentRead}
		if n < len(ka.Keys) {
			held[table] = types.KeysAndAttributes{Keys: ka.Keys[n:], ConsistentRead: ka.ConsistentRead}
		}
	}
	out, err := c.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: sent}, optFns...)
	if err != nil {
		return nil, err
	}
	for table, ka := range out.UnprocessedKeys {
		ka.Keys = append(ka.Keys, held[table].Keys...)
		held[table] = ka
	}
	out.UnprocessedKeys = held
	return out, nil
}

// Index pages of a megabyte: jobs with ids of 1,500 bytes in one shard
// fill several, and Query and Count page through all of them; reads of the
// table that come back partly unprocessed are completed.
func TestDynamoStore_IndexPages(t *testing.T) {
	t.Parallel()
	const n = 1000
	env := newDynamoEnv(t)
	client := &countingClient{Client: env.db, batchLimit: 37}
	s := env.store(t, func(o *jobs.DynamoOptions) {
		o.Client = client
		jobs.WithShards(1)(o)
	})
	ctx := t.Context()
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	want := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		// Ids sort as their numbers; next run times go down with i, so
		// the order of the results is the reverse of the ids'.
		id := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 1500))
		want[n-1-i] = id
		next := base.Add(time.Duration(n-i) * time.Second)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := s.Create(ctx, jobs.Job{ID: id, NextRunTime: &next}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Create: %v", err)
	}

	client.queries.Store(0)
	got, err := s.Query(ctx, jobs.Filter{})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if !slices.Equal(jobIDs(got), want) {
		t.Fatalf("Query returned %d jobs, want %d in order", len(got), n)
	}
	if q := client.queries.Load(); q < 2 {
		t.Fatalf("Query read the index in %d pages; the test wants several", q)
	}
	if b := client.batchGets.Load(); b < n/37 {
		t.Fatalf("%d BatchGetItem requests for %d jobs in batches of 37", b, n)
	}

	client.queries.Store(0)
	count, err := s.Count(ctx, jobs.Filter{Status: []jobs.Status{jobs.StatusScheduled}})
	if err != nil || count != n {
		t.Fatalf("Count = %d, %v; want %d", count, err, n)
	}
	if q := client.queries.Load(); q < 2 {
		t.Fatalf("Count read the index in %d pages; the test wants several", q)
	}

	bound := base.Add(100 * time.Second)
	got, err = s.Query(ctx, jobs.Filter{NextRunTimeLTE: &bound, Offset: 10, Limit: 20})
	if err != nil || !slices.Equal(jobIDs(got), want[10:30]) {
		t.Fatalf("Query(due, offset 10, limit 20) = %d jobs, %v; want the 10th to 30th", len(got), err)
	}
	got, err = s.Query(ctx, jobs.Filter{Offset: n - 5, Limit: 20})
	if err != nil || !slices.Equal(jobIDs(got), want[n-5:]) {
		t.Fatalf("Query(offset n-5, limit 20) = %d jobs, %v; want the last 5", len(got), err)
	}
}

func jobIDs(list []jobs.Job) []string {
	out := make([]string, len(list))
	for i, j := range list {
		out[i] = j.ID
	}
	return out
}
