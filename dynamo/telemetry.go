package dynamo

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duradyn/duradyn/dynamo/internal/capacity"
	"github.com/duradyn/duradyn/internal/instrument"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/queues"
)

// InstrumentationName is the name of the tracer and meter the provider
// takes from [Options.TracerProvider] and [Options.MeterProvider].
const InstrumentationName = "github.com/duradyn/duradyn/dynamo"

// Attribute keys, from OpenTelemetry's semantic conventions.
const (
	attrRPCSystem      = attribute.Key("rpc.system")
	attrRPCService     = attribute.Key("rpc.service")
	attrRPCMethod      = attribute.Key("rpc.method")
	attrDBSystem       = attribute.Key("db.system")
	attrDBSystemName   = attribute.Key("db.system.name")
	attrTableNames     = attribute.Key("aws.dynamodb.table_names")
	attrRequestID      = attribute.Key("aws.request_id")
	attrCloudRegion    = attribute.Key("cloud.region")
	attrHTTPStatusCode = attribute.Key("http.response.status_code")
)

// awsTelemetry is the SDK middleware that traces each DynamoDB and SQS
// request and counts requests and consumed capacity. It is added per call,
// so it also covers clients given in [Options.Client] and SQSClient.
type awsTelemetry struct {
	tracer   trace.Tracer // nil: no spans
	metering bool

	requests metric.Int64Counter
	capacity metric.Float64Counter
	duration metric.Float64Histogram

	dynamoOpt func(*dynamodb.Options)
	sqsOpt    func(*sqs.Options)
}

// newAWSTelemetry returns the middleware, or nil when both are nil.
func newAWSTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*awsTelemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &awsTelemetry{}
	if tp != nil {
		t.tracer = tp.Tracer(InstrumentationName, trace.WithInstrumentationVersion(Version))
	}
	if mp != nil {
		t.metering = true
		m := mp.Meter(InstrumentationName, metric.WithInstrumentationVersion(Version))
		var err1, err2, err3 error
		t.requests, err1 = m.Int64Counter("dynamo.aws.requests", metric.WithUnit("{request}"),
			metric.WithDescription("DynamoDB and SQS requests made by the provider (one per SDK operation call, retries included in it)."))
		t.capacity, err2 = m.Float64Counter("dynamo.dynamodb.consumed_capacity", metric.WithUnit("{capacity_unit}"),
			metric.WithDescription("Read and write capacity units consumed by the provider's DynamoDB requests."))
		t.duration, err3 = m.Float64Histogram("rpc.client.call.duration",
			instrument.Seconds("Duration of the provider's DynamoDB and SQS requests.")...)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
	}
	add := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("DuradynTelemetry", t.handle), middleware.After)
	}
	t.dynamoOpt = func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, add) }
	t.sqsOpt = func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, add) }
	return t, nil
}

// handle runs once per operation call, around the SDK's retries.
func (t *awsTelemetry) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attrRPCSystem.String("aws-api"), attrRPCService.String(service), attrRPCMethod.String(op))
	if service == dynamodb.ServiceID {
		attrs = append(attrs, attrDBSystem.String("dynamodb"), attrDBSystemName.String("aws.dynamodb"))
		if names := tableNames(in.Parameters); len(names) > 0 {
			attrs = append(attrs, attrTableNames.StringSlice(names))
		}
		if t.metering {
			capacity.Ask(in.Parameters)
		}
	}
	var span trace.Span
	if t.tracer != nil {
		spanAttrs := attrs
		if region := awsmiddleware.GetRegion(ctx); region != "" {
			spanAttrs = append(slices.Clip(attrs), attrCloudRegion.String(region))
		}
		ctx, span = t.tracer.Start(ctx, service+"/"+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(spanAttrs...))
	}
	began := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		attrs = append(attrs, instrument.ErrorTypeKey.String(awsErrorType(err)))
	}
	if span != nil {
		if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok && id != "" {
			span.SetAttributes(attrRequestID.String(id))
		}
		if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil && resp.Response != nil {
			span.SetAttributes(attrHTTPStatusCode.Int(resp.StatusCode))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(instrument.ErrorTypeKey.String(awsErrorType(err)))
		}
		span.End()
	}
	if t.metering {
		set := metric.WithAttributes(attrs...)
		t.requests.Add(ctx, 1, set)
		t.duration.Record(ctx, time.Since(began).Seconds(), set)
		if c := capacity.Consumed(out.Result); c > 0 {
			t.capacity.Add(ctx, c, set)
		}
	}
	return out, md, err
}

// awsErrorType is error.type for a failed request: the service's error
// code, else "_OTHER".
func awsErrorType(err error) string {
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "_OTHER"
}

// tableNames returns the tables a DynamoDB request names.
func tableNames(params any) []string {
	one := func(name *string) []string {
		if name == nil {
			return nil
		}
		return []string{*name}
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return one(in.TableName)
	case *dynamodb.PutItemInput:
		return one(in.TableName)
	case *dynamodb.UpdateItemInput:
		return one(in.TableName)
	case *dynamodb.DeleteItemInput:
		return one(in.TableName)
	case *dynamodb.QueryInput:
		return one(in.TableName)
	case *dynamodb.ScanInput:
		return one(in.TableName)
	case *dynamodb.BatchWriteItemInput:
		return slices.Sorted(maps.Keys(in.RequestItems))
	case *dynamodb.BatchGetItemInput:
		return slices.Sorted(maps.Keys(in.RequestItems))
	case *dynamodb.TransactWriteItemsInput:
		var names []string
		for _, it := range in.TransactItems {
			if name := itemsize.ActionTable(it); name != nil && !slices.Contains(names, *name) {
				names = append(names, *name)
			}
		}
		slices.Sort(names)
		return names
	}
	return nil
}

// withOpt appends opt to optFns without writing to the caller's array.
func withOpt[O any](optFns []func(*O), opt func(*O)) []func(*O) {
	return append(slices.Clip(optFns), opt)
}

// instrumentedDynamoDB adds opt to every call: the telemetry middleware, or
// the clock-skew watch's.
type instrumentedDynamoDB struct {
	api API
	opt func(*dynamodb.Options)
}

func (c instrumentedDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return c.api.GetItem(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return c.api.PutItem(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return c.api.UpdateItem(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return c.api.DeleteItem(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return c.api.Query(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return c.api.Scan(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return c.api.TransactWriteItems(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedDynamoDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return c.api.BatchWriteItem(ctx, in, withOpt(optFns, c.opt)...)
}

// instrumentedSQS adds the telemetry middleware to every call.
type instrumentedSQS struct {
	api queues.API
	opt func(*sqs.Options)
}

func (c instrumentedSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return c.api.SendMessageBatch(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return c.api.ReceiveMessage(ctx, in, withOpt(optFns, c.opt)...)
}

func (c instrumentedSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return c.api.DeleteMessageBatch(ctx, in, withOpt(optFns, c.opt)...)
}
