package jobs

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// exprBuilder collects the placeholders of one request's expressions.
// Every attribute goes through a name placeholder, since several (status,
// name) are reserved words.
type exprBuilder struct {
	names       map[string]string
	placeholder map[string]string
	values      map[string]types.AttributeValue
}

func newExprBuilder() *exprBuilder {
	return &exprBuilder{names: map[string]string{}, placeholder: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder of attribute attr.
func (b *exprBuilder) name(attr string) string {
	if p, ok := b.placeholder[attr]; ok {
		return p
	}
	p := "#n" + strconv.Itoa(len(b.names))
	b.names[p] = attr
	b.placeholder[attr] = p
	return p
}

// value returns a new placeholder holding av.
func (b *exprBuilder) value(av types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(b.values))
	b.values[p] = av
	return p
}

// valuesOrNil returns the value placeholders, nil when there are none (an
// empty map is refused by DynamoDB).
func (b *exprBuilder) valuesOrNil() map[string]types.AttributeValue {
	if len(b.values) == 0 {
		return nil
	}
	return b.values
}

// exists returns a condition that the item exists.
func (b *exprBuilder) exists() string {
	return "attribute_exists(" + b.name(tables.AttrPK) + ")"
}

// expect returns the conditions that each field of normalised expected
// values holds its value: equality, or absence for the values stored as
// absent attributes.
func (b *exprBuilder) expect(expected Changes) []string {
	var conds []string
	for _, field := range slices.Sorted(maps.Keys(expected)) {
		name := b.name(attrOf(field))
		if av := attrValue(field, expected[field]); av != nil {
			conds = append(conds, name+" = "+b.value(av))
		} else {
			conds = append(conds, "attribute_not_exists("+name+")")
		}
	}
	return conds
}

// update returns the update expression that applies normalised changes to
// the job with id, keeps its index sort key in step with its next run time
// and, when writeID is not empty, records it.
func (b *exprBuilder) update(id string, changes Changes, writeID string) string {
	var sets, removes []string
	for _, field := range slices.Sorted(maps.Keys(changes)) {
		name := b.name(attrOf(field))
		if av := attrValue(field, changes[field]); av != nil {
			sets = append(sets, name+" = "+b.value(av))
		} else {
			removes = append(removes, name)
		}
	}
	if next, ok := changes[FieldNextRunTime]; ok {
		sk := jobIndexSK(id, timeValue(next))
		sets = append(sets, b.name(tables.AttrInstancesSK)+" = "+b.value(&types.AttributeValueMemberS{Value: sk}))
	}
	if writeID != "" {
		sets = append(sets, b.name(attrWriteID)+" = "+b.value(&types.AttributeValueMemberS{Value: writeID}))
	}
	var expr []string
	if len(sets) > 0 {
		expr = append(expr, "SET "+strings.Join(sets, ", "))
	}
	if len(removes) > 0 {
		expr = append(expr, "REMOVE "+strings.Join(removes, ", "))
	}
	return strings.Join(expr, " ")
}
