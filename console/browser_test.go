package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ScreenshotsEnv, set to 1, makes TestConsoleBrowser write its screenshots
// to docs/console, where the README shows them.
const screenshotsEnv = "DURADYN_UPDATE_SCREENSHOTS"

// browsers are the names Chromium and Chrome go by on PATH.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// findBrowser returns the path of a Chromium or Chrome, or fails t: the
// test does not skip when there is none (scripts/install-chromium
// installs it, and make test runs that script).
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range browsers {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatalf("no Chromium on PATH (looked for %s): run scripts/install-chromium", strings.Join(browsers, ", "))
	return ""
}

// browser starts headless Chromium for t and returns a context of its one
// tab, with the page's script errors and console errors collected.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(findBrowser(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	var (
		mu       sync.Mutex
		problems []string
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s at %s:%d", e.ExceptionDetails.Text, e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "console: "+e.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatalf("Chromium did not start: %v (run scripts/install-chromium)", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("Chromium did not start: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// shoot saves a PNG screenshot: to docs/console when screenshotsEnv is 1,
// otherwise to the test's temporary directory.
func shoot(t *testing.T, name string, png []byte) {
	t.Helper()
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot %s: %d bytes, not a PNG of a page", name, len(png))
	}
	dir := t.TempDir()
	if os.Getenv(screenshotsEnv) == "1" {
		dir = filepath.Join("..", "docs", "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tab is one Chromium tab on a console, for a test.
type tab struct {
	t   *testing.T
	ctx context.Context
	url string // the console's
}

// step runs actions, each step within a minute; on failure it shows the
// page.
func (b tab) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		page, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string]("location.href + '\\n' + document.body.innerText"))
		b.t.Fatalf("%s: %v; the page:\n%.2000s", what, err, page)
	}
}

// click clicks the first element sel matches. The auto-refresh may
// replace the element between the query and the click, as it can under a
// user's pointer; the user's click then lands on the replacement, so click
// queries again when the node it found is gone.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			v, err := chromedp.Click(chromedp.CSS(sel))(ctx, t)
			var cerr *cdproto.Error
			if !errors.As(err, &cerr) || !strings.Contains(strings.ToLower(cerr.Message), "node") {
				return v, err
			}
			if ctx.Err() != nil {
				return v, fmt.Errorf("click %s: %w (%w)", sel, err, ctx.Err())
			}
		}
	}
}

// open navigates to the console's path and waits for sel.
func (b tab) open(path, sel string) {
	b.t.Helper()
	b.step("open "+path, chromedp.Navigate(b.url+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// text reads the live page: the auto-refresh replaces nodes under a query
// that would hold on to them.
func (b tab) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf("(document.querySelector(%q) || {}).innerText || ''", sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// count counts the elements sel matches.
func (b tab) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatalf("count of %s: %v", sel, err)
	}
	return n
}

// screenshot takes a screenshot and saves it (shoot).
func (b tab) screenshot(name string, a chromedp.Action[[]byte]) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	shoot(b.t, name, png)
}

func instancePath(id string) string { return "/instance?id=" + url.QueryEscape(id) }

// TestConsoleBrowser drives the console in headless Chromium over the
// DynamoDB provider on the emulator: the list with instances in several
// states, a fan-out's timeline, a parent's tree, an event raised through
// the confirmation form that completes a waiting instance (seen by the
// page's auto-refresh), and a cancellation. It fails when Chromium cannot
// start.
func TestConsoleBrowser(t *testing.T) {
	d := newDynamoEnv(t) // skips, as every emulator test does, with DURADYN_NO_EMULATOR
	ctx, problems := browser(t)
	setup, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s := startScene(setup, t, d.runtime, "")
	con := newConsole(t, d.client, func(o *Options) { o.AllowActions = true; o.Refresh = 300 * time.Millisecond })
	var listReads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/instances" {
			listReads.Add(1)
		}
		con.ServeHTTP(w, r)
	}))
	defer srv.Close()
	b := tab{t: t, ctx: ctx, url: srv.URL}

	// The list, with instances in several states.
	b.open("/instances", "#instances")
	list := b.text("#instances")
	for _, want := range []string{s.fan, s.approval, s.failed, "Running", "Completed", "Failed", "<script>alert(1)</script>"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list does not show %q", want)
		}
	}
	b.screenshot("list", chromedp.CaptureScreenshot())
	keptByRefresh(b, &listReads)
	browseTimelineAndTree(b, s)
	raiseAndCancel(b, s)
	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged errors (a script error or a Content-Security-Policy violation): %q", p)
	}
}

// keptByRefresh checks that the auto-refresh leaves the list in place
// while nothing in it changes: a page replaced at every tick loses a click
// that falls between the press and the release. reads counts the list's
// reads; one refresh reads the page at a time, so two reads after the mark
// mean that the first one's page has been dealt with.
func keptByRefresh(b tab, reads *atomic.Int64) {
	t := b.t
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("document.getElementById('main').dataset.mark = 'kept'")); err != nil {
		t.Fatalf("mark the list: %v", err)
	}
	for until := reads.Load() + 2; reads.Load() < until; {
		select {
		case <-b.ctx.Done():
			t.Fatalf("waiting for the list to refresh: %v", b.ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if mark := b.text("#main[data-mark]"); mark == "" {
		t.Errorf("the auto-refresh replaced an unchanged list")
	}
}

// browseTimelineAndTree opens the fan-out from the list and checks its
// timeline, then the parent's tree.
func browseTimelineAndTree(b tab, s scene) {
	t := b.t
	t.Helper()
	b.step("open the fan-out", click(`#instances a[href="`+instancePath(s.fan)+`"]`), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	if n := b.count("#timeline g.row-activity"); n != 14 {
		t.Errorf("the timeline shows %d activity rows, want 14 (12 Work, and Flaky's two attempts)", n)
	}
	if n := b.count("#timeline rect.retry"); n != 1 {
		t.Errorf("the timeline marks %d retries, want 1", n)
	}
	if id := b.text("#instance-id"); id != s.fan {
		t.Errorf("the instance page shows %q", id)
	}
	b.screenshot("instance-fanout", chromedp.Screenshot(chromedp.CSS("#sec-timeline")))

	b.open(instancePath(s.parent), "#tree")
	if n := b.count("#tree ul a"); n != 3 {
		t.Errorf("the tree shows %d children, want 3", n)
	}
	if tree := b.text("#tree"); !strings.Contains(tree, s.parent+"::sub::2") || !strings.Contains(tree, "Child") {
		t.Errorf("the tree reads %q", tree)
	}
	b.screenshot("tree", chromedp.Screenshot(chromedp.CSS("#sec-tree")))
}

// raiseAndCancel raises the event the approval waits for through the
// confirmation form and sees it complete as the page refreshes itself,
// then cancels the sleeper.
func raiseAndCancel(b tab, s scene) {
	b.t.Helper()
	b.open(instancePath(s.approval), ".headline .st-running")
	b.step("open the confirmation", click("#action-raise"), chromedp.WaitVisible(chromedp.CSS("#event-name")))
	b.step("confirm", chromedp.SendKeys(chromedp.CSS("#event-name"), "approve"), chromedp.SendKeys(chromedp.CSS("#event-data"), `"ops"`),
		click("#confirm"), chromedp.WaitVisible(chromedp.CSS(".notice")))
	b.step("see the instance complete", chromedp.WaitVisible(chromedp.CSS(".headline .st-completed")))
	if out := b.text("#p-output"); !strings.Contains(out, "order-17 approved by ops") {
		b.t.Errorf("the approval's output reads %q", out)
	}

	b.open(instancePath(s.sleeper), "#action-cancel")
	b.step("cancel", click("#action-cancel"), chromedp.WaitVisible(chromedp.CSS("#cancel-reason")),
		click("#confirm"), chromedp.WaitVisible(chromedp.CSS(".headline .st-canceled")))
}
