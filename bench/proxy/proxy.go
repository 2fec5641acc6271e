// Package proxy is a TCP proxy that delays every byte by a fixed one-way
// latency, so that a system talking to a local emulator through it pays for
// each sequential round trip what it would pay against a remote service.
//
// The delay is a propagation delay, not a bandwidth limit: every chunk of
// bytes read from one side is written to the other side oneWay after it was
// read, whatever else is in flight. A request/response exchange therefore
// costs at least 2×oneWay more than without the proxy, while requests that
// are pipelined (sent before the previous response arrived) overlap their
// delays, as they would on a long network path. Order within each direction
// is kept.
//
// Connection set-up is not delayed: the client's connect completes at once
// and the proxy dials the target when it accepts. With keep-alive
// connections, as HTTP clients use, this only affects the first request of
// each connection.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNegativeDelay is returned by [Start] when the one-way delay is negative.
var ErrNegativeDelay = errors.New("proxy: negative one-way delay")

const (
	// chunkSize is the largest chunk read from a connection at once.
	chunkSize = 32 << 10
	// chunksInFlight bounds the chunks read but not yet delivered in one
	// direction of one connection; a reader waits when it is reached.
	chunksInFlight = 256
	// dialTimeout bounds how long the proxy tries to reach the target.
	dialTimeout = 10 * time.Second
	// acceptRetryPause is how long the proxy waits after a failed Accept.
	acceptRetryPause = 10 * time.Millisecond
)

// Proxy accepts TCP connections on a loopback address and relays each one to
// its target, delaying every chunk by the one-way delay in each direction.
// It is safe for concurrent use.
type Proxy struct {
	target   string
	oneWay   time.Duration
	listener net.Listener

	// ctx is cancelled by Close; it stops dials and delayed deliveries.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // every open connection, both sides

	accepted        atomic.Int64
	bytesToTarget   atomic.Int64
	bytesFromTarget atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// Start listens on 127.0.0.1 (a free port) and relays every accepted
// connection to target (host:port), delaying the bytes of each direction by
// oneWay. Call [Proxy.Close] to stop it.
func Start(target string, oneWay time.Duration) (*Proxy, error) {
	if oneWay < 0 {
		return nil, fmt.Errorf("%w: %v", ErrNegativeDelay, oneWay)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:   target,
		oneWay:   oneWay,
		listener: listener,
		ctx:      ctx,
		cancel:   cancel,
		conns:    make(map[net.Conn]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the host:port clients dial to reach the target through the
// proxy.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// URL returns "http://" followed by [Proxy.Addr], for use as an SDK client's
// BaseEndpoint.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Target returns the host:port the proxy relays to.
func (p *Proxy) Target() string { return p.target }

// OneWay returns the delay added to each direction.
func (p *Proxy) OneWay() time.Duration { return p.oneWay }

// Accepted returns how many client connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// BytesToTarget returns how many bytes the proxy has delivered from clients
// to the target.
func (p *Proxy) BytesToTarget() int64 { return p.bytesToTarget.Load() }

// BytesFromTarget returns how many bytes the proxy has delivered from the
// target to clients.
func (p *Proxy) BytesFromTarget() int64 { return p.bytesFromTarget.Load() }

// Close stops accepting, closes every open connection (bytes still in flight
// are dropped) and returns once every goroutine of the proxy has ended. Later
// calls return the result of the first.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		conns := make([]net.Conn, 0, len(p.conns))
		for c := range p.conns {
			conns = append(conns, c)
		}
		p.mu.Unlock()

		p.cancel()
		if err := p.listener.Close(); err != nil {
			p.closeErr = fmt.Errorf("proxy: close listener: %w", err)
		}
		for _, c := range conns {
			_ = c.Close() // unblocks its reader and writer; the error says nothing new
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// track records c as open; it returns false (and closes c) when the proxy is
// closing, so that Close never misses a connection.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close() // may already be closed by Close or the other direction
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures (too many open files, aborted handshakes):
			// keep serving after a pause, unless the proxy is closing.
			pause := time.NewTimer(acceptRetryPause)
			select {
			case <-p.ctx.Done():
				pause.Stop()
				return
			case <-pause.C:
				continue
			}
		}
		p.accepted.Add(1)
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve relays one client connection until both directions have ended, or
// either fails, or the proxy closes.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)

	dialer := net.Dialer{Timeout: dialTimeout}
	target, err := dialer.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// The client sees its connection closed, as when a remote host
		// cannot be reached.
		return
	}
	if !p.track(target) {
		return
	}
	defer p.untrack(target)

	// abort ends both directions at once: on a read or write failure, or
	// when a side resets. Closing both connections unblocks readers and
	// writers; the done channel unblocks waits for delivery. Close does the
	// same for every connection by closing them and cancelling p.ctx.
	done := make(chan struct{})
	var abortOnce sync.Once
	abort := func() {
		abortOnce.Do(func() {
			close(done)
			_ = client.Close()
			_ = target.Close()
		})
	}

	var relays sync.WaitGroup
	relays.Add(2)
	go func() {
		defer relays.Done()
		p.relay(target, client, &p.bytesToTarget, done, abort)
	}()
	go func() {
		defer relays.Done()
		p.relay(client, target, &p.bytesFromTarget, done, abort)
	}()
	relays.Wait()
}

// chunk is a piece of one direction's byte stream and when to deliver it.
// A chunk with eof set ends the direction: cleanly (err nil, the write side
// of dst is closed) or with the read error (both connections are closed).
type chunk struct {
	data      []byte
	deliverAt time.Time
	eof       bool
	err       error
}

// relay copies src to dst, delivering each chunk oneWay after it was read.
// A reader goroutine keeps reading while earlier chunks wait, so that chunks
// in flight are delayed in parallel.
func (p *Proxy) relay(dst, src net.Conn, delivered *atomic.Int64, done <-chan struct{}, abort func()) {
	chunks := make(chan chunk, chunksInFlight)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		p.read(src, chunks, done)
	}()
	defer reader.Wait()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var c chunk
		select {
		case c = <-chunks:
		case <-done:
			return
		case <-p.ctx.Done():
			return
		}
		if wait := time.Until(c.deliverAt); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-done:
				return
			case <-p.ctx.Done():
				return
			}
		}
		if c.eof {
			if c.err != nil {
				abort()
				return
			}
			if err := closeWrite(dst); err != nil {
				abort()
			}
			return
		}
		n, err := dst.Write(c.data)
		delivered.Add(int64(n))
		if err != nil {
			abort()
			return
		}
	}
}

// read reads src into chunks stamped with their delivery time, until an
// error or EOF (sent as a final chunk) or until done is closed.
func (p *Proxy) read(src net.Conn, chunks chan<- chunk, done <-chan struct{}) {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		now := time.Now()
		if n > 0 {
			c := chunk{data: append([]byte(nil), buf[:n]...), deliverAt: now.Add(p.oneWay)}
			select {
			case chunks <- c:
			case <-done:
				return
			case <-p.ctx.Done():
				return
			}
		}
		if err != nil {
			c := chunk{deliverAt: now.Add(p.oneWay), eof: true}
			if !errors.Is(err, io.EOF) {
				c.err = err
			}
			select {
			case chunks <- c:
			case <-done:
			case <-p.ctx.Done():
			}
			return
		}
	}
}

// closeWrite half-closes c when it supports it (TCP does), else closes it.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
