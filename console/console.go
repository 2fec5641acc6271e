// Package console is duradyn's web console: an [http.Handler] that shows
// the orchestrations of a store in a browser and, when allowed, raises
// events to them, cancels and deletes them.
//
// Pages are rendered on the server (html/template, embedded); a small
// script, served as a static file, refreshes them and folds payloads. The
// pages are:
//
//   - Instances (/instances): a list filtered by status, orchestration
//     name, id prefix and creation time, with counts per status and paging
//     by token. On a store that lists a page at a time
//     ([provider.InstancePager], the DynamoDB provider) a page costs what
//     the page holds, whatever the store holds; on others it reads every
//     instance.
//   - Instance (/instance?id=...): status, input, output or failure, custom
//     status, KV, executions, the tree of parent and sub-orchestrations,
//     the history as a timeline and a table, and what the instance waits
//     for now.
//   - System (/system): queue depths, system metrics, and instances by
//     status over time, from the store's own listing; a part whose read
//     fails shows its error in its place, and the others still show.
//   - Actions: raise an event, cancel, delete; each behind a confirmation
//     page and a POST with a CSRF token, refused unless
//     [Options.AllowActions].
//
// Security: with [Options.Token] set, every request must carry the token
// (a bearer header, or the cookie that the login form or a ?token= link
// sets); without it, only requests addressed to a loopback host name are
// served. [CheckAddress] refuses a listening address other than loopback
// without a token. Every value is escaped by html/template, and every
// response carries a Content-Security-Policy without inline scripts,
// X-Content-Type-Options: nosniff and frame denial.
package console

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configures a [Console]. The zero value of every field means its
// documented default.
type Options struct {
	// AllowActions enables raising events, cancelling and deleting.
	// Default false: the console is read-only and refuses every action.
	AllowActions bool
	// Token, when not empty, is required on every request: as
	// "Authorization: Bearer <token>", or through the cookie that the
	// login form or a link with ?token=<token> sets. Compared in constant
	// time.
	Token string
	// Logger receives errors and the actions taken. Default: discard.
	Logger *slog.Logger
	// PageSize is the number of instances a list page shows. Default 50.
	PageSize int
	// Refresh is how often the pages refresh themselves in the browser.
	// Default 5 s; negative turns auto-refresh off.
	Refresh time.Duration
	// CountsMaxAge is how long the counts per status are reused before
	// they are read again. Default 10 s.
	CountsMaxAge time.Duration
	// MaxTimelineRows is the number of spans above which the timeline
	// draws one row per activity, timer or event name instead of one per
	// span. Default 60.
	MaxTimelineRows int
	// MaxEvents is the number of history events the instance page lists.
	// Default 2,000.
	MaxEvents int
	// MaxTreeNodes is the number of instances the tree shows. Default 200.
	MaxTreeNodes int
	// MaxChartInstances bounds the instances the system page's chart
	// reads. Default 10,000.
	MaxChartInstances int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	o.PageSize = cmp.Or(o.PageSize, 50)
	o.Refresh = cmp.Or(o.Refresh, 5*time.Second)
	o.CountsMaxAge = cmp.Or(o.CountsMaxAge, 10*time.Second)
	o.MaxTimelineRows = cmp.Or(o.MaxTimelineRows, 60)
	o.MaxEvents = cmp.Or(o.MaxEvents, 2000)
	o.MaxTreeNodes = cmp.Or(o.MaxTreeNodes, 200)
	o.MaxChartInstances = cmp.Or(o.MaxChartInstances, 10000)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// ErrNoManagement is returned by [New] for a client whose provider has no
// management capability ([provider.Admin]).
var ErrNoManagement = errors.New("console: the provider has no management API (provider.Admin)")

// Console is the web console's handler. It is safe for concurrent use.
type Console struct {
	o      Options
	client *durable.Client
	admin  provider.Admin
	pager  provider.InstancePager // nil when the provider lists all at once
	pages  map[string]*template.Template
	mux    *http.ServeMux
	// csrfKey signs the CSRF tokens of this process.
	csrfKey []byte

	countsMu sync.Mutex
	counts   *statusCounts
}

// New returns a console over client's provider, which must have the
// management API ([provider.Admin]).
func New(client *durable.Client, optFns ...func(*Options)) (*Console, error) {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	admin, ok := provider.AdminOf(client.Provider())
	if !ok {
		return nil, ErrNoManagement
	}
	c := &Console{o: o.withDefaults(), client: client, admin: admin, csrfKey: make([]byte, 32)}
	c.pager, _ = client.Provider().(provider.InstancePager)
	if _, err := rand.Read(c.csrfKey); err != nil {
		return nil, fmt.Errorf("console: CSRF key: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	c.routes()
	return c, nil
}

// routes registers the pages.
func (c *Console) routes() {
	static, _ := fs.Sub(staticFS, "static")
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/instances", http.StatusSeeOther)
	})
	m.HandleFunc("GET /instances", c.handleList)
	m.HandleFunc("GET /instance", c.handleInstance)
	m.HandleFunc("GET /system", c.handleSystem)
	m.HandleFunc("GET /actions/{action}", c.handleConfirm)
	m.HandleFunc("POST /actions/{action}", c.handleAction)
	m.HandleFunc("POST /login", c.handleLogin)
	c.mux = m
}

// ServeHTTP serves the console: every request passes the security checks
// (token, host, headers) first.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w)
	if !c.admit(w, r) {
		return
	}
	c.mux.ServeHTTP(w, r)
}

// requestContext bounds the storage reads of one request.
func requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}
