package parity

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Every operation of the operation tables is a method of the SDK client of
// its service, and maps to actions of that service only.
func TestOperationTables(t *testing.T) {
	for _, svc := range []struct {
		client reflect.Type
		prefix string
		ops    map[string][]string
	}{
		{reflect.TypeFor[*dynamodb.Client](), "dynamodb:", dynamoDBOperations},
		{reflect.TypeFor[*sqs.Client](), "sqs:", sqsOperations},
	} {
		for op, actions := range svc.ops {
			if _, ok := svc.client.MethodByName(op); !ok {
				t.Errorf("%s is not an operation of %v", op, svc.client)
			}
			if len(actions) == 0 {
				t.Errorf("%s maps to no action", op)
			}
			for _, a := range actions {
				if !strings.HasPrefix(a, svc.prefix) || len(a) == len(svc.prefix) {
					t.Errorf("%s maps to %q, want an action %s...", op, a, svc.prefix)
				}
			}
		}
	}
	for _, a := range indexActions {
		found := false
		for _, actions := range dynamoDBOperations {
			for _, b := range actions {
				found = found || a == b
			}
		}
		if !found {
			t.Errorf("index action %s is the action of no operation", a)
		}
	}
}
