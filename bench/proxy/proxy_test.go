package proxy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/goleak"

	"github.com/duradyn/duradyn/bench/proxy"
	"github.com/duradyn/duradyn/localstack"
)

func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }

// oneWay is long enough that the bounds the tests assert hold on a loaded
// machine: a round trip is at least 2×oneWay by construction, and 50
// pipelined round trips finish well within 50 sequential ones (2 s).
const oneWay = 20 * time.Millisecond

// verifyNoLeaks fails t if goroutines started during the test are still
// running when it ends (after every other cleanup).
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// server is a TCP server for tests: handle runs for every connection, which
// is closed when handle returns. Cleanup closes the listener and waits for
// every handler.
func server(t *testing.T, handle func(c *net.TCPConn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c.(*net.TCPConn))
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

// echo writes back what it reads, and half-closes when the client does.
func echo(c *net.TCPConn) {
	if _, err := io.Copy(c, c); err != nil {
		return
	}
	_ = c.CloseWrite()
}

func startProxy(t *testing.T, target string, delay time.Duration) *proxy.Proxy {
	t.Helper()
	p, err := proxy.Start(target, delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func dial(t *testing.T, p *proxy.Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

func TestRoundTripTakesAtLeastTwiceOneWay(t *testing.T) {
	verifyNoLeaks(t)
	p := startProxy(t, server(t, echo), oneWay)
	c := dial(t, p)

	msg := []byte("ping")
	got := make([]byte, len(msg))
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if !bytes.Equal(got, msg) {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
	if elapsed < 2*oneWay {
		t.Errorf("round trip took %v, want at least 2×%v", elapsed, oneWay)
	}
}

func TestPipelinedWritesOverlapTheirDelays(t *testing.T) {
	verifyNoLeaks(t)
	p := startProxy(t, server(t, echo), oneWay)
	c := dial(t, p)

	const writes = 50
	var want bytes.Buffer
	for i := range writes {
		fmt.Fprintf(&want, "message %02d;", i)
	}
	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		// Each message is its own write, sent without waiting for the
		// echo of the previous one.
		for i := range writes {
			if _, err := fmt.Fprintf(c, "message %02d;", i); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("echo = %q, want %q (order within a direction must be kept)", got, want.Bytes())
	}
	if sequential := writes * 2 * oneWay; elapsed >= sequential {
		t.Errorf("%d pipelined writes took %v, want less than %v (%d round trips)", writes, elapsed, sequential, writes)
	}
	if elapsed < 2*oneWay {
		t.Errorf("%d pipelined writes took %v, want at least one round trip (%v)", writes, elapsed, 2*oneWay)
	}
}

func TestCloseWritePropagatesBothWays(t *testing.T) {
	verifyNoLeaks(t)
	// The server reads until the client half-closes, answers with the
	// number of bytes read, then closes: the client can still read after
	// closing its write side, and sees EOF after the answer.
	addr := server(t, func(c *net.TCPConn) {
		n, err := io.Copy(io.Discard, c)
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, strconv.FormatInt(n, 10)); err != nil {
			return
		}
		_ = c.CloseWrite()
	})
	p := startProxy(t, addr, time.Millisecond)
	c := dial(t, p)

	if _, err := io.WriteString(c, "twelve bytes"); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read after CloseWrite: %v", err)
	}
	if string(got) != "12" {
		t.Errorf("answer = %q, want %q", got, "12")
	}
}

func TestCountersCountConnectionsAndBytes(t *testing.T) {
	verifyNoLeaks(t)
	p := startProxy(t, server(t, echo), time.Millisecond)
	for _, msg := range []string{"hello", "proxy!"} {
		c := dial(t, p)
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		// EOF arrives after the echo server saw EOF, so after every byte
		// of both directions was delivered and counted.
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != msg {
			t.Fatalf("echo = %q, want %q", got, msg)
		}
	}
	if got := p.Accepted(); got != 2 {
		t.Errorf("Accepted = %d, want 2", got)
	}
	if got := p.BytesToTarget(); got != 11 {
		t.Errorf("BytesToTarget = %d, want 11", got)
	}
	if got := p.BytesFromTarget(); got != 11 {
		t.Errorf("BytesFromTarget = %d, want 11", got)
	}
}

func TestCloseWithOpenConnectionsReturnsAndLeaksNothing(t *testing.T) {
	verifyNoLeaks(t)
	addr := server(t, echo)
	// Bytes would wait an hour for delivery: Close must not wait for them.
	p, err := proxy.Start(addr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var conns []*net.TCPConn
	for range 3 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c.(*net.TCPConn))
	}
	// One connection idle, one with bytes in flight, one half-closed.
	if _, err := io.WriteString(conns[1], "in flight"); err != nil {
		t.Fatal(err)
	}
	if err := conns[2].CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, c := range conns {
		n, err := c.Read(make([]byte, 16))
		if n != 0 || err == nil {
			t.Errorf("connection %d after Close: read %d bytes, err %v; want the connection closed", i, n, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("dial after Close succeeded, want the listener closed")
	}
}

func TestUnreachableTargetClosesClientConnection(t *testing.T) {
	verifyNoLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens at addr now
	p := startProxy(t, addr, time.Millisecond)
	c := dial(t, p)
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil {
		t.Errorf("read = %d bytes, err %v; want the connection closed", n, err)
	}
}

func TestStartRejectsNegativeDelay(t *testing.T) {
	_, err := proxy.Start("127.0.0.1:1", -time.Millisecond)
	if !errors.Is(err, proxy.ErrNegativeDelay) {
		t.Errorf("Start = %v, want ErrNegativeDelay", err)
	}
}

func TestDynamoDBLocalAnswersThroughProxy(t *testing.T) {
	ep := localstack.ForTest(t)
	verifyNoLeaks(t) // after the emulator of this test binary is up
	ctx := t.Context()
	target, err := hostPort(ep.DynamoDBURL)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, target, 2*time.Millisecond)

	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A client of its own, so that its keep-alive connections can be
	// closed before the leak check.
	httpClient := awshttp.NewBuildableClient()
	t.Cleanup(func() { httpClient.GetTransport().CloseIdleConnections() })
	cfg.HTTPClient = httpClient
	db := ep.DynamoDB(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })

	for range 2 {
		if _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
			t.Fatalf("ListTables through the proxy: %v", err)
		}
	}
	if p.Accepted() < 1 || p.BytesToTarget() == 0 || p.BytesFromTarget() == 0 {
		t.Errorf("proxy saw %d connections, %d bytes to target, %d bytes back; want the requests to pass through it",
			p.Accepted(), p.BytesToTarget(), p.BytesFromTarget())
	}
}

// hostPort returns the host:port of a URL.
func hostPort(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("no host in %q", rawURL)
	}
	return u.Host, nil
}
