package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// The layout record: one item per table, keyed by keys.LayoutPK and
// keys.LayoutSK, outside every instance, worker and session partition and
// without index attributes, so no listing, sweep or bulk operation sees it.
const (
	attrShards        = "shards"
	attrLayoutVersion = "layout_version"
)

// LayoutVersion is the version of the stored data's layout this package
// writes and reads. A table whose layout record names another version is
// refused by [Provider.CheckLayout].
//
// Version 5 counts queued start messages in the counter cells (np), so
// that SystemMetrics reports pending instances; a version 4 table's cells
// lack the starts queued before, and consuming them would drive the count
// below zero.
// Version 4 keys an orchestrator message by the time it becomes visible
// (keys.MessageSK), so that a fetch's read of an instance ends at the
// current time and never reads its future timers, and records on the lock
// row a digest of the KV store beside that of the whole KV state, so that
// fetches take the KV snapshot from their process's cache instead of
// reading the KV rows; version 3 keyed messages by enqueue order, and its
// fetches read every queued message and every KV row. Version 4 also
// counts every instance in the counter cells, running ones included, with
// the events of a running execution's first turn (cev) and a canceled
// failure (xcan) on the record, so that SystemMetrics reads the cells
// alone. Version 3 keeps counter cells of the instances that have ended,
// with each instance record's figures, and lists ended instances after
// running ones in the instances index, so that SystemMetrics reads the
// cells and the running instances only; version 2 lacked the figures and
// cells.
// Version 2 holds a KV key's stored value and the current execution's
// write of it in one row, so that a client's read of a key is one item;
// version 1 kept them in separate rows, with a row for a clear of every
// key. Nothing converts one into another: a table of an older version is
// refused rather than misread; serve it with the release that wrote it
// until its instances end, and start new work on a new table.
const LayoutVersion = 5

// OpCheckLayout names [Provider.CheckLayout] in its errors.
const OpCheckLayout = "CheckLayout"

// ErrLayoutMismatch is wrapped by the error [Provider.CheckLayout] returns
// when the provider's options do not match the layout stored in the table.
// The error in the chain is a [*LayoutMismatchError].
var ErrLayoutMismatch = errors.New("dynamo: layout mismatch")

// Layout is what a table's data layout depends on: every process on a
// table must use the same values.
type Layout struct {
	// Shards is [Options.Shards].
	Shards int
	// Version is the layout version, [LayoutVersion] for tables written by
	// this package.
	Version int
}

// LayoutMismatchError reports that a provider's options differ from the
// layout stored in its table. errors.Is(err, [ErrLayoutMismatch]) is true
// for it.
type LayoutMismatchError struct {
	// Table is the table's name.
	Table string
	// Stored is the layout the table records; Configured is the provider's.
	Stored, Configured Layout
}

// Error says what differs and what to do.
func (e *LayoutMismatchError) Error() string {
	if e.Stored.Version != e.Configured.Version {
		return fmt.Sprintf("dynamo: table %s has data layout version %d; this provider reads version %d",
			e.Table, e.Stored.Version, e.Configured.Version)
	}
	return fmt.Sprintf("dynamo: table %s was created with %d shards but Shards is %d: every process on a table must use the table's shard count",
		e.Table, e.Stored.Shards, e.Configured.Shards)
}

// Is reports whether target is [ErrLayoutMismatch].
func (e *LayoutMismatchError) Is(target error) bool { return target == ErrLayoutMismatch }

// layoutCheck remembers a successful [Provider.CheckLayout].
type layoutCheck struct{ ok atomic.Bool }

// Layout returns the layout the provider's options describe.
func (p *Provider) Layout() Layout { return Layout{Shards: p.o.Shards, Version: LayoutVersion} }

// CheckLayout makes sure the provider's layout (its [Options.Shards]) is
// the one stored in the table. A table without a layout record (a new
// table, or one written before layout records existed) gets the
// provider's, with a conditional write, so the first process to open a
// table fixes its layout for all others. A record that differs fails with
// a permanent [*provider.Error] wrapping [ErrLayoutMismatch] (a
// [*LayoutMismatchError]) and nothing is written. A missing table fails with the SDK's
// *types.ResourceNotFoundException in the chain.
//
// [New] makes no request, so it cannot check: programs call CheckLayout
// once after New, before starting a runtime or enqueueing work; the CLI
// does so before every command. After one success the provider remembers
// the answer and later calls make no request, so calling it on every
// start is cheap.
func (p *Provider) CheckLayout(ctx context.Context) error {
	if p.layout.ok.Load() {
		return nil
	}
	want := p.Layout()
	stored, found, err := readLayout(ctx, p.db, p.o.TableName)
	if err != nil {
		return translate(OpCheckLayout, err)
	}
	if !found {
		_, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           p.table,
			Item:                layoutItem(want, p.nowMs()),
			ConditionExpression: aws.String("attribute_not_exists(" + attrPK + ")"),
		})
		switch {
		case err == nil:
			p.layout.ok.Store(true)
			return nil
		case !conditionFailed(err):
			return translate(OpCheckLayout, err)
		}
		// Another process wrote the record first: compare with theirs.
		if stored, found, err = readLayout(ctx, p.db, p.o.TableName); err != nil {
			return translate(OpCheckLayout, err)
		}
		if !found {
			return provider.Retryable(OpCheckLayout, errors.New("layout record vanished"), "layout record of table %s was written and is gone", p.o.TableName)
		}
	}
	if stored != want {
		// Permanent: callers that retry what may pass later (a runtime's
		// start) give up at once.
		mismatch := &LayoutMismatchError{Table: p.o.TableName, Stored: stored, Configured: want}
		return provider.Permanent(OpCheckLayout, mismatch, "%v", mismatch)
	}
	p.layout.ok.Store(true)
	return nil
}

// ReadLayout returns the layout stored in table, read through api (a
// *dynamodb.Client, or [Options.Client]). found is false when the table
// has no layout record yet. Tools that open a table written by others,
// such as the CLI, read it to learn the shard count to use.
func ReadLayout(ctx context.Context, api API, table string) (layout Layout, found bool, err error) {
	layout, found, err = readLayout(ctx, api, table)
	if err != nil {
		return Layout{}, false, translate(OpCheckLayout, err)
	}
	return layout, found, nil
}

func readLayout(ctx context.Context, api API, table string) (Layout, bool, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            item{attrPK: s(keys.LayoutPK), attrSK: s(keys.LayoutSK)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Layout{}, false, err
	}
	if out.Item == nil {
		return Layout{}, false, nil
	}
	shards, err := layoutNumber(out.Item, attrShards)
	if err != nil {
		return Layout{}, false, err
	}
	version, err := layoutNumber(out.Item, attrLayoutVersion)
	if err != nil {
		return Layout{}, false, err
	}
	return Layout{Shards: shards, Version: version}, true, nil
}

func layoutNumber(it item, name string) (int, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, provider.Permanent(OpCheckLayout, provider.ErrInvalidInput, "layout record: attribute %q is missing or not a number", name)
	}
	x, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, provider.Permanent(OpCheckLayout, provider.ErrInvalidInput, "layout record: attribute %q: %v", name, err)
	}
	return x, nil
}

// layoutItem is the layout record of l, written at nowMs.
func layoutItem(l Layout, nowMs int64) item {
	return item{
		attrPK:            s(keys.LayoutPK),
		attrSK:            s(keys.LayoutSK),
		attrShards:        n(int64(l.Shards)),
		attrLayoutVersion: n(int64(l.Version)),
		attrCreatedAt:     n(nowMs),
	}
}
