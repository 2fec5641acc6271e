package parity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/parity"
	"github.com/duradyn/duradyn/tables"
)

// described returns the schema DynamoDB would describe for a table created
// from s: the CreateTable request turned into a table description, read back
// with tables.FromDescription, as the live check reads a real table. edit,
// when not nil, changes the description first.
func described(t *testing.T, s tables.Schema, edit func(*types.TableDescription, *types.TimeToLiveDescription)) tables.Schema {
	t.Helper()
	in, err := s.CreateTableInput("t")
	if err != nil {
		t.Fatal(err)
	}
	desc := &types.TableDescription{
		TableName:            in.TableName,
		TableStatus:          types.TableStatusActive,
		KeySchema:            in.KeySchema,
		AttributeDefinitions: in.AttributeDefinitions,
	}
	for _, g := range in.GlobalSecondaryIndexes {
		desc.GlobalSecondaryIndexes = append(desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName:   g.IndexName,
			KeySchema:   g.KeySchema,
			Projection:  g.Projection,
			IndexStatus: types.IndexStatusActive,
		})
	}
	ttl := &types.TimeToLiveDescription{AttributeName: aws.String(s.TTLAttribute), TimeToLiveStatus: types.TimeToLiveStatusEnabled}
	if edit != nil {
		edit(desc, ttl)
	}
	return tables.FromDescription(desc, ttl)
}

func TestTableParity_Same(t *testing.T) {
	s := tables.Default()
	if err := parity.TableParity(described(t, s, nil), described(t, s, nil)); err != nil {
		t.Fatalf("identical tables: %v", err)
	}
}

func TestTableParity_Differences(t *testing.T) {
	renameReady := func(d *types.TableDescription, _ *types.TimeToLiveDescription) {
		for i, g := range d.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == tables.IndexReady {
				d.GlobalSecondaryIndexes[i].IndexName = aws.String("ready_v2")
			}
		}
	}
	for _, tc := range []struct {
		name               string
		terraform, refEdit func(*types.TableDescription, *types.TimeToLiveDescription)
		want               []string
	}{
		{
			name:      "index renamed in Terraform",
			terraform: renameReady,
			want:      []string{`Terraform table vs reference table: index "ready": missing`, `Terraform table vs reference table: index "ready_v2": not in the schema`},
		},
		{
			name:    "index renamed in the reference",
			refEdit: renameReady,
			want: []string{
				`reference table (tables.Create) vs tables.Default: index "ready": missing`,
				`Terraform table vs reference table: index "ready": not in the schema`,
			},
		},
		{
			name: "projection attribute dropped in Terraform",
			terraform: func(d *types.TableDescription, _ *types.TimeToLiveDescription) {
				for i, g := range d.GlobalSecondaryIndexes {
					if aws.ToString(g.IndexName) == tables.IndexInstances {
						p := *g.Projection
						p.NonKeyAttributes = p.NonKeyAttributes[1:]
						d.GlobalSecondaryIndexes[i].Projection = &p
					}
				}
			},
			want: []string{`Terraform table vs reference table: index "instances": non-key attributes missing: ` + tables.Default().Indexes[0].NonKeyAttributes[0]},
		},
		{
			name: "projection type changed in Terraform",
			terraform: func(d *types.TableDescription, _ *types.TimeToLiveDescription) {
				d.GlobalSecondaryIndexes[0].Projection = &types.Projection{ProjectionType: types.ProjectionTypeAll}
			},
			want: []string{`projection: want INCLUDE, got ALL`},
		},
		{
			name: "time to live off in Terraform",
			terraform: func(_ *types.TableDescription, ttl *types.TimeToLiveDescription) {
				ttl.TimeToLiveStatus = types.TimeToLiveStatusDisabled
			},
			want: []string{`Terraform table vs reference table: ttl attribute: want "expires_at", got none`},
		},
		{
			name: "sort key dropped in Terraform",
			terraform: func(d *types.TableDescription, _ *types.TimeToLiveDescription) {
				d.KeySchema = d.KeySchema[:1]
			},
			want: []string{`Terraform table vs reference table: sort key: want sk (S), got none`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parity.TableParity(described(t, tables.Default(), tc.terraform), described(t, tables.Default(), tc.refEdit))
			if !errors.Is(err, parity.ErrTableMismatch) {
				t.Fatalf("TableParity = %v, want an error wrapping ErrTableMismatch", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
