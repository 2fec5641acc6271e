package localstack

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Sources reported in [Endpoints.Source].
const (
	// SourceEnv means the endpoints came from environment variables and
	// nothing was started.
	SourceEnv = "env"
	// SourceLocalStack means a LocalStack container was started through
	// testcontainers-go.
	SourceLocalStack = "localstack"
	// SourceEmbedded means DynamoDB Local and an SQS emulator were installed
	// into the cache directory and started as child processes.
	SourceEmbedded = "embedded"
)

// DefaultRegion is the region used when [Options.Region] or
// [Endpoints.Region] is empty.
const DefaultRegion = "us-east-1"

// Static credentials every emulator accepts. They are not secrets.
const (
	testAccessKeyID     = "test"
	testSecretAccessKey = "test"
)

// Endpoints says where DynamoDB and SQS are, and how to reach them.
//
// The zero value is not useful; get one from [Start], [ForTest], or build
// it by hand for an emulator that is already running.
type Endpoints struct {
	// DynamoDBURL is the base URL of the DynamoDB API, for example
	// "http://127.0.0.1:41234".
	DynamoDBURL string
	// SQSURL is the base URL of the SQS API.
	SQSURL string
	// Region is the region clients sign for. Empty means [DefaultRegion].
	Region string
	// Source says how the endpoints were found: [SourceEnv],
	// [SourceLocalStack] or [SourceEmbedded].
	Source string
}

// sharedHTTPClient is the one HTTP client (and connection pool) behind every
// aws.Config returned by [Endpoints.AWSConfig], so that a test binary creating
// many clients does not accumulate idle connections. [Main] closes its idle
// connections at the end of the run.
var sharedHTTPClient = sync.OnceValue(awshttp.NewBuildableClient)

// AWSConfig returns an aws.Config for the emulators: the region of e (or
// [DefaultRegion]) and the static credentials "test"/"test".
//
// It reads no environment variables, no shared config or credentials files
// and no instance metadata, so a developer's AWS profile can neither leak into
// tests nor break them. The returned config carries no endpoint: build clients
// with [Endpoints.DynamoDB] and [Endpoints.SQS], which set it. The error is
// always nil today; ctx is accepted so that loading may do I/O later without
// an API change.
func (e Endpoints) AWSConfig(ctx context.Context) (aws.Config, error) {
	_ = ctx
	region := e.Region
	if region == "" {
		region = DefaultRegion
	}
	return aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretAccessKey, "")),
		HTTPClient:  sharedHTTPClient(),
	}, nil
}

// DynamoDB returns a DynamoDB client for cfg whose BaseEndpoint is
// e.DynamoDBURL. Response checksum validation is disabled because DynamoDB
// Local omits the x-amz-crc32 header on error responses (the SDK would log a
// warning for each one). optFns are applied after those settings.
func (e Endpoints) DynamoDB(cfg aws.Config, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	fns := make([]func(*dynamodb.Options), 0, 1+len(optFns))
	fns = append(fns, func(o *dynamodb.Options) {
		if e.DynamoDBURL != "" {
			o.BaseEndpoint = aws.String(e.DynamoDBURL)
		}
		o.DisableValidateResponseChecksum = true
	})
	fns = append(fns, optFns...)
	return dynamodb.NewFromConfig(cfg, fns...)
}

// SQS returns an SQS client for cfg whose BaseEndpoint is e.SQSURL. The SDK
// sends every request to that endpoint, whatever host a queue URL names.
// optFns are applied after that setting.
func (e Endpoints) SQS(cfg aws.Config, optFns ...func(*sqs.Options)) *sqs.Client {
	fns := make([]func(*sqs.Options), 0, 1+len(optFns))
	fns = append(fns, func(o *sqs.Options) {
		if e.SQSURL != "" {
			o.BaseEndpoint = aws.String(e.SQSURL)
		}
	})
	fns = append(fns, optFns...)
	return sqs.NewFromConfig(cfg, fns...)
}
