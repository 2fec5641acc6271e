package dynamo

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// kvRow is what one KV key's row holds: the key's value in the store (as
// the last execution to end left it) and the current execution's write of
// it, a value set or a clear. One row per key, so that a client's read of
// a key (KVValue) is one item. A clear of every key (KeyValuesCleared) is
// held as a clear of each stored key: the rows of keys the store does not
// hold have nothing to hide.
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

// kvRows returns the KV rows of a store and a current-execution delta,
// by key. Keys with neither a stored value nor a write have no row, nor
// have keys the store does not hold whose write is a clear.
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
// store and delta. Rows that come out empty are deleted; unchanged rows
// are not written.
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

// needsKV reports whether a turn's plan needs st's KV rows, which st does
// not hold: the commit writes KV (KV events, or a terminal status, which
// folds the execution's writes into the store). A lock row without a
// digest names no KV row (loadFetchState): st's empty state is the
// instance's. turnKV loads them first.
func needsKV(st *instanceState, commit provider.TurnCommit) bool {
	return !st.kvLoaded && st.lock.kvDigest != "" &&
		(provider.HasKVEvents(commit.HistoryDelta) || provider.IsTerminalStatus(commit.Metadata.Status))
}

// planKV plans the KV rows of a turn: the current execution's writes, or,
// on a terminal status, the store merged with them and no writes; and
// returns the digest of the KV state the turn leaves, which its release
// records (kvDigest). A turn that writes no KV leaves the digest as the
// lock row holds it. The state planned goes to the process's cache: the
// next turn of the instance, in this process, reads no KV row.
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

// errKVNotLoaded is the error of a turn planned before its KV rows were
// loaded (turnKV), which no caller does.
var errKVNotLoaded = errors.New("dynamo: KV rows not loaded")

// turnKV gives st the instance's KV rows when a commit's plan needs them
// (needsKV): the state this process's cache holds under the digest of the
// lock row the fetch read, else a read of the rows (readKV). The fetch
// locked the instance on that row, and only lock holders write KV rows,
// so the rows are the ones that digest names (a read torn by the previous
// turn's commit is read again).
func (p *Provider) turnKV(ctx context.Context, st *instanceState, commit provider.TurnCommit) error {
	if !needsKV(st, commit) {
		return nil
	}
	if st.lock.kvDigest == emptyKVDigest {
		// The lock row says the store and the execution's writes are
		// empty: nothing to read (most instances never write KV).
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

// kvSnapshot starts finding the KV snapshot of a turn just locked on st
// (the store as the last execution to end left it) and returns the
// function that waits for it: from st when the fetch knows the rows, from
// the process's cache when the lock row read records its store, else
// from a read of the KV rows, which runs meanwhile (beside the history's
// read). An instance whose store is empty reads nothing. The snapshot is
// the caller's to modify.
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
