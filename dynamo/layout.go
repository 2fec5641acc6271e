package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// The layout record: one item per table (keys.LayoutPK, keys.LayoutSK),
// outside every partition and index, so no listing or sweep sees it.
const (
	attrShards        = "shards"
	attrLayoutVersion = "layout_version"
)

// LayoutVersion is the version of the stored data's layout this package
// writes and reads; [Provider.CheckLayout] refuses a table of another
// rather than misread it. Nothing converts a layout: serve an older table
// with the release that wrote it until its instances end, and start new
// work on a new table (docs/limits.md).
//
// Version 7 lets an unclaimed activity in the slot keep the ready entry of
// the one before it, marked waiting (waitingSlot); 6 adds the activity slot
// (slot.go); 5 counts queued starts in
// the counter cells (np); 4 keys messages by visible time, records the KV
// store's digest on the lock row and counts every instance in the cells;
// 3 counted ended instances only; 2 keeps a KV key's value and the
// execution's write of it in one row.
const LayoutVersion = 7

// OpCheckLayout names [Provider.CheckLayout] in its errors.
const OpCheckLayout = "CheckLayout"

// ErrLayoutMismatch is wrapped by [Provider.CheckLayout]'s error (with a
// [*LayoutMismatchError]) when the options differ from the stored layout.
var ErrLayoutMismatch = errors.New("dynamo: layout mismatch")

// Layout is what a table's data layout depends on: every process on a
// table must use the same values.
type Layout struct {
	// Shards is [Options.Shards].
	Shards int
	// Version is the layout version ([LayoutVersion] for this package).
	Version int
}

// LayoutMismatchError reports that a provider's options differ from its
// table's stored layout; it matches [ErrLayoutMismatch] with errors.Is.
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
// the one stored in the table. A table without a layout record gets the
// provider's by a conditional write, so the first process fixes it for
// all. A record that differs fails with a permanent [*provider.Error]
// wrapping [ErrLayoutMismatch] (a [*LayoutMismatchError]), nothing
// written; a missing table with the SDK's *types.ResourceNotFoundException
// in the chain.
//
// [New] makes no request: call CheckLayout after New, before starting a
// runtime or enqueueing work. After one success it makes no request.
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
		// Permanent, so that a runtime's start gives up at once.
		mismatch := &LayoutMismatchError{Table: p.o.TableName, Stored: stored, Configured: want}
		return provider.Permanent(OpCheckLayout, mismatch, "%v", mismatch)
	}
	p.layout.ok.Store(true)
	return nil
}

// ReadLayout returns the layout stored in table, read through api (a
// *dynamodb.Client, or [Options.Client]); found is false without a layout
// record. Tools such as the CLI read it to learn the shard count.
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

// ItemKind names the kind of a table item this package writes, from its
// key attributes (docs/design.md §3): "lock", "record", "execution",
// "message", "slot", "kv", "history", "child", "staged", "activity",
// "session", "counter" or "layout"; "other" for an item of another
// package's or none. Tools use it to tell where a table's units go.
func ItemKind(item map[string]types.AttributeValue) string {
	pk, _, _ := strAttr(item, attrPK)
	sk, _, _ := strAttr(item, attrSK)
	switch {
	case pk == keys.LayoutPK:
		return "layout"
	case pk == keys.MetricsPK:
		return "counter"
	case strings.HasPrefix(pk, keys.WorkerPrefix):
		return "activity"
	case strings.HasPrefix(pk, keys.SessionPrefix):
		return "session"
	case !strings.HasPrefix(pk, keys.InstancePrefix):
		return "other"
	}
	kinds := []struct{ prefix, kind string }{
		{keys.SlotSK, "slot"}, {keys.Lock, "lock"}, {keys.Meta, "record"}, {keys.ExecPrefix, "execution"},
		{keys.QueuePrefix, "message"}, {keys.KVRowsPrefix, "kv"}, {keys.HistPrefix, "history"},
		{keys.ChildPrefix, "child"}, {keys.ChildHashedPrefix, "child"}, {keys.StagePrefix, "staged"},
	}
	for _, k := range kinds {
		if strings.HasPrefix(sk, k.prefix) {
			return k.kind
		}
	}
	return "other"
}
