package localstack

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// probeConfig is the configuration of readiness probes: one attempt per call
// and no kept-alive connections, so probing leaves no goroutines behind.
func probeConfig(region string) aws.Config {
	hc := awshttp.NewBuildableClient().
		WithTimeout(5 * time.Second).
		WithTransportOptions(func(t *http.Transport) { t.DisableKeepAlives = true })
	return aws.Config{
		Region:           region,
		Credentials:      credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretAccessKey, ""),
		HTTPClient:       hc,
		RetryMaxAttempts: 1,
	}
}

// dynamoDBReady returns a probe that lists tables at url.
func dynamoDBReady(url, region string) func(context.Context) error {
	e := Endpoints{DynamoDBURL: url, Region: region}
	client := e.DynamoDB(probeConfig(region))
	return func(ctx context.Context) error {
		_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		return err
	}
}

// sqsReady returns a probe that lists queues at url.
func sqsReady(url, region string) func(context.Context) error {
	e := Endpoints{SQSURL: url, Region: region}
	client := e.SQS(probeConfig(region))
	return func(ctx context.Context) error {
		_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})
		return err
	}
}

// earlyExitError reports a server that exited before it answered.
type earlyExitError struct{ p *process }

func (e *earlyExitError) Error() string { return e.p.exitError("before it was ready").Error() }

// waitReady calls probe every 100ms until it succeeds, timeout passes or
// ctx is done. When proc is not nil, it also fails as soon as proc exits,
// with an *earlyExitError.
func waitReady(ctx context.Context, timeout time.Duration, name, url string, proc *process, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var exited <-chan struct{} // nil (never ready) without a process
	if proc != nil {
		exited = proc.done
	}
	start := time.Now()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		err := probe(attempt)
		cancelAttempt()
		if proc != nil && proc.exited() {
			return &earlyExitError{proc}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			var logTail string
			if proc != nil {
				logTail = fmt.Sprintf("\nlast lines of %s:\n%s", proc.logPath, proc.logTail(20))
			}
			return fmt.Errorf("localstack: %s at %s not ready after %v: %w%s", name, url, time.Since(start).Round(time.Millisecond), err, logTail)
		case <-exited:
			return &earlyExitError{proc}
		case <-time.After(100 * time.Millisecond):
		}
	}
}
