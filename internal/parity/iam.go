package parity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// IAMActions are the action lists of the module's IAM policy document, one
// per statement, as terraform/iam_actions.json holds them.
type IAMActions struct {
	// Table are the actions allowed on the table (statement DuradynTable).
	Table []string `json:"table"`
	// Indexes are the actions allowed on the table's global secondary
	// indexes (statement DuradynIndexes).
	Indexes []string `json:"indexes"`
	// Queues are the actions allowed on both signal queues (statement
	// DuradynSignalQueues).
	Queues []string `json:"queues"`
}

// LoadIAMActions reads an iam_actions.json file. A field the file should not
// have, or trailing data, is an error.
func LoadIAMActions(path string) (IAMActions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return IAMActions{}, fmt.Errorf("parity: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a IAMActions
	if err := dec.Decode(&a); err != nil {
		return IAMActions{}, fmt.Errorf("parity: decode %s: %w", path, err)
	}
	if dec.More() {
		return IAMActions{}, fmt.Errorf("parity: decode %s: data after the JSON object", path)
	}
	return a, nil
}

// dynamoDBOperations maps DynamoDB SDK operations to the IAM actions that
// authorize them (AWS Service Authorization Reference, "Actions, resources,
// and condition keys for Amazon DynamoDB", and the DynamoDB developer guide,
// "Using IAM with DynamoDB transactions"). There is no IAM action named after
// either transaction operation: each action inside a transaction is
// authorized by the action of its single-item counterpart (Put by PutItem,
// Update by UpdateItem, Delete by DeleteItem, Get by GetItem) and a
// ConditionCheck by ConditionCheckItem. Which kinds one transaction holds
// is decided at run time, so TransactWriteItems needs all four.
var dynamoDBOperations = map[string][]string{
	"BatchGetItem":       {"dynamodb:BatchGetItem"},
	"BatchWriteItem":     {"dynamodb:BatchWriteItem"},
	"DeleteItem":         {"dynamodb:DeleteItem"},
	"DescribeTable":      {"dynamodb:DescribeTable"},
	"DescribeTimeToLive": {"dynamodb:DescribeTimeToLive"},
	"GetItem":            {"dynamodb:GetItem"},
	"PutItem":            {"dynamodb:PutItem"},
	"Query":              {"dynamodb:Query"},
	"Scan":               {"dynamodb:Scan"},
	"TransactGetItems":   {"dynamodb:GetItem"},
	"TransactWriteItems": {"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
	"UpdateItem":         {"dynamodb:UpdateItem"},
}

// sqsOperations maps SQS SDK operations to the IAM actions that authorize
// them. The batch operations have no actions of their own: SendMessage,
// DeleteMessage and ChangeMessageVisibility also authorize their batch
// versions (Amazon SQS developer guide, "Amazon SQS batch actions").
var sqsOperations = map[string][]string{
	"ChangeMessageVisibility":      {"sqs:ChangeMessageVisibility"},
	"ChangeMessageVisibilityBatch": {"sqs:ChangeMessageVisibility"},
	"DeleteMessage":                {"sqs:DeleteMessage"},
	"DeleteMessageBatch":           {"sqs:DeleteMessage"},
	"GetQueueAttributes":           {"sqs:GetQueueAttributes"},
	"GetQueueUrl":                  {"sqs:GetQueueUrl"},
	"ReceiveMessage":               {"sqs:ReceiveMessage"},
	"SendMessage":                  {"sqs:SendMessage"},
	"SendMessageBatch":             {"sqs:SendMessage"},
}

// indexActions are the DynamoDB actions that can name a global secondary
// index: a process that needs one of them on the table needs it on the
// indexes too (the provider's queries of the ready and instances indexes).
var indexActions = []string{"dynamodb:Query", "dynamodb:Scan"}

// RequiredIAMActions returns the actions a process needs that calls every
// method of dynamoDBAPI, each a DynamoDB SDK operation, and of sqsAPI, each
// an SQS SDK operation. Both must be interface types. The lists are sorted
// and free of duplicates. A method the operation tables do not know is an
// error naming it: add the operation, with the IAM actions AWS documents for
// it, to the table in this file.
func RequiredIAMActions(dynamoDBAPI, sqsAPI reflect.Type) (IAMActions, error) {
	table, err := actionsOf(dynamoDBAPI, "DynamoDB", dynamoDBOperations)
	if err != nil {
		return IAMActions{}, err
	}
	queues, err := actionsOf(sqsAPI, "SQS", sqsOperations)
	if err != nil {
		return IAMActions{}, err
	}
	var indexes []string
	for _, a := range table {
		if slices.Contains(indexActions, a) {
			indexes = append(indexes, a)
		}
	}
	return IAMActions{Table: table, Indexes: indexes, Queues: queues}, nil
}

// actionsOf maps every method of the interface type api through ops.
func actionsOf(api reflect.Type, service string, ops map[string][]string) ([]string, error) {
	if api == nil || api.Kind() != reflect.Interface {
		return nil, fmt.Errorf("parity: %s operations: want an interface type, got %v", service, api)
	}
	var actions, unknown []string
	for i := range api.NumMethod() {
		m := api.Method(i)
		a, ok := ops[m.Name]
		if !ok {
			unknown = append(unknown, m.Name)
			continue
		}
		actions = append(actions, a...)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("parity: %s: no IAM actions known for the %s operations %s; add them to the operation table of internal/parity",
			api, service, strings.Join(unknown, ", "))
	}
	slices.Sort(actions)
	return slices.Compact(actions), nil
}

// Diff lists the differences between want, the actions required, and got,
// the actions granted, one sentence per action and statement, for example:
//
//	table: dynamodb:Scan is required but not granted
//	queues: sqs:GetQueueAttributes is granted but no SDK call needs it
//	indexes: dynamodb:Query is listed more than once
//
// It returns nil when both list the same actions per statement. Order does
// not matter; a duplicate in got is a difference.
func (want IAMActions) Diff(got IAMActions) []string {
	var d []string
	d = append(d, diffList("table", want.Table, got.Table)...)
	d = append(d, diffList("indexes", want.Indexes, got.Indexes)...)
	d = append(d, diffList("queues", want.Queues, got.Queues)...)
	return d
}

func diffList(statement string, want, got []string) []string {
	var d []string
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for _, w := range sortedSet(want) {
		if seen[w] == 0 {
			d = append(d, fmt.Sprintf("%s: %s is required but not granted", statement, w))
		}
	}
	for _, g := range sortedSet(got) {
		switch {
		case !slices.Contains(want, g):
			d = append(d, fmt.Sprintf("%s: %s is granted but no SDK call needs it", statement, g))
		case seen[g] > 1:
			d = append(d, fmt.Sprintf("%s: %s is listed more than once", statement, g))
		}
	}
	return d
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
