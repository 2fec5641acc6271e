package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for an SDK client's HTTP client (see
// [Transport.HTTPClient]) that injects faults below the SDK's retryer: each
// attempt the SDK makes is one request here, so the retryer meets the
// faults as it meets real network and server failures, and retries them.
// Rules ([NetRule]) pick requests by operation name and body. A Transport
// is safe for concurrent use.
type Transport struct {
	base http.RoundTripper

	mu      sync.Mutex // guards the fields below and each rule's counts
	rules   []*netRule // in the order added
	off     bool
	sent    map[string]int // per operation
	faulted map[string]int // per operation
}

// netRule is an added rule and its counts.
type netRule struct {
	NetRule
	matched int  // requests that met Ops and Match
	picked  int  // requests picked
	removed bool // set by the rule's remove function
}

// NewTransport returns a Transport that sends requests with base, or with a
// clone of http.DefaultTransport when base is nil (a clone, so that closing
// its idle connections touches no other client).
func NewTransport(base http.RoundTripper) *Transport {
	if base == nil {
		base = http.DefaultTransport
		if dt, ok := base.(*http.Transport); ok {
			base = dt.Clone()
		}
	}
	return &Transport{base: base, sent: map[string]int{}, faulted: map[string]int{}}
}

// HTTPClient returns an HTTP client that sends through t, for an SDK
// client's Options.HTTPClient. It has no timeout: the SDK bounds calls
// with their contexts, which is what the stalling faults wait for.
func (t *Transport) HTTPClient() *http.Client { return &http.Client{Transport: t} }

// NetRule picks requests for a [Transport] and names the fault they meet.
type NetRule struct {
	// Ops names the operations the rule applies to, as the SDK names them
	// ("UpdateItem", "TransactWriteItems", "ReceiveMessage"); empty means
	// every operation.
	Ops []string
	// Match, when set, must also hold for the request's JSON body. The body
	// is read (and restored for sending) only for rules that have a Match.
	Match func(op string, body []byte) bool
	// Every picks every Every-th request that meets Ops and Match, counted
	// per rule; 0 or 1 picks each.
	Every int
	// Count caps the requests the rule picks; 0 means no cap.
	Count int
	// Fault is what a picked request meets. It must not be nil.
	Fault NetFault
}

// Add adds r after the rules already added and returns a function that
// removes it (calling it again does nothing). A request goes to the rules
// in the order they were added; the first rule that picks it applies, and
// the rules after it do not count it.
func (t *Transport) Add(r NetRule) (remove func()) {
	if r.Fault == nil {
		panic("faults: NetRule without a Fault")
	}
	nr := &netRule{NetRule: r}
	nr.Ops = slices.Clone(r.Ops) // the caller may reuse its slice
	t.mu.Lock()
	t.rules = append(t.rules, nr)
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		nr.removed = true
		t.rules = slices.DeleteFunc(t.rules, func(x *netRule) bool { return x == nr })
	}
}

// SetEnabled turns the transport on (the default) or off. While it is off,
// every request passes untouched and uncounted, for set-up and checks.
func (t *Transport) SetEnabled(on bool) {
	t.mu.Lock()
	t.off = !on
	t.mu.Unlock()
}

// Sent returns how many requests of op reached the base transport,
// including those sent by a fault that sends them.
func (t *Transport) Sent(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent[op]
}

// Faulted returns how many requests of op a rule picked.
func (t *Transport) Faulted(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.faulted[op]
}

// RoundTrip sends req through the first rule that picks it, or to the base
// transport when none does.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	off := t.off
	t.mu.Unlock()
	if off {
		return t.base.RoundTrip(req)
	}
	op := opOf(req)
	req, f, err := t.pick(req, op)
	if err != nil {
		return nil, err
	}
	send := func(r *http.Request) (*http.Response, error) {
		t.mu.Lock()
		t.sent[op]++
		t.mu.Unlock()
		return t.base.RoundTrip(r)
	}
	if f == nil {
		return send(req)
	}
	return f.roundTrip(req, send)
}

// pick returns the fault of the first rule that picks req (nil if none)
// and the request to send, whose body is buffered if a rule read it.
func (t *Transport) pick(req *http.Request, op string) (*http.Request, NetFault, error) {
	rules, needBody := t.candidates(op)
	if len(rules) == 0 {
		return req, nil, nil
	}
	var body []byte
	if needBody {
		var err error
		if req, body, err = bufferBody(req); err != nil {
			return nil, nil, err
		}
	}
	// Match runs outside the lock: it is the caller's code and may be slow
	// or call back into t.
	rules = slices.DeleteFunc(rules, func(r *netRule) bool { return r.Match != nil && !r.Match(op, body) })
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rules {
		if r.removed {
			continue
		}
		r.matched++
		if r.matched%max(r.Every, 1) != 0 || (r.Count > 0 && r.picked >= r.Count) {
			continue
		}
		r.picked++
		t.faulted[op]++
		return req, r.Fault, nil
	}
	return req, nil, nil
}

// candidates returns a copy of the rules that apply to op, and whether one
// of them needs the body.
func (t *Transport) candidates(op string) (rules []*netRule, needBody bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rules {
		if len(r.Ops) == 0 || slices.Contains(r.Ops, op) {
			rules = append(rules, r)
			needBody = needBody || r.Match != nil
		}
	}
	return rules, needBody
}

// opOf returns the operation of an SDK request: the part of its
// X-Amz-Target header after the last '.' ("" without the header).
func opOf(req *http.Request) string {
	target := req.Header.Get("X-Amz-Target")
	return target[strings.LastIndexByte(target, '.')+1:]
}

// bufferBody reads req's body and returns a copy of req that carries the
// same bytes, so that the base transport can still send them (and resend
// them, through GetBody). RoundTrip must not modify req itself.
func bufferBody(req *http.Request) (*http.Request, []byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil, nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("faults: read the request body: %w", err)
	}
	r := req.Clone(req.Context())
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) {
		if len(body) == 0 {
			return http.NoBody, nil // a non-nil empty body would be sent chunked
		}
		return io.NopCloser(bytes.NewReader(body)), nil
	}
	r.Body, _ = r.GetBody()
	return r, body, nil
}

// NetFault is what a request a [NetRule] picks meets. NetFaults are made
// by the functions of this package ([LoseResponse], [ResetResponse],
// [SlowResponse], [StallResponse], [DelayRequest], [StallRequest],
// [ServerStatus]); other implementations are not possible.
type NetFault interface {
	// String describes the fault, for logs.
	String() string
	// roundTrip handles req, sending it with send if the fault sends it.
	roundTrip(req *http.Request, send sendFunc) (*http.Response, error)
}

// sendFunc sends a request to the base transport, counting it as sent.
type sendFunc func(*http.Request) (*http.Response, error)

// LoseResponse sends the request, which the service applies, discards the
// response and fails as a connection that timed out while reading does:
// with a [*net.OpError] (Op "read") around [os.ErrDeadlineExceeded], whose
// Timeout() is true. The SDK retries it, resending a request that already
// took effect.
func LoseResponse() NetFault { return netLose{} }

// ResetResponse is [LoseResponse] with the error of a connection the peer
// reset: a [*net.OpError] (Op "read") around [syscall.ECONNRESET]
// ("connection reset by peer"), which the SDK also retries.
func ResetResponse() NetFault { return netLose{reset: true} }

// SlowResponse sends the request and holds its response for d of real
// time, as a slow network does. If the request's context ends first, the
// call fails with the context's error, although the request took effect.
func SlowResponse(d time.Duration) NetFault { return netSlow{d: d} }

// StallResponse sends the request, which the service applies, and never
// returns its response: the call fails with the context's error when the
// request's context ends (and never returns if it does not end).
func StallResponse() NetFault { return netStallResponse{} }

// DelayRequest holds the request for d of real time before sending it. If
// the request's context ends first, the call fails, unsent, with the
// context's error.
func DelayRequest(d time.Duration) NetFault { return netDelay{d: d} }

// StallRequest never sends the request: the call fails with the context's
// error when the request's context ends (and never returns if it does not
// end).
func StallRequest() NetFault { return netStallRequest{} }

// ServerStatus answers the request with an HTTP error as the service's
// JSON protocol does: status code 500 (error code InternalServerError) or
// 503 (ServiceUnavailable), with the request ID "injected-by-faults". With
// applied true, the request is sent first (a write lands; its response is
// discarded); with applied false it is not sent. The SDK retries both.
// ServerStatus panics for other codes.
func ServerStatus(code int, applied bool) NetFault {
	if code != http.StatusInternalServerError && code != http.StatusServiceUnavailable {
		panic(fmt.Sprintf("faults: ServerStatus(%d): the code must be 500 or 503", code))
	}
	return netStatus{code: code, applied: applied}
}

type (
	netLose          struct{ reset bool }
	netSlow          struct{ d time.Duration }
	netStallResponse struct{}
	netDelay         struct{ d time.Duration }
	netStallRequest  struct{}
	netStatus        struct {
		code    int
		applied bool
	}
)

func (f netLose) String() string {
	if f.reset {
		return "reset response"
	}
	return "lose response"
}
func (f netSlow) String() string        { return "slow response " + f.d.String() }
func (netStallResponse) String() string { return "stall response" }
func (f netDelay) String() string       { return "delay request " + f.d.String() }
func (netStallRequest) String() string  { return "stall request" }
func (f netStatus) String() string {
	if f.applied {
		return fmt.Sprintf("server status %d (applied)", f.code)
	}
	return fmt.Sprintf("server status %d (not sent)", f.code)
}

func (f netLose) roundTrip(req *http.Request, send sendFunc) (*http.Response, error) {
	resp, err := send(req)
	if err != nil {
		return nil, err
	}
	discard(resp)
	// What net.Conn.Read returns on such connections, as http.Transport
	// passes it on.
	cause := error(os.ErrDeadlineExceeded)
	if f.reset {
		cause = os.NewSyscallError("read", syscall.ECONNRESET)
	}
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: cause}
}

func (f netSlow) roundTrip(req *http.Request, send sendFunc) (*http.Response, error) {
	resp, err := send(req)
	if err != nil {
		return nil, err
	}
	if err := sleep(req.Context(), f.d); err != nil {
		discard(resp)
		return nil, err
	}
	return resp, nil
}

func (netStallResponse) roundTrip(req *http.Request, send sendFunc) (*http.Response, error) {
	resp, err := send(req)
	if err != nil {
		return nil, err
	}
	<-req.Context().Done()
	discard(resp)
	return nil, req.Context().Err()
}

func (f netDelay) roundTrip(req *http.Request, send sendFunc) (*http.Response, error) {
	if err := sleep(req.Context(), f.d); err != nil {
		closeBody(req)
		return nil, err
	}
	return send(req)
}

func (netStallRequest) roundTrip(req *http.Request, _ sendFunc) (*http.Response, error) {
	closeBody(req)
	<-req.Context().Done()
	return nil, req.Context().Err()
}

func (f netStatus) roundTrip(req *http.Request, send sendFunc) (*http.Response, error) {
	if !f.applied {
		closeBody(req)
		return errorResponse(req, f.code), nil
	}
	resp, err := send(req)
	if err != nil {
		return nil, err
	}
	discard(resp)
	return errorResponse(req, f.code), nil
}

// errorResponse returns the response of a DynamoDB or SQS JSON-protocol
// server failing req with code (500 or 503).
func errorResponse(req *http.Request, code int) *http.Response {
	name := "InternalServerError"
	if code == http.StatusServiceUnavailable {
		name = "ServiceUnavailable"
	}
	target := req.Header.Get("X-Amz-Target")
	service := target[:max(strings.LastIndexByte(target, '.'), 0)]
	switch {
	case strings.HasPrefix(service, "DynamoDB_"):
		name = "com.amazonaws.dynamodb.v" + strings.TrimPrefix(service, "DynamoDB_") + "#" + name
	case service == "AmazonSQS":
		name = "com.amazonaws.sqs#" + name
	}
	body, _ := json.Marshal(map[string]string{"__type": name, "message": "injected by faults"})
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-RequestId", requestID)
	// DynamoDB checksums every response; the SDK checks it when present.
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return &http.Response{
		Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}

// sleep waits for d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// discard drains and closes a response nobody will read, so that its
// connection can serve another request.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
