package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/internal/tablekeys"
	"github.com/duradyn/duradyn/tables"
)

// systemPart is one part of the system page: the element that shows its
// figures, and the one that shows its error instead.
type systemPart struct {
	name, shown, errID string
	// reads picks the DynamoDB requests of the part.
	reads func(faults.Request) bool
}

// systemParts are the system page's parts on the DynamoDB provider.
var systemParts = []systemPart{
	{"queue depths", `id="depth-orchestrator"`, "depths-error", func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.ScanInput)
		return ok && aws.ToString(in.IndexName) == tables.IndexReady
	}},
	{"system metrics", `id="m-instances">3<`, "metrics-error", func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.QueryInput)
		if !ok {
			return false
		}
		pk, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS)
		return ok && pk.Value == tablekeys.MetricsPK
	}},
	{"chart", `id="status-chart"`, "chart-error", func(r faults.Request) bool {
		in, ok := r.Input.(*dynamodb.QueryInput)
		return ok && aws.ToString(in.IndexName) == tables.IndexInstances
	}},
}

// TestSystemPageShowsReadFailures fails the reads of each part of the
// system page in turn, then of all three, through a fault injector in the
// console's DynamoDB client: the page still answers 200, shows each failed
// part's error where its figures would be, naming what is unavailable and
// why, and shows the parts whose reads succeeded.
func TestSystemPageShowsReadFailures(t *testing.T) {
	t.Parallel()
	env := dynamotest.NewEnv(t, true)
	runtime := startRuntime(t, env.NewProvider(t, dynamotest.Config{}))
	in := faults.New(1)
	p := env.NewProvider(t, dynamotest.Config{Options: func(o *dynamo.Options) {
		o.Client = in.DynamoDB(env.Endpoints.DynamoDB(env.AWS))
	}})
	con := newConsole(t, durable.NewClient(p))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 3 {
		id := fmt.Sprintf("sys-%d", i)
		must(t, hello.Start(ctx, runtime, id, "world"))
		if _, err := runtime.WaitForCompletion(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// Each part alone, all three, and none.
	for _, failing := range [][]systemPart{{systemParts[0]}, {systemParts[1]}, {systemParts[2]}, systemParts, nil} {
		var names []string
		var removes []func()
		for _, part := range failing {
			names = append(names, part.name)
			removes = append(removes, in.Add(faults.Rule{Match: part.reads, Rate: 1, Fault: faults.ServerError("")}))
		}
		res, body := get(t, con, "/system")
		for _, remove := range removes {
			remove()
		}
		what := "failing " + cmp.Or(strings.Join(names, ", "), "nothing")
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s, want 200", what, res.Status)
			continue
		}
		for _, part := range systemParts {
			failed := slices.ContainsFunc(failing, func(f systemPart) bool { return f.name == part.name })
			shown := strings.Contains(body, part.shown)
			errShown := regexp.MustCompile(`<p class="error" role="alert" id="` + part.errID + `">[^<]+ unavailable: [^<]*injected`).MatchString(body)
			if shown == failed || errShown != failed {
				t.Errorf("%s: the %s are shown: %v; their error is shown: %v", what, part.name, shown, errShown)
			}
		}
	}
}

// TestErrText: an error with no message still reads as a failure on a
// page.
func TestErrText(t *testing.T) {
	if got := errText(errors.New("table gone")); got != "table gone" {
		t.Errorf("errText = %q", got)
	}
	if got := errText(errors.New(" ")); !strings.Contains(got, "no message") {
		t.Errorf("errText of a blank message = %q, want it to say there is none", got)
	}
}
