package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TokenEnv is the environment variable the duradyn command reads the
// console's token from when --token is not given.
const TokenEnv = "DURADYN_CONSOLE_TOKEN"

const (
	// sessionCookie holds proof of the token after a login.
	sessionCookie = "duradyn_console_session"
	// csrfCookie holds the random value that CSRF tokens are derived from.
	csrfCookie = "duradyn_console_csrf"
	// csrfField is the form field that carries the CSRF token.
	csrfField = "csrf"
)

// contentSecurityPolicy allows the console's own script and style sheet
// and nothing inline: no inline script, style attribute or event handler
// runs even if a value escaped its escaping.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ErrAddressNeedsToken is returned by [CheckAddress] for an address other
// than a loopback one when no token is set.
var ErrAddressNeedsToken = errors.New("console: listening beyond loopback needs a token (--token or " + TokenEnv + ")")

// CheckAddress reports whether the console may listen on addr (host:port):
// a loopback host (127.0.0.0/8, ::1, localhost) always, any other address,
// the unspecified ones included, only with a token.
func CheckAddress(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: address %q: %w", addr, err)
	}
	if loopbackHost(host) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrAddressNeedsToken, addr)
}

// loopbackHost reports whether host (no port) names this machine's
// loopback interface.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Serve serves c on ln until ctx ends, then shuts the server down, giving
// requests under way 5 s.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           c,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("console: shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// setSecurityHeaders sets the headers every response carries.
func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on the form POSTs that checkCSRF checks.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// admit checks the request's token (or, without one, its host) and writes
// the refusal when it fails.
func (c *Console) admit(w http.ResponseWriter, r *http.Request) bool {
	if c.o.Token == "" {
		// A page of another site could reach a loopback console through a
		// DNS name that resolves to 127.0.0.1; its requests carry that
		// name as their host.
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !loopbackHost(host) {
			http.Error(w, "this console serves loopback host names only; set a token to serve others", http.StatusMisdirectedRequest)
			return false
		}
		return true
	}
	if r.Method == http.MethodPost && r.URL.Path == "/login" {
		return true
	}
	if c.hasToken(r) {
		return true
	}
	if t := r.URL.Query().Get("token"); t != "" && c.tokenMatches(t) {
		c.setSession(w, r)
		u := *r.URL
		q := u.Query()
		q.Del("token")
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="duradyn console"`)
	w.WriteHeader(http.StatusUnauthorized)
	c.render(w, r, "login.html", page{Title: "Sign in"}, nil)
	return false
}

// hasToken reports whether r carries the token, as a bearer header or a
// session cookie.
func (c *Console) hasToken(r *http.Request) bool {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && c.tokenMatches(bearer) {
		return true
	}
	ck, err := r.Cookie(sessionCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(c.sessionValue())) == 1
}

// tokenMatches compares t with the token in constant time (of t's
// length: the comparison of digests does not depend on where they differ).
func (c *Console) tokenMatches(t string) bool {
	a, b := sha256.Sum256([]byte(t)), sha256.Sum256([]byte(c.o.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sessionValue is the session cookie's value: a MAC of the token, so the
// cookie does not hold the token itself, and stays valid across restarts
// with the same token.
func (c *Console) sessionValue() string {
	m := hmac.New(sha256.New, []byte(c.o.Token))
	m.Write([]byte("duradyn console session"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (c *Console) setSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: c.sessionValue(), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// handleLogin takes the token from the login form.
func (c *Console) handleLogin(w http.ResponseWriter, r *http.Request) {
	if c.o.Token == "" {
		http.Redirect(w, r, "/instances", http.StatusSeeOther)
		return
	}
	if !c.tokenMatches(r.PostFormValue("token")) {
		w.WriteHeader(http.StatusUnauthorized)
		c.render(w, r, "login.html", page{Title: "Sign in", Error: "That token is not the console's."}, nil)
		return
	}
	c.setSession(w, r)
	next := r.PostFormValue("next")
	if u, err := url.Parse(next); err != nil || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || u.Host != "" {
		next = "/instances"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// csrfToken returns the CSRF token of r's browser, setting the cookie it
// derives from when r has none.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	value := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
		value = ck.Value
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		value = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{
			Name: csrfCookie, Value: value, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
	}
	return c.csrfFor(value)
}

// csrfFor is the CSRF token of a CSRF cookie value: a MAC under this
// process's key, so a token cannot be made without the key.
func (c *Console) csrfFor(cookie string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies a form POST: a same-origin request whose CSRF field
// matches its cookie.
func (c *Console) checkCSRF(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return errors.New("request from another origin")
		}
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return errors.New("no CSRF cookie")
	}
	if !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(c.csrfFor(ck.Value))) {
		return errors.New("CSRF token does not match")
	}
	return nil
}
