package faults

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrUnsupported is in the chain of the error a query on a lagging index
// fails with when the index-lag model cannot evaluate it (see
// [Injector.SetIndexLag]). The chain also holds a ValidationException
// [*smithy.GenericAPIError], so that callers treat it as a permanent client
// error rather than retry it.
var ErrUnsupported = errors.New("faults: not supported by the index-lag model")

// requestID is the request ID of every injected error response, so that
// logs show which failures were injected.
const requestID = "injected-by-faults"

// sdkAttempts is the SDK's default number of attempts: injected retryable
// errors look like the last of them.
const sdkAttempts = 3

// messageSuffix ends the message of every injected API error.
const messageSuffix = " (injected by package faults)"

// throttleStatus returns the HTTP status of a throttling code, or 0 for an
// unknown code.
func throttleStatus(code string) int {
	switch code {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "RequestThrottled":
		return http.StatusBadRequest
	}
	return 0
}

// serverStatus returns the HTTP status of a server error code, or 0 for an
// unknown code.
func serverStatus(code string) int {
	switch code {
	case "InternalServerError":
		return http.StatusInternalServerError
	case "ServiceUnavailable":
		return http.StatusServiceUnavailable
	}
	return 0
}

// opError wraps err as the SDK's client methods do.
func opError(service, op string, err error) error {
	return &smithy.OperationError{ServiceID: service, OperationName: op, Err: err}
}

// responseError wraps an API error in the HTTP response error the SDK's
// deserializers return.
func responseError(status int, err error) error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{
				StatusCode: status,
				Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
				Header:     http.Header{},
			}},
			Err: err,
		},
		RequestID: requestID,
	}
}

// exhausted wraps err as the SDK's retryer does once its attempts are used
// up.
func exhausted(err error) error {
	return &retry.MaxAttemptsError{Attempt: sdkAttempts, Err: err}
}

// throttleError is the error of [Throttle] for one request.
func throttleError(service, op, code string) error {
	if code == "" {
		code = "ProvisionedThroughputExceededException"
		if service == serviceSQS {
			code = "RequestThrottled"
		}
	}
	msg := aws.String("Rate of requests exceeds the allowed throughput." + messageSuffix)
	var api error
	switch {
	case service == serviceDynamoDB && code == "ProvisionedThroughputExceededException":
		api = &types.ProvisionedThroughputExceededException{Message: msg}
	case service == serviceDynamoDB && code == "ThrottlingException":
		api = &types.ThrottlingException{Message: msg}
	case service == serviceDynamoDB && code == "RequestLimitExceeded":
		api = &types.RequestLimitExceeded{Message: msg}
	case service == serviceSQS && code == "RequestThrottled":
		api = &sqstypes.RequestThrottled{Message: msg}
	default:
		api = &smithy.GenericAPIError{Code: code, Message: *msg, Fault: smithy.FaultClient}
	}
	return opError(service, op, exhausted(responseError(throttleStatus(code), api)))
}

// serverErrorFor is the error of [ServerError] for one request.
func serverErrorFor(service, op, code string) error {
	if code == "" {
		code = "InternalServerError"
	}
	msg := "The server encountered an internal error trying to fulfill the request." + messageSuffix
	var api error = &smithy.GenericAPIError{Code: code, Message: msg, Fault: smithy.FaultServer}
	if service == serviceDynamoDB && code == "InternalServerError" {
		api = &types.InternalServerError{Message: aws.String(msg)}
	}
	return opError(service, op, exhausted(responseError(serverStatus(code), api)))
}

// timeoutError is the error of [TimeoutBefore] (netOp "dial": nothing was
// sent) and [LostResponse] (netOp "read": the response never came).
func timeoutError(service, op, netOp string) error {
	cause := &net.OpError{Op: netOp, Net: "tcp", Err: os.ErrDeadlineExceeded}
	u := &url.Error{Op: "Post", URL: "https://" + strings.ToLower(service) + ".faults.invalid/", Err: cause}
	return opError(service, op, exhausted(&smithyhttp.RequestSendError{Err: u}))
}

// canceledError is the error the SDK returns when the caller's context
// ends during a request.
func canceledError(service, op string, cause error) error {
	return opError(service, op, &smithy.CanceledError{Err: cause})
}

// cancellationMessages are the messages DynamoDB gives with cancellation
// reasons.
var cancellationMessages = map[string]string{
	"TransactionConflict":           "Transaction is ongoing for the item",
	"ThrottlingError":               "Throughput exceeds the current capacity of your table or index.",
	"ProvisionedThroughputExceeded": "The level of configured provisioned throughput for the table was exceeded.",
}

// transactionCanceledError is a cancelled TransactWriteItems whose actions
// have the given reason codes ("None" for no reason).
func transactionCanceledError(codes []string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i].Code = aws.String(c)
		if m, ok := cancellationMessages[c]; ok {
			reasons[i].Message = aws.String(m + messageSuffix)
		}
	}
	api := &types.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"),
		CancellationReasons: reasons,
	}
	return opError(serviceDynamoDB, OpTransactWriteItems, responseError(http.StatusBadRequest, api))
}

// transactionConflictError is the error of a single-item write that met a
// transaction in flight on its item.
func transactionConflictError(op string) error {
	api := &types.TransactionConflictException{
		Message: aws.String("Transaction is ongoing for the item" + messageSuffix),
	}
	return opError(serviceDynamoDB, op, responseError(http.StatusBadRequest, api))
}

// validationError is a ValidationException for op with msg; unsupported
// adds [ErrUnsupported] to the chain.
func validationError(op, msg string, unsupported bool) error {
	api := &smithy.GenericAPIError{Code: "ValidationException", Message: msg, Fault: smithy.FaultClient}
	err := responseError(http.StatusBadRequest, api)
	if unsupported {
		err = fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return opError(serviceDynamoDB, op, err)
}
