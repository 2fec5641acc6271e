package faults_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
)

// fixture is one test's table, raw client, injector and wrapped client.
type fixture struct {
	env *dynamotest.Env
	in  *faults.Injector
	db  faults.DynamoDB // through the injector
}

func newFixture(t *testing.T, optFns ...func(*faults.Options)) *fixture {
	t.Helper()
	env := dynamotest.NewEnv(t, false)
	in := faults.New(1, optFns...)
	return &fixture{env: env, in: in, db: in.DynamoDB(env.DB)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

// row is an item with key pk/sk and the string attributes attrs (name,
// value, name, value, ...).
func row(pk, sk string, attrs ...string) map[string]types.AttributeValue {
	it := key(pk, sk)
	for i := 0; i+1 < len(attrs); i += 2 {
		it[attrs[i]] = str(attrs[i+1])
	}
	return it
}

func (f *fixture) put(t *testing.T, db faults.DynamoDB, it map[string]types.AttributeValue) error {
	t.Helper()
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: it})
	return err
}

// get reads an item consistently from the raw client; nil when absent.
func (f *fixture) get(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.env.DB.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(f.env.Table), Key: key(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

func attr(it map[string]types.AttributeValue, name string) string {
	if s, ok := it[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// wantOpError checks that err is what the SDK returns for service and op
// and returns its API error code ("" when there is none).
func wantOpError(t *testing.T, err error, service, op string) string {
	t.Helper()
	var oe *smithy.OperationError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not a *smithy.OperationError", err, err)
	}
	if oe.ServiceID != service || oe.OperationName != op {
		t.Errorf("operation error of %s %s, want %s %s", oe.ServiceID, oe.OperationName, service, op)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v looks like the caller's context ended", err)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// wantExhausted checks that err is a retryable error after the SDK's last
// attempt, with HTTP status status (0: no response).
func wantExhausted(t *testing.T, err error, status int) {
	t.Helper()
	var mae *retry.MaxAttemptsError
	if !errors.As(err, &mae) {
		t.Fatalf("error %v has no *retry.MaxAttemptsError", err)
	}
	if !retry.NewStandard().IsErrorRetryable(mae.Err) {
		t.Errorf("the SDK's retryer does not retry %v", mae.Err)
	}
	var re *awshttp.ResponseError
	switch {
	case status == 0 && errors.As(err, &re):
		t.Errorf("error %v has a response, want none", err)
	case status != 0 && !errors.As(err, &re):
		t.Errorf("error %v has no response, want status %d", err, status)
	case status != 0 && re.HTTPStatusCode() != status:
		t.Errorf("status %d, want %d", re.HTTPStatusCode(), status)
	}
}

// await polls cond until it holds, failing t after a minute.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stubDB answers GetItem at once and counts the calls; its other methods
// are not implemented. It serves tests of the rules' logic, which need
// many requests.
type stubDB struct {
	faults.DynamoDB
	gets atomic.Int64
}

func (s *stubDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.gets.Add(1)
	return &dynamodb.GetItemOutput{}, nil
}

func getItem(ctx context.Context, db faults.DynamoDB) error {
	_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("p", "s")})
	return err
}
