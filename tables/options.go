package tables

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Wait defaults, applied to every zero field of [WaitOptions].
const (
	defaultMaxWait  = 5 * time.Minute
	defaultMinDelay = 2 * time.Second
	defaultMaxDelay = 20 * time.Second
)

// CreateOptions configures [Create], [Ensure] and [Schema.CreateTableInput].
// The zero value is valid: an on-demand table without tags or deletion
// protection, waited on with the [WaitOptions] defaults.
type CreateOptions struct {
	// BillingMode is PAY_PER_REQUEST (on demand) or PROVISIONED. Default:
	// PAY_PER_REQUEST.
	BillingMode types.BillingMode

	// Capacity is the table's provisioned capacity. With PROVISIONED billing
	// both units must be positive; with PAY_PER_REQUEST it must be zero.
	Capacity Capacity

	// IndexCapacity overrides Capacity for the named indexes (PROVISIONED
	// billing only). An index not listed gets Capacity. Every name must be an
	// index of the schema. Default: none.
	IndexCapacity map[string]Capacity

	// Tags are added to the table when it is created. Default: none.
	Tags map[string]string

	// DeletionProtection turns on DynamoDB's deletion protection. Default:
	// false, which suits test tables that [Delete] removes afterwards;
	// production tables should turn it on.
	DeletionProtection bool

	// Wait bounds the wait for the table to become ACTIVE.
	Wait WaitOptions
}

// Capacity is provisioned read and write capacity, in capacity units.
type Capacity struct {
	// Read is the number of read capacity units.
	Read int64
	// Write is the number of write capacity units.
	Write int64
}

// WaitOptions configures how [Create], [Ensure] and [Delete] wait for a table
// to become ACTIVE or to disappear. They wait with the SDK's
// [dynamodb.TableExistsWaiter] and [dynamodb.TableNotExistsWaiter], which
// poll DescribeTable with exponential backoff between MinDelay and MaxDelay.
// The caller's context also bounds every wait.
type WaitOptions struct {
	// MaxWait is the longest a single wait may take before it fails.
	// Default: 5 minutes. It must not be shorter than MinDelay.
	MaxWait time.Duration
	// MinDelay is the shortest pause between two polls. Default: 2 seconds.
	MinDelay time.Duration
	// MaxDelay is the longest pause between two polls. Default: 20 seconds.
	// It must not be shorter than MinDelay.
	MaxDelay time.Duration
}

// DeleteOptions configures [Delete]. The zero value uses the [WaitOptions]
// defaults.
type DeleteOptions struct {
	// Wait bounds the wait for the table to disappear (and, when the table
	// is still being created, for it to become ACTIVE first).
	Wait WaitOptions
}

func (w *WaitOptions) setDefaults() {
	if w.MaxWait == 0 {
		w.MaxWait = defaultMaxWait
	}
	if w.MinDelay == 0 {
		w.MinDelay = defaultMinDelay
	}
	if w.MaxDelay == 0 {
		w.MaxDelay = defaultMaxDelay
	}
}

func (w WaitOptions) validate() error {
	switch {
	case w.MaxWait < 0 || w.MinDelay < 0 || w.MaxDelay < 0:
		return fmt.Errorf("wait options: negative duration (max wait %v, delays %v..%v)", w.MaxWait, w.MinDelay, w.MaxDelay)
	case w.MinDelay > w.MaxDelay:
		return fmt.Errorf("wait options: min delay %v exceeds max delay %v", w.MinDelay, w.MaxDelay)
	case w.MaxWait < w.MinDelay:
		return fmt.Errorf("wait options: max wait %v is shorter than min delay %v", w.MaxWait, w.MinDelay)
	}
	return nil
}

// newCreateOptions applies the defaults, then optFns, then validates the
// result against s.
func newCreateOptions(s Schema, optFns []func(*CreateOptions)) (CreateOptions, error) {
	var o CreateOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.BillingMode == "" {
		o.BillingMode = types.BillingModePayPerRequest
	}
	o.Wait.setDefaults()
	return o, o.validate(s)
}

func (o CreateOptions) validate(s Schema) error {
	var errs []error
	switch o.BillingMode {
	case types.BillingModePayPerRequest:
		if o.Capacity != (Capacity{}) || len(o.IndexCapacity) > 0 {
			errs = append(errs, fmt.Errorf("capacity set with billing mode %s; use %s", o.BillingMode, types.BillingModeProvisioned))
		}
	case types.BillingModeProvisioned:
		if o.Capacity.Read <= 0 || o.Capacity.Write <= 0 {
			errs = append(errs, fmt.Errorf("billing mode %s needs positive table capacity, got read %d, write %d", o.BillingMode, o.Capacity.Read, o.Capacity.Write))
		}
		for _, name := range slices.Sorted(maps.Keys(o.IndexCapacity)) {
			c := o.IndexCapacity[name]
			if !slices.ContainsFunc(s.Indexes, func(ix Index) bool { return ix.Name == name }) {
				errs = append(errs, fmt.Errorf("capacity for unknown index %q", name))
			} else if c.Read <= 0 || c.Write <= 0 {
				errs = append(errs, fmt.Errorf("index %q needs positive capacity, got read %d, write %d", name, c.Read, c.Write))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("billing mode %q, want %s or %s", o.BillingMode, types.BillingModePayPerRequest, types.BillingModeProvisioned))
	}
	if err := o.Wait.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newDeleteOptions(optFns []func(*DeleteOptions)) (DeleteOptions, error) {
	var o DeleteOptions
	for _, fn := range optFns {
		fn(&o)
	}
	o.Wait.setDefaults()
	return o, o.Wait.validate()
}

// CreateTableInput returns the CreateTable request for a table called name
// with schema s, configured by optFns (see [CreateOptions] for the
// defaults). Attribute definitions list every key attribute of the table and
// its indexes exactly once, in name order; indexes and tags come in name
// order too, so equal inputs produce equal requests. The time to live is not
// part of the request: DynamoDB sets it with a separate UpdateTimeToLive call
// once the table is ACTIVE, as [Create] does.
//
// It returns an error, and no request, when name is empty, when s is not a
// schema DynamoDB accepts (a key attribute without a name or with two
// types, a repeated index name, non-key attributes without an INCLUDE
// projection), or when the options are invalid.
func (s Schema) CreateTableInput(name string, optFns ...func(*CreateOptions)) (*dynamodb.CreateTableInput, error) {
	o, err := newCreateOptions(s, optFns)
	if err != nil {
		return nil, fmt.Errorf("tables: create table input %s: %w", name, err)
	}
	in, err := s.createTableInput(name, o)
	if err != nil {
		return nil, fmt.Errorf("tables: create table input %s: %w", name, err)
	}
	return in, nil
}

func (s Schema) createTableInput(name string, o CreateOptions) (*dynamodb.CreateTableInput, error) {
	if name == "" {
		return nil, errors.New("empty table name")
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}

	defs := map[string]types.ScalarAttributeType{}
	keySchema := func(pk, sk Attribute) []types.KeySchemaElement {
		ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: types.KeyTypeHash}}
		defs[pk.Name] = pk.Type
		if sk.Name != "" {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: types.KeyTypeRange})
			defs[sk.Name] = sk.Type
		}
		return ks
	}
	provisioned := o.BillingMode == types.BillingModeProvisioned
	throughput := func(c Capacity) *types.ProvisionedThroughput {
		if !provisioned {
			return nil
		}
		return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(c.Read), WriteCapacityUnits: aws.Int64(c.Write)}
	}

	in := &dynamodb.CreateTableInput{
		TableName:                 aws.String(name),
		KeySchema:                 keySchema(s.PartitionKey, s.SortKey),
		BillingMode:               o.BillingMode,
		ProvisionedThroughput:     throughput(o.Capacity),
		DeletionProtectionEnabled: aws.Bool(o.DeletionProtection),
	}

	indexes := slices.SortedFunc(slices.Values(s.Indexes), func(a, b Index) int { return cmp.Compare(a.Name, b.Name) })
	for _, ix := range indexes {
		p := &types.Projection{ProjectionType: ix.Projection}
		if len(ix.NonKeyAttributes) > 0 {
			p.NonKeyAttributes = slices.Sorted(slices.Values(ix.NonKeyAttributes))
		}
		c, ok := o.IndexCapacity[ix.Name]
		if !ok {
			c = o.Capacity
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:             aws.String(ix.Name),
			KeySchema:             keySchema(ix.PartitionKey, ix.SortKey),
			Projection:            p,
			ProvisionedThroughput: throughput(c),
		})
	}

	for _, n := range slices.Sorted(maps.Keys(defs)) {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(n),
			AttributeType: defs[n],
		})
	}
	for _, k := range slices.Sorted(maps.Keys(o.Tags)) {
		in.Tags = append(in.Tags, types.Tag{Key: aws.String(k), Value: aws.String(o.Tags[k])})
	}
	return in, nil
}
