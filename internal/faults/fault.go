package faults

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind names a kind of fault, as [Stats] counts them.
type Kind int

// The kinds of fault. The zero Kind is invalid.
const (
	// KindThrottle is a [Throttle] fault.
	KindThrottle Kind = iota + 1
	// KindServerError is a [ServerError] fault.
	KindServerError
	// KindTransactionCanceled is a [TransactionCanceled] fault.
	KindTransactionCanceled
	// KindTimeoutBefore is a [TimeoutBefore] fault.
	KindTimeoutBefore
	// KindLostResponse is a [LostResponse] fault.
	KindLostResponse
	// KindResend is a [Resend] fault.
	KindResend
	// KindDelay is a [Delay] fault.
	KindDelay
	// KindHold is a [Hold] fault.
	KindHold
	// KindHoldResponse is a [HoldResponse] fault.
	KindHoldResponse
	// KindDuplicate counts messages a [Duplicate] fault delivered a second
	// time.
	KindDuplicate
	// KindRealConflict counts writes failed because another write touching
	// one of their items was in flight (see [Injector.SetRealConflicts]).
	KindRealConflict
	// KindLaggedQuery counts queries and scans served from a lagging view of
	// an index (see [Injector.SetIndexLag]).
	KindLaggedQuery
)

// kinds lists every valid Kind, in order.
var kinds = []Kind{
	KindThrottle, KindServerError, KindTransactionCanceled, KindTimeoutBefore, KindLostResponse, KindResend,
	KindDelay, KindHold, KindHoldResponse, KindDuplicate, KindRealConflict, KindLaggedQuery,
}

// String returns the kind's name in lower case ("throttle", "lost
// response", ...), or "Kind(n)".
func (k Kind) String() string {
	switch k {
	case KindThrottle:
		return "throttle"
	case KindServerError:
		return "server error"
	case KindTransactionCanceled:
		return "transaction canceled"
	case KindTimeoutBefore:
		return "timeout before"
	case KindLostResponse:
		return "lost response"
	case KindResend:
		return "resend"
	case KindDelay:
		return "delay"
	case KindHold:
		return "hold"
	case KindHoldResponse:
		return "hold response"
	case KindDuplicate:
		return "duplicate delivery"
	case KindRealConflict:
		return "real conflict"
	case KindLaggedQuery:
		return "lagged query"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Fault is what happens to a request a [Rule] picks. Faults are made by
// the functions of this package ([Throttle], [ServerError],
// [TransactionCanceled], [TimeoutBefore], [LostResponse], [Resend],
// [Delay], [Hold], [HoldResponse], [Duplicate]); other implementations are
// not possible.
type Fault interface {
	// Kind returns the fault's kind.
	Kind() Kind
	// String describes the fault, for logs.
	String() string
	// check reports why the fault cannot apply to every operation of ops
	// (all operations when ops is empty).
	check(ops []string) error
}

// Throttle fails the request, unsent, with the throttling error code, as
// the SDK returns it once its retries are exhausted: a
// [*smithy.OperationError] wrapping a [*retry.MaxAttemptsError] wrapping
// the HTTP 400 response error, which wraps the service's modelled error
// type for code when it has one and a [*smithy.GenericAPIError] (client
// fault) otherwise.
//
// Codes: "ProvisionedThroughputExceededException", "ThrottlingException"
// and "RequestLimitExceeded" (modelled by DynamoDB), "RequestThrottled"
// (modelled by SQS). "" picks the service's usual one:
// ProvisionedThroughputExceededException on DynamoDB, RequestThrottled on
// SQS.
func Throttle(code string) Fault { return throttle{code: code} }

// ServerError fails the request, unsent, with a server-side error as the
// SDK returns it once its retries are exhausted (wrapped like [Throttle]'s):
// "InternalServerError" (HTTP 500; DynamoDB's modelled
// [types.InternalServerError], a [*smithy.GenericAPIError] on SQS) or
// "ServiceUnavailable" (HTTP 503, a [*smithy.GenericAPIError]), both server
// faults. "" means InternalServerError.
func ServerError(code string) Fault { return serverError{code: code} }

// TransactionCanceled fails a TransactWriteItems request, unsent, with a
// [*types.TransactionCanceledException] (HTTP 400, not retried by the SDK)
// whose CancellationReasons has one entry per action of the transaction:
// Code "None" for every action except the one at index, which carries
// reason. index -1 picks an action at random (an index past the end fails
// the request with an error naming the mistake). Reasons:
// "TransactionConflict", "ThrottlingError" and
// "ProvisionedThroughputExceeded". A rule with this fault must name only
// TransactWriteItems in its Ops.
func TransactionCanceled(reason string, index int) Fault {
	return transactionCanceled{reason: reason, index: index}
}

// TimeoutBefore fails the request without sending it, with the error the
// SDK returns when every attempt timed out on the network: a
// [*smithy.OperationError] wrapping a [*retry.MaxAttemptsError] wrapping a
// [*smithyhttp.RequestSendError] around a [*url.Error] around a dial
// [*net.OpError] whose cause is [os.ErrDeadlineExceeded] ("i/o timeout").
// The chain reports Timeout() and ConnectionError() true, the SDK
// classifies it as retryable, and it is neither [context.Canceled] nor
// [context.DeadlineExceeded]: the caller's context did not end.
func TimeoutBefore() Fault { return timeoutBefore{} }

// LostResponse sends the request, which the service applies, then discards
// the response and fails the call with the error of [TimeoutBefore] (the
// net.OpError's Op being "read"). The caller cannot tell whether the
// request took effect.
func LostResponse() Fault { return lostResponse{} }

// Resend sends the request, discards the response and sends it again,
// returning what the second attempt returns: what the SDK's retryer does
// after a lost response. A conditional write typically fails its condition
// on the second attempt because the first one applied.
func Resend() Fault { return resend{} }

// Delay holds the request for d of real time before sending it, as a slow
// network does or as an SDK retry resending an old request (with a stale
// timestamp in its values) does. A context that ends during the delay
// fails the call, unsent, with the SDK's cancellation error.
func Delay(d time.Duration) Fault { return delay{d: d} }

// Hold holds each request the rule picks before it is sent, until g is
// released or the request's context ends (the call then fails, unsent,
// with the SDK's cancellation error). See [Gate].
func Hold(g *Gate) Fault { return hold{g: g} }

// HoldResponse sends each request the rule picks, which the service
// applies, and holds its response until g is released or the request's
// context ends (the call then fails with the SDK's cancellation error,
// although the request took effect): a write that landed while its caller
// does not know yet. With real conflicts on, the request counts as in
// flight until its response is released. See [Gate].
func HoldResponse(g *Gate) Fault { return holdResponse{g: g} }

// Duplicate makes the messages a ReceiveMessage request returns be
// delivered again, by a later ReceiveMessage call on the same queue
// through the same [Injector], as SQS standard queues occasionally do. The
// later call returns the remembered messages (at most its
// MaxNumberOfMessages, at least one) without sending a request; they carry
// the original receipt handles, so deleting a duplicate deletes the
// message or, once it is gone, does nothing. A rule with this fault must
// name only ReceiveMessage in its Ops.
func Duplicate() Fault { return duplicate{} }

type (
	throttle            struct{ code string }
	serverError         struct{ code string }
	transactionCanceled struct {
		reason string
		index  int
	}
	timeoutBefore struct{}
	lostResponse  struct{}
	resend        struct{}
	delay         struct{ d time.Duration }
	hold          struct{ g *Gate }
	holdResponse  struct{ g *Gate }
	duplicate     struct{}
)

func (throttle) Kind() Kind            { return KindThrottle }
func (serverError) Kind() Kind         { return KindServerError }
func (transactionCanceled) Kind() Kind { return KindTransactionCanceled }
func (timeoutBefore) Kind() Kind       { return KindTimeoutBefore }
func (lostResponse) Kind() Kind        { return KindLostResponse }
func (resend) Kind() Kind              { return KindResend }
func (delay) Kind() Kind               { return KindDelay }
func (hold) Kind() Kind                { return KindHold }
func (holdResponse) Kind() Kind        { return KindHoldResponse }
func (duplicate) Kind() Kind           { return KindDuplicate }

func (f throttle) String() string    { return "throttle " + orDefault(f.code) }
func (f serverError) String() string { return "server error " + orDefault(f.code) }
func (f transactionCanceled) String() string {
	return fmt.Sprintf("transaction canceled (%s at %d)", f.reason, f.index)
}
func (timeoutBefore) String() string { return "timeout before sending" }
func (lostResponse) String() string  { return "lost response" }
func (resend) String() string        { return "resend" }
func (f delay) String() string       { return "delay " + f.d.String() }
func (hold) String() string          { return "hold request" }
func (holdResponse) String() string  { return "hold response" }
func (duplicate) String() string     { return "duplicate delivery" }

func (timeoutBefore) check([]string) error { return nil }
func (lostResponse) check([]string) error  { return nil }
func (resend) check([]string) error        { return nil }

func orDefault(code string) string {
	if code == "" {
		return "(default)"
	}
	return code
}

func (f throttle) check([]string) error {
	if f.code == "" || throttleStatus(f.code) != 0 {
		return nil
	}
	return fmt.Errorf("unknown throttling code %q", f.code)
}

func (f serverError) check([]string) error {
	if f.code == "" || serverStatus(f.code) != 0 {
		return nil
	}
	return fmt.Errorf("unknown server error code %q", f.code)
}

// transactionReasons are the cancellation reasons [TransactionCanceled]
// accepts.
var transactionReasons = []string{"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}

func (f transactionCanceled) check(ops []string) error {
	if !slices.Contains(transactionReasons, f.reason) {
		return fmt.Errorf("unknown cancellation reason %q (want one of %v)", f.reason, transactionReasons)
	}
	if f.index < -1 {
		return fmt.Errorf("cancellation index %d: want -1 (random) or an action's index", f.index)
	}
	return onlyOp(ops, OpTransactWriteItems, "a transaction cancellation")
}

func (f delay) check([]string) error {
	if f.d < 0 {
		return fmt.Errorf("negative delay %v", f.d)
	}
	return nil
}

func (f hold) check([]string) error         { return gateCheck(f.g) }
func (f holdResponse) check([]string) error { return gateCheck(f.g) }

func gateCheck(g *Gate) error {
	if g == nil {
		return errors.New("nil gate")
	}
	return nil
}

func (duplicate) check(ops []string) error {
	return onlyOp(ops, OpReceiveMessage, "duplicate delivery")
}

// onlyOp reports an error unless ops names op and nothing else.
func onlyOp(ops []string, op, what string) error {
	if len(ops) == 0 {
		return fmt.Errorf("%s applies only to %s: name it in Ops", what, op)
	}
	for _, o := range ops {
		if o != op {
			return fmt.Errorf("%s applies only to %s, not to %s", what, op, o)
		}
	}
	return nil
}
