package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// attrKVDigest is the lock row's digest of the KV rows the last turn left
// (lockRow.kvDigest).
const attrKVDigest = "kvd"

// A fetch's Query of the control rows is read-committed across items: run
// while the instance's previous turn commits, it can see the turn's lock
// release and KV rows as they were before the turn. The ack plans its KV
// writes (and, when the execution ends, the store) on the rows the fetch
// read, so a turn planned on old rows leaves a key with a value its
// history does not give it, or a deleted key's row behind. Every release
// of a turn records on the lock row a digest of the KV state the turn
// leaves; a fetch whose rows do not match the digest of the lock row it
// read read them torn, and reads them again before it locks.

// Re-reads of a torn read: the commit that tore it is finishing, so the
// rows settle within milliseconds.
const (
	maxTornRereads  = 4
	tornRereadPause = 5 * time.Millisecond
)

// kvDigest digests a KV state: the store and the current execution's
// delta, as the KV rows hold them (kvRows), so that parseState's reading of
// the rows an ack leaves digests as the ack's state does.
func kvDigest(store map[string]provider.KVEntry, delta provider.KVDelta) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	entry := func(e *provider.KVEntry) {
		if e == nil {
			h.Write([]byte{0})
			return
		}
		h.Write([]byte{1})
		field(e.Value)
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], e.LastUpdatedAtMs)
		h.Write(n[:])
	}
	rows := kvRows(store, delta)
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		r := rows[k]
		field(k)
		entry(r.stored)
		entry(r.set)
		if r.cleared {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// kvSettled reports whether st's KV rows are the ones its lock row says
// the last turn left. A lock row without a digest (written before digests
// were kept) or with a large turn pending (applied in several
// transactions) says nothing.
func (st *instanceState) kvSettled() bool {
	return st.lock.kvDigest == "" || st.lock.turn != "" || kvDigest(st.kvStore, st.kvDelta) == st.lock.kvDigest
}

// settle reads instance's control rows again while st's KV rows do not
// match its lock row's digest, a few times; the last read is returned
// either way, since rows edited outside turns never match (the next ack
// records their digest).
func (p *Provider) settle(ctx context.Context, instance string, st *instanceState) (*instanceState, error) {
	for attempt := range maxTornRereads {
		if st.kvSettled() {
			return st, nil
		}
		if err := sleepCtx(ctx, tornRereadPause<<attempt); err != nil {
			return nil, err
		}
		next, err := p.loadFetchState(ctx, instance)
		if err != nil {
			return nil, err
		}
		st = next
	}
	if !st.kvSettled() {
		p.o.Logger.Warn("dynamo: KV rows do not match the digest the last turn recorded (edited outside turns?); fetching on them", "instance", instance)
	}
	return st, nil
}
