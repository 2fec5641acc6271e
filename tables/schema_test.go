package tables_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden.json from tables.Default()")

// The SDK client is what callers pass as a tables.API.
var _ tables.API = (*dynamodb.Client)(nil)

const goldenPath = "testdata/schema.golden.json"

func TestDefault_Golden(t *testing.T) {
	got, err := json.MarshalIndent(tables.Default(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", goldenPath)
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run go test ./tables/ -run TestDefault_Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tables.Default() differs from %s; if the change is intended, rerun with -update and update the Terraform module to match.\ngot:\n%s\nwant:\n%s", goldenPath, got, want)
	}

	// The golden file decodes back to the same schema.
	var decoded tables.Schema
	if err := json.Unmarshal(want, &decoded); err != nil {
		t.Fatal(err)
	}
	if d := tables.Default().Diff(decoded); len(d) > 0 {
		t.Errorf("golden file decodes to a different schema: %q", d)
	}
}

func TestDefault_Shape(t *testing.T) {
	s := tables.Default()
	if s.PartitionKey != (tables.Attribute{Name: tables.AttrPK, Type: types.ScalarAttributeTypeS}) ||
		s.SortKey != (tables.Attribute{Name: tables.AttrSK, Type: types.ScalarAttributeTypeS}) {
		t.Errorf("table keys = %v, %v", s.PartitionKey, s.SortKey)
	}
	if s.TTLAttribute != tables.AttrExpiresAt {
		t.Errorf("TTLAttribute = %q", s.TTLAttribute)
	}
	if !slices.IsSortedFunc(s.Indexes, func(a, b tables.Index) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("indexes not sorted by name")
	}
	for _, ix := range s.Indexes {
		if !slices.IsSorted(ix.NonKeyAttributes) {
			t.Errorf("index %s: non-key attributes not sorted: %v", ix.Name, ix.NonKeyAttributes)
		}
	}

	// Each call returns a fresh value.
	s.Indexes[0].NonKeyAttributes[0] = "changed"
	s.Indexes[0].Name = "changed"
	if d := tables.Default().Diff(tables.Default()); len(d) > 0 {
		t.Errorf("Default() shares state between calls: %q", d)
	}
	if tables.Default().Indexes[0].Name == "changed" || tables.Default().Indexes[0].NonKeyAttributes[0] == "changed" {
		t.Errorf("Default() shares state between calls")
	}
}

func TestSchema_Diff(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*tables.Schema)
		want   []string
	}{
		{name: "equal", modify: func(*tables.Schema) {}},
		{
			name: "index order and non-key order do not matter",
			modify: func(s *tables.Schema) {
				slices.Reverse(s.Indexes)
				for i := range s.Indexes {
					slices.Reverse(s.Indexes[i].NonKeyAttributes)
				}
			},
		},
		{
			name:   "table keys",
			modify: func(s *tables.Schema) { s.PartitionKey.Name = "id"; s.SortKey = tables.Attribute{} },
			want:   []string{"partition key: want pk (S), got id (S)", "sort key: want sk (S), got none"},
		},
		{
			name:   "key type",
			modify: func(s *tables.Schema) { s.SortKey.Type = types.ScalarAttributeTypeN },
			want:   []string{"sort key: want sk (S), got sk (N)"},
		},
		{
			name:   "missing and extra index",
			modify: func(s *tables.Schema) { s.Indexes[1].Name = "other" },
			want:   []string{`index "other": not in the schema`, `index "ready": missing`},
		},
		{
			name: "index details",
			modify: func(s *tables.Schema) {
				ix := &s.Indexes[1]
				ix.PartitionKey.Name = "x"
				ix.SortKey = tables.Attribute{}
				ix.NonKeyAttributes = []string{tables.AttrVis, "extra"}
			},
			want: []string{
				`index "ready": partition key: want rq_pk (S), got x (S)`,
				`index "ready": sort key: want rq_sk (S), got none`,
				`index "ready": non-key attributes missing: att, lock_until, session, tag`,
				`index "ready": non-key attributes not in the schema: extra`,
			},
		},
		{
			name: "projection",
			modify: func(s *tables.Schema) {
				s.Indexes[0].Projection = types.ProjectionTypeAll
				s.Indexes[0].NonKeyAttributes = nil
			},
			want: []string{
				`index "instances": projection: want INCLUDE, got ALL`,
				`index "instances": non-key attributes missing: completed_at, parent, status`,
			},
		},
		{
			name:   "ttl",
			modify: func(s *tables.Schema) { s.TTLAttribute = "" },
			want:   []string{`ttl attribute: want "expires_at", got none`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			other := tables.Default()
			tt.modify(&other)
			got := tables.Default().Diff(other)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSchema_CreateTableInput(t *testing.T) {
	tests := []struct {
		name         string
		opts         func(*tables.CreateOptions)
		provisioned  bool
		wantCapacity map[string]tables.Capacity // "" is the table
	}{
		{name: "on demand", opts: func(*tables.CreateOptions) {}},
		{
			name: "provisioned",
			opts: func(o *tables.CreateOptions) {
				o.BillingMode = types.BillingModeProvisioned
				o.Capacity = tables.Capacity{Read: 5, Write: 6}
				o.IndexCapacity = map[string]tables.Capacity{tables.IndexReady: {Read: 7, Write: 8}}
			},
			provisioned: true,
			wantCapacity: map[string]tables.Capacity{
				"":                    {Read: 5, Write: 6},
				tables.IndexReady:     {Read: 7, Write: 8},
				tables.IndexInstances: {Read: 5, Write: 6},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := tables.Default().CreateTableInput("t1", tt.opts, func(o *tables.CreateOptions) {
				o.Tags = map[string]string{"b": "2", "a": "1"}
			})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(in.TableName) != "t1" {
				t.Errorf("TableName = %q", aws.ToString(in.TableName))
			}
			if aws.ToBool(in.DeletionProtectionEnabled) {
				t.Errorf("deletion protection on by default")
			}
			wantMode := types.BillingModePayPerRequest
			if tt.provisioned {
				wantMode = types.BillingModeProvisioned
			}
			if in.BillingMode != wantMode {
				t.Errorf("BillingMode = %q, want %q", in.BillingMode, wantMode)
			}
			checkCapacity(t, "table", in.ProvisionedThroughput, tt.provisioned, tt.wantCapacity[""])
			for _, g := range in.GlobalSecondaryIndexes {
				checkCapacity(t, aws.ToString(g.IndexName), g.ProvisionedThroughput, tt.provisioned, tt.wantCapacity[aws.ToString(g.IndexName)])
			}
			if len(in.Tags) != 2 || aws.ToString(in.Tags[0].Key) != "a" || aws.ToString(in.Tags[1].Value) != "2" {
				t.Errorf("Tags = %+v, want a=1, b=2 in key order", in.Tags)
			}

			// Every key attribute is declared exactly once, as a string, and
			// nothing else is declared (DynamoDB rejects unused definitions).
			keyAttrs := map[string]bool{}
			for _, k := range in.KeySchema {
				keyAttrs[aws.ToString(k.AttributeName)] = true
			}
			for _, g := range in.GlobalSecondaryIndexes {
				for _, k := range g.KeySchema {
					keyAttrs[aws.ToString(k.AttributeName)] = true
				}
			}
			declared := map[string]int{}
			for _, d := range in.AttributeDefinitions {
				name := aws.ToString(d.AttributeName)
				declared[name]++
				if d.AttributeType != types.ScalarAttributeTypeS {
					t.Errorf("attribute %s has type %s, want S", name, d.AttributeType)
				}
				if !keyAttrs[name] {
					t.Errorf("attribute %s declared but not a key", name)
				}
			}
			for name := range keyAttrs {
				if declared[name] != 1 {
					t.Errorf("key attribute %s declared %d times, want 1", name, declared[name])
				}
			}
			wantKeys := []string{
				tables.AttrPK, tables.AttrSK, tables.AttrReadyPK, tables.AttrReadySK,
				tables.AttrInstancesPK, tables.AttrInstancesSK,
			}
			if len(keyAttrs) != len(wantKeys) {
				t.Errorf("key attributes %v, want %v", keyAttrs, wantKeys)
			}

			// The request describes the default schema.
			if d := tables.Default().Diff(describe(in)); len(d) > 0 {
				t.Errorf("request differs from Default(): %q", d)
			}
		})
	}
}

func checkCapacity(t *testing.T, what string, got *types.ProvisionedThroughput, provisioned bool, want tables.Capacity) {
	t.Helper()
	if !provisioned {
		if got != nil {
			t.Errorf("%s: throughput %+v on an on-demand table", what, got)
		}
		return
	}
	if got == nil {
		t.Errorf("%s: no throughput on a provisioned table", what)
		return
	}
	if c := (tables.Capacity{Read: aws.ToInt64(got.ReadCapacityUnits), Write: aws.ToInt64(got.WriteCapacityUnits)}); c != want {
		t.Errorf("%s: capacity %+v, want %+v", what, c, want)
	}
}

// describe returns the description DynamoDB would give of a table created by
// in, with time to live enabled on the default attribute.
func describe(in *dynamodb.CreateTableInput) tables.Schema {
	desc := &types.TableDescription{
		TableName:            in.TableName,
		AttributeDefinitions: in.AttributeDefinitions,
		KeySchema:            in.KeySchema,
		TableStatus:          types.TableStatusActive,
	}
	for _, g := range in.GlobalSecondaryIndexes {
		desc.GlobalSecondaryIndexes = append(desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName:  g.IndexName,
			KeySchema:  g.KeySchema,
			Projection: g.Projection,
		})
	}
	ttl := &types.TimeToLiveDescription{
		AttributeName:    aws.String(tables.AttrExpiresAt),
		TimeToLiveStatus: types.TimeToLiveStatusEnabled,
	}
	return tables.FromDescription(desc, ttl)
}

func TestSchema_CreateTableInputInvalid(t *testing.T) {
	tests := []struct {
		name    string
		table   string
		schema  func(*tables.Schema)
		opts    func(*tables.CreateOptions)
		wantErr string
	}{
		{name: "empty name", table: "", wantErr: "empty table name"},
		{
			name:    "unknown billing mode",
			opts:    func(o *tables.CreateOptions) { o.BillingMode = "FREE" },
			wantErr: `billing mode "FREE"`,
		},
		{
			name:    "provisioned without capacity",
			opts:    func(o *tables.CreateOptions) { o.BillingMode = types.BillingModeProvisioned },
			wantErr: "needs positive table capacity",
		},
		{
			name: "capacity for unknown index",
			opts: func(o *tables.CreateOptions) {
				o.BillingMode = types.BillingModeProvisioned
				o.Capacity = tables.Capacity{Read: 1, Write: 1}
				o.IndexCapacity = map[string]tables.Capacity{"nope": {Read: 1, Write: 1}}
			},
			wantErr: `capacity for unknown index "nope"`,
		},
		{
			name:    "capacity on demand",
			opts:    func(o *tables.CreateOptions) { o.Capacity = tables.Capacity{Read: 1, Write: 1} },
			wantErr: "capacity set with billing mode PAY_PER_REQUEST",
		},
		{
			name:    "min delay above max delay",
			opts:    func(o *tables.CreateOptions) { o.Wait.MinDelay = 30 * time.Second; o.Wait.MaxDelay = 15 * time.Second },
			wantErr: "min delay",
		},
		{
			name: "conflicting attribute types",
			schema: func(s *tables.Schema) {
				s.Indexes[0].PartitionKey = tables.Attribute{Name: tables.AttrPK, Type: types.ScalarAttributeTypeN}
			},
			wantErr: "attribute pk declared as S and N",
		},
		{
			name:    "duplicate index",
			schema:  func(s *tables.Schema) { s.Indexes[1].Name = s.Indexes[0].Name },
			wantErr: "declared twice",
		},
		{
			name:    "non-key attributes without INCLUDE",
			schema:  func(s *tables.Schema) { s.Indexes[0].Projection = types.ProjectionTypeAll },
			wantErr: "non-key attributes need projection INCLUDE",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tables.Default()
			if tt.schema != nil {
				tt.schema(&s)
			}
			table := tt.table
			if table == "" && tt.name != "empty name" {
				table = "t1"
			}
			var optFns []func(*tables.CreateOptions)
			if tt.opts != nil {
				optFns = append(optFns, tt.opts)
			}
			in, err := s.CreateTableInput(table, optFns...)
			if err == nil {
				t.Fatalf("no error; input %+v", in)
			}
			if !strings.HasPrefix(err.Error(), "tables: create table input ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want prefix %q containing %q", err, "tables: create table input ", tt.wantErr)
			}
		})
	}
}

func TestFromDescription_Nil(t *testing.T) {
	if s := tables.FromDescription(nil, nil); s.PartitionKey.Name != "" || s.Indexes != nil || s.TTLAttribute != "" {
		t.Errorf("FromDescription(nil, nil) = %+v, want zero", s)
	}
	for status, want := range map[types.TimeToLiveStatus]string{
		types.TimeToLiveStatusEnabled:   tables.AttrExpiresAt,
		types.TimeToLiveStatusEnabling:  tables.AttrExpiresAt,
		types.TimeToLiveStatusDisabled:  "",
		types.TimeToLiveStatusDisabling: "",
	} {
		ttl := &types.TimeToLiveDescription{AttributeName: aws.String(tables.AttrExpiresAt), TimeToLiveStatus: status}
		if got := tables.FromDescription(nil, ttl).TTLAttribute; got != want {
			t.Errorf("TTL status %s: TTLAttribute = %q, want %q", status, got, want)
		}
	}
}
