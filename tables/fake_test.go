package tables_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// fakeAPI is an in-memory tables.API for the paths a real DynamoDB API
// cannot be made to take on demand (races, slow state changes). Tables go
// from CREATING to ACTIVE, and from DELETING to gone, after activeAfter
// DescribeTable calls.
type fakeAPI struct {
	mu          sync.Mutex
	tables      map[string]*fakeTable
	activeAfter int
	calls       []string

	// Hooks run before the operation; a non-nil error is returned instead.
	beforeDescribe func(name string) error
	beforeCreate   func(in *dynamodb.CreateTableInput) error
	beforeTTL      func(name string) error
}

type fakeTable struct {
	desc      *types.TableDescription
	ttl       types.TimeToLiveDescription
	describes int
}

var _ tables.API = (*fakeAPI)(nil)

func newFake() *fakeAPI { return &fakeAPI{tables: map[string]*fakeTable{}} }

func notFound() error { return &types.ResourceNotFoundException{Message: aws.String("not found")} }
func inUse() error    { return &types.ResourceInUseException{Message: aws.String("in use")} }
func fastWait() func(*tables.CreateOptions) {
	return func(o *tables.CreateOptions) { o.Wait = fastWaitOptions() }
}
func fastWaitOptions() tables.WaitOptions {
	return tables.WaitOptions{MaxWait: 5 * time.Second, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
}

func (f *fakeAPI) record(op string) {
	f.calls = append(f.calls, op)
}

// put stores a table described by in, as the service would after CreateTable.
func (f *fakeAPI) put(in *dynamodb.CreateTableInput, status types.TableStatus) {
	desc := &types.TableDescription{
		TableName:            in.TableName,
		AttributeDefinitions: in.AttributeDefinitions,
		KeySchema:            in.KeySchema,
		TableStatus:          status,
	}
	for _, g := range in.GlobalSecondaryIndexes {
		desc.GlobalSecondaryIndexes = append(desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection,
		})
	}
	f.tables[aws.ToString(in.TableName)] = &fakeTable{
		desc: desc,
		ttl:  types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabled},
	}
}

func (f *fakeAPI) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateTable")
	if f.beforeCreate != nil {
		if err := f.beforeCreate(in); err != nil {
			return nil, err
		}
	}
	if _, ok := f.tables[aws.ToString(in.TableName)]; ok {
		return nil, inUse()
	}
	status := types.TableStatusActive
	if f.activeAfter > 0 {
		status = types.TableStatusCreating
	}
	f.put(in, status)
	return &dynamodb.CreateTableOutput{}, nil
}

func (f *fakeAPI) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.TableName)
	f.record("DescribeTable")
	if f.beforeDescribe != nil {
		if err := f.beforeDescribe(name); err != nil {
			return nil, err
		}
	}
	tb, ok := f.tables[name]
	if !ok {
		return nil, notFound()
	}
	tb.describes++
	if tb.describes > f.activeAfter {
		switch tb.desc.TableStatus {
		case types.TableStatusCreating:
			tb.desc.TableStatus = types.TableStatusActive
		case types.TableStatusDeleting:
			delete(f.tables, name)
			return nil, notFound()
		}
	}
	d := *tb.desc
	return &dynamodb.DescribeTableOutput{Table: &d}, nil
}

func (f *fakeAPI) DeleteTable(_ context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.TableName)
	f.record("DeleteTable")
	tb, ok := f.tables[name]
	switch {
	case !ok:
		return nil, notFound()
	case tb.desc.TableStatus != types.TableStatusActive:
		return nil, inUse()
	case f.activeAfter == 0:
		delete(f.tables, name)
	default:
		tb.desc.TableStatus = types.TableStatusDeleting
		tb.describes = 0
	}
	return &dynamodb.DeleteTableOutput{}, nil
}

func (f *fakeAPI) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.TableName)
	f.record("UpdateTimeToLive")
	if f.beforeTTL != nil {
		if err := f.beforeTTL(name); err != nil {
			return nil, err
		}
	}
	tb, ok := f.tables[name]
	if !ok {
		return nil, notFound()
	}
	if tb.ttl.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
		return nil, errors.New("ValidationException: TimeToLive is already enabled")
	}
	tb.ttl = types.TimeToLiveDescription{
		AttributeName:    in.TimeToLiveSpecification.AttributeName,
		TimeToLiveStatus: types.TimeToLiveStatusEnabled,
	}
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

func (f *fakeAPI) DescribeTimeToLive(_ context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DescribeTimeToLive")
	tb, ok := f.tables[aws.ToString(in.TableName)]
	if !ok {
		return nil, notFound()
	}
	ttl := tb.ttl
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: &ttl}, nil
}

func mustInput(t *testing.T, s tables.Schema, name string) *dynamodb.CreateTableInput {
	t.Helper()
	in, err := s.CreateTableInput(name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestCreate_Fake(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFake()
	f.activeAfter = 2 // CREATING for two polls

	if err := tables.Create(ctx, f, "t", fastWait()); err != nil {
		t.Fatal(err)
	}
	s, err := tables.Describe(ctx, f, "t")
	if err != nil {
		t.Fatal(err)
	}
	if d := tables.Default().Diff(s); len(d) > 0 {
		t.Errorf("created table differs: %q", d)
	}

	err = tables.Create(ctx, f, "t", fastWait())
	var inUseErr *types.ResourceInUseException
	if !errors.As(err, &inUseErr) || !strings.HasPrefix(err.Error(), "tables: create t: ") {
		t.Errorf("second Create: %v, want a wrapped ResourceInUseException", err)
	}
}

func TestEnsure_Fake(t *testing.T) {
	t.Parallel()

	t.Run("LostCreateRace", func(t *testing.T) {
		t.Parallel()
		// Another caller creates the table between our DescribeTable and
		// our CreateTable, and has not enabled time to live yet.
		f := newFake()
		first := true
		f.beforeDescribe = func(name string) error {
			if first {
				first = false
				f.put(mustInput(t, tables.Default(), name), types.TableStatusActive)
				return notFound()
			}
			return nil
		}
		if err := tables.Ensure(t.Context(), f, "t", fastWait()); err != nil {
			t.Fatal(err)
		}
		if got := f.tables["t"].ttl.TimeToLiveStatus; got != types.TimeToLiveStatusEnabled {
			t.Errorf("TTL status %s after Ensure, want ENABLED", got)
		}
	})

	t.Run("TTLRaceIsTolerated", func(t *testing.T) {
		t.Parallel()
		// UpdateTimeToLive fails because someone else enabled it first.
		f := newFake()
		f.beforeTTL = func(name string) error {
			f.tables[name].ttl = types.TimeToLiveDescription{
				AttributeName: aws.String(tables.AttrExpiresAt), TimeToLiveStatus: types.TimeToLiveStatusEnabling,
			}
			return errors.New("ValidationException: TimeToLive is already being enabled")
		}
		if err := tables.Ensure(t.Context(), f, "t", fastWait()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("TTLFailureIsReported", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		boom := errors.New("boom")
		f.beforeTTL = func(string) error { return boom }
		err := tables.Ensure(t.Context(), f, "t", fastWait())
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "tables: ensure t: enable time to live on expires_at: boom") {
			t.Errorf("Ensure: %v", err)
		}
	})

	t.Run("WaitsForCreatingTable", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.activeAfter = 3
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusCreating)
		if err := tables.Ensure(t.Context(), f, "t", fastWait()); err != nil {
			t.Fatal(err)
		}
		if got := f.tables["t"].desc.TableStatus; got != types.TableStatusActive {
			t.Errorf("status %s", got)
		}
	})

	t.Run("DeletingTable", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusDeleting)
		f.activeAfter = 100
		err := tables.Ensure(t.Context(), f, "t", fastWait())
		if err == nil || !strings.Contains(err.Error(), "being deleted") {
			t.Errorf("Ensure: %v, want a being-deleted error", err)
		}
	})

	t.Run("MismatchIsNotRepaired", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		s := tables.Default()
		s.Indexes[0].NonKeyAttributes = s.Indexes[0].NonKeyAttributes[1:]
		f.put(mustInput(t, s, "t"), types.TableStatusActive)
		err := tables.Ensure(t.Context(), f, "t", fastWait())
		var me *tables.MismatchError
		if !errors.Is(err, tables.ErrSchemaMismatch) || !errors.As(err, &me) {
			t.Fatalf("Ensure: %v, want a MismatchError", err)
		}
		want := []string{
			`index "instances": non-key attributes missing: completed_at`,
			`ttl attribute: want "expires_at", got none`,
		}
		if me.Table != "t" || strings.Join(me.Differences, "|") != strings.Join(want, "|") {
			t.Errorf("MismatchError = %+v, want differences %q", me, want)
		}
		if got := err.Error(); got != "tables: ensure t: schema mismatch: "+strings.Join(want, "; ") {
			t.Errorf("message %q", got)
		}
		for _, c := range f.calls {
			if c == "UpdateTimeToLive" || c == "CreateTable" {
				t.Errorf("Ensure called %s on a mismatched table", c)
			}
		}
	})

	t.Run("LocalIndexIsAMismatch", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusActive)
		f.tables["t"].desc.LocalSecondaryIndexes = []types.LocalSecondaryIndexDescription{{IndexName: aws.String("lsi")}}
		err := tables.Ensure(t.Context(), f, "t", fastWait())
		if !errors.Is(err, tables.ErrSchemaMismatch) || !strings.Contains(err.Error(), `local secondary index "lsi": not in the schema`) {
			t.Errorf("Ensure: %v", err)
		}
	})

	t.Run("InvalidOptionsBeforeIO", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		err := tables.Ensure(t.Context(), f, "t", func(o *tables.CreateOptions) { o.BillingMode = types.BillingModeProvisioned })
		if err == nil || !strings.HasPrefix(err.Error(), "tables: ensure t: ") {
			t.Errorf("Ensure: %v", err)
		}
		if len(f.calls) > 0 {
			t.Errorf("calls %v before options were validated", f.calls)
		}
	})
}

func TestDelete_Fake(t *testing.T) {
	t.Parallel()
	wait := func(o *tables.DeleteOptions) { o.Wait = fastWaitOptions() }

	t.Run("CreatingTable", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.activeAfter = 2
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusCreating)
		if err := tables.Delete(t.Context(), f, "t", wait); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.tables["t"]; ok {
			t.Errorf("table still present")
		}
	})

	t.Run("DeletingTable", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.activeAfter = 2
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusDeleting)
		if err := tables.Delete(t.Context(), f, "t", wait); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.tables["t"]; ok {
			t.Errorf("table still present")
		}
	})

	t.Run("WaitTimesOut", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		f.activeAfter = 1 << 30
		f.put(mustInput(t, tables.Default(), "t"), types.TableStatusActive)
		err := tables.Delete(t.Context(), f, "t", func(o *tables.DeleteOptions) {
			o.Wait = tables.WaitOptions{MaxWait: 50 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
		})
		if err == nil || !strings.HasPrefix(err.Error(), "tables: delete t: wait for table to be deleted: ") {
			t.Errorf("Delete: %v", err)
		}
	})
}
