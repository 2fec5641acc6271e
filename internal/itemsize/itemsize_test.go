package itemsize_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/tables"
)

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// sizeCases are attribute values with their sizes worked out by hand from
// "DynamoDB item sizes and formats".
var sizeCases = []struct {
	name  string
	value types.AttributeValue
	size  int
}{
	{"S ascii", str("hello"), 5},
	{"S utf-8", str("héllo→"), 9}, // é 2 bytes, → 3 bytes
	{"N 0", num("0"), 1},
	{"N 7", num("7"), 2},
	{"N 10", num("10"), 2},
	{"N 1000", num("1000"), 2},   // trailing zeroes trimmed: one digit pair
	{"N 123", num("123"), 3},     // 1|23
	{"N 1.5", num("1.5"), 3},     // 1.|5
	{"N 12.5", num("12.50"), 3},  // 12.|5, trailing zero trimmed
	{"N 0.005", num("0.005"), 2}, // .00|5
	{"N -1", num("-1"), 3},       // negative: one more byte
	{"N 38 digits", num("12345678901234567890123456789012345678"), 20},
	{"N exponent", num("-1E-130"), 3},
	{"B", &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 3}}, 4},
	{"BOOL", &types.AttributeValueMemberBOOL{Value: true}, 1},
	{"NULL", &types.AttributeValueMemberNULL{Value: true}, 1},
	{"L empty", &types.AttributeValueMemberL{}, 3},
	{"L", &types.AttributeValueMemberL{Value: []types.AttributeValue{str("ab"), num("7")}}, 3 + (2 + 1) + (2 + 1)},
	{"M empty", &types.AttributeValueMemberM{}, 3},
	{"M", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": str("ab"), "nn": &types.AttributeValueMemberBOOL{}}}, 3 + (1 + 2 + 1) + (2 + 1 + 1)},
	{"M nested", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("x")}}}}, 3 + (1 + (3 + 1 + 1) + 1)},
	{"SS", &types.AttributeValueMemberSS{Value: []string{"a", "bcd"}}, 4},
	{"NS", &types.AttributeValueMemberNS{Value: []string{"1", "123", "-1"}}, 2 + 3 + 3},
	{"BS", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}, 3},
}

func TestItemSize(t *testing.T) {
	for _, c := range sizeCases {
		if got := itemsize.AttributeSize(c.value); got != c.size {
			t.Errorf("%s: AttributeSize = %d, want %d", c.name, got, c.size)
		}
		// An item adds the UTF-8 length of each attribute name.
		it := map[string]types.AttributeValue{"pk": str("a"), "név": c.value}
		if got, want := itemsize.ItemSize(it), 2+1+4+c.size; got != want {
			t.Errorf("%s: ItemSize = %d, want %d", c.name, got, want)
		}
	}
	if got := itemsize.ItemSize(nil); got != 0 {
		t.Errorf("ItemSize(nil) = %d, want 0", got)
	}
	if got := itemsize.AttributeSize(nil); got != 0 {
		t.Errorf("AttributeSize(nil) = %d, want 0", got)
	}
}

func TestParseNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		want itemsize.Number
		ok   bool
	}{
		{"0", itemsize.Number{}, true},
		{"-0.0", itemsize.Number{}, true},
		{"1.50", itemsize.Number{Digits: "15", Exp: -1}, true},
		{"15e-1", itemsize.Number{Digits: "15", Exp: -1}, true},
		{"1000", itemsize.Number{Digits: "1", Exp: 3}, true},
		{"-1E-130", itemsize.Number{Negative: true, Digits: "1", Exp: -130}, true},
		{" +7 ", itemsize.Number{Digits: "7"}, true},
		{"", itemsize.Number{}, false},
		{".", itemsize.Number{}, false},
		{"1e", itemsize.Number{}, false},
		{"1x", itemsize.Number{}, false},
		{"1e1234567", itemsize.Number{}, false},
	} {
		got, ok := itemsize.ParseNumber(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseNumber(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestItemSize_MatchesDynamoDBLocal checks every size case byte for byte
// against DynamoDB Local: padded to exactly 1,024 bytes by ItemSize, the
// item must cost 1 write unit, and one byte more must cost 2.
func TestItemSize_MatchesDynamoDBLocal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := localstack.ForTest(t)
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := e.DynamoDB(cfg)
	table := localstack.UniqueName(t, "itemsize")
	schema := tables.Schema{
		PartitionKey: tables.Attribute{Name: "pk", Type: types.ScalarAttributeTypeS},
		SortKey:      tables.Attribute{Name: "sk", Type: types.ScalarAttributeTypeS},
	}
	in, err := schema.CreateTableInput(table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: &table})
	})

	for i, c := range sizeCases {
		item := func(padding int) map[string]types.AttributeValue {
			it := map[string]types.AttributeValue{"pk": str("size"), "sk": str(fmt.Sprintf("%02d", i)), "v": c.value}
			if padding >= 0 {
				it["p"] = str(strings.Repeat("x", padding))
			}
			return it
		}
		padding := 1024 - itemsize.ItemSize(item(-1)) - len("p")
		for extra, want := range []float64{1, 2} {
			it := item(padding + extra)
			out, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: it,
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			// The item replaces the previous one of the same key, which is
			// never larger.
			if out.ConsumedCapacity == nil {
				t.Fatalf("%s: no consumed capacity reported", c.name)
			}
			if got := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits); got != want {
				t.Errorf("%s: item of %d bytes by ItemSize: DynamoDB Local reports %v units, want %v",
					c.name, itemsize.ItemSize(it), got, want)
			}
		}
	}
}
