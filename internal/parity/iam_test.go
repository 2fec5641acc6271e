package parity_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/internal/parity"
	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/locks"
	"github.com/duradyn/duradyn/queues"
)

// The interfaces name SDK operations: the SDK clients implement them, so
// every method name is the name of a real operation.
var (
	_ dynamo.API     = (*dynamodb.Client)(nil)
	_ queues.API     = (*sqs.Client)(nil)
	_ locks.API      = (*dynamodb.Client)(nil)
	_ jobs.DynamoAPI = (*dynamodb.Client)(nil)
)

// iamActionsFile is the module's action list, relative to this package.
var iamActionsFile = filepath.Join("..", "..", "terraform", "iam_actions.json")

// TestIAMActionsFile is the IAM parity check: terraform/iam_actions.json
// grants exactly the actions the SDK calls of the provider, the distributed
// locks and the job store need (all three use the one table and queue).
func TestIAMActionsFile(t *testing.T) {
	var want parity.IAMActions
	for _, api := range []reflect.Type{reflect.TypeFor[dynamo.API](), reflect.TypeFor[locks.API](), reflect.TypeFor[jobs.DynamoAPI]()} {
		need, err := parity.RequiredIAMActions(api, reflect.TypeFor[queues.API]())
		if err != nil {
			t.Fatalf("%v: %v", api, err)
		}
		want.Table = union(want.Table, need.Table)
		want.Indexes = union(want.Indexes, need.Indexes)
		want.Queues = union(want.Queues, need.Queues)
	}
	got, err := parity.LoadIAMActions(iamActionsFile)
	if err != nil {
		t.Fatal(err)
	}
	if d := want.Diff(got); len(d) > 0 {
		t.Errorf("%s does not match the SDK operations of dynamo.API, locks.API, jobs.DynamoAPI and queues.API:\n  %s\nrequired: %+v",
			iamActionsFile, strings.Join(d, "\n  "), want)
	}
	// The provider queries its indexes, so the index statement cannot be
	// empty; an empty one would also make an invalid policy statement.
	if len(want.Indexes) == 0 || len(want.Table) == 0 || len(want.Queues) == 0 {
		t.Errorf("a statement has no actions: %+v", want)
	}
}

// Interfaces standing in for dynamo.API and queues.API in the tests below.
type (
	itemAPI interface {
		GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
		TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	}
	queryAPI interface {
		Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
		PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	}
	statementAPI interface {
		ExecuteStatement(context.Context, *dynamodb.ExecuteStatementInput, ...func(*dynamodb.Options)) (*dynamodb.ExecuteStatementOutput, error)
	}
	batchAPI interface {
		SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
		SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
		DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	}
	purgeAPI interface {
		PurgeQueue(context.Context, *sqs.PurgeQueueInput, ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	}
)

func TestRequiredIAMActions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		dynamoDB, sqs reflect.Type
		want          parity.IAMActions
	}{
		{
			name:     "a transaction needs the action of every item operation it may hold",
			dynamoDB: reflect.TypeFor[itemAPI](),
			sqs:      reflect.TypeFor[batchAPI](),
			want: parity.IAMActions{
				Table:  []string{"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
				Queues: []string{"sqs:DeleteMessage", "sqs:SendMessage"},
			},
		},
		{
			name:     "a query needs the index statement too",
			dynamoDB: reflect.TypeFor[queryAPI](),
			sqs:      reflect.TypeFor[noOperations](),
			want: parity.IAMActions{
				Table:   []string{"dynamodb:PutItem", "dynamodb:Query"},
				Indexes: []string{"dynamodb:Query"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parity.RequiredIAMActions(tc.dynamoDB, tc.sqs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RequiredIAMActions = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// noOperations is an interface with no operation.
type noOperations interface{}

// An operation missing from the operation table fails the check, naming
// the operation: a new SDK call cannot go unnoticed.
func TestRequiredIAMActions_UnknownOperation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		dynamoDB, sqs reflect.Type
		op            string
	}{
		{"DynamoDB", reflect.TypeFor[statementAPI](), reflect.TypeFor[batchAPI](), "ExecuteStatement"},
		{"SQS", reflect.TypeFor[itemAPI](), reflect.TypeFor[purgeAPI](), "PurgeQueue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parity.RequiredIAMActions(tc.dynamoDB, tc.sqs)
			if err == nil || !strings.Contains(err.Error(), tc.op) {
				t.Fatalf("RequiredIAMActions = %v, want an error naming %s", err, tc.op)
			}
		})
	}
	if _, err := parity.RequiredIAMActions(reflect.TypeFor[*dynamodb.Client](), reflect.TypeFor[batchAPI]()); err == nil {
		t.Error("RequiredIAMActions accepted a struct pointer type, want an error")
	}
}

// The comparison reports every extra, missing and duplicated action, per
// statement.
func TestIAMActionsDiff(t *testing.T) {
	want := parity.IAMActions{
		Table:   []string{"dynamodb:GetItem", "dynamodb:Query"},
		Indexes: []string{"dynamodb:Query"},
		Queues:  []string{"sqs:ReceiveMessage", "sqs:SendMessage"},
	}
	for _, tc := range []struct {
		name string
		edit func(*parity.IAMActions)
		diff []string
	}{
		{name: "same actions", edit: func(*parity.IAMActions) {}},
		{
			name: "same actions in another order",
			edit: func(a *parity.IAMActions) { slices.Reverse(a.Table); slices.Reverse(a.Queues) },
		},
		{
			name: "extra action",
			edit: func(a *parity.IAMActions) { a.Table = append(a.Table, "dynamodb:DescribeTable") },
			diff: []string{"table: dynamodb:DescribeTable is granted but no SDK call needs it"},
		},
		{
			name: "missing action",
			edit: func(a *parity.IAMActions) { a.Queues = a.Queues[:1] },
			diff: []string{"queues: sqs:SendMessage is required but not granted"},
		},
		{
			name: "action on the wrong statement",
			edit: func(a *parity.IAMActions) { a.Indexes = nil; a.Queues = append(a.Queues, "dynamodb:Query") },
			diff: []string{
				"indexes: dynamodb:Query is required but not granted",
				"queues: dynamodb:Query is granted but no SDK call needs it",
			},
		},
		{
			name: "duplicate",
			edit: func(a *parity.IAMActions) { a.Indexes = append(a.Indexes, "dynamodb:Query") },
			diff: []string{"indexes: dynamodb:Query is listed more than once"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parity.IAMActions{
				Table:   slices.Clone(want.Table),
				Indexes: slices.Clone(want.Indexes),
				Queues:  slices.Clone(want.Queues),
			}
			tc.edit(&got)
			if d := want.Diff(got); !slices.Equal(d, tc.diff) {
				t.Errorf("Diff = %q, want %q", d, tc.diff)
			}
		})
	}
}

func TestLoadIAMActions_RejectsUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iam_actions.json")
	if err := os.WriteFile(path, []byte(`{"table": [], "index": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parity.LoadIAMActions(path); err == nil || !strings.Contains(err.Error(), "index") {
		t.Fatalf("LoadIAMActions = %v, want an error naming the unknown field", err)
	}
}

// union returns the sorted set of the strings in a and b.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
