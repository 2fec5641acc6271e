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

// attrKVDigest is the lock row's digest of the KV rows the last turn left.
const attrKVDigest = "kvd"

// Every release records the digest of the KV state it leaves: it names the
// state for kvCache (docs/reads.md, KV snapshot) and detects torn reads of
// the KV rows (docs/design.md §5, torn reads).

// Re-reads of a torn read: the commit that tore it is finishing.
const (
	maxTornRereads  = 4
	tornRereadPause = 5 * time.Millisecond
)

// digestHex is the length of each part of a KV digest: 128 bits, so that
// no one finds two states a cache would confuse.
const digestHex = 32

// kvDigest digests a KV state: the whole state as the KV rows hold it
// (kvRows, so that parseState's reading digests alike), then the store.
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

// emptyStoreDigest names an empty store: its fetches read no KV row.
var emptyStoreDigest = storeDigest(nil)

// emptyKVDigest names an empty store and delta.
var emptyKVDigest = kvDigest(nil, provider.KVDelta{})

// storeDigestOf is the store part of a KV digest ("" without one).
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

// kvMatches reports whether KV rows with digest are those the last turn
// left. No digest, or a pending large turn, matches anything.
func kvMatches(lock lockRow, digest string) bool {
	return lock.kvDigest == "" || lock.turn != "" || digest == lock.kvDigest
}

// readKV reads st's KV rows (a consistent Query), again a few times while
// they do not match the lock row's digest; the last read is used anyway,
// since rows edited outside turns never match. The result is cached.
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
