package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
)

// dynamoEnv is a table and queues on the emulator with a runtime of the
// test orchestrations on it, and a console over a provider of its own
// whose requests the meter counts.
type dynamoEnv struct {
	env     *dynamotest.Env
	runtime *durable.Client // the runtime's client
	client  *durable.Client // the console's client
	p       *dynamo.Provider
	meter   *dynamotest.Meter
}

func newDynamoEnv(t testing.TB) *dynamoEnv {
	t.Helper()
	env := dynamotest.NewEnv(t, true)
	rt := env.NewProvider(t, dynamotest.Config{})
	meter := &dynamotest.Meter{}
	p := env.NewProvider(t, dynamotest.Config{Meter: meter})
	return &dynamoEnv{env: env, runtime: startRuntime(t, rt), client: durable.NewClient(p), p: p, meter: meter}
}

// metered serves path and returns the response, its body and the
// DynamoDB requests the console made for it.
func (d *dynamoEnv) metered(t testing.TB, h http.Handler, path string) (*http.Response, string, dynamotest.Usage) {
	t.Helper()
	d.meter.Reset()
	res, body := get(t, h, path)
	return res, body, d.meter.Reset()
}

// TestConsoleOnDynamoDB serves every page over the DynamoDB provider on
// the emulator, with filters and actions, and checks that no page but the
// system page's queue depths (a Scan of the ready index, by design) issues
// a Scan.
func TestConsoleOnDynamoDB(t *testing.T) {
	t.Parallel()
	d := newDynamoEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s := startScene(ctx, t, d.runtime, "d-")
	con := newConsole(t, d.client, func(o *Options) { o.AllowActions = true; o.PageSize = 4 })

	pages := map[string][]string{
		"/instances?size=50":                          {s.hello, s.failed, s.long},
		"/instances?status=Running":                   {s.approval, s.sleeper},
		"/instances?status=Failed":                    {s.failed},
		"/instances?name=FanOut":                      {s.fan},
		"/instances?prefix=d-app":                     {s.approval},
		"/instances?from=2000-01-01T00:00&size=50":    {s.hello, s.fan, s.parent, s.approval, s.failed, s.sleeper, s.xss, s.long},
		"/instance?id=" + url.QueryEscape(s.fan):      {"activity Work #", "(retry 1)"},
		"/instance?id=" + url.QueryEscape(s.parent):   {s.parent + "::sub::2"},
		"/instance?id=" + url.QueryEscape(s.approval): {"<strong>approve</strong>"},
		"/instance?id=" + url.QueryEscape(s.xss):      {"&lt;script&gt;alert(1)&lt;/script&gt;"},
	}
	for path, want := range pages {
		res, body, u := d.metered(t, con, path)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, res.Status)
			continue
		}
		if u.Requests["Scan"] != 0 {
			t.Errorf("%s: %d Scans, want none", path, u.Requests["Scan"])
		}
		if u.Total() == 0 {
			t.Errorf("%s: no DynamoDB request counted", path)
		}
		for _, w := range want {
			if re := regexp.QuoteMeta(w); !regexp.MustCompile(re).MatchString(body) && !contains(listIDs(body), w) {
				t.Errorf("%s: %.60q not on the page", path, w)
			}
		}
	}
	// The first list page holds 4 of the 11 instances, and links to the next.
	_, body := get(t, con, "/instances")
	if ids := listIDs(body); len(ids) != 4 || !regexp.MustCompile(`rel="next"`).MatchString(body) {
		t.Errorf("first page: %d instances, next link %v", len(ids), regexp.MustCompile(`rel="next"`).MatchString(body))
	}
	res, body, _ := d.metered(t, con, "/system")
	if res.StatusCode != http.StatusOK || !regexp.MustCompile(`id="m-instances">11<`).MatchString(body) {
		t.Errorf("/system: %s", res.Status)
	}

	// Actions through the console, taken by the runtime.
	cookies, token := confirmPage(t, con, "raise", s.approval)
	if res, _ := post(t, con, "/actions/raise", url.Values{"id": {s.approval}, "csrf": {token}, "event": {"approve"}, "data": {`"ops"`}}, cookies); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("raise: %s", res.Status)
	}
	if st := waitDone(t, d.runtime, s.approval); st.State != durable.StateCompleted {
		t.Errorf("approval after the event: %v", st.State)
	}
	if res, _ := post(t, con, "/actions/cancel", url.Values{"id": {s.sleeper}, "csrf": {token}}, cookies); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %s", res.Status)
	}
	waitDone(t, d.runtime, s.sleeper)
	_, body = get(t, con, "/instances?status=Canceled")
	if ids := listIDs(body); !sameSet(ids, []string{s.sleeper}) {
		t.Errorf("status=Canceled lists %q", ids)
	}
	if res, _ := post(t, con, "/actions/delete", url.Values{"id": {s.hello}, "csrf": {token}}, cookies); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %s", res.Status)
	}
	if res, _ := get(t, con, "/instance?id="+url.QueryEscape(s.hello)); res.StatusCode != http.StatusNotFound {
		t.Errorf("deleted instance: %s, want 404", res.Status)
	}
}

// seed starts n trivial instances, ids prefixed, and waits for them to
// complete.
func seed(ctx context.Context, t testing.TB, c *durable.Client, prefix string, n int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 16)
	)
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			id := fmt.Sprintf("%s%06d", prefix, i)
			err := trivial.Start(ctx, c, id, struct{}{})
			if err == nil {
				_, err = c.WaitForCompletion(ctx, id)
			}
			if err != nil {
				mu.Lock()
				first = errorsJoin(first, fmt.Errorf("%s: %w", id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// listCost serves the first list page (of pageSize) and returns its
// DynamoDB requests, the capacity they consumed and the listing entries
// the page says it read.
func listCost(t testing.TB, d *dynamoEnv, con *Console, query string) (dynamotest.Usage, int) {
	t.Helper()
	res, body, u := d.metered(t, con, "/instances"+query)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("list: %s", res.Status)
	}
	m := regexp.MustCompile(`; (\d+) listing entries read`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the list page does not say how many entries it read")
	}
	examined, _ := strconv.Atoi(m[1])
	return u, examined
}

// TestListPageCostIsBounded shows that the list page reads what its page
// holds, not what the table holds: its requests and read units are the
// same with 60 instances in the table and with 360, the entries it
// examines are bounded by the page size and the shard count, and no
// request is a Scan. The counts per status (SystemMetrics)
// read the counter cells and the instances that have not ended, none
// here.
func TestListPageCostIsBounded(t *testing.T) {
	t.Parallel()
	d := newDynamoEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const pageSize = 20
	con := newConsole(t, d.client, func(o *Options) { o.PageSize = pageSize; o.CountsMaxAge = time.Nanosecond })
	shards := d.p.Layout().Shards

	seed(ctx, t, d.runtime, "a-", 60)
	small, smallExamined := listCost(t, d, con, "")
	seed(ctx, t, d.runtime, "b-", 300)
	large, largeExamined := listCost(t, d, con, "")
	t.Logf("a page of %d: with 60 instances %v requests, %.1f capacity units, %d entries examined; with 360 %v, %.1f, %d",
		pageSize, small.Requests, small.TotalCapacity(), smallExamined, large.Requests, large.TotalCapacity(), largeExamined)
	for _, u := range []dynamotest.Usage{small, large} {
		if u.Requests["Scan"] != 0 {
			t.Errorf("the list page issued %d Scans", u.Requests["Scan"])
		}
	}
	// One or two rounds of Queries of the instances index, two per shard
	// each (the entries of running and of ended instances), a GetItem per
	// instance shown; SystemMetrics: the cells and a Query per shard.
	for n, u := range map[int]dynamotest.Usage{60: small, 360: large} {
		if q := u.Requests["Query"] - 1 - shards; q != 2*shards && q != 4*shards || u.Requests["GetItem"] != pageSize || u.Total() != q+1+shards+pageSize {
			t.Errorf("list page requests with %d instances: %v", n, u.Requests)
		}
	}
	// Each round reads at most so many entries per range, the second
	// twice as many as the first: a bound below the table's size.
	chunk := (3*pageSize+2*shards-1)/(2*shards) + 2
	if bound := 2 * shards * 3 * chunk; bound >= 360 || largeExamined > bound {
		t.Errorf("entries examined with 360 instances: %d; want at most %d", largeExamined, bound)
	}
	if large.TotalCapacity() > small.TotalCapacity()+2 {
		t.Errorf("capacity: %.1f units with 360 instances against %.1f with 60", large.TotalCapacity(), small.TotalCapacity())
	}
	// A filter that matches nothing still reads no Scan, and shows nothing.
	if u, _ := listCost(t, d, con, "?status=Failed"); u.Requests["Scan"] != 0 {
		t.Errorf("status=Failed: %v", u.Requests)
	}
}

// benchInstancesEnv sizes BenchmarkListPage's table (default 1,000
// instances; FetchCost in the benchmark module measures 100,000).
const benchInstancesEnv = "DURADYN_CONSOLE_BENCH_INSTANCES"

// BenchmarkListPage serves the first list page of 50 over a seeded table
// on the emulator and reports its DynamoDB requests, read units and index
// entries examined per page; it fails when a page examines more than its
// bound, whatever the table holds.
func BenchmarkListPage(b *testing.B) {
	n := 1000
	if v := os.Getenv(benchInstancesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", benchInstancesEnv, v)
		}
	}
	d := newDynamoEnv(b)
	ctx, cancel := context.WithTimeout(b.Context(), time.Hour)
	defer cancel()
	seed(ctx, b, d.runtime, "bench-", n)
	con := newConsole(b, d.client, func(o *Options) { o.CountsMaxAge = time.Nanosecond })
	shards := d.p.Layout().Shards
	var requests, examined int
	var capacity float64
	for b.Loop() {
		u, e := listCost(b, d, con, "")
		requests, examined, capacity = requests+u.Total(), examined+e, capacity+u.TotalCapacity()
		if u.Requests["Scan"] != 0 {
			b.Fatalf("the list page issued %d Scans", u.Requests["Scan"])
		}
		if chunk := (3*50+2*shards-1)/(2*shards) + 2; e > 2*shards*3*chunk {
			b.Fatalf("a page examined %d entries with %d instances, more than its bound %d", e, n, 2*shards*3*chunk)
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(capacity/float64(b.N), "capacity/op")
	b.ReportMetric(float64(examined)/float64(b.N), "examined/op")
	b.ReportMetric(float64(n), "instances")
}
