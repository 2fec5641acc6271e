package billing

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestEqualValues_Numbers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1.50", "1.5", true},
		{"15e-1", "1.5", true},
		{"0", "-0.0", true},
		{"100", "1E2", true},
		{"1", "-1", false},
		{"10", "1", false},
	} {
		got := equalValues(&types.AttributeValueMemberN{Value: c.a}, &types.AttributeValueMemberN{Value: c.b})
		if got != c.want {
			t.Errorf("equalValues(N %s, N %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	a := &types.AttributeValueMemberNS{Value: []string{"1", "2.0"}}
	b := &types.AttributeValueMemberNS{Value: []string{"2", "1"}}
	if !equalValues(a, b) {
		t.Error("number sets in another order and spelling are not equal")
	}
}

func TestIndexWriteUnits(t *testing.T) {
	s := &tableSchema{partitionKey: "pk", sortKey: "sk", indexes: []secondaryIndex{
		newSecondaryIndex("ix", "ipk", "isk", types.ProjectionTypeInclude, []string{"proj"}),
	}}
	S := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	big := string(make([]byte, 1500))
	base := map[string]types.AttributeValue{"pk": S("p"), "sk": S("s"), "ipk": S("a"), "isk": S("b"), "proj": S("x"), "other": S("y")}
	with := func(changes map[string]types.AttributeValue, remove ...string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range changes {
			m[k] = v
		}
		for _, k := range remove {
			delete(m, k)
		}
		return m
	}
	noIndex := with(nil, "ipk")
	for _, c := range []struct {
		name          string
		before, after map[string]types.AttributeValue
		want          float64
	}{
		{"not in the index before or after", nil, noIndex, 0},
		{"new item with the index keys", nil, base, 1},
		{"delete of an indexed item", base, nil, 1},
		{"update that adds an index key", noIndex, base, 1},
		{"update that removes an index key", base, noIndex, 1},
		{"update of an index key: delete and put", base, with(map[string]types.AttributeValue{"isk": S("c")}), 2},
		{"update of a projected attribute", base, with(map[string]types.AttributeValue{"proj": S("z")}), 1},
		{"update of a projected attribute to 1.5 KB", base, with(map[string]types.AttributeValue{"proj": S(big)}), 2},
		{"update of an attribute outside the projection", base, with(map[string]types.AttributeValue{"other": S(big)}), 0},
		{"overwrite with an equal item", base, with(nil), 0},
	} {
		if got := s.indexWriteUnits(c.before, c.after); got != c.want {
			t.Errorf("%s: %v index write units, want %v", c.name, got, c.want)
		}
	}
}
