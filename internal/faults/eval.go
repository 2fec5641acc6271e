package faults

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Conditions parsed by exprSet.condition are evaluated here, with
// DynamoDB's rules for absent attributes and mismatched types.

// eval evaluates c on it. Errors report comparisons the evaluator does
// not implement or that DynamoDB rejects.
func (c *cond) eval(it item) (bool, error) {
	switch c.op {
	case opAnd, opOr:
		for _, k := range c.kids {
			v, err := k.eval(it)
			if err != nil {
				return false, err
			}
			if v == (c.op == opOr) {
				return v, nil
			}
		}
		return c.op == opAnd, nil
	case opNot:
		v, err := c.kids[0].eval(it)
		return !v, err
	case opExists, opNotExists:
		_, present := it[c.args[0].path]
		return present == (c.op == opExists), nil
	case opBeginsWith:
		return beginsWith(c.args[0].resolve(it), c.args[1].resolve(it))
	case opBetween:
		a, lo, hi := c.args[0].resolve(it), c.args[1].resolve(it), c.args[2].resolve(it)
		if a == nil {
			return false, nil
		}
		geLo, err := compare(">=", a, lo)
		if err != nil || !geLo {
			return false, err
		}
		return compare("<=", a, hi)
	case opCompare:
		return compare(c.cmp, c.args[0].resolve(it), c.args[1].resolve(it))
	}
	return false, fmt.Errorf("faults: condition node %d", c.op)
}

// resolve returns the operand's value in it; nil when the attribute is
// absent.
func (o operand) resolve(it item) types.AttributeValue {
	if o.value != nil {
		return o.value
	}
	return it[o.path]
}

// compare applies a comparator. As in DynamoDB, a comparison with an
// absent attribute or between values of different types is false, except
// <>, which is true.
func compare(cmp string, a, b types.AttributeValue) (bool, error) {
	if a == nil || b == nil {
		return cmp == "<>", nil
	}
	c, ordered, same, err := order(a, b)
	if err != nil {
		return false, err
	}
	if !same {
		return cmp == "<>", nil
	}
	switch cmp {
	case "=":
		return c == 0, nil
	case "<>":
		return c != 0, nil
	}
	if !ordered {
		return false, &exprError{msg: fmt.Sprintf("comparator %s on %s values is not supported", cmp, typeName(a)), unsupported: true}
	}
	switch cmp {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("faults: comparator %s", cmp)
}

// order compares two values: same reports whether they have one type;
// ordered whether that type has an order (S, N, B; BOOL and NULL only
// compare for equality). Other types are not supported.
func order(a, b types.AttributeValue) (c int, ordered, same bool, err error) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), true, true, nil
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			c, err := compareNumbers(a.Value, b.Value)
			return c, true, true, err
		}
	case *types.AttributeValueMemberB:
		if b, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(a.Value, b.Value), true, true, nil
		}
	case *types.AttributeValueMemberBOOL:
		if b, ok := b.(*types.AttributeValueMemberBOOL); ok {
			if a.Value == b.Value {
				return 0, false, true, nil
			}
			return 1, false, true, nil
		}
	case *types.AttributeValueMemberNULL:
		if _, ok := b.(*types.AttributeValueMemberNULL); ok {
			return 0, false, true, nil
		}
	default:
		return 0, false, false, &exprError{msg: fmt.Sprintf("comparisons of %s values are not supported", typeName(a)), unsupported: true}
	}
	if !scalar(b) {
		return 0, false, false, &exprError{msg: fmt.Sprintf("comparisons of %s values are not supported", typeName(b)), unsupported: true}
	}
	return 0, false, false, nil
}

func scalar(v types.AttributeValue) bool {
	switch v.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB,
		*types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return true
	}
	return false
}

// compareNumbers compares two DynamoDB numbers exactly.
func compareNumbers(a, b string) (int, error) {
	x, ok := new(big.Rat).SetString(a)
	if !ok {
		return 0, &exprError{msg: fmt.Sprintf("invalid number %q", a)}
	}
	y, ok := new(big.Rat).SetString(b)
	if !ok {
		return 0, &exprError{msg: fmt.Sprintf("invalid number %q", b)}
	}
	return x.Cmp(y), nil
}

// beginsWith is begins_with(a, prefix): false when a is absent or of
// another type than prefix; prefix must be a string or binary.
func beginsWith(a, prefix types.AttributeValue) (bool, error) {
	switch p := prefix.(type) {
	case *types.AttributeValueMemberS:
		s, ok := a.(*types.AttributeValueMemberS)
		return ok && strings.HasPrefix(s.Value, p.Value), nil
	case *types.AttributeValueMemberB:
		b, ok := a.(*types.AttributeValueMemberB)
		return ok && bytes.HasPrefix(b.Value, p.Value), nil
	case nil:
		return false, nil
	}
	return false, &exprError{msg: fmt.Sprintf("Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", typeName(prefix))}
}

// typeName is the DynamoDB type name of v (S, N, M, ...).
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return fmt.Sprintf("%T", v)
}
