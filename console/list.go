package console

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// listFilter is what the instances list is filtered by, from the query
// string.
type listFilter struct {
	Status   string // a display status, "" for all
	Name     string // orchestration name, exact
	Prefix   string // instance id prefix
	From, To string // creation time bounds as given (UTC)
	from, to time.Time
	Token    string
	Size     int
}

// timeLayouts are the forms the time filters take: the browser's
// datetime-local input's, and RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000", time.RFC3339Nano, "2006-01-02"}

// parseListFilter reads the filter from the query string.
func parseListFilter(v url.Values, defaultSize int) (listFilter, error) {
	f := listFilter{
		Status: v.Get("status"), Name: v.Get("name"), Prefix: v.Get("prefix"),
		From: v.Get("from"), To: v.Get("to"), Token: v.Get("page"), Size: defaultSize,
	}
	if f.Status != "" {
		i := slices.IndexFunc(statusFilters, func(s string) bool { return strings.EqualFold(s, f.Status) })
		if i < 0 {
			return f, fmt.Errorf("%w: status %q: want one of %s", errBadRequest, f.Status, strings.Join(statusFilters, ", "))
		}
		f.Status = statusFilters[i]
	}
	var err error
	if f.from, err = parseTime(f.From); err != nil {
		return f, fmt.Errorf("%w: from: %v", errBadRequest, err)
	}
	if f.to, err = parseTime(f.To); err != nil {
		return f, fmt.Errorf("%w: to: %v", errBadRequest, err)
	}
	if s := v.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > provider.MaxInstancePageSize {
			return f, fmt.Errorf("%w: size %q: want 1 to %d", errBadRequest, s, provider.MaxInstancePageSize)
		}
		f.Size = n
	}
	return f, nil
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (want 2006-01-02T15:04 in UTC, or RFC 3339)", s)
}

// query is the listing query of the filter.
func (f listFilter) query() provider.InstanceQuery {
	q := provider.InstanceQuery{IDPrefix: f.Prefix, CreatedFrom: f.from, CreatedTo: f.to, PageSize: f.Size, PageToken: f.Token}
	if f.Status != "" {
		q.Statuses = []string{storedStatus(f.Status)}
	}
	if f.Status != "" || f.Name != "" {
		q.Match = func(l *provider.InstanceListing) bool {
			return (f.Name == "" || l.OrchestrationName == f.Name) &&
				(f.Status == "" || displayStatus(l.Status, nil, l.Output) == f.Status)
		}
	}
	return q
}

// with returns the list URL of f changed by set.
func (f listFilter) with(set func(v url.Values)) string {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "name": f.Name, "prefix": f.Prefix, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if set != nil {
		set(v)
	}
	if len(v) == 0 {
		return "/instances"
	}
	return "/instances?" + v.Encode()
}

// listRow is one instance of the list.
type listRow struct {
	ID, Name, Version, Status, Parent, Failure string
	Execution                                  uint64
	Created, Updated                           uint64
}

// listData is the list page's.
type listData struct {
	Filter   listFilter
	Statuses []string
	Counts   statusCounts
	Rows     []listRow
	Next     string // the next page's URL; "" on the last page
	First    string // the first page's URL when this is not it
	Examined int
	Paged    bool // whether the store lists a page at a time
	ShowAll  []statusLink
}

// statusLink is a count that links to the list filtered by its status.
// Known is false when the count is not to be had (no figure from the
// store, or the counts failed): the link is shown without it.
type statusLink struct {
	Label, URL, Class, Title string
	Count                    uint64
	Known                    bool
}

// handleList serves the instances list.
func (c *Console) handleList(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	f, err := parseListFilter(r.URL.Query(), c.o.PageSize)
	if err != nil {
		c.fail(w, r, "list", err)
		return
	}
	// The counts and the page are independent reads: read them at once,
	// so that a load waits for the slower one only.
	counts := make(chan statusCounts, 1)
	go func() { counts <- c.countsNow(ctx) }()
	p, err := c.listPage(ctx, f.query())
	d := listData{Filter: f, Statuses: statusFilters, Counts: <-counts, Examined: p.Examined, Paged: c.pager != nil}
	if err != nil {
		c.fail(w, r, "list", err)
		return
	}
	for _, l := range p.Instances {
		d.Rows = append(d.Rows, rowOf(l))
	}
	if p.NextPageToken != "" {
		d.Next = f.with(func(v url.Values) { v.Set("page", p.NextPageToken) })
	}
	if f.Token != "" {
		d.First = f.with(nil)
	}
	d.ShowAll = countLinks(f, d.Counts)
	c.render(w, r, "list.html", page{Title: "Instances", Nav: "instances", RefreshMs: c.refreshMs(), Notice: doneNotice(r)}, d)
}

// countLinks are the counts per status, each linking to its filter.
func countLinks(f listFilter, counts statusCounts) []statusLink {
	link := func(status string, n uint64) statusLink {
		l := statusLink{Label: cmp.Or(status, "All"), Class: statusClass(cmp.Or(status, "all")),
			URL: f.with(func(v url.Values) { setOrDel(v, "status", status) })}
		if counts.Err != "" {
			l.Title = "counts unavailable"
		} else {
			l.Count, l.Known = n, true
		}
		return l
	}
	return []statusLink{
		link("", counts.Total),
		link(statusPending, counts.Pending),
		link(provider.StatusRunning, counts.Running),
		link(provider.StatusCompleted, counts.Completed),
		link(provider.StatusFailed, counts.Failed),
		link(statusCanceled, counts.Canceled),
	}
}

func setOrDel(v url.Values, k, s string) {
	if s == "" {
		v.Del(k)
	} else {
		v.Set(k, s)
	}
}

func rowOf(l provider.InstanceListing) listRow {
	row := listRow{
		ID: l.InstanceID, Name: l.OrchestrationName, Version: l.OrchestrationVersion, Parent: l.ParentInstanceID,
		Status: displayStatus(l.Status, nil, l.Output), Execution: l.CurrentExecutionID, Created: l.CreatedAt, Updated: l.UpdatedAt,
	}
	if l.Status == provider.StatusFailed && l.Output != nil {
		row.Failure = truncate(*l.Output, 200)
	}
	return row
}

func (c *Console) refreshMs() int64 {
	if c.o.Refresh < 0 {
		return 0
	}
	return c.o.Refresh.Milliseconds()
}

// listPage lists one page: through the store's pager when it has one,
// otherwise from every instance.
func (c *Console) listPage(ctx context.Context, q provider.InstanceQuery) (provider.InstancePage, error) {
	if c.pager != nil {
		return c.pager.ListInstancesPage(ctx, q)
	}
	return c.fallbackPage(ctx, q)
}

// fallbackPage pages a store that lists all instances at once: it reads
// every instance, which a store kept in memory affords.
func (c *Console) fallbackPage(ctx context.Context, q provider.InstanceQuery) (provider.InstancePage, error) {
	var after string
	if q.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.PageToken)
		if err != nil {
			return provider.InstancePage{}, fmt.Errorf("%w: page token", errBadRequest)
		}
		after = string(b)
	}
	ids, err := c.admin.ListInstances(ctx)
	if err != nil {
		return provider.InstancePage{}, fmt.Errorf("list instances: %w", err)
	}
	type keyed struct {
		key string
		l   provider.InstanceListing
	}
	var all []keyed
	for _, id := range ids {
		info, err := c.admin.InstanceInfo(ctx, id)
		if errors.Is(err, provider.ErrNotFound) {
			continue
		}
		if err != nil {
			return provider.InstancePage{}, fmt.Errorf("instance %s: %w", id, err)
		}
		l := provider.InstanceListing{InstanceInfo: *info}
		if info.Status == provider.StatusCompleted || info.Status == provider.StatusFailed {
			l.CompletedAt = info.UpdatedAt
		}
		all = append(all, keyed{fmt.Sprintf("%020d#%s", info.CreatedAt, id), l})
	}
	slices.SortFunc(all, func(a, b keyed) int { return strings.Compare(b.key, a.key) })
	page := provider.InstancePage{Examined: len(all)}
	for _, k := range all {
		if after != "" && k.key >= after || !fallbackKeeps(q, &k.l) {
			continue
		}
		if len(page.Instances) == q.EffectivePageSize() {
			last := fmt.Sprintf("%020d#%s", page.Instances[len(page.Instances)-1].CreatedAt, page.Instances[len(page.Instances)-1].InstanceID)
			page.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(last))
			break
		}
		page.Instances = append(page.Instances, k.l)
	}
	return page, nil
}

// fallbackKeeps applies q to one instance.
func fallbackKeeps(q provider.InstanceQuery, l *provider.InstanceListing) bool {
	switch {
	case len(q.Statuses) > 0 && !slices.Contains(q.Statuses, l.Status),
		!strings.HasPrefix(l.InstanceID, q.IDPrefix),
		!q.CreatedFrom.IsZero() && l.CreatedAt < uint64(q.CreatedFrom.UnixMilli()),
		!q.CreatedTo.IsZero() && l.CreatedAt >= uint64(q.CreatedTo.UnixMilli()):
		return false
	}
	return q.IndexOnly || q.Match == nil || q.Match(l)
}

// truncate shortens s to at most n bytes (on a rune boundary), marking
// the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
