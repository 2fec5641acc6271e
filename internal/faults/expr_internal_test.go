package faults

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// exprItem is the item the condition tests evaluate against.
var exprItem = item{
	"name":  s("alpha"),
	"count": n("10"),
	"big":   n("1e3"),
	"bin":   &types.AttributeValueMemberB{Value: []byte{1, 2, 3}},
	"flag":  &types.AttributeValueMemberBOOL{Value: true},
	"nul":   &types.AttributeValueMemberNULL{Value: true},
	"list":  &types.AttributeValueMemberL{},
}

var exprNames = map[string]string{"#n": "name", "#c": "count", "#big": "big", "#bin": "bin", "#flag": "flag", "#nul": "nul", "#miss": "missing", "#list": "list"}

var exprValues = map[string]types.AttributeValue{
	":alpha": s("alpha"), ":al": s("al"), ":beta": s("beta"), ":ten": n("10"), ":ten2": n("10.0"), ":nine": n("9"),
	":eleven": n("11"), ":s10": s("10"), ":bin": &types.AttributeValueMemberB{Value: []byte{1, 2}},
	":true": &types.AttributeValueMemberBOOL{Value: true}, ":null": &types.AttributeValueMemberNULL{Value: true},
	":list": &types.AttributeValueMemberL{},
}

func TestCondition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"#n = :alpha", true},
		{"#n <> :alpha", false},
		{"#n < :beta", true},
		{"#n <= :alpha", true},
		{"#n > :beta", false},
		{"#n >= :al", true},
		{"name = :alpha", true},
		{"#c = :ten2", true},      // numbers compare numerically
		{"#big > :eleven", true},  // 1e3 > 11
		{"#c > :nine", true},      // not "10" > "9" as strings
		{"#c = :s10", false},      // types differ
		{"#c <> :s10", true},      //
		{"#c < :s10", false},      //
		{"#miss = :alpha", false}, // absent
		{"#miss <> :alpha", true},
		{"#miss < :alpha", false},
		{"#c BETWEEN :nine AND :eleven", true},
		{"#c between :ten AND :ten", true},
		{"#c BETWEEN :eleven AND :eleven", false},
		{"#miss BETWEEN :nine AND :eleven", false},
		{"begins_with(#n, :al)", true},
		{"begins_with(#n, :beta)", false},
		{"begins_with(#c, :al)", false},
		{"begins_with(#miss, :al)", false},
		{"begins_with(#bin, :bin)", true},
		{"attribute_exists(#n)", true},
		{"attribute_exists(#miss)", false},
		{"attribute_not_exists(#miss)", true},
		{"#flag = :true", true},
		{"#nul = :null", true},
		{"#n = :alpha AND #c = :nine", false},
		{"#n = :alpha OR #c = :nine", true},
		{"NOT #n = :alpha", false},
		{"not (#n = :beta)", true},
		{"#c = :nine OR #n = :alpha AND #c = :nine", false}, // AND binds tighter
		{"(#c = :nine OR #n = :alpha) AND #c = :ten", true},
		{"NOT NOT attribute_exists(#n)", true},
		{"#c BETWEEN :nine AND :eleven AND #n = :alpha", true},
		{"  #n=:alpha\tAND(#c>=:ten)  ", true},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := newExprSet(exprNames, exprValues).condition("FilterExpression", tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.eval(exprItem)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCondition_Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr        string
		unsupported bool
		atEval      bool
	}{
		{"contains(#n, :al)", true, false},
		{"size(#n) > :ten", true, false},
		{"attribute_type(#n, :alpha)", true, false},
		{"#n IN (:alpha, :beta)", true, false},
		{"#n.sub = :alpha", true, false},
		{"#n[0] = :alpha", true, false},
		{"#list = :list", true, true},
		{"#flag < :true", true, true},
		{"begins_with(#n, :ten)", false, true},
		{"#undefined = :alpha", false, false},
		{"#n = :undefined", false, false},
		{"#n = ", false, false},
		{"#n = :alpha AND", false, false},
		{"(#n = :alpha", false, false},
		{"#n = :alpha)", false, false},
		{"#n :alpha", false, false},
		{"#n BETWEEN :nine :eleven", false, false},
		{"begins_with(:al, #n)", false, false},
		{"begins_with(#n)", false, false},
		{"BEGINS_WITH(#n, :al)", false, false}, // function names are case-sensitive
		{"nope(#n)", false, false},
		{"# = :alpha", false, false},
		{"#n == :alpha", false, false},
		{"#n = :alpha $", false, false},
		{"AND = :alpha", false, false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := newExprSet(exprNames, exprValues).condition("FilterExpression", tc.expr)
			if err == nil {
				if !tc.atEval {
					t.Fatalf("parsed, want an error")
				}
				_, err = c.eval(exprItem)
			} else if tc.atEval {
				t.Fatalf("parse error %v, want one at evaluation", err)
			}
			var e *exprError
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *exprError", err, err)
			}
			if e.unsupported != tc.unsupported {
				t.Errorf("error %v: unsupported = %v, want %v", err, e.unsupported, tc.unsupported)
			}
			if !tc.atEval && !strings.Contains(err.Error(), tc.expr) {
				t.Errorf("error %q does not name the expression", err)
			}
		})
	}
}

func TestProjection(t *testing.T) {
	t.Parallel()
	set := newExprSet(exprNames, exprValues)
	got, err := set.projection("#n, count ,#c")
	if err == nil {
		t.Fatalf("projection with overlapping paths: %v", got)
	}
	got, err = newExprSet(exprNames, nil).projection("#n, plain,#c")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"name", "plain", "count"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "#n,", ":alpha", "#n.x", "#n #c"} {
		if _, err := newExprSet(exprNames, exprValues).projection(bad); err == nil {
			t.Errorf("projection %q parsed", bad)
		}
	}
}

func TestExprSet_CheckUnused(t *testing.T) {
	t.Parallel()
	set := newExprSet(map[string]string{"#a": "a", "#b": "b"}, map[string]types.AttributeValue{":x": s("x"), ":y": s("y")})
	if _, err := set.condition("KeyConditionExpression", "#a = :x"); err != nil {
		t.Fatal(err)
	}
	if err := set.checkUnused(); err == nil || !strings.Contains(err.Error(), "#b") {
		t.Errorf("unused #b: %v", err)
	}
	if _, err := set.projection("#b"); err != nil {
		t.Fatal(err)
	}
	if err := set.checkUnused(); err == nil || !strings.Contains(err.Error(), ":y") {
		t.Errorf("unused :y: %v", err)
	}
	if _, err := set.condition("FilterExpression", "#a <> :y"); err != nil {
		t.Fatal(err)
	}
	if err := set.checkUnused(); err != nil {
		t.Errorf("all used: %v", err)
	}
}
