package faults

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// queryPlan is a query of an index, parsed for local evaluation.
type queryPlan struct {
	op         string               // OpQuery or OpScan
	partition  types.AttributeValue // the index partition key's value; nil for a scan
	sortKey    *cond                // nil: the whole partition
	filter     *cond                // nil: no filter
	projection []string             // nil: every projected attribute
	count      bool                 // Select COUNT
	forward    bool
	limit      int // 0: none
	startKey   item
}

// planQuery parses q, a query of index ix. Its errors are the caller's:
// ValidationExceptions, with [ErrUnsupported] for what the evaluator does
// not implement.
func planQuery(q *dynamodb.QueryInput, ix tables.Index) (*queryPlan, error) {
	invalid, unsupported := planErrors(OpQuery)
	switch {
	case len(q.KeyConditions) > 0 || len(q.QueryFilter) > 0 || len(q.AttributesToGet) > 0 || q.ConditionalOperator != "":
		return nil, unsupported("legacy parameters (KeyConditions, QueryFilter, AttributesToGet, ConditionalOperator) are not supported")
	case aws.ToBool(q.ConsistentRead):
		return nil, invalid("Consistent reads are not supported on global secondary indexes")
	case q.KeyConditionExpression == nil:
		return nil, invalid("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}

	set := newExprSet(q.ExpressionAttributeNames, q.ExpressionAttributeValues)
	p := &queryPlan{op: OpQuery, forward: q.ScanIndexForward == nil || *q.ScanIndexForward, limit: int(aws.ToInt32(q.Limit)), startKey: q.ExclusiveStartKey}
	key, err := set.condition("KeyConditionExpression", *q.KeyConditionExpression)
	if err != nil {
		return nil, p.fail(err)
	}
	if p.partition, p.sortKey, err = splitKeyCondition(key, ix); err != nil {
		return nil, invalid("invalid KeyConditionExpression %q: %v", *q.KeyConditionExpression, err)
	}
	if err := p.finish(set, ix, q.FilterExpression, q.ProjectionExpression, q.Select, q.Limit); err != nil {
		return nil, err
	}
	return p, nil
}

// planScan parses s, a scan of index ix, as planQuery parses a query. A
// scan has no key condition, and its filter may name key attributes.
func planScan(s *dynamodb.ScanInput, ix tables.Index) (*queryPlan, error) {
	invalid, unsupported := planErrors(OpScan)
	switch {
	case len(s.ScanFilter) > 0 || len(s.AttributesToGet) > 0 || s.ConditionalOperator != "":
		return nil, unsupported("legacy parameters (ScanFilter, AttributesToGet, ConditionalOperator) are not supported")
	case s.Segment != nil || s.TotalSegments != nil:
		return nil, unsupported("parallel scans (Segment, TotalSegments) are not supported")
	case aws.ToBool(s.ConsistentRead):
		return nil, invalid("Consistent reads are not supported on global secondary indexes")
	}
	set := newExprSet(s.ExpressionAttributeNames, s.ExpressionAttributeValues)
	p := &queryPlan{op: OpScan, forward: true, limit: int(aws.ToInt32(s.Limit)), startKey: s.ExclusiveStartKey}
	if err := p.finish(set, ix, s.FilterExpression, s.ProjectionExpression, s.Select, s.Limit); err != nil {
		return nil, err
	}
	return p, nil
}

// planErrors returns the makers of op's planning errors: ValidationExceptions,
// the second with [ErrUnsupported] for what the evaluator does not implement.
func planErrors(op string) (invalid, unsupported func(format string, args ...any) error) {
	invalid = func(format string, args ...any) error {
		return validationError(op, fmt.Sprintf(format, args...), false)
	}
	unsupported = func(format string, args ...any) error {
		return validationError(op, "faults: index lag: "+fmt.Sprintf(format, args...), true)
	}
	return invalid, unsupported
}

// fail turns an expression error into the caller's error.
func (p *queryPlan) fail(err error) error {
	invalid, unsupported := planErrors(p.op)
	var e *exprError
	if errors.As(err, &e) && e.unsupported {
		return unsupported("%v", e)
	}
	return invalid("%v", err)
}

// finish parses what queries and scans share: the filter, the projection,
// Select and Limit.
func (p *queryPlan) finish(set *exprSet, ix tables.Index, filter, projection *string, sel types.Select, limit *int32) error {
	invalid, unsupported := planErrors(p.op)
	var err error
	if filter != nil {
		if p.filter, err = set.condition("FilterExpression", *filter); err != nil {
			return p.fail(err)
		}
		for _, name := range p.filter.paths() {
			if p.op == OpQuery && (name == ix.PartitionKey.Name || name == ix.SortKey.Name) {
				return invalid("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", name)
			}
		}
	}
	if projection != nil {
		if p.projection, err = set.projection(*projection); err != nil {
			return p.fail(err)
		}
	}
	if err := set.checkUnused(); err != nil {
		return p.fail(err)
	}

	switch sel {
	case "", types.SelectAllProjectedAttributes, types.SelectSpecificAttributes:
		if sel == types.SelectSpecificAttributes && p.projection == nil {
			return invalid("Select SPECIFIC_ATTRIBUTES needs a ProjectionExpression")
		}
		if sel == types.SelectAllProjectedAttributes && p.projection != nil {
			return invalid("Cannot specify the ProjectionExpression when choosing to get ALL_PROJECTED_ATTRIBUTES")
		}
	case types.SelectCount:
		if p.projection != nil {
			return invalid("Cannot specify the ProjectionExpression when choosing to get COUNT")
		}
		p.count = true
	case types.SelectAllAttributes:
		if ix.Projection != types.ProjectionTypeAll {
			return invalid("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is inconsistent with GlobalSecondaryIndex %s and its projection type %s", ix.Name, ix.Projection)
		}
	default:
		return unsupported("Select %s is not supported", sel)
	}
	if p.limit < 0 || limit != nil && p.limit == 0 {
		return invalid("Limit must be at least 1")
	}
	return nil
}

// splitKeyCondition separates a key condition into the partition key's
// value and the sort-key condition (nil when there is none).
func splitKeyCondition(c *cond, ix tables.Index) (types.AttributeValue, *cond, error) {
	parts := []*cond{c}
	if c.op == opAnd {
		parts = c.kids
	}
	var partition types.AttributeValue
	var sortKey *cond
	for _, part := range parts {
		switch {
		case part.op == opCompare && part.cmp == "=" && part.args[0].value == nil && part.args[0].path == ix.PartitionKey.Name && part.args[1].value != nil:
			if partition != nil {
				return nil, nil, fmt.Errorf("two conditions on the partition key %s", ix.PartitionKey.Name)
			}
			partition = part.args[1].value
		case ix.SortKey.Name != "" && part.onSortKey(ix.SortKey.Name):
			if sortKey != nil {
				return nil, nil, fmt.Errorf("two conditions on the sort key %s", ix.SortKey.Name)
			}
			sortKey = part
		default:
			return nil, nil, fmt.Errorf("query key condition not supported: want %s = :value, optionally AND one condition (=, <, <=, >, >=, BETWEEN, begins_with) on %s with values",
				ix.PartitionKey.Name, orNone(ix.SortKey.Name))
		}
	}
	if partition == nil {
		return nil, nil, fmt.Errorf("query condition missed key schema element: %s", ix.PartitionKey.Name)
	}
	return partition, sortKey, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// onSortKey reports whether c is a condition a key condition may put on
// the sort key name: the attribute first, values after.
func (c *cond) onSortKey(name string) bool {
	switch c.op {
	case opCompare:
		if c.cmp == "<>" {
			return false
		}
	case opBetween, opBeginsWith:
	default:
		return false
	}
	if c.args[0].value != nil || c.args[0].path != name {
		return false
	}
	for _, a := range c.args[1:] {
		if a.value == nil {
			return false
		}
	}
	return true
}

// paths lists the attribute names c refers to.
func (c *cond) paths() []string {
	var out []string
	for _, a := range c.args {
		if a.value == nil {
			out = append(out, a.path)
		}
	}
	for _, k := range c.kids {
		out = append(out, k.paths()...)
	}
	return out
}

// run evaluates the plan on the rows of one index partition (of the whole
// index for a scan, which takes them in the order of the index's partition
// key, then its sort key, then the table's keys: DynamoDB's scan order is
// its own, and callers may not rely on it).
func (p *queryPlan) run(rows []item, schema tables.Schema, ix tables.Index) (*dynamodb.QueryOutput, error) {
	keyNames := []string{ix.SortKey.Name, schema.PartitionKey.Name, schema.SortKey.Name}
	if p.op == OpScan {
		keyNames = append([]string{ix.PartitionKey.Name}, keyNames...)
	}
	var inRange []item
	for _, r := range rows {
		if p.sortKey != nil {
			ok, err := p.sortKey.eval(r)
			if err != nil {
				return nil, p.evalError("KeyConditionExpression", err)
			}
			if !ok {
				continue
			}
		}
		inRange = append(inRange, r)
	}
	slices.SortStableFunc(inRange, func(a, b item) int {
		c := compareKeys(a, b, keyNames)
		if !p.forward {
			c = -c
		}
		return c
	})
	if p.startKey != nil {
		// Resume strictly after the start key, in the direction of the
		// scan, whether or not its row is still there.
		i := 0
		for i < len(inRange) {
			c := compareKeys(inRange[i], p.startKey, keyNames)
			if !p.forward {
				c = -c
			}
			if c > 0 {
				break
			}
			i++
		}
		inRange = inRange[i:]
	}
	evaluated := inRange
	out := &dynamodb.QueryOutput{}
	if p.limit > 0 && len(inRange) >= p.limit {
		evaluated = inRange[:p.limit]
		last := evaluated[len(evaluated)-1]
		out.LastEvaluatedKey = item{}
		for _, name := range []string{ix.PartitionKey.Name, ix.SortKey.Name, schema.PartitionKey.Name, schema.SortKey.Name} {
			if v, ok := last[name]; ok && name != "" {
				out.LastEvaluatedKey[name] = cloneValue(v)
			}
		}
	}
	for _, r := range evaluated {
		if p.filter != nil {
			ok, err := p.filter.eval(r)
			if err != nil {
				return nil, p.evalError("FilterExpression", err)
			}
			if !ok {
				continue
			}
		}
		out.Count++
		if p.count {
			continue
		}
		out.Items = append(out.Items, project(r, p.projection))
	}
	out.ScannedCount = int32(len(evaluated))
	if !p.count && out.Items == nil {
		out.Items = []item{}
	}
	return out, nil
}

// evalError turns an evaluation error of the request's field which into
// the caller's error.
func (p *queryPlan) evalError(which string, err error) error {
	var e *exprError
	if errors.As(err, &e) {
		return validationError(p.op, fmt.Sprintf("faults: index lag: %s: %s", which, e.msg), e.unsupported)
	}
	return validationError(p.op, fmt.Sprintf("faults: index lag: %s: %v", which, err), true)
}

// project copies the attributes names of r (all of them when names is
// nil). The copy is deep: callers may modify what they get without
// changing the snapshot.
func project(r item, names []string) item {
	out := make(item, len(r))
	if names == nil {
		for k, v := range r {
			out[k] = cloneValue(v)
		}
		return out
	}
	for _, n := range names {
		if v, ok := r[n]; ok {
			out[n] = cloneValue(v)
		}
	}
	return out
}

// cloneValue returns a deep copy of v.
func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(v.Value))
		for i, b := range v.Value {
			bs[i] = slices.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = cloneValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		m := make(map[string]types.AttributeValue, len(v.Value))
		for k, e := range v.Value {
			m[k] = cloneValue(e)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return v
}

// compareKeys orders rows by the key attributes names, in turn. Values of
// different types order by type name; an absent value first.
func compareKeys(a, b item, names []string) int {
	for _, name := range names {
		if name == "" {
			continue
		}
		if c := compareKey(a[name], b[name]); c != 0 {
			return c
		}
	}
	return 0
}

func compareKey(a, b types.AttributeValue) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	c, ordered, same, err := order(a, b)
	if err != nil || !same || !ordered {
		if ta, tb := typeName(a), typeName(b); ta != tb {
			if ta < tb {
				return -1
			}
			return 1
		}
		return 0
	}
	return c
}
