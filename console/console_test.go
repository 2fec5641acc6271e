package console

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// scenes numbers the scenes of the tests, which share the Flaky
// activity's memory of the instances it failed.
var scenes atomic.Int32

// memScene runs the scene on memprovider.
func memScene(t *testing.T) (*durable.Client, scene) {
	t.Helper()
	c := startRuntime(t, memprovider.New())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return c, startScene(ctx, t, c, fmt.Sprintf("m%d-", scenes.Add(1)))
}

// wantIn fails unless body holds each of want, and none of not.
func wantIn(t *testing.T, what, body string, want []string, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: no %q in the page", what, w)
		}
	}
	for _, n := range not {
		if strings.Contains(body, n) {
			t.Errorf("%s: %q in the page", what, n)
		}
	}
}

// link is how a page writes an instance's link.
func link(id string) string {
	esc := strings.ReplaceAll(url.QueryEscape(id), "+", "%20")
	esc = regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(esc, strings.ToLower)
	return `href="/instance?id=` + esc + `"`
}

// countRe matches a count of the list page: its link, figure and label.
var countRe = regexp.MustCompile(`<a class="count [^"]*" href="([^"]*)"[^>]*><span class="n">([^<]*)</span> <span class="l">([^<]*)</span></a>`)

// wantCounts fails unless the list page shows exactly the counts want (by
// label, "—" for a count the store does not give), each linking to the
// list filtered by its status.
func wantCounts(t *testing.T, body string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, m := range countRe.FindAllStringSubmatch(body, -1) {
		got[m[3]] = m[2]
		link := "/instances"
		if m[3] != "All" {
			link += "?status=" + m[3]
		}
		if href := html.UnescapeString(m[1]); href != link {
			t.Errorf("the %s count links to %q, want %q", m[3], href, link)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts shown: %v, want %v", got, want)
	}
}

// listIDs returns the instance ids a list page links to, in order.
func listIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<td class="id iid"><a href="/instance\?id=([^"]*)"`).FindAllStringSubmatch(body, -1) {
		id, _ := url.QueryUnescape(html.UnescapeString(m[1]))
		ids = append(ids, id)
	}
	return ids
}

func TestListPageFilters(t *testing.T) {
	t.Parallel()
	c, s := memScene(t)
	con := newConsole(t, c)
	all := []string{s.hello, s.fan, s.parent, s.approval, s.failed, s.sleeper, s.xss, s.long}

	res, body := get(t, con, "/instances")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /instances: %s", res.Status)
	}
	got := listIDs(body)
	for _, id := range all {
		if !contains(got, id) {
			t.Errorf("the list lacks %.40q", id)
		}
	}
	// Parent's three children are listed too.
	if len(got) != len(all)+3 {
		t.Errorf("the list shows %d instances, want %d", len(got), len(all)+3)
	}
	wantIn(t, "list", body, []string{`status st-failed`}, nil)
	wantCounts(t, body, map[string]string{"All": "11", "Pending": "0", "Running": "2", "Completed": "8", "Failed": "1", "Canceled": "0"})

	for _, tc := range []struct {
		query    string
		want     []string
		wantNone bool
	}{
		{"status=Failed", []string{s.failed}, false},
		{"status=failed", []string{s.failed}, false}, // any case
		{"status=Running", []string{s.approval, s.sleeper}, false},
		{"status=Canceled", nil, true},
		{"status=Pending", nil, true},
		{"name=Approval", []string{s.approval}, false},
		{"prefix=" + url.QueryEscape(s.fan[:len(s.fan)-3]), []string{s.fan}, false},
		{"prefix=" + url.QueryEscape(s.xss), []string{s.xss}, false},
		{"from=2000-01-01T00:00&to=2000-01-02T00:00", nil, true},
		{"from=" + time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04") + "&name=Hello", []string{s.hello, s.xss, s.long}, false},
	} {
		res, body := get(t, con, "/instances?"+tc.query)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", tc.query, res.Status)
			continue
		}
		got := listIDs(body)
		if tc.wantNone && len(got) != 0 || !tc.wantNone && !sameSet(got, tc.want) {
			t.Errorf("%s: listed %.200q, want %.200q", tc.query, got, tc.want)
		}
	}
	for _, bad := range []string{"status=Sleeping", "from=yesterday", "size=0", "size=5000"} {
		if res, _ := get(t, con, "/instances?"+bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", bad, res.Status)
		}
	}
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	c, _ := memScene(t)
	con := newConsole(t, c, func(o *Options) { o.PageSize = 3 })
	var seen []string
	path := "/instances"
	for pages := 1; ; pages++ {
		_, body := get(t, con, path)
		ids := listIDs(body)
		if len(ids) > 3 {
			t.Fatalf("page %d holds %d instances, want at most 3", pages, len(ids))
		}
		seen = append(seen, ids...)
		m := regexp.MustCompile(`<a href="([^"]*)" rel="next"`).FindStringSubmatch(body)
		if m == nil {
			if pages != 4 {
				t.Errorf("%d pages of 3 for 11 instances, want 4", pages)
			}
			break
		}
		path = html.UnescapeString(m[1])
		if !strings.Contains(path, "page=") {
			t.Fatalf("next link %q has no page token", path)
		}
	}
	if len(seen) != 11 || len(uniq(seen)) != 11 {
		t.Errorf("paging listed %d instances (%d distinct), want 11", len(seen), len(uniq(seen)))
	}
}

func TestInstancePage(t *testing.T) {
	t.Parallel()
	c, s := memScene(t)
	con := newConsole(t, c)

	t.Run("fan-out", func(t *testing.T) {
		_, body := get(t, con, "/instance?id="+url.QueryEscape(s.fan))
		wantIn(t, "fan-out", body, []string{
			`<span class="status st-completed">Completed</span>`,
			`<svg class="timeline"`, "activity Work #", "activity Flaky #", "(retry 1)", "bar bar-activity out-failed",
			"retry", "service unavailable (first attempt)", "fan-out", // the failure and the custom status
			`class="plabel">items</span>`, // KV
			"ActivityFailed", "ActivityCompleted", "Nothing: the instance has ended.",
		}, nil)
		if n := strings.Count(body, "activity Work #"); n != 12 {
			t.Errorf("the timeline has %d Work rows, want 12", n)
		}
	})
	t.Run("tree", func(t *testing.T) {
		_, body := get(t, con, "/instance?id="+url.QueryEscape(s.parent))
		if !strings.Contains(body, `<ul class="tree" id="tree"><li><a `+link(s.parent)+` class="current">`+s.parent+`</a>`) {
			t.Errorf("the tree does not start at the parent, marked current")
		}
		for i := range 3 {
			childID := s.parent + "::sub::" + string(rune('2'+i))
			wantIn(t, "parent", body, []string{link(childID)}, nil)
		}
		wantIn(t, "parent", body, []string{"sub-orchestration Child #", "SubOrchestrationCompleted"}, nil)
		// A child shows its parent, and the tree from the root.
		_, body = get(t, con, "/instance?id="+url.QueryEscape(s.parent+"::sub::2"))
		wantIn(t, "child", body, []string{link(s.parent), `class="current">` + s.parent + `::sub::2</a>`}, nil)
	})
	t.Run("waiting", func(t *testing.T) {
		_, body := get(t, con, "/instance?id="+url.QueryEscape(s.approval))
		wantIn(t, "approval", body, []string{`<ul class="waiting" id="waiting">`, "<strong>approve</strong>", "awaiting approval",
			`<span class="status st-running">Running</span>`}, nil)
		_, body = get(t, con, "/instance?id="+url.QueryEscape(s.sleeper))
		wantIn(t, "sleeper", body, []string{"<strong></strong>", "fires at", "bar bar-timer out-pending"}, nil)
	})
	t.Run("failure", func(t *testing.T) {
		_, body := get(t, con, "/instance?id="+url.QueryEscape(s.failed))
		wantIn(t, "failed", body, []string{`<span class="status st-failed">Failed</span>`, "Failure: application", "card declined for order-18"}, nil)
	})
	t.Run("executions", func(t *testing.T) {
		_, body := get(t, con, "/instance?id="+url.QueryEscape(s.hello)+"&exec=1")
		wantIn(t, "exec 1", body, []string{`<tr class="selected">`, "OrchestrationStarted", "Hello, world!"}, nil)
	})
	t.Run("not found", func(t *testing.T) {
		for path, code := range map[string]int{
			"/instance?id=nosuch": http.StatusNotFound, "/instance": http.StatusBadRequest,
			"/instance?id=" + url.QueryEscape(s.hello) + "&exec=x": http.StatusBadRequest,
		} {
			if res, _ := get(t, con, path); res.StatusCode != code {
				t.Errorf("%s: %s, want %d", path, res.Status, code)
			}
		}
	})
}

func TestSystemPage(t *testing.T) {
	t.Parallel()
	c, _ := memScene(t)
	con := newConsole(t, c)
	for _, w := range []string{"", "?window=1h", "?window=7d"} {
		res, body := get(t, con, "/system"+w)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/system%s: %s", w, res.Status)
		}
		wantIn(t, "system", body, []string{`id="depth-orchestrator"`, `<dd class="num" id="m-instances">11</dd>`,
			`<svg class="chart" id="status-chart"`, "11 instances created in the window", `class="c-completed"`}, nil)
	}
	if res, _ := get(t, con, "/system?window=1y"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("/system?window=1y: %s, want 400", res.Status)
	}
}

// TestEscaping shows ids and payloads built to break out of their HTML
// contexts, escaped on every page, and very long ones shown in part.
func TestEscaping(t *testing.T) {
	t.Parallel()
	c, s := memScene(t)
	con := newConsole(t, c, func(o *Options) { o.AllowActions = true })
	raw := []string{"<script>alert(1)</script>", "<img src=x", `"'>`, `</pre><script>alert('payload')</script>`}
	pages := []string{
		"/instances", "/instances?prefix=" + url.QueryEscape(s.xss), "/instances?name=" + url.QueryEscape(xssID),
		"/instance?id=" + url.QueryEscape(s.xss), "/actions/raise?id=" + url.QueryEscape(s.xss),
		"/instance?id=" + url.QueryEscape(xssID), // not found: the id is in the error message
		"/instance?id=" + url.QueryEscape(s.long),
	}
	for i, p := range pages {
		_, body := get(t, con, p)
		wantIn(t, p, body, nil, raw)
		if i < len(pages)-1 && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the id is not shown escaped", p)
		}
	}
	_, body := get(t, con, "/instance?id="+url.QueryEscape(s.xss))
	wantIn(t, "xss payload", body, []string{"&lt;/pre&gt;&lt;script&gt;alert(&#39;payload&#39;)&lt;/script&gt;"}, nil)
	_, body = get(t, con, "/instance?id="+url.QueryEscape(s.long))
	wantIn(t, "long", body, []string{strings.Repeat("long-id-", 200), "are shown."}, nil)
}

// TestActionsReadOnly: without AllowActions no button is shown and every
// action is refused, GET and POST.
func TestActionsReadOnly(t *testing.T) {
	t.Parallel()
	c, s := memScene(t)
	con := newConsole(t, c)
	_, body := get(t, con, "/instance?id="+url.QueryEscape(s.approval))
	wantIn(t, "read-only", body, []string{"read-only"}, []string{"action-raise", "action-cancel", "action-delete"})
	for _, a := range []string{"raise", "cancel", "delete"} {
		if res, _ := get(t, con, "/actions/"+a+"?id="+url.QueryEscape(s.approval)); res.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s: %s, want 403", a, res.Status)
		}
		res, _ := post(t, con, "/actions/"+a, url.Values{"id": {s.approval}, "event": {"approve"}}, nil)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s: %s, want 403", a, res.Status)
		}
	}
	assertState(t, c, s.approval, durable.StateRunning)
}

// actionScene is a scene with a console that allows actions.
func actionScene(t *testing.T) (*durable.Client, scene, *Console) {
	t.Helper()
	c, s := memScene(t)
	return c, s, newConsole(t, c, func(o *Options) { o.AllowActions = true })
}

// TestActionsCSRF: an action POST without the CSRF token of its cookie, or
// from another site, is refused and changes nothing.
func TestActionsCSRF(t *testing.T) {
	t.Parallel()
	c, s, con := actionScene(t)
	cookies, token := confirmPage(t, con, "cancel", s.sleeper)
	form := url.Values{"id": {s.sleeper}, "csrf": {token}}
	for name, tc := range map[string]struct {
		form    url.Values
		cookies []*http.Cookie
		header  http.Header
	}{
		"no token":        {url.Values{"id": {s.sleeper}}, cookies, nil},
		"wrong token":     {url.Values{"id": {s.sleeper}, "csrf": {token + "x"}}, cookies, nil},
		"no cookie":       {form, nil, nil},
		"another cookie":  {form, []*http.Cookie{{Name: csrfCookie, Value: strings.Repeat("A", 43)}}, nil},
		"cross-site":      {form, cookies, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"another origin":  {form, cookies, http.Header{"Origin": {"http://evil.example"}}},
		"token of a GET?": {url.Values{"id": {s.sleeper}, "csrf": {con.csrfFor("guess")}}, cookies, nil},
	} {
		res, _ := postWith(t, con, "/actions/cancel", tc.form, tc.cookies, tc.header)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s, want 403", name, res.Status)
		}
	}
	assertState(t, c, s.sleeper, durable.StateRunning)
}

// TestActionRaise raises an event through the confirmation form, which
// completes the waiting instance; a finished instance and bad data are
// refused.
func TestActionRaise(t *testing.T) {
	t.Parallel()
	c, s, con := actionScene(t)
	cookies, token := confirmPage(t, con, "raise", s.approval)
	res, _ := post(t, con, "/actions/raise", url.Values{"id": {s.approval}, "csrf": {token}, "event": {"approve"}, "data": {`"ops"`}}, cookies)
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "done=raised") {
		t.Fatalf("raise: %s to %q", res.Status, res.Header.Get("Location"))
	}
	st := waitDone(t, c, s.approval)
	if out, _ := durable.Output[string](st); out != "order-17 approved by ops" {
		t.Errorf("approval output %q", out)
	}
	// A finished instance takes no event: refused, nothing sent.
	res, _ = post(t, con, "/actions/raise", url.Values{"id": {s.approval}, "csrf": {token}, "event": {"approve"}}, cookies)
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("raise to a completed instance: %s, want 400", res.Status)
	}
	res, _ = post(t, con, "/actions/raise", url.Values{"id": {s.sleeper}, "csrf": {token}, "event": {"x"}, "data": {"{not json"}}, cookies)
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("raise with bad JSON: %s, want 400", res.Status)
	}
}

// TestActionCancel cancels an instance, which the pages then show as
// Canceled, apart from the failed ones.
func TestActionCancel(t *testing.T) {
	t.Parallel()
	c, s, con := actionScene(t)
	cookies, token := confirmPage(t, con, "cancel", s.sleeper)
	res, _ := post(t, con, "/actions/cancel", url.Values{"id": {s.sleeper}, "csrf": {token}, "reason": {"no longer needed"}}, cookies)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %s", res.Status)
	}
	st := waitDone(t, c, s.sleeper)
	if st.State != durable.StateFailed || !strings.Contains(st.Failure.DisplayMessage(), "no longer needed") {
		t.Fatalf("sleeper after cancel: %v %v", st.State, st.Failure)
	}
	_, body := get(t, con, "/instance?id="+url.QueryEscape(s.sleeper))
	wantIn(t, "canceled", body, []string{`<span class="status st-canceled">Canceled</span>`}, nil)
	_, body = get(t, con, "/instances?status=Canceled")
	if ids := listIDs(body); !sameSet(ids, []string{s.sleeper}) {
		t.Errorf("status=Canceled lists %q", ids)
	}
	_, body = get(t, con, "/instances?status=Failed")
	if ids := listIDs(body); !sameSet(ids, []string{s.failed}) {
		t.Errorf("status=Failed lists %q", ids)
	}
}

// TestActionDelete deletes a root instance with its tree; a
// sub-orchestration's confirmation says to delete its root.
func TestActionDelete(t *testing.T) {
	t.Parallel()
	c, s, con := actionScene(t)
	cookies, token := confirmPage(t, con, "delete", s.parent)
	_, body := get(t, con, "/actions/delete?id="+url.QueryEscape(s.parent+"::sub::2"))
	wantIn(t, "delete a child", body, []string{"This is a sub-orchestration"}, []string{`id="confirm"`})
	res, _ := post(t, con, "/actions/delete", url.Values{"id": {s.parent}, "csrf": {token}}, cookies)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instances?done=deleted" {
		t.Fatalf("delete: %s to %q", res.Status, res.Header.Get("Location"))
	}
	for _, id := range []string{s.parent, s.parent + "::sub::2"} {
		if _, err := c.InstanceInfo(t.Context(), id); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("%s after delete: %v, want not found", id, err)
		}
	}
	_, body = get(t, con, "/instances?done=deleted")
	wantIn(t, "after delete", body, []string{"Instance deleted."}, []string{link(s.parent)})
}

// confirmPage opens an action's confirmation page and returns the cookies
// it set and its CSRF token.
func confirmPage(t *testing.T, h http.Handler, action, id string) ([]*http.Cookie, string) {
	t.Helper()
	res, body := get(t, h, "/actions/"+action+"?id="+url.QueryEscape(id))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirmation of %s: %s", action, res.Status)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `id="confirm"`) {
		t.Fatalf("confirmation of %s has no form with a CSRF token", action)
	}
	return res.Cookies(), html.UnescapeString(m[1])
}

func post(t *testing.T, h http.Handler, path string, form url.Values, cookies []*http.Cookie) (*http.Response, string) {
	t.Helper()
	return postWith(t, h, path, form, cookies, nil)
}

func postWith(t *testing.T, h http.Handler, path string, form url.Values, cookies []*http.Cookie, header http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080"+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	return do(t, h, req)
}

func assertState(t *testing.T, c *durable.Client, id string, want durable.State) {
	t.Helper()
	st, err := c.Status(t.Context(), id)
	if err != nil || st.State != want {
		t.Errorf("%s: %v %v, want %v", id, st, err, want)
	}
}

func waitDone(t *testing.T, c *durable.Client, id string) *durable.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := c.WaitForCompletion(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return st
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !contains(a, x) {
			return false
		}
	}
	return true
}

func uniq(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}
