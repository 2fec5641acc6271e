package lambdasim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// ErrCutOff is the error of every request through a [Cutoff] once it is
// cut, including those in flight at that moment.
var ErrCutOff = errors.New("lambdasim: the environment is gone")

// Cutoff is an http.RoundTripper for the AWS clients of one simulated
// execution environment. [Cutoff.Cut] ends the environment's I/O at once,
// as the end of a killed or timed-out sandbox does: requests in flight are
// abandoned (whether they reached the server is unknown to the sender, as
// after a kill), and later ones fail without leaving the process. It is
// safe for concurrent use.
type Cutoff struct {
	base   http.RoundTripper
	ctx    context.Context
	cut    context.CancelFunc
	client *http.Client
	once   sync.Once
}

// NewCutoff returns a Cutoff that sends through base, or through a clone
// of http.DefaultTransport when base is nil (a clone, so that its
// connections belong to this environment alone).
func NewCutoff(base http.RoundTripper) *Cutoff {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	c := &Cutoff{base: base}
	c.ctx, c.cut = context.WithCancel(context.Background())
	c.client = &http.Client{Transport: c}
	return c
}

// HTTPClient returns an HTTP client that sends through c, for the
// HTTPClient option of an SDK client. It has no timeout of its own.
func (c *Cutoff) HTTPClient() *http.Client { return c.client }

// Cut ends every request in flight and fails every later one with
// [ErrCutOff]. Idle connections are closed.
func (c *Cutoff) Cut() {
	c.once.Do(func() {
		c.cut()
		if t, ok := c.base.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	})
}

// IsCut reports whether [Cutoff.Cut] was called.
func (c *Cutoff) IsCut() bool { return c.ctx.Err() != nil }

// RoundTrip sends req unless c is cut, and abandons it if c is cut before
// its response body is closed.
func (c *Cutoff) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.ctx.Err() != nil {
		return nil, ErrCutOff
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(c.ctx, func() { cancel(ErrCutOff) })
	done := func() {
		stop()
		cancel(nil)
	}
	resp, err := c.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		done()
		if c.ctx.Err() != nil {
			return nil, ErrCutOff
		}
		return nil, err
	}
	resp.Body = &cutBody{ReadCloser: resp.Body, done: done}
	return resp, nil
}

// cutBody releases its request's watch on the Cutoff when closed.
type cutBody struct {
	io.ReadCloser
	done func()
	once sync.Once
}

func (b *cutBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
