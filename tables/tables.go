package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client this package uses. A
// *dynamodb.Client satisfies it; tests may pass a fake.
type API interface {
	// CreateTable is [dynamodb.Client.CreateTable].
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	// DescribeTable is [dynamodb.Client.DescribeTable]; the SDK waiters call it.
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	// DeleteTable is [dynamodb.Client.DeleteTable].
	DeleteTable(ctx context.Context, params *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	// UpdateTimeToLive is [dynamodb.Client.UpdateTimeToLive].
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	// DescribeTimeToLive is [dynamodb.Client.DescribeTimeToLive].
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// An API is all the SDK waiters need.
var _ dynamodb.DescribeTableAPIClient = API(nil)

// ErrSchemaMismatch is returned, wrapped, by [Ensure] when the table exists
// but its shape differs from [Default]. Match it with errors.Is; the error in
// the chain is a [*MismatchError] listing the differences. Nothing was
// changed on the table: fix or replace it (the Terraform module, or [Delete]
// followed by [Create] for a disposable table) and call Ensure again.
var ErrSchemaMismatch = errors.New("tables: schema mismatch")

// MismatchError reports that a live table's schema differs from the expected
// one. errors.Is(err, [ErrSchemaMismatch]) is true for it.
type MismatchError struct {
	// Table is the table's name.
	Table string
	// Differences lists the differences as [Schema.Diff] words them ("want"
	// is the expected schema, "got" the live table), plus one line per local
	// secondary index of the live table. It is never empty.
	Differences []string
}

// Error returns "schema mismatch: " followed by the differences, separated
// by semicolons.
func (e *MismatchError) Error() string {
	return "schema mismatch: " + strings.Join(e.Differences, "; ")
}

// Is reports whether target is [ErrSchemaMismatch].
func (e *MismatchError) Is(target error) bool {
	return target == ErrSchemaMismatch
}

// Create creates the table name with the [Default] schema, waits until it is
// ACTIVE, then enables time to live on [AttrExpiresAt]. It fails if the table
// already exists (the SDK's *types.ResourceInUseException is in the chain);
// use [Ensure] to accept an existing table. See [CreateOptions] for billing,
// tags, deletion protection and waiting; the zero options create an
// on-demand table without deletion protection.
//
// If the call fails after the table was created (while waiting or enabling
// time to live), the table is left in place; [Ensure] finishes the job and
// [Delete] removes it.
func Create(ctx context.Context, api API, name string, optFns ...func(*CreateOptions)) error {
	s := Default()
	o, err := newCreateOptions(s, optFns)
	if err != nil {
		return fmt.Errorf("tables: create %s: %w", name, err)
	}
	in, err := s.createTableInput(name, o)
	if err != nil {
		return fmt.Errorf("tables: create %s: %w", name, err)
	}
	if _, err := api.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("tables: create %s: %w", name, err)
	}
	if err := finishCreate(ctx, api, s, name, o.Wait); err != nil {
		return fmt.Errorf("tables: create %s: %w", name, err)
	}
	return nil
}

// Ensure makes sure the table name exists with the [Default] schema. A
// missing table is created as by [Create], with optFns. An existing table is
// waited on until ACTIVE, then its key schema, indexes and time to live are
// compared with Default: any difference, an extra index included (global or
// local), fails with an error wrapping [ErrSchemaMismatch] that lists the
// differences, and the table is left unchanged. Billing, capacity, tags and
// deletion protection of an existing table are not compared and not changed.
//
// One repair is made: when the only difference is that time to live is
// disabled, Ensure enables it on [AttrExpiresAt]. This finishes a [Create]
// that stopped between creating the table and enabling time to live.
//
// Ensure is safe to call concurrently for the same table, from several
// processes: if another caller creates the table first, Ensure checks that
// table instead. A table that is being deleted is an error.
func Ensure(ctx context.Context, api API, name string, optFns ...func(*CreateOptions)) error {
	if err := ensure(ctx, api, name, optFns); err != nil {
		return fmt.Errorf("tables: ensure %s: %w", name, err)
	}
	return nil
}

func ensure(ctx context.Context, api API, name string, optFns []func(*CreateOptions)) error {
	s := Default()
	o, err := newCreateOptions(s, optFns)
	if err != nil {
		return err
	}
	in, err := s.createTableInput(name, o)
	if err != nil {
		return err
	}

	var desc *types.TableDescription
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	switch {
	case isNotFound(err):
		_, err := api.CreateTable(ctx, in)
		if err == nil {
			return finishCreate(ctx, api, s, name, o.Wait)
		}
		if !isInUse(err) {
			return err
		}
		// Another caller created the table after our DescribeTable:
		// check theirs.
		if desc, err = waitActive(ctx, api, name, o.Wait); err != nil {
			return err
		}
	case err != nil:
		return err
	case out.Table == nil:
		return errors.New("describe table: no table in the response")
	case out.Table.TableStatus == types.TableStatusDeleting:
		return errors.New("table is being deleted")
	case out.Table.TableStatus == types.TableStatusActive:
		desc = out.Table
	default:
		if desc, err = waitActive(ctx, api, name, o.Wait); err != nil {
			return err
		}
	}
	return check(ctx, api, s, name, desc)
}

// check compares the live table (desc plus its time to live) with s and
// enables time to live when that is the only difference.
func check(ctx context.Context, api API, s Schema, name string, desc *types.TableDescription) error {
	ttlOut, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return err
	}
	ttl := ttlOut.TimeToLiveDescription
	live := withoutLegacyProjection(FromDescription(desc, ttl), s)
	diffs := s.Diff(live)
	// A Schema has no local secondary indexes, and neither may the table:
	// they cap each partition key's items at 10 GB.
	for _, l := range desc.LocalSecondaryIndexes {
		diffs = append(diffs, fmt.Sprintf("local secondary index %q: not in the schema", deref(l.IndexName)))
	}
	if len(diffs) == 0 {
		return nil
	}
	if len(desc.LocalSecondaryIndexes) == 0 && live.TTLAttribute == "" && s.TTLAttribute != "" && ttlDisabled(ttl) {
		repaired := live
		repaired.TTLAttribute = s.TTLAttribute
		if len(s.Diff(repaired)) == 0 {
			return enableTTL(ctx, api, name, s.TTLAttribute)
		}
	}
	return &MismatchError{Table: name, Differences: diffs}
}

// withoutLegacyProjection returns live without the activity JSON
// (AttrItem) in its ready index's projection when s does not project it:
// tables made by earlier versions of this package project it, which costs
// more write units and is otherwise harmless, so such a table is accepted
// as it is (recreating the index, as the Terraform module's plan does,
// removes the cost).
func withoutLegacyProjection(live, s Schema) Schema {
	for _, want := range s.Indexes {
		if want.Name != IndexReady || slices.Contains(want.NonKeyAttributes, AttrItem) {
			continue
		}
		live.Indexes = slices.Clone(live.Indexes)
		for i, ix := range live.Indexes {
			if ix.Name == IndexReady {
				ix.NonKeyAttributes = slices.DeleteFunc(slices.Clone(ix.NonKeyAttributes), func(a string) bool { return a == AttrItem })
				live.Indexes[i] = ix
			}
		}
	}
	return live
}

func ttlDisabled(ttl *types.TimeToLiveDescription) bool {
	return ttl == nil || ttl.TimeToLiveStatus == "" || ttl.TimeToLiveStatus == types.TimeToLiveStatusDisabled
}

// finishCreate waits for a table created with schema s to become ACTIVE and
// enables its time to live.
func finishCreate(ctx context.Context, api API, s Schema, name string, w WaitOptions) error {
	if _, err := waitActive(ctx, api, name, w); err != nil {
		return err
	}
	if s.TTLAttribute == "" {
		return nil
	}
	return enableTTL(ctx, api, name, s.TTLAttribute)
}

// enableTTL enables time to live on attr. If DynamoDB refuses, for instance
// because a concurrent caller enabled it first, it succeeds when time to
// live is now enabled (or enabling) on attr.
func enableTTL(ctx context.Context, api API, name, attr string) error {
	_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err == nil {
		return nil
	}
	out, derr := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if derr == nil && FromDescription(nil, out.TimeToLiveDescription).TTLAttribute == attr {
		return nil
	}
	return fmt.Errorf("enable time to live on %s: %w", attr, err)
}

// Delete deletes the table name and waits until it is gone. A table that
// does not exist is not an error. A table still being created is waited on
// until ACTIVE and then deleted; a table already being deleted is waited on.
// A table with deletion protection is not deleted: DynamoDB's error is
// returned.
func Delete(ctx context.Context, api API, name string, optFns ...func(*DeleteOptions)) error {
	if err := deleteTable(ctx, api, name, optFns); err != nil {
		return fmt.Errorf("tables: delete %s: %w", name, err)
	}
	return nil
}

func deleteTable(ctx context.Context, api API, name string, optFns []func(*DeleteOptions)) error {
	o, err := newDeleteOptions(optFns)
	if err != nil {
		return err
	}
	if name == "" {
		return errors.New("empty table name")
	}
	in := &dynamodb.DeleteTableInput{TableName: aws.String(name)}
	_, err = api.DeleteTable(ctx, in)
	switch {
	case isNotFound(err):
		return nil
	case isInUse(err):
		// The table is being created, updated or deleted.
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if out.Table == nil || out.Table.TableStatus != types.TableStatusDeleting {
			if _, err := waitActive(ctx, api, name, o.Wait); err != nil {
				return err
			}
			if _, err := api.DeleteTable(ctx, in); err != nil && !isNotFound(err) {
				return err
			}
		}
	case err != nil:
		return err
	}
	return waitGone(ctx, api, name, o.Wait)
}

// Describe reads the schema of the live table name: its description and its
// time to live, through [FromDescription]. A missing table gives an error
// with the SDK's *types.ResourceNotFoundException in the chain.
func Describe(ctx context.Context, api API, name string) (Schema, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return Schema{}, fmt.Errorf("tables: describe %s: %w", name, err)
	}
	ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return Schema{}, fmt.Errorf("tables: describe %s: %w", name, err)
	}
	return FromDescription(out.Table, ttl.TimeToLiveDescription), nil
}

func waitActive(ctx context.Context, api API, name string, w WaitOptions) (*types.TableDescription, error) {
	waiter := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = w.MinDelay
		o.MaxDelay = w.MaxDelay
	})
	out, err := waiter.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, w.MaxWait)
	if err != nil {
		return nil, fmt.Errorf("wait for table to be active: %w", err)
	}
	return out.Table, nil
}

func waitGone(ctx context.Context, api API, name string, w WaitOptions) error {
	waiter := dynamodb.NewTableNotExistsWaiter(api, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay = w.MinDelay
		o.MaxDelay = w.MaxDelay
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, w.MaxWait); err != nil {
		return fmt.Errorf("wait for table to be deleted: %w", err)
	}
	return nil
}

func isNotFound(err error) bool {
	var e *types.ResourceNotFoundException
	return errors.As(err, &e)
}

func isInUse(err error) bool {
	var e *types.ResourceInUseException
	return errors.As(err, &e)
}
