package console

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/testlog"
)

// dynamoEnv is a table and queues on the emulator with a runtime of the
// test orchestrations on it, and a console over a provider of its own
// whose requests the meter counts, and the items they read the item meter.
type dynamoEnv struct {
	env     *dynamotest.Env
	runtime *durable.Client // the runtime's client
	client  *durable.Client // the console's client
	p       *dynamo.Provider
	meter   *dynamotest.Meter
	items   *itemMeter
}

func newDynamoEnv(t testing.TB) *dynamoEnv {
	t.Helper()
	d := newDynamoStore(t)
	d.runtime = startRuntime(t, d.env.NewProvider(t, dynamotest.Config{}))
	return d
}

// newDynamoStore is newDynamoEnv without the runtime (runtime nil).
func newDynamoStore(t testing.TB) *dynamoEnv {
	t.Helper()
	env := dynamotest.NewEnv(t, true)
	meter, items := &dynamotest.Meter{}, &itemMeter{}
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
		o.Client = env.Endpoints.DynamoDB(env.AWS, meter.Attach, items.attach)
	}})
	return &dynamoEnv{env: env, client: durable.NewClient(p), p: p, meter: meter, items: items}
}

// metered serves path and returns the response, its body and the
// DynamoDB requests the console made for it.
func (d *dynamoEnv) metered(t testing.TB, h http.Handler, path string) (*http.Response, string, dynamotest.Usage) {
	t.Helper()
	d.meter.Reset()
	res, body := get(t, h, path)
	return res, body, d.meter.Reset()
}

// itemMeter counts the items the DynamoDB requests of a client read: the
// items a Query or Scan evaluated (its ScannedCount, filtered out or not)
// and the items a GetItem or BatchGetItem returned.
type itemMeter struct {
	mu    sync.Mutex
	items int
}

func (m *itemMeter) attach(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ConsoleItemMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if err == nil {
					m.mu.Lock()
					m.items += itemsRead(out.Result)
					m.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

// reset sets the count to zero and returns it.
func (m *itemMeter) reset() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.items
	m.items = 0
	return n
}

func itemsRead(result any) int {
	switch out := result.(type) {
	case *dynamodb.QueryOutput:
		return int(out.ScannedCount)
	case *dynamodb.ScanOutput:
		return int(out.ScannedCount)
	case *dynamodb.GetItemOutput:
		if len(out.Item) > 0 {
			return 1
		}
	case *dynamodb.BatchGetItemOutput:
		n := 0
		for _, items := range out.Responses {
			n += len(items)
		}
		return n
	}
	return 0
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
	// The cancel made the counts be read again: the canceled instance is
	// counted apart from the failed one.
	wantCounts(t, body, map[string]string{"All": "11", "Pending": "0", "Running": "0", "Completed": "9", "Failed": "1", "Canceled": "1"})
	if res, _ := post(t, con, "/actions/delete", url.Values{"id": {s.hello}, "csrf": {token}}, cookies); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %s", res.Status)
	}
	if res, _ := get(t, con, "/instance?id="+url.QueryEscape(s.hello)); res.StatusCode != http.StatusNotFound {
		t.Errorf("deleted instance: %s, want 404", res.Status)
	}
}

// seed starts n trivial instances, ids prefixed, and waits until the
// system's metrics count them completed, none pending or running. The
// runtimes work through the starts as they are made.
func seed(ctx context.Context, t testing.TB, c *durable.Client, prefix string, n int) {
	t.Helper()
	id := func(i int) string { return fmt.Sprintf("%s%06d", prefix, i) }
	each := func(do func(id string) error) {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
			slots = make(chan struct{}, 16)
		)
		for i := range n {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if err := do(id(i)); err != nil {
					mu.Lock()
					first = cmp.Or(first, fmt.Errorf("%s: %w", id(i), err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			t.Fatal(first)
		}
	}
	before, err := c.SystemMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	each(func(id string) error { return trivial.Start(ctx, c, id, struct{}{}) })
	// One metrics read a tick instead of n status polls: the seeding's
	// requests are most of this package's time on the shared emulator.
	want := before.TotalInstances + before.PendingInstances + uint64(n)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := c.SystemMetrics(ctx)
		switch {
		case err != nil:
			t.Fatal(err)
		case m.FailedInstances != 0:
			t.Fatalf("%d seeded instances failed", m.FailedInstances)
		case m.PendingInstances == 0 && m.RunningInstances == 0 && m.CompletedInstances >= want:
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("seeding: %v with %d of %d instances completed", ctx.Err(), m.CompletedInstances, want)
		case <-tick.C:
		}
	}
}

// listCost serves a list page and returns its DynamoDB requests, the
// items they read and the listing entries the page says it read.
func listCost(t testing.TB, d *dynamoEnv, con *Console, query string) (dynamotest.Usage, int, int) {
	t.Helper()
	d.items.reset()
	res, body, u := d.metered(t, con, "/instances"+query)
	items := d.items.reset()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("list%s: %s", query, res.Status)
	}
	m := regexp.MustCompile(`; (\d+) listing entries read`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("list%s: the page does not say how many entries it read", query)
	}
	examined, _ := strconv.Atoi(m[1])
	return u, items, examined
}

// boundedPages are the list pages TestListPageCostIsBounded loads: the
// first page, a status that every instance has and one none has, an id
// prefix that only old instances match, and orchestration names, which
// the index does not hold (each entry kept is checked on its record).
var boundedPages = []string{"", "?status=Completed", "?status=Failed", "?prefix=a-00000", "?name=Trivial", "?name=NoSuch"}

// TestListPageCostIsBounded shows that a list page reads what its page
// holds, not what the table holds: with 100 instances and with 1,000, no
// request of any page is a Scan, and the items each page reads, counted on
// the responses, stay under a bound set by the page size alone (under
// half of 1,000) and grow less than half as fast as the table. The counts per
// status (SystemMetrics) read no more at 1,000 than the same rule allows.
func TestListPageCostIsBounded(t *testing.T) {
	t.Parallel()
	d := newDynamoStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	// A small page keeps the bound under half the larger table, so the
	// table need not be larger: seeding runs every instance to its end.
	const pageSize, small, large = 5, 100, 1000
	// Counts are held for the test: a page's own reads are measured, and
	// the counts' on their own.
	con := newConsole(t, d.client, func(o *Options) { o.PageSize = pageSize; o.CountsMaxAge = time.Hour })
	seeder := startSeeder(t, d)
	measure := func() (map[string]int, int) {
		listCost(t, d, con, "") // reads the counts it then holds
		items := map[string]int{}
		for _, q := range boundedPages {
			u, n, examined := listCost(t, d, con, q)
			if u.Requests["Scan"] != 0 {
				t.Errorf("list%s: %d Scans", q, u.Requests["Scan"])
			}
			t.Logf("list%s: %v requests, %d items read, %d listing entries examined", q, u.Requests, n, examined)
			items[q] = n
		}
		d.meter.Reset()
		d.items.reset()
		if _, err := con.admin.SystemMetrics(ctx); err != nil {
			t.Fatal(err)
		}
		if u := d.meter.Reset(); u.Requests["Scan"] != 0 {
			t.Errorf("counts: %d Scans", u.Requests["Scan"])
		}
		return items, d.items.reset()
	}
	seed(ctx, t, seeder, "a-", small)
	smallItems, smallCounts := measure()
	seed(ctx, t, seeder, "b-", large-small)
	largeItems, largeCounts := measure()
	t.Logf("counts: %d items read with %d instances, %d with %d", smallCounts, small, largeCounts, large)

	// The index entries a page examines: up to its budget (20 times the
	// page size) and the round that crossed it, which reads at most as
	// many again and a first chunk (three times the page over the
	// streams, plus two each); then a record per entry kept, at most one
	// per entry examined (a name filter checks each on its record).
	shards := d.p.Layout().Shards
	entries := 2*20*pageSize + 3*pageSize + 2*2*shards
	bound := 2 * entries
	if bound >= large/2 {
		t.Fatalf("the bound %d is no bound for %d instances", bound, large)
	}
	for _, q := range boundedPages {
		if n := largeItems[q]; n > bound || n == 0 {
			t.Errorf("list%s read %d items with %d instances; want 1 to %d", q, n, large, bound)
		}
		if smallItems[q]*large/small/2 < largeItems[q] {
			t.Errorf("list%s read %d items with %d instances and %d with %d: half as fast as the table or faster", q, smallItems[q], small, largeItems[q], large)
		}
	}
	if smallCounts*large/small/2 < largeCounts {
		t.Errorf("counts read %d items with %d instances and %d with %d", smallCounts, small, largeCounts, large)
	}
}

// startSeeder starts a runtime of 8 orchestration slots on d's table, for
// filling it, and returns its client. Its provider has no wake-up queues:
// its client's starts wake it in the process, without a queue's round
// trip. It logs warnings and errors only: thousands of runs would log far
// more than the test needs.
func startSeeder(t testing.TB, d *dynamoEnv) *durable.Client {
	t.Helper()
	return startRuntime(t, d.env.NewQuietWriter(t, dynamotest.Config{}), func(o *durable.Options) {
		o.OrchestrationConcurrency = 8
		o.Logger = slog.New(minLevel{testlog.New(t).Handler(), slog.LevelWarn})
	})
}

// minLevel passes the records of its level and above to its handler.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}
func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
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
	d := newDynamoStore(b)
	ctx, cancel := context.WithTimeout(b.Context(), time.Hour)
	defer cancel()
	seed(ctx, b, startSeeder(b, d), "bench-", n)
	con := newConsole(b, d.client, func(o *Options) { o.CountsMaxAge = time.Nanosecond })
	shards := d.p.Layout().Shards
	var requests, examined int
	var capacity float64
	for b.Loop() {
		u, _, e := listCost(b, d, con, "")
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

// TestListCountsPendingStarts: instances started and not yet run (no
// runtime serves the table) are counted as Pending, and in All, from the
// counter cells: the list's counts and the System page show them, read
// with one Query.
func TestListCountsPendingStarts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := newDynamoStore(t)
	for _, id := range []string{"pending-a", "pending-b"} {
		if err := d.client.StartOrchestration(ctx, id, "Hello", "x"); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	con := newConsole(t, d.client)
	res, body, used := d.metered(t, con, "/instances")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /instances: %s", res.Status)
	}
	wantCounts(t, body, map[string]string{"All": "2", "Pending": "2", "Running": "0", "Completed": "0", "Failed": "0", "Canceled": "0"})
	if got := listIDs(body); !sameSet(got, []string{"pending-a", "pending-b"}) {
		t.Errorf("the list shows %q, want both pending instances", got)
	}
	if used.Requests["Scan"] != 0 {
		t.Errorf("the list page made %v; want no Scan", used.Requests)
	}
	_, body = get(t, con, "/system")
	wantIn(t, "system", body, []string{`id="m-pending">2<`, `id="m-instances">2<`}, nil)
}
