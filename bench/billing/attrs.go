package billing

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
)

// equalItems reports whether two items hold the same attributes with equal
// values by [equalValues].
func equalItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for name, av := range a {
		bv, ok := b[name]
		if !ok || !equalValues(av, bv) {
			return false
		}
	}
	return true
}

// equalValues reports whether two attribute values are equal as DynamoDB
// stores them: numbers compare by value (1.50 equals 1.5), sets compare
// regardless of order, lists in order, maps by key.
func equalValues(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && canonicalNumber(a.Value) == canonicalNumber(b.Value)
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		b, ok := b.(*types.AttributeValueMemberNULL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, equalValues)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && equalItems(a.Value, b.Value)
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && equalSets(a.Value, b.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && equalSets(a.Value, b.Value, canonicalNumber)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && equalSets(a.Value, b.Value, func(v []byte) string { return string(v) })
	}
	return false
}

func equalSets[E any](a, b []E, key func(E) string) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, len(a))
	kb := make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = key(a[i]), key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// canonicalNumber returns one spelling per numeric value, so that equal
// numbers written differently ("1.50", "15e-1") compare equal. A string
// that is not a number is its own spelling.
func canonicalNumber(s string) string {
	n, ok := itemsize.ParseNumber(s)
	if !ok {
		return "?" + s
	}
	if n.Negative {
		return fmt.Sprintf("-%se%d", n.Digits, n.Exp)
	}
	return fmt.Sprintf("%se%d", n.Digits, n.Exp)
}

// keyString encodes the values of the named attributes of item as a string
// that is equal for equal values, to match keys across requests and
// responses. It reports false when item lacks one of them.
func keyString(item map[string]types.AttributeValue, names ...string) (string, bool) {
	var b strings.Builder
	for _, name := range names {
		if name == "" {
			continue
		}
		v, ok := item[name]
		if !ok {
			return "", false
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&b, "S%d:%s|", len(v.Value), v.Value)
		case *types.AttributeValueMemberN:
			c := canonicalNumber(v.Value)
			fmt.Fprintf(&b, "N%d:%s|", len(c), c)
		case *types.AttributeValueMemberB:
			fmt.Fprintf(&b, "B%d:%s|", len(v.Value), v.Value)
		default:
			return "", false // not a key type
		}
	}
	return b.String(), true
}
