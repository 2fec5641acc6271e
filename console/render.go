package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// page is what every page's layout shows; Data is the page's own.
type page struct {
	Title        string
	Nav          string // the active navigation entry
	RefreshMs    int64  // 0: no auto-refresh
	CSRF         string
	AllowActions bool
	Error        string
	Notice       string
	Next         string // the login form's return path
	Data         any
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		base := strings.TrimPrefix(name, "templates/")
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", base, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"ms":        fmtMs,
	"dur":       fmtDuration,
	"statusCSS": statusClass,
	"add":       func(a, b int) int { return a + b },
	"bytes":     fmtBytes,
	"pl":        payloadView,
}

// plView is what the payload template draws: a folded payload with an
// id (so that a refresh keeps it folded or unfolded) and a label.
type plView struct {
	ID, Label string
	P         payload
	Open      bool
}

func payloadView(id, label string, p payload, open bool) plView {
	return plView{ID: id, Label: label, P: p, Open: open}
}

// render writes page tmpl with p. w's status, when not yet written, is
// 200.
func (c *Console) render(w http.ResponseWriter, r *http.Request, tmpl string, p page, data any) {
	t, ok := c.pages[tmpl]
	if !ok {
		c.o.Logger.Error("console: no such template", "template", tmpl)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	p.Data = data
	p.AllowActions = c.o.AllowActions
	if p.Next == "" {
		p.Next = r.URL.RequestURI()
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.o.Logger.Error("console: render", "template", tmpl, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// fail renders an error page: not found for unknown instances, bad request
// for invalid input, internal error otherwise (logged).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, provider.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, provider.ErrInvalidInput), errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	default:
		c.o.Logger.Error("console: "+what, "err", err)
	}
	w.WriteHeader(code)
	c.render(w, r, "error.html", page{Title: http.StatusText(code), Error: what + ": " + err.Error()}, nil)
}

// errBadRequest marks errors in a request's parameters.
var errBadRequest = errors.New("bad request")

// fmtMs formats epoch milliseconds in UTC; "—" for 0.
func fmtMs(ms uint64) string {
	if ms == 0 {
		return "—"
	}
	return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02 15:04:05.000")
}

// fmtDuration formats a duration in milliseconds briefly.
func fmtDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// fmtBytes formats a size.
func fmtBytes(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
}

// errText is err's message, or its type when the message is empty: a
// failure a page shows must never read as nothing.
func errText(err error) string {
	if s := err.Error(); strings.TrimSpace(s) != "" {
		return s
	}
	return fmt.Sprintf("%T (no message)", err)
}
