package dynamo_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/provider"
)

// allPages lists every page of q and returns the ids in order, checking
// that no page is larger than asked and that the listing issued no Scan.
func allPages(t *testing.T, p *dynamo.Provider, meter *dynamotest.Meter, q provider.InstanceQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%+v: more than 100 pages", q)
		}
		meter.Reset()
		page, err := p.ListInstancesPage(t.Context(), q)
		must(t, err, "ListInstancesPage")
		u := meter.Reset()
		if u.Requests["Scan"] != 0 {
			t.Fatalf("ListInstancesPage issued %d Scans", u.Requests["Scan"])
		}
		if len(page.Instances) > q.EffectivePageSize() {
			t.Fatalf("page of %d instances, asked for %d", len(page.Instances), q.EffectivePageSize())
		}
		for _, l := range page.Instances {
			ids = append(ids, l.InstanceID)
		}
		if page.NextPageToken == "" {
			return ids
		}
		q.PageToken = page.NextPageToken
	}
}

// TestListInstancesPage pages through running and ended instances with
// every criterion and checks each listing against ListInstances, the
// listing that reads the whole index.
func TestListInstancesPage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	meter := &dynamotest.Meter{}
	p, _ := dynamotest.New(t, dynamotest.Config{Meter: meter, ShortPoll: true})
	for i := range 3 {
		id := fmt.Sprintf("page-run-%d", i)
		item := startAndFetch(ctx, t, p, id)
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, activities(id, 1)), "ack of "+id)
	}
	lives := map[string]life{}
	for i := range 21 {
		lives[fmt.Sprintf("page-end-%02d", i)] = lifeOf(i)
	}
	runLives(ctx, t, lives, p)

	all, err := p.ListInstances(ctx)
	must(t, err, "ListInstances")
	if len(all) != 24 {
		t.Fatalf("ListInstances = %d instances, want 24", len(all))
	}
	keep := func(f func(string) bool) []string {
		var out []string
		for _, id := range all {
			if f(id) {
				out = append(out, id)
			}
		}
		return out
	}
	failed, err := p.ListInstancesByStatus(ctx, provider.StatusFailed)
	must(t, err, "ListInstancesByStatus")
	running, err := p.ListInstancesByStatus(ctx, provider.StatusRunning)
	must(t, err, "ListInstancesByStatus")

	check := func(t *testing.T, name string, q provider.InstanceQuery, want []string) {
		t.Helper()
		if got := allPages(t, p, meter, q); !slices.Equal(got, want) {
			t.Errorf("%s: listed %v, want %v", name, got, want)
		}
	}
	check(t, "every instance, 5 a page", provider.InstanceQuery{PageSize: 5}, all)
	check(t, "every instance, index only", provider.InstanceQuery{PageSize: 7, IndexOnly: true}, all)
	check(t, "failed, 2 a page", provider.InstanceQuery{PageSize: 2, Statuses: []string{provider.StatusFailed}}, failed)
	check(t, "running", provider.InstanceQuery{Statuses: []string{provider.StatusRunning}}, running)
	check(t, "running or failed", provider.InstanceQuery{PageSize: 4, Statuses: []string{provider.StatusRunning, provider.StatusFailed}},
		keep(func(id string) bool { return slices.Contains(failed, id) || slices.Contains(running, id) }))
	check(t, "id prefix", provider.InstanceQuery{PageSize: 3, IDPrefix: "page-end-1"}, keep(func(id string) bool { return strings.HasPrefix(id, "page-end-1") }))
	even := func(id string) bool { return id[len(id)-1]%2 == 0 }
	check(t, "match", provider.InstanceQuery{PageSize: 3, Match: func(l *provider.InstanceListing) bool { return even(l.InstanceID) }}, keep(even))
	check(t, "a small examination budget", provider.InstanceQuery{PageSize: 3, MaxExamined: 2, Statuses: []string{provider.StatusFailed}}, failed)

	t.Run("records", func(t *testing.T) { listedRecords(t, p) })

	t.Run("time range", func(t *testing.T) { listedTimeRange(t, p, check, keep) })

	t.Run("cost", func(t *testing.T) { listedCost(t, p, meter) })

	t.Run("bad token", func(t *testing.T) {
		_, err := p.ListInstancesPage(ctx, provider.InstanceQuery{PageToken: "not-a-token!"})
		if !errors.Is(err, provider.ErrInvalidInput) {
			t.Fatalf("ListInstancesPage with a bad token: %v, want ErrInvalidInput", err)
		}
	})
}

// listedRecords checks that a page's instances are as InstanceInfo
// describes them.
func listedRecords(t *testing.T, p *dynamo.Provider) {
	ctx := t.Context()
	page, err := p.ListInstancesPage(ctx, provider.InstanceQuery{PageSize: provider.MaxInstancePageSize})
	must(t, err, "ListInstancesPage")
	for _, l := range page.Instances {
		info, err := p.InstanceInfo(ctx, l.InstanceID)
		must(t, err, "InstanceInfo")
		if l.OrchestrationName != info.OrchestrationName || l.Status != info.Status || l.CreatedAt != info.CreatedAt || l.CurrentExecutionID != info.CurrentExecutionID {
			t.Errorf("%s: listed %+v; InstanceInfo says %+v", l.InstanceID, l.InstanceInfo, *info)
		}
		if l.Status == provider.StatusFailed && (l.Output == nil || *l.Output != "boom") {
			t.Errorf("%s: failed instance listed with output %v, want boom", l.InstanceID, l.Output)
		}
		if ended := l.Status == provider.StatusCompleted || l.Status == provider.StatusFailed; ended != (l.CompletedAt != 0) {
			t.Errorf("%s: %s with CompletedAt %d", l.InstanceID, l.Status, l.CompletedAt)
		}
	}
}

// listedTimeRange checks the creation-time criteria.
func listedTimeRange(t *testing.T, p *dynamo.Provider, check func(*testing.T, string, provider.InstanceQuery, []string), keep func(func(string) bool) []string) {
	ctx := t.Context()
	page, err := p.ListInstancesPage(ctx, provider.InstanceQuery{PageSize: provider.MaxInstancePageSize, IndexOnly: true})
	must(t, err, "ListInstancesPage")
	mid := page.Instances[len(page.Instances)/2].CreatedAt
	from, to := time.UnixMilli(int64(mid)), time.UnixMilli(int64(mid)+1)
	var want []string
	for _, l := range page.Instances {
		if l.CreatedAt == mid {
			want = append(want, l.InstanceID)
		}
	}
	check(t, "created in one millisecond", provider.InstanceQuery{PageSize: 2, CreatedFrom: from, CreatedTo: to}, want)
	check(t, "created before", provider.InstanceQuery{PageSize: 5, CreatedTo: from}, keep(func(id string) bool {
		i := slices.IndexFunc(page.Instances, func(l provider.InstanceListing) bool { return l.InstanceID == id })
		return page.Instances[i].CreatedAt < mid
	}))
}

// listedCost checks what one page of 5 costs.
func listedCost(t *testing.T, p *dynamo.Provider, meter *dynamotest.Meter) {
	ctx := t.Context()
	meter.Reset()
	page, err := p.ListInstancesPage(ctx, provider.InstanceQuery{PageSize: 5})
	must(t, err, "ListInstancesPage")
	u := meter.Reset()
	shards := p.Layout().Shards
	failedOnPage := 0
	for _, l := range page.Instances {
		if l.Status == provider.StatusFailed {
			failedOnPage++
		}
	}
	// One round of Queries (two per shard), two when the newest
	// entries of one range confirm too few of the others'; a record
	// per instance, an execution record per failed one.
	if q := u.Requests["Query"]; q != 2*shards && q != 4*shards || u.Requests["GetItem"] != 5+failedOnPage || u.Total() != q+5+failedOnPage {
		t.Errorf("a page of 5 made requests %v; want %d or %d Queries and %d GetItems", u.Requests, 2*shards, 4*shards, 5+failedOnPage)
	}
	chunk := (3*5+2*shards-1)/(2*shards) + 2
	if page.Examined > 2*shards*3*chunk {
		t.Errorf("a page of 5 examined %d entries, want at most %d", page.Examined, 2*shards*3*chunk)
	}
}
