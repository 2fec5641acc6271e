package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Chart geometry, in SVG units.
const (
	chartWidth   = 1000
	chartHeight  = 240
	chartLeft    = 60
	chartBottom  = 24
	chartBuckets = 48
)

// chartWindows are the time windows the chart offers.
var chartWindows = []struct {
	Name string
	D    time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// systemData is the system page's. Each part is read on its own: one that
// fails shows its error in its place, and the others show.
type systemData struct {
	Depths     provider.QueueDepths
	DepthsErr  string
	Metrics    provider.SystemMetrics
	Counts     statusCounts // the instance counts of Metrics
	MetricsErr string
	Chart      chart
	Windows    []string
	Window     string
}

// chart is the instances-by-status chart.
type chart struct {
	Width, Height, Left, Bottom int
	Bars                        []chartBar
	Ticks                       []tlTick
	MaxLabel                    string
	Instances                   int
	Truncated                   bool
	Err                         string
}

// chartBar is one bucket: stacked rectangles, bottom up.
type chartBar struct {
	Rects []chartRect
	Title string
}

// chartRect is one status's part of a bucket.
type chartRect struct {
	X, Y, W, H int
	Class      string
}

// handleSystem serves the system page.
func (c *Console) handleSystem(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	window := r.URL.Query().Get("window")
	if window == "" {
		window = "24h"
	}
	i := slices.IndexFunc(chartWindows, func(w struct {
		Name string
		D    time.Duration
	}) bool {
		return w.Name == window
	})
	if i < 0 {
		c.fail(w, r, "system", fmt.Errorf("%w: window %q: want 1h, 24h or 7d", errBadRequest, window))
		return
	}
	d := systemData{Window: window}
	for _, w := range chartWindows {
		d.Windows = append(d.Windows, w.Name)
	}
	c.readSystem(ctx, &d, chartWindows[i].D)
	c.render(w, r, "system.html", page{Title: "System", Nav: "system", RefreshMs: c.refreshMs()}, d)
}

// readSystem reads the system page's three parts at once, so that the
// page waits for the slowest only; a part that fails holds its error.
func (c *Console) readSystem(ctx context.Context, d *systemData, window time.Duration) {
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		if d.Depths, err = c.admin.QueueDepths(ctx); err != nil {
			c.o.Logger.Warn("console: queue depths", "err", err)
			d.DepthsErr = errText(err)
		}
	})
	wg.Go(func() {
		var err error
		if d.Metrics, err = c.admin.SystemMetrics(ctx); err != nil {
			c.o.Logger.Warn("console: system metrics", "err", err)
			d.MetricsErr = errText(err)
		}
		d.Counts = countsOf(d.Metrics, c.o.Now())
	})
	wg.Go(func() { d.Chart = c.statusChart(ctx, window) })
	wg.Wait()
}

// statusChart charts the instances created in the last window by their
// status over time: at the end of each bucket, how many had not ended,
// had completed, or had failed.
func (c *Console) statusChart(ctx context.Context, window time.Duration) chart {
	ch := chart{Width: chartWidth, Height: chartHeight, Left: chartLeft, Bottom: chartBottom}
	end := c.o.Now()
	start := end.Add(-window)
	listings, truncated, err := c.chartListings(ctx, start, end)
	if err != nil {
		c.o.Logger.Warn("console: status chart", "err", err)
		ch.Err = errText(err)
		return ch
	}
	ch.Instances, ch.Truncated = len(listings), truncated
	step := window / chartBuckets
	type bucket struct{ open, completed, failed int }
	buckets := make([]bucket, chartBuckets)
	peak := 1
	for b := range buckets {
		te := uint64(start.Add(step * time.Duration(b+1)).UnixMilli())
		for _, l := range listings {
			switch {
			case l.CreatedAt > te:
			case l.CompletedAt == 0 || l.CompletedAt > te:
				buckets[b].open++
			case l.Status == provider.StatusFailed:
				buckets[b].failed++
			default:
				buckets[b].completed++
			}
		}
		peak = max(peak, buckets[b].open+buckets[b].completed+buckets[b].failed)
	}
	plotH := chartHeight - chartBottom - 8
	barW := (chartWidth - chartLeft) / chartBuckets
	for b, k := range buckets {
		x, y := chartLeft+b*barW, chartHeight-chartBottom
		bar := chartBar{Title: fmt.Sprintf("%s: %d not ended, %d completed, %d failed",
			start.Add(step*time.Duration(b+1)).UTC().Format("2006-01-02 15:04"), k.open, k.completed, k.failed)}
		for _, part := range []struct {
			n     int
			class string
		}{{k.completed, "c-completed"}, {k.failed, "c-failed"}, {k.open, "c-running"}} {
			h := part.n * plotH / peak
			if part.n > 0 {
				h = max(h, 1)
			}
			y -= h
			bar.Rects = append(bar.Rects, chartRect{X: x + 1, Y: y, W: barW - 2, H: h, Class: part.class})
		}
		ch.Bars = append(ch.Bars, bar)
	}
	for i := range 5 {
		t := start.Add(window * time.Duration(i) / 4)
		ch.Ticks = append(ch.Ticks, tlTick{X: chartLeft + (chartWidth-chartLeft)*i/4, Label: t.UTC().Format("01-02 15:04"), Last: i == 4})
	}
	ch.MaxLabel = fmt.Sprint(peak)
	return ch
}

// chartListings lists what the index holds of the instances created in
// [start, end), up to Options.MaxChartInstances.
func (c *Console) chartListings(ctx context.Context, start, end time.Time) ([]provider.InstanceListing, bool, error) {
	q := provider.InstanceQuery{IndexOnly: true, CreatedFrom: start, CreatedTo: end.Add(time.Millisecond), PageSize: provider.MaxInstancePageSize}
	var out []provider.InstanceListing
	for {
		p, err := c.listPage(ctx, q)
		if err != nil {
			return nil, false, fmt.Errorf("chart: %w", err)
		}
		out = append(out, p.Instances...)
		if p.NextPageToken == "" {
			return out, false, nil
		}
		if len(out) >= c.o.MaxChartInstances {
			return out, true, nil
		}
		q.PageToken = p.NextPageToken
	}
}
