package dynamo

import (
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

// kvActions writes the KV rows a turn changes: the current execution's
// writes, or, on a terminal status, the store merged with them and no
// writes. Rows that come out empty are deleted; unchanged rows are not
// written.
func kvActions(pk string, st *instanceState, store map[string]provider.KVEntry, delta provider.KVDelta, terminal bool) []planAction {
	if terminal {
		store, delta = provider.MergeKV(store, delta), provider.KVDelta{}
	}
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
