package dynamo

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// kvRow is one KV key's row: its value in the store and the current
// execution's write (a set or a clear), so that KVValue reads one item. A
// clear of every key is held as a clear of each stored key.
type kvRow struct {
	stored  *provider.KVEntry
	set     *provider.KVEntry
	cleared bool
}

func (r kvRow) equal(o kvRow) bool {
	return sameEntry(r.stored, o.stored) && sameEntry(r.set, o.set) && r.cleared == o.cleared
}

func sameEntry(a, b *provider.KVEntry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// kvRows returns the KV rows of a store and a delta, by key; a key with
// no stored value and no set has no row.
func kvRows(store map[string]provider.KVEntry, delta provider.KVDelta) map[string]kvRow {
	rows := make(map[string]kvRow, len(store)+len(delta.Entries))
	for k, e := range store {
		rows[k] = kvRow{stored: &e, cleared: delta.ClearedAll}
	}
	for k, e := range delta.Entries {
		r := rows[k]
		r.set, r.cleared = e, e == nil
		if r.set == nil && r.stored == nil {
			continue
		}
		rows[k] = r
	}
	return rows
}

// kvActions writes the KV rows that change when st's KV state becomes
// store and delta, deleting rows that come out empty.
func kvActions(pk string, st *instanceState, store map[string]provider.KVEntry, delta provider.KVDelta) []planAction {
	before, after := kvRows(st.kvStore, st.kvDelta), kvRows(store, delta)
	var out []planAction
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if old, had := before[k]; !had || !old.equal(after[k]) {
			out = append(out, planAction{put: kvItem(pk, k, after[k])})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, kept := after[k]; !kept {
			out = append(out, planAction{del: key(pk, keys.KVSK(k))})
		}
	}
	return out
}

// needsKV reports whether a commit writes KV (KV events, or a terminal
// status folding the writes into the store) on rows st does not hold yet.
// No digest means no KV row.
func needsKV(st *instanceState, commit provider.TurnCommit) bool {
	return !st.kvLoaded && st.lock.kvDigest != "" &&
		(provider.HasKVEvents(commit.HistoryDelta) || provider.IsTerminalStatus(commit.Metadata.Status))
}

// planKV plans a turn's KV rows (on a terminal status, the store merged
// with the writes) and returns the digest of the state it leaves for the
// release to record; a turn writing no KV keeps the lock row's digest. The
// planned state is cached, so this process's next turn reads no KV row.
func (p *Provider) planKV(pk string, st *instanceState, commit provider.TurnCommit) ([]planAction, string, error) {
	if needsKV(st, commit) {
		return nil, "", provider.Retryable(provider.OpAckOrchestrationItem, errKVNotLoaded, "turn of instance %q planned without its KV rows", st.id)
	}
	terminal := provider.IsTerminalStatus(commit.Metadata.Status)
	if !provider.HasKVEvents(commit.HistoryDelta) && !terminal {
		if !st.kvLoaded && st.lock.kvDigest != "" {
			return nil, st.lock.kvDigest, nil
		}
		return nil, kvDigest(st.kvStore, st.kvDelta), nil
	}
	store, delta := st.cloneKV()
	delta.Apply(commit.HistoryDelta)
	if terminal {
		store, delta = provider.MergeKV(store, delta), provider.KVDelta{}
	}
	digest := kvDigest(store, delta)
	p.kv.put(st.id, digest, store, delta)
	return kvActions(pk, st, store, delta), digest, nil
}

// errKVNotLoaded: a turn planned before turnKV, which no caller does.
var errKVNotLoaded = errors.New("dynamo: KV rows not loaded")

// turnKV loads st's KV rows when the commit needs them: from the cache
// under the lock row's digest, else readKV. Only lock holders write KV
// rows, so the digest the fetch locked on names them.
func (p *Provider) turnKV(ctx context.Context, st *instanceState, commit provider.TurnCommit) error {
	if !needsKV(st, commit) {
		return nil
	}
	if st.lock.kvDigest == emptyKVDigest {
		// Empty state: nothing to read (most instances never write KV).
		st.kvStore, st.kvDelta, st.kvLoaded = map[string]provider.KVEntry{}, provider.KVDelta{}, true
		return nil
	}
	store, delta, ok := p.kv.state(st.id, st.lock.kvDigest)
	if !ok {
		var err error
		if store, delta, err = p.readKV(ctx, st); err != nil {
			return err
		}
	}
	st.kvStore, st.kvDelta, st.kvLoaded = store, delta, true
	return nil
}

// kvSnapshot starts finding the store a turn just locked on st sees and
// returns the function that waits for it: from st, the cache, or a read
// of the KV rows run beside the history's (docs/reads.md, KV snapshot).
// The snapshot is the caller's to modify.
func (p *Provider) kvSnapshot(ctx context.Context, st *instanceState) func() (map[string]provider.KVEntry, error) {
	known := func(store map[string]provider.KVEntry) func() (map[string]provider.KVEntry, error) {
		return func() (map[string]provider.KVEntry, error) { return maps.Clone(store), nil }
	}
	want := storeDigestOf(st.lock.kvDigest)
	switch {
	case st.kvLoaded:
		return known(st.kvStore)
	case want == emptyStoreDigest:
		return known(map[string]provider.KVEntry{})
	}
	if store, ok := p.kv.store(st.id, want); ok {
		return known(store)
	}
	type read struct {
		store map[string]provider.KVEntry
		delta provider.KVDelta
		err   error
	}
	done := make(chan read, 1)
	go func() {
		store, delta, err := p.readKV(ctx, st)
		done <- read{store, delta, err}
	}()
	return func() (map[string]provider.KVEntry, error) {
		r := <-done
		if r.err != nil {
			return nil, r.err
		}
		st.kvStore, st.kvDelta, st.kvLoaded = r.store, r.delta, true
		return maps.Clone(r.store), nil
	}
}

// kvItem is the item of a KV key's row.
func kvItem(pk, kvKey string, r kvRow) item {
	row := key(pk, keys.KVSK(kvKey))
	row[attrKVKey] = s(kvKey)
	if r.stored != nil {
		row[attrValue] = s(r.stored.Value)
		row[attrTS] = nu(r.stored.LastUpdatedAtMs)
	}
	switch {
	case r.set != nil:
		row[attrDeltaValue] = s(r.set.Value)
		row[attrDeltaTS] = nu(r.set.LastUpdatedAtMs)
	case r.cleared:
		row[attrDeltaCleared] = n(1)
	}
	return row
}

// kvRow decodes a KV row's item.
func (d *decoder) kvRow(it item) kvRow {
	var r kvRow
	if v := d.optStr(it, attrValue); v != nil {
		r.stored = &provider.KVEntry{Value: *v, LastUpdatedAtMs: d.uint(it, attrTS)}
	}
	if v := d.optStr(it, attrDeltaValue); v != nil {
		r.set = &provider.KVEntry{Value: *v, LastUpdatedAtMs: d.uint(it, attrDeltaTS)}
	} else if _, ok := it[attrDeltaCleared]; ok {
		r.cleared = true
	}
	return r
}
