package dynamo_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/provider"
)

// TestMetaWrittenOnlyWhenItChanges: a turn that changes nothing the
// instance record holds (name, version, current execution and its status,
// custom status) leaves #META as it was, which holds up to 256 KB of
// custom status and was rewritten by every turn; the instance's UpdatedAt
// still moves to the ack's time (recorded on the lock row). A turn that
// sets a custom status writes it.
func TestMetaWrittenOnlyWhenItChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := faults.NewFakeClock(time.Now())
	p, env := dynamotest.New(t, dynamotest.Config{Options: func(o *dynamo.Options) { o.Now = clock.Now }})
	const inst = "meta-once"
	metaRow := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := env.DB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(env.Table),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: keys.InstancePK(inst)}, "sk": &types.AttributeValueMemberS{Value: keys.Meta}},
			ConsistentRead: aws.Bool(true),
		})
		must(t, err, "read #META")
		return out.Item
	}
	first := startAndFetch(ctx, t, p, inst)
	must(t, p.AckOrchestrationItem(ctx, first.LockToken, provider.TurnCommit{ExecutionID: 1, HistoryDelta: []provider.Event{started(inst)}, Metadata: meta()}), "first turn")
	before := metaRow()

	clock.Advance(time.Second)
	second := raiseAndFetch(ctx, t, p, inst, "a")
	ackEvent(ctx, t, p, second, "a")
	if after := metaRow(); after["updated_at"].(*types.AttributeValueMemberN).Value != before["updated_at"].(*types.AttributeValueMemberN).Value {
		t.Fatalf("a turn that changed nothing the record holds rewrote #META: updated_at %v, was %v", after["updated_at"], before["updated_at"])
	}
	info, err := p.InstanceInfo(ctx, inst)
	must(t, err, "InstanceInfo")
	if want := uint64(clock.Now().UnixMilli()); info.UpdatedAt != want {
		t.Fatalf("UpdatedAt %d after the second turn, want its ack's time %d", info.UpdatedAt, want)
	}

	clock.Advance(time.Second)
	third := raiseAndFetch(ctx, t, p, inst, "b")
	status := "half way"
	must(t, p.AckOrchestrationItem(ctx, third.LockToken, provider.TurnCommit{
		ExecutionID: 1,
		HistoryDelta: []provider.Event{
			ev(uint64(len(third.History)+1), inst, provider.ExternalEvent{Name: "b", Data: "{}"}),
			ev(uint64(len(third.History)+2), inst, provider.CustomStatusUpdated{Status: &status}),
		},
		Metadata: meta(),
	}), "third turn")
	cs, err := p.CustomStatus(ctx, inst, 0)
	must(t, err, "CustomStatus")
	if cs == nil || cs.Status == nil || *cs.Status != status {
		t.Fatalf("custom status after the turn that set it: %+v", cs)
	}
}
