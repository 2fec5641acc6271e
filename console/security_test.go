package console

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/provider/memprovider"
)

func TestCheckAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.2:8080", "", true},
		{"localhost:0", "", true},
		{"[::1]:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"[::]:8080", "", false},
		{"192.168.1.10:8080", "", false},
		{"example.com:8080", "", false},
		{"0.0.0.0:8080", "s3cret", true},
		{":8080", "s3cret", true},
	} {
		err := CheckAddress(tc.addr, tc.token)
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrAddressNeedsToken) {
			t.Errorf("CheckAddress(%q, token %q) = %v", tc.addr, tc.token, err)
		}
	}
	if err := CheckAddress("no-port", ""); err == nil || errors.Is(err, ErrAddressNeedsToken) {
		t.Errorf("CheckAddress without a port = %v, want an address error", err)
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	const token = "correct horse battery staple"
	con := newConsole(t, durable.NewClient(memprovider.New()), func(o *Options) { o.Token = token })
	req := func(path string, mod func(*http.Request)) *http.Response {
		r := httptest.NewRequest(http.MethodGet, "http://console.example:8080"+path, nil)
		if mod != nil {
			mod(r)
		}
		res, _ := do(t, con, r)
		return res
	}
	// Every path needs the token, the static files included.
	for _, p := range []string{"/", "/instances", "/instance?id=x", "/system", "/static/console.js", "/actions/cancel?id=x"} {
		if res := req(p, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %s, want 401", p, res.Status)
		}
		if res := req(p, func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %s, want 401", p, res.Status)
		}
	}
	if res := req("/instances", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }); res.StatusCode != http.StatusOK {
		t.Errorf("bearer token: %s, want 200", res.Status)
	}
	// A link with the token sets the session cookie and drops the token
	// from the address.
	res := req("/instances?status=Running&token="+url.QueryEscape(token), nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instances?status=Running" {
		t.Fatalf("?token=: %s to %q", res.Status, res.Header.Get("Location"))
	}
	session := res.Cookies()
	if len(session) != 1 || session[0].Name != sessionCookie || !session[0].HttpOnly || strings.Contains(session[0].Value, token) {
		t.Fatalf("session cookie %+v", session)
	}
	withSession := func(r *http.Request) { r.AddCookie(session[0]) }
	if res := req("/instances", withSession); res.StatusCode != http.StatusOK {
		t.Errorf("session cookie: %s, want 200", res.Status)
	}
	if res := req("/instances?token=wrong", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("?token=wrong: %s, want 401", res.Status)
	}
	forged := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: sessionCookie, Value: token}) }
	if res := req("/instances", forged); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token as the cookie: %s, want 401", res.Status)
	}
	// The login form.
	login := func(tok, next string) *http.Response {
		r := httptest.NewRequest(http.MethodPost, "http://console.example:8080/login", strings.NewReader(url.Values{"token": {tok}, "next": {next}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, _ := do(t, con, r)
		return res
	}
	if res := login("wrong", "/system"); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %s, cookies %v", res.Status, res.Cookies())
	}
	if res := login(token, "/system"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/system" || len(res.Cookies()) != 1 {
		t.Errorf("login: %s to %q", res.Status, res.Header.Get("Location"))
	}
	if res := login(token, "//evil.example/"); res.Header.Get("Location") != "/instances" {
		t.Errorf("login with an off-site next: to %q, want /instances", res.Header.Get("Location"))
	}
}

// TestLoopbackHostOnly: without a token, requests addressed to another
// host name (a DNS name rebound to 127.0.0.1) are refused.
func TestLoopbackHostOnly(t *testing.T) {
	t.Parallel()
	con := newConsole(t, durable.NewClient(memprovider.New()))
	for host, want := range map[string]int{
		"127.0.0.1:8080": http.StatusOK, "localhost:8080": http.StatusOK, "[::1]:8080": http.StatusOK,
		"evil.example:8080": http.StatusMisdirectedRequest, "192.168.1.10:8080": http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/instances", nil)
		if res, _ := do(t, con, r); res.StatusCode != want {
			t.Errorf("host %s: %s, want %d", host, res.Status, want)
		}
	}
}

// TestSecurityHeaders checks the headers of every kind of response, and
// that no page holds an inline script or event handler.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	c, s := memScene(t)
	con := newConsole(t, c, func(o *Options) { o.AllowActions = true })
	scriptTag := regexp.MustCompile(`<script[^>]*>`)
	for _, p := range []string{
		"/instances", "/instance?id=" + url.QueryEscape(s.fan), "/instance?id=" + url.QueryEscape(s.xss), "/system",
		"/actions/raise?id=" + url.QueryEscape(s.approval), "/instance?id=nosuch", "/static/console.js", "/static/console.css",
	} {
		res, body := get(t, con, p)
		h := res.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", p, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: X-Content-Type-Options %q, X-Frame-Options %q", p, h.Get("X-Content-Type-Options"), h.Get("X-Frame-Options"))
		}
		if strings.HasPrefix(p, "/static/") {
			continue
		}
		for _, tag := range scriptTag.FindAllString(body, -1) {
			if tag != `<script src="/static/console.js" defer>` {
				t.Errorf("%s: script tag %q", p, tag)
			}
		}
		// Tags only: escaped text may spell anything.
		for _, tag := range regexp.MustCompile(`<[a-zA-Z][^<>]*>`).FindAllString(body, -1) {
			// Attribute names only: a quoted value may spell anything.
			names := regexp.MustCompile(`"[^"]*"`).ReplaceAllString(tag, `""`)
			if regexp.MustCompile(`\son[a-z]+\s*=|\sstyle\s*=`).MatchString(names) {
				t.Errorf("%s: inline handler or style in %.100q", p, tag)
			}
		}
	}
	if res, _ := get(t, con, "/static/console.js"); !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("console.js served as %q", res.Header.Get("Content-Type"))
	}
}

func TestDisplayStatus(t *testing.T) {
	t.Parallel()
	canceled := "canceled: no longer needed"
	declined := "card declined"
	app := func(code provider.AppErrorCode) provider.ErrorDetails {
		return provider.ApplicationDetails{Kind: provider.AppErrorKind{Code: code}, Message: "m"}
	}
	for _, tc := range []struct {
		status  string
		failure provider.ErrorDetails
		output  *string
		want    string
	}{
		{provider.StatusRunning, nil, nil, provider.StatusRunning},
		{provider.StatusCompleted, nil, &canceled, provider.StatusCompleted},
		{provider.StatusFailed, nil, &declined, provider.StatusFailed},
		{provider.StatusFailed, nil, &canceled, statusCanceled},
		{provider.StatusFailed, nil, nil, provider.StatusFailed},
		{provider.StatusFailed, app(provider.AppCancelled), nil, statusCanceled},
		// The failure, when known, decides over an output that only looks
		// like a cancellation's.
		{provider.StatusFailed, app(provider.AppOrchestrationFailed), &canceled, provider.StatusFailed},
		{statusPending, nil, nil, statusPending},
	} {
		if got := displayStatus(tc.status, tc.failure, tc.output); got != tc.want {
			t.Errorf("displayStatus(%s, %v, %v) = %s, want %s", tc.status, tc.failure, tc.output, got, tc.want)
		}
	}
	if storedStatus(statusCanceled) != provider.StatusFailed || storedStatus(provider.StatusRunning) != provider.StatusRunning {
		t.Error("storedStatus")
	}
}
