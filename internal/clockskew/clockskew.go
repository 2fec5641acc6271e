// Package clockskew measures how far a process's clock is from DynamoDB's,
// from the Date header of each response, for the packages that write
// lease ends and due times by their own clock (dynamo, locks, jobs).
//
// The header has whole seconds, so a response read between the local
// times sent and received bounds the skew (local − server) to
// [sent − server − 1 s, received − server]. The intervals of successive
// responses are intersected, which narrows the estimate to tens of
// milliseconds after a few dozen requests; an empty intersection means the
// skew changed (a clock was stepped), and the estimate starts again from
// that response.
package clockskew

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// DefaultWarning is the skew above which a [Watch] warns unless told
// otherwise: the default of the packages' ClockSkewWarning options.
const DefaultWarning = time.Second

// ErrNegativeWarning is returned by [Warning] for a negative threshold.
var ErrNegativeWarning = errors.New("ClockSkewWarning is negative")

// Warning returns the threshold a ClockSkewWarning option asks for:
// [DefaultWarning] for zero, ErrNegativeWarning for a negative one.
func Warning(option time.Duration) (time.Duration, error) {
	switch {
	case option < 0:
		return 0, fmt.Errorf("%w: %v", ErrNegativeWarning, option)
	case option == 0:
		return DefaultWarning, nil
	}
	return option, nil
}

// middlewareID names the watch's middleware in a call's stack.
const middlewareID = "duradyn.ClockSkew"

// Watch holds one process clock's skew estimate. Its zero value is not
// usable; create one with [New]. It is safe for concurrent use.
type Watch struct {
	who, assumes string
	now          func() time.Time
	logger       *slog.Logger
	warn         time.Duration

	mu sync.Mutex
	// lo and hi bound local − server time; valid once samples > 0.
	lo, hi  time.Duration
	samples int
	warned  bool
}

// New returns a watch of the clock now ([time.Now] when nil). The first
// response that shows a skew beyond warn after one within it (or after
// none) is logged through logger (nil discards), once, as a warning
// "<who>: this process's clock is off from DynamoDB's; <assumes>" with the
// attributes "skew" (the estimate, positive when ahead), "uncertainty"
// (the half-width of its interval) and "threshold" (warn).
func New(who string, now func() time.Time, warn time.Duration, logger *slog.Logger, assumes string) *Watch {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Watch{who: who, assumes: assumes, now: now, logger: logger, warn: warn}
}

// Option adds the watch to one call of a DynamoDB client: pass it among
// the call's option functions. Every HTTP response of the call, retries
// and errors included, is observed.
func (w *Watch) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, w.addTo)
}

// addTo puts the watch's middleware at the end of the deserialize step,
// next to the transport, where each attempt's raw response passes.
func (w *Watch) addTo(s *middleware.Stack) error {
	return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc(middlewareID, w.handleDeserialize), middleware.After)
}

func (w *Watch) handleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	sent := w.now()
	out, md, err := next.HandleDeserialize(ctx, in)
	received := w.now()
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil && resp.Response != nil {
		if server, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			w.Observe(sent, received, server)
		}
	}
	return out, md, err
}

// Observe records one response: the local clock read before sending the
// request and after receiving the response, and the server time of its
// Date header.
func (w *Watch) Observe(sent, received, server time.Time) {
	lo, hi := sent.Sub(server)-time.Second, received.Sub(server)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.samples > 0 && lo <= w.hi && hi >= w.lo {
		lo, hi = max(lo, w.lo), min(hi, w.hi)
	}
	w.lo, w.hi = lo, hi
	w.samples++
	beyond := lo > w.warn || hi < -w.warn
	if beyond && !w.warned {
		w.logger.Warn(w.who+": this process's clock is off from DynamoDB's; "+w.assumes,
			"skew", (lo+hi)/2, "uncertainty", (hi-lo)/2, "threshold", w.warn)
	}
	w.warned = beyond
}

// Estimate returns the skew's best estimate (positive: the local clock is
// ahead) and the half-width of the interval it is known to lie in. ok is
// false before the first response with a Date header.
func (w *Watch) Estimate() (skew, uncertainty time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.samples == 0 {
		return 0, 0, false
	}
	return (w.lo + w.hi) / 2, (w.hi - w.lo) / 2, true
}
