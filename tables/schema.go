package tables

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Schema is the physical shape of a table: its key schema, its global
// secondary indexes and its time-to-live attribute. Billing, tags and other
// settings that do not change how items are stored and found are not part of
// a Schema; they are [CreateOptions].
//
// [Default] returns the duradyn table's schema; [FromDescription] reads one
// back from a live table. Two schemas are equal when [Schema.Diff] returns no
// differences. Indexes are kept sorted by name and non-key attributes sorted
// by name, so equal schemas also have equal JSON encodings.
type Schema struct {
	// PartitionKey is the table's partition (HASH) key.
	PartitionKey Attribute `json:"partition_key"`
	// SortKey is the table's sort (RANGE) key; its Name is empty when the
	// table has none.
	SortKey Attribute `json:"sort_key"`
	// Indexes are the global secondary indexes, sorted by name.
	Indexes []Index `json:"global_secondary_indexes"`
	// TTLAttribute is the time-to-live attribute, or "" when time to live is
	// disabled.
	TTLAttribute string `json:"ttl_attribute"`
}

// Attribute is a key attribute: a name and a scalar type.
type Attribute struct {
	// Name is the attribute name; "" means no attribute (a missing sort key).
	Name string `json:"name"`
	// Type is the attribute's scalar type: S, N or B.
	Type types.ScalarAttributeType `json:"type"`
}

// String returns the attribute as "name (T)", or "none" when Name is empty.
func (a Attribute) String() string {
	if a.Name == "" {
		return "none"
	}
	return fmt.Sprintf("%s (%s)", a.Name, a.Type)
}

// Index is a global secondary index.
type Index struct {
	// Name is the index name.
	Name string `json:"name"`
	// PartitionKey is the index's partition (HASH) key.
	PartitionKey Attribute `json:"partition_key"`
	// SortKey is the index's sort (RANGE) key; its Name is empty when the
	// index has none.
	SortKey Attribute `json:"sort_key"`
	// Projection is the index's projection type: ALL, KEYS_ONLY or INCLUDE.
	Projection types.ProjectionType `json:"projection_type"`
	// NonKeyAttributes are the attributes projected besides the keys, sorted;
	// only an INCLUDE projection has them.
	NonKeyAttributes []string `json:"non_key_attributes"`
}

// Default returns the duradyn table's schema:
//
//   - keys [AttrPK] (partition) and [AttrSK] (sort);
//   - index [IndexReady] on [AttrReadyPK] and [AttrReadySK], projecting
//     [AttrLockUntil], [AttrSession], [AttrTag] and [AttrVis];
//   - index [IndexInstances] on [AttrInstancesPK] and [AttrInstancesSK],
//     projecting [AttrCompletedAt], [AttrParent] and [AttrStatus];
//   - time to live on [AttrExpiresAt].
//
// Every key attribute is a string. Each call returns a new value that the
// caller may modify.
func Default() Schema {
	return Schema{
		PartitionKey: Attribute{Name: AttrPK, Type: types.ScalarAttributeTypeS},
		SortKey:      Attribute{Name: AttrSK, Type: types.ScalarAttributeTypeS},
		Indexes: []Index{
			{
				Name:             IndexInstances,
				PartitionKey:     Attribute{Name: AttrInstancesPK, Type: types.ScalarAttributeTypeS},
				SortKey:          Attribute{Name: AttrInstancesSK, Type: types.ScalarAttributeTypeS},
				Projection:       types.ProjectionTypeInclude,
				NonKeyAttributes: []string{AttrCompletedAt, AttrParent, AttrStatus},
			},
			{
				Name:             IndexReady,
				PartitionKey:     Attribute{Name: AttrReadyPK, Type: types.ScalarAttributeTypeS},
				SortKey:          Attribute{Name: AttrReadySK, Type: types.ScalarAttributeTypeS},
				Projection:       types.ProjectionTypeInclude,
				NonKeyAttributes: []string{AttrAttempts, AttrLockUntil, AttrSession, AttrTag, AttrVis},
			},
		},
		TTLAttribute: AttrExpiresAt,
	}
}

// FromDescription returns the schema of a live table from DescribeTable's
// table description and DescribeTimeToLive's description. A nil ttl, or a
// time to live that is DISABLED or DISABLING, gives an empty TTLAttribute;
// ENABLED and ENABLING count as enabled. A nil desc gives the zero Schema
// apart from the time to live. Indexes and non-key attributes come back
// sorted, so the result compares cleanly with [Default].
func FromDescription(desc *types.TableDescription, ttl *types.TimeToLiveDescription) Schema {
	var s Schema
	if ttl != nil && ttl.AttributeName != nil {
		switch ttl.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			s.TTLAttribute = *ttl.AttributeName
		}
	}
	if desc == nil {
		return s
	}
	attrTypes := make(map[string]types.ScalarAttributeType, len(desc.AttributeDefinitions))
	for _, d := range desc.AttributeDefinitions {
		if d.AttributeName != nil {
			attrTypes[*d.AttributeName] = d.AttributeType
		}
	}
	s.PartitionKey, s.SortKey = keysFromSchema(desc.KeySchema, attrTypes)
	for _, g := range desc.GlobalSecondaryIndexes {
		idx := Index{Name: deref(g.IndexName)}
		idx.PartitionKey, idx.SortKey = keysFromSchema(g.KeySchema, attrTypes)
		if g.Projection != nil {
			idx.Projection = g.Projection.ProjectionType
			if len(g.Projection.NonKeyAttributes) > 0 {
				idx.NonKeyAttributes = slices.Sorted(slices.Values(g.Projection.NonKeyAttributes))
			}
		}
		s.Indexes = append(s.Indexes, idx)
	}
	slices.SortFunc(s.Indexes, func(a, b Index) int { return cmp.Compare(a.Name, b.Name) })
	return s
}

func keysFromSchema(ks []types.KeySchemaElement, attrTypes map[string]types.ScalarAttributeType) (hash, rng Attribute) {
	for _, k := range ks {
		name := deref(k.AttributeName)
		a := Attribute{Name: name, Type: attrTypes[name]}
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = a
		case types.KeyTypeRange:
			rng = a
		}
	}
	return hash, rng
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Diff lists the differences between s, the expected schema, and other, the
// actual one, as human-readable sentences in a stable order; it returns nil
// when the schemas are equal. The order of indexes and of non-key attributes
// does not matter. Each sentence names what differs (the table key, an index
// by name, or the time to live), for example:
//
//	index "ready": missing
//	index "ready": sort key: want rq_sk (S), got none
//	ttl attribute: want "expires_at", got none
func (s Schema) Diff(other Schema) []string {
	var d []string
	if s.PartitionKey != other.PartitionKey {
		d = append(d, fmt.Sprintf("partition key: want %s, got %s", s.PartitionKey, other.PartitionKey))
	}
	if s.SortKey != other.SortKey {
		d = append(d, fmt.Sprintf("sort key: want %s, got %s", s.SortKey, other.SortKey))
	}

	want := indexesByName(s.Indexes)
	got := indexesByName(other.Indexes)
	for _, name := range slices.Sorted(slices.Values(unionKeys(want, got))) {
		w, inWant := want[name]
		g, inGot := got[name]
		switch {
		case !inGot:
			d = append(d, fmt.Sprintf("index %q: missing", name))
		case !inWant:
			d = append(d, fmt.Sprintf("index %q: not in the schema", name))
		default:
			for _, x := range w.diff(g) {
				d = append(d, fmt.Sprintf("index %q: %s", name, x))
			}
		}
	}

	if s.TTLAttribute != other.TTLAttribute {
		d = append(d, fmt.Sprintf("ttl attribute: want %s, got %s", quoteOrNone(s.TTLAttribute), quoteOrNone(other.TTLAttribute)))
	}
	return d
}

func (ix Index) diff(other Index) []string {
	var d []string
	if ix.PartitionKey != other.PartitionKey {
		d = append(d, fmt.Sprintf("partition key: want %s, got %s", ix.PartitionKey, other.PartitionKey))
	}
	if ix.SortKey != other.SortKey {
		d = append(d, fmt.Sprintf("sort key: want %s, got %s", ix.SortKey, other.SortKey))
	}
	if ix.Projection != other.Projection {
		d = append(d, fmt.Sprintf("projection: want %s, got %s", orNone(string(ix.Projection)), orNone(string(other.Projection))))
	}
	missing, extra := setDiff(ix.NonKeyAttributes, other.NonKeyAttributes)
	if len(missing) > 0 {
		d = append(d, fmt.Sprintf("non-key attributes missing: %s", strings.Join(missing, ", ")))
	}
	if len(extra) > 0 {
		d = append(d, fmt.Sprintf("non-key attributes not in the schema: %s", strings.Join(extra, ", ")))
	}
	return d
}

// indexesByName maps indexes by name. Should a schema list one name twice,
// the last entry wins; [Schema.validate] rejects such schemas before they
// reach DynamoDB, and DynamoDB never describes one.
func indexesByName(ixs []Index) map[string]Index {
	m := make(map[string]Index, len(ixs))
	for _, ix := range ixs {
		m[ix.Name] = ix
	}
	return m
}

func unionKeys(a, b map[string]Index) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// setDiff returns the sorted elements of want missing from got, and those of
// got missing from want.
func setDiff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) && !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && !slices.Contains(extra, g) {
			extra = append(extra, g)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// validate reports why DynamoDB would reject s, or nil. It checks what can be
// checked without the service: present keys, one type per attribute name,
// scalar types, unique index names, and non-key attributes only on INCLUDE
// projections.
func (s Schema) validate() error {
	var errs []error
	declared := map[string]types.ScalarAttributeType{}
	declare := func(where string, a Attribute, required bool) {
		if a.Name == "" {
			if required {
				errs = append(errs, fmt.Errorf("%s: no attribute name", where))
			}
			return
		}
		if !slices.Contains(a.Type.Values(), a.Type) {
			errs = append(errs, fmt.Errorf("%s: attribute %s has type %q, want S, N or B", where, a.Name, a.Type))
			return
		}
		if t, ok := declared[a.Name]; ok && t != a.Type {
			errs = append(errs, fmt.Errorf("%s: attribute %s declared as %s and %s", where, a.Name, t, a.Type))
			return
		}
		declared[a.Name] = a.Type
	}
	declare("partition key", s.PartitionKey, true)
	declare("sort key", s.SortKey, false)
	seen := map[string]bool{}
	for _, ix := range s.Indexes {
		where := fmt.Sprintf("index %q", ix.Name)
		if ix.Name == "" {
			errs = append(errs, errors.New("index with no name"))
		} else if seen[ix.Name] {
			errs = append(errs, fmt.Errorf("%s: declared twice", where))
		}
		seen[ix.Name] = true
		declare(where+" partition key", ix.PartitionKey, true)
		declare(where+" sort key", ix.SortKey, false)
		switch ix.Projection {
		case types.ProjectionTypeInclude:
		case types.ProjectionTypeAll, types.ProjectionTypeKeysOnly:
			if len(ix.NonKeyAttributes) > 0 {
				errs = append(errs, fmt.Errorf("%s: non-key attributes need projection %s, not %s", where, types.ProjectionTypeInclude, ix.Projection))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: projection %q, want ALL, KEYS_ONLY or INCLUDE", where, ix.Projection))
		}
	}
	return errors.Join(errs...)
}
