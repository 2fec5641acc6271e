package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"time"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// attrKVDigest is the lock row's digest of the KV rows the last turn left
// (lockRow.kvDigest).
const attrKVDigest = "kvd"

// Every release of a turn records on the lock row a digest of the KV state
// the turn leaves (kvDigest): of the whole state, and of the store alone.
// It serves twice.
//
// It names the state, so that a process that knows the state by its digest
// (kvCache) reads no KV row: a fetch takes the snapshot (the store, which
// changes only when an execution ends) from its cache when the store's
// digest matches, and an ack that rewrites KV rows plans on the cached
// state when the whole digest matches.
//
// It detects torn reads. A Query is read-committed across items: one that
// runs while the instance's previous turn commits can see KV rows as they
// were before the turn. An ack plans its KV writes (and, when the
// execution ends, the store) on the rows it knows, so a turn planned on
// old rows would leave a key with a value its history does not give it,
// or a deleted key's row behind. KV rows read that do not match the lock
// row's digest were read torn, and are read again (readKV).

// Re-reads of a torn read: the commit that tore it is finishing, so the
// rows settle within milliseconds.
const (
	maxTornRereads  = 4
	tornRereadPause = 5 * time.Millisecond
)

// digestHex is the length of each part of a KV digest: 128 bits, so that
// no one finds two states that a cache would take for one another.
const digestHex = 32

// kvDigest digests a KV state: digestHex hex digits of the whole state
// (the store and the current execution's delta, as the KV rows hold them:
// kvRows, so that parseState's reading of the rows an ack leaves digests
// as the ack's state does), then digestHex of the store alone.
func kvDigest(store map[string]provider.KVEntry, delta provider.KVDelta) string {
	h := sha256.New()
	rows := kvRows(store, delta)
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		r := rows[k]
		digestField(h, k)
		digestEntry(h, r.stored)
		digestEntry(h, r.set)
		if r.cleared {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:digestHex/2]) + storeDigest(store)
}

// storeDigest digests a KV store alone (the second part of kvDigest).
func storeDigest(store map[string]provider.KVEntry) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(store)) {
		e := store[k]
		digestField(h, k)
		digestEntry(h, &e)
	}
	return hex.EncodeToString(h.Sum(nil)[:digestHex/2])
}

// emptyStoreDigest is the store digest of an instance whose store holds no
// key: its fetches read no KV row.
var emptyStoreDigest = storeDigest(nil)

// emptyKVDigest is the KV digest of an instance whose store and current
// execution hold no key.
var emptyKVDigest = kvDigest(nil, provider.KVDelta{})

// storeDigestOf is the store part of a lock row's KV digest; "" when it
// holds none.
func storeDigestOf(digest string) string {
	if len(digest) != 2*digestHex {
		return ""
	}
	return digest[digestHex:]
}

func digestField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

func digestEntry(h hash.Hash, e *provider.KVEntry) {
	if e == nil {
		h.Write([]byte{0})
		return
	}
	h.Write([]byte{1})
	digestField(h, e.Value)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], e.LastUpdatedAtMs)
	h.Write(n[:])
}

// kvMatches reports whether KV rows whose digest is digest are the ones
// lock says the last turn left. A lock row without a digest, or with a
// large turn pending (applied in several transactions), says nothing.
func kvMatches(lock lockRow, digest string) bool {
	return lock.kvDigest == "" || lock.turn != "" || digest == lock.kvDigest
}

// readKV reads the KV rows of st's instance (one consistent Query of the
// range every KV row's sort key starts, paged), again while they do not
// match the digest of the lock row st holds, a few times; the last read is
// returned either way, since rows edited outside turns never match (the
// next ack that rewrites KV rows records their digest). What it read goes
// to the process's cache. It does not modify st.
func (p *Provider) readKV(ctx context.Context, st *instanceState) (map[string]provider.KVEntry, provider.KVDelta, error) {
	for attempt := 0; ; attempt++ {
		rows, err := p.queryPartition(ctx, keys.InstancePK(st.id), keys.KVRowsPrefix, prefixEnd(keys.KVRowsPrefix))
		if err != nil {
			return nil, provider.KVDelta{}, err
		}
		kv, err := parseState(st.id, rows)
		if err != nil {
			return nil, provider.KVDelta{}, err
		}
		digest := kvDigest(kv.kvStore, kv.kvDelta)
		matches := kvMatches(st.lock, digest)
		if matches || attempt == maxTornRereads {
			if !matches {
				p.o.Logger.Warn("dynamo: KV rows do not match the digest the last turn recorded (edited outside turns?); going on with them", "instance", st.id)
			}
			p.kv.put(st.id, digest, kv.kvStore, kv.kvDelta)
			return kv.kvStore, kv.kvDelta, nil
		}
		if err := sleepCtx(ctx, tornRereadPause<<attempt); err != nil {
			return nil, provider.KVDelta{}, err
		}
	}
}
