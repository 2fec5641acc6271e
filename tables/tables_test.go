package tables_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

// newTable returns a DynamoDB client for the test emulator and a table name
// no other test uses. Under -short it skips the test. The table, if the test creates it, is deleted when the test
// ends.
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a DynamoDB emulator; skipped with -short")
	}
	client := newClient(t)
	name := localstack.UniqueName(t, "tables")
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tables.Delete(ctx, client, name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return client, name
}

// describeLive reads the table back through FromDescription.
func describeLive(t *testing.T, client *dynamodb.Client, name string) (*types.TableDescription, *types.TimeToLiveDescription) {
	t.Helper()
	out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Table, ttl.TimeToLiveDescription
}

func TestCreate(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	if err := tables.Create(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	desc, ttl := describeLive(t, client, name)
	if desc.TableStatus != types.TableStatusActive {
		t.Errorf("status %s, want ACTIVE", desc.TableStatus)
	}
	if got := desc.BillingModeSummary; got != nil && got.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %s, want PAY_PER_REQUEST", got.BillingMode)
	}
	if ttl == nil || ttl.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.AttributeName) != tables.AttrExpiresAt {
		t.Errorf("time to live %+v, want ENABLED on %s", ttl, tables.AttrExpiresAt)
	}
	if d := tables.Default().Diff(tables.FromDescription(desc, ttl)); len(d) > 0 {
		t.Errorf("live table differs from Default(): %q", d)
	}

	s, err := tables.Describe(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if d := tables.Default().Diff(s); len(d) > 0 {
		t.Errorf("Describe differs from Default(): %q", d)
	}

	// Creating it again fails with the service's error in the chain.
	err = tables.Create(t.Context(), client, name)
	var inUse *types.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Errorf("second Create: %v, want a ResourceInUseException", err)
	}
}

func TestCreate_Provisioned(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	err := tables.Create(t.Context(), client, name, func(o *tables.CreateOptions) {
		o.BillingMode = types.BillingModeProvisioned
		o.Capacity = tables.Capacity{Read: 3, Write: 4}
		o.IndexCapacity = map[string]tables.Capacity{tables.IndexReady: {Read: 5, Write: 6}}
		o.Tags = map[string]string{"app": "duradyn"}
	})
	if err != nil {
		t.Fatal(err)
	}
	desc, ttl := describeLive(t, client, name)
	if d := tables.Default().Diff(tables.FromDescription(desc, ttl)); len(d) > 0 {
		t.Errorf("live table differs from Default(): %q", d)
	}
	capacity := func(p *types.ProvisionedThroughputDescription) tables.Capacity {
		if p == nil {
			return tables.Capacity{}
		}
		return tables.Capacity{Read: aws.ToInt64(p.ReadCapacityUnits), Write: aws.ToInt64(p.WriteCapacityUnits)}
	}
	if got := capacity(desc.ProvisionedThroughput); got != (tables.Capacity{Read: 3, Write: 4}) {
		t.Errorf("table capacity %+v", got)
	}
	for _, g := range desc.GlobalSecondaryIndexes {
		want := tables.Capacity{Read: 3, Write: 4}
		if aws.ToString(g.IndexName) == tables.IndexReady {
			want = tables.Capacity{Read: 5, Write: 6}
		}
		if got := capacity(g.ProvisionedThroughput); got != want {
			t.Errorf("index %s capacity %+v, want %+v", aws.ToString(g.IndexName), got, want)
		}
	}
}

func TestCreate_DeletionProtection(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	err := tables.Create(t.Context(), client, name, func(o *tables.CreateOptions) { o.DeletionProtection = true })
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := describeLive(t, client, name)
	if !aws.ToBool(desc.DeletionProtectionEnabled) {
		t.Fatalf("deletion protection not enabled")
	}
	if err := tables.Delete(t.Context(), client, name); err == nil {
		t.Errorf("Delete removed a table with deletion protection")
	}
	// Let the cleanup delete it.
	_, err = client.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{
		TableName:                 aws.String(name),
		DeletionProtectionEnabled: aws.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEnsure_CreatesMissingTable(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	if err := tables.Ensure(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	s, err := tables.Describe(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if d := tables.Default().Diff(s); len(d) > 0 {
		t.Errorf("live table differs from Default(): %q", d)
	}
}

func TestEnsure_ExistingTableIsNoop(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	if err := tables.Create(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	before, _ := describeLive(t, client, name)
	// Options that differ from the existing table's are not applied to it.
	err := tables.Ensure(t.Context(), client, name, func(o *tables.CreateOptions) {
		o.BillingMode = types.BillingModeProvisioned
		o.Capacity = tables.Capacity{Read: 1, Write: 1}
	})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := describeLive(t, client, name)
	if !aws.ToTime(before.CreationDateTime).Equal(aws.ToTime(after.CreationDateTime)) {
		t.Errorf("table recreated: created %v, then %v", before.CreationDateTime, after.CreationDateTime)
	}
	if after.ProvisionedThroughput != nil && aws.ToInt64(after.ProvisionedThroughput.ReadCapacityUnits) == 1 {
		t.Errorf("Ensure changed the billing of an existing table")
	}
}

func TestEnsure_DifferentIndexFails(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	// The same table, but index "ready" has no sort key.
	s := tables.Default()
	for i := range s.Indexes {
		if s.Indexes[i].Name == tables.IndexReady {
			s.Indexes[i].SortKey = tables.Attribute{}
		}
	}
	createRaw(t, client, s, name, true)

	err := tables.Ensure(t.Context(), client, name)
	if !errors.Is(err, tables.ErrSchemaMismatch) {
		t.Fatalf("Ensure: %v, want ErrSchemaMismatch", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "tables: ensure "+name+": ") || !strings.Contains(msg, `index "ready"`) {
		t.Errorf("error %q does not name the table and index %q", msg, tables.IndexReady)
	}
	var me *tables.MismatchError
	if !errors.As(err, &me) || len(me.Differences) != 1 || me.Differences[0] != `index "ready": sort key: want rq_sk (S), got none` {
		t.Errorf("differences %+v", me)
	}
}

// TestEnsure_AcceptsLegacyReadyProjection: a table made by an earlier
// version, whose ready index also projects the activity JSON (item), is
// accepted as it is; any other extra projected attribute is a mismatch.
func TestEnsure_AcceptsLegacyReadyProjection(t *testing.T) {
	t.Parallel()
	withExtra := func(extra string) tables.Schema {
		s := tables.Default()
		for i := range s.Indexes {
			if s.Indexes[i].Name == tables.IndexReady {
				s.Indexes[i].NonKeyAttributes = append(slices.Clone(s.Indexes[i].NonKeyAttributes), extra)
			}
		}
		return s
	}
	client, name := newTable(t)
	createRaw(t, client, withExtra(tables.AttrItem), name, true)
	if err := tables.Ensure(t.Context(), client, name); err != nil {
		t.Fatalf("Ensure of a table whose ready index projects %q: %v", tables.AttrItem, err)
	}
	other, otherName := newTable(t)
	createRaw(t, other, withExtra("payload"), otherName, true)
	var me *tables.MismatchError
	if err := tables.Ensure(t.Context(), other, otherName); !errors.As(err, &me) || len(me.Differences) != 1 ||
		me.Differences[0] != `index "ready": non-key attributes not in the schema: payload` {
		t.Fatalf("Ensure of a table whose ready index projects another attribute: %v, want one difference", err)
	}
}

func TestEnsure_EnablesMissingTTL(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	// A table of the right shape whose creation stopped before time to live
	// was enabled.
	createRaw(t, client, tables.Default(), name, false)

	if err := tables.Ensure(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	s, err := tables.Describe(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if s.TTLAttribute != tables.AttrExpiresAt {
		t.Errorf("TTL attribute %q after Ensure, want %q", s.TTLAttribute, tables.AttrExpiresAt)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	if err := tables.Create(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	if err := tables.Delete(t.Context(), client, name); err != nil {
		t.Fatal(err)
	}
	_, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("DescribeTable after Delete: %v, want ResourceNotFoundException", err)
	}

	// Deleting again is not an error.
	if err := tables.Delete(t.Context(), client, name); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func TestDelete_MissingTable(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	if err := tables.Delete(t.Context(), client, name); err != nil {
		t.Errorf("Delete of a missing table: %v", err)
	}
}

// createRaw creates a table of schema s, bypassing Create, and waits until it
// is ACTIVE. It enables time to live on s.TTLAttribute only if ttl is set.
func createRaw(t *testing.T, client *dynamodb.Client, s tables.Schema, name string, ttl bool) {
	t.Helper()
	in, err := s.CreateTableInput(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateTable(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !ttl {
		return
	}
	_, err = client.UpdateTimeToLive(t.Context(), &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(s.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEnsure_Concurrent(t *testing.T) {
	t.Parallel()
	client, name := newTable(t)

	// Several processes starting at once all Ensure the same table.
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- tables.Ensure(t.Context(), client, name) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	s, err := tables.Describe(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if d := tables.Default().Diff(s); len(d) > 0 {
		t.Errorf("live table differs from Default(): %q", d)
	}
}
