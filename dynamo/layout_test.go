package dynamo_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// TestLayoutWrittenOnFirstCheck: a new table gets the first provider's
// layout; later checks with the same options pass without a request.
func TestLayoutWrittenOnFirstCheck(t *testing.T) {
	t.Parallel()
	meter := &dynamotest.Meter{}
	p, env := dynamotest.New(t, dynamotest.Config{Shards: 8, Meter: meter})
	ctx := t.Context()

	if _, found, err := dynamo.ReadLayout(ctx, env.DB, env.Table); err != nil || found {
		t.Fatalf("ReadLayout on a new table = found %v, %v; want nothing", found, err)
	}
	must(t, p.CheckLayout(ctx), "CheckLayout")
	got, found, err := dynamo.ReadLayout(ctx, env.DB, env.Table)
	if err != nil || !found {
		t.Fatalf("ReadLayout after CheckLayout = found %v, %v", found, err)
	}
	if want := (dynamo.Layout{Shards: 8, Version: dynamo.LayoutVersion}); got != want || p.Layout() != want {
		t.Fatalf("stored layout %+v, provider layout %+v; want %+v", got, p.Layout(), want)
	}

	meter.Reset()
	must(t, p.CheckLayout(ctx), "second CheckLayout")
	if n := meter.Usage().Total(); n != 0 {
		t.Fatalf("second CheckLayout made %d requests; want 0", n)
	}

	// A second provider with the same shard count, as another process.
	q := env.NewProvider(t, dynamotest.Config{Shards: 8})
	must(t, q.CheckLayout(ctx), "CheckLayout of a second provider")
}

// TestLayoutMismatchRefused: a provider whose shard count differs from the
// table's fails CheckLayout with ErrLayoutMismatch and changes nothing.
func TestLayoutMismatchRefused(t *testing.T) {
	t.Parallel()
	p, env := dynamotest.New(t, dynamotest.Config{Shards: 4})
	ctx := t.Context()
	must(t, p.CheckLayout(ctx), "CheckLayout")

	q := env.NewProvider(t, dynamotest.Config{Shards: 16})
	for range 2 { // a failure is not remembered as a success
		err := q.CheckLayout(ctx)
		if !errors.Is(err, dynamo.ErrLayoutMismatch) {
			t.Fatalf("CheckLayout with 16 shards on a 4-shard table = %v; want ErrLayoutMismatch", err)
		}
		var me *dynamo.LayoutMismatchError
		if !errors.As(err, &me) || me.Stored.Shards != 4 || me.Configured.Shards != 16 || me.Table != env.Table {
			t.Fatalf("error %v: want a LayoutMismatchError with stored 4, configured 16 and the table", err)
		}
	}
	// A client of the wrong shard count would key its messages for shards
	// the table's fetches do not watch: its first enqueue is refused.
	if err := q.EnqueueForOrchestrator(ctx, startItem("wrong-shards"), 0); !errors.Is(err, dynamo.ErrLayoutMismatch) {
		t.Fatalf("EnqueueForOrchestrator with 16 shards on a 4-shard table = %v; want ErrLayoutMismatch", err)
	}
	if rows := rowsWithPrefix(ctx, t, env, "wrong-shards", keys.QueuePrefix); len(rows) != 0 {
		t.Fatalf("the refused enqueue left %d rows: %v", len(rows), rows)
	}
	got, _, err := dynamo.ReadLayout(ctx, env.DB, env.Table)
	if err != nil || got.Shards != 4 {
		t.Fatalf("stored layout after a refused check = %+v, %v; want 4 shards", got, err)
	}
}

// TestLayoutOfAnOlderVersionRefused: a table whose layout record names
// version 1 (KV rows apart), version 2 (no counter cells for
// SystemMetrics), version 3 (messages keyed by enqueue order, no KV
// store digest) or version 4 (queued starts not counted) is refused with ErrLayoutMismatch naming both versions,
// before anything reads its rows.
func TestLayoutOfAnOlderVersionRefused(t *testing.T) {
	t.Parallel()
	for _, old := range []int{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprintf("version %d", old), func(t *testing.T) {
			t.Parallel()
			p, env := dynamotest.New(t, dynamotest.Config{Shards: 8})
			ctx := t.Context()
			_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: map[string]types.AttributeValue{
				"pk":             &types.AttributeValueMemberS{Value: keys.LayoutPK},
				"sk":             &types.AttributeValueMemberS{Value: keys.LayoutSK},
				"shards":         &types.AttributeValueMemberN{Value: "8"},
				"layout_version": &types.AttributeValueMemberN{Value: strconv.Itoa(old)},
			}})
			must(t, err, "write an older layout record")
			err = p.CheckLayout(ctx)
			var me *dynamo.LayoutMismatchError
			if !errors.Is(err, dynamo.ErrLayoutMismatch) || !errors.As(err, &me) || me.Stored.Version != old || me.Configured.Version != dynamo.LayoutVersion {
				t.Fatalf("CheckLayout on a version-%d table = %v; want a LayoutMismatchError with stored version %d and configured %d", old, err, old, dynamo.LayoutVersion)
			}
			if want := fmt.Sprintf("data layout version %d; this provider reads version %d", old, dynamo.LayoutVersion); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		})
	}
}

// TestLayoutConcurrentFirstChecks: providers opening a new table at once
// with different shard counts agree on one layout; the others are refused.
func TestLayoutConcurrentFirstChecks(t *testing.T) {
	t.Parallel()
	env := dynamotest.NewEnv(t, false)
	ctx := t.Context()
	shards := []int{2, 2, 3, 3, 5}
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, n := range shards {
		p := env.NewProvider(t, dynamotest.Config{Shards: n})
		wg.Go(func() { errs[i] = p.CheckLayout(ctx) })
	}
	wg.Wait()
	stored, found, err := dynamo.ReadLayout(ctx, env.DB, env.Table)
	if err != nil || !found {
		t.Fatalf("ReadLayout = found %v, %v", found, err)
	}
	for i, n := range shards {
		switch {
		case n == stored.Shards && errs[i] != nil:
			t.Errorf("provider with the stored %d shards: %v", n, errs[i])
		case n != stored.Shards && !errors.Is(errs[i], dynamo.ErrLayoutMismatch):
			t.Errorf("provider with %d shards on a %d-shard table: %v; want ErrLayoutMismatch", n, stored.Shards, errs[i])
		}
	}
}

// TestLayoutRecordInvisible: the layout record is not an instance; listings
// and metrics do not see it.
func TestLayoutRecordInvisible(t *testing.T) {
	t.Parallel()
	p, _ := dynamotest.New(t, dynamotest.Config{})
	ctx := t.Context()
	must(t, p.CheckLayout(ctx), "CheckLayout")
	ids, err := p.ListInstances(ctx)
	if err != nil || len(ids) != 0 {
		t.Fatalf("ListInstances = %v, %v; want none", ids, err)
	}
	m, err := p.SystemMetrics(ctx)
	if err != nil || m.TotalInstances != 0 {
		t.Fatalf("SystemMetrics = %+v, %v; want no instances", m, err)
	}
}

// TestLayoutMissingTable: CheckLayout on a table that does not exist fails
// with DynamoDB's ResourceNotFoundException, permanently.
func TestLayoutMissingTable(t *testing.T) {
	t.Parallel()
	_, env := dynamotest.New(t, dynamotest.Config{})
	env.Table += "-missing"
	p := env.NewProvider(t, dynamotest.Config{})
	err := p.CheckLayout(t.Context())
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || provider.IsRetryable(err) {
		t.Fatalf("CheckLayout on a missing table = %v; want a permanent ResourceNotFoundException", err)
	}
}

// TestLayoutMalformedRecord: a layout record that does not parse is
// refused, not overwritten.
func TestLayoutMalformedRecord(t *testing.T) {
	t.Parallel()
	p, env := dynamotest.New(t, dynamotest.Config{})
	ctx := t.Context()
	_, err := env.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(env.Table),
		Item: map[string]types.AttributeValue{
			"pk":     &types.AttributeValueMemberS{Value: "#LAYOUT"},
			"sk":     &types.AttributeValueMemberS{Value: "#LAYOUT"},
			"shards": &types.AttributeValueMemberS{Value: "four"},
		},
	})
	must(t, err, "PutItem")
	if err := p.CheckLayout(ctx); err == nil || errors.Is(err, dynamo.ErrLayoutMismatch) {
		t.Fatalf("CheckLayout on a malformed record = %v; want a decoding error", err)
	}
}

// TestItemKind names each kind of item by keys as the provider makes them.
func TestItemKind(t *testing.T) {
	t.Parallel()
	inst := keys.InstancePK("a")
	for _, c := range []struct{ pk, sk, want string }{
		{inst, keys.Lock, "lock"},
		{inst, keys.Meta, "record"},
		{inst, keys.ExecSK(1), "execution"},
		{inst, keys.MessageSK(5, "seq"), "message"},
		{inst, keys.SlotSK, "slot"},
		{inst, keys.KVSK("k"), "kv"},
		{inst, keys.KVSK(strings.Repeat("k", 2000)), "kv"},
		{inst, keys.HistorySK(1, 2), "history"},
		{inst, keys.TurnMarkSK(1), "history"},
		{inst, keys.ChildSK("c"), "child"},
		{inst, keys.ChildSK(strings.Repeat("c", 2000)), "child"},
		{inst, keys.StageSK("t", 0), "staged"},
		{keys.WorkerPK("a"), keys.WorkerSK(1, 2), "activity"},
		{keys.SessionPK("s"), keys.Session, "session"},
		{keys.MetricsPK, keys.MetricsCellSK(3), "counter"},
		{keys.LayoutPK, keys.LayoutSK, "layout"},
		{"J#job", "x", "other"},
	} {
		item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: c.pk}, "sk": &types.AttributeValueMemberS{Value: c.sk}}
		if got := dynamo.ItemKind(item); got != c.want {
			t.Errorf("ItemKind(%q, %q) = %q, want %q", c.pk, c.sk, got, c.want)
		}
	}
}
