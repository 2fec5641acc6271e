package faults

import (
	"context"
	"time"
)

// call is one request through a wrapper.
type call[O any] struct {
	op    string
	input any
	// admit, when set, runs just before the request is sent, with the
	// injector on: it applies real conflicts, failing the call unsent with
	// an error, or returning a function to call once the caller has its
	// answer.
	admit func() (done func(), err error)
	// send sends the request. active is false when the injector is off; f
	// is the fault that fired, or nil.
	send func(ctx context.Context, active bool, f Fault) (O, error)
}

// run makes one call: it decides the fault, applies what happens before
// the request is sent, sends it (possibly twice), and applies what
// happens to the response.
func run[O any](ctx context.Context, in *Injector, c call[O]) (O, error) {
	var zero O
	f, active := in.decide(Request{Op: c.op, Input: c.input})
	if !active {
		return c.send(ctx, false, nil)
	}
	service := serviceOf[c.op]
	switch f := f.(type) {
	case throttle:
		return zero, throttleError(service, c.op, f.code)
	case serverError:
		return zero, serverErrorFor(service, c.op, f.code)
	case transactionCanceled:
		return zero, in.cancelTransaction(f, c.input)
	case timeoutBefore:
		return zero, timeoutError(service, c.op, "dial")
	case delay:
		t := time.NewTimer(f.d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return zero, canceledError(service, c.op, ctx.Err())
		}
	case hold:
		if err := f.g.pass(ctx); err != nil {
			return zero, canceledError(service, c.op, err)
		}
	}
	if c.admit != nil {
		done, err := c.admit()
		if err != nil {
			return zero, err
		}
		defer done()
	}
	out, err := c.send(ctx, true, f)
	switch f := f.(type) {
	case lostResponse:
		return zero, timeoutError(service, c.op, "read")
	case resend:
		return c.send(ctx, true, nil)
	case holdResponse:
		if herr := f.g.pass(ctx); herr != nil {
			return zero, canceledError(service, c.op, herr)
		}
	}
	return out, err
}
