package queues_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/queues"
)

// TestCreate: Create makes the two wake-up queues with the module's names
// and attributes, and a second call returns the same URLs.
func TestCreate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := sqsClient(t)
	prefix := localstack.UniqueName(t, "cq")
	urls, err := queues.Create(ctx, c, prefix)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, u := range []string{urls.Orchestrator, urls.Worker} {
			c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	if !strings.HasSuffix(urls.Orchestrator, prefix+"-orchestrator") || !strings.HasSuffix(urls.Worker, prefix+"-worker") {
		t.Fatalf("URLs %+v; want queues named %s-orchestrator and %s-worker", urls, prefix, prefix)
	}
	for _, u := range []string{urls.Orchestrator, urls.Worker} {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("GetQueueAttributes %s: %v", u, err)
		}
		for name, want := range map[sqstypes.QueueAttributeName]string{
			sqstypes.QueueAttributeNameMessageRetentionPeriod:        "300",
			sqstypes.QueueAttributeNameVisibilityTimeout:             "5",
			sqstypes.QueueAttributeNameReceiveMessageWaitTimeSeconds: "0",
		} {
			if got := out.Attributes[string(name)]; got != want {
				t.Errorf("%s of %s = %q; want %q", name, u, got, want)
			}
		}
	}
	again, err := queues.Create(ctx, c, prefix)
	if err != nil || again != urls {
		t.Errorf("second Create = %+v, %v; want %+v", again, err, urls)
	}
}
