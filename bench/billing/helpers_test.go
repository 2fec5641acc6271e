package billing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

// fixture is a table on DynamoDB Local with a metered client, an unmetered
// one, and the meter.
type fixture struct {
	ctx    context.Context
	db     *dynamodb.Client // metered
	shadow *dynamodb.Client // unmetered
	table  string
	meter  *billing.Meter
}

// newFixture creates a table with the duradyn schema (two sparse indexes
// with INCLUDE projections), or with schema when given.
func newFixture(t *testing.T, schema ...tables.Schema) *fixture {
	t.Helper()
	ctx := t.Context()
	ep := localstack.ForTest(t)
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shadow := ep.DynamoDB(cfg)
	s := tables.Default()
	if len(schema) > 0 {
		s = schema[0]
	}
	table := localstack.UniqueName(t, "billing")
	in, err := s.CreateTableInput(table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shadow.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = shadow.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: &table})
	})
	meter, err := billing.NewMeter(ctx, shadow, table)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ctx: ctx, db: ep.DynamoDB(cfg, meter.DynamoDB), shadow: shadow, table: table, meter: meter}
}

// plainSchema is a table with a string partition and sort key and no index.
func plainSchema() tables.Schema {
	return tables.Schema{
		PartitionKey: tables.Attribute{Name: "pk", Type: types.ScalarAttributeTypeS},
		SortKey:      tables.Attribute{Name: "sk", Type: types.ScalarAttributeTypeS},
	}
}

// measure runs f and returns the usage the meter counted while it ran.
func (f *fixture) measure(t *testing.T, fn func()) billing.Usage {
	t.Helper()
	before := f.meter.Usage()
	fn()
	if err := f.meter.Err(); err != nil {
		t.Fatalf("meter: %v", err)
	}
	return f.meter.Usage().Sub(before)
}

// put writes item unmetered.
func (f *fixture) put(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := f.shadow.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func pad(n int) types.AttributeValue { return str(strings.Repeat("x", n)) }

// item builds an item from name/value pairs.
func item(kv ...any) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			m[kv[i].(string)] = str(v)
		case types.AttributeValue:
			m[kv[i].(string)] = v
		}
	}
	return m
}

func key(pk, sk string) map[string]types.AttributeValue { return item("pk", pk, "sk", sk) }

// reported is the total a ConsumedCapacity reports.
func reported(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return -1
	}
	return aws.ToFloat64(c.CapacityUnits)
}

func sumReported(cs []types.ConsumedCapacity) float64 {
	total := 0.0
	for i := range cs {
		total += aws.ToFloat64(cs[i].CapacityUnits)
	}
	return total
}

// wru and rru compute the documented units of a standard write or a strongly
// consistent read of size bytes.
func wru(size int) float64 { return float64(max(1, (size+1023)/1024)) }
func rru(size int) float64 { return float64(max(1, (size+4095)/4096)) }

// readyEntry is the entry of the duradyn table's ready index for it: the
// table keys, the index keys and the projected attributes it has.
func readyEntry(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	e := map[string]types.AttributeValue{}
	for _, name := range []string{"pk", "sk", tables.AttrReadyPK, tables.AttrReadySK,
		tables.AttrAttempts, tables.AttrItem, tables.AttrLockUntil, tables.AttrSession, tables.AttrTag, tables.AttrVis} {
		if v, ok := it[name]; ok {
			e[name] = v
		}
	}
	return e
}

func checkUnits(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
