package lambdasim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RuntimeAPI is a fake of the Lambda Runtime API (version 2018-06-01) for
// one execution environment: the function's process, started with
// AWS_LAMBDA_RUNTIME_API set to [RuntimeAPI.Addr], takes invocations from
// GET /runtime/invocation/next (with the request id, deadline and function
// ARN headers aws-lambda-go reads) and posts each one's result to
// /runtime/invocation/{id}/response or /error. Initialisation errors posted
// to /runtime/init/error are kept ([RuntimeAPI.InitError]).
type RuntimeAPI struct {
	// FunctionARN is sent as Lambda-Runtime-Invoked-Function-Arn.
	FunctionARN string

	ln      net.Listener
	srv     *http.Server
	pending chan *apiInvocation
	closed  chan struct{}
	once    sync.Once

	mu       sync.Mutex
	inflight map[string]*apiInvocation
	initErr  []byte
	nexts    atomic.Int64
}

// apiInvocation is one invocation handed to, or waiting for, the process.
type apiInvocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan apiResult // capacity 1
}

type apiResult struct {
	body []byte
	err  *FunctionError
}

// FunctionError is an error a function reported through the Runtime API.
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// NewRuntimeAPI serves a Runtime API on a free loopback port until
// [RuntimeAPI.Close].
func NewRuntimeAPI() (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdasim: runtime API: %w", err)
	}
	a := &RuntimeAPI{
		FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:duradyn-worker",
		ln:          ln,
		pending:     make(chan *apiInvocation),
		closed:      make(chan struct{}),
		inflight:    map[string]*apiInvocation{},
	}
	mux := http.NewServeMux()
	const base = "/2018-06-01/runtime"
	mux.HandleFunc("GET "+base+"/invocation/next", a.next)
	mux.HandleFunc("POST "+base+"/invocation/{id}/response", a.result)
	mux.HandleFunc("POST "+base+"/invocation/{id}/error", a.result)
	mux.HandleFunc("POST "+base+"/init/error", a.initError)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// Addr is the host:port to give the process as AWS_LAMBDA_RUNTIME_API.
func (a *RuntimeAPI) Addr() string { return a.ln.Addr().String() }

// Nexts counts the process's calls of /invocation/next.
func (a *RuntimeAPI) Nexts() int64 { return a.nexts.Load() }

// InitError returns the body the process posted to /init/error, if any.
func (a *RuntimeAPI) InitError() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.initErr
}

// Invoke hands payload to the process's next call of /invocation/next,
// with deadline in the deadline header, and returns the response it posts,
// or the [*FunctionError] it reports. It fails with ctx's error when ctx
// ends first, and when the API is closed.
func (a *RuntimeAPI) Invoke(ctx context.Context, payload []byte, deadline time.Time) ([]byte, error) {
	inv := &apiInvocation{id: rand.Text(), payload: payload, deadline: deadline, done: make(chan apiResult, 1)}
	a.mu.Lock()
	a.inflight[inv.id] = inv
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.inflight, inv.id)
		a.mu.Unlock()
	}()
	select {
	case a.pending <- inv:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-a.closed:
		return nil, errAPIClosed
	}
	select {
	case r := <-inv.done:
		if r.err != nil {
			return nil, r.err
		}
		return r.body, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-a.closed:
		return nil, errAPIClosed
	}
}

var errAPIClosed = errors.New("lambdasim: runtime API closed")

// next hands the process the next invocation, waiting for one.
func (a *RuntimeAPI) next(w http.ResponseWriter, r *http.Request) {
	a.nexts.Add(1)
	select {
	case inv := <-a.pending:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", a.FunctionARN)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	case <-a.closed:
		http.Error(w, "runtime API closed", http.StatusGone)
	}
}

// result takes an invocation's response or error.
func (a *RuntimeAPI) result(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.mu.Lock()
	inv := a.inflight[id]
	a.mu.Unlock()
	if inv == nil {
		http.Error(w, "unknown request id", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res := apiResult{body: body}
	if len(r.URL.Path) > 6 && r.URL.Path[len(r.URL.Path)-6:] == "/error" {
		fe := &FunctionError{}
		if err := json.Unmarshal(body, fe); err != nil || fe.Type == "" {
			fe = &FunctionError{Type: r.Header.Get("Lambda-Runtime-Function-Error-Type"), Message: string(body)}
		}
		res = apiResult{err: fe}
	}
	select {
	case inv.done <- res:
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "result already posted", http.StatusBadRequest)
	}
}

// initError keeps an initialisation error.
func (a *RuntimeAPI) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.initErr = body
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Close stops serving: the process's next call of /invocation/next fails,
// and lambda.Start exits.
func (a *RuntimeAPI) Close() error {
	a.once.Do(func() { close(a.closed) })
	return a.srv.Close()
}
